// Host tensors for Kiln tools: aligned dense storage plus .npy and ONNX TensorProto (.pb) IO.
#ifndef KILN_TENSOR_H
#define KILN_TENSOR_H

#include "kiln/files.h"
#include "kiln/runtime.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::rt {

// Every runtime failure; what() is one line that names the file or tensor involved.
class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

using DType = kiln_dtype;

// Manifest spelling of a dtype ("f32"); "invalid" for unknown values.
std::string_view dtypeName(DType dtype);
// Bytes per element; 0 for KILN_DTYPE_INVALID.
std::size_t dtypeSize(DType dtype);
std::optional<DType> parseDType(std::string_view name);
bool isFloatingPoint(DType dtype);

// "64x784", or "scalar" for rank 0.
std::string shapeString(const std::vector<int64_t> &shape);
// "f32[64x784]", or "bool[scalar]".
std::string typeString(DType dtype, const std::vector<int64_t> &shape);
// Product of the dims; throws Error naming `what` on negative dims or int64 overflow.
int64_t checkedNumElements(const std::vector<int64_t> &shape, std::string_view what);

float halfToFloat(uint16_t bits);
float bfloat16ToFloat(uint16_t bits);

// A dense, row-major tensor whose storage is KILN_BUFFER_ALIGNMENT-aligned (and non-null even
// when empty), so it can be handed to kiln_artifact_run without staging.
class Tensor {
public:
  Tensor();
  // Zero-filled storage; throws Error if the size overflows.
  Tensor(DType dtype, std::vector<int64_t> shape, std::string name = {});
  Tensor(const Tensor &other);
  Tensor &operator=(const Tensor &other);
  Tensor(Tensor &&) noexcept = default;
  Tensor &operator=(Tensor &&) noexcept = default;

  DType dtype() const { return dtype_; }
  const std::vector<int64_t> &shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t numElements() const { return numElements_; }
  std::size_t byteSize() const { return byteSize_; }
  const std::string &name() const { return name_; }
  void setName(std::string name) { name_ = std::move(name); }
  std::string typeString() const { return kiln::rt::typeString(dtype_, shape_); }

  void *data() { return storage_.get(); }
  const void *data() const { return storage_.get(); }
  template <typename T> T *dataAs() { return static_cast<T *>(data()); }
  template <typename T> const T *dataAs() const { return static_cast<const T *>(data()); }

  // Re-labels the element type without touching the bytes (e.g. u16 bits read from .npy as
  // bf16); the element sizes must match.
  void reinterpret(DType dtype);

  // Element i widened to double (integers and bool included); for printing and comparison.
  double elementAsDouble(int64_t index) const;
  // Element i as text: shortest round-trip for floats, exact for integers.
  std::string formatElement(int64_t index) const;

private:
  struct FreeDeleter {
    void operator()(void *p) const { std::free(p); }
  };

  DType dtype_ = KILN_DTYPE_INVALID;
  std::vector<int64_t> shape_;
  int64_t numElements_ = 0;
  std::size_t byteSize_ = 0;
  std::string name_;
  std::unique_ptr<uint8_t, FreeDeleter> storage_;
};


// NumPy .npy (format 1.0/2.0/3.0 headers, little-endian, C order). bf16 has no NumPy dtype: it is
// written as <u2 raw bits and read back as u16 (see Tensor::reinterpret).
Tensor parseNpy(std::string_view bytes, const std::string &source);
std::string serializeNpy(const Tensor &tensor);
// The .npy header alone (magic, version, dict, padding): serializeNpy minus the data.
std::string npyHeader(const Tensor &tensor);
Tensor readNpy(const std::string &path);
void writeNpy(const Tensor &tensor, const std::string &path);

// ONNX TensorProto, decoded straight from the protobuf wire format. The tensor keeps the proto's
// name; serialization writes dims, data_type, name and raw_data.
Tensor parseTensorProto(std::string_view bytes, const std::string &source);
std::string serializeTensorProto(const Tensor &tensor);
Tensor readTensorProto(const std::string &path);
void writeTensorProto(const Tensor &tensor, const std::string &path);

// ONNX TensorProto.DataType code for a dtype, and back (nullopt when Kiln has no such dtype).
int onnxDataType(DType dtype);
std::optional<DType> dtypeFromOnnx(int code);

enum class TensorFileFormat { Npy, TensorProto };
// By extension (.npy / .pb, case-insensitive); nullopt for anything else.
std::optional<TensorFileFormat> tensorFileFormat(const std::string &path);
Tensor readTensorFile(const std::string &path);
void writeTensorFile(const Tensor &tensor, const std::string &path, TensorFileFormat format);

} // namespace kiln::rt

#endif // KILN_TENSOR_H
