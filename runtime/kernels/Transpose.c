/*===- Transpose.c - Transposes of two dimensions of a tile ----------------===
 *
 * out[j][i] = in[i][j] for a tile whose rows are `inRow` floats apart in
 * `in` and `outRow` apart in `out`, each dense along its other dimension:
 * the reorders between NCHW images and blocks of channels (16 x 784 to
 * 784 x 16 for a block of a 28x28 image), which generated loops ran
 * element by element. With AVX (KILN_TRANSPOSE_AVX2), 8x8 blocks go
 * through registers: eight loads of eight floats, a transpose of the
 * registers, eight stores; the edges that do not fill a block are copied
 * element by element.
 *
 * This file is compiled once per vector width under the name
 * KILN_TRANSPOSE_NAME; kiln_transpose (TransposeDispatch.c) picks the
 * widest the CPU runs.
 *
 *===----------------------------------------------------------------------===*/
#include <stdint.h>

#ifdef KILN_TRANSPOSE_AVX2
#include "Transpose8.h"
#endif

/* Rows of `in` a pass over the columns takes: their lines stay in L1 from
 * one block of columns to the next. */
enum { ROW_BLOCK = 64 };

static void transposeScalar(const float *in, float *out, int64_t rows, int64_t cols, int64_t inRow,
                            int64_t outRow) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      out[j * outRow + i] = in[i * inRow + j];
}

void KILN_TRANSPOSE_NAME(const float *in, float *out, int64_t rows, int64_t cols, int64_t inRow,
                         int64_t outRow) {
#ifdef KILN_TRANSPOSE_AVX2
  int64_t fullRows = rows / 8 * 8, fullCols = cols / 8 * 8;
  for (int64_t i0 = 0; i0 < fullRows; i0 += ROW_BLOCK) {
    int64_t i1 = i0 + ROW_BLOCK < fullRows ? i0 + ROW_BLOCK : fullRows;
    for (int64_t j = 0; j < fullCols; j += 8)
      for (int64_t i = i0; i < i1; i += 8) {
        __m256 r[8];
        for (int t = 0; t < 8; ++t)
          r[t] = _mm256_loadu_ps(in + (i + t) * inRow + j);
        kilnTranspose8(r);
        for (int t = 0; t < 8; ++t)
          _mm256_storeu_ps(out + (j + t) * outRow + i, r[t]);
      }
  }
  /* The last columns of the full rows, then the last rows. */
  transposeScalar(in + fullCols, out + fullCols * outRow, fullRows, cols - fullCols, inRow, outRow);
  transposeScalar(in + fullRows * inRow, out + fullRows, rows - fullRows, cols, inRow, outRow);
#else
  transposeScalar(in, out, rows, cols, inRow, outRow);
#endif
}
