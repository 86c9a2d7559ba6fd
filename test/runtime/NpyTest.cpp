// Tests for the .npy reader/writer: round trips, header variants and malformed files.
#include "TestUtil.h"
#include "kiln/tensor.h"

#include <gtest/gtest.h>

#include <cstring>

using kiln::rt::Error;
using kiln::rt::Tensor;

namespace {

// A .npy file as NumPy lays it out: magic, version 1.0, header padded to 64 bytes, data.
std::string npyBytes(const std::string &dict, const std::string &data, int major = 1) {
  std::size_t preamble = major == 1 ? 10 : 12;
  std::string header = dict;
  while ((preamble + header.size() + 1) % 64)
    header += ' ';
  header += '\n';
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(major);
  out += '\0';
  for (std::size_t i = 0; i < (major == 1 ? 2u : 4u); ++i)
    out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

template <typename T> std::string rawBytes(std::initializer_list<T> values) {
  std::string out;
  for (T value : values)
    out.append(reinterpret_cast<const char *>(&value), sizeof value);
  return out;
}

std::string errorOf(const std::string &bytes) {
  try {
    kiln::rt::parseNpy(bytes, "in.npy");
  } catch (const Error &e) {
    return e.what();
  }
  return "no error";
}

Tensor roundTrip(const Tensor &tensor) {
  return kiln::rt::parseNpy(kiln::rt::serializeNpy(tensor), "roundtrip.npy");
}

} // namespace

TEST(Npy, RoundTripFloat32) {
  Tensor tensor(KILN_DTYPE_F32, {2, 3});
  float *values = tensor.dataAs<float>();
  for (int i = 0; i < 6; ++i)
    values[i] = 0.5f * static_cast<float>(i) - 1.0f;
  std::string bytes = kiln::rt::serializeNpy(tensor);
  // np.save aligns the start of the data to 64 bytes.
  EXPECT_EQ((bytes.size() - tensor.byteSize()) % 64, 0u);
  EXPECT_NE(bytes.find("'descr': '<f4'"), std::string::npos);
  EXPECT_NE(bytes.find("'shape': (2, 3)"), std::string::npos);
  Tensor back = kiln::rt::parseNpy(bytes, "x.npy");
  EXPECT_EQ(back.dtype(), KILN_DTYPE_F32);
  EXPECT_EQ(back.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(std::memcmp(back.data(), tensor.data(), tensor.byteSize()), 0);
}

TEST(Npy, RoundTripIntegerTypesAndRankOne) {
  Tensor i64(KILN_DTYPE_I64, {3});
  i64.dataAs<int64_t>()[0] = -5;
  i64.dataAs<int64_t>()[2] = INT64_MAX;
  std::string bytes = kiln::rt::serializeNpy(i64);
  EXPECT_NE(bytes.find("'shape': (3,)"), std::string::npos);
  Tensor back = kiln::rt::parseNpy(bytes, "i.npy");
  EXPECT_EQ(back.dtype(), KILN_DTYPE_I64);
  EXPECT_EQ(back.dataAs<int64_t>()[0], -5);
  EXPECT_EQ(back.dataAs<int64_t>()[2], INT64_MAX);

  for (kiln_dtype dtype : {KILN_DTYPE_I32, KILN_DTYPE_I16, KILN_DTYPE_I8, KILN_DTYPE_U8,
                           KILN_DTYPE_U16, KILN_DTYPE_U32, KILN_DTYPE_U64, KILN_DTYPE_F64,
                           KILN_DTYPE_F16}) {
    Tensor tensor(dtype, {4, 1});
    for (std::size_t b = 0; b < tensor.byteSize(); ++b)
      static_cast<uint8_t *>(tensor.data())[b] = static_cast<uint8_t>(b * 7 + 1);
    Tensor copy = roundTrip(tensor);
    EXPECT_EQ(copy.dtype(), dtype) << kiln::rt::dtypeName(dtype);
    EXPECT_EQ(copy.shape(), tensor.shape());
    EXPECT_EQ(std::memcmp(copy.data(), tensor.data(), tensor.byteSize()), 0);
  }
}

TEST(Npy, BoolScalar) {
  Tensor flag(KILN_DTYPE_BOOL, {});
  flag.dataAs<uint8_t>()[0] = 1;
  std::string bytes = kiln::rt::serializeNpy(flag);
  EXPECT_NE(bytes.find("'descr': '|b1'"), std::string::npos);
  EXPECT_NE(bytes.find("'shape': ()"), std::string::npos);
  Tensor back = kiln::rt::parseNpy(bytes, "flag.npy");
  EXPECT_EQ(back.dtype(), KILN_DTYPE_BOOL);
  EXPECT_EQ(back.rank(), 0);
  EXPECT_EQ(back.numElements(), 1);
  EXPECT_EQ(back.dataAs<uint8_t>()[0], 1);
}

TEST(Npy, BoolBytesAreNormalized) {
  Tensor back = kiln::rt::parseNpy(
      npyBytes("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", std::string("\0\2\1", 3)),
      "b.npy");
  EXPECT_EQ(back.dataAs<uint8_t>()[0], 0);
  EXPECT_EQ(back.dataAs<uint8_t>()[1], 1);
  EXPECT_EQ(back.dataAs<uint8_t>()[2], 1);
}

TEST(Npy, EmptyTensor) {
  Tensor empty(KILN_DTYPE_F32, {2, 0});
  Tensor back = roundTrip(empty);
  EXPECT_EQ(back.shape(), (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(back.numElements(), 0);
  EXPECT_NE(back.data(), nullptr);
}

TEST(Npy, Bfloat16IsWrittenAsU16Bits) {
  Tensor bf(KILN_DTYPE_BF16, {2});
  bf.dataAs<uint16_t>()[0] = 0x3f80; // 1.0
  bf.dataAs<uint16_t>()[1] = 0xc000; // -2.0
  std::string bytes = kiln::rt::serializeNpy(bf);
  EXPECT_NE(bytes.find("'<u2'"), std::string::npos);
  Tensor back = kiln::rt::parseNpy(bytes, "bf.npy");
  EXPECT_EQ(back.dtype(), KILN_DTYPE_U16);
  back.reinterpret(KILN_DTYPE_BF16);
  EXPECT_EQ(back.elementAsDouble(0), 1.0);
  EXPECT_EQ(back.elementAsDouble(1), -2.0);
  EXPECT_THROW(back.reinterpret(KILN_DTYPE_F32), Error);
}

TEST(Npy, ReadsHandWrittenHeadersAndVersion2) {
  Tensor v1 = kiln::rt::parseNpy(
      npyBytes("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", rawBytes<int32_t>({7, -8})),
      "v1.npy");
  EXPECT_EQ(v1.dtype(), KILN_DTYPE_I32);
  EXPECT_EQ(v1.dataAs<int32_t>()[1], -8);

  // Key order is free, double quotes and Python 2 long suffixes occur in old files.
  Tensor v2 = kiln::rt::parseNpy(
      npyBytes("{\"shape\": (1L, 2L), \"fortran_order\": False, \"descr\": \"<f8\"}",
               rawBytes<double>({1.5, 2.5}), 2),
      "v2.npy");
  EXPECT_EQ(v2.dtype(), KILN_DTYPE_F64);
  EXPECT_EQ(v2.shape(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(v2.dataAs<double>()[1], 2.5);
}

TEST(Npy, RejectsFortranOrder) {
  std::string message = errorOf(npyBytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
                                         std::string(24, '\0')));
  EXPECT_NE(message.find("in.npy: Fortran-ordered"), std::string::npos) << message;
  // With one non-trivial dimension both orders are the same bytes.
  EXPECT_NO_THROW(kiln::rt::parseNpy(
      npyBytes("{'descr': '<f4', 'fortran_order': True, 'shape': (1, 3), }", std::string(12, '\0')),
      "in.npy"));
}

TEST(Npy, RejectsBadInput) {
  EXPECT_NE(errorOf("hello").find("in.npy: not a .npy file"), std::string::npos);
  EXPECT_NE(errorOf(npyBytes("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }",
                             std::string(4, '\0')))
                .find("big-endian"),
            std::string::npos);
  EXPECT_NE(errorOf(npyBytes("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }",
                             std::string(8, '\0')))
                .find("unsupported .npy dtype '<c8'"),
            std::string::npos);
  EXPECT_NE(errorOf(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                             std::string(20, '\0')))
                .find("in.npy: truncated .npy data (f32[2x3] needs 24 bytes, file has 20)"),
            std::string::npos);
  EXPECT_NE(errorOf(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }",
                             std::string(8, '\0')))
                .find("unexpected bytes"),
            std::string::npos);
  EXPECT_NE(errorOf(npyBytes("{'descr': '<f4', 'shape': (1,), }", std::string(4, '\0')))
                .find("malformed .npy header"),
            std::string::npos);
  EXPECT_NE(errorOf(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", ""))
                .find("malformed .npy header"),
            std::string::npos);
  // A header that claims an absurd shape must fail on size, not try to allocate it.
  EXPECT_NE(errorOf(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }",
                             ""))
                .find("in.npy"),
            std::string::npos);
  std::string cut = kiln::rt::serializeNpy(Tensor(KILN_DTYPE_F32, {4}));
  EXPECT_NE(errorOf(cut.substr(0, 20)).find("truncated .npy header"), std::string::npos);
}

TEST(Npy, FileErrorsNameThePath) {
  kiln::test::TempDir dir;
  try {
    kiln::rt::readNpy(dir.file("absent.npy"));
    FAIL() << "expected an error";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find(dir.file("absent.npy") + ": cannot read: No such file"), std::string::npos);
  }
  Tensor tensor(KILN_DTYPE_I8, {2});
  tensor.dataAs<int8_t>()[1] = -3;
  kiln::rt::writeNpy(tensor, dir.file("t.npy"));
  Tensor back = kiln::rt::readTensorFile(dir.file("t.npy"));
  EXPECT_EQ(back.dataAs<int8_t>()[1], -3);
  EXPECT_THROW(kiln::rt::readTensorFile(dir.file("t.bin")), Error);
}
