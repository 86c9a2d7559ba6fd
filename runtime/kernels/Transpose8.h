/*===- Transpose8.h - An 8x8 transpose in AVX registers --------*- C -*-===*
 *
 * Shared by the AVX2 kernels (DirectConvolution.c, and the AVX2 builds of
 * DepthwiseConvolution.c and Transpose.c); include it only where AVX is
 * enabled.
 *
 *===----------------------------------------------------------------------===*/
#ifndef KILN_RUNTIME_KERNELS_TRANSPOSE8_H
#define KILN_RUNTIME_KERNELS_TRANSPOSE8_H

#include <immintrin.h>

/* r[0..7] transposed in place, lane j of r[i] becoming lane i of r[j]: a
 * 4x4 transpose in both 128-bit halves, then the halves exchanged. */
static inline __attribute__((always_inline)) void kilnTranspose8(__m256 r[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 2; ++i) {
    u[4 * i] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0x44);
    u[4 * i + 1] = _mm256_shuffle_ps(t[4 * i], t[4 * i + 2], 0xEE);
    u[4 * i + 2] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    u[4 * i + 3] = _mm256_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm256_permute2f128_ps(u[i], u[4 + i], 0x20);
    r[4 + i] = _mm256_permute2f128_ps(u[i], u[4 + i], 0x31);
  }
}

#endif /* KILN_RUNTIME_KERNELS_TRANSPOSE8_H */
