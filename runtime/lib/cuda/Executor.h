// The GPU executor: loads an artifact's CUDA code on one GPU and runs its program on one stream.
#ifndef KILN_RUNTIME_CUDA_EXECUTOR_H
#define KILN_RUNTIME_CUDA_EXECUTOR_H

#include "kiln/collective_abi.h"
#include "kiln/cuda_program.h"
#include "kiln/manifest.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kiln::rt::cuda {

class Executor {
public:
  // Reads and checks the GPU program and code of the artifact dlopen'ed as `library`, then loads
  // it on gpu:`index`: context, stream, module, kernels, device buffers, constants, cuBLASLt plans.
  // Throws detail::StatusError (KILN_ERROR_NO_DEVICE, _UNSUPPORTED, _INVALID_ARTIFACT, _DEVICE).
  // `prefix` names the symbols: `prefix`cuda_program, ...; a partitioned artifact's stage i uses
  // "kiln_stage_<i>_" and a manifest whose inputs and outputs are the stage's. `manifest` must
  // outlive the executor.
  static std::unique_ptr<Executor> open(const std::string &path, const Manifest &manifest, void *library,
                                        int index, const std::string &prefix = "kiln_");
  // Reads and checks the GPU program, the constants and every cubin and PTX the manifest lists:
  // every check that needs no driver or device.
  static CudaProgram readProgram(const std::string &path, const Manifest &manifest, void *library,
                                 const std::string &prefix = "kiln_");

  ~Executor();
  Executor(const Executor &) = delete;
  Executor &operator=(const Executor &) = delete;

  // One run on dense host buffers in manifest order (sizes from the manifest; zero-byte tensors
  // may be NULL). Serialized per executor. Throws detail::StatusError.
  void run(const void *const *inputs, void *const *outputs);

  // Where one input of a run comes from: a host buffer, or output `output` of another executor's
  // finished run, still in its device memory (copied device to device on one GPU, peer to peer
  // between two, on this executor's stream).
  // With `resident` >= 0 the input is instead the current value of `device`'s resident input
  // `resident` (a train step's weights, for its eval entry).
  struct InputSource {
    const void *host = nullptr;
    const Executor *device = nullptr;
    int output = 0;
    int resident = -1;
  };
  // As run(), with each input from `sources`; an output whose pointer is NULL is left on the
  // device (for later runs of other executors to take) and not copied to the host.
  void run(const InputSource *sources, void *const *outputs);

  // Enqueues the program `steps` times back to back on the device buffers as the last run left
  // them, with no copies to or from the host and no waiting in between, and returns the GPU
  // milliseconds per step (events around all of them). What benchmarks compare with other
  // frameworks' pipelined loops. Needs a run first. Throws detail::StatusError.
  double timeSteps(int steps);

  // "NVIDIA H100 80GB HBM3 (sm_90, driver 13.0)".
  const std::string &deviceName() const;
  // "cubin sm_90" or "ptx compute_80".
  const std::string &code() const;
  // Milliseconds between the events around the last run's program; -1 before the first run.
  double lastDeviceMs() const;
  // Whether runs capture the program once as a CUDA graph and replay it.
  void setCudaGraph(bool enabled);
  // What the next run does: "off", "pending" (on; captured at the end of the next run), "on"
  // (replays the captured graph) or "failed: WHY" (capture failed; launches directly).
  const std::string &cudaGraphState() const;

  // Train steps: the (input, output) pairs of `pairs` are one state tensor each, kept on the
  // device between runs. A run neither copies them from the host nor back (their buffers in
  // run() may be NULL and are ignored); after each run the two buffers of a pair trade places, so
  // the next run reads what this one wrote, with no copy. With CUDA graphs on, one graph is
  // captured per parity. Throws detail::StatusError for pairs that do not match.
  void setResident(std::vector<std::pair<int, int>> pairs);
  // Copies the current value of resident input `input` to `host` / from `host`.
  void readResident(int input, void *host);
  void writeResident(int input, const void *host);
  // Sets resident input `input` from output `output` of `from`'s finished run (left on the device).
  void copyResidentFrom(int input, const Executor &from, int output);

  // Data-parallel steps (kilnc --train --data-parallel=true): whether the program has collective
  // records, and the hooks its all-reduce records call (copied; NULL: one replica). With hooks
  // that reach peers, runs launch directly (no CUDA graph).
  bool hasCollectives() const;
  void setCollective(const kiln_device_collective_hooks *hooks);

  class Impl;

private:
  explicit Executor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace kiln::rt::cuda

#endif // KILN_RUNTIME_CUDA_EXECUTOR_H
