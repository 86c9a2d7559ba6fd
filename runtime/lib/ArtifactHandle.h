// The artifact handle behind the C ABI (struct kiln_artifact) and the helpers that the
// loader (Artifact.cpp) shares with the train-step entries and resident state (Entries.cpp).
#ifndef KILN_RUNTIME_ARTIFACTHANDLE_H
#define KILN_RUNTIME_ARTIFACTHANDLE_H

#include "ArtifactInternal.h"
#include "Partitioned.h"
#include "cuda/Executor.h"
#include "kiln/manifest.h"
#include "kiln/runtime.h"

#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <utility>
#include <vector>

using EntryFn = void (*)(void **);

struct kiln_artifact {
  std::string path;
  void *library = nullptr;
  kiln::rt::Manifest manifest;
  std::string features;
  std::string devices; // "cpu,cuda"
  std::string device;  // "cpu" or "gpu:N"
  // CPU: the kiln_entry of the artifact, serialized per loaded library.
  EntryFn entry = nullptr;
  // The CPU code's record of a failed index check (kiln_index_check): id + 1, index.
  int64_t *indexCheck = nullptr;
  // kilnc --profile: each timed kernel's nanoseconds and calls (kiln_kernel_profile).
  int64_t *kernelProfile = nullptr;
  // CPU: the further entries (a train step's eval and init), by name.
  std::map<std::string, EntryFn, std::less<>> entries;
  std::shared_ptr<std::mutex> runMutex;
  // GPU: declared after the manifest it refers to, so it is destroyed first.
  std::unique_ptr<kiln::rt::cuda::Executor> gpu;
  int gpuIndex = 0;
  // GPU: the further entries, each a GPU program of its own (symbols kiln_entry_<name>_cuda_*)
  // opened on first use, and the manifests (the entry's signature) they read.
  std::map<std::string, kiln::rt::Manifest, std::less<>> entryManifests;
  std::map<std::string, std::unique_ptr<kiln::rt::cuda::Executor>, std::less<>> gpuEntries;
  // Train steps after kiln_artifact_state_init: the state's (input, output) pairs, kept by the
  // runtime on the artifact's device. On the CPU, stateIn[k] holds the current value; a pair
  // whose output is `in-place` has that buffer alone (stateOut[k] is empty), the others a second
  // one, and the two trade places after every step.
  bool resident = false;
  std::vector<std::pair<int, int>> residentPairs;
  std::vector<kiln::rt::detail::AlignedBuffer> stateIn, stateOut;
  // A model partitioned over devices: its executor threads.
  std::unique_ptr<kiln::rt::detail::PartitionedExecutor> partitioned;
};

namespace kiln::rt::detail {

// Records `message` for kiln_last_error() and returns `status`.
kiln_status fail(kiln_status status, std::string message);

// Runs `body`, turning any exception into a status plus kiln_last_error(); nothing may unwind
// through the C ABI.
template <typename Fn> kiln_status guarded(Fn &&body) {
  try {
    return body();
  } catch (const StatusError &e) {
    return fail(e.status(), e.what());
  } catch (const std::bad_alloc &) {
    return fail(KILN_ERROR_IO, "out of memory");
  } catch (const std::exception &e) {
    return fail(KILN_ERROR_INVALID_ARTIFACT, e.what());
  }
}

// The manifest's entry `name`, or null.
const EntrySpec *findEntrySpec(const kiln_artifact &artifact, const char *name);

// The arrays and every non-empty tensor's buffer must be given; fails naming the tensor.
kiln_status checkBuffers(const kiln_artifact *artifact, const std::vector<TensorSpec> &ins,
                         const std::vector<TensorSpec> &outs, void *const *inputs, void *const *outputs,
                         const char *what);

// Runs CPU entry `entry` on one aligned buffer per tensor (the caller's where aligned, else a
// staged copy), serialized per loaded library; throws on a failed index check.
void runEntryOnCpu(kiln_artifact *artifact, const std::vector<TensorSpec> &ins, const std::vector<TensorSpec> &outs,
                   void *const *inputs, void *const *outputs, EntryFn entry);

} // namespace kiln::rt::detail

#endif // KILN_RUNTIME_ARTIFACTHANDLE_H
