// C++ RAII wrapper over the runtime C ABI, with signature checks against host Tensors.
#ifndef KILN_ARTIFACT_H
#define KILN_ARTIFACT_H

#include "kiln/manifest.h"
#include "kiln/runtime.h"
#include "kiln/tensor.h"

#include <string>
#include <vector>

namespace kiln::rt {

class Artifact {
public:
  // Throws Error with kiln_last_error()'s message.
  static Artifact open(const std::string &path);

  Artifact(Artifact &&other) noexcept;
  Artifact &operator=(Artifact &&other) noexcept;
  Artifact(const Artifact &) = delete;
  Artifact &operator=(const Artifact &) = delete;
  ~Artifact();

  const std::string &path() const { return path_; }
  std::string name() const;
  std::string target() const;
  std::string cpu() const;
  const std::vector<TensorSpec> &inputs() const { return inputs_; }
  const std::vector<TensorSpec> &outputs() const { return outputs_; }
  kiln_artifact *handle() { return handle_; }

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
