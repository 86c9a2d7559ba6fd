/*===- DirectConvolution.c - Dense convolution tiles in AVX2 registers -----===
 *
 * A dense 2-D convolution tile of Kiln's (one image, or a band of its rows,
 * input already padded, in plain NCHW) by constant filters, for CPUs with
 * AVX2 and FMA but not AVX-512, where oneDNN has no Winograd kernels and
 * its direct ones, fed through reorders into its blocked layout, reached
 * about 50 GFLOP/s a core (3x3 64->64 at 56x56 on two Zen 3 cores: 2.1-2.4 ms
 * against ONNX Runtime's 1.5 ms).
 *
 * The filters are packed once per address into blocks of 16 output
 * channels, [F/16][C x KH x KW][16], zero past F. The output positions are
 * taken in row-major order (runs may cross rows: narrow images fill
 * whole tiles) in ranges of RANGE, and the filter blocks in groups of
 * GROUP. A micro-kernel keeps 6 positions x 16 channels of sums in 12
 * registers and, per tap (input channel, row and column of the window),
 * loads the tap's two filter vectors, broadcasts the 6 positions' input
 * values and does 12 multiply-adds. The taps are summed in chunks of CHUNK,
 * each chunk's input rows read by every block of the group and its filters
 * by every micro-tile of the range while both are in L1; the range's sums
 * (positions x channels) are then transposed 8 x 8 and added into the
 * output rows. No copy of the image is made.
 *
 * Products of few rows by constant weights (kilnSmallMatmulAvx2, for
 * kiln_matmul_constant_b) use the same packing, the weights' columns as
 * the filters: each row of A is one position whose taps are its k values.
 *
 * Compiled with -mavx2 -mfma; kiln_conv2d_constant_w
 * (PackedConvolution.c) and kiln_matmul_constant_b (PackedMatmul.c) call it
 * only where the CPU has them.
 *
 *===----------------------------------------------------------------------===*/
#include "DirectConvolution.h"
#include "Transpose8.h"

#include <immintrin.h>
#include <stdint.h>

#define INLINE static inline __attribute__((always_inline))

enum {
  LANES = 8,
  /* Output channels per filter block: two vectors. */
  BLOCK = 2 * LANES,
  /* Output positions per micro-tile: 6 x 2 sums, the two filter vectors and
   * a broadcast fill 15 of the 16 vector registers. */
  POSITIONS = 6,
  /* Output positions per range, and taps per chunk (16 input channels of a
   * 3x3 window: 9 KiB of filters). Measured on Zen 3, one core, 3x3
   * 64->64 on 4 x 56 outputs, 3x3 512->256 at 7x7, 1x1 256->128 at 14x14:
   * 80-92 GFLOP/s, against 55-65 with ranges of 48 or without chunks. */
  RANGE = 96,
  CHUNK = 144,
  /* Filter blocks whose sums a range keeps at once (24 KiB): each chunk of
   * the image is read once per group rather than once per block (3x3
   * 256->256 on 4 x 79 outputs: 72 -> 80 GFLOP/s; 80->192 on 4 x 71: 61
   * -> 75). */
  GROUP = 4,
};

int64_t kilnDirectConvPackedFloats(int64_t f, int64_t taps) {
  return (f + BLOCK - 1) / BLOCK * BLOCK * taps;
}

/* w[o][t] (o < f, t < taps) at w + o * oStride + t * tStride, packed into
 * blocks of 16 o, [f/16][taps][16], zero past f. */
static void packBlocks(const float *w, int64_t f, int64_t taps, int64_t oStride, int64_t tStride,
                       float *packed) {
  int64_t blocks = (f + BLOCK - 1) / BLOCK;
  for (int64_t b = 0; b < blocks; ++b)
    for (int64_t t = 0; t < taps; ++t)
      for (int64_t lane = 0; lane < BLOCK; ++lane) {
        int64_t o = b * BLOCK + lane;
        packed[(b * taps + t) * BLOCK + lane] = o < f ? w[o * oStride + t * tStride] : 0.0f;
      }
}

void kilnDirectConvPack(const float *w, int64_t f, int64_t taps, float *packed) {
  packBlocks(w, f, taps, taps, 1, packed);
}

void kilnSmallMatmulPack(const float *b, int64_t n, int64_t k, int64_t ldb, int transB,
                         float *packed) {
  packBlocks(b, n, k, transB ? ldb : 1, transB ? 1 : ldb, packed);
}

int kilnDirectConvOffsets(int64_t c, int64_t kh, int64_t kw, int64_t dh, int64_t dw, int64_t inC,
                          int64_t inH, int32_t *offset) {
  int64_t last = (c - 1) * inC + (kh - 1) * dh * inH + (kw - 1) * dw;
  if (c <= 0 || kh <= 0 || kw <= 0 || last > INT32_MAX)
    return 0;
  int64_t t = 0;
  for (int64_t k = 0; k < c; ++k)
    for (int64_t i = 0; i < kh; ++i)
      for (int64_t j = 0; j < kw; ++j)
        offset[t++] = (int32_t)(k * inC + i * dh * inH + j * dw);
  return 1;
}

/* Sums of P positions (input at base[p] + offset[t]) x 16 channels over
 * `taps` taps of the packed filter block `w`, into tile[p][16], starting
 * from zero when `first`, else from what the tile holds. P is a constant at
 * every call: the sums stay in registers. */
INLINE void microTile(int P, const float *const *base, const int32_t *offset, int64_t taps,
                      const float *w, float *tile, int first) {
  __m256 acc[POSITIONS][2];
#pragma GCC unroll 6
  for (int p = 0; p < P; ++p) {
    acc[p][0] = first ? _mm256_setzero_ps() : _mm256_load_ps(tile + p * BLOCK);
    acc[p][1] = first ? _mm256_setzero_ps() : _mm256_load_ps(tile + p * BLOCK + LANES);
  }
  for (int64_t t = 0; t < taps; ++t) {
    __m256 w0 = _mm256_load_ps(w + t * BLOCK), w1 = _mm256_load_ps(w + t * BLOCK + LANES);
    int32_t at = offset[t];
#pragma GCC unroll 6
    for (int p = 0; p < P; ++p) {
      __m256 x = _mm256_broadcast_ss(base[p] + at);
      acc[p][0] = _mm256_fmadd_ps(x, w0, acc[p][0]);
      acc[p][1] = _mm256_fmadd_ps(x, w1, acc[p][1]);
    }
  }
#pragma GCC unroll 6
  for (int p = 0; p < P; ++p) {
    _mm256_store_ps(tile + p * BLOCK, acc[p][0]);
    _mm256_store_ps(tile + p * BLOCK + LANES, acc[p][1]);
  }
}

/* Adds tile[r][lane] (n positions from `first`, `channels` <= 16 channels)
 * into out[lane][y][x], a row's run at a time: 8 positions x 8 channels
 * transposed into one vector per channel, the rest one by one. */
static void addTile(const float *tile, int64_t first, int64_t n, int64_t channels, int64_t ow,
                    float *out, int64_t outF, int64_t outH) {
  for (int64_t r0 = 0; r0 < n;) {
    int64_t y = (first + r0) / ow, x0 = (first + r0) % ow;
    int64_t run = ow - x0 < n - r0 ? ow - x0 : n - r0;
    float *row = out + y * outH + x0;
    const float *sums = tile + r0 * BLOCK;
    int64_t q = 0;
    for (; q + LANES <= run; q += LANES)
      for (int64_t half = 0; half * LANES < channels; ++half) {
        __m256 v[8];
        for (int i = 0; i < 8; ++i)
          v[i] = _mm256_load_ps(sums + (q + i) * BLOCK + half * LANES);
        kilnTranspose8(v);
        int64_t lanes = channels - half * LANES < LANES ? channels - half * LANES : LANES;
        for (int64_t i = 0; i < lanes; ++i) {
          float *o = row + (half * LANES + i) * outF + q;
          _mm256_storeu_ps(o, _mm256_add_ps(_mm256_loadu_ps(o), v[i]));
        }
      }
    for (; q < run; ++q)
      for (int64_t lane = 0; lane < channels; ++lane)
        row[lane * outF + q] += sums[q * BLOCK + lane];
    r0 += run;
  }
}

void kilnDirectConv2dAvx2(int64_t taps, int64_t oh, int64_t ow, int64_t sh, int64_t sw,
                          const float *in, int64_t inH, const int32_t *offset,
                          const float *packed, int64_t f, float *out, int64_t outF,
                          int64_t outH) {
  int64_t blocks = (f + BLOCK - 1) / BLOCK, positions = oh * ow;
  float tile[GROUP * RANGE * BLOCK] __attribute__((aligned(32)));
  const float *base[RANGE];
  for (int64_t first = 0; first < positions; first += RANGE) {
    int64_t n = positions - first < RANGE ? positions - first : RANGE;
    for (int64_t r = 0; r < n; ++r) {
      int64_t y = (first + r) / ow, x = (first + r) % ow;
      base[r] = in + y * sh * inH + x * sw;
    }
    for (int64_t b0 = 0; b0 < blocks; b0 += GROUP) {
      int64_t group = blocks - b0 < GROUP ? blocks - b0 : GROUP;
      for (int64_t t0 = 0; t0 < taps; t0 += CHUNK) {
        int64_t chunk = taps - t0 < CHUNK ? taps - t0 : CHUNK;
        const int32_t *at = offset + t0;
        int start = t0 == 0;
        for (int64_t g = 0; g < group; ++g) {
          const float *w = packed + ((b0 + g) * taps + t0) * BLOCK;
          float *sums = tile + g * RANGE * BLOCK;
          int64_t r = 0;
          for (; r + POSITIONS <= n; r += POSITIONS)
            microTile(POSITIONS, base + r, at, chunk, w, sums + r * BLOCK, start);
          switch (n - r) {
#define LEFT(k)                                                                                \
  case k:                                                                                      \
    microTile(k, base + r, at, chunk, w, sums + r * BLOCK, start);                             \
    break;
            LEFT(1) LEFT(2) LEFT(3) LEFT(4) LEFT(5)
#undef LEFT
          default:
            break;
          }
        }
      }
      for (int64_t g = 0; g < group; ++g) {
        int64_t b = b0 + g;
        int64_t channels = f - b * BLOCK < BLOCK ? f - b * BLOCK : BLOCK;
        addTile(tile + g * RANGE * BLOCK, first, n, channels, ow, out + b * BLOCK * outF, outF,
                outH);
      }
    }
  }
}

/* Rows a product of few rows takes at once, and blocks of 16 columns per
 * row count: one row takes 6 blocks (12 sums, the row's value and two
 * column vectors fill 15 registers); more take one, each row's value
 * broadcast as it is used. Measured on one Zen 3 core, 500 columns of k =
 * 2048 with B in L3: one row 69-88 us (47-60 GB/s of B), two 105 us (two
 * rows of 2 blocks: 157), four 91 us (90 GFLOP/s), six 142 us. */
enum { SMALL_ROWS = 6 };
INLINE int blocksFor(int rows) { return rows == 1 ? 6 : 1; }

/* R rows of A (lda apart) times P blocks of the packed B (`stride` floats
 * apart) over k: 16 * P columns of sums in registers, of which the first
 * `columns` are written into C (or added to it, `accumulate`). R and P are
 * constants at every call. */
INLINE void smallTile(int R, int P, const float *a, int64_t lda, const float *w, int64_t stride,
                      int64_t k, float *c, int64_t ldc, int64_t columns, int accumulate) {
  __m256 acc[12];
#pragma GCC unroll 12
  for (int i = 0; i < R * P * 2; ++i)
    acc[i] = _mm256_setzero_ps();
  for (int64_t t = 0; t < k; ++t) {
    /* One block: each row's value broadcast as it is used (the loop of
     * microTile). */
    if (P == 1) {
      __m256 w0 = _mm256_load_ps(w + t * BLOCK), w1 = _mm256_load_ps(w + t * BLOCK + LANES);
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r) {
        __m256 x = _mm256_broadcast_ss(a + r * lda + t);
        acc[2 * r] = _mm256_fmadd_ps(x, w0, acc[2 * r]);
        acc[2 * r + 1] = _mm256_fmadd_ps(x, w1, acc[2 * r + 1]);
      }
      continue;
    }
    __m256 x[SMALL_ROWS];
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r)
      x[r] = _mm256_broadcast_ss(a + r * lda + t);
#pragma GCC unroll 6
    for (int p = 0; p < P; ++p) {
      __m256 w0 = _mm256_load_ps(w + p * stride + t * BLOCK);
      __m256 w1 = _mm256_load_ps(w + p * stride + t * BLOCK + LANES);
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r) {
        acc[(r * P + p) * 2] = _mm256_fmadd_ps(x[r], w0, acc[(r * P + p) * 2]);
        acc[(r * P + p) * 2 + 1] = _mm256_fmadd_ps(x[r], w1, acc[(r * P + p) * 2 + 1]);
      }
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P && p * BLOCK < columns; ++p) {
      float *row = c + r * ldc + p * BLOCK;
      __m256 lo = acc[(r * P + p) * 2], hi = acc[(r * P + p) * 2 + 1];
      if (columns - p * BLOCK >= BLOCK) {
        if (accumulate) {
          lo = _mm256_add_ps(lo, _mm256_loadu_ps(row));
          hi = _mm256_add_ps(hi, _mm256_loadu_ps(row + LANES));
        }
        _mm256_storeu_ps(row, lo);
        _mm256_storeu_ps(row + LANES, hi);
        continue;
      }
      float sums[BLOCK];
      _mm256_storeu_ps(sums, lo);
      _mm256_storeu_ps(sums + LANES, hi);
      for (int64_t j = 0; j < columns - p * BLOCK; ++j)
        row[j] = accumulate ? row[j] + sums[j] : sums[j];
    }
}

/* Rows of R, blocks b0 to b1 of the columns in steps of blocksFor(R). */
INLINE void smallRows(int R, const float *a, int64_t lda, const float *packed, int64_t n,
                      int64_t k, int64_t b0, int64_t b1, float *c, int64_t ldc, int accumulate) {
  int64_t stride = k * BLOCK;
  int P = blocksFor(R);
  int64_t b = b0;
  for (; b + P <= b1; b += P)
    smallTile(R, P, a, lda, packed + b * stride, stride, k, c + b * BLOCK, ldc, n - b * BLOCK,
              accumulate);
  for (; b < b1; ++b)
    smallTile(R, 1, a, lda, packed + b * stride, stride, k, c + b * BLOCK, ldc, n - b * BLOCK,
              accumulate);
}

/* Rows i0 .. i0 + rows (at most SMALL_ROWS) of the product, blocks b0 to
 * b1 of its columns. */
static void smallGroup(int64_t rows, int64_t i0, const float *a, int64_t lda,
                       const float *packed, int64_t n, int64_t k, int64_t b0, int64_t b1,
                       float *c, int64_t ldc, int accumulate) {
  switch (rows) {
#define ROWS(R)                                                                                \
  case R:                                                                                      \
    smallRows(R, a + i0 * lda, lda, packed, n, k, b0, b1, c + i0 * ldc, ldc, accumulate);      \
    break;
    ROWS(1) ROWS(2) ROWS(3) ROWS(4) ROWS(5) ROWS(6)
#undef ROWS
  default:
    break;
  }
}

void kilnSmallMatmulAvx2(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                         const float *packed, float *c, int64_t ldc, int accumulate) {
  int64_t blocks = (n + BLOCK - 1) / BLOCK;
  if (m <= SMALL_ROWS) {
    smallGroup(m, 0, a, lda, packed, n, k, 0, blocks, c, ldc, accumulate);
    return;
  }
  /* More rows: groups of equal size (8 rows as 4 + 4), each block of B
   * used by every group while it is in L2 rather than streamed once per
   * group. */
  int64_t groups = (m + SMALL_ROWS - 1) / SMALL_ROWS;
  for (int64_t b = 0; b < blocks; ++b)
    for (int64_t i = 0, g = 0; i < m; ++g) {
      int64_t rows = (m - i + (groups - g) - 1) / (groups - g);
      smallGroup(rows, i, a, lda, packed, n, k, b, b + 1, c, ldc, accumulate);
      i += rows;
    }
}
