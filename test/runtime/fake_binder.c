/* A stand-in for GCC's OpenMP runtime, which oneDNN links: when OMP_PROC_BIND or OMP_PLACES is
 * set, loading it binds the loading thread to one CPU. This one always does, when that thread may
 * run on more than one, and says whether it did. */
#define _GNU_SOURCE
#include <sched.h>

static int narrowed;

__attribute__((constructor)) static void kiln_fake_binder_bind(void) {
  cpu_set_t mask;
  if (sched_getaffinity(0, sizeof(mask), &mask) != 0 || CPU_COUNT(&mask) < 2)
    return;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &mask)) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      narrowed = sched_setaffinity(0, sizeof(one), &one) == 0;
      return;
    }
}

int kiln_fake_binder_narrowed(void) { return narrowed; }
