// kiln::rt::Artifact: the C ABI wrapped for C++ tools, with tensor signature checks.
#include "kiln/artifact.h"

#include <utility>

namespace kiln::rt {
namespace {

std::vector<TensorSpec> readSpecs(const kiln_artifact *handle, bool inputs) {
  int count = inputs ? kiln_artifact_num_inputs(handle) : kiln_artifact_num_outputs(handle);
  std::vector<TensorSpec> specs;
  for (int i = 0; i < count; ++i) {
    kiln_tensor_info info;
    kiln_status status = inputs ? kiln_artifact_input(handle, i, &info)
                                : kiln_artifact_output(handle, i, &info);
    if (status != KILN_OK)
      throw Error(kiln_last_error());
    specs.push_back({info.name, info.dtype, std::vector<int64_t>(info.dims, info.dims + info.rank),
                     inputs ? kiln_artifact_input_state(handle, i) : kiln_artifact_output_state(handle, i)});
  }
  return specs;
}

void checkAgainst(const std::vector<TensorSpec> &specs, std::size_t given, const char *kind,
                  const std::string &path) {
  if (given != specs.size())
    throw Error(path + ": expected " + std::to_string(specs.size()) + " " + kind + "s, got " +
                std::to_string(given));
}

} // namespace

Artifact::Artifact(kiln_artifact *handle, std::string path)
    : handle_(handle), path_(std::move(path)), inputs_(readSpecs(handle, true)),
      outputs_(readSpecs(handle, false)) {}

Artifact Artifact::open(const std::string &path, const std::string &device, unsigned flags) {
  kiln_artifact *handle = nullptr;
  if (kiln_artifact_open_flags(path.c_str(), device.c_str(), flags, &handle) != KILN_OK)
    throw Error(kiln_last_error());
  try {
    return Artifact(handle, path);
  } catch (...) {
    kiln_artifact_close(handle);
    throw;
  }
}

Artifact::Artifact(Artifact &&other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)), path_(std::move(other.path_)),
      inputs_(std::move(other.inputs_)), outputs_(std::move(other.outputs_)) {}

Artifact &Artifact::operator=(Artifact &&other) noexcept {
  if (this != &other) {
    kiln_artifact_close(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
    path_ = std::move(other.path_);
    inputs_ = std::move(other.inputs_);
    outputs_ = std::move(other.outputs_);
  }
  return *this;
}

Artifact::~Artifact() { kiln_artifact_close(handle_); }

std::string Artifact::name() const { return kiln_artifact_name(handle_); }
std::string Artifact::target() const { return kiln_artifact_target(handle_); }
std::string Artifact::cpu() const { return kiln_artifact_cpu(handle_); }
std::string Artifact::device() const { return kiln_artifact_device(handle_); }
std::string Artifact::deviceName() const { return kiln_artifact_device_name(handle_); }
std::string Artifact::devices() const { return kiln_artifact_devices(handle_); }
std::string Artifact::deviceCode() const { return kiln_artifact_device_code(handle_); }
double Artifact::lastDeviceMs() const { return kiln_artifact_last_device_ms(handle_); }
double Artifact::timeSteps(int steps) {
  double ms = 0;
  if (kiln_artifact_time_steps(handle_, steps, &ms) != KILN_OK)
    throw Error(kiln_last_error());
  return ms;
}
std::string Artifact::cudaGraph() const { return kiln_artifact_cuda_graph(handle_); }

void Artifact::setOption(const std::string &key, const std::string &value) {
  if (kiln_artifact_set_option(handle_, key.c_str(), value.c_str()) != KILN_OK)
    throw Error(kiln_last_error());
}

bool Artifact::hasCollectives() const { return kiln_artifact_has_collectives(handle_) != 0; }

void Artifact::setCollective(const kiln_collective_hooks *hooks) {
  if (kiln_artifact_set_collective(handle_, hooks) != KILN_OK)
    throw Error(kiln_last_error());
}

std::vector<Tensor> Artifact::allocateOutputs() const {
  std::vector<Tensor> tensors;
  tensors.reserve(outputs_.size());
  for (const TensorSpec &spec : outputs_)
    tensors.emplace_back(spec.dtype, spec.dims, spec.name);
  return tensors;
}

void Artifact::run(const std::vector<const Tensor *> &inputs, const std::vector<Tensor *> &outputs) {
  checkAgainst(inputs_, inputs.size(), "input", path_);
  checkAgainst(outputs_, outputs.size(), "output", path_);
  std::vector<void *> inputBuffers, outputBuffers;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const TensorSpec &spec = inputs_[i];
    if (!inputs[i] || inputs[i]->dtype() != spec.dtype || inputs[i]->shape() != spec.dims)
      throw Error(path_ + ": input '" + spec.name + "': expected " + spec.typeString() + ", got " +
                  (inputs[i] ? inputs[i]->typeString() : std::string("nothing")));
    // kiln_entry takes void** for inputs too; generated code never writes them.
    inputBuffers.push_back(const_cast<void *>(inputs[i]->data()));
  }
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const TensorSpec &spec = outputs_[i];
    if (!outputs[i] || outputs[i]->dtype() != spec.dtype || outputs[i]->shape() != spec.dims)
      throw Error(path_ + ": output '" + spec.name + "': expected " + spec.typeString() +
                  ", got " + (outputs[i] ? outputs[i]->typeString() : std::string("nothing")));
    outputBuffers.push_back(outputs[i]->data());
  }
  if (kiln_artifact_run(handle_, inputBuffers.data(), outputBuffers.data()) != KILN_OK)
    throw Error(kiln_last_error());
}

} // namespace kiln::rt
