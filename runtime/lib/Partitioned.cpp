// The partitioned executor. A CPU stage is a function of the artifact; a GPU stage is a GPU
// program run by its own cuda::Executor, whose copies on its stream are the transfers to the GPU
// (from host buffers, or device to device and peer to peer from other GPU stages) and from it
// (to host buffers, only for results that CPU stages or graph outputs need). Deadlock freedom: the manifest lists stages in an order in which
// every stage only takes results of earlier stages (the parser checks it). Each device runs its
// own stages in that order and, before a stage, waits for the earlier stages of other devices
// that it takes tensors from. The earliest stage not yet finished can always run, since
// everything it waits for comes before it, so every run finishes whatever the threads' timing.
#include "Partitioned.h"

#include "ArtifactInternal.h"
#include "cuda/Executor.h"
#include "kiln/runtime.h"

#include <dlfcn.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln::rt::detail {
namespace {

using StageFn = void (*)(void **);

using Buffer = AlignedBuffer;

// A tensor copied from the device that computed it into a buffer of the device that uses it.
struct Transfer {
  int stage = 0, result = 0; // the source
  std::size_t bytes = 0;
  Buffer buffer;
};

// Where one stage argument is read from.
struct ArgSource {
  // Device: a GPU stage's result still in device memory, taken by another GPU stage.
  enum class Kind { Input, Result, Transfer, Device } kind = Kind::Input;
  int index = 0;  // input, stage, or transfer
  int result = 0; // for Result and Device
};

struct Stage {
  StageFn entry = nullptr;              // a CPU stage
  std::unique_ptr<Manifest> manifest;   // a GPU stage: its inputs and outputs,
  std::unique_ptr<cuda::Executor> gpu;  // and the executor that runs its program
  int device = 0;
  std::vector<ArgSource> args;
  std::vector<Buffer> results;
  // A GPU stage: whether each result is copied to its host buffer (for CPU stages and outputs).
  std::vector<bool> resultOnHost;
  // Transfers this stage performs (for itself and later stages of its device) before it runs,
  // and the stages of other devices they read.
  std::vector<int> transfers;
  std::vector<int> waitsFor;
};

} // namespace

struct PartitionedExecutor::State {
  std::string path, devices;
  std::size_t numInputs = 0;
  std::vector<Stage> stages;
  std::vector<Transfer> transfers;
  std::vector<std::vector<int>> deviceStages;
  std::vector<StageValueRef> outputSources;
  std::vector<std::size_t> outputBytes;

  std::mutex mutex;
  std::condition_variable changed;
  uint64_t generation = 0;
  bool stopping = false;
  int running = 0; // devices still working on the current run
  std::vector<char> done;
  std::exception_ptr error;
  void *const *buffers = nullptr;
  std::vector<std::thread> threads;

  void *resultPointer(int stage, int result) { return stages[stage].results[result].get(); }

  void work(int device) {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex);
        changed.wait(lock, [&] { return stopping || generation != seen; });
        if (stopping)
          return;
        seen = generation;
      }
      try {
        for (int s : deviceStages[device])
          if (!runStage(s))
            break;
      } catch (...) {
        std::lock_guard<std::mutex> lock(mutex);
        if (!error)
          error = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mutex);
      --running;
      changed.notify_all();
    }
  }

  // False when another device failed and this run is abandoned.
  bool runStage(int s) {
    Stage &stage = stages[s];
    {
      std::unique_lock<std::mutex> lock(mutex);
      changed.wait(lock, [&] {
        if (error)
          return true;
        for (int other : stage.waitsFor)
          if (!done[other])
            return false;
        return true;
      });
      if (error)
        return false;
    }
    for (int t : stage.transfers) {
      Transfer &transfer = transfers[t];
      std::memcpy(transfer.buffer.get(), resultPointer(transfer.stage, transfer.result), transfer.bytes);
    }
    if (stage.gpu) {
      runGpuStage(stage);
      return finish(s);
    }
    std::vector<void *> pointers;
    pointers.reserve(stage.args.size() + stage.results.size());
    for (const ArgSource &arg : stage.args) {
      switch (arg.kind) {
      case ArgSource::Kind::Input: pointers.push_back(buffers[arg.index]); break;
      case ArgSource::Kind::Result: pointers.push_back(resultPointer(arg.index, arg.result)); break;
      case ArgSource::Kind::Transfer: pointers.push_back(transfers[arg.index].buffer.get()); break;
      case ArgSource::Kind::Device: break; // only GPU stages take these
      }
    }
    for (Buffer &result : stage.results)
      pointers.push_back(result.get());
    stage.entry(pointers.data());
    return finish(s);
  }

  // Tensors from the host are copied in by the stage's executor; tensors of GPU stages go device
  // to device (peer to peer between two GPUs).
  void runGpuStage(Stage &stage) {
    std::vector<cuda::Executor::InputSource> sources(stage.args.size());
    for (std::size_t a = 0; a < stage.args.size(); ++a) {
      const ArgSource &arg = stage.args[a];
      switch (arg.kind) {
      case ArgSource::Kind::Input: sources[a].host = buffers[arg.index]; break;
      case ArgSource::Kind::Result: sources[a].host = resultPointer(arg.index, arg.result); break;
      case ArgSource::Kind::Transfer: sources[a].host = transfers[arg.index].buffer.get(); break;
      case ArgSource::Kind::Device:
        sources[a].device = stages[arg.index].gpu.get();
        sources[a].output = arg.result;
        break;
      }
    }
    std::vector<void *> outputs;
    for (std::size_t r = 0; r < stage.results.size(); ++r)
      outputs.push_back(stage.resultOnHost[r] ? stage.results[r].get() : nullptr);
    stage.gpu->run(sources.data(), outputs.data());
  }

  bool finish(int s) {
    std::lock_guard<std::mutex> lock(mutex);
    done[s] = 1;
    changed.notify_all();
    return true;
  }
};

std::unique_ptr<PartitionedExecutor> PartitionedExecutor::open(const std::string &path, const Manifest &manifest,
                                                               void *library) {
  auto state = std::make_unique<State>();
  state->path = path;
  state->numInputs = manifest.inputs.size();
  std::vector<bool> isGpu;
  for (const PartitionDevice &device : manifest.partitions) {
    isGpu.push_back(device.gpu);
    state->devices += (state->devices.empty() ? "" : ",") + device.name;
  }
  state->deviceStages.resize(manifest.partitions.size());
  auto deviceIndex = [&](const std::string &name) {
    for (std::size_t d = 0; d < manifest.partitions.size(); ++d)
      if (manifest.partitions[d].name == name)
        return static_cast<int>(d);
    return -1; // the parser checked every stage's device
  };

  // (source stage, result, destination device) -> transfer.
  std::vector<std::vector<std::vector<int>>> transferOf(manifest.stages.size());
  for (std::size_t s = 0; s < manifest.stages.size(); ++s) {
    const StageSpec &spec = manifest.stages[s];
    Stage stage;
    stage.device = deviceIndex(spec.device);
    std::string symbol = "kiln_stage_" + std::to_string(s);
    if (isGpu[stage.device]) {
      int index = manifest.partitions[stage.device].index;
      stage.manifest = std::make_unique<Manifest>(stageManifest(manifest, static_cast<int>(s)));
      stage.gpu = cuda::Executor::open(path, *stage.manifest, library, index, symbol + "_");
    } else {
      dlerror();
      stage.entry = reinterpret_cast<StageFn>(dlsym(library, symbol.c_str()));
      if (!stage.entry)
        throw StatusError(KILN_ERROR_INVALID_ARTIFACT, path + ": artifact has no " + symbol + " symbol");
    }
    stage.results.resize(spec.results.size());
    transferOf[s].assign(spec.results.size(), std::vector<int>(manifest.partitions.size(), -1));
    for (const StageValueRef &ref : spec.args) {
      ArgSource arg;
      if (ref.kind == StageValueRef::Kind::Input) {
        arg.index = ref.index; // host memory, readable by every CPU device
      } else if (state->stages[ref.index].device == stage.device || isGpu[stage.device]) {
        // The same device's earlier stage; or a GPU stage, whose executor copies the tensor in
        // itself: from the producer's host buffer, or from its device memory when the producer
        // is a GPU stage too.
        arg.kind = isGpu[stage.device] && isGpu[state->stages[ref.index].device] ? ArgSource::Kind::Device
                                                                                  : ArgSource::Kind::Result;
        arg.index = ref.index;
        arg.result = ref.result;
        if (state->stages[ref.index].device != stage.device &&
            std::find(stage.waitsFor.begin(), stage.waitsFor.end(), ref.index) == stage.waitsFor.end())
          stage.waitsFor.push_back(ref.index);
      } else {
        int &t = transferOf[ref.index][ref.result][stage.device];
        if (t < 0) {
          // One copy per tensor per destination device, made before its first use there.
          t = static_cast<int>(state->transfers.size());
          Transfer transfer;
          transfer.stage = ref.index;
          transfer.result = ref.result;
          transfer.bytes = manifest.stages[ref.index].results[ref.result].byteSize();
          transfer.buffer = allocateAligned(transfer.bytes);
          state->transfers.push_back(std::move(transfer));
          stage.transfers.push_back(t);
          stage.waitsFor.push_back(ref.index);
        }
        arg.kind = ArgSource::Kind::Transfer;
        arg.index = t;
      }
      stage.args.push_back(arg);
    }
    state->deviceStages[stage.device].push_back(static_cast<int>(s));
    state->stages.push_back(std::move(stage));
  }
  // A GPU stage's result goes to the host only for CPU stages and graph outputs.
  for (Stage &stage : state->stages)
    stage.resultOnHost.assign(stage.results.size(), false);
  for (const Stage &stage : state->stages)
    for (const ArgSource &arg : stage.args)
      if (arg.kind == ArgSource::Kind::Result)
        state->stages[arg.index].resultOnHost[arg.result] = true;
  for (const Transfer &transfer : state->transfers)
    state->stages[transfer.stage].resultOnHost[transfer.result] = true;
  for (const StageValueRef &ref : manifest.outputSources)
    if (ref.kind == StageValueRef::Kind::Stage)
      state->stages[ref.index].resultOnHost[ref.result] = true;
  // Host buffers: every CPU stage result, and the GPU stage results the host needs.
  for (std::size_t s = 0; s < state->stages.size(); ++s) {
    Stage &stage = state->stages[s];
    for (std::size_t r = 0; r < stage.results.size(); ++r)
      if (!stage.gpu || stage.resultOnHost[r])
        stage.results[r] = allocateAligned(manifest.stages[s].results[r].byteSize());
  }
  state->outputSources = manifest.outputSources;
  for (const TensorSpec &output : manifest.outputs)
    state->outputBytes.push_back(output.byteSize());
  state->done.assign(state->stages.size(), 0);

  std::unique_ptr<PartitionedExecutor> executor(new PartitionedExecutor(std::move(state)));
  State &s = *executor->state_;
  // A thread for each device with stages (a partition record without any needs none).
  for (std::size_t d = 0; d < s.deviceStages.size(); ++d)
    if (!s.deviceStages[d].empty())
      s.threads.emplace_back([&s, d] { s.work(static_cast<int>(d)); });
  return executor;
}

PartitionedExecutor::PartitionedExecutor(std::unique_ptr<State> state) : state_(std::move(state)) {}

PartitionedExecutor::~PartitionedExecutor() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stopping = true;
  }
  state_->changed.notify_all();
  for (std::thread &thread : state_->threads)
    thread.join();
}

const std::string &PartitionedExecutor::devices() const { return state_->devices; }

void PartitionedExecutor::run(void *const *buffers) {
  State &s = *state_;
  {
    std::unique_lock<std::mutex> lock(s.mutex);
    s.buffers = buffers;
    std::fill(s.done.begin(), s.done.end(), 0);
    s.error = nullptr;
    s.running = static_cast<int>(s.threads.size());
    ++s.generation;
    s.changed.notify_all();
    s.changed.wait(lock, [&] { return s.running == 0; });
    if (s.error)
      std::rethrow_exception(s.error);
  }
  for (std::size_t o = 0; o < s.outputSources.size(); ++o) {
    const StageValueRef &ref = s.outputSources[o];
    const void *from = ref.kind == StageValueRef::Kind::Input ? buffers[ref.index]
                                                               : s.resultPointer(ref.index, ref.result);
    std::memcpy(buffers[s.numInputs + o], from, s.outputBytes[o]);
  }
}

} // namespace kiln::rt::detail
