//===- TrainStep.cpp - A train-step artifact and its buffers --------------===//
#include "TrainStep.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace kiln::train {
namespace {

using rt::Error;

rt::TensorSpec specOf(const kiln_tensor_info &info) {
  rt::TensorSpec spec;
  spec.name = info.name;
  spec.dtype = info.dtype;
  spec.dims.assign(info.dims, info.dims + info.rank);
  return spec;
}

std::vector<rt::TensorSpec> entrySignature(kiln_artifact *artifact, const char *entry, bool inputs) {
  int count = inputs ? kiln_artifact_entry_num_inputs(artifact, entry)
                     : kiln_artifact_entry_num_outputs(artifact, entry);
  std::vector<rt::TensorSpec> specs;
  for (int i = 0; i < count; ++i) {
    kiln_tensor_info info;
    kiln_status status = inputs ? kiln_artifact_entry_input(artifact, entry, i, &info)
                                : kiln_artifact_entry_output(artifact, entry, i, &info);
    if (status != KILN_OK)
      throw Error(kiln_last_error());
    specs.push_back(specOf(info));
  }
  return specs;
}

void check(kiln_status status) {
  if (status != KILN_OK)
    throw Error(kiln_last_error());
}

} // namespace

TrainStep::TrainStep(rt::Artifact artifact, const std::string &labelsName)
    : artifact_(std::move(artifact)) {
  const std::string &path = artifact_.path();
  const auto &ins = artifact_.inputs();
  const auto &outs = artifact_.outputs();
  for (const rt::TensorSpec &spec : ins)
    inputs_.emplace_back(spec.dtype, spec.dims, spec.name);
  outputs_ = artifact_.allocateOutputs();

  std::vector<int> data;
  for (int i = 0; i < static_cast<int>(ins.size()); ++i) {
    if (ins[i].state.empty()) {
      if (ins[i].name == labelsName)
        labels_ = i;
      else
        data.push_back(i);
      continue;
    }
    int out = findOutput(ins[i].name);
    if (out < 0 || outs[out].state != ins[i].state)
      throw Error(path + ": state input '" + ins[i].name + "' has no output of the same kind");
    state_.push_back({i, out});
    if (ins[i].state == "step")
      step_ = i;
  }
  if (state_.empty() || step_ < 0)
    throw Error(path + ": not a train step (no state inputs); compile the model with kilnc --train");
  if (labels_ < 0)
    throw Error(path + ": the train step has no labels input '" + labelsName +
                "' (see --labels; a model that computes its own loss is not supported yet)");
  if (data.size() != 1) {
    std::string names;
    for (int i : data)
      names += (names.empty() ? "" : ", ") + ins[i].name;
    throw Error(path + ": kiln-train feeds one data input, the train step has " +
                std::to_string(data.size()) + (names.empty() ? "" : " (" + names + ")"));
  }
  data_ = data[0];
  if (inputs_[data_].rank() == 0 || inputs_[labels_].rank() == 0 ||
      inputs_[labels_].shape()[0] != inputs_[data_].shape()[0])
    throw Error(path + ": data " + inputs_[data_].typeString() + " and labels " +
                inputs_[labels_].typeString() + " do not share a batch dimension");
  loss_ = findOutput("loss");
  if (loss_ < 0)
    throw Error(path + ": the train step has no 'loss' output");
  learningRate_ = findOutput("learning_rate");
  // The first model output: after loss and learning_rate, before any state or gradient.
  for (int i = 0; i < static_cast<int>(outs.size()); ++i) {
    if (i == loss_ || i == learningRate_ || !outs[i].state.empty() ||
        outs[i].name.rfind("gradient/", 0) == 0)
      continue;
    const auto &dims = outs[i].dims;
    const rt::TensorSpec &l = ins[labels_];
    if (dims.size() == 2 && dims[0] == batchSize() && l.dims.size() == 1 && !rt::isFloatingPoint(l.dtype) &&
        outs[i].dtype == KILN_DTYPE_F32) {
      logits_ = i;
      classes_ = dims[1];
    }
    break;
  }
  int entries = kiln_artifact_num_entries(artifact_.handle());
  bool hasEval = false, hasInit = false;
  for (int i = 0; i < entries; ++i) {
    std::string name = kiln_artifact_entry_name(artifact_.handle(), i);
    hasEval |= name == "eval";
    hasInit |= name == "init";
  }
  if (!hasEval || !hasInit)
    throw Error(path + ": the train step has no " + std::string(hasInit ? "eval" : "init") +
                " entry (train steps compiled by this kilnc have both; recompile it)");
  // On a GPU the state stays on the device between steps (kiln_artifact_state_init); the host
  // copies in inputs_ are brought up to date only when something reads them.
  resident_ = artifact_.device() != "cpu";
  evalInputs_ = entrySignature(artifact_.handle(), "eval", true);
  for (const rt::TensorSpec &spec : entrySignature(artifact_.handle(), "eval", false))
    evalOutputs_.emplace_back(spec.dtype, spec.dims, spec.name);
  if (evalOutputs_.empty())
    throw Error(path + ": the eval entry has no outputs");
}

int TrainStep::findInput(const std::string &name) const {
  return kiln_artifact_find_input(const_cast<rt::Artifact &>(artifact_).handle(), name.c_str());
}

int TrainStep::findOutput(const std::string &name) const {
  return kiln_artifact_find_output(const_cast<rt::Artifact &>(artifact_).handle(), name.c_str());
}

void TrainStep::initialize() {
  if (resident_) {
    check(kiln_artifact_state_init(artifact_.handle()));
    pull();
    return;
  }
  std::vector<rt::TensorSpec> specs = entrySignature(artifact_.handle(), "init", false);
  std::vector<void *> out;
  std::vector<int> targets;
  for (const rt::TensorSpec &spec : specs) {
    int input = findInput(spec.name);
    if (input < 0 || inputs_[input].byteSize() != spec.byteSize())
      throw Error(artifact_.path() + ": init output '" + spec.name + "' matches no state input");
    out.push_back(inputs_[input].data());
  }
  check(kiln_artifact_run_entry(artifact_.handle(), "init", nullptr, out.data()));
  stepCount_ = inputs_[step_].dataAs<int64_t>()[0];
}

void TrainStep::restore(const Checkpoint &checkpoint, const std::string &source) {
  for (auto [input, output] : state_) {
    rt::Tensor &target = inputs_[input];
    const rt::Tensor *saved = checkpoint.find(target.name());
    if (!saved)
      throw Error(source + ": has no tensor '" + target.name() + "', state of " +
                  artifact_.path());
    if (saved->dtype() != target.dtype() || saved->shape() != target.shape())
      throw Error(source + ": tensor '" + target.name() + "' is " + saved->typeString() +
                  ", the train step's state is " + target.typeString());
    std::memcpy(target.data(), saved->data(), target.byteSize());
    if (resident_)
      check(kiln_artifact_state_write(artifact_.handle(), target.name().c_str(), target.data(),
                                      target.byteSize()));
  }
  stepCount_ = inputs_[step_].dataAs<int64_t>()[0];
}

void TrainStep::pull() const {
  if (resident_)
    for (auto [input, output] : state_) {
      rt::Tensor &t = const_cast<rt::Tensor &>(inputs_[input]);
      check(kiln_artifact_state_read(const_cast<rt::Artifact &>(artifact_).handle(), t.name().c_str(),
                                     t.data(), t.byteSize()));
    }
  stepCount_ = inputs_[step_].dataAs<int64_t>()[0];
}

std::vector<const rt::Tensor *> TrainStep::state() const {
  pull();
  std::vector<const rt::Tensor *> tensors;
  for (auto [input, output] : state_)
    tensors.push_back(&inputs_[input]);
  return tensors;
}

int64_t TrainStep::step() const { return stepCount_; }

float TrainStep::run() {
  std::vector<void *> in, out;
  for (rt::Tensor &t : inputs_)
    in.push_back(t.data());
  for (rt::Tensor &t : outputs_)
    out.push_back(t.data());
  check(kiln_artifact_run(artifact_.handle(), in.data(), out.data()));
  if (!resident_)
    for (auto [input, output] : state_)
      std::swap(inputs_[input], outputs_[output]);
  ++stepCount_; // every step adds one to the step counter
  return outputs_[loss_].dataAs<float>()[0];
}

float TrainStep::learningRate() const {
  return learningRate_ < 0 ? std::numeric_limits<float>::quiet_NaN()
                           : outputs_[learningRate_].dataAs<float>()[0];
}

const rt::Tensor *TrainStep::logits() const { return logits_ < 0 ? nullptr : &outputs_[logits_]; }

bool TrainStep::hasEma() const {
  for (auto [input, output] : state_)
    if (artifact_.inputs()[input].state == "ema")
      return true;
  return false;
}

std::vector<std::pair<std::string, const rt::Tensor *>> TrainStep::parameters(bool ema) const {
  pull();
  std::vector<std::pair<std::string, const rt::Tensor *>> found;
  for (auto [input, output] : state_) {
    const std::string &kind = artifact_.inputs()[input].state;
    const std::string &name = inputs_[input].name();
    if (kind == "parameter") {
      int average = ema ? findInput("ema/" + name) : -1;
      found.push_back({name, average >= 0 ? &inputs_[average] : &inputs_[input]});
    } else if (kind == "running_mean" || kind == "running_var") {
      found.push_back({name, &inputs_[input]});
    }
  }
  return found;
}

std::vector<std::pair<std::string, const rt::Tensor *>> TrainStep::gradients() const {
  std::vector<std::pair<std::string, const rt::Tensor *>> found;
  for (const rt::Tensor &t : outputs_)
    if (t.name().rfind("gradient/", 0) == 0)
      found.push_back({t.name().substr(9), &t});
  return found;
}

const rt::Tensor &TrainStep::evaluate(const rt::Tensor &batch, bool ema) {
  std::vector<void *> in, out;
  if (resident_ && !ema) {
    // The weights as they are on the device: each NULL input reads the state of its name.
    for (const rt::TensorSpec &spec : evalInputs_)
      in.push_back(spec.name == dataSpec().name ? const_cast<void *>(batch.data()) : nullptr);
    for (rt::Tensor &t : evalOutputs_)
      out.push_back(t.data());
    check(kiln_artifact_run_entry(artifact_.handle(), "eval", in.data(), out.data()));
    return evalOutputs_.front();
  }
  std::vector<std::pair<std::string, const rt::Tensor *>> weights = parameters(ema);
  for (const rt::TensorSpec &spec : evalInputs_) {
    const rt::Tensor *source = nullptr;
    if (spec.name == dataSpec().name)
      source = &batch;
    for (auto &[name, tensor] : weights)
      if (name == spec.name)
        source = tensor;
    if (!source)
      throw Error(artifact_.path() + ": eval input '" + spec.name + "' is neither the data nor a weight");
    in.push_back(const_cast<void *>(source->data()));
  }
  for (rt::Tensor &t : evalOutputs_)
    out.push_back(t.data());
  check(kiln_artifact_run_entry(artifact_.handle(), "eval", in.data(), out.data()));
  return evalOutputs_.front();
}

} // namespace kiln::train
