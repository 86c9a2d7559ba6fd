//===- TrainStep.h - A train-step artifact and its buffers ------*- C++ -*-===//
//
// Binds a train-step artifact (kilnc --train) to host buffers by role: the
// data input, the labels, the state tensors the step reads and writes back,
// the loss and metrics it returns; runs a step (swapping each state output
// with its input, so nothing is copied) and the eval and init entries. On a
// GPU the state stays on the device (the runtime's resident state) and is
// read back only for checkpoints, histograms, evaluation and export.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_TOOLS_KILN_TRAIN_TRAINSTEP_H
#define KILN_TOOLS_KILN_TRAIN_TRAINSTEP_H

#include "kiln/artifact.h"
#include "kiln/train/checkpoint.h"

#include <string>
#include <vector>

namespace kiln::train {

class TrainStep {
public:
  // Throws rt::Error when the artifact is not a train step kiln-train can
  // drive (no state, no labels input `labelsName`, other than one data input,
  // no eval or init entry).
  TrainStep(rt::Artifact artifact, const std::string &labelsName);

  rt::Artifact &artifact() { return artifact_; }
  const rt::TensorSpec &dataSpec() const { return artifact_.inputs()[data_]; }
  const rt::TensorSpec &labelsSpec() const { return artifact_.inputs()[labels_]; }
  int64_t batchSize() const { return dataSpec().dims.empty() ? 1 : dataSpec().dims[0]; }
  // The classes of a classifier: the last dim of the first model output
  // when it is [batch, classes] and the labels are integer [batch]; 0 otherwise.
  int64_t classes() const { return classes_; }

  rt::Tensor &data() { return inputs_[data_]; }
  rt::Tensor &labels() { return inputs_[labels_]; }

  // Sets the state to the init entry's values.
  void initialize();
  // Sets the state to a checkpoint's tensors. Throws rt::Error naming the
  // checkpoint and the tensor that is missing or shaped differently.
  void restore(const Checkpoint &checkpoint, const std::string &source);
  // The state as the last step left it, each tensor under its name.
  std::vector<const rt::Tensor *> state() const;
  // Updates made so far: the step state tensor.
  int64_t step() const;

  // One step on data() and labels(); returns the loss.
  float run();
  // The last step's learning rate, or NaN for artifacts without the output.
  float learningRate() const;
  // The last step's model output that classifies (see classes()), or null.
  const rt::Tensor *logits() const;
  // Parameter states and the gradients of the last step (outputs
  // gradient/<name>, when compiled with --gradient-outputs), by name.
  std::vector<std::pair<std::string, const rt::Tensor *>> parameters(bool ema) const;
  std::vector<std::pair<std::string, const rt::Tensor *>> gradients() const;
  bool hasEma() const;

  // The eval entry on `batch` (shaped like data()) with the current weights,
  // or their moving averages with `ema`; returns its first output.
  const rt::Tensor &evaluate(const rt::Tensor &batch, bool ema);

  // Whether the state lives on the artifact's device (GPUs) rather than in host buffers.
  bool resident() const { return resident_; }

private:
  int findInput(const std::string &name) const;
  // Brings the host copies of resident state up to date (reads the device).
  void pull() const;
  int findOutput(const std::string &name) const;

  rt::Artifact artifact_;
  std::vector<rt::Tensor> inputs_, outputs_;
  std::vector<std::pair<int, int>> state_; // (input, output) pairs
  int data_ = -1, labels_ = -1, step_ = -1;
  int loss_ = -1, learningRate_ = -1, logits_ = -1;
  int64_t classes_ = 0;
  bool resident_ = false;
  mutable int64_t stepCount_ = 0; // the step state, counted on the host
  std::vector<rt::TensorSpec> evalInputs_;
  std::vector<rt::Tensor> evalOutputs_;
};

} // namespace kiln::train

#endif // KILN_TOOLS_KILN_TRAIN_TRAINSTEP_H
