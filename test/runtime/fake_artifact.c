/* Stand-in Kiln artifacts for the runtime tests; -D switches select the manifest variant. */
#include <stdint.h>

#define KILN_STR2(x) #x
#define KILN_STR(x) KILN_STR2(x)

#ifndef KILN_FAKE_VERSION
#define KILN_FAKE_VERSION 1
#endif

/* A lone "features" line means an empty list; sse2 is on every x86-64 host and the made-up name
 * must be ignored. */
#ifdef KILN_FAKE_FEATURES
#define KILN_FAKE_FEATURE_LINE "features " KILN_STR(KILN_FAKE_FEATURES) "\n"
#else
#define KILN_FAKE_FEATURE_LINE "features sse2,not-a-real-feature\n"
#endif

#ifdef KILN_FAKE_MULTI
/* y = flag ? x + 1 : x - 1; "total count" = number of elements of x. */
const char kiln_manifest[] = "kiln-artifact " KILN_STR(KILN_FAKE_VERSION) "\n"
                             "name fake_multi\n"
                             "target x86_64-unknown-linux-gnu\n"
                             "cpu generic\n"
                             "features\n"
                             "input x f32 2x3\n"
                             "input flag bool scalar\n"
                             "output y f32 2x3\n"
                             "output total%20count i64 scalar\n";
/* The code's record of its buffers: count, then bytes of each. */
const uint64_t kiln_entry_buffers[] = {4, 24, 1, 24, 8};

void kiln_entry(void **buffers) {
  const float *x = (const float *)buffers[0];
  const uint8_t *flag = (const uint8_t *)buffers[1];
  float *y = (float *)buffers[2];
  int64_t *count = (int64_t *)buffers[3];
  for (int i = 0; i < 6; ++i)
    y[i] = *flag ? x[i] + 1.0f : x[i] - 1.0f;
  *count = 6;
}
#else
/* y = x + 1 over f32[2x3]. */
const char kiln_manifest[] = "kiln-artifact " KILN_STR(KILN_FAKE_VERSION) "\n"
                             "name fake%20add_one\n"
                             "target x86_64-unknown-linux-gnu\n"
                             "cpu generic\n"
                             KILN_FAKE_FEATURE_LINE
                             "input x f32 2x3\n"
                             "output y f32 2x3\n";
const uint64_t kiln_entry_buffers[] = {2, 24, 24};

#if defined(KILN_FAKE_UNDEFINED_SYMBOL)
/* Left undefined on purpose: loading must fail the way an artifact missing a runtime helper does. */
extern float kiln_fake_missing_helper(float);
void kiln_entry(void **buffers) {
  const float *x = (const float *)buffers[0];
  float *y = (float *)buffers[1];
  for (int i = 0; i < 6; ++i)
    y[i] = kiln_fake_missing_helper(x[i]);
}
#elif defined(KILN_FAKE_THREADS) || defined(KILN_FAKE_BINDS)
/* Adds what its dependency reports: the size of the thread pool it started at load (1), or
 * whether it bound the loading thread to one CPU when it loaded (1 if it did). */
#ifdef KILN_FAKE_THREADS
#define KILN_FAKE_DEPENDENCY kiln_fake_pool_size
#else
#define KILN_FAKE_DEPENDENCY kiln_fake_binder_narrowed
#endif
extern int KILN_FAKE_DEPENDENCY(void);
void kiln_entry(void **buffers) {
  const float *x = (const float *)buffers[0];
  float *y = (float *)buffers[1];
  for (int i = 0; i < 6; ++i)
    y[i] = x[i] + (float)KILN_FAKE_DEPENDENCY();
}
#elif !defined(KILN_FAKE_NO_ENTRY)
void kiln_entry(void **buffers) {
  const float *x = (const float *)buffers[0];
  float *y = (float *)buffers[1];
  for (int i = 0; i < 6; ++i)
    y[i] = x[i] + 1.0f;
}
#endif
#endif
