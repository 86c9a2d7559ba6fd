// The NCCL back end of kiln::rt::DeviceCollective. NCCL itself waits forever for a peer that
// died (PyTorch's default watchdog gives it 10 minutes); here the host polls the completion
// events of the sums it queued, and NCCL's asynchronous error, against the timeout, then aborts
// the communicator and names the peer.
#include "Rendezvous.h"

#include "cuda/DriverApi.h"
#include "kiln/collective.h"
#include "kiln/tensor.h"

#include <cstdio>
#include <chrono>
#include <cstring>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln::rt {

DeviceCollective::~DeviceCollective() = default;

namespace {

using namespace cuda;
using Clock = std::chrono::steady_clock;

class NcclCollective final : public DeviceCollective {
public:
  NcclCollective(const CollectiveConfig &config, int device) : config_(config), device_(device) {}

  ~NcclCollective() override {
    if (!driver_ || !context_)
      return;
    Current current(*this);
    // Destroying waits for the work queued; with sums never waited for (a step that failed),
    // a dead peer would make that forever: abort instead.
    if (comm_ && !aborted_)
      pending_.empty() ? (void)nccl_->ncclCommDestroy(comm_) : (void)nccl_->ncclCommAbort(comm_);
    for (CUevent event : pending_)
      driver_->cuEventDestroy(event);
    if (stream_)
      driver_->cuStreamDestroy(stream_);
    if (context_)
      driver_->cuDevicePrimaryCtxRelease(cudaDevice_);
  }

  void connect() {
    LoadFailure failure;
    driver_ = loadDriverApi(failure);
    if (!driver_)
      throw Error(where() + ": cannot load the CUDA driver " + failure.tried + ": " + failure.reason);
    if (driver_->initResult != CUDA_SUCCESS)
      throw Error(where() + ": cuInit failed: " + driver_->describe(driver_->initResult));
    nccl_ = loadNcclApi(failure);
    if (!nccl_)
      throw Error(where() + ": cannot load NCCL (" + failure.tried + "): " + failure.reason +
                  "; set KILN_LIBNCCL to its path");
    check(driver_->cuDeviceGet(&cudaDevice_, device_), "cuDeviceGet");
    check(driver_->cuDevicePrimaryCtxRetain(&context_, cudaDevice_), "cuDevicePrimaryCtxRetain");
    Current current(*this);
    check(driver_->cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");

    rendezvous_ = std::make_unique<detail::Rendezvous>(config_);
    gloo::rendezvous::Store &store = rendezvous_->store();
    ncclUniqueId id{};
    const std::string idKey = "nccl-id";
    if (config_.rank == 0)
      checkNccl(nccl_->ncclGetUniqueId(&id), "ncclGetUniqueId");
    try {
      if (config_.rank == 0) {
        store.set(idKey, std::vector<char>(id.internal, id.internal + sizeof id.internal));
      } else {
        store.wait({idKey}, config_.timeout);
        std::vector<char> bytes = store.get(idKey);
        if (bytes.size() != sizeof id.internal)
          throw std::runtime_error("the rendezvous holds a malformed NCCL id");
        std::memcpy(id.internal, bytes.data(), sizeof id.internal);
      }
      rendezvous_->publish();
    } catch (const std::exception &e) {
      bool timedOut = std::string(e.what()).find("Wait timeout") != std::string::npos;
      throw Error(where() + ": cannot connect to the other ranks through " + config_.rendezvous +
                  " within " + std::to_string(config_.timeout.count()) + " ms" +
                  (timedOut ? " (rank 0 did not join)" : "") + ": " + e.what());
    }
    // ncclCommInitRank waits for every rank with no timeout of its own: wait for it here. A
    // thread stuck in it past the timeout holds its own reference to the context, and aborts
    // the communicator should it still come.
    struct Init {
      std::mutex mutex;
      bool abandoned = false;
      std::promise<std::pair<ncclResult_t, ncclComm_t>> result;
    };
    auto init = std::make_shared<Init>();
    std::future<std::pair<ncclResult_t, ncclComm_t>> done = init->result.get_future();
    std::thread([init, api = nccl_, driver = driver_, device = cudaDevice_, id, config = config_] {
      CUcontext context = nullptr;
      ncclComm_t comm = nullptr;
      ncclResult_t result = ncclInternalError; // unless the context comes
      if (driver->cuDevicePrimaryCtxRetain(&context, device) == CUDA_SUCCESS) {
        driver->cuCtxPushCurrent(context);
        result = api->ncclCommInitRank(&comm, config.size, id, config.rank);
        CUcontext ignored;
        driver->cuCtxPopCurrent(&ignored);
      }
      std::lock_guard<std::mutex> lock(init->mutex);
      if (init->abandoned) {
        if (comm)
          api->ncclCommAbort(comm);
      } else {
        init->result.set_value({result, comm});
      }
      if (context)
        driver->cuDevicePrimaryCtxRelease(device);
    }).detach();
    bool late;
    {
      done.wait_for(config_.timeout);
      std::lock_guard<std::mutex> lock(init->mutex); // the thread answers under it, or not at all
      late = done.wait_for(std::chrono::seconds(0)) != std::future_status::ready;
      init->abandoned = late;
    }
    if (late) {
      std::string who = rendezvous_->missing("kiln-process/");
      throw Error(where() + ": NCCL could not connect the ranks within " +
                  std::to_string(config_.timeout.count()) + " ms" + (who.empty() ? "" : " (" + who + ")"));
    }
    auto [result, comm] = done.get();
    checkNccl(result, "ncclCommInitRank");
    comm_ = comm;
  }

  int rank() const override { return config_.rank; }
  int size() const override { return config_.size; }

  void startAllReduce(uint64_t data, std::size_t count, void *after) override {
    usable();
    Current current(*this);
    CUevent ready = event();
    check(driver_->cuEventRecord(ready, static_cast<CUstream>(after)), "cuEventRecord");
    check(driver_->cuStreamWaitEvent(stream_, ready, 0), "cuStreamWaitEvent");
    driver_->cuEventDestroy(ready); // the wait holds what it needs
    ncclResult_t result = nccl_->ncclAllReduce(reinterpret_cast<const void *>(data),
                                               reinterpret_cast<void *>(data), count, ncclFloat32,
                                               ncclSum, comm_, stream_);
    if (result != ncclSuccess && result != ncclInProgress)
      fail("ncclAllReduce: " + nccl_->describe(result));
    CUevent finished = event();
    check(driver_->cuEventRecord(finished, stream_), "cuEventRecord");
    pending_.push_back(finished);
  }

  void waitOn(void *stream) override {
    usable();
    if (pending_.empty())
      return;
    Current current(*this);
    check(driver_->cuStreamWaitEvent(static_cast<CUstream>(stream), pending_.back(), 0),
          "cuStreamWaitEvent");
  }

  void synchronize() override {
    usable();
    Current current(*this);
    Clock::time_point deadline = Clock::now() + config_.timeout;
    while (!pending_.empty()) {
      CUresult state = driver_->cuEventQuery(pending_.front());
      if (state == CUDA_SUCCESS) {
        driver_->cuEventDestroy(pending_.front());
        pending_.erase(pending_.begin());
        continue;
      }
      if (state != CUDA_ERROR_NOT_READY)
        fail("waiting for the all-reduce: " + driver_->describe(state));
      ncclResult_t async = ncclSuccess;
      nccl_->ncclCommGetAsyncError(comm_, &async);
      if (async != ncclSuccess && async != ncclInProgress)
        fail("all-reduce failed: " + nccl_->describe(async));
      if (Clock::now() >= deadline) {
        int peer = rendezvous_->deadRank();
        fail("all-reduce did not finish within " + std::to_string(config_.timeout.count()) + " ms: " +
             (peer >= 0 ? rendezvous_->describe(peer) + " died or stopped answering"
                        : std::string("a peer died or stopped answering")));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    // A sum may finish and still have failed (ranks that disagree on its size).
    ncclResult_t async = ncclSuccess;
    nccl_->ncclCommGetAsyncError(comm_, &async);
    if (async != ncclSuccess && async != ncclInProgress)
      fail("all-reduce failed: " + nccl_->describe(async));
  }

private:
  /// The device's primary context, current while this lives.
  struct Current {
    explicit Current(NcclCollective &c)
        : driver(c.driver_), pushed(c.context_ && driver->cuCtxPushCurrent(c.context_) == CUDA_SUCCESS) {}
    ~Current() {
      CUcontext ignored;
      if (pushed) // never the caller's own
        driver->cuCtxPopCurrent(&ignored);
    }
    const DriverApi *driver;
    bool pushed;
  };

  std::string where() const {
    return "rank " + std::to_string(config_.rank) + " of " + std::to_string(config_.size) +
           " (GPU " + std::to_string(device_) + ")";
  }

  void check(CUresult result, const char *call) {
    if (result != CUDA_SUCCESS)
      throw Error(where() + ": " + call + " failed: " + driver_->describe(result));
  }
  void checkNccl(ncclResult_t result, const char *call) {
    if (result != ncclSuccess)
      throw Error(where() + ": " + call + " failed: " + nccl_->describe(result));
  }

  CUevent event() {
    CUevent e = nullptr;
    check(driver_->cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");
    return e;
  }

  void usable() const {
    if (aborted_)
      throw Error(where() + ": the NCCL communicator was aborted after an earlier failure");
  }

  /// Aborts the communicator (so nothing waits on it any more) and throws.
  [[noreturn]] void fail(const std::string &what) {
    nccl_->ncclCommAbort(comm_);
    aborted_ = true;
    throw Error(where() + ": NCCL " + what + " (timeout " + std::to_string(config_.timeout.count()) +
                " ms)");
  }

  CollectiveConfig config_;
  int device_;
  const DriverApi *driver_ = nullptr;
  const NcclApi *nccl_ = nullptr;
  CUdevice cudaDevice_ = 0;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  ncclComm_t comm_ = nullptr;
  bool aborted_ = false;
  std::vector<CUevent> pending_;
  std::unique_ptr<detail::Rendezvous> rendezvous_;
};

} // namespace

namespace {

// An exception becomes the hook's one-line error.
template <typename Fn> int reported(char *error, size_t size, Fn &&body) {
  try {
    body();
    return 0;
  } catch (const std::exception &e) {
    std::snprintf(error, size, "%s", e.what());
    return 1;
  }
}

DeviceCollective &of(void *context) { return *static_cast<DeviceCollective *>(context); }

} // namespace

kiln_device_collective_hooks deviceHooks(DeviceCollective &collective) {
  kiln_device_collective_hooks hooks{};
  hooks.context = &collective;
  hooks.start = [](void *context, int64_t, uint64_t data, int64_t count, void *stream, char *error, size_t size) {
    return reported(error, size, [&] { of(context).startAllReduce(data, static_cast<std::size_t>(count), stream); });
  };
  hooks.wait = [](void *context, int64_t, uint64_t, int64_t, void *stream, char *error, size_t size) {
    return reported(error, size, [&] { of(context).waitOn(stream); });
  };
  hooks.finish = [](void *context, char *error, size_t size) {
    return reported(error, size, [&] { of(context).synchronize(); });
  };
  hooks.world_size = collective.size();
  hooks.rank = collective.rank();
  return hooks;
}

std::unique_ptr<DeviceCollective> connectNccl(const CollectiveConfig &config, int device) {
  if (config.size < 1 || config.rank < 0 || config.rank >= config.size)
    throw Error("collective: rank " + std::to_string(config.rank) + " is not in a world of " +
                std::to_string(config.size));
  auto collective = std::make_unique<NcclCollective>(config, device);
  collective->connect();
  return collective;
}

} // namespace kiln::rt
