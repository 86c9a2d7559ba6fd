/* Compiled as C to prove kiln/runtime.h is a usable C header; drives the fake add-one artifact. */
#include "kiln/runtime.h"

#include <stdlib.h>
#include <string.h>

/* Returns 0 when the artifact at `path` loads and computes y = x + 1, else a distinct code. */
int kiln_test_c_api_add_one(const char *path) {
  kiln_artifact *artifact = NULL;
  kiln_tensor_info info;
  float *x, *y;
  int i, failure = 0;
  if (kiln_artifact_open(path, &artifact) != KILN_OK)
    return 1;
  if (kiln_artifact_num_inputs(artifact) != 1 || kiln_artifact_num_outputs(artifact) != 1)
    failure = 2;
  else if (kiln_artifact_output(artifact, 0, &info) != KILN_OK || strcmp(info.name, "y") != 0 ||
           info.dtype != KILN_DTYPE_F32 || kiln_tensor_info_byte_size(&info) != 24)
    failure = 3;
  if (failure) {
    kiln_artifact_close(artifact);
    return failure;
  }
  x = (float *)aligned_alloc(KILN_BUFFER_ALIGNMENT, 64);
  y = (float *)aligned_alloc(KILN_BUFFER_ALIGNMENT, 64);
  for (i = 0; i < 6; ++i)
    x[i] = (float)i;
  {
    void *inputs[1];
    void *outputs[1];
    inputs[0] = x;
    outputs[0] = y;
    if (kiln_artifact_run(artifact, inputs, outputs) != KILN_OK)
      failure = 4;
  }
  for (i = 0; i < 6 && !failure; ++i)
    if (y[i] != (float)i + 1.0f)
      failure = 5;
  free(x);
  free(y);
  kiln_artifact_close(artifact);
  return failure;
}
