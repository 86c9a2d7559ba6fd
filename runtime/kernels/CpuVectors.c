/*===- CpuVectors.c - The widest vectors this CPU runs, by CPUID -----------===*/
#include "CpuVectors.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <stdint.h>

static uint64_t enabledStates(void) {
  uint32_t low, high;
  __asm__("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
  return ((uint64_t)high << 32) | low;
}

static KilnCpuVectors probe(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE) || !(c & bit_AVX))
    return KILN_VECTORS_BASELINE;
  int fma = (c & bit_FMA) != 0;
  uint64_t states = enabledStates();
  /* The OS saves the SSE and AVX registers (and, for AVX-512, the opmask
   * and upper ZMM ones). */
  if ((states & 0x6) != 0x6 || !__get_cpuid_count(7, 0, &a, &b, &c, &d))
    return KILN_VECTORS_BASELINE;
  if ((b & bit_AVX512F) && (states & 0xe6) == 0xe6)
    return KILN_VECTORS_AVX512;
  if ((b & bit_AVX2) && fma)
    return KILN_VECTORS_AVX2;
  return KILN_VECTORS_BASELINE;
}
#else
static KilnCpuVectors probe(void) { return KILN_VECTORS_BASELINE; }
#endif

KilnCpuVectors kilnCpuVectors(void) {
  /* Probed once; threads racing here store the same value. */
  static int known = -1;
  int vectors = __atomic_load_n(&known, __ATOMIC_RELAXED);
  if (vectors < 0) {
    vectors = probe();
    __atomic_store_n(&known, vectors, __ATOMIC_RELAXED);
  }
  return (KilnCpuVectors)vectors;
}
