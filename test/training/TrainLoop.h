// A train step driven through the C API alone, shared by the training tests.
#ifndef KILN_TEST_TRAINING_TRAINLOOP_H
#define KILN_TEST_TRAINING_TRAINLOOP_H

#include "kiln/runtime.h"

#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace kiln::test {

/// A train step and its buffers. The manifest marks the state; each state
/// output and the input of the same name trade buffers after a step (no
/// copies), so the next step reads what this one wrote. With `resident`, the
/// runtime keeps the state on the artifact's device instead
/// (kiln_artifact_state_init) and this loop's state buffers are host copies,
/// brought up to date by state().
class TrainLoop {
public:
  explicit TrainLoop(const std::string &path, const char *device = nullptr, bool resident = false)
      : resident_(resident) {
    kiln_status status = kiln_artifact_open_device(path.c_str(), device, &artifact_);
    if (status != KILN_OK)
      throw std::runtime_error(kiln_last_error());
    for (int i = 0; i < kiln_artifact_num_inputs(artifact_); ++i) {
      kiln_tensor_info info;
      kiln_artifact_input(artifact_, i, &info);
      inputs_.emplace_back(kiln_tensor_info_byte_size(&info));
      inputNames_[info.name] = i;
    }
    for (int i = 0; i < kiln_artifact_num_outputs(artifact_); ++i) {
      kiln_tensor_info info;
      kiln_artifact_output(artifact_, i, &info);
      outputs_.emplace_back(kiln_tensor_info_byte_size(&info));
      outputNames_[info.name] = i;
      if (*kiln_artifact_output_state(artifact_, i)) {
        int input = kiln_artifact_find_input(artifact_, info.name);
        EXPECT_GE(input, 0) << "state output '" << info.name << "' has no input";
        EXPECT_STREQ(kiln_artifact_input_state(artifact_, input),
                     kiln_artifact_output_state(artifact_, i));
        state_.push_back({input, i});
      }
    }
  }
  ~TrainLoop() { kiln_artifact_close(artifact_); }
  TrainLoop(const TrainLoop &) = delete;
  TrainLoop &operator=(const TrainLoop &) = delete;

  kiln_artifact *artifact() { return artifact_; }

  bool hasInput(const std::string &name) const { return inputNames_.count(name) != 0; }
  template <typename T> T *input(const std::string &name) {
    return reinterpret_cast<T *>(inputs_.at(inputNames_.at(name)).data());
  }
  template <typename T> const T *output(const std::string &name) {
    return reinterpret_cast<const T *>(outputs_.at(outputNames_.at(name)).data());
  }
  size_t stateCount() const { return state_.size(); }

  /// One step; returns the loss.
  float step() {
    std::vector<void *> in, out;
    for (auto &buffer : inputs_)
      in.push_back(buffer.data());
    for (auto &buffer : outputs_)
      out.push_back(buffer.data());
    EXPECT_EQ(kiln_artifact_run(artifact_, in.data(), out.data()), KILN_OK) << kiln_last_error();
    float loss = *output<float>("loss");
    if (!resident_)
      for (auto [input, output] : state_)
        std::swap(inputs_[input], outputs_[output]);
    return loss;
  }

  /// Resident state: sets it from the init entry, on the device.
  void initResident() {
    ASSERT_EQ(kiln_artifact_state_init(artifact_), KILN_OK) << kiln_last_error();
  }
  bool resident() const { return resident_; }

  /// Runs an entry (eval, init) with named buffers: inputs from this loop's
  /// inputs of the same name, outputs into `outputs` by name.
  void runEntry(const char *entry, std::map<std::string, std::vector<unsigned char>> &outputs) {
    std::vector<void *> in, out;
    for (int i = 0; i < kiln_artifact_entry_num_inputs(artifact_, entry); ++i) {
      kiln_tensor_info info;
      kiln_artifact_entry_input(artifact_, entry, i, &info);
      in.push_back(inputs_.at(inputNames_.at(info.name)).data());
    }
    for (int i = 0; i < kiln_artifact_entry_num_outputs(artifact_, entry); ++i) {
      kiln_tensor_info info;
      kiln_artifact_entry_output(artifact_, entry, i, &info);
      outputs[info.name].assign(kiln_tensor_info_byte_size(&info), 0);
      out.push_back(outputs[info.name].data());
    }
    ASSERT_EQ(kiln_artifact_run_entry(artifact_, entry, in.data(), out.data()), KILN_OK)
        << kiln_last_error();
  }
  std::vector<unsigned char> &inputBuffer(const std::string &name) {
    return inputs_.at(inputNames_.at(name));
  }

  /// After step(): the state values it wrote are now inputs.
  template <typename T> const T *state(const std::string &name) {
    if (resident_) {
      std::vector<unsigned char> &buffer = inputBuffer(name);
      EXPECT_EQ(kiln_artifact_state_read(artifact_, name.c_str(), buffer.data(), buffer.size()), KILN_OK)
          << kiln_last_error();
    }
    return input<T>(name);
  }

private:
  bool resident_ = false;
  kiln_artifact *artifact_ = nullptr;
  std::vector<std::vector<unsigned char>> inputs_, outputs_;
  std::map<std::string, int> inputNames_, outputNames_;
  std::vector<std::pair<int, int>> state_;
};

} // namespace kiln::test

#endif // KILN_TEST_TRAINING_TRAINLOOP_H
