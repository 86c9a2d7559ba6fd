/*===- ConvActivation.h - Activations fused into convolutions -------------===
 *
 * The activations a kiln.blocked_conv applies to its sums before their
 * clamp (its `activation` attribute; kiln_conv2d_blocked's flags 4 and 8):
 * a swish, x * sigmoid(x) (SiLU), and a hard swish, x * clamp(x / 6 + 0.5,
 * 0, 1). Both keep 0 at 0 and a NaN a NaN. One element at a time for the
 * plain loops, 8 lanes for the AVX2 kernels (where the includer is
 * compiled for AVX2 and FMA), and a span of memory at a time for the
 * images oneDNN's convolutions write. Internal to runtime/kernels.
 *
 *===----------------------------------------------------------------------===*/
#ifndef KILN_RUNTIME_KERNELS_CONVACTIVATION_H
#define KILN_RUNTIME_KERNELS_CONVACTIVATION_H
#include <math.h>
#include <stdint.h>

typedef enum KilnConvActivation {
  KILN_ACTIVATION_NONE,
  KILN_ACTIVATION_SWISH,
  KILN_ACTIVATION_HARD_SWISH,
} KilnConvActivation;

static inline float kilnActivate(float x, KilnConvActivation activation) {
  switch (activation) {
  case KILN_ACTIVATION_SWISH:
    return x / (1.0f + expf(-x));
  case KILN_ACTIVATION_HARD_SWISH: {
    float gate = x / 6.0f + 0.5f;
    gate = gate < 0.0f ? 0.0f : gate;
    return x * (gate > 1.0f ? 1.0f : gate);
  }
  default:
    return x;
  }
}

/* min(max(activation(x), low), high), as the plain loops compute a fused
 * convolution's epilogue (a NaN stays NaN). */
static inline float kilnActivateClamped(float x, KilnConvActivation activation, float low,
                                        float high) {
  x = kilnActivate(x, activation);
  x = x < low ? low : x;
  return x > high ? high : x;
}

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

/* e^x to within 3 ulp for x in [-87, 88], where e^x is a normal float; x is
 * first clamped there (a NaN becomes -87). x = k ln 2 + r with k whole and
 * |r| <= ln 2 / 2, then e^x = 2^k e^r, e^r by its Taylor polynomial of
 * degree 6 (the next term is at most 1.2e-7). */
static inline __m256 kilnExpAvx2(__m256 x) {
  const __m256 ln2High = _mm256_set1_ps(0.693145751953125f); /* ln 2's first 16 bits */
  const __m256 ln2Low = _mm256_set1_ps(1.42860677e-06f);     /* and the rest */
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
  __m256 k = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504f)),
                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(k, ln2Low, _mm256_fnmadd_ps(k, ln2High, x));
  __m256 p = _mm256_set1_ps(1.0f / 720.0f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  __m256i scale =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(scale));
}

static inline __m256 kilnActivate8(__m256 x, KilnConvActivation activation) {
  switch (activation) {
  case KILN_ACTIVATION_SWISH: {
    __m256 e = kilnExpAvx2(_mm256_sub_ps(_mm256_setzero_ps(), x));
    /* x * NaN-free sigmoid: a NaN x stays NaN. Below -87, where e^-x is
     * capped, x e^x is below 2^-118 in magnitude: 0. */
    __m256 swish = _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
    return _mm256_blendv_ps(swish, _mm256_setzero_ps(),
                            _mm256_cmp_ps(x, _mm256_set1_ps(-87.0f), _CMP_LT_OQ));
  }
  case KILN_ACTIVATION_HARD_SWISH: {
    __m256 gate = _mm256_fmadd_ps(x, _mm256_set1_ps(1.0f / 6.0f), _mm256_set1_ps(0.5f));
    /* max and min return their second operand on a NaN: gate is a number. */
    gate = _mm256_min_ps(_mm256_max_ps(gate, _mm256_setzero_ps()), _mm256_set1_ps(1.0f));
    return _mm256_mul_ps(x, gate);
  }
  default:
    return x;
  }
}
#endif

/* data[0 .. count) = min(high, max(low, activation(data))), count a
 * multiple of 8 (ConvActivation.c). Needs AVX2 and FMA. */
void kilnActivateSpanAvx2(float *data, int64_t count, KilnConvActivation activation, float low,
                          float high);

#endif /* KILN_RUNTIME_KERNELS_CONVACTIVATION_H */
