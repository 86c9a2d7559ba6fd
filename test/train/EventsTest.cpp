// Tests for CRC-32C and TensorBoard event files: the writer, the reader, and the reader against
// a file written by stock TensorBoard (Inputs/golden.tfevents, from make_golden_events.py).
#include "kiln/train/events.h"
#include "kiln/tensor.h"
#include "kiln/train/crc32c.h"

#include <gtest/gtest.h>

#include <sys/resource.h>

#include <cfloat>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using kiln::rt::Error;
using namespace kiln::train;
namespace fs = std::filesystem;

std::string readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// The message of the Error readEvents throws on `path`, or "" if it reads the file.
std::string readError(const std::string &path) {
  try {
    readEvents(path);
  } catch (const Error &error) {
    return error.what();
  }
  return "";
}

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

class EventsTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string pattern = (fs::path(::testing::TempDir()) / "kiln-events-XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  // A file with a few events of each kind; returns its path.
  std::string writeSample() {
    EventWriter writer = EventWriter::create(dir_ + "/run");
    writer.scalar("loss", 1, 2.0, 100.0);
    writer.scalar("loss", 2, 1.0, 101.0);
    const float weights[] = {-1.0f, 0.5f, 3.0f};
    writer.histogram("weights", 2, weights, 3, 102.0);
    writer.sessionStart(2, 103.0);
    writer.flush();
    return writer.path();
  }

  std::string dir_;
};

//===----------------------------------------------------------------------===//
// CRC-32C
//===----------------------------------------------------------------------===//

TEST(Crc32cTest, KnownVectors) {
  EXPECT_EQ(crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(crc32c("", 0), 0u);
  // RFC 3720, appendix B.4.
  std::vector<unsigned char> zeros(32, 0x00), ones(32, 0xff), ascending(32);
  for (int i = 0; i < 32; ++i)
    ascending[i] = static_cast<unsigned char>(i);
  EXPECT_EQ(crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
  EXPECT_EQ(crc32c(ones.data(), ones.size()), 0x62A8AB43u);
  EXPECT_EQ(crc32c(ascending.data(), ascending.size()), 0x46DD794Eu);
}

TEST(Crc32cTest, ExtendsAcrossCalls) {
  const char text[] = "123456789";
  EXPECT_EQ(crc32c(text + 4, 5, crc32c(text, 4)), crc32c(text, 9));
}

TEST(Crc32cTest, MaskedAsTFRecord) {
  uint32_t crc = 0xE3069283u;
  EXPECT_EQ(maskedCrc32c("123456789", 9), ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
}

//===----------------------------------------------------------------------===//
// Reading what stock TensorBoard wrote
//===----------------------------------------------------------------------===//

TEST(EventsGoldenTest, ReadsGoldenFile) {
  std::vector<Event> events = readEvents(KILN_TRAIN_TEST_INPUTS "/golden.tfevents");
  const double start = 1700000000.0;
  ASSERT_EQ(events.size(), 10u);

  EXPECT_EQ(events[0].fileVersion, "brain.Event:2");
  EXPECT_EQ(events[0].wallTime, start);
  EXPECT_TRUE(events[0].values.empty());

  EXPECT_EQ(events[1].sessionStatus, kSessionStatusStart);
  EXPECT_EQ(events[1].step, 1);
  EXPECT_EQ(events[1].wallTime, start + 0.5);

  const double loss[] = {2.5, 1.25, 0.625}, accuracy[] = {0.25, 0.5, 0.75};
  for (int i = 0; i < 3; ++i) {
    const Event &lossEvent = events[2 + 2 * i], &accuracyEvent = events[3 + 2 * i];
    for (const Event *event : {&lossEvent, &accuracyEvent}) {
      EXPECT_EQ(event->step, i + 1);
      EXPECT_EQ(event->wallTime, start + i + 1);
      EXPECT_EQ(event->sessionStatus, 0);
      ASSERT_EQ(event->values.size(), 1u);
      EXPECT_FALSE(event->values[0].histogram);
    }
    EXPECT_EQ(lossEvent.values[0].tag, "loss");
    EXPECT_EQ(lossEvent.values[0].simpleValue, loss[i]);
    EXPECT_EQ(accuracyEvent.values[0].tag, "accuracy");
    EXPECT_EQ(accuracyEvent.values[0].simpleValue, accuracy[i]);
  }

  // Written by tensorboard's scalar_pb: a float tensor in tensor_content, and metadata.
  ASSERT_EQ(events[8].values.size(), 1u);
  EXPECT_EQ(events[8].step, 3);
  EXPECT_EQ(events[8].values[0].tag, "learning_rate");
  EXPECT_EQ(events[8].values[0].simpleValue, 0.125);

  ASSERT_EQ(events[9].values.size(), 1u);
  const EventValue &weights = events[9].values[0];
  EXPECT_EQ(events[9].step, 3);
  EXPECT_EQ(events[9].wallTime, start + 3.5);
  EXPECT_EQ(weights.tag, "weights");
  EXPECT_FALSE(weights.simpleValue);
  ASSERT_TRUE(weights.histogram);
  EXPECT_EQ(weights.histogram->min, -1.0);
  EXPECT_EQ(weights.histogram->max, 2.0);
  EXPECT_EQ(weights.histogram->num, 6.0);
  EXPECT_EQ(weights.histogram->sum, 1.0);
  EXPECT_EQ(weights.histogram->sumSquares, 6.125);
  EXPECT_EQ(weights.histogram->bucketLimit, (std::vector<double>{-0.5, 0.0, 1.0, 2.0}));
  EXPECT_EQ(weights.histogram->bucket, (std::vector<double>{2, 1, 2, 1}));
}

//===----------------------------------------------------------------------===//
// Writer round trips
//===----------------------------------------------------------------------===//

TEST_F(EventsTest, CreatesDirectoryAndNamesFileForTensorBoard) {
  EventWriter writer = EventWriter::create(dir_ + "/a/b/c");
  fs::path path(writer.path());
  EXPECT_EQ(path.parent_path(), fs::path(dir_ + "/a/b/c"));
  EXPECT_EQ(path.filename().string().rfind("events.out.tfevents.", 0), 0u);
  EXPECT_EQ(path.extension(), ".kiln");
  writer.flush();
  std::vector<Event> events = readEvents(writer.path());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].fileVersion, "brain.Event:2");
  EXPECT_GT(events[0].wallTime, 1.5e9);
}

TEST_F(EventsTest, WritersInOneDirectoryGetTheirOwnFiles) {
  EventWriter first = EventWriter::create(dir_);
  EventWriter second = EventWriter::create(dir_);
  EXPECT_NE(first.path(), second.path());
}

TEST_F(EventsTest, ScalarsRoundTrip) {
  std::string path;
  {
    EventWriter writer = EventWriter::create(dir_);
    path = writer.path();
    writer.scalar("loss", 0, 0.5, 10.25);
    writer.scalar("loss", -3, -1.5, 11.0);
    writer.scalar("train/accuracy", int64_t(1) << 40, 0.1, 12.0);
    // Closing without flush() still writes the buffer out.
  }
  std::vector<Event> events = readEvents(path);
  ASSERT_EQ(events.size(), 4u);
  struct Expected {
    const char *tag;
    int64_t step;
    double value, wallTime;
  } expected[] = {{"loss", 0, 0.5, 10.25},
                  {"loss", -3, -1.5, 11.0},
                  {"train/accuracy", int64_t(1) << 40, 0.1f, 12.0}};
  for (int i = 0; i < 3; ++i) {
    const Event &event = events[i + 1];
    EXPECT_EQ(event.step, expected[i].step);
    EXPECT_EQ(event.wallTime, expected[i].wallTime);
    ASSERT_EQ(event.values.size(), 1u);
    EXPECT_EQ(event.values[0].tag, expected[i].tag);
    // simple_value is a float.
    EXPECT_EQ(event.values[0].simpleValue, expected[i].value);
  }
}

TEST_F(EventsTest, HistogramRoundTrip) {
  std::vector<float> values = {-3.0f, -0.5f, 0.0f, 0.0f,  1e-13f,
                               0.25f, 0.25f, 7.0f, 1e30f, -2e-20f};
  EventWriter writer = EventWriter::create(dir_);
  writer.histogram("weights", 5, values.data(), values.size(), 50.0);
  writer.flush();
  std::vector<Event> events = readEvents(writer.path());
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].step, 5);
  ASSERT_EQ(events[1].values.size(), 1u);
  ASSERT_TRUE(events[1].values[0].histogram);
  const Histogram &histogram = *events[1].values[0].histogram;

  double sum = 0, sumSquares = 0;
  for (float value : values) {
    sum += value;
    sumSquares += double(value) * value;
  }
  EXPECT_EQ(histogram.num, values.size());
  EXPECT_EQ(histogram.min, -3.0);
  EXPECT_EQ(histogram.max, double(1e30f));
  EXPECT_DOUBLE_EQ(histogram.sum, sum);
  EXPECT_DOUBLE_EQ(histogram.sumSquares, sumSquares);

  ASSERT_EQ(histogram.bucketLimit.size(), histogram.bucket.size());
  ASSERT_FALSE(histogram.bucket.empty());
  EXPECT_TRUE(std::is_sorted(histogram.bucketLimit.begin(), histogram.bucketLimit.end()));
  EXPECT_GT(histogram.bucket.front(), 0);
  EXPECT_GT(histogram.bucket.back(), 0);
  // Every value lies in the bucket [bucketLimit[i - 1], bucketLimit[i]) that counts it.
  std::vector<double> recount(histogram.bucket.size(), 0);
  for (float value : values) {
    std::size_t i = std::upper_bound(histogram.bucketLimit.begin(), histogram.bucketLimit.end(),
                                     double(value)) -
                    histogram.bucketLimit.begin();
    ASSERT_LT(i, recount.size()) << value;
    recount[i] += 1;
  }
  EXPECT_EQ(recount, histogram.bucket);
  // TensorFlow's limits: 0 separates the negatives from [0, 1e-12).
  EXPECT_NE(std::find(histogram.bucketLimit.begin(), histogram.bucketLimit.end(), 1e-12),
            histogram.bucketLimit.end());
}

TEST_F(EventsTest, HistogramSkipsNonFiniteValues) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const float mixed[] = {nan, inf, 1.5f, -inf, 2.5f};
  const float none[] = {nan, -inf};
  EventWriter writer = EventWriter::create(dir_);
  writer.histogram("mixed", 1, mixed, 5, 1.0);
  writer.histogram("none", 1, none, 2, 1.0);
  writer.histogram("empty", 1, nullptr, 0, 1.0);
  writer.flush();
  std::vector<Event> events = readEvents(writer.path());
  ASSERT_EQ(events.size(), 4u);

  const Histogram &mixedHistogram = *events[1].values.at(0).histogram;
  EXPECT_EQ(mixedHistogram.num, 2);
  EXPECT_EQ(mixedHistogram.min, 1.5);
  EXPECT_EQ(mixedHistogram.max, 2.5);
  EXPECT_EQ(mixedHistogram.sum, 4.0);
  double counted = 0;
  for (double count : mixedHistogram.bucket)
    counted += count;
  EXPECT_EQ(counted, 2);

  for (int i : {2, 3}) {
    const Histogram &empty = *events[i].values.at(0).histogram;
    EXPECT_EQ(empty.num, 0);
    EXPECT_EQ(empty.min, 0);
    EXPECT_EQ(empty.max, 0);
    EXPECT_EQ(empty.bucket, std::vector<double>{0.0});
    EXPECT_EQ(empty.bucketLimit.size(), 1u);
  }
}

TEST_F(EventsTest, SessionStartRoundTrip) {
  std::vector<Event> events = readEvents(writeSample());
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(events[4].sessionStatus, kSessionStatusStart);
  EXPECT_EQ(events[4].step, 2);
  EXPECT_EQ(events[4].wallTime, 103.0);
  EXPECT_TRUE(events[4].values.empty());
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(events[i].sessionStatus, 0);
}

TEST_F(EventsTest, MovedWriterKeepsWriting) {
  EventWriter first = EventWriter::create(dir_);
  first.scalar("a", 1, 1.0, 1.0);
  EventWriter second = std::move(first);
  second.scalar("a", 2, 2.0, 2.0);
  EventWriter third = EventWriter::create(dir_ + "/other");
  third = std::move(second);
  third.scalar("a", 3, 3.0, 3.0);
  third.flush();
  EXPECT_EQ(readEvents(third.path()).size(), 4u);
  EXPECT_THROW(first.scalar("a", 4, 4.0, 4.0), Error);
}

//===----------------------------------------------------------------------===//
// Failures
//===----------------------------------------------------------------------===//

TEST_F(EventsTest, FlippedByteNamesFileAndOffset) {
  std::string path = writeSample();
  std::string bytes = readBytes(path);
  std::string broken = dir_ + "/flipped.tfevents";
  // The length, the length's CRC, the data and the data's CRC of the second record.
  std::size_t secondRecord = 12 + (bytes[0] & 0xff) + 4;
  for (std::size_t at : {secondRecord + 2, secondRecord + 9, secondRecord + 20,
                         secondRecord + 12 + (bytes[secondRecord] & 0xff) + 1}) {
    std::string flipped = bytes;
    flipped[at] ^= 0x10;
    writeBytes(broken, flipped);
    std::string message = readError(broken);
    EXPECT_TRUE(contains(message, broken)) << message;
    EXPECT_TRUE(contains(message, "checksum")) << message;
    EXPECT_TRUE(contains(message, "at byte " + std::to_string(secondRecord))) << message;
  }
}

TEST_F(EventsTest, TruncatedFileNamesFile) {
  std::string bytes = readBytes(writeSample());
  std::string broken = dir_ + "/truncated.tfevents";
  writeBytes(broken, bytes.substr(0, bytes.size() - 3));
  std::string message = readError(broken);
  EXPECT_TRUE(contains(message, broken)) << message;
  EXPECT_TRUE(contains(message, "truncated")) << message;
}

TEST_F(EventsTest, EveryTruncationAndFlipIsCaught) {
  std::string bytes = readBytes(writeSample());
  std::string broken = dir_ + "/broken.tfevents";
  std::size_t recordEnds = 0;
  for (std::size_t size = 0; size < bytes.size(); ++size) {
    writeBytes(broken, bytes.substr(0, size));
    std::string message = readError(broken);
    if (message.empty())
      ++recordEnds;
    else
      EXPECT_TRUE(contains(message, broken)) << message;
  }
  // The empty prefix and the end of each record but the last.
  EXPECT_EQ(recordEnds, 5u);
  for (std::size_t at = 0; at < bytes.size(); ++at) {
    std::string flipped = bytes;
    flipped[at] ^= 0x01;
    writeBytes(broken, flipped);
    EXPECT_FALSE(readError(broken).empty()) << "flip at " << at;
  }
}

TEST_F(EventsTest, MissingFileNamesFile) {
  std::string missing = dir_ + "/missing.tfevents";
  EXPECT_TRUE(contains(readError(missing), missing));
}

TEST_F(EventsTest, UnwritableLogDirectoryNamesIt) {
  writeBytes(dir_ + "/file", "x");
  try {
    EventWriter::create(dir_ + "/file/run");
    FAIL() << "expected an Error";
  } catch (const Error &error) {
    EXPECT_TRUE(contains(error.what(), dir_ + "/file")) << error.what();
  }
}

// A full disk, simulated with the file size limit: the write fails with EFBIG (SIGXFSZ is
// ignored) and the writer must report it as an Error naming the file.
TEST_F(EventsTest, WriteFailureNamesFile) {
  EventWriter writer = EventWriter::create(dir_);
  writer.flush();
  rlimit saved;
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  if (saved.rlim_max != RLIM_INFINITY && saved.rlim_max < 4096)
    GTEST_SKIP() << "file size limit below 4096 bytes";
  auto savedHandler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit small = saved;
  small.rlim_cur = 4096;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string message;
  try {
    for (int step = 0; step < 10000; ++step)
      writer.scalar("loss", step, 1.0, 1.0);
    writer.flush();
  } catch (const Error &error) {
    message = error.what();
  }
  setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, savedHandler);
  EXPECT_TRUE(contains(message, writer.path())) << message;
}

//===----------------------------------------------------------------------===//
// Hand-encoded records: what other writers may send
//===----------------------------------------------------------------------===//

// Minimal protobuf encoding for building events Kiln's writer never writes.
struct Proto {
  std::string bytes;
  Proto &varint(uint64_t value) {
    for (; value >= 0x80; value >>= 7)
      bytes.push_back(static_cast<char>((value & 0x7f) | 0x80));
    bytes.push_back(static_cast<char>(value));
    return *this;
  }
  Proto &tag(uint32_t field, uint32_t wireType) { return varint(uint64_t(field) << 3 | wireType); }
  Proto &raw(const void *data, std::size_t size) {
    bytes.append(static_cast<const char *>(data), size);
    return *this;
  }
  Proto &message(uint32_t field, const std::string &inner) {
    tag(field, 2).varint(inner.size());
    return raw(inner.data(), inner.size());
  }
};

std::string frame(const std::string &data) {
  std::string record(12, '\0');
  uint64_t length = data.size();
  std::memcpy(&record[0], &length, 8);
  uint32_t lengthCrc = maskedCrc32c(record.data(), 8);
  std::memcpy(&record[8], &lengthCrc, 4);
  uint32_t dataCrc = maskedCrc32c(data.data(), data.size());
  record += data;
  record.append(reinterpret_cast<const char *>(&dataCrc), 4);
  return record;
}

TEST_F(EventsTest, ReadsTensorScalarsAndSkipsUnknownFields) {
  float lr = 0.25f;
  double momentum = 0.875;
  float pair[2] = {1.0f, 2.0f};
  Proto floatTensor, doubleTensor, vectorTensor, shape, dim;
  floatTensor.tag(1, 0).varint(1).message(2, "").tag(5, 2).varint(4).raw(&lr, 4);
  doubleTensor.tag(1, 0).varint(2).tag(6, 1).raw(&momentum, 8);
  dim.tag(1, 0).varint(2);
  shape.message(2, dim.bytes);
  vectorTensor.tag(1, 0).varint(1).message(2, shape.bytes).tag(5, 2).varint(8).raw(pair, 8);

  Proto lrValue, momentumValue, vectorValue, summary, event;
  lrValue.message(1, "lr").message(9, "metadata").message(8, floatTensor.bytes);
  momentumValue.message(8, doubleTensor.bytes).message(1, "momentum").tag(15, 5).raw("abcd", 4);
  vectorValue.message(1, "vector").message(8, vectorTensor.bytes).tag(7, 2).varint(0);
  summary.message(1, lrValue.bytes).message(1, momentumValue.bytes).message(1, vectorValue.bytes);
  double wallTime = 42.5;
  event.tag(1, 1).raw(&wallTime, 8).tag(2, 0).varint(7);
  // An unknown group holding an unknown varint, and an unknown fixed64 field.
  event.tag(99, 3).tag(1, 0).varint(300).tag(99, 4).tag(100, 1).raw(&wallTime, 8);
  event.message(5, summary.bytes);

  std::string path = dir_ + "/foreign.tfevents";
  writeBytes(path, frame(event.bytes));
  std::vector<Event> events = readEvents(path);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].wallTime, 42.5);
  EXPECT_EQ(events[0].step, 7);
  ASSERT_EQ(events[0].values.size(), 3u);
  EXPECT_EQ(events[0].values[0].tag, "lr");
  EXPECT_EQ(events[0].values[0].simpleValue, 0.25);
  EXPECT_EQ(events[0].values[1].tag, "momentum");
  EXPECT_EQ(events[0].values[1].simpleValue, 0.875);
  EXPECT_EQ(events[0].values[2].tag, "vector");
  EXPECT_FALSE(events[0].values[2].simpleValue);
}

TEST_F(EventsTest, MalformedEventNamesFileAndOffset) {
  Proto event;
  event.tag(5, 2).varint(100).raw("short", 5);
  std::string path = dir_ + "/malformed.tfevents";
  writeBytes(path, frame(event.bytes));
  std::string message = readError(path);
  EXPECT_TRUE(contains(message, path)) << message;
  EXPECT_TRUE(contains(message, "malformed event at byte 12")) << message;
}

TEST_F(EventsTest, GarbageWithValidChecksumsNeverCrashes) {
  std::mt19937 random(1234);
  std::string path = dir_ + "/garbage.tfevents";
  for (int trial = 0; trial < 3000; ++trial) {
    std::string data(random() % 64, '\0');
    for (char &byte : data)
      byte = static_cast<char>(random());
    // Half the trials start from a real summary value so the decoder gets past the first tag.
    if (trial % 2)
      data = Proto().message(5, Proto().message(1, data).bytes).bytes;
    writeBytes(path, frame(data));
    try {
      readEvents(path);
    } catch (const Error &error) {
      EXPECT_TRUE(contains(error.what(), path)) << error.what();
    }
  }
}

} // namespace
