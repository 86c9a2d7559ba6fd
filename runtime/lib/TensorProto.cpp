// ONNX TensorProto (.pb) reader/writer working directly on the protobuf wire format.
#include "ProtoWire.h"
#include "kiln/tensor.h"

#include <cstring>
#include <limits>

namespace kiln::rt {
namespace {

using namespace wire;

// TensorProto field numbers (onnx.proto).
enum Field : uint32_t {
  kDims = 1,
  kDataType = 2,
  kSegment = 3,
  kFloatData = 4,
  kInt32Data = 5,
  kStringData = 6,
  kInt64Data = 7,
  kName = 8,
  kRawData = 9,
  kDoubleData = 10,
  kUint64Data = 11,
  kDataLocation = 14,
};

constexpr int kOnnxString = 8;
constexpr int kDataLocationExternal = 1;

const char *onnxTypeName(int code) {
  static const char *const names[] = {
      "UNDEFINED", "FLOAT",   "UINT8",     "INT8",       "UINT16",        "INT16",
      "INT32",     "INT64",   "STRING",    "BOOL",       "FLOAT16",       "DOUBLE",
      "UINT32",    "UINT64",  "COMPLEX64", "COMPLEX128", "BFLOAT16",      "FLOAT8E4M3FN",
      "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4", "INT4", "FLOAT4E2M1"};
  if (code >= 0 && code < static_cast<int>(sizeof names / sizeof names[0]))
    return names[code];
  return "unknown";
}

struct RawProto {
  std::vector<int64_t> dims;
  int dataType = 0;
  std::string name;
  std::vector<float> floatData;
  std::vector<int32_t> int32Data;
  std::vector<int64_t> int64Data;
  std::vector<uint64_t> uint64Data;
  std::vector<double> doubleData;
  std::optional<std::string_view> rawData;
  std::size_t stringCount = 0;
  bool segmented = false;
  bool external = false;
};

RawProto decode(std::string_view bytes, const std::string &source) {
  RawProto proto;
  WireReader reader(bytes, source, "TensorProto");
  uint32_t field, wireType;
  auto expectWire = [&](uint32_t expected) { reader.expectWireType(field, wireType, expected); };
  while (reader.tag(field, wireType)) {
    switch (field) {
    case kDims:
      readRepeated(reader, field, wireType, kVarint, [&](WireReader &r) {
        proto.dims.push_back(static_cast<int64_t>(r.varint()));
      });
      break;
    case kDataType:
      expectWire(kVarint);
      proto.dataType = static_cast<int32_t>(reader.varint());
      break;
    case kSegment:
      expectWire(kLengthDelimited);
      reader.lengthDelimited(field);
      proto.segmented = true;
      break;
    case kFloatData:
      readRepeated(reader, field, wireType, kFixed32, [&](WireReader &r) {
        proto.floatData.push_back(fromBits<float>(r.fixed32()));
      });
      break;
    case kInt32Data:
      readRepeated(reader, field, wireType, kVarint, [&](WireReader &r) {
        // int32 is sign-extended to 64 bits on the wire; the low half is the value.
        proto.int32Data.push_back(static_cast<int32_t>(static_cast<uint32_t>(r.varint())));
      });
      break;
    case kStringData:
      expectWire(kLengthDelimited);
      reader.lengthDelimited(field);
      ++proto.stringCount;
      break;
    case kInt64Data:
      readRepeated(reader, field, wireType, kVarint, [&](WireReader &r) {
        proto.int64Data.push_back(static_cast<int64_t>(r.varint()));
      });
      break;
    case kName:
      expectWire(kLengthDelimited);
      proto.name = std::string(reader.lengthDelimited(field));
      break;
    case kRawData:
      expectWire(kLengthDelimited);
      proto.rawData = reader.lengthDelimited(field);
      break;
    case kDoubleData:
      readRepeated(reader, field, wireType, kFixed64, [&](WireReader &r) {
        proto.doubleData.push_back(fromBits<double>(r.fixed64()));
      });
      break;
    case kUint64Data:
      readRepeated(reader, field, wireType, kVarint,
                   [&](WireReader &r) { proto.uint64Data.push_back(r.varint()); });
      break;
    case kDataLocation:
      expectWire(kVarint);
      proto.external = reader.varint() == kDataLocationExternal;
      break;
    default:
      reader.skip(field, wireType);
      break;
    }
  }
  return proto;
}

template <typename Out, typename In>
void narrowInto(Tensor &tensor, const std::vector<In> &values, int64_t lo, int64_t hi,
                const char *fieldName, const std::string &what) {
  Out *out = tensor.dataAs<Out>();
  for (std::size_t i = 0; i < values.size(); ++i) {
    int64_t value = static_cast<int64_t>(values[i]);
    if (value < lo || value > hi)
      throw Error(what + ": " + fieldName + " value " + std::to_string(value) + " at index " +
                  std::to_string(i) + " is out of range for " + std::string(dtypeName(tensor.dtype())));
    out[i] = static_cast<Out>(value);
  }
}

void appendVarint(std::string &out, uint64_t value) {
  while (value >= 0x80) {
    out += static_cast<char>((value & 0x7f) | 0x80);
    value >>= 7;
  }
  out += static_cast<char>(value);
}

void appendTag(std::string &out, uint32_t field, uint32_t wireType) {
  appendVarint(out, (static_cast<uint64_t>(field) << 3) | wireType);
}

} // namespace

Tensor parseTensorProto(std::string_view bytes, const std::string &source) {
  RawProto proto = decode(bytes, source);
  std::string what = source;
  if (!proto.name.empty())
    what += " (tensor '" + proto.name + "')";

  if (proto.stringCount || proto.dataType == kOnnxString)
    throw Error(what + ": string tensors are not supported");
  if (proto.external)
    throw Error(what + ": tensors with external data are not supported");
  if (proto.segmented)
    throw Error(what + ": segmented tensors are not supported (or this is a SequenceProto or "
                       "OptionalProto, which Kiln does not read)");
  if (proto.dataType == 0)
    throw Error(what + ": TensorProto has no data_type");
  std::optional<DType> dtype = dtypeFromOnnx(proto.dataType);
  if (!dtype)
    throw Error(what + ": unsupported ONNX data type " + std::to_string(proto.dataType) + " (" +
                onnxTypeName(proto.dataType) + ")");

  int64_t count = checkedNumElements(proto.dims, what);
  std::size_t elementSize = dtypeSize(*dtype);
  std::string type = typeString(*dtype, proto.dims);

  struct Typed {
    const char *name;
    std::size_t size;
  };
  const Typed typed[] = {{"float_data", proto.floatData.size()},
                         {"int32_data", proto.int32Data.size()},
                         {"int64_data", proto.int64Data.size()},
                         {"uint64_data", proto.uint64Data.size()},
                         {"double_data", proto.doubleData.size()}};

  if (proto.rawData) {
    for (const Typed &field : typed)
      if (field.size)
        throw Error(what + ": TensorProto has both raw_data and " + field.name);
    if (static_cast<uint64_t>(count) > proto.rawData->size() / elementSize ||
        static_cast<uint64_t>(count) * elementSize != proto.rawData->size())
      throw Error(what + ": raw_data has " + std::to_string(proto.rawData->size()) + " bytes, " +
                  type + " needs " + std::to_string(count) + " x " + std::to_string(elementSize));
    Tensor tensor(*dtype, proto.dims, proto.name);
    if (tensor.byteSize())
      std::memcpy(tensor.data(), proto.rawData->data(), tensor.byteSize());
    if (*dtype == KILN_DTYPE_BOOL) {
      uint8_t *values = tensor.dataAs<uint8_t>();
      for (int64_t i = 0; i < count; ++i)
        values[i] = values[i] != 0;
    }
    return tensor;
  }

  // Which typed field onnx.proto assigns to each element type.
  const char *expected;
  switch (*dtype) {
  case KILN_DTYPE_F32: expected = "float_data"; break;
  case KILN_DTYPE_F64: expected = "double_data"; break;
  case KILN_DTYPE_I64: expected = "int64_data"; break;
  case KILN_DTYPE_U32:
  case KILN_DTYPE_U64: expected = "uint64_data"; break;
  default: expected = "int32_data"; break;
  }
  std::size_t provided = 0;
  for (const Typed &field : typed) {
    if (std::strcmp(field.name, expected) == 0)
      provided = field.size;
    else if (field.size)
      throw Error(what + ": " + field.name + " is not valid for a " + std::string(dtypeName(*dtype)) +
                  " tensor (expected " + expected + " or raw_data)");
  }
  if (static_cast<uint64_t>(count) != provided)
    throw Error(what + ": " + expected + " has " + std::to_string(provided) + " values, " + type +
                " needs " + std::to_string(count));

  Tensor tensor(*dtype, proto.dims, proto.name);
  if (count == 0)
    return tensor;
  constexpr int64_t kMin32 = std::numeric_limits<int32_t>::min();
  constexpr int64_t kMax32 = std::numeric_limits<int32_t>::max();
  switch (*dtype) {
  case KILN_DTYPE_F32:
    std::memcpy(tensor.data(), proto.floatData.data(), tensor.byteSize());
    break;
  case KILN_DTYPE_F64:
    std::memcpy(tensor.data(), proto.doubleData.data(), tensor.byteSize());
    break;
  case KILN_DTYPE_I64:
    std::memcpy(tensor.data(), proto.int64Data.data(), tensor.byteSize());
    break;
  case KILN_DTYPE_U64:
    std::memcpy(tensor.data(), proto.uint64Data.data(), tensor.byteSize());
    break;
  case KILN_DTYPE_U32: {
    uint32_t *out = tensor.dataAs<uint32_t>();
    for (std::size_t i = 0; i < proto.uint64Data.size(); ++i) {
      if (proto.uint64Data[i] > std::numeric_limits<uint32_t>::max())
        throw Error(what + ": uint64_data value " + std::to_string(proto.uint64Data[i]) +
                    " at index " + std::to_string(i) + " is out of range for u32");
      out[i] = static_cast<uint32_t>(proto.uint64Data[i]);
    }
    break;
  }
  case KILN_DTYPE_I32: narrowInto<int32_t>(tensor, proto.int32Data, kMin32, kMax32, "int32_data", what); break;
  case KILN_DTYPE_I16: narrowInto<int16_t>(tensor, proto.int32Data, -32768, 32767, "int32_data", what); break;
  case KILN_DTYPE_I8: narrowInto<int8_t>(tensor, proto.int32Data, -128, 127, "int32_data", what); break;
  case KILN_DTYPE_U16: narrowInto<uint16_t>(tensor, proto.int32Data, 0, 65535, "int32_data", what); break;
  case KILN_DTYPE_U8: narrowInto<uint8_t>(tensor, proto.int32Data, 0, 255, "int32_data", what); break;
  case KILN_DTYPE_F16:
  case KILN_DTYPE_BF16:
    // Raw 16-bit patterns; some writers sign-extend them, so keep the low 16 bits of either form.
    narrowInto<uint16_t>(tensor, proto.int32Data, -32768, 65535, "int32_data", what);
    break;
  case KILN_DTYPE_BOOL: {
    uint8_t *out = tensor.dataAs<uint8_t>();
    for (std::size_t i = 0; i < proto.int32Data.size(); ++i)
      out[i] = proto.int32Data[i] != 0;
    break;
  }
  case KILN_DTYPE_INVALID: break;
  }
  return tensor;
}

std::string serializeTensorProto(const Tensor &tensor) {
  int code = onnxDataType(tensor.dtype());
  if (code == 0)
    throw Error("cannot write a tensor of dtype " + std::string(dtypeName(tensor.dtype())) +
                " as a TensorProto");
  std::string out;
  for (int64_t dim : tensor.shape()) {
    appendTag(out, kDims, kVarint);
    appendVarint(out, static_cast<uint64_t>(dim));
  }
  appendTag(out, kDataType, kVarint);
  appendVarint(out, static_cast<uint64_t>(code));
  if (!tensor.name().empty()) {
    appendTag(out, kName, kLengthDelimited);
    appendVarint(out, tensor.name().size());
    out += tensor.name();
  }
  // raw_data even when empty, so readers see where the (zero) elements live.
  appendTag(out, kRawData, kLengthDelimited);
  appendVarint(out, tensor.byteSize());
  out.append(static_cast<const char *>(tensor.data()), tensor.byteSize());
  return out;
}

} // namespace kiln::rt
