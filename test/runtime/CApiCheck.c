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

/* Returns 0 when the device functions answer as they must for a CPU artifact opened on "cpu". */
int kiln_test_c_api_cpu_device(const char *path) {
  kiln_artifact *artifact = NULL;
  int failure = 0;
  if (kiln_artifact_open_device(path, "cpu", &artifact) != KILN_OK)
    return 1;
  if (strcmp(kiln_artifact_device(artifact), "cpu") != 0 || strcmp(kiln_artifact_devices(artifact), "cpu") != 0)
    failure = 2;
  else if (kiln_artifact_last_device_ms(artifact) != -1.0 || strcmp(kiln_artifact_cuda_graph(artifact), "") != 0 ||
           strcmp(kiln_artifact_device_code(artifact), "") != 0)
    failure = 3;
  else if (kiln_artifact_set_option(artifact, "cuda-graph", "off") != KILN_OK ||
           kiln_artifact_set_option(artifact, "cuda-graph", "maybe") != KILN_ERROR_INVALID_ARGUMENT)
    failure = 4;
  else if (kiln_artifact_device_name(artifact)[0] == '\0')
    failure = 5;
  kiln_artifact_close(artifact);
  if (!failure && kiln_artifact_open_device(path, "gpu:", &artifact) != KILN_ERROR_INVALID_ARGUMENT)
    failure = 6;
  return failure;
}
