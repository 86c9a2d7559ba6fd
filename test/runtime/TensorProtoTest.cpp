// Tests for the hand-written ONNX TensorProto decoder/encoder, on hand-built wire bytes and real files.
#include "TestUtil.h"
#include "kiln/tensor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>

using kiln::rt::Error;
using kiln::rt::Tensor;

namespace {

// Minimal protobuf encoder for building test inputs.
class Wire {
public:
  Wire &varint(uint64_t value) {
    while (value >= 0x80) {
      bytes_ += static_cast<char>((value & 0x7f) | 0x80);
      value >>= 7;
    }
    bytes_ += static_cast<char>(value);
    return *this;
  }
  Wire &tag(uint32_t field, uint32_t wireType) { return varint((uint64_t(field) << 3) | wireType); }
  Wire &field(uint32_t number, uint64_t value) { return tag(number, 0).varint(value); }
  Wire &bytes(uint32_t number, const std::string &data) {
    tag(number, 2).varint(data.size());
    bytes_ += data;
    return *this;
  }
  Wire &fixed32(uint32_t number, uint32_t value) {
    tag(number, 5);
    bytes_.append(reinterpret_cast<const char *>(&value), 4);
    return *this;
  }
  Wire &fixed64(uint32_t number, uint64_t value) {
    tag(number, 1);
    bytes_.append(reinterpret_cast<const char *>(&value), 8);
    return *this;
  }
  Wire &raw(const std::string &data) {
    bytes_ += data;
    return *this;
  }
  const std::string &str() const { return bytes_; }

private:
  std::string bytes_;
};

template <typename T> std::string le(std::initializer_list<T> values) {
  std::string out;
  for (T value : values)
    out.append(reinterpret_cast<const char *>(&value), sizeof value);
  return out;
}

std::string packedVarints(std::initializer_list<uint64_t> values) {
  Wire wire;
  for (uint64_t value : values)
    wire.varint(value);
  return wire.str();
}

Tensor parse(const std::string &bytes) { return kiln::rt::parseTensorProto(bytes, "t.pb"); }

std::string errorOf(const std::string &bytes) {
  try {
    parse(bytes);
  } catch (const Error &e) {
    return e.what();
  }
  return "no error";
}

uint32_t floatBits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}

} // namespace

TEST(TensorProto, PackedFloatData) {
  Wire wire;
  wire.field(1, 2).field(1, 3).field(2, 1).bytes(8, "x").bytes(4, le<float>({1, 2, 3, 4, 5, -6.5f}));
  Tensor tensor = parse(wire.str());
  EXPECT_EQ(tensor.name(), "x");
  EXPECT_EQ(tensor.dtype(), KILN_DTYPE_F32);
  EXPECT_EQ(tensor.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(tensor.dataAs<float>()[0], 1.0f);
  EXPECT_EQ(tensor.dataAs<float>()[5], -6.5f);
}

TEST(TensorProto, UnpackedFloatDataAndPackedDims) {
  Wire wire;
  wire.bytes(1, packedVarints({3})).field(2, 1);
  for (float value : {0.25f, -1.0f, 8.0f})
    wire.fixed32(4, floatBits(value));
  Tensor tensor = parse(wire.str());
  EXPECT_EQ(tensor.shape(), (std::vector<int64_t>{3}));
  EXPECT_EQ(tensor.dataAs<float>()[0], 0.25f);
  EXPECT_EQ(tensor.dataAs<float>()[2], 8.0f);
}

TEST(TensorProto, Int64DimsAndNegativeInt64Data) {
  Wire wire;
  // Large dims need multi-byte varints; -7 is a 10-byte two's-complement varint.
  wire.field(1, 1).field(1, 300).field(2, 7).field(7, static_cast<uint64_t>(int64_t{-7}));
  for (int i = 1; i < 300; ++i)
    wire.field(7, static_cast<uint64_t>(i));
  Tensor tensor = parse(wire.str());
  EXPECT_EQ(tensor.dtype(), KILN_DTYPE_I64);
  EXPECT_EQ(tensor.shape(), (std::vector<int64_t>{1, 300}));
  EXPECT_EQ(tensor.dataAs<int64_t>()[0], -7);
  EXPECT_EQ(tensor.dataAs<int64_t>()[299], 299);
}

TEST(TensorProto, RawData) {
  Wire wire;
  wire.field(1, 2).field(2, 6).bytes(9, le<int32_t>({-1, 40000})).bytes(8, "idx");
  Tensor tensor = parse(wire.str());
  EXPECT_EQ(tensor.dtype(), KILN_DTYPE_I32);
  EXPECT_EQ(tensor.name(), "idx");
  EXPECT_EQ(tensor.dataAs<int32_t>()[0], -1);
  EXPECT_EQ(tensor.dataAs<int32_t>()[1], 40000);
}

TEST(TensorProto, Float16InInt32Data) {
  Wire wire;
  // 0x3c00 = 1.0, 0xc000 = -2.0, 0x7c00 = +inf; the last is the sign-extended form of 0xbc00 (-1).
  wire.field(1, 4).field(2, 10).bytes(5, packedVarints({0x3c00, 0xc000, 0x7c00,
                                                          static_cast<uint64_t>(int64_t{-17408})}));
  Tensor tensor = parse(wire.str());
  EXPECT_EQ(tensor.dtype(), KILN_DTYPE_F16);
  EXPECT_EQ(tensor.elementAsDouble(0), 1.0);
  EXPECT_EQ(tensor.elementAsDouble(1), -2.0);
  EXPECT_TRUE(std::isinf(tensor.elementAsDouble(2)));
  EXPECT_EQ(tensor.elementAsDouble(3), -1.0);
}

TEST(TensorProto, BoolAndSmallIntsInInt32Data) {
  Wire flags;
  flags.field(1, 3).field(2, 9).field(5, 0).field(5, 1).field(5, 1);
  Tensor b = parse(flags.str());
  EXPECT_EQ(b.dtype(), KILN_DTYPE_BOOL);
  EXPECT_EQ(b.dataAs<uint8_t>()[0], 0);
  EXPECT_EQ(b.dataAs<uint8_t>()[2], 1);

  Wire i8;
  i8.field(1, 2).field(2, 3).bytes(5, packedVarints({static_cast<uint64_t>(int64_t{-128}), 127}));
  Tensor small = parse(i8.str());
  EXPECT_EQ(small.dataAs<int8_t>()[0], -128);
  EXPECT_EQ(small.dataAs<int8_t>()[1], 127);

  Wire tooBig;
  tooBig.field(1, 1).field(2, 2).field(5, 300);
  EXPECT_NE(errorOf(tooBig.str()).find("int32_data value 300 at index 0 is out of range for u8"),
            std::string::npos);
}

TEST(TensorProto, DoubleAndUint64Data) {
  Wire doubles;
  uint64_t bits;
  double value = -0.125;
  std::memcpy(&bits, &value, 8);
  doubles.field(2, 11).fixed64(10, bits);
  Tensor d = parse(doubles.str());
  EXPECT_EQ(d.rank(), 0);
  EXPECT_EQ(d.dataAs<double>()[0], -0.125);

  Wire u32;
  u32.field(1, 2).field(2, 12).bytes(11, packedVarints({4000000000u, 5}));
  Tensor u = parse(u32.str());
  EXPECT_EQ(u.dtype(), KILN_DTYPE_U32);
  EXPECT_EQ(u.dataAs<uint32_t>()[0], 4000000000u);
}

TEST(TensorProto, SkipsUnknownFieldsOfEveryWireType) {
  Wire wire;
  wire.bytes(12, "a doc string")           // doc_string
      .field(99, 12345)                    // varint
      .fixed64(100, 0x1122334455667788ull) // 64-bit
      .fixed32(101, 0xdeadbeef)            // 32-bit
      .tag(102, 3)                         // group with nested content
      .field(1, 77)
      .tag(103, 3)
      .bytes(2, "zz")
      .tag(103, 4)
      .tag(102, 4)
      .bytes(13, Wire().bytes(1, "key").bytes(2, "value").str()); // external_data entry
  wire.field(1, 2).field(2, 1).bytes(8, "y").bytes(9, le<float>({1.5f, 2.5f}));
  Tensor tensor = parse(wire.str());
  EXPECT_EQ(tensor.name(), "y");
  EXPECT_EQ(tensor.shape(), (std::vector<int64_t>{2}));
  EXPECT_EQ(tensor.dataAs<float>()[1], 2.5f);
}

TEST(TensorProto, TruncatedAndMalformedInputFail) {
  Wire wire;
  wire.field(1, 2).field(1, 3).field(2, 1).bytes(8, "x").bytes(9, le<float>({1, 2, 3, 4, 5, 6}));
  const std::string &good = wire.str();
  ASSERT_EQ(parse(good).numElements(), 6);
  for (std::size_t cut : {good.size() - 1, good.size() - 12, std::size_t{7}, std::size_t{1}}) {
    std::string message = errorOf(good.substr(0, cut));
    EXPECT_EQ(message.rfind("t.pb", 0), 0u) << message;
  }
  EXPECT_NE(errorOf(good.substr(0, good.size() - 4)).find("truncated"), std::string::npos);
  EXPECT_NE(errorOf(std::string("\x08\xff\xff", 3)).find("truncated varint"), std::string::npos);
  EXPECT_NE(errorOf(Wire().tag(20, 6).str()).find("invalid wire type 6 for field 20"), std::string::npos);
  EXPECT_NE(errorOf(Wire().tag(1, 5).str()).find("field 1 has wire type 5"), std::string::npos);
  EXPECT_NE(errorOf(Wire().tag(50, 3).field(1, 1).str()).find("unterminated group"), std::string::npos);
  EXPECT_NE(errorOf(Wire().field(1, 3).field(2, 1).bytes(4, le<float>({1, 2})).str())
                .find("float_data has 2 values, f32[3] needs 3"),
            std::string::npos);
  EXPECT_NE(errorOf(Wire().field(1, 3).field(2, 1).bytes(9, le<float>({1, 2})).str())
                .find("raw_data has 8 bytes"),
            std::string::npos);
  EXPECT_NE(errorOf(Wire().field(2, 7).bytes(4, le<float>({1})).str()).find("float_data is not valid"),
            std::string::npos);
  EXPECT_NE(errorOf(Wire().field(1, 1).str()).find("no data_type"), std::string::npos);
  EXPECT_NE(errorOf(Wire().field(2, 14).str()).find("unsupported ONNX data type 14 (COMPLEX64)"),
            std::string::npos);
}

TEST(TensorProto, RejectsStrings) {
  Wire wire;
  wire.field(1, 1).field(2, 8).bytes(6, "hello").bytes(8, "s");
  EXPECT_EQ(errorOf(wire.str()), "t.pb (tensor 's'): string tensors are not supported");
}

TEST(TensorProto, RoundTripKeepsNameTypeAndData) {
  for (kiln_dtype dtype : {KILN_DTYPE_F32, KILN_DTYPE_F16, KILN_DTYPE_BF16, KILN_DTYPE_F64,
                           KILN_DTYPE_I64, KILN_DTYPE_I32, KILN_DTYPE_I16, KILN_DTYPE_I8,
                           KILN_DTYPE_U8, KILN_DTYPE_U16, KILN_DTYPE_U32, KILN_DTYPE_U64,
                           KILN_DTYPE_BOOL}) {
    Tensor tensor(dtype, {2, 2}, "out put");
    for (std::size_t b = 0; b < tensor.byteSize(); ++b)
      static_cast<uint8_t *>(tensor.data())[b] = dtype == KILN_DTYPE_BOOL ? b % 2 : uint8_t(b * 13 + 5);
    Tensor back = parse(kiln::rt::serializeTensorProto(tensor));
    EXPECT_EQ(back.dtype(), dtype) << kiln::rt::dtypeName(dtype);
    EXPECT_EQ(back.name(), "out put");
    EXPECT_EQ(back.shape(), tensor.shape());
    EXPECT_EQ(std::memcmp(back.data(), tensor.data(), tensor.byteSize()), 0);
  }
  Tensor scalar(KILN_DTYPE_I64, {});
  scalar.dataAs<int64_t>()[0] = -9;
  Tensor back = parse(kiln::rt::serializeTensorProto(scalar));
  EXPECT_EQ(back.rank(), 0);
  EXPECT_EQ(back.dataAs<int64_t>()[0], -9);
  EXPECT_EQ(back.name(), "");
}

TEST(TensorProto, ReadsRealOnnxTestData) {
  std::string dir = std::string(KILN_ONNX_NODE_DATA) + "/test_abs/test_data_set_0/";
  if (!std::ifstream(dir + "input_0.pb"))
    GTEST_SKIP() << "libonnx-testdata is not installed (" << dir << "input_0.pb)";
  Tensor x = kiln::rt::readTensorProto(dir + "input_0.pb");
  EXPECT_EQ(x.name(), "x");
  EXPECT_EQ(x.dtype(), KILN_DTYPE_F32);
  EXPECT_EQ(x.shape(), (std::vector<int64_t>{3, 4, 5}));
  Tensor y = kiln::rt::readTensorProto(dir + "output_0.pb");
  EXPECT_EQ(y.name(), "y");
  ASSERT_EQ(y.shape(), x.shape());
  // The reference output of Abs really is |x|.
  for (int64_t i = 0; i < x.numElements(); ++i)
    EXPECT_EQ(y.dataAs<float>()[i], std::fabs(x.dataAs<float>()[i])) << "index " << i;
}
