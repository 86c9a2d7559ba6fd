/*===- ConvActivation.c - Activations over spans of memory, on AVX2 -------===
 *
 * The activation and clamp of a blocked convolution over what oneDNN's
 * primitive wrote (see kiln_conv2d_blocked), 8 floats at a time. Compiled
 * for AVX2 and FMA; its caller checks that the CPU has them.
 *
 *===----------------------------------------------------------------------===*/
#include "ConvActivation.h"

#include <immintrin.h>

void kilnActivateSpanAvx2(float *data, int64_t count, KilnConvActivation activation, float low,
                          float high) {
  __m256 lower = _mm256_set1_ps(low), upper = _mm256_set1_ps(high);
  for (int64_t i = 0; i < count; i += 8) {
    __m256 value = kilnActivate8(_mm256_loadu_ps(data + i), activation);
    /* max and min return their second operand when one is NaN: a NaN stays. */
    _mm256_storeu_ps(data + i, _mm256_min_ps(upper, _mm256_max_ps(lower, value)));
  }
}
