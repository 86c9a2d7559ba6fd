/* The constants of the real GPU artifacts (real_gpu_artifact.c), shared with the test that checks them. */
#ifndef KILN_TEST_RUNTIME_REAL_GPU_CONSTANTS_H
#define KILN_TEST_RUNTIME_REAL_GPU_CONSTANTS_H

#include <stdint.h>
#include <string.h>

/* Byte offsets, each a multiple of 256: the add bias (1024 f32), W (96 x 48 f32), its column bias
 * (48 f32), W transposed (48 x 96 f32), the f16 column bias (48 f16). */
#define KILN_REAL_W_OFFSET 4096
#define KILN_REAL_WBIAS_OFFSET 22528
#define KILN_REAL_WT_OFFSET 22784
#define KILN_REAL_HBIAS_OFFSET 41216
#define KILN_REAL_CONSTANT_BYTES 41472

/* Small multiples of 1/8, exact in f16, bf16 and f32, so only the accumulation order differs. */
static inline float kilnRealValue(int i, int salt) { return (float)((i * 7 + salt * 13) % 17 - 8) / 8.0f; }

/* The f16 bits of a value that f16 holds exactly (a normal number or zero). */
static inline uint16_t kilnRealHalf(float value) {
  uint32_t bits;
  memcpy(&bits, &value, 4);
  uint32_t sign = (bits >> 16) & 0x8000, exponent = (bits >> 23) & 0xff, mantissa = bits & 0x7fffff;
  if (exponent == 0)
    return (uint16_t)sign;
  return (uint16_t)(sign | ((exponent - 127 + 15) << 10) | (mantissa >> 13));
}

static inline float kilnRealW(int p, int j) { return kilnRealValue(p * 48 + j, 1); }
static inline float kilnRealWBias(int j) { return kilnRealValue(j, 2); }
static inline float kilnRealAddBias(int i) { return kilnRealValue(i, 3); }
static inline float kilnRealHBias(int j) { return kilnRealValue(j, 4); }

static inline void kilnRealFillConstants(unsigned char *bytes) {
  float *addBias = (float *)bytes, *w = (float *)(bytes + KILN_REAL_W_OFFSET);
  float *wbias = (float *)(bytes + KILN_REAL_WBIAS_OFFSET), *wt = (float *)(bytes + KILN_REAL_WT_OFFSET);
  uint16_t *hbias = (uint16_t *)(bytes + KILN_REAL_HBIAS_OFFSET);
  int i, j;
  for (i = 0; i < 1024; ++i)
    addBias[i] = kilnRealAddBias(i);
  for (i = 0; i < 96; ++i)
    for (j = 0; j < 48; ++j)
      w[i * 48 + j] = wt[j * 96 + i] = kilnRealW(i, j);
  for (j = 0; j < 48; ++j) {
    wbias[j] = kilnRealWBias(j);
    hbias[j] = kilnRealHalf(kilnRealHBias(j));
  }
}

#endif /* KILN_TEST_RUNTIME_REAL_GPU_CONSTANTS_H */
