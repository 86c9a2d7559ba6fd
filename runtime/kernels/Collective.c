/*===- Collective.c - The hooks a data-parallel artifact calls ------------===
 *
 * Linked into CPU artifacts whose train step sums gradients over replicas
 * (kiln-bucket-all-reduce's buckets): the generated code calls these three
 * functions (and two that read the world), which forward to the table the runtime fills after loading the
 * artifact (kiln/collective_abi.h). Without a filled table the step is its
 * own single replica.
 *
 *===----------------------------------------------------------------------===*/
#include "kiln/collective_abi.h"

__attribute__((visibility("default"))) kiln_collective_hooks kiln_collective;

void kiln_all_reduce_start(int64_t bucket, float *data, int64_t count) {
  if (kiln_collective.start)
    kiln_collective.start(kiln_collective.context, bucket, data, count);
}

void kiln_all_reduce_wait(int64_t bucket, float *data, int64_t count) {
  if (kiln_collective.wait)
    kiln_collective.wait(kiln_collective.context, bucket, data, count);
}

int64_t kiln_replica_rank(void) { return kiln_collective.rank; }

float kiln_world_size(void) {
  return kiln_collective.world_size > 0 ? (float)kiln_collective.world_size : 1.0f;
}
