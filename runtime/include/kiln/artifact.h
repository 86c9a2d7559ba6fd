// C++ RAII wrapper over the runtime C ABI, with signature checks against host Tensors.
#ifndef KILN_ARTIFACT_H
#define KILN_ARTIFACT_H

#include "kiln/cuda_program.h"
#include "kiln/manifest.h"
#include "kiln/runtime.h"
#include "kiln/tensor.h"

#include <optional>
#include <string>
#include <vector>

namespace kiln::rt {

// What an artifact holds, read without a device.
struct ArtifactInfo {
  Manifest manifest;
  std::optional<CudaProgram> cudaProgram; // when the artifact has code for cuda
};

// Loads the artifact like kiln_artifact_open and reads its manifest and GPU program with every
// check that needs no device, CPU entry or CPU features; unloads it again. Throws Error.
ArtifactInfo inspectArtifact(const std::string &path, unsigned flags = 0);

class Artifact {
public:
  // `device` as for kiln_artifact_open_device ("" = the artifact's default). Throws Error with
  // kiln_last_error()'s message.
  // `flags`: KILN_OPEN_* (kiln_artifact_open_flags).
  static Artifact open(const std::string &path, const std::string &device = "",
                       unsigned flags = 0);

  Artifact(Artifact &&other) noexcept;
  Artifact &operator=(Artifact &&other) noexcept;
  Artifact(const Artifact &) = delete;
  Artifact &operator=(const Artifact &) = delete;
  ~Artifact();

  const std::string &path() const { return path_; }
  std::string name() const;
  std::string target() const;
  std::string cpu() const;
  std::string device() const;     // "cpu", "gpu:0"
  std::string deviceName() const; // "NVIDIA H100 80GB HBM3 (sm_90, driver 13.0)", or the cpu record
  std::string devices() const;    // "cpu,cuda"
  std::string deviceCode() const; // "cubin sm_90", "ptx compute_80", "" on the CPU
  double lastDeviceMs() const;    // -1 on the CPU and before the first run
  // GPU milliseconds per step of `steps` back-to-back steps (kiln_artifact_time_steps).
  double timeSteps(int steps);
  std::string cudaGraph() const;  // "off", "pending", "on", "failed: WHY"; "" on the CPU
  // Throws Error for an unknown key or value.
  void setOption(const std::string &key, const std::string &value);
  const std::vector<TensorSpec> &inputs() const { return inputs_; }
  const std::vector<TensorSpec> &outputs() const { return outputs_; }
  kiln_artifact *handle() { return handle_; }

  // Data-parallel train steps: whether the artifact sums gradients over replicas, and the hooks
  // it does that through (kiln_artifact_set_collective; nullptr: one replica).
  bool hasCollectives() const;
  void setCollective(const kiln_collective_hooks *hooks);

  // Zero-filled tensors shaped like each output, named after it.
  std::vector<Tensor> allocateOutputs() const;

  // Checks that the tensors match the signature in count, dtype and shape (throwing Error naming
  // the first mismatching tensor), then runs once.
  void run(const std::vector<const Tensor *> &inputs, const std::vector<Tensor *> &outputs);

private:
  Artifact(kiln_artifact *handle, std::string path);

  kiln_artifact *handle_ = nullptr;
  std::string path_;
  std::vector<TensorSpec> inputs_;
  std::vector<TensorSpec> outputs_;
};

} // namespace kiln::rt

#endif // KILN_ARTIFACT_H
