// The subset of the CUDA driver API and of cuBLASLt that the GPU executor calls, loaded with dlopen.
//
// These declarations mirror the C ABI of cuda.h, cublasLt.h, cublas_api.h and library_types.h
// (CUDA 11 to 13): opaque handles, the integer values of the enums used, and the exact exported
// symbol names (the versioned _v2 entry points that cuda.h's macros select). They are written
// out here so that the runtime builds on machines with no CUDA toolkit and runs on machines with
// no GPU; only the values below are relied on, and each is part of NVIDIA's stable ABI.
#ifndef KILN_RUNTIME_CUDA_DRIVERAPI_H
#define KILN_RUNTIME_CUDA_DRIVERAPI_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace kiln::rt::cuda {

// --- Driver API (cuda.h) -----------------------------------------------------------------------

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;

enum : CUresult {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_STUB_LIBRARY = 34,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
  CUDA_ERROR_NOT_READY = 600,
};

enum : int {
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
  CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
};
enum : int { CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8 };
enum : int { CU_JIT_ERROR_LOG_BUFFER = 5, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6 };
enum : unsigned { CU_STREAM_NON_BLOCKING = 0x1 };
enum : unsigned { CU_EVENT_DEFAULT = 0x0 };
enum : int { CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1 };
enum : unsigned { CU_MEMHOSTALLOC_PORTABLE = 0x1 };

// Dynamic shared memory a kernel may use without opting in (cuFuncSetAttribute).
constexpr unsigned kDefaultSharedLimit = 48 * 1024;

struct DriverApi {
  std::string path; // what was passed to dlopen
  CUresult (*cuInit)(unsigned flags);
  CUresult (*cuDriverGetVersion)(int *version);
  CUresult (*cuGetErrorName)(CUresult error, const char **name);
  CUresult (*cuGetErrorString)(CUresult error, const char **text);
  CUresult (*cuDeviceGetCount)(int *count);
  CUresult (*cuDeviceGet)(CUdevice *device, int ordinal);
  CUresult (*cuDeviceGetName)(char *name, int length, CUdevice device);
  CUresult (*cuDeviceGetAttribute)(int *value, int attribute, CUdevice device);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *context, CUdevice device);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice device);   // cuDevicePrimaryCtxRelease_v2
  CUresult (*cuCtxPushCurrent)(CUcontext context);          // cuCtxPushCurrent_v2
  CUresult (*cuCtxPopCurrent)(CUcontext *context);          // cuCtxPopCurrent_v2
  CUresult (*cuStreamCreate)(CUstream *stream, unsigned flags);
  CUresult (*cuStreamDestroy)(CUstream stream);             // cuStreamDestroy_v2
  CUresult (*cuStreamSynchronize)(CUstream stream);
  CUresult (*cuModuleLoadDataEx)(CUmodule *module, const void *image, unsigned numOptions,
                                 int *options, void **optionValues);
  CUresult (*cuModuleGetFunction)(CUfunction *function, CUmodule module, const char *name);
  CUresult (*cuModuleUnload)(CUmodule module);
  CUresult (*cuFuncSetAttribute)(CUfunction function, int attribute, int value);
  CUresult (*cuLaunchKernel)(CUfunction function, unsigned gridX, unsigned gridY, unsigned gridZ,
                             unsigned blockX, unsigned blockY, unsigned blockZ, unsigned sharedBytes,
                             CUstream stream, void **params, void **extra);
  CUresult (*cuMemAlloc)(CUdeviceptr *pointer, size_t bytes);                 // cuMemAlloc_v2
  CUresult (*cuMemFree)(CUdeviceptr pointer);                                 // cuMemFree_v2
  CUresult (*cuMemHostAlloc)(void **pointer, size_t bytes, unsigned flags);
  CUresult (*cuMemFreeHost)(void *pointer);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr dst, const void *src, size_t bytes, CUstream stream);
  CUresult (*cuMemcpyDtoHAsync)(void *dst, CUdeviceptr src, size_t bytes, CUstream stream);
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream);
  CUresult (*cuMemcpyPeerAsync)(CUdeviceptr dst, CUcontext dstContext, CUdeviceptr src, CUcontext srcContext,
                                size_t bytes, CUstream stream);
  CUresult (*cuEventCreate)(CUevent *event, unsigned flags);
  CUresult (*cuEventDestroy)(CUevent event);                                  // cuEventDestroy_v2
  CUresult (*cuEventRecord)(CUevent event, CUstream stream);
  CUresult (*cuEventQuery)(CUevent event);
  CUresult (*cuStreamWaitEvent)(CUstream stream, CUevent event, unsigned flags);
  // cuEventElapsedTime_v2 since CUDA 12.8 (what cuda.h's macro selects), else the original.
  CUresult (*cuEventElapsedTime)(float *milliseconds, CUevent start, CUevent end);
  CUresult (*cuStreamBeginCapture)(CUstream stream, int mode);                // cuStreamBeginCapture_v2
  CUresult (*cuStreamEndCapture)(CUstream stream, CUgraph *graph);
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec *exec, CUgraph graph, unsigned long long flags);
  CUresult (*cuGraphLaunch)(CUgraphExec exec, CUstream stream);
  CUresult (*cuGraphExecDestroy)(CUgraphExec exec);
  CUresult (*cuGraphDestroy)(CUgraph graph);

  CUresult initResult = CUDA_SUCCESS; // cuInit(0), called once when the library loads

  // "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered".
  std::string describe(CUresult result) const;
};

// --- cuBLASLt (cublasLt.h, cublas_api.h, library_types.h) --------------------------------------

using cublasStatus_t = int;
typedef struct cublasLtContext *cublasLtHandle_t;
typedef struct cublasLtMatmulDescOpaque *cublasLtMatmulDesc_t;
typedef struct cublasLtMatrixLayoutOpaque *cublasLtMatrixLayout_t;
typedef struct cublasLtMatmulPreferenceOpaque *cublasLtMatmulPreference_t;

struct cublasLtMatmulAlgo_t {
  uint64_t data[8];
};
struct cublasLtMatmulHeuristicResult_t {
  cublasLtMatmulAlgo_t algo;
  size_t workspaceSize;
  cublasStatus_t state;
  float wavesCount;
  int reserved[4];
};

enum : cublasStatus_t { CUBLAS_STATUS_SUCCESS = 0 };
enum : int { CUDA_R_32F = 0, CUDA_R_16F = 2, CUDA_R_16BF = 14 };         // cudaDataType
enum : int { CUBLAS_COMPUTE_32F = 68, CUBLAS_COMPUTE_32F_FAST_TF32 = 77 }; // cublasComputeType_t
enum : int32_t { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 };                       // cublasOperation_t
enum : int {                                                               // cublasLtMatmulDescAttributes_t
  CUBLASLT_MATMUL_DESC_TRANSA = 3,
  CUBLASLT_MATMUL_DESC_TRANSB = 4,
  CUBLASLT_MATMUL_DESC_EPILOGUE = 7,
  CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8,
  CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE = 26,
};
enum : uint32_t { // cublasLtEpilogue_t
  CUBLASLT_EPILOGUE_DEFAULT = 1,
  CUBLASLT_EPILOGUE_RELU = 2,
  CUBLASLT_EPILOGUE_BIAS = 4,
  CUBLASLT_EPILOGUE_RELU_BIAS = 6,
};
enum : int { CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT = 5, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET = 6 };
enum : int { CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1 };

struct CublasLtApi {
  std::string path;
  cublasStatus_t (*cublasLtCreate)(cublasLtHandle_t *handle);
  cublasStatus_t (*cublasLtDestroy)(cublasLtHandle_t handle);
  const char *(*cublasLtGetStatusName)(cublasStatus_t status);
  const char *(*cublasLtGetStatusString)(cublasStatus_t status);
  size_t (*cublasLtGetVersion)();
  cublasStatus_t (*cublasLtMatmulDescCreate)(cublasLtMatmulDesc_t *desc, int computeType, int scaleType);
  cublasStatus_t (*cublasLtMatmulDescDestroy)(cublasLtMatmulDesc_t desc);
  cublasStatus_t (*cublasLtMatmulDescSetAttribute)(cublasLtMatmulDesc_t desc, int attribute,
                                                   const void *value, size_t size);
  cublasStatus_t (*cublasLtMatrixLayoutCreate)(cublasLtMatrixLayout_t *layout, int type, uint64_t rows,
                                               uint64_t cols, int64_t ld);
  cublasStatus_t (*cublasLtMatrixLayoutDestroy)(cublasLtMatrixLayout_t layout);
  cublasStatus_t (*cublasLtMatrixLayoutSetAttribute)(cublasLtMatrixLayout_t layout, int attribute,
                                                     const void *value, size_t size);
  cublasStatus_t (*cublasLtMatmulPreferenceCreate)(cublasLtMatmulPreference_t *preference);
  cublasStatus_t (*cublasLtMatmulPreferenceDestroy)(cublasLtMatmulPreference_t preference);
  cublasStatus_t (*cublasLtMatmulPreferenceSetAttribute)(cublasLtMatmulPreference_t preference,
                                                         int attribute, const void *value, size_t size);
  cublasStatus_t (*cublasLtMatmulAlgoGetHeuristic)(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                                   cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                                   cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                                   cublasLtMatmulPreference_t preference, int requested,
                                                   cublasLtMatmulHeuristicResult_t *results, int *returned);
  cublasStatus_t (*cublasLtMatmul)(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void *alpha,
                                   const void *a, cublasLtMatrixLayout_t aLayout, const void *b,
                                   cublasLtMatrixLayout_t bLayout, const void *beta, const void *c,
                                   cublasLtMatrixLayout_t cLayout, void *d, cublasLtMatrixLayout_t dLayout,
                                   const cublasLtMatmulAlgo_t *algo, void *workspace, size_t workspaceBytes,
                                   CUstream stream);

  // "CUBLAS_STATUS_NOT_SUPPORTED: the functionality requested is not supported".
  std::string describe(cublasStatus_t status) const;
};

// Why a library could not be loaded; `tried` lists what was attempted, `reason` the loader's words.
struct LoadFailure {
  std::string tried;
  std::string reason;
};

// --- NCCL (nccl.h, 2.x) ------------------------------------------------------------------------

using ncclResult_t = int;
typedef struct ncclComm *ncclComm_t;
struct ncclUniqueId {
  char internal[128];
};
enum : ncclResult_t { ncclSuccess = 0, ncclInternalError = 3, ncclInProgress = 7 };
enum : int { ncclFloat32 = 7 }; // ncclDataType_t
enum : int { ncclSum = 0 };     // ncclRedOp_t

struct NcclApi {
  std::string path;
  ncclResult_t (*ncclGetVersion)(int *version);
  ncclResult_t (*ncclGetUniqueId)(ncclUniqueId *id);
  ncclResult_t (*ncclCommInitRank)(ncclComm_t *comm, int ranks, ncclUniqueId id, int rank);
  ncclResult_t (*ncclAllReduce)(const void *send, void *receive, size_t count, int type, int op,
                                ncclComm_t comm, CUstream stream);
  ncclResult_t (*ncclCommGetAsyncError)(ncclComm_t comm, ncclResult_t *error);
  ncclResult_t (*ncclCommAbort)(ncclComm_t comm);
  ncclResult_t (*ncclCommDestroy)(ncclComm_t comm);
  const char *(*ncclGetErrorString)(ncclResult_t result);

  // "ncclSystemError: unhandled system error (7)".
  std::string describe(ncclResult_t result) const;
};

// The driver named by $KILN_LIBCUDA, else libcuda.so.1. Loaded once per path and never unloaded
// (a driver cannot be unloaded safely); cuInit has run (see initResult). Returns nullptr and
// fills `failure` when dlopen or a dlsym fails.
const DriverApi *loadDriverApi(LoadFailure &failure);

// NCCL: $KILN_LIBNCCL, else libnccl.so.2 on the loader's path, then in $CUDA_HOME/lib and
// /usr/local/cuda/lib. Loaded once per path, never unloaded; nullptr and `failure` when missing.
const NcclApi *loadNcclApi(LoadFailure &failure);


// cuBLASLt: $KILN_LIBCUBLASLT, else libcublasLt.so.13/.12/.11/.so on the loader's path, then in
// $CUDA_HOME/lib64 and the toolkit's usual folders. Same contract as loadDriverApi.
const CublasLtApi *loadCublasLtApi(LoadFailure &failure);

} // namespace kiln::rt::cuda

#endif // KILN_RUNTIME_CUDA_DRIVERAPI_H
