/*===- CpuVectors.h - The widest vectors this CPU runs, by CPUID -----------===
 *
 * Which vector kernels the CPU kernels may run, read once with CPUID and
 * XGETBV (artifacts link no libgcc, so not __builtin_cpu_supports).
 * Internal to runtime/kernels.
 *
 *===----------------------------------------------------------------------===*/
#ifndef KILN_RUNTIME_KERNELS_CPUVECTORS_H
#define KILN_RUNTIME_KERNELS_CPUVECTORS_H

typedef enum KilnCpuVectors {
  /* Neither of the below (or not x86-64). */
  KILN_VECTORS_BASELINE,
  /* AVX2 with FMA, the operating system saving the AVX registers. */
  KILN_VECTORS_AVX2,
  /* AVX-512F too, with the opmask and upper ZMM registers saved. */
  KILN_VECTORS_AVX512,
} KilnCpuVectors;

KilnCpuVectors kilnCpuVectors(void);

#endif /* KILN_RUNTIME_KERNELS_CPUVECTORS_H */
