// 100 train steps of an MLP, a LeNet-style CNN, a convolution with batch normalization (batch
// statistics, running statistics updated as state) and a transformer layer, exported from
// PyTorch to ONNX, compiled with kilnc --train and run through the C API, against the losses
// and weights PyTorch computed with the same recipe (reference/generate.py).
#include "kiln/runtime.h"
#include "kiln/tensor.h"
#include "test/runtime/TestUtil.h"

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

TEST_P(PyTorchReference, HundredStepsMatch) {
  const std::string &model = GetParam().first;
  const Tolerance tolerance = GetParam().second;
  std::string dir = referenceDir(model);
  kiln::test::TempDir tmp;
  auto compiled = kiln::test::runCommand({KILNC_PATH, dir + "/model.onnx", "--train",
                                          "--train-config=" + dir + "/train.cfg", "-o",
                                          tmp.file("step.kiln")});
  ASSERT_EQ(compiled.exitCode, 0) << compiled.stdErr;
  kiln_artifact *artifact = nullptr;
  ASSERT_EQ(kiln_artifact_open(tmp.file("step.kiln").c_str(), &artifact), KILN_OK)
      << kiln_last_error();

  // Buffers, initial state from init/, and the state pairs.
  int numInputs = kiln_artifact_num_inputs(artifact), numOutputs = kiln_artifact_num_outputs(artifact);
  std::vector<std::vector<unsigned char>> inputs(numInputs), outputs(numOutputs);
  std::vector<std::pair<int, int>> state;
  for (int i = 0; i < numInputs; ++i) {
    kiln_tensor_info info;
    kiln_artifact_input(artifact, i, &info);
    inputs[i].assign(kiln_tensor_info_byte_size(&info), 0);
    std::string kind = kiln_artifact_input_state(artifact, i), name = info.name;
    if (kind == "parameter" || kind == "ema" || kind == "running_mean" || kind == "running_var") {
      Tensor initial = load(dir + "/init/" + name.substr(kind == "ema" ? 4 : 0) + ".npy");
      ASSERT_EQ(initial.byteSize(), inputs[i].size()) << name;
      std::memcpy(inputs[i].data(), initial.data(), initial.byteSize());
    }
  }
  for (int i = 0; i < numOutputs; ++i) {
    kiln_tensor_info info;
    kiln_artifact_output(artifact, i, &info);
    outputs[i].assign(kiln_tensor_info_byte_size(&info), 0);
    if (*kiln_artifact_output_state(artifact, i))
      state.push_back({kiln_artifact_find_input(artifact, info.name), i});
  }

  // The artifact's init entry gives the same initial state: the initializers, zeros for the
  // optimizer slots and the step.
  int initOutputs = kiln_artifact_entry_num_outputs(artifact, "init");
  ASSERT_EQ(initOutputs, static_cast<int>(state.size()));
  {
    std::vector<std::vector<unsigned char>> initial(initOutputs);
    std::vector<void *> out;
    for (int i = 0; i < initOutputs; ++i) {
      kiln_tensor_info info;
      kiln_artifact_entry_output(artifact, "init", i, &info);
      initial[i].assign(kiln_tensor_info_byte_size(&info), 0xff);
      out.push_back(initial[i].data());
    }
    ASSERT_EQ(kiln_artifact_run_entry(artifact, "init", nullptr, out.data()), KILN_OK) << kiln_last_error();
    for (int i = 0; i < initOutputs; ++i) {
      kiln_tensor_info info;
      kiln_artifact_entry_output(artifact, "init", i, &info);
      int input = kiln_artifact_find_input(artifact, info.name);
      ASSERT_GE(input, 0) << info.name;
      EXPECT_EQ(initial[i], inputs[input]) << "init's " << info.name;
    }
  }

  Tensor x = load(dir + "/x.npy"), labels = load(dir + "/labels.npy");
  Tensor losses = load(dir + "/losses.npy");
  int64_t batches = x.shape()[0];
  size_t xBytes = x.byteSize() / batches, labelBytes = labels.byteSize() / batches;
  int xIndex = kiln_artifact_find_input(artifact, "x");
  int labelIndex = kiln_artifact_find_input(artifact, "labels");
  int lossIndex = kiln_artifact_find_output(artifact, "loss");
  ASSERT_EQ(inputs[xIndex].size(), xBytes);
  ASSERT_EQ(inputs[labelIndex].size(), labelBytes);
  double worstLoss = 0;
  for (int64_t step = 0; step < losses.numElements(); ++step) {
    int64_t b = step % batches;
    std::memcpy(inputs[xIndex].data(), static_cast<const char *>(x.data()) + b * xBytes, xBytes);
    std::memcpy(inputs[labelIndex].data(), static_cast<const char *>(labels.data()) + b * labelBytes,
                labelBytes);
    std::vector<void *> in, out;
    for (auto &buffer : inputs)
      in.push_back(buffer.data());
    for (auto &buffer : outputs)
      out.push_back(buffer.data());
    ASSERT_EQ(kiln_artifact_run(artifact, in.data(), out.data()), KILN_OK) << kiln_last_error();
    double loss = *reinterpret_cast<const float *>(outputs[lossIndex].data());
    double expected = losses.dataAs<double>()[step];
    worstLoss = std::max(worstLoss, std::fabs(loss - expected) / std::fabs(expected));
    EXPECT_NEAR(loss, expected, tolerance.loss * std::fabs(expected)) << "loss at step " << step;
    for (auto [input, output] : state)
      std::swap(inputs[input], outputs[output]);
  }

  // Final weights (and moving averages): |kiln - torch| <= tol * (1 + |torch|).
  double worstWeight = 0;
  for (int i = 0; i < numInputs; ++i) {
    std::string kind = kiln_artifact_input_state(artifact, i);
    if (kind != "parameter" && kind != "ema" && kind != "running_mean" && kind != "running_var")
      continue;
    kiln_tensor_info info;
    kiln_artifact_input(artifact, i, &info);
    std::string name = info.name;
    if (kind == "ema")
      name = "ema." + name.substr(4);
    Tensor expected = load(dir + "/final/" + name + ".npy");
    const float *got = reinterpret_cast<const float *>(inputs[i].data());
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
  kiln_artifact_close(artifact);
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
