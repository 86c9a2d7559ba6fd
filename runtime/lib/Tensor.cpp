// Tensor storage, element formatting, whole-file IO and format dispatch by file extension.
#include "kiln/tensor.h"

#include "kiln/files.h"

#include <algorithm>
#include <cerrno>
#include <cctype>
#include <charconv>
#include <cstring>
#include <limits>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kiln::rt {
namespace {

std::size_t roundUpToAlignment(std::size_t bytes) {
  std::size_t alignment = KILN_BUFFER_ALIGNMENT;
  return (std::max<std::size_t>(bytes, 1) + alignment - 1) / alignment * alignment;
}

template <typename T> T load(const void *base, int64_t index) {
  T value;
  std::memcpy(&value, static_cast<const uint8_t *>(base) + index * sizeof(T), sizeof(T));
  return value;
}

template <typename T> std::string shortestText(T value) {
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  return std::string(buffer, result.ptr);
}

std::string lowerExtension(const std::string &path) {
  std::size_t slash = path.find_last_of('/');
  std::size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash))
    return {};
  std::string ext = path.substr(dot);
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext;
}

} // namespace

Tensor::Tensor() : storage_(static_cast<uint8_t *>(std::aligned_alloc(KILN_BUFFER_ALIGNMENT,
                                                                      KILN_BUFFER_ALIGNMENT))) {
  if (!storage_)
    throw std::bad_alloc();
}

Tensor::Tensor(DType dtype, std::vector<int64_t> shape, std::string name)
    : dtype_(dtype), shape_(std::move(shape)), name_(std::move(name)) {
  std::string what = name_.empty() ? std::string("tensor") : "tensor '" + name_ + "'";
  std::size_t elementSize = dtypeSize(dtype_);
  if (elementSize == 0)
    throw Error(what + ": invalid dtype");
  numElements_ = checkedNumElements(shape_, what);
  // Leave headroom for the alignment round-up so the allocation size cannot wrap.
  if (static_cast<uint64_t>(numElements_) >
      (std::numeric_limits<std::size_t>::max() / 2) / elementSize)
    throw Error(what + ": " + typeString() + " is too large to allocate");
  byteSize_ = static_cast<std::size_t>(numElements_) * elementSize;
  std::size_t allocation = roundUpToAlignment(byteSize_);
  storage_.reset(static_cast<uint8_t *>(std::aligned_alloc(KILN_BUFFER_ALIGNMENT, allocation)));
  if (!storage_)
    throw Error(what + ": cannot allocate " + std::to_string(byteSize_) + " bytes for " +
                typeString());
  std::memset(storage_.get(), 0, allocation);
}

Tensor::Tensor(const Tensor &other)
    : dtype_(other.dtype_), shape_(other.shape_), numElements_(other.numElements_),
      byteSize_(other.byteSize_), name_(other.name_) {
  std::size_t allocation = roundUpToAlignment(byteSize_);
  storage_.reset(static_cast<uint8_t *>(std::aligned_alloc(KILN_BUFFER_ALIGNMENT, allocation)));
  if (!storage_)
    throw std::bad_alloc();
  if (other.storage_)
    std::memcpy(storage_.get(), other.storage_.get(), allocation);
}

Tensor &Tensor::operator=(const Tensor &other) {
  if (this != &other)
    *this = Tensor(other);
  return *this;
}

void Tensor::reinterpret(DType dtype) {
  if (dtypeSize(dtype) != dtypeSize(dtype_) || dtypeSize(dtype) == 0)
    throw Error("cannot reinterpret " + typeString() + " as " + std::string(dtypeName(dtype)) +
                ": element sizes differ");
  dtype_ = dtype;
}

double Tensor::elementAsDouble(int64_t index) const {
  const void *base = data();
  switch (dtype_) {
  case KILN_DTYPE_F32: return load<float>(base, index);
  case KILN_DTYPE_F16: return halfToFloat(load<uint16_t>(base, index));
  case KILN_DTYPE_BF16: return bfloat16ToFloat(load<uint16_t>(base, index));
  case KILN_DTYPE_F64: return load<double>(base, index);
  case KILN_DTYPE_I64: return static_cast<double>(load<int64_t>(base, index));
  case KILN_DTYPE_I32: return load<int32_t>(base, index);
  case KILN_DTYPE_I16: return load<int16_t>(base, index);
  case KILN_DTYPE_I8: return load<int8_t>(base, index);
  case KILN_DTYPE_U8: return load<uint8_t>(base, index);
  case KILN_DTYPE_U16: return load<uint16_t>(base, index);
  case KILN_DTYPE_U32: return load<uint32_t>(base, index);
  case KILN_DTYPE_U64: return static_cast<double>(load<uint64_t>(base, index));
  case KILN_DTYPE_BOOL: return load<uint8_t>(base, index) ? 1.0 : 0.0;
  case KILN_DTYPE_INVALID: break;
  }
  return 0.0;
}

std::string Tensor::formatElement(int64_t index) const {
  const void *base = data();
  switch (dtype_) {
  case KILN_DTYPE_F32: return shortestText(load<float>(base, index));
  case KILN_DTYPE_F16: return shortestText(halfToFloat(load<uint16_t>(base, index)));
  case KILN_DTYPE_BF16: return shortestText(bfloat16ToFloat(load<uint16_t>(base, index)));
  case KILN_DTYPE_F64: return shortestText(load<double>(base, index));
  case KILN_DTYPE_I64: return std::to_string(load<int64_t>(base, index));
  case KILN_DTYPE_I32: return std::to_string(load<int32_t>(base, index));
  case KILN_DTYPE_I16: return std::to_string(load<int16_t>(base, index));
  case KILN_DTYPE_I8: return std::to_string(load<int8_t>(base, index));
  case KILN_DTYPE_U8: return std::to_string(load<uint8_t>(base, index));
  case KILN_DTYPE_U16: return std::to_string(load<uint16_t>(base, index));
  case KILN_DTYPE_U32: return std::to_string(load<uint32_t>(base, index));
  case KILN_DTYPE_U64: return std::to_string(load<uint64_t>(base, index));
  case KILN_DTYPE_BOOL: return load<uint8_t>(base, index) ? "true" : "false";
  case KILN_DTYPE_INVALID: break;
  }
  return "?";
}

Tensor readNpy(const std::string &path) { return parseNpy(readFileBytes(path), path); }

void writeNpy(const Tensor &tensor, const std::string &path) {
  writeFileAtomically(path, serializeNpy(tensor));
}

Tensor readTensorProto(const std::string &path) {
  return parseTensorProto(readFileBytes(path), path);
}

void writeTensorProto(const Tensor &tensor, const std::string &path) {
  writeFileAtomically(path, serializeTensorProto(tensor));
}

std::optional<TensorFileFormat> tensorFileFormat(const std::string &path) {
  std::string ext = lowerExtension(path);
  if (ext == ".npy")
    return TensorFileFormat::Npy;
  if (ext == ".pb")
    return TensorFileFormat::TensorProto;
  return std::nullopt;
}

Tensor readTensorFile(const std::string &path) {
  std::optional<TensorFileFormat> format = tensorFileFormat(path);
  if (!format)
    throw Error(path + ": unknown tensor file type (expected a .npy or .pb file)");
  return *format == TensorFileFormat::Npy ? readNpy(path) : readTensorProto(path);
}

void writeTensorFile(const Tensor &tensor, const std::string &path, TensorFileFormat format) {
  if (format == TensorFileFormat::Npy)
    writeNpy(tensor, path);
  else
    writeTensorProto(tensor, path);
}

} // namespace kiln::rt
