// Element types: names, sizes, ONNX codes and float16/bfloat16 decoding, for C and C++ callers.
#include "kiln/runtime.h"
#include "kiln/tensor.h"

#include <cstring>
#include <limits>

namespace kiln::rt {
namespace {

struct DTypeRow {
  DType dtype;
  const char *name;
  std::size_t size;
  int onnx; // TensorProto.DataType
};

// One table keeps the manifest spelling, size and ONNX code from drifting apart.
constexpr DTypeRow kDTypes[] = {
    {KILN_DTYPE_F32, "f32", 4, 1},   {KILN_DTYPE_F16, "f16", 2, 10},
    {KILN_DTYPE_BF16, "bf16", 2, 16}, {KILN_DTYPE_F64, "f64", 8, 11},
    {KILN_DTYPE_I64, "i64", 8, 7},   {KILN_DTYPE_I32, "i32", 4, 6},
    {KILN_DTYPE_I16, "i16", 2, 5},   {KILN_DTYPE_I8, "i8", 1, 3},
    {KILN_DTYPE_U8, "u8", 1, 2},     {KILN_DTYPE_U16, "u16", 2, 4},
    {KILN_DTYPE_U32, "u32", 4, 12},  {KILN_DTYPE_U64, "u64", 8, 13},
    {KILN_DTYPE_BOOL, "bool", 1, 9},
};

const DTypeRow *findRow(int code) {
  for (const DTypeRow &row : kDTypes)
    if (static_cast<int>(row.dtype) == code)
      return &row;
  return nullptr;
}

const DTypeRow *findRow(DType dtype) { return findRow(static_cast<int>(dtype)); }

// A C caller may pass any int as a kiln_dtype, but in C++ loading an enum whose value is outside
// its enumerators' range is undefined: the C entry points read the argument's bytes instead.
static_assert(sizeof(kiln_dtype) == sizeof(int));
int codeOf(const kiln_dtype &dtype) {
  int code;
  std::memcpy(&code, &dtype, sizeof code);
  return code;
}

} // namespace

std::string_view dtypeName(DType dtype) {
  const DTypeRow *row = findRow(dtype);
  return row ? row->name : "invalid";
}

std::size_t dtypeSize(DType dtype) {
  const DTypeRow *row = findRow(dtype);
  return row ? row->size : 0;
}

std::optional<DType> parseDType(std::string_view name) {
  for (const DTypeRow &row : kDTypes)
    if (name == row.name)
      return row.dtype;
  return std::nullopt;
}

bool isFloatingPoint(DType dtype) {
  return dtype == KILN_DTYPE_F32 || dtype == KILN_DTYPE_F16 || dtype == KILN_DTYPE_BF16 ||
         dtype == KILN_DTYPE_F64;
}

int onnxDataType(DType dtype) {
  const DTypeRow *row = findRow(dtype);
  return row ? row->onnx : 0;
}

std::optional<DType> dtypeFromOnnx(int code) {
  for (const DTypeRow &row : kDTypes)
    if (row.onnx == code)
      return row.dtype;
  return std::nullopt;
}

std::string shapeString(const std::vector<int64_t> &shape) {
  if (shape.empty())
    return "scalar";
  std::string out;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i)
      out += 'x';
    out += std::to_string(shape[i]);
  }
  return out;
}

std::string typeString(DType dtype, const std::vector<int64_t> &shape) {
  return std::string(dtypeName(dtype)) + "[" + shapeString(shape) + "]";
}

int64_t checkedNumElements(const std::vector<int64_t> &shape, std::string_view what) {
  int64_t count = 1;
  for (int64_t dim : shape) {
    if (dim < 0)
      throw Error(std::string(what) + ": negative dimension " + std::to_string(dim));
    if (dim != 0 && count > std::numeric_limits<int64_t>::max() / dim)
      throw Error(std::string(what) + ": shape " + shapeString(shape) + " has too many elements");
    count *= dim;
  }
  return count;
}

float halfToFloat(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  uint32_t out;
  if (exponent == 0x1f) {
    out = sign | 0x7f800000u | (mantissa << 13); // inf / NaN (payload kept)
  } else if (exponent != 0) {
    out = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    out = sign;
  } else {
    // Subnormal half: renormalize into a normal float.
    int shift = 0;
    while (!(mantissa & 0x400u)) {
      mantissa <<= 1;
      ++shift;
    }
    mantissa &= 0x3ffu;
    out = sign | (static_cast<uint32_t>(113 - shift) << 23) | (mantissa << 13);
  }
  float f;
  std::memcpy(&f, &out, sizeof f);
  return f;
}

float bfloat16ToFloat(uint16_t bits) {
  uint32_t out = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &out, sizeof f);
  return f;
}

} // namespace kiln::rt

extern "C" {

size_t kiln_dtype_size(kiln_dtype dtype) {
  const kiln::rt::DTypeRow *row = kiln::rt::findRow(kiln::rt::codeOf(dtype));
  return row ? row->size : 0;
}

const char *kiln_dtype_name(kiln_dtype dtype) {
  const kiln::rt::DTypeRow *row = kiln::rt::findRow(kiln::rt::codeOf(dtype));
  return row ? row->name : "invalid";
}

kiln_dtype kiln_dtype_from_name(const char *name) {
  if (!name)
    return KILN_DTYPE_INVALID;
  return kiln::rt::parseDType(name).value_or(KILN_DTYPE_INVALID);
}

int64_t kiln_tensor_info_num_elements(const kiln_tensor_info *info) {
  if (!info || info->rank < 0 || (info->rank > 0 && !info->dims))
    return -1;
  int64_t count = 1;
  for (int i = 0; i < info->rank; ++i) {
    int64_t dim = info->dims[i];
    if (dim < 0 || (dim != 0 && count > std::numeric_limits<int64_t>::max() / dim))
      return -1;
    count *= dim;
  }
  return count;
}

int64_t kiln_tensor_info_byte_size(const kiln_tensor_info *info) {
  int64_t count = kiln_tensor_info_num_elements(info);
  int64_t size = static_cast<int64_t>(kiln_dtype_size(info ? info->dtype : KILN_DTYPE_INVALID));
  if (count < 0 || size == 0 || (count != 0 && count > std::numeric_limits<int64_t>::max() / size))
    return -1;
  return count * size;
}

} // extern "C"
