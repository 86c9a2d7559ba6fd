// Times cuBLASLt's f32 GEMM (n x n by n x n, full f32 compute) called directly: the yardstick for
// Kiln's matmul records in bench/gpu.py. Prints {"ms": ..., "tflops": ...} as JSON.
//
//   nvcc -O2 -arch=sm_90 gpu_gemm.cu -lcublasLt -o gpu_gemm && ./gpu_gemm 4096
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                                         \
  do {                                                                                      \
    auto status = (call);                                                                   \
    if (status != 0) {                                                                      \
      std::fprintf(stderr, "%s failed: %d (line %d)\n", #call, int(status), __LINE__);      \
      return 1;                                                                             \
    }                                                                                       \
  } while (0)

// Random-looking values in [-1, 1): timing on zeros can flatter a GEMM.
__global__ void fill(float *p, size_t n, unsigned seed) {
  size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
  if (i < n) {
    unsigned x = unsigned(i) * 2654435761u ^ seed;
    x ^= x >> 13;
    x *= 0x5bd1e995u;
    x ^= x >> 15;
    p[i] = (x & 0xffffff) / float(1 << 23) - 1.0f;
  }
}

int main(int argc, char **argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 4096;
  size_t elements = size_t(n) * n;
  float *a, *b, *c;
  void *workspace;
  size_t workspaceBytes = 32 << 20;
  CHECK(cudaMalloc(&a, elements * 4));
  CHECK(cudaMalloc(&b, elements * 4));
  CHECK(cudaMalloc(&c, elements * 4));
  CHECK(cudaMalloc(&workspace, workspaceBytes));
  fill<<<(elements + 255) / 256, 256>>>(a, elements, 1);
  fill<<<(elements + 255) / 256, 256>>>(b, elements, 2);

  cublasLtHandle_t handle;
  CHECK(cublasLtCreate(&handle));
  cublasLtMatmulDesc_t desc;
  CHECK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasLtMatrixLayout_t layout;
  CHECK(cublasLtMatrixLayoutCreate(&layout, CUDA_R_32F, n, n, n));
  cublasLtMatmulPreference_t preference;
  CHECK(cublasLtMatmulPreferenceCreate(&preference));
  CHECK(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                             &workspaceBytes, sizeof workspaceBytes));
  cublasLtMatmulHeuristicResult_t heuristic;
  int found = 0;
  CHECK(cublasLtMatmulAlgoGetHeuristic(handle, desc, layout, layout, layout, layout, preference, 1,
                                       &heuristic, &found));
  if (found == 0) {
    std::fprintf(stderr, "no cuBLASLt algorithm\n");
    return 1;
  }
  float alpha = 1, beta = 0;
  auto gemm = [&] {
    return cublasLtMatmul(handle, desc, &alpha, a, layout, b, layout, &beta, c, layout, c, layout,
                          &heuristic.algo, workspace, workspaceBytes, 0);
  };
  for (int i = 0; i < 5; ++i)
    CHECK(gemm());
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  int reps = 50;
  CHECK(cudaEventRecord(start));
  for (int i = 0; i < reps; ++i)
    CHECK(gemm());
  CHECK(cudaEventRecord(stop));
  CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  CHECK(cudaEventElapsedTime(&ms, start, stop));
  ms /= reps;
  std::printf("{\"ms\": %.6f, \"tflops\": %.3f, \"n\": %d}\n", ms, 2.0 * n * n * double(n) / (ms / 1e3) / 1e12,
              n);
  return 0;
}
