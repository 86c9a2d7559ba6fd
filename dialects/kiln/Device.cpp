//===- Device.cpp - TensorFlow-style device names -------------------------===//
#include "dialects/kiln/Device.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"

#include <tuple>

using namespace kiln;

llvm::StringRef kiln::stringifyDeviceType(DeviceType type) {
  return type == DeviceType::CPU ? "CPU" : "GPU";
}

namespace {
/// Parses the pieces of one device name, remembering the first problem.
class Parser {
public:
  Parser(llvm::StringRef text, std::string &error) : text(text), error(error) {}

  std::optional<DeviceName> run() {
    DeviceName name;
    if (text.empty())
      return name;
    if (!text.starts_with("/"))
      return fail("a device name starts with '/', as in /cpu:0, /gpu:1 or "
                  "/job:localhost/replica:0/task:0/device:GPU:0");
    llvm::SmallVector<llvm::StringRef> parts;
    text.drop_front().split(parts, '/');
    for (llvm::StringRef part : parts) {
      if (part.empty())
        return fail("empty field (two '/' in a row, or a trailing '/')");
      auto [key, value] = part.split(':');
      if (!part.contains(':'))
        return fail("'" + part.str() + "' is not a field; fields are job:NAME, replica:N, "
                    "task:N, device:TYPE:N, cpu:N and gpu:N");
      std::string lower = key.lower();
      if (lower == "job") {
        if (!parseJob(value, name))
          return std::nullopt;
      } else if (lower == "replica" || lower == "task") {
        std::optional<int64_t> &field = lower == "replica" ? name.replica : name.task;
        if (field)
          return fail("'" + lower + "' is given twice");
        if (!parseNumber(value, lower, field, /*allowAny=*/false))
          return std::nullopt;
      } else if (lower == "device") {
        auto [type, index] = value.split(':');
        if (!parseDevice(type, index, value.contains(':'), name))
          return std::nullopt;
      } else if (lower == "cpu" || lower == "gpu") {
        if (!parseDevice(key, value, /*hasIndex=*/true, name))
          return std::nullopt;
      } else {
        return fail("unknown field '" + key.str() + "'; fields are job:NAME, replica:N, "
                    "task:N, device:TYPE:N, cpu:N and gpu:N");
      }
    }
    return name;
  }

private:
  std::nullopt_t fail(const std::string &why) {
    error = "bad device name '" + text.str() + "': " + why;
    return std::nullopt;
  }

  bool parseJob(llvm::StringRef value, DeviceName &name) {
    if (name.job)
      return fail("'job' is given twice"), false;
    if (value == "*")
      return true;
    bool valid = !value.empty() && llvm::isAlpha(value.front()) &&
                 llvm::all_of(value, [](char c) { return llvm::isAlnum(c) || c == '_'; });
    if (!valid)
      return fail("job name '" + value.str() +
                  "' must start with a letter and hold only letters, digits and '_'"),
             false;
    name.job = value.str();
    return true;
  }

  bool parseNumber(llvm::StringRef value, llvm::StringRef what, std::optional<int64_t> &out,
                   bool allowAny) {
    if (allowAny && value == "*")
      return true;
    int64_t number;
    if (value.empty() || value.getAsInteger(10, number) || number < 0 ||
        !llvm::all_of(value, llvm::isDigit))
      return fail("'" + value.str() + "' is not a " + what.str() +
                  (allowAny ? " (a number, or * for any)" : " (a non-negative number)")),
             false;
    out = number;
    return true;
  }

  bool parseDevice(llvm::StringRef type, llvm::StringRef index, bool hasIndex,
                   DeviceName &name) {
    if (name.type || name.index)
      return fail("the device is given twice"), false;
    std::string upper = type.upper();
    if (upper == "CPU")
      name.type = DeviceType::CPU;
    else if (upper == "GPU")
      name.type = DeviceType::GPU;
    else if (type == "*" || type.empty())
      ; // any type
    else
      return fail("unknown device type '" + type.str() + "' (Kiln has CPU and GPU devices)"),
             false;
    if (!hasIndex)
      return true;
    return parseNumber(index, "device index", name.index, /*allowAny=*/true);
  }

  llvm::StringRef text;
  std::string &error;
};
} // namespace

std::optional<DeviceName> DeviceName::parse(llvm::StringRef text, std::string &error) {
  return Parser(text, error).run();
}

DeviceName DeviceName::local(DeviceType type, int64_t index) {
  DeviceName name;
  name.job = kLocalJob.str();
  name.replica = 0;
  name.task = 0;
  name.type = type;
  name.index = index;
  return name;
}

bool DeviceName::isLocal() const {
  return (!job || *job == kLocalJob) && (!replica || *replica == 0) && (!task || *task == 0);
}

DeviceName DeviceName::completed(DeviceType defaultType) const {
  DeviceName full = *this;
  if (!full.job)
    full.job = kLocalJob.str();
  if (!full.replica)
    full.replica = 0;
  if (!full.task)
    full.task = 0;
  if (!full.type)
    full.type = defaultType;
  if (!full.index)
    full.index = 0;
  return full;
}

std::string DeviceName::str() const {
  std::string text;
  if (job)
    text += "/job:" + *job;
  if (replica)
    text += "/replica:" + std::to_string(*replica);
  if (task)
    text += "/task:" + std::to_string(*task);
  if (type || index)
    text += "/device:" + (type ? stringifyDeviceType(*type).str() : std::string("*")) +
            (index ? ":" + std::to_string(*index) : std::string());
  return text;
}

std::string DeviceName::shortName() const {
  return (type ? stringifyDeviceType(*type).lower() : std::string("*")) + ":" +
         (index ? std::to_string(*index) : std::string("*"));
}

std::string DeviceName::symbolSuffix() const {
  std::string suffix = type ? stringifyDeviceType(*type).lower() : std::string("any");
  if (index)
    suffix += std::to_string(*index);
  if (!isLocal()) {
    // Remote devices keep their task in the name, so symbols stay unique.
    suffix = (job ? *job : std::string("any")) + "_r" +
             (replica ? std::to_string(*replica) : "") + "_t" +
             (task ? std::to_string(*task) : "") + "_" + suffix;
  }
  return suffix;
}

bool kiln::deviceLess(const DeviceName &a, const DeviceName &b) {
  auto key = [](const DeviceName &d) {
    return std::make_tuple(d.type ? static_cast<int>(*d.type) : -1, d.index.value_or(-1),
                           d.job.value_or(""), d.replica.value_or(-1), d.task.value_or(-1));
  };
  return key(a) < key(b);
}
