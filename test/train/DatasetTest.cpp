// Data sets: IDX (plain and gzip), .npy, the epoch order, label checks, conversion.
#include "kiln/train/dataset.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <unistd.h>
#include <vector>

namespace kiln::train {
namespace {

using rt::Error;
using rt::Tensor;

class DatasetTest : public ::testing::Test {
protected:
  // Every file a test names here is removed when the test ends, whether the
  // test wrote it or the code under test did.
  std::string path(const std::string &name) {
    std::string p = ::testing::TempDir() + "kiln-dataset-" + std::to_string(getpid()) + "-" + name;
    files_.push_back(p);
    return p;
  }
  void TearDown() override {
    for (const std::string &p : files_)
      std::remove(p.c_str());
  }
  std::string write(const std::string &name, const std::string &bytes) {
    std::string p = path(name);
    rt::writeFileAtomically(p, bytes);
    return p;
  }
  // IDX of u8 [2, 2, 3]: 0, 1, ..., 11.
  static std::string idxU8() {
    std::string b{0, 0, 0x08, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 3};
    for (char i = 0; i < 12; ++i)
      b += i;
    return b;
  }

private:
  std::vector<std::string> files_;
};

TEST_F(DatasetTest, ReadsIdx) {
  Tensor t = readArray(write("u8.idx", idxU8()));
  EXPECT_EQ(t.dtype(), KILN_DTYPE_U8);
  EXPECT_EQ(t.shape(), (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ(t.dataAs<uint8_t>()[11], 11);
}

TEST_F(DatasetTest, ReadsBigEndianIdx) {
  // i32 [2]: 258 and -2, big-endian.
  std::string b{0, 0, 0x0C, 1, 0, 0, 0, 2, 0, 0, 1, 2};
  b += std::string{'\xff', '\xff', '\xff', '\xfe'};
  Tensor t = readArray(write("i32.idx", b));
  ASSERT_EQ(t.dtype(), KILN_DTYPE_I32);
  EXPECT_EQ(t.dataAs<int32_t>()[0], 258);
  EXPECT_EQ(t.dataAs<int32_t>()[1], -2);
}

TEST_F(DatasetTest, ReadsGzipIdx) {
  std::string p = path("u8.idx.gz");
  gzFile gz = gzopen(p.c_str(), "wb");
  ASSERT_NE(gz, nullptr);
  std::string bytes = idxU8();
  gzwrite(gz, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(gz);
  Tensor t = readArray(p);
  EXPECT_EQ(t.shape(), (std::vector<int64_t>{2, 2, 3}));
  EXPECT_EQ(t.dataAs<uint8_t>()[7], 7);

  // Cut short, the gzip stream says so and names the file.
  std::string whole = rt::readFileBytes(p);
  std::string cut = write("cut.idx.gz", whole.substr(0, whole.size() / 2));
  try {
    readArray(cut);
    FAIL() << "a truncated gzip file was read";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find(cut), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
  }
}

TEST_F(DatasetTest, RefusesTruncatedIdxAndWrongMagic) {
  std::string bytes = idxU8();
  std::string cut = write("cut.idx", bytes.substr(0, bytes.size() - 3));
  try {
    readArray(cut);
    FAIL();
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(cut), std::string::npos) << e.what();
  }
  std::string png = write("image.png", "\x89PNG\r\n\x1a\n....");
  try {
    readArray(png);
    FAIL();
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("wrong magic"), std::string::npos) << e.what();
  }
  std::string badType = write("type.idx", std::string{0, 0, 0x07, 1, 0, 0, 0, 1, 5});
  EXPECT_THROW(readArray(badType), Error);
  EXPECT_THROW(readArray(path("missing")), Error);
}

TEST_F(DatasetTest, RefusesAHugeHeaderBeforeAllocating) {
  // u8 [0x0FFFFFFF, 256]: 64 GiB declared by a 12-byte file.
  std::string p = write("huge.idx", std::string{0, 0, 0x08, 2, 0x0F, '\xff', '\xff', '\xff', 0, 0, 1, 0});
  try {
    readArray(p);
    FAIL();
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find(p + ": IDX header says u8[268435455x256]"),
              std::string::npos) << e.what();
  }
}

TEST_F(DatasetTest, RefusesGzipThatInflatesPastItsHeader) {
  // A header declaring 2 bytes of data, followed by a megabyte of zeros.
  std::string p = path("bomb.idx.gz");
  gzFile gz = gzopen(p.c_str(), "wb");
  ASSERT_NE(gz, nullptr);
  std::string bytes{0, 0, 0x08, 1, 0, 0, 0, 2};
  bytes.append(1 << 20, '\0');
  gzwrite(gz, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(gz);
  try {
    readArray(p);
    FAIL();
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("inflates past the 10 bytes its IDX header declares"),
              std::string::npos) << e.what();
  }
}

TEST_F(DatasetTest, ReadsNpy) {
  Tensor labels(KILN_DTYPE_I64, {3});
  labels.dataAs<int64_t>()[2] = 9;
  std::string p = path("labels.npy");
  rt::writeNpy(labels, p);
  Tensor t = readArray(p);
  EXPECT_EQ(t.dtype(), KILN_DTYPE_I64);
  EXPECT_EQ(t.dataAs<int64_t>()[2], 9);
}

TEST_F(DatasetTest, EpochOrderIsAFixedPermutation) {
  // Values from an independent implementation of the documented definition
  // (the Python one in bench/fashion_mnist.py).
  EXPECT_EQ(epochOrder(10, 0, 0), (std::vector<int64_t>{4, 9, 2, 5, 1, 7, 6, 0, 3, 8}));
  EXPECT_EQ(epochOrder(10, 42, 3), (std::vector<int64_t>{5, 9, 8, 2, 7, 4, 1, 6, 0, 3}));
  std::vector<int64_t> order = epochOrder(1000, 7, 1);
  EXPECT_NE(order, epochOrder(1000, 7, 2));
  std::sort(order.begin(), order.end());
  for (int64_t i = 0; i < 1000; ++i)
    ASSERT_EQ(order[i], i);
}

TEST_F(DatasetTest, ConvertsAndChecksLabels) {
  Tensor images = readArray(write("u8.idx", idxU8()));
  Tensor f = convertArray(images, KILN_DTYPE_F32, 0.5, "images");
  EXPECT_FLOAT_EQ(f.dataAs<float>()[11], 5.5f);
  Tensor labels = convertArray(images, KILN_DTYPE_I64, 1.0, "labels");
  EXPECT_EQ(labels.dataAs<int64_t>()[11], 11);
  EXPECT_NO_THROW(checkLabels(images, 12, "labels.idx"));
  try {
    checkLabels(images, 10, "labels.idx");
    FAIL();
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "labels.idx: label 10 is 10, outside the model's 10 classes [0, 9]");
  }
  Tensor tooLarge(KILN_DTYPE_F64, {1});
  tooLarge.dataAs<double>()[0] = 0x1p63; // one past int64's largest
  EXPECT_THROW(convertArray(tooLarge, KILN_DTYPE_I64, 1.0, "labels"), Error);
  Tensor fractional(KILN_DTYPE_F32, {1});
  fractional.dataAs<float>()[0] = 0.5f;
  EXPECT_THROW(convertArray(fractional, KILN_DTYPE_I64, 1.0, "labels"), Error);
}

TEST_F(DatasetTest, GathersRowsAndZeroesTheRest) {
  Tensor images = readArray(write("u8.idx", idxU8())); // rows of 6
  Tensor batch(KILN_DTYPE_U8, {3, 6});
  std::fill_n(batch.dataAs<uint8_t>(), 18, 77);
  int64_t rows[] = {1, 0};
  gatherRows(images, rows, 2, batch);
  EXPECT_EQ(batch.dataAs<uint8_t>()[0], 6);
  EXPECT_EQ(batch.dataAs<uint8_t>()[6], 0);
  EXPECT_EQ(batch.dataAs<uint8_t>()[11], 5);
  EXPECT_EQ(batch.dataAs<uint8_t>()[12], 0); // the padding row
}

} // namespace
} // namespace kiln::train
