/*===- TransposeDispatch.c - Picks the transpose kernel the CPU runs -------===
 *
 * kiln_transpose, which generated code calls, forwards to the build of
 * Transpose.c for the widest vectors this CPU and its operating system
 * support (AVX2, or the baseline; CpuVectors.h).
 *
 *===----------------------------------------------------------------------===*/
#include "CpuVectors.h"

#include <stdint.h>

typedef void TransposeFn(const float *in, float *out, int64_t rows, int64_t cols, int64_t inRow,
                         int64_t outRow);

TransposeFn kilnTransposeGeneric;
#ifdef KILN_CPU_KERNELS_X86
TransposeFn kilnTransposeAvx2;

static TransposeFn *choose(void) {
  return kilnCpuVectors() == KILN_VECTORS_BASELINE ? kilnTransposeGeneric : kilnTransposeAvx2;
}
#else
static TransposeFn *choose(void) { return kilnTransposeGeneric; }
#endif

/* out[j * outRow + i] = in[i * inRow + j] for i < rows, j < cols. */
__attribute__((visibility("default"))) void kiln_transpose(const float *in, float *out,
                                                           int64_t rows, int64_t cols,
                                                           int64_t inRow, int64_t outRow) {
  static TransposeFn *chosen;
  TransposeFn *kernel = __atomic_load_n(&chosen, __ATOMIC_RELAXED);
  if (!kernel) {
    kernel = choose();
    __atomic_store_n(&chosen, kernel, __ATOMIC_RELAXED);
  }
  kernel(in, out, rows, cols, inRow, outRow);
}
