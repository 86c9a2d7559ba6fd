// 100 train steps of an MLP, a LeNet-style CNN, a convolution with batch normalization (batch
// statistics, running statistics updated as state) and a transformer layer, exported from
// PyTorch to ONNX, compiled with kilnc --train and run through the C API, against the losses
// and weights PyTorch computed with the same recipe (reference/generate.py).
#include "kiln/runtime.h"
#include "kiln/tensor.h"
#include "test/runtime/TestUtil.h"
#include "test/training/TrainLoop.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>

namespace {

using kiln::rt::Tensor;

std::string referenceDir(const std::string &model) {
  return std::string(KILN_TRAINING_REFERENCE) + "/" + model;
}

Tensor load(const std::string &path) { return kiln::rt::readTensorFile(path); }

struct Tolerance {
  double loss, weight;
};

class PyTorchReference : public testing::TestWithParam<std::pair<std::string, Tolerance>> {};

/// Whether a state kind holds values PyTorch computes too (not optimizer
/// slots or the step counter).
bool comparable(const std::string &kind) {
  return kind == "parameter" || kind == "ema" || kind == "running_mean" || kind == "running_var";
}

TEST_P(PyTorchReference, HundredStepsMatch) {
  const std::string &model = GetParam().first;
  const Tolerance tolerance = GetParam().second;
  std::string dir = referenceDir(model);
  kiln::test::TempDir tmp;
  auto compiled = kiln::test::runCommand({KILNC_PATH, dir + "/model.onnx", "--train",
                                          "--train-config=" + dir + "/train.cfg", "-o",
                                          tmp.file("step.kiln")});
  ASSERT_EQ(compiled.exitCode, 0) << compiled.stdErr;
  kiln::test::TrainLoop loop(tmp.file("step.kiln"));
  kiln_artifact *artifact = loop.artifact();

  // Initial state: the artifact's init entry, which must equal the initializers PyTorch
  // started from (the moving averages start from the weights); zeros for slots and the step.
  std::map<std::string, std::vector<unsigned char>> initial;
  loop.runEntry("init", initial);
  ASSERT_EQ(initial.size(), loop.stateCount());
  for (auto &[name, value] : initial) {
    int input = kiln_artifact_find_input(artifact, name.c_str());
    ASSERT_GE(input, 0) << name;
    std::string kind = kiln_artifact_input_state(artifact, input);
    if (comparable(kind)) {
      Tensor expected = load(dir + "/init/" + name.substr(kind == "ema" ? 4 : 0) + ".npy");
      ASSERT_EQ(expected.byteSize(), value.size()) << name;
      EXPECT_EQ(std::memcmp(expected.data(), value.data(), value.size()), 0) << "init's " << name;
    }
    loop.inputBuffer(name) = value;
  }

  Tensor x = load(dir + "/x.npy"), labels = load(dir + "/labels.npy");
  Tensor losses = load(dir + "/losses.npy");
  int64_t batches = x.shape()[0];
  size_t xBytes = x.byteSize() / batches, labelBytes = labels.byteSize() / batches;
  ASSERT_EQ(loop.inputBuffer("x").size(), xBytes);
  ASSERT_EQ(loop.inputBuffer("labels").size(), labelBytes);
  double worstLoss = 0;
  for (int64_t step = 0; step < losses.numElements(); ++step) {
    int64_t b = step % batches;
    std::memcpy(loop.inputBuffer("x").data(), static_cast<const char *>(x.data()) + b * xBytes, xBytes);
    std::memcpy(loop.inputBuffer("labels").data(),
                static_cast<const char *>(labels.data()) + b * labelBytes, labelBytes);
    double loss = loop.step();
    double expected = losses.dataAs<double>()[step];
    worstLoss = std::max(worstLoss, std::fabs(loss - expected) / std::fabs(expected));
    EXPECT_NEAR(loss, expected, tolerance.loss * std::fabs(expected)) << "loss at step " << step;
  }

  // Final weights (and moving averages, running statistics):
  // |kiln - torch| <= tol * (1 + |torch|).
  double worstWeight = 0;
  for (auto &[name, value] : initial) {
    int input = kiln_artifact_find_input(artifact, name.c_str());
    std::string kind = kiln_artifact_input_state(artifact, input);
    if (!comparable(kind))
      continue;
    Tensor expected =
        load(dir + "/final/" + (kind == "ema" ? "ema." + name.substr(4) : name) + ".npy");
    const float *got = loop.state<float>(name);
    for (int64_t k = 0; k < expected.numElements(); ++k) {
      double want = expected.dataAs<float>()[k];
      double error = std::fabs(got[k] - want) / (1 + std::fabs(want));
      worstWeight = std::max(worstWeight, error);
      if (error > tolerance.weight) {
        ADD_FAILURE() << name << "[" << k << "]: kiln " << got[k] << ", PyTorch " << want;
        break;
      }
    }
  }
  char figures[96];
  std::snprintf(figures, sizeof figures, "%.3g", worstLoss);
  RecordProperty("worst_loss_error", figures);
  std::snprintf(figures, sizeof figures, "%.3g", worstWeight);
  RecordProperty("worst_weight_error", figures);
}

// Tolerances: relative on the loss, |kiln - torch| / (1 + |torch|) on the weights. Measured
// worst errors at the time of writing: MLP 9e-7 and 2e-7, LeNet 2e-7 and 8e-8 (float32 sums in
// a different order), batch normalization 5e-5 (on a loss that falls to 5e-4) and 2e-6,
// transformer 3e-5 and 1e-6 (Adam divides by small second moments).
INSTANTIATE_TEST_SUITE_P(
    Models, PyTorchReference,
    testing::Values(std::make_pair(std::string("mlp"), Tolerance{1e-5, 1e-5}),
                    std::make_pair(std::string("lenet"), Tolerance{1e-5, 1e-5}),
                    std::make_pair(std::string("batchnorm"), Tolerance{3e-4, 1e-4}),
                    std::make_pair(std::string("transformer"), Tolerance{3e-4, 1e-4})),
    [](const auto &info) { return info.param.first; });

} // namespace
