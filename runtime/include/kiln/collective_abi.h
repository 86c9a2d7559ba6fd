/*===- collective_abi.h - How a data-parallel artifact reaches its replicas ===
 *
 * A train step compiled with --data-parallel sums its gradients over the
 * replicas through these hooks, a table every CPU artifact that has
 * collectives exports under the symbol KILN_COLLECTIVE_HOOKS_SYMBOL. The
 * runtime fills it after loading the artifact and before the first step; an
 * empty table (all zero) is one replica: buckets are left as they are and
 * the world size is 1.
 *
 * The step calls start(bucket) as soon as a bucket's gradients are computed
 * and wait(bucket) right before their sums are first read, in the same order
 * on every replica; between the two the step computes on, and the buffer
 * belongs to the collective. A failed collective is reported by the host
 * (the step's results are then garbage and must be dropped), never by
 * returning early: wait must return, with the buffer in any state.
 *
 *===----------------------------------------------------------------------===*/
#ifndef KILN_COLLECTIVE_ABI_H
#define KILN_COLLECTIVE_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_COLLECTIVE_HOOKS_SYMBOL "kiln_collective"

typedef struct kiln_collective_hooks {
  /* Passed back to start and wait. */
  void *context;
  /* Starts summing `count` floats at `data` over the replicas, in place. */
  void (*start)(void *context, int64_t bucket, float *data, int64_t count);
  /* Returns once bucket `bucket` (at `data`) holds the sum. */
  void (*wait)(void *context, int64_t bucket, float *data, int64_t count);
  /* Replicas running the step; 0 counts as 1. */
  int64_t world_size;
  /* This replica's place among them, from 0: its dropout masks are those of its rows of the
   * whole batch. */
  int64_t rank;
} kiln_collective_hooks;

/* The same for a data-parallel step on a GPU, whose buffers are device memory: the runtime calls
 * start and wait as the step's program reaches its all-reduce-start and all-reduce-wait records,
 * with the executor's stream (a CUstream), and finish once the whole step is queued, before it
 * waits for the stream. Each returns 0, or non-zero with a one-line message in `error` (at most
 * `error_size` bytes, NUL-terminated); finish must return within the collective's timeout, naming
 * the peer that failed, so a dead replica never hangs the step. */
typedef struct kiln_device_collective_hooks {
  void *context;
  /* Queues the in-place sum of `count` floats at device address `data` over the replicas, to
   * start once the work queued so far on `stream` is done. */
  int (*start)(void *context, int64_t bucket, uint64_t data, int64_t count, void *stream, char *error,
               size_t error_size);
  /* Makes `stream` wait, on the device, for the sums queued so far. */
  int (*wait)(void *context, int64_t bucket, uint64_t data, int64_t count, void *stream, char *error,
              size_t error_size);
  /* Blocks until every sum queued so far is done. */
  int (*finish)(void *context, char *error, size_t error_size);
  int64_t world_size;
  int64_t rank;
} kiln_device_collective_hooks;

#ifdef __cplusplus
}
#endif

#endif /* KILN_COLLECTIVE_ABI_H */
