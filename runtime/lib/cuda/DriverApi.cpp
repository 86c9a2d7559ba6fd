// Loads the CUDA driver and cuBLASLt with dlopen and resolves the entry points the executor uses.
#include "cuda/DriverApi.h"

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include <dlfcn.h>

namespace kiln::rt::cuda {
namespace {

std::string dlopenError() {
  const char *error = dlerror();
  return error ? error : "unknown dlopen error";
}

// Resolves `name` into `slot`; returns false (with the reason in `failure`) when it is missing.
template <typename Fn> bool bind(void *library, const char *name, Fn &slot, LoadFailure &failure) {
  dlerror();
  void *symbol = dlsym(library, name);
  if (!symbol) {
    failure.reason = "it has no " + std::string(name) + " (" + dlopenError() + ")";
    return false;
  }
  slot = reinterpret_cast<Fn>(symbol);
  return true;
}

bool bindDriver(void *library, DriverApi &api, LoadFailure &failure) {
#define KILN_BIND(field, symbol)                                                                    \
  if (!bind(library, symbol, api.field, failure))                                                  \
    return false;
  KILN_BIND(cuInit, "cuInit")
  KILN_BIND(cuDriverGetVersion, "cuDriverGetVersion")
  KILN_BIND(cuGetErrorName, "cuGetErrorName")
  KILN_BIND(cuGetErrorString, "cuGetErrorString")
  KILN_BIND(cuDeviceGetCount, "cuDeviceGetCount")
  KILN_BIND(cuDeviceGet, "cuDeviceGet")
  KILN_BIND(cuDeviceGetName, "cuDeviceGetName")
  KILN_BIND(cuDeviceGetAttribute, "cuDeviceGetAttribute")
  KILN_BIND(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain")
  KILN_BIND(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2")
  KILN_BIND(cuCtxPushCurrent, "cuCtxPushCurrent_v2")
  KILN_BIND(cuCtxPopCurrent, "cuCtxPopCurrent_v2")
  KILN_BIND(cuStreamCreate, "cuStreamCreate")
  KILN_BIND(cuStreamDestroy, "cuStreamDestroy_v2")
  KILN_BIND(cuStreamSynchronize, "cuStreamSynchronize")
  KILN_BIND(cuModuleLoadDataEx, "cuModuleLoadDataEx")
  KILN_BIND(cuModuleGetFunction, "cuModuleGetFunction")
  KILN_BIND(cuModuleUnload, "cuModuleUnload")
  KILN_BIND(cuFuncSetAttribute, "cuFuncSetAttribute")
  KILN_BIND(cuLaunchKernel, "cuLaunchKernel")
  KILN_BIND(cuMemAlloc, "cuMemAlloc_v2")
  KILN_BIND(cuMemFree, "cuMemFree_v2")
  KILN_BIND(cuMemHostAlloc, "cuMemHostAlloc")
  KILN_BIND(cuMemFreeHost, "cuMemFreeHost")
  KILN_BIND(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2")
  KILN_BIND(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2")
  KILN_BIND(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2")
  KILN_BIND(cuMemcpyPeerAsync, "cuMemcpyPeerAsync")
  KILN_BIND(cuEventCreate, "cuEventCreate")
  KILN_BIND(cuEventDestroy, "cuEventDestroy_v2")
  KILN_BIND(cuEventRecord, "cuEventRecord")
  KILN_BIND(cuEventQuery, "cuEventQuery")
  KILN_BIND(cuStreamWaitEvent, "cuStreamWaitEvent")
  KILN_BIND(cuStreamBeginCapture, "cuStreamBeginCapture_v2")
  KILN_BIND(cuStreamEndCapture, "cuStreamEndCapture")
  KILN_BIND(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags")
  KILN_BIND(cuGraphLaunch, "cuGraphLaunch")
  KILN_BIND(cuGraphExecDestroy, "cuGraphExecDestroy")
  KILN_BIND(cuGraphDestroy, "cuGraphDestroy")
  // Drivers before 12.8 export only the unversioned name; both have the same signature.
  if (void *v2 = dlsym(library, "cuEventElapsedTime_v2"))
    api.cuEventElapsedTime = reinterpret_cast<decltype(api.cuEventElapsedTime)>(v2);
  else
    KILN_BIND(cuEventElapsedTime, "cuEventElapsedTime")
  return true;
}

bool bindCublasLt(void *library, CublasLtApi &api, LoadFailure &failure) {
  KILN_BIND(cublasLtCreate, "cublasLtCreate")
  KILN_BIND(cublasLtDestroy, "cublasLtDestroy")
  KILN_BIND(cublasLtGetStatusName, "cublasLtGetStatusName")
  KILN_BIND(cublasLtGetStatusString, "cublasLtGetStatusString")
  KILN_BIND(cublasLtGetVersion, "cublasLtGetVersion")
  KILN_BIND(cublasLtMatmulDescCreate, "cublasLtMatmulDescCreate")
  KILN_BIND(cublasLtMatmulDescDestroy, "cublasLtMatmulDescDestroy")
  KILN_BIND(cublasLtMatmulDescSetAttribute, "cublasLtMatmulDescSetAttribute")
  KILN_BIND(cublasLtMatrixLayoutCreate, "cublasLtMatrixLayoutCreate")
  KILN_BIND(cublasLtMatrixLayoutDestroy, "cublasLtMatrixLayoutDestroy")
  KILN_BIND(cublasLtMatrixLayoutSetAttribute, "cublasLtMatrixLayoutSetAttribute")
  KILN_BIND(cublasLtMatmulPreferenceCreate, "cublasLtMatmulPreferenceCreate")
  KILN_BIND(cublasLtMatmulPreferenceDestroy, "cublasLtMatmulPreferenceDestroy")
  KILN_BIND(cublasLtMatmulPreferenceSetAttribute, "cublasLtMatmulPreferenceSetAttribute")
  KILN_BIND(cublasLtMatmulAlgoGetHeuristic, "cublasLtMatmulAlgoGetHeuristic")
  KILN_BIND(cublasLtMatmul, "cublasLtMatmul")
  return true;
}

bool bindNccl(void *library, NcclApi &api, LoadFailure &failure) {
  KILN_BIND(ncclGetVersion, "ncclGetVersion")
  KILN_BIND(ncclGetUniqueId, "ncclGetUniqueId")
  KILN_BIND(ncclCommInitRank, "ncclCommInitRank")
  KILN_BIND(ncclAllReduce, "ncclAllReduce")
  KILN_BIND(ncclCommGetAsyncError, "ncclCommGetAsyncError")
  KILN_BIND(ncclCommAbort, "ncclCommAbort")
  KILN_BIND(ncclCommDestroy, "ncclCommDestroy")
  KILN_BIND(ncclGetErrorString, "ncclGetErrorString")
#undef KILN_BIND
  return true;
}

std::mutex gLoadMutex;

// Libraries stay loaded for the life of the process; tests switch between fake drivers by path,
// so the cache is keyed by it.
template <typename Api> std::map<std::string, std::unique_ptr<Api>> &cache() {
  static std::map<std::string, std::unique_ptr<Api>> libraries;
  return libraries;
}

template <typename Api, typename Binder>
const Api *loadOne(const std::string &path, Binder binder, LoadFailure &failure) {
  auto &libraries = cache<Api>();
  auto found = libraries.find(path);
  if (found != libraries.end())
    return found->second.get();
  dlerror();
  void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    failure.reason = dlopenError();
    return nullptr;
  }
  auto api = std::make_unique<Api>();
  api->path = path;
  if (!binder(library, *api, failure)) {
    dlclose(library);
    failure.reason = path + ": " + failure.reason;
    return nullptr;
  }
  return (libraries[path] = std::move(api)).get();
}

const char *envOrNull(const char *name) {
  const char *value = std::getenv(name);
  return value && *value ? value : nullptr;
}

} // namespace

std::string DriverApi::describe(CUresult result) const {
  const char *name = nullptr, *text = nullptr;
  if (cuGetErrorName(result, &name) != CUDA_SUCCESS || !name)
    name = nullptr;
  if (cuGetErrorString(result, &text) != CUDA_SUCCESS || !text)
    text = nullptr;
  std::string out = name ? name : "CUDA error " + std::to_string(result);
  if (text)
    out += std::string(": ") + text;
  return out;
}

std::string CublasLtApi::describe(cublasStatus_t status) const {
  const char *name = cublasLtGetStatusName(status);
  const char *text = cublasLtGetStatusString(status);
  std::string out = name ? name : "cuBLAS status " + std::to_string(status);
  if (text)
    out += std::string(": ") + text;
  return out;
}

const DriverApi *loadDriverApi(LoadFailure &failure) {
  const char *override = envOrNull("KILN_LIBCUDA");
  std::string path = override ? override : "libcuda.so.1";
  failure.tried = path;
  std::lock_guard<std::mutex> lock(gLoadMutex);
  bool fresh = cache<DriverApi>().count(path) == 0;
  const DriverApi *api = loadOne<DriverApi>(path, bindDriver, failure);
  if (api && fresh)
    const_cast<DriverApi *>(api)->initResult = api->cuInit(0);
  return api;
}

const CublasLtApi *loadCublasLtApi(LoadFailure &failure) {
  std::vector<std::string> candidates;
  if (const char *override = envOrNull("KILN_LIBCUBLASLT")) {
    candidates.push_back(override);
  } else {
    static const char *const kNames[] = {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so.11",
                                         "libcublasLt.so"};
    std::vector<std::string> dirs = {""};
    if (const char *home = envOrNull("CUDA_HOME"))
      dirs.push_back(std::string(home) + "/lib64/");
    dirs.push_back("/usr/local/cuda/lib64/");
#if defined(__aarch64__)
    dirs.push_back("/usr/local/cuda/targets/sbsa-linux/lib/");
#else
    dirs.push_back("/usr/local/cuda/targets/x86_64-linux/lib/");
#endif
    for (const std::string &dir : dirs)
      for (const char *name : kNames)
        candidates.push_back(dir + name);
  }
  std::lock_guard<std::mutex> lock(gLoadMutex);
  failure.tried.clear();
  std::string firstReason;
  for (const std::string &candidate : candidates) {
    failure.tried += (failure.tried.empty() ? "" : ", ") + candidate;
    LoadFailure attempt;
    if (const CublasLtApi *api = loadOne<CublasLtApi>(candidate, bindCublasLt, attempt))
      return api;
    if (firstReason.empty())
      firstReason = attempt.reason;
  }
  failure.reason = firstReason;
  return nullptr;
}

} // namespace kiln::rt::cuda

namespace kiln::rt::cuda {

std::string NcclApi::describe(ncclResult_t result) const {
  const char *text = ncclGetErrorString(result);
  return std::string(text ? text : "NCCL error") + " (" + std::to_string(result) + ")";
}

const NcclApi *loadNcclApi(LoadFailure &failure) {
  std::vector<std::string> candidates;
  if (const char *override = envOrNull("KILN_LIBNCCL")) {
    candidates.push_back(override);
  } else {
    candidates.push_back("libnccl.so.2");
    for (const char *root : {envOrNull("CUDA_HOME"), envOrNull("CUDA_PATH"), "/usr/local/cuda"})
      if (root)
        candidates.push_back(std::string(root) + "/lib/libnccl.so.2");
  }
  std::lock_guard<std::mutex> lock(gLoadMutex);
  std::string reasons;
  for (const std::string &path : candidates) {
    const NcclApi *api = loadOne<NcclApi>(path, bindNccl, failure);
    if (api) {
      failure = {};
      return api;
    }
    reasons += (reasons.empty() ? "" : "; ") + failure.reason;
  }
  failure.tried = candidates.front();
  failure.reason = reasons;
  return nullptr;
}

} // namespace kiln::rt::cuda
