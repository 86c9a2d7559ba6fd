//===- Device.h - TensorFlow-style device names -------------------*- C++ -*-===//
//
// Devices are named as in TensorFlow: the full form
// `/job:localhost/replica:0/task:0/device:GPU:1`, the short forms `/cpu:0`
// and `/gpu:1`, and partial specifications such as `/device:GPU` or
// `/job:localhost/gpu:*`, where a missing field means "any".
//
//===----------------------------------------------------------------------===//
#ifndef KILN_DIALECTS_KILN_DEVICE_H
#define KILN_DIALECTS_KILN_DEVICE_H

#include "mlir/Support/LLVM.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace kiln {

/// The attribute that holds an op's or a function's device (a string).
constexpr llvm::StringLiteral kDeviceAttrName = "kiln.device";

/// The kinds of device Kiln compiles for.
enum class DeviceType { CPU, GPU };

/// "CPU" or "GPU".
llvm::StringRef stringifyDeviceType(DeviceType type);

/// A device name, fully or partially specified.
struct DeviceName {
  std::optional<std::string> job;
  std::optional<int64_t> replica, task;
  std::optional<DeviceType> type;
  std::optional<int64_t> index;

  /// The job, replica and task of the process that runs an artifact.
  static constexpr llvm::StringLiteral kLocalJob = "localhost";

  /// Parses `text` (the empty string is the empty specification). On error,
  /// returns nullopt and sets `error` to a sentence that quotes `text`.
  static std::optional<DeviceName> parse(llvm::StringRef text, std::string &error);

  /// The local task's device of `type` and `index`.
  static DeviceName local(DeviceType type, int64_t index);

  /// Every field is given.
  bool isFull() const { return job && replica && task && type && index; }

  /// The job, replica and task are unset or the local ones.
  bool isLocal() const;

  /// Fills the unset fields: the local task, `type` when none is named, and
  /// device index 0.
  DeviceName completed(DeviceType defaultType) const;

  /// The canonical text of the given fields ("/job:localhost/replica:0/
  /// task:0/device:CPU:0" when full; "" when empty).
  std::string str() const;

  /// The short form of a local device ("cpu:0", "gpu:1"), as the runtime
  /// and kiln-run name devices.
  std::string shortName() const;

  /// A C-identifier-safe short form ("cpu0", "gpu1") for symbol names.
  std::string symbolSuffix() const;

  bool operator==(const DeviceName &other) const {
    return job == other.job && replica == other.replica && task == other.task &&
           type == other.type && index == other.index;
  }
};

/// Orders full device names: CPUs before GPUs, then by index (then job,
/// replica, task), so partitions come out in a stable order.
bool deviceLess(const DeviceName &a, const DeviceName &b);

} // namespace kiln

#endif // KILN_DIALECTS_KILN_DEVICE_H
