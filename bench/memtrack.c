/* memtrack: an LD_PRELOAD shim that counts live heap bytes and their peak, for bench/worker.py.
 *
 * Every malloc-family call is forwarded to glibc's own entry points (__libc_*) and its block's
 * usable size is added to or taken from one atomic counter. Python reads the counters and resets
 * the peak through ctypes, so a measurement can bracket exactly one session.run. Built by
 * bench/run.py with `cc -O2 -shared -fPIC`; glibc only. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stddef.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static long live_bytes, peak_bytes;

static void count_alloc(void *p) {
  if (!p)
    return;
  long now = __atomic_add_fetch(&live_bytes, (long)malloc_usable_size(p), __ATOMIC_RELAXED);
  long peak = __atomic_load_n(&peak_bytes, __ATOMIC_RELAXED);
  while (now > peak &&
         !__atomic_compare_exchange_n(&peak_bytes, &peak, now, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

static void count_free(void *p) {
  if (p)
    __atomic_sub_fetch(&live_bytes, (long)malloc_usable_size(p), __ATOMIC_RELAXED);
}

void *malloc(size_t n) {
  void *p = __libc_malloc(n);
  count_alloc(p);
  return p;
}

void free(void *p) {
  count_free(p);
  __libc_free(p);
}

void *calloc(size_t n, size_t size) {
  void *p = __libc_calloc(n, size);
  count_alloc(p);
  return p;
}

void *realloc(void *old, size_t n) {
  long old_size = old ? (long)malloc_usable_size(old) : 0;
  void *p = __libc_realloc(old, n);
  if (p || (old && n == 0)) { /* on failure the old block stays live */
    __atomic_sub_fetch(&live_bytes, old_size, __ATOMIC_RELAXED);
    count_alloc(p);
  }
  return p;
}

void *memalign(size_t align, size_t n) {
  void *p = __libc_memalign(align, n);
  count_alloc(p);
  return p;
}

void *aligned_alloc(size_t align, size_t n) { return memalign(align, n); }

void *valloc(size_t n) { return memalign((size_t)sysconf(_SC_PAGESIZE), n); }

int posix_memalign(void **out, size_t align, size_t n) {
  if (align < sizeof(void *) || (align & (align - 1)) != 0)
    return EINVAL;
  void *p = __libc_memalign(align, n);
  if (!p)
    return ENOMEM;
  count_alloc(p);
  *out = p;
  return 0;
}

long memtrack_live(void) { return __atomic_load_n(&live_bytes, __ATOMIC_RELAXED); }
long memtrack_peak(void) { return __atomic_load_n(&peak_bytes, __ATOMIC_RELAXED); }
void memtrack_reset_peak(void) { __atomic_store_n(&peak_bytes, memtrack_live(), __ATOMIC_RELAXED); }
