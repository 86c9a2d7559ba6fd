// The GPU executor: CUDA context, module, device buffers, cuBLASLt plans, runs and CUDA graphs.
#include "cuda/Executor.h"

#include "ArtifactInternal.h"
#include "cuda/DriverApi.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <new>
#include <mutex>

#include <elf.h>

namespace kiln::rt::cuda {

using detail::StatusError;

namespace {

constexpr std::size_t kCublasWorkspaceBytes = 32u << 20;
// Algorithms the cuBLASLt heuristic offers per product, timed at load with
// KILN_CUBLASLT_AUTOTUNE=1 (else its first choice), and runs of each.
constexpr int kMatmulCandidates = 8;
constexpr int kAutotuneRepeats = 3;
constexpr std::size_t kJitLogBytes = 8192;

uint64_t roundUp(uint64_t bytes) {
  return (std::max<uint64_t>(bytes, 1) + kCudaBufferAlignment - 1) / kCudaBufferAlignment * kCudaBufferAlignment;
}

// "code for sm_80 and sm_90, PTX for compute_80": what the artifact offers a GPU, for messages.
std::string describeCode(const Manifest &manifest) {
  std::string out;
  for (std::size_t i = 0; i < manifest.cudaCubins.size(); ++i)
    out += (i == 0 ? "code for " : i + 1 == manifest.cudaCubins.size() ? " and " : ", ") + manifest.cudaCubins[i];
  if (!manifest.cudaPtxTarget.empty())
    out += (out.empty() ? "" : ", ") + std::string("PTX for ") + manifest.cudaPtxTarget;
  return out;
}

bool envSaysOff(const char *name) {
  const char *value = std::getenv(name);
  return value && (std::strcmp(value, "0") == 0 || std::strcmp(value, "off") == 0);
}

bool envSaysOn(const char *name) {
  const char *value = std::getenv(name);
  return value && *value && std::strcmp(value, "0") != 0;
}

// A failure of the GPU program that CUDA reported to a later call: its message already says so.
class ProgramFault : public StatusError {
public:
  explicit ProgramFault(const std::string &message) : StatusError(KILN_ERROR_DEVICE, message) {}
};

std::string lateFaultHint() {
  return " (CUDA reports a kernel's fault to a later call, so the failing record is not known; run with "
         "CUDA_LAUNCH_BLOCKING=1 to name it)";
}

std::string firstLine(const char *text) {
  std::string line(text);
  std::size_t end = line.find_first_of("\r\n");
  if (end != std::string::npos)
    line.resize(end);
  return line;
}

// Empty when `data` holds a whole 64-bit ELF file: the driver reads the cubin by its own header,
// so every table the header points at must lie inside the symbol.
std::string cubinProblem(const char *data, std::size_t size) {
  if (size < SELFMAG || std::memcmp(data, ELFMAG, SELFMAG) != 0)
    return "no ELF header";
  Elf64_Ehdr header;
  if (size < sizeof header)
    return "ELF header cut short, " + std::to_string(size) + " bytes";
  std::memcpy(&header, data, sizeof header);
  if (header.e_ident[EI_CLASS] != ELFCLASS64)
    return "not a 64-bit ELF file";
  auto end = [](uint64_t offset, uint64_t count, uint64_t entry) {
    unsigned __int128 last = static_cast<unsigned __int128>(count) * entry + offset;
    return last > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(last);
  };
  if (header.e_shoff && end(header.e_shoff, header.e_shnum, header.e_shentsize) > size)
    return "section table ends past the symbol's " + std::to_string(size) + " bytes";
  if (header.e_phoff && end(header.e_phoff, header.e_phnum, header.e_phentsize) > size)
    return "program header table ends past the symbol's " + std::to_string(size) + " bytes";
  return {};
}

} // namespace

// ---------------------------------------------------------------------------------------------
// Impl

class Executor::Impl {
public:
  Impl(std::string path, const Manifest &manifest, std::string prefix)
      : path_(std::move(path)), manifest_(manifest), prefix_(std::move(prefix)) {}
  ~Impl() { release(); }

  void open(void *library, int index);
  void run(const Executor::InputSource *sources, void *const *outputs);
  std::size_t inputCount() const { return inputs_.size(); }
  double timeSteps(int steps);

  std::string deviceName_;
  std::string code_;
  double lastDeviceMs_ = -1;
  bool graphEnabled_ = true;
  std::string graphState_; // see Executor::cudaGraphState
  std::mutex mutex_;

  void updateGraphState() {
    if (!graphEnabled_)
      graphState_ = "off";
    else if (graphExec_[parity_])
      graphState_ = "on";
    else if (!graphFailure_.empty())
      graphState_ = "failed: " + graphFailure_;
    else
      graphState_ = "pending";
  }

private:
  struct LaunchPlan {
    CUfunction function = nullptr;
    std::vector<CUdeviceptr> values; // one device pointer per kernel parameter
    std::vector<void *> params;      // cuLaunchKernel's array of pointers to each value
  };
  struct MatmulPlan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;
    cublasLtMatmulAlgo_t algo{};
    CUdeviceptr aPtr = 0, bPtr = 0, cPtr = 0, dPtr = 0;
    float alpha = 1.0f, beta = 0.0f;
  };

  // Makes the context current on the calling thread for a scope and restores the caller's after.
  class ContextScope {
  public:
    explicit ContextScope(Impl &impl) : impl_(impl) {
      impl_.check(impl_.api_->cuCtxPushCurrent(impl_.context_), "cuCtxPushCurrent");
    }
    ~ContextScope() {
      CUcontext popped = nullptr;
      impl_.api_->cuCtxPopCurrent(&popped);
    }

  private:
    Impl &impl_;
  };

  // "model.kiln: gpu:0 (NVIDIA H100 80GB HBM3, sm_90)", which starts every message after the GPU is known.
  std::string prefix() const { return path_ + ": " + deviceString_ + " (" + deviceLabel_ + ")"; }

  // Throws KILN_ERROR_DEVICE naming the call, the record it served (if any) and CUDA's words.
  void check(CUresult result, const char *call, const CudaRecord *record = nullptr) const {
    if (result == CUDA_SUCCESS)
      return;
    throw StatusError(KILN_ERROR_DEVICE, prefix() + ": " + call + " failed" +
                                             (record ? " for " + record->describe() : std::string()) + ": " +
                                             api_->describe(result));
  }
  void checkLt(cublasStatus_t status, const char *call, const CudaRecord &record) const {
    if (status == CUBLAS_STATUS_SUCCESS)
      return;
    throw StatusError(KILN_ERROR_DEVICE, prefix() + ": " + call + " failed for " + record.describe() + ": " +
                                             lt_->describe(status));
  }

  struct Image {
    bool isPtx = false;
    const char *cubin = nullptr; // inside the artifact
    std::string ptx;             // a copy, NUL-terminated
    const char *data() const { return isPtx ? ptx.c_str() : cubin; }
  };

  void selectDevice(int index);
  Image findImage(void *library) const;
  void loadModule(const char *image, bool isPtx);
  void resolveKernels();
  CUdeviceptr allocate(uint64_t bytes, const std::string &what);
  CUdeviceptr resolve(const BufferRef &ref) const;
  void allocateBuffers(void *library);
  void planMatmuls();
  void planMatmul(const CudaRecord &record, const CudaMatmul &matmul, cublasLtMatmulPreference_t preference,
                  MatmulPlan &plan);
  cublasLtMatmulAlgo_t fastestAlgo(const MatmulPlan &plan, const cublasLtMatmulHeuristicResult_t *results,
                                   int count);
  void enqueueRecords(bool capturing = false);
  [[noreturn]] void failedRecord(const StatusError &error, const CudaRecord &record, bool capturing) const;
  void captureGraph();
  void release() noexcept;

  std::string path_;
  const Manifest &manifest_;
  // Names the program's symbols: "kiln_" + "cuda_program", ... ("kiln_stage_3_" for a stage).
  std::string prefix_;
  CudaProgram program_;
  const DriverApi *api_ = nullptr;
  const CublasLtApi *lt_ = nullptr;
  std::string deviceString_;
  std::string deviceLabel_;

  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  bool retained_ = false;
  CUstream stream_ = nullptr;
  CUevent start_ = nullptr, stop_ = nullptr;
  CUmodule module_ = nullptr;
  std::map<std::string, CUfunction> functions_;
  int sharedOptIn_ = 0;

  std::vector<CUdeviceptr> allocations_;
  CUdeviceptr arena_ = 0, constants_ = 0, workspace_ = 0;
  std::vector<CUdeviceptr> inputs_, outputs_;
  std::vector<uint64_t> inputBytes_, outputBytes_;
  // Pinned host copies of every input and output, so copies are truly asynchronous; null when
  // pinned memory could not be had (then copies go straight from the caller's buffers).
  char *staging_ = nullptr;
  std::vector<uint64_t> stagingOffsets_;

  cublasLtHandle_t ltHandle_ = nullptr;
  std::vector<LaunchPlan> launches_; // per record, empty for non-launch records
  std::vector<MatmulPlan> matmuls_;  // per record, unused for non-matmul records

  // One graph per parity of the resident state (see setResident): a graph holds the buffers' addresses,
  // and the state's two buffers trade places after every run. Without resident state only [0] is used.
  CUgraph graph_[2] = {nullptr, nullptr};
  CUgraphExec graphExec_[2] = {nullptr, nullptr};
  std::string graphFailure_; // why capture failed; runs then launch directly

  // Resident state: (input, output) pairs that stay on the device; parity_ flips after every run.
  std::vector<std::pair<int, int>> resident_;
  std::vector<bool> residentInput_, residentOutput_;
  int parity_ = 0;

  // A data-parallel step's hooks (all zero: one replica, sums left as they are) and the values its
  // world-size and replica-rank records copy to the device, in pinned memory so that a CUDA graph
  // can capture the copies.
  kiln_device_collective_hooks hooks_{};
  struct CollectiveValues {
    float worldSize = 1;
    int64_t rank = 0;
  };
  CollectiveValues *values_ = nullptr;
  bool valuesPinned_ = false;
  void callHook(const char *what, const CudaRecord *record,
                const std::function<int(char *, size_t)> &hook) const;

public:
  void setCollective(const kiln_device_collective_hooks *hooks);
  void setResident(std::vector<std::pair<int, int>> pairs);
  void transferResident(int input, void *host, const void *source);
  void copyResidentFrom(int input, const Impl &from, int output);
  bool hasCollectives() const { return program_.collectives() > 0; }

private:
  void bindPointers();
  void swapResident();
  void copyFrom(std::size_t input, const Impl &from, CUdeviceptr source, uint64_t bytes, const char *what);
  // Whether launches and matmuls still point at the buffers as they were before the last swap.
  bool pointersStale_ = false;
};

void Executor::Impl::open(void *library, int index) {
  deviceString_ = "gpu:" + std::to_string(index);
  program_ = Executor::readProgram(path_, manifest_, library, prefix_);

  LoadFailure failure;
  api_ = loadDriverApi(failure);
  std::string needs = "this artifact needs an NVIDIA GPU (" + describeCode(manifest_) + ")";
  if (!api_)
    throw StatusError(KILN_ERROR_NO_DEVICE, path_ + ": no CUDA driver on this machine (" + failure.reason + "); " + needs);
  if (api_->initResult == CUDA_ERROR_NO_DEVICE)
    throw StatusError(KILN_ERROR_NO_DEVICE, path_ + ": no CUDA GPU on this machine (cuInit: " +
                                                api_->describe(api_->initResult) + "); " + needs);
  if (api_->initResult == CUDA_ERROR_STUB_LIBRARY)
    throw StatusError(KILN_ERROR_NO_DEVICE, path_ + ": no CUDA driver on this machine (" + api_->path +
                                                " is the CUDA toolkit's stub library); " + needs);
  if (api_->initResult != CUDA_SUCCESS)
    throw StatusError(KILN_ERROR_DEVICE, path_ + ": cannot initialize the CUDA driver " + api_->path +
                                             " (cuInit: " + api_->describe(api_->initResult) + ")");
  selectDevice(index);
  Image image = findImage(library);

  // Everything from here on lives in the device's primary context, shared with other users of
  // the driver API and the CUDA runtime in this process.
  check(api_->cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
  retained_ = true;
  ContextScope scope(*this);
  check(api_->cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  check(api_->cuEventCreate(&start_, CU_EVENT_DEFAULT), "cuEventCreate");
  check(api_->cuEventCreate(&stop_, CU_EVENT_DEFAULT), "cuEventCreate");
  loadModule(image.data(), image.isPtx);
  resolveKernels();
  allocateBuffers(library);
  planMatmuls();
  // A debugging session that asks for blocking launches wants every record to report its own
  // failure, which a replayed graph cannot do.
  graphEnabled_ = !envSaysOff("KILN_CUDA_GRAPH") && !envSaysOn("CUDA_LAUNCH_BLOCKING");
  updateGraphState();
}

void Executor::Impl::selectDevice(int index) {
  int count = 0;
  CUresult result = api_->cuDeviceGetCount(&count);
  if (result != CUDA_SUCCESS)
    throw StatusError(KILN_ERROR_DEVICE, path_ + ": cuDeviceGetCount failed: " + api_->describe(result));
  if (index >= count) {
    std::string have = count == 0   ? "it has no CUDA GPUs"
                       : count == 1 ? "it has 1 GPU: gpu:0"
                                    : "it has " + std::to_string(count) + " GPUs: gpu:0 to gpu:" +
                                          std::to_string(count - 1);
    throw StatusError(KILN_ERROR_NO_DEVICE, path_ + ": no " + deviceString_ + " on this machine (" + have + ")");
  }
  auto must = [&](CUresult r, const char *call) {
    if (r != CUDA_SUCCESS)
      throw StatusError(KILN_ERROR_DEVICE, path_ + ": " + deviceString_ + ": " + call + " failed: " + api_->describe(r));
  };
  must(api_->cuDeviceGet(&device_, index), "cuDeviceGet");
  char name[256] = {};
  must(api_->cuDeviceGetName(name, sizeof name - 1, device_), "cuDeviceGetName");
  int major = 0, minor = 0, driver = 0;
  must(api_->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device_), "cuDeviceGetAttribute");
  must(api_->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device_), "cuDeviceGetAttribute");
  must(api_->cuDeviceGetAttribute(&sharedOptIn_, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, device_),
       "cuDeviceGetAttribute");
  must(api_->cuDriverGetVersion(&driver), "cuDriverGetVersion");
  std::string sm = "sm_" + std::to_string(major * 10 + minor);
  deviceName_ = std::string(name) + " (" + sm + ", driver " + formatDriverVersion(driver) + ")";
  deviceLabel_ = std::string(name) + ", " + sm;

  std::string refused = path_ + ": cannot run on " + deviceString_ + " (" + name + ", " + sm + "): ";
  if (manifest_.cudaMinDriver > driver)
    throw StatusError(KILN_ERROR_UNSUPPORTED, refused + "the artifact needs a CUDA " +
                                                  formatDriverVersion(manifest_.cudaMinDriver) +
                                                  " driver or newer; this driver is CUDA " +
                                                  formatDriverVersion(driver) + " (update the NVIDIA driver)");
  CudaImageChoice choice =
      chooseCudaImage(major, minor, driver, manifest_.cudaCubins, manifest_.cudaPtxTarget, manifest_.cudaPtxIsa);
  if (choice.kind == CudaImageChoice::Kind::None)
    throw StatusError(KILN_ERROR_UNSUPPORTED, refused + choice.refusal);
  code_ = (choice.kind == CudaImageChoice::Kind::Cubin ? "cubin " : "ptx ") + choice.arch;
}

// The code chosen for the GPU, from symbols Executor::readProgram has checked.
Executor::Impl::Image Executor::Impl::findImage(void *library) const {
  Image image;
  image.isPtx = code_.rfind("ptx ", 0) == 0;
  if (image.isPtx) {
    image.ptx = detail::readTextSymbol(library, (prefix_ + "cuda_ptx").c_str(), path_).value();
    return image;
  }
  std::string symbol = prefix_ + "cuda_cubin_" + code_.substr(code_.find(' ') + 1);
  image.cubin = detail::findDataSymbol(library, symbol.c_str(), path_).value().data;
  return image;
}

void Executor::Impl::loadModule(const char *image, bool isPtx) {
  // The driver writes why a PTX failed to compile into this log; its first line goes into the error.
  std::vector<char> log(kJitLogBytes, '\0');
  int options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log.data(), reinterpret_cast<void *>(static_cast<uintptr_t>(log.size() - 1))};
  CUresult result = api_->cuModuleLoadDataEx(&module_, image, 2, options, values);
  if (result == CUDA_SUCCESS)
    return;
  module_ = nullptr;
  std::string detail = firstLine(log.data());
  std::string hint;
  if (result == CUDA_ERROR_UNSUPPORTED_PTX_VERSION)
    hint = " (the PTX is ISA " + manifest_.cudaPtxIsa + "; update the NVIDIA driver)";
  throw StatusError(KILN_ERROR_DEVICE, prefix() + ": cuModuleLoadDataEx failed for the " +
                                           (isPtx ? "PTX (" : "cubin (") + code_ + "): " +
                                           api_->describe(result) + (detail.empty() ? "" : ": " + detail) + hint);
}

void Executor::Impl::resolveKernels() {
  std::map<std::string, const CudaRecord *> mostShared; // per kernel, the launch asking for the most
  for (const CudaRecord &record : program_.records) {
    const auto *launch = std::get_if<CudaLaunch>(&record.op);
    if (!launch)
      continue;
    if (!functions_.count(launch->kernel)) {
      CUfunction function = nullptr;
      check(api_->cuModuleGetFunction(&function, module_, launch->kernel.c_str()), "cuModuleGetFunction", &record);
      functions_[launch->kernel] = function;
    }
    const CudaRecord *&most = mostShared[launch->kernel];
    if (!most || std::get<CudaLaunch>(most->op).sharedBytes < launch->sharedBytes)
      most = &record;
  }
  // Beyond 48 KiB of dynamic shared memory a kernel must opt in, up to the GPU's limit.
  for (const auto &[kernel, record] : mostShared) {
    uint32_t shared = std::get<CudaLaunch>(record->op).sharedBytes;
    if (shared <= kDefaultSharedLimit)
      continue;
    if (sharedOptIn_ > 0 && shared > static_cast<uint32_t>(sharedOptIn_))
      throw StatusError(KILN_ERROR_UNSUPPORTED, prefix() + ": " + record->describe() + " needs " +
                                                    std::to_string(shared) + " bytes of shared memory; this GPU " +
                                                    "allows " + std::to_string(sharedOptIn_) + " per block");
    check(api_->cuFuncSetAttribute(functions_[kernel], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                   static_cast<int>(shared)),
          "cuFuncSetAttribute", record);
  }
}

CUdeviceptr Executor::Impl::allocate(uint64_t bytes, const std::string &what) {
  CUdeviceptr pointer = 0;
  CUresult result = api_->cuMemAlloc(&pointer, static_cast<size_t>(roundUp(bytes)));
  if (result != CUDA_SUCCESS)
    throw StatusError(KILN_ERROR_DEVICE, prefix() + ": cuMemAlloc failed for " + what + " (" +
                                             std::to_string(roundUp(bytes)) + " bytes): " + api_->describe(result));
  allocations_.push_back(pointer);
  if (pointer % kCudaBufferAlignment != 0)
    throw StatusError(KILN_ERROR_DEVICE, prefix() + ": cuMemAlloc returned memory that is not " +
                                             std::to_string(kCudaBufferAlignment) + "-byte aligned");
  return pointer;
}

CUdeviceptr Executor::Impl::resolve(const BufferRef &ref) const {
  switch (ref.kind) {
  case BufferRef::Kind::None: return 0;
  case BufferRef::Kind::Input: return inputs_[ref.value];
  case BufferRef::Kind::Output: return outputs_[ref.value];
  case BufferRef::Kind::Arena: return arena_ + ref.value;
  case BufferRef::Kind::Constant: return constants_ + ref.value;
  }
  return 0;
}

void Executor::Impl::allocateBuffers(void *library) {
  arena_ = allocate(program_.arenaBytes, "the arena");
  constants_ = allocate(program_.constantBytes, "the constants");
  for (std::size_t i = 0; i < manifest_.inputs.size(); ++i) {
    inputBytes_.push_back(manifest_.inputs[i].byteSize());
    inputs_.push_back(allocate(inputBytes_.back(), "input '" + manifest_.inputs[i].name + "'"));
  }
  for (std::size_t i = 0; i < manifest_.outputs.size(); ++i) {
    outputBytes_.push_back(manifest_.outputs[i].byteSize());
    outputs_.push_back(allocate(outputBytes_.back(), "output '" + manifest_.outputs[i].name + "'"));
  }
  if (program_.matmuls() > 0)
    workspace_ = allocate(kCublasWorkspaceBytes, "the cuBLASLt workspace");

  if (program_.constantBytes > 0) {
    std::optional<detail::SymbolData> symbol =
        detail::findDataSymbol(library, (prefix_ + "cuda_constants").c_str(), path_);
    // Executor::readProgram has checked that the symbol exists and is large enough.
    check(api_->cuMemcpyHtoDAsync(constants_, symbol->data, program_.constantBytes, stream_), "cuMemcpyHtoDAsync");
    check(api_->cuStreamSynchronize(stream_), "cuStreamSynchronize");
  }

  uint64_t stagingBytes = 0;
  for (uint64_t bytes : inputBytes_) {
    stagingOffsets_.push_back(stagingBytes);
    stagingBytes += roundUp(bytes);
  }
  for (uint64_t bytes : outputBytes_) {
    stagingOffsets_.push_back(stagingBytes);
    stagingBytes += roundUp(bytes);
  }
  void *pinned = nullptr;
  if (stagingBytes > 0 &&
      api_->cuMemHostAlloc(&pinned, static_cast<size_t>(stagingBytes), CU_MEMHOSTALLOC_PORTABLE) == CUDA_SUCCESS)
    staging_ = static_cast<char *>(pinned);

  residentInput_.assign(inputs_.size(), false);
  residentOutput_.assign(outputs_.size(), false);
  if (program_.collectives() > 0) {
    void *pinned = nullptr;
    valuesPinned_ = api_->cuMemHostAlloc(&pinned, sizeof(CollectiveValues), CU_MEMHOSTALLOC_PORTABLE) == CUDA_SUCCESS;
    values_ = valuesPinned_ ? new (pinned) CollectiveValues : new CollectiveValues;
  }

  launches_.resize(program_.records.size());
  for (std::size_t i = 0; i < program_.records.size(); ++i) {
    const auto *launch = std::get_if<CudaLaunch>(&program_.records[i].op);
    if (!launch)
      continue;
    LaunchPlan &plan = launches_[i];
    plan.function = functions_.at(launch->kernel);
    plan.values.resize(launch->args.size());
    for (CUdeviceptr &value : plan.values)
      plan.params.push_back(&value);
  }
  bindPointers();
}

// Calls a collective hook; a failure (a peer that died, NCCL's own error) is a device error naming
// the record.
void Executor::Impl::callHook(const char *what, const CudaRecord *record,
                              const std::function<int(char *, size_t)> &hook) const {
  char error[512] = {};
  if (hook(error, sizeof error) == 0)
    return;
  error[sizeof error - 1] = '\0';
  throw StatusError(KILN_ERROR_DEVICE, prefix() + ": " + what + (record ? " for " + record->describe() : "") +
                                           " failed: " + (error[0] ? error : "no reason given"));
}

void Executor::Impl::setCollective(const kiln_device_collective_hooks *hooks) {
  std::lock_guard<std::mutex> lock(mutex_);
  hooks_ = hooks ? *hooks : kiln_device_collective_hooks{};
  values_->worldSize = static_cast<float>(hooks_.world_size > 0 ? hooks_.world_size : 1);
  values_->rank = hooks_.rank;
  // The hooks keep host-side records of what they queued, which a replayed graph would not
  // repeat: with peers, every step launches directly.
  if (hooks_.start || hooks_.wait || hooks_.finish)
    graphEnabled_ = false;
  updateGraphState();
}

// Points every launch's and matmul's operands at the buffers as they are now; runs again whenever
// resident state trades its buffers.
void Executor::Impl::bindPointers() {
  for (std::size_t i = 0; i < program_.records.size(); ++i) {
    const CudaRecord &record = program_.records[i];
    if (const auto *launch = std::get_if<CudaLaunch>(&record.op)) {
      for (std::size_t a = 0; a < launch->args.size(); ++a)
        launches_[i].values[a] = resolve(launch->args[a]);
    } else if (const auto *matmul = std::get_if<CudaMatmul>(&record.op)) {
      if (i >= matmuls_.size() || !matmuls_[i].desc)
        continue; // not planned yet: planMatmul resolves its own
      MatmulPlan &plan = matmuls_[i];
      plan.aPtr = resolve(matmul->rhs);
      plan.bPtr = resolve(matmul->lhs);
      plan.dPtr = resolve(matmul->out);
      plan.cPtr = matmul->addend.kind != BufferRef::Kind::None ? resolve(matmul->addend) : plan.dPtr;
      if (matmul->bias.kind != BufferRef::Kind::None) {
        void *pointer = reinterpret_cast<void *>(static_cast<uintptr_t>(resolve(matmul->bias)));
        checkLt(lt_->cublasLtMatmulDescSetAttribute(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &pointer,
                                                    sizeof pointer),
                "cublasLtMatmulDescSetAttribute", record);
      }
    }
  }
}

void Executor::Impl::setResident(std::vector<std::pair<int, int>> pairs) {
  std::lock_guard<std::mutex> lock(mutex_);
  residentInput_.assign(inputs_.size(), false);
  residentOutput_.assign(outputs_.size(), false);
  for (auto [input, output] : pairs) {
    if (input < 0 || static_cast<std::size_t>(input) >= inputs_.size() || output < 0 ||
        static_cast<std::size_t>(output) >= outputs_.size() || inputBytes_[input] != outputBytes_[output] ||
        residentInput_[input] || residentOutput_[output])
      throw StatusError(KILN_ERROR_INVALID_ARGUMENT, prefix() + ": input " + std::to_string(input) + " and output " +
                                                         std::to_string(output) + " cannot be one resident tensor");
    residentInput_[input] = residentOutput_[output] = true;
  }
  resident_ = std::move(pairs);
}

// The state written by the run just finished becomes the next run's input: the two buffers of each
// pair trade places, with no copy. The other parity's graph (if captured) already holds them so,
// and direct launches re-point their operands before they next enqueue.
void Executor::Impl::swapResident() {
  if (resident_.empty())
    return;
  for (auto [input, output] : resident_)
    std::swap(inputs_[input], outputs_[output]);
  parity_ ^= 1;
  // Only launching directly (or capturing) reads the pointers; a replay has its own.
  pointersStale_ = true;
}

// Copies the current value of resident input `input` to `host`, or from `source` into it.
void Executor::Impl::transferResident(int input, void *host, const void *source) {
  std::lock_guard<std::mutex> lock(mutex_);
  ContextScope scope(*this);
  std::size_t i = static_cast<std::size_t>(input);
  if (inputBytes_.at(i) == 0)
    return;
  if (host)
    check(api_->cuMemcpyDtoHAsync(host, inputs_[i], inputBytes_[i], stream_), "cuMemcpyDtoHAsync");
  else
    check(api_->cuMemcpyHtoDAsync(inputs_[i], source, inputBytes_[i], stream_), "cuMemcpyHtoDAsync");
  check(api_->cuStreamSynchronize(stream_), "cuStreamSynchronize");
}

// Input `input` of the next run from `bytes` at `source` on `from`'s device, queued on this
// executor's stream: device to device on one GPU, peer to peer between two.
void Executor::Impl::copyFrom(std::size_t input, const Impl &from, CUdeviceptr source, uint64_t bytes,
                              const char *what) {
  if (bytes != inputBytes_.at(input))
    throw StatusError(KILN_ERROR_INVALID_ARGUMENT, prefix() + ": input " + std::to_string(input) + " takes " +
                                                       std::to_string(inputBytes_[input]) + " bytes from " + what +
                                                       " of another size");
  if (bytes == 0)
    return;
  if (from.device_ == device_)
    check(api_->cuMemcpyDtoDAsync(inputs_[input], source, bytes, stream_), "cuMemcpyDtoDAsync");
  else
    check(api_->cuMemcpyPeerAsync(inputs_[input], context_, source, from.context_, bytes, stream_),
          "cuMemcpyPeerAsync");
}

// Sets resident input `input` from output `output` of another executor's finished run.
void Executor::Impl::copyResidentFrom(int input, const Impl &from, int output) {
  std::lock_guard<std::mutex> lock(mutex_);
  ContextScope scope(*this);
  copyFrom(static_cast<std::size_t>(input), from, from.outputs_.at(static_cast<std::size_t>(output)),
           from.outputBytes_.at(static_cast<std::size_t>(output)), "an output");
  check(api_->cuStreamSynchronize(stream_), "cuStreamSynchronize");
}

void Executor::Impl::planMatmuls() {
  if (program_.matmuls() == 0)
    return;
  LoadFailure failure;
  lt_ = loadCublasLtApi(failure);
  if (!lt_)
    throw StatusError(KILN_ERROR_DEVICE, path_ + ": cannot load cuBLASLt, which the artifact's matmul records need (" +
                                             failure.reason + "; tried " + failure.tried +
                                             (std::getenv("KILN_LIBCUBLASLT") ? ")" : "; set KILN_LIBCUBLASLT to its path)"));
  const CudaRecord &first = *std::find_if(program_.records.begin(), program_.records.end(), [](const CudaRecord &r) {
    return std::holds_alternative<CudaMatmul>(r.op);
  });
  checkLt(lt_->cublasLtCreate(&ltHandle_), "cublasLtCreate", first);
  cublasLtMatmulPreference_t preference = nullptr;
  checkLt(lt_->cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate", first);
  try {
    uint64_t workspace = kCublasWorkspaceBytes;
    checkLt(lt_->cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                      &workspace, sizeof workspace),
            "cublasLtMatmulPreferenceSetAttribute", first);
    matmuls_.resize(program_.records.size());
    for (std::size_t i = 0; i < program_.records.size(); ++i)
      if (const auto *matmul = std::get_if<CudaMatmul>(&program_.records[i].op))
        planMatmul(program_.records[i], *matmul, preference, matmuls_[i]);
  } catch (...) {
    lt_->cublasLtMatmulPreferenceDestroy(preference);
    throw;
  }
  lt_->cublasLtMatmulPreferenceDestroy(preference);
}

// Row-major out[m x n] = lhs[m x k] . rhs[k x n] is, read column-major, out^T[n x m] =
// rhs^T[n x k] . lhs^T[k x m]: cuBLASLt's A is our rhs, its B our lhs, its m' = n and n' = m, and
// a row-major matrix is its own transpose read column-major with the same leading dimension. The
// bias, one value per output column, is one value per row of cuBLASLt's D.
void Executor::Impl::planMatmul(const CudaRecord &record, const CudaMatmul &matmul,
                                cublasLtMatmulPreference_t preference, MatmulPlan &plan) {
  int type = matmul.dtype == KILN_DTYPE_F16 ? CUDA_R_16F : matmul.dtype == KILN_DTYPE_BF16 ? CUDA_R_16BF : CUDA_R_32F;
  int compute = matmul.dtype == KILN_DTYPE_F32 && matmul.math == CudaMatmul::Math::TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                                                          : CUBLAS_COMPUTE_32F;
  uint64_t m = static_cast<uint64_t>(matmul.m), n = static_cast<uint64_t>(matmul.n),
           k = static_cast<uint64_t>(matmul.k);
  checkLt(lt_->cublasLtMatmulDescCreate(&plan.desc, compute, CUDA_R_32F), "cublasLtMatmulDescCreate", record);
  auto setDesc = [&](int attribute, const void *value, size_t size) {
    checkLt(lt_->cublasLtMatmulDescSetAttribute(plan.desc, attribute, value, size), "cublasLtMatmulDescSetAttribute",
            record);
  };
  int32_t opA = matmul.rhsTransposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  int32_t opB = matmul.lhsTransposed ? CUBLAS_OP_T : CUBLAS_OP_N;
  setDesc(CUBLASLT_MATMUL_DESC_TRANSA, &opA, sizeof opA);
  setDesc(CUBLASLT_MATMUL_DESC_TRANSB, &opB, sizeof opB);
  bool bias = matmul.bias.kind != BufferRef::Kind::None;
  bool relu = matmul.epilogue == CudaMatmul::Epilogue::Relu;
  uint32_t epilogue = bias ? (relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS)
                           : (relu ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT);
  setDesc(CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue);
  if (bias) {
    // The same bias for every batch: BIAS_BATCH_STRIDE keeps its default of 0.
    void *pointer = reinterpret_cast<void *>(static_cast<uintptr_t>(resolve(matmul.bias)));
    int32_t biasType = type; // cuBLASLt's bias has D's type for these (non-IMMA, non-fp8) kernels
    setDesc(CUBLASLT_MATMUL_DESC_BIAS_POINTER, &pointer, sizeof pointer);
    setDesc(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &biasType, sizeof biasType);
  }

  // `ld` and `stride` are the record's row stride and batch stride of the row-major matrix,
  // which is cuBLASLt's leading dimension of the column-major one.
  auto layout = [&](cublasLtMatrixLayout_t &out, uint64_t rows, uint64_t cols, int64_t ld, int64_t stride) {
    checkLt(lt_->cublasLtMatrixLayoutCreate(&out, type, rows, cols, ld), "cublasLtMatrixLayoutCreate", record);
    if (matmul.batch == 1)
      return;
    int32_t count = static_cast<int32_t>(matmul.batch);
    int64_t offset = static_cast<int64_t>(stride);
    checkLt(lt_->cublasLtMatrixLayoutSetAttribute(out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count),
            "cublasLtMatrixLayoutSetAttribute", record);
    checkLt(lt_->cublasLtMatrixLayoutSetAttribute(out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &offset,
                                                  sizeof offset),
            "cublasLtMatrixLayoutSetAttribute", record);
  };
  // Stored rhs: k x n row-major = n x k column-major (op N), or n x k row-major = k x n column-major
  // (op T). Likewise lhs: m x k row-major = k x m column-major, or k x m row-major = m x k (op T).
  layout(plan.a, matmul.rhsTransposed ? k : n, matmul.rhsTransposed ? n : k, matmul.rhsLd,
         matmul.rhsBatched ? matmul.rhsBatchStride : 0);
  layout(plan.b, matmul.lhsTransposed ? m : k, matmul.lhsTransposed ? k : m, matmul.lhsLd,
         matmul.lhsBatched ? matmul.lhsBatchStride : 0);
  bool addend = matmul.addend.kind != BufferRef::Kind::None;
  layout(plan.c, n, m, addend ? matmul.addendLd : matmul.outLd,
         addend ? matmul.addendBatchStride : matmul.outBatchStride);
  layout(plan.d, n, m, matmul.outLd, matmul.outBatchStride);
  plan.alpha = matmul.alpha;

  plan.aPtr = resolve(matmul.rhs);
  plan.bPtr = resolve(matmul.lhs);
  plan.dPtr = resolve(matmul.out);
  // Without an addend C is not read (beta = 0); D stands in so cuBLASLt sees a valid pointer.
  plan.cPtr = addend ? resolve(matmul.addend) : plan.dPtr;
  plan.beta = addend ? 1.0f : 0.0f;

  cublasLtMatmulHeuristicResult_t results[kMatmulCandidates] = {};
  int returned = 0;
  checkLt(lt_->cublasLtMatmulAlgoGetHeuristic(ltHandle_, plan.desc, plan.a, plan.b, plan.c, plan.d, preference,
                                              kMatmulCandidates, results, &returned),
          "cublasLtMatmulAlgoGetHeuristic", record);
  const cublasLtMatmulHeuristicResult_t &result = results[0];
  if (returned == 0 || result.state != CUBLAS_STATUS_SUCCESS)
    throw StatusError(KILN_ERROR_DEVICE,
                      prefix() + ": cuBLASLt has no algorithm for " + record.describe() + " (" +
                          std::string(dtypeName(matmul.dtype)) + ", batch=" + std::to_string(matmul.batch) +
                          " m=" + std::to_string(matmul.m) + " n=" + std::to_string(matmul.n) +
                          " k=" + std::to_string(matmul.k) + ", cuBLASLt " + std::to_string(lt_->cublasLtGetVersion()) +
                          " at " + lt_->path + ")");
  plan.algo = result.algo;
  if (returned > 1 && envSaysOn("KILN_CUBLASLT_AUTOTUNE"))
    plan.algo = fastestAlgo(plan, results, returned);
}

// The heuristic's first choice is a guess, and a poor one for long products into few results (a
// weight gradient's k = 19,600 into 64 x 25 outputs per batch leaves most of the GPU idle without
// split-K). With KILN_CUBLASLT_AUTOTUNE=1, times each candidate the heuristic offers on the real
// buffers, once at load, and keeps the fastest; a candidate that fails is passed over. The
// buffers are scratch at load: the arena, the outputs and the workspace, which every run
// rewrites. Off by default: which candidate wins depends on timing, so two processes may sum in
// different orders, and a train step is then no longer reproducible bit for bit (measured on an
// H200: a resumed run and a second process drifted 3 % apart in loss within 200 LeNet-5 steps,
// for 13 % off the step's time).
cublasLtMatmulAlgo_t Executor::Impl::fastestAlgo(const MatmulPlan &plan, const cublasLtMatmulHeuristicResult_t *results,
                                                 int count) {
  cublasLtMatmulAlgo_t best = results[0].algo;
  float bestMs = -1;
  for (int i = 0; i < count; ++i) {
    if (results[i].state != CUBLAS_STATUS_SUCCESS || results[i].workspaceSize > kCublasWorkspaceBytes)
      continue;
    auto once = [&] {
      return lt_->cublasLtMatmul(ltHandle_, plan.desc, &plan.alpha, reinterpret_cast<const void *>(plan.aPtr), plan.a,
                                 reinterpret_cast<const void *>(plan.bPtr), plan.b, &plan.beta,
                                 reinterpret_cast<const void *>(plan.cPtr), plan.c, reinterpret_cast<void *>(plan.dPtr),
                                 plan.d, &results[i].algo, reinterpret_cast<void *>(workspace_), kCublasWorkspaceBytes,
                                 stream_) == CUBLAS_STATUS_SUCCESS;
    };
    bool ok = once(); // warm-up: loads the kernel
    ok = ok && api_->cuEventRecord(start_, stream_) == CUDA_SUCCESS;
    for (int repeat = 0; ok && repeat < kAutotuneRepeats; ++repeat)
      ok = once();
    ok = ok && api_->cuEventRecord(stop_, stream_) == CUDA_SUCCESS && api_->cuStreamSynchronize(stream_) == CUDA_SUCCESS;
    float ms = 0;
    if (!ok || api_->cuEventElapsedTime(&ms, start_, stop_) != CUDA_SUCCESS)
      continue;
    if (bestMs < 0 || ms < bestMs) {
      bestMs = ms;
      best = results[i].algo;
    }
  }
  return best;
}

void Executor::Impl::enqueueRecords(bool capturing) {
  if (pointersStale_) {
    bindPointers();
    pointersStale_ = false;
  }
  for (std::size_t i = 0; i < program_.records.size(); ++i) {
    const CudaRecord &record = program_.records[i];
    try {
      if (const auto *launch = std::get_if<CudaLaunch>(&record.op)) {
        LaunchPlan &plan = launches_[i];
        check(api_->cuLaunchKernel(plan.function, launch->grid[0], launch->grid[1], launch->grid[2], launch->block[0],
                                   launch->block[1], launch->block[2], launch->sharedBytes, stream_,
                                   plan.params.empty() ? nullptr : plan.params.data(), nullptr),
              "cuLaunchKernel", &record);
      } else if (std::holds_alternative<CudaMatmul>(record.op)) {
        const MatmulPlan &plan = matmuls_[i];
        checkLt(lt_->cublasLtMatmul(ltHandle_, plan.desc, &plan.alpha, reinterpret_cast<const void *>(plan.aPtr),
                                    plan.a, reinterpret_cast<const void *>(plan.bPtr), plan.b, &plan.beta,
                                    reinterpret_cast<const void *>(plan.cPtr), plan.c,
                                    reinterpret_cast<void *>(plan.dPtr), plan.d, &plan.algo,
                                    reinterpret_cast<void *>(workspace_), kCublasWorkspaceBytes, stream_),
                "cublasLtMatmul", record);
      } else if (const auto *collective = std::get_if<CudaCollective>(&record.op)) {
        CUdeviceptr data = resolve(collective->data);
        int64_t count = static_cast<int64_t>(collective->count);
        switch (collective->kind) {
        case CudaCollective::Kind::WorldSize:
          check(api_->cuMemcpyHtoDAsync(data, &values_->worldSize, sizeof values_->worldSize, stream_),
                "cuMemcpyHtoDAsync", &record);
          break;
        case CudaCollective::Kind::Rank:
          check(api_->cuMemcpyHtoDAsync(data, &values_->rank, sizeof values_->rank, stream_), "cuMemcpyHtoDAsync",
                &record);
          break;
        case CudaCollective::Kind::Start:
        case CudaCollective::Kind::Wait:
          if (auto hook = collective->kind == CudaCollective::Kind::Start ? hooks_.start : hooks_.wait)
            callHook("all-reduce", &record, [&](char *error, size_t size) {
              return hook(hooks_.context, collective->bucket, data, count, stream_, error, size);
            });
          break;
        }
      } else {
        const auto &copy = std::get<CudaCopy>(record.op);
        if (copy.bytes > 0)
          check(api_->cuMemcpyDtoDAsync(resolve(copy.dst), resolve(copy.src), copy.bytes, stream_),
                "cuMemcpyDtoDAsync", &record);
      }
    } catch (const StatusError &error) {
      failedRecord(error, record, capturing);
    }
  }
}

// A call that enqueues a record can fail because an earlier kernel faulted: CUDA reports faults
// late, to whatever call comes next. The stream says which: if it holds an error, the record that
// failed to enqueue is not to blame, and the message must not say it is.
void Executor::Impl::failedRecord(const StatusError &error, const CudaRecord &record, bool capturing) const {
  // Synchronizing would end a capture; with blocking launches every earlier record has finished.
  if (capturing || envSaysOn("CUDA_LAUNCH_BLOCKING"))
    throw error;
  CUresult synced = api_->cuStreamSynchronize(stream_);
  if (synced == CUDA_SUCCESS)
    throw error;
  throw ProgramFault(prefix() + ": the GPU program failed before " + record.describe() +
                     ": cuStreamSynchronize: " + api_->describe(synced) + lateFaultHint());
}

// Records the program once into a CUDA graph, after a direct run has loaded every kernel
// (lazily loaded modules and cuBLASLt's kernels must not load during capture). Any failure
// leaves direct launches in place, and its reason in graphFailure_.
void Executor::Impl::captureGraph() {
  CUresult begun = api_->cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  if (begun != CUDA_SUCCESS) {
    graphFailure_ = "cuStreamBeginCapture: " + api_->describe(begun);
    return;
  }
  try {
    enqueueRecords(/*capturing=*/true);
  } catch (const StatusError &error) {
    graphFailure_ = error.what();
    std::string known = prefix() + ": ";
    if (graphFailure_.rfind(known, 0) == 0)
      graphFailure_.erase(0, known.size());
  }
  CUgraph graph = nullptr;
  CUresult ended = api_->cuStreamEndCapture(stream_, &graph);
  if (graphFailure_.empty() && ended != CUDA_SUCCESS)
    graphFailure_ = "cuStreamEndCapture: " + api_->describe(ended);
  CUgraphExec exec = nullptr;
  if (graphFailure_.empty()) {
    CUresult instantiated = api_->cuGraphInstantiateWithFlags(&exec, graph, 0);
    if (instantiated != CUDA_SUCCESS)
      graphFailure_ = "cuGraphInstantiateWithFlags: " + api_->describe(instantiated);
  }
  if (graphFailure_.empty()) {
    graph_[parity_] = graph;
    graphExec_[parity_] = exec;
    return;
  }
  if (graph)
    api_->cuGraphDestroy(graph);
}

void Executor::Impl::run(const Executor::InputSource *sources, void *const *outputs) {
  std::lock_guard<std::mutex> lock(mutex_);
  ContextScope scope(*this);
  bool replay = graphEnabled_ && graphExec_[parity_];
  try {
    for (std::size_t i = 0; i < inputs_.size(); ++i) {
      if (inputBytes_[i] == 0 || residentInput_[i])
        continue;
      if (const Executor *other = sources[i].device) {
        // Another executor's output from its finished run, or its resident state (a train step's
        // weights, for its eval entry): a copy on the device, or between two devices.
        const Impl &from = *other->impl_;
        if (sources[i].resident >= 0)
          copyFrom(i, from, from.inputs_.at(sources[i].resident), from.inputBytes_.at(sources[i].resident),
                   "a state tensor");
        else
          copyFrom(i, from, from.outputs_.at(sources[i].output), from.outputBytes_.at(sources[i].output),
                   "an output");
        continue;
      }
      const void *source = sources[i].host;
      if (staging_) {
        std::memcpy(staging_ + stagingOffsets_[i], source, inputBytes_[i]);
        source = staging_ + stagingOffsets_[i];
      }
      check(api_->cuMemcpyHtoDAsync(inputs_[i], source, inputBytes_[i], stream_), "cuMemcpyHtoDAsync");
    }
    check(api_->cuEventRecord(start_, stream_), "cuEventRecord");
    if (replay)
      check(api_->cuGraphLaunch(graphExec_[parity_], stream_), "cuGraphLaunch");
    else
      enqueueRecords();
    check(api_->cuEventRecord(stop_, stream_), "cuEventRecord");
    // The peers' sums are done (or failed, naming the peer) within the collective's timeout before
    // anything waits for the stream, which would otherwise wait on a dead peer for ever.
    if (hooks_.finish)
      callHook("the step's all-reduce", nullptr,
               [&](char *error, size_t size) { return hooks_.finish(hooks_.context, error, size); });
    for (std::size_t i = 0; i < outputs_.size(); ++i) {
      if (outputBytes_[i] == 0 || !outputs || !outputs[i] || residentOutput_[i])
        continue;
      void *target = staging_ ? staging_ + stagingOffsets_[inputs_.size() + i] : outputs[i];
      check(api_->cuMemcpyDtoHAsync(target, outputs_[i], outputBytes_[i], stream_), "cuMemcpyDtoHAsync");
    }
    CUresult synced = api_->cuStreamSynchronize(stream_);
    if (synced != CUDA_SUCCESS)
      throw ProgramFault(prefix() + ": the GPU program failed: cuStreamSynchronize: " + api_->describe(synced) +
                         lateFaultHint());
  } catch (const ProgramFault &) {
    throw;
  } catch (const StatusError &) {
    // Nothing may still be reading the caller's buffers or the staging area once we return. A
    // stream that holds an error means the call failed for an earlier fault of the program (or
    // of a previous run: the context stays broken), which the message must say.
    CUresult synced = api_->cuStreamSynchronize(stream_);
    if (synced != CUDA_SUCCESS && !envSaysOn("CUDA_LAUNCH_BLOCKING"))
      throw ProgramFault(prefix() + ": the GPU program failed: cuStreamSynchronize: " + api_->describe(synced) +
                         lateFaultHint());
    throw;
  } catch (...) {
    api_->cuStreamSynchronize(stream_);
    throw;
  }
  if (staging_ && outputs)
    for (std::size_t i = 0; i < outputs_.size(); ++i)
      if (outputBytes_[i] > 0 && outputs[i] && !residentOutput_[i])
        std::memcpy(outputs[i], staging_ + stagingOffsets_[inputs_.size() + i], outputBytes_[i]);
  float milliseconds = 0;
  check(api_->cuEventElapsedTime(&milliseconds, start_, stop_), "cuEventElapsedTime");
  lastDeviceMs_ = milliseconds;
  if (graphEnabled_ && !graphExec_[parity_] && graphFailure_.empty())
    captureGraph();
  swapResident();
  updateGraphState();
}

double Executor::Impl::timeSteps(int steps) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (lastDeviceMs_ < 0)
    throw StatusError(KILN_ERROR_INVALID_ARGUMENT, prefix() + ": time the steps after a first run");
  ContextScope scope(*this);
  try {
    check(api_->cuEventRecord(start_, stream_), "cuEventRecord");
    for (int i = 0; i < steps; ++i) {
      if (graphEnabled_ && graphExec_[parity_])
        check(api_->cuGraphLaunch(graphExec_[parity_], stream_), "cuGraphLaunch");
      else
        enqueueRecords();
      // A train step's state moves on as it would in runs: every step reads the last one's.
      swapResident();
    }
    check(api_->cuEventRecord(stop_, stream_), "cuEventRecord");
    if (hooks_.finish)
      callHook("the steps' all-reduce", nullptr,
               [&](char *error, size_t size) { return hooks_.finish(hooks_.context, error, size); });
    CUresult synced = api_->cuStreamSynchronize(stream_);
    if (synced != CUDA_SUCCESS)
      throw ProgramFault(prefix() + ": the GPU program failed: cuStreamSynchronize: " +
                         api_->describe(synced) + lateFaultHint());
  } catch (const ProgramFault &) {
    throw;
  } catch (...) {
    api_->cuStreamSynchronize(stream_);
    throw;
  }
  float milliseconds = 0;
  check(api_->cuEventElapsedTime(&milliseconds, start_, stop_), "cuEventElapsedTime");
  return milliseconds / std::max(steps, 1);
}

void Executor::Impl::release() noexcept {
  if (!api_ || !retained_)
    return;
  // Teardown errors (a context already broken by a kernel fault, say) are ignored: close never fails.
  CUcontext popped = nullptr;
  bool pushed = api_->cuCtxPushCurrent(context_) == CUDA_SUCCESS;
  if (stream_)
    api_->cuStreamSynchronize(stream_);
  for (int p = 0; p < 2; ++p) {
    if (graphExec_[p])
      api_->cuGraphExecDestroy(graphExec_[p]);
    if (graph_[p])
      api_->cuGraphDestroy(graph_[p]);
  }
  if (lt_) {
    for (MatmulPlan &plan : matmuls_) {
      for (cublasLtMatrixLayout_t layout : {plan.a, plan.b, plan.c, plan.d})
        if (layout)
          lt_->cublasLtMatrixLayoutDestroy(layout);
      if (plan.desc)
        lt_->cublasLtMatmulDescDestroy(plan.desc);
    }
    if (ltHandle_)
      lt_->cublasLtDestroy(ltHandle_);
  }
  for (CUdeviceptr pointer : allocations_)
    api_->cuMemFree(pointer);
  if (staging_)
    api_->cuMemFreeHost(staging_);
  if (values_ && valuesPinned_)
    api_->cuMemFreeHost(values_);
  else
    delete values_;
  values_ = nullptr;
  if (module_)
    api_->cuModuleUnload(module_);
  for (CUevent event : {start_, stop_})
    if (event)
      api_->cuEventDestroy(event);
  if (stream_)
    api_->cuStreamDestroy(stream_);
  if (pushed)
    api_->cuCtxPopCurrent(&popped);
  api_->cuDevicePrimaryCtxRelease(device_);
  retained_ = false;
}

// ---------------------------------------------------------------------------------------------
// Executor

Executor::Executor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Executor::~Executor() = default;

CudaProgram Executor::readProgram(const std::string &path, const Manifest &manifest, void *library,
                                  const std::string &prefix) {
  const std::string programSymbol = prefix + "cuda_program", constantsSymbol = prefix + "cuda_constants",
                    ptxSymbol = prefix + "cuda_ptx";
  std::optional<std::string> text = detail::readTextSymbol(library, programSymbol.c_str(), path);
  if (!text)
    throw StatusError(KILN_ERROR_INVALID_ARTIFACT,
                      path + ": the manifest lists cuda in its devices but the artifact has no " + programSymbol + " symbol");
  CudaProgram program;
  try {
    program = parseCudaProgram(*text, path, manifest);
  } catch (const CudaProgramVersionError &e) {
    throw StatusError(KILN_ERROR_UNSUPPORTED, e.what());
  } catch (const Error &e) {
    throw StatusError(KILN_ERROR_INVALID_ARTIFACT, e.what());
  }
  if (program.constantBytes > 0) {
    std::optional<detail::SymbolData> constants = detail::findDataSymbol(library, constantsSymbol.c_str(), path);
    if (!constants)
      throw StatusError(KILN_ERROR_INVALID_ARTIFACT, path + ": the cuda program uses " +
                                                         std::to_string(program.constantBytes) +
                                                         " bytes of constants but the artifact has no " + constantsSymbol + " symbol");
    if (!constants->sized || constants->size < program.constantBytes)
      throw StatusError(KILN_ERROR_INVALID_ARTIFACT,
                        path + ": " + constantsSymbol + " has " +
                            (constants->sized ? std::to_string(constants->size) + " bytes" : std::string("no size")) +
                            ", the cuda program uses " + std::to_string(program.constantBytes));
  }

  // The GPU code: every cubin the manifest lists, and the PTX, must be there and whole.
  if (manifest.cudaCubins.empty() && manifest.cudaPtxTarget.empty())
    throw StatusError(KILN_ERROR_INVALID_ARTIFACT,
                      path + ": the manifest lists cuda in its devices but has no cuda-cubin or cuda-ptx record");
  for (const std::string &arch : manifest.cudaCubins) {
    std::string symbol = prefix + "cuda_cubin_" + arch;
    std::optional<detail::SymbolData> cubin = detail::findDataSymbol(library, symbol.c_str(), path);
    if (!cubin)
      throw StatusError(KILN_ERROR_INVALID_ARTIFACT, path + ": the manifest lists a cubin for " + arch +
                                                         " but the artifact has no " + symbol + " symbol");
    if (!cubin->sized)
      throw StatusError(KILN_ERROR_INVALID_ARTIFACT, path + ": " + symbol + " has no size in the symbol table");
    if (std::string why = cubinProblem(cubin->data, cubin->size); !why.empty())
      throw StatusError(KILN_ERROR_INVALID_ARTIFACT, path + ": " + symbol + " is not a valid cubin (" + why + ")");
  }
  if (!manifest.cudaPtxTarget.empty() && !detail::readTextSymbol(library, ptxSymbol.c_str(), path))
    throw StatusError(KILN_ERROR_INVALID_ARTIFACT, path + ": the manifest lists PTX for " + manifest.cudaPtxTarget +
                                                       " but the artifact has no " + ptxSymbol + " symbol");
  return program;
}

std::unique_ptr<Executor> Executor::open(const std::string &path, const Manifest &manifest, void *library, int index,
                                         const std::string &prefix) {
  auto impl = std::make_unique<Impl>(path, manifest, prefix);
  impl->open(library, index);
  return std::unique_ptr<Executor>(new Executor(std::move(impl)));
}

void Executor::run(const void *const *inputs, void *const *outputs) {
  std::vector<InputSource> sources(impl_->inputCount());
  for (std::size_t i = 0; i < sources.size(); ++i)
    sources[i].host = inputs[i];
  impl_->run(sources.data(), outputs);
}
void Executor::run(const InputSource *sources, void *const *outputs) { impl_->run(sources, outputs); }
double Executor::timeSteps(int steps) { return impl_->timeSteps(steps); }
const std::string &Executor::deviceName() const { return impl_->deviceName_; }
const std::string &Executor::code() const { return impl_->code_; }
double Executor::lastDeviceMs() const { return impl_->lastDeviceMs_; }
void Executor::setCudaGraph(bool enabled) {
  std::lock_guard<std::mutex> lock(impl_->mutex_);
  impl_->graphEnabled_ = enabled;
  impl_->updateGraphState();
}
const std::string &Executor::cudaGraphState() const { return impl_->graphState_; }
bool Executor::hasCollectives() const { return impl_->hasCollectives(); }
void Executor::setCollective(const kiln_device_collective_hooks *hooks) { impl_->setCollective(hooks); }
void Executor::setResident(std::vector<std::pair<int, int>> pairs) { impl_->setResident(std::move(pairs)); }
void Executor::readResident(int input, void *host) { impl_->transferResident(input, host, nullptr); }
void Executor::writeResident(int input, const void *host) { impl_->transferResident(input, nullptr, host); }
void Executor::copyResidentFrom(int input, const Executor &from, int output) {
  impl_->copyResidentFrom(input, *from.impl_, output);
}

} // namespace kiln::rt::cuda
