// TensorBoard event files: TFRecord framing around tensorflow.Event protobufs, encoded and
// decoded by hand on the wire format so that kiln_train needs no protobuf library.
#include "kiln/train/events.h"

#include "ProtoWire.h"
#include "kiln/tensor.h"
#include "kiln/train/crc32c.h"

#include <algorithm>
#include <cerrno>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <string_view>

#include <fcntl.h>
#include <unistd.h>

namespace kiln::train {

using rt::Error;
using namespace rt::wire;

namespace {

// Field numbers of tensorflow/core/util/event.proto, framework/summary.proto,
// framework/tensor.proto and framework/tensor_shape.proto.
namespace event_field {
// 6 is the deprecated log_message.
constexpr uint32_t kWallTime = 1, kStep = 2, kFileVersion = 3, kSummary = 5, kSessionLog = 7;
} // namespace event_field
namespace session_log_field {
constexpr uint32_t kStatus = 1;
}
namespace summary_field {
constexpr uint32_t kValue = 1;
}
namespace value_field {
constexpr uint32_t kTag = 1, kSimpleValue = 2, kHisto = 5, kTensor = 8;
}
namespace histo_field {
constexpr uint32_t kMin = 1, kMax = 2, kNum = 3, kSum = 4, kSumSquares = 5, kBucketLimit = 6,
                   kBucket = 7;
}
namespace tensor_field {
constexpr uint32_t kDtype = 1, kShape = 2, kContent = 4, kFloatVal = 5, kDoubleVal = 6;
}
namespace shape_field {
constexpr uint32_t kDim = 2, kUnknownRank = 3;
}
namespace dim_field {
constexpr uint32_t kSize = 1;
}

// tensorflow.DataType values a scalar summary may use.
constexpr uint64_t kDtFloat = 1, kDtDouble = 2;

// TFRecord: uint64 length, uint32 masked CRC of the length, data, uint32 masked CRC of the data.
constexpr std::size_t kRecordHeaderBytes = 12;
constexpr std::size_t kRecordFooterBytes = 4;
// Name collisions are only possible within one second and one process; this many is a bug.
constexpr int kMaxNameAttempts = 1000;

const char *const kFileVersion = "brain.Event:2";

void storeLittleEndian(unsigned char *out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out[i] = static_cast<unsigned char>(value >> (8 * i));
}

uint64_t loadLittleEndian(const unsigned char *in, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i)
    value |= static_cast<uint64_t>(in[i]) << (8 * i);
  return value;
}

//===----------------------------------------------------------------------===//
// Encoding
//===----------------------------------------------------------------------===//

// Appends protobuf fields to a byte string; nested messages are encoded first and added whole
// with message().
class ProtoWriter {
public:
  void doubleField(uint32_t field, double value) {
    tag(field, kFixed64);
    fixed(toBits<uint64_t>(value), 8);
  }
  void floatField(uint32_t field, float value) {
    tag(field, kFixed32);
    fixed(toBits<uint32_t>(value), 4);
  }
  // int64 fields encode negatives as their 64-bit two's complement.
  void int64Field(uint32_t field, int64_t value) {
    tag(field, kVarint);
    varint(static_cast<uint64_t>(value));
  }
  void bytesField(uint32_t field, std::string_view bytes) {
    tag(field, kLengthDelimited);
    varint(bytes.size());
    out_.append(bytes);
  }
  void message(uint32_t field, const ProtoWriter &inner) { bytesField(field, inner.out_); }
  void packedDoubles(uint32_t field, const std::vector<double> &values) {
    tag(field, kLengthDelimited);
    varint(values.size() * 8);
    for (double value : values)
      fixed(toBits<uint64_t>(value), 8);
  }

  const std::string &bytes() const { return out_; }

private:
  void tag(uint32_t field, WireType wireType) { varint(uint64_t(field) << 3 | wireType); }
  void varint(uint64_t value) {
    while (value >= 0x80) {
      out_.push_back(static_cast<char>((value & 0x7f) | 0x80));
      value >>= 7;
    }
    out_.push_back(static_cast<char>(value));
  }
  void fixed(uint64_t value, int bytes) {
    unsigned char buffer[8];
    storeLittleEndian(buffer, value, bytes);
    out_.append(reinterpret_cast<const char *>(buffer), bytes);
  }

  std::string out_;
};

// An Event holding one encoded message (a Summary or a SessionLog) in `field`.
std::string encodeEvent(double wallTime, int64_t step, uint32_t field, std::string_view body) {
  ProtoWriter event;
  event.doubleField(event_field::kWallTime, wallTime);
  event.int64Field(event_field::kStep, step);
  event.bytesField(field, body);
  return event.bytes();
}

// A Summary holding the single Value `value` (its tag and payload already written).
std::string encodeSummary(const ProtoWriter &value) {
  ProtoWriter summary;
  summary.message(summary_field::kValue, value);
  return summary.bytes();
}

// TensorFlow's default bucket limits (core/lib/histogram/histogram.cc), so Kiln's histograms
// look like those of TensorFlow and PyTorch runs side by side.
const std::vector<double> &defaultBucketLimits() {
  static const std::vector<double> limits = [] {
    std::vector<double> positive;
    for (double v = 1.0e-12; v < 1.0e20; v *= 1.1)
      positive.push_back(v);
    positive.push_back(DBL_MAX);
    std::vector<double> all;
    all.reserve(2 * positive.size() + 1);
    for (auto it = positive.rbegin(); it != positive.rend(); ++it)
      all.push_back(-*it);
    all.push_back(0.0);
    all.insert(all.end(), positive.begin(), positive.end());
    return all;
  }();
  return limits;
}

Histogram buildHistogram(const float *values, std::size_t count) {
  const std::vector<double> &limits = defaultBucketLimits();
  std::vector<double> counts(limits.size(), 0.0);
  Histogram histogram;
  histogram.min = DBL_MAX;
  histogram.max = -DBL_MAX;
  for (std::size_t i = 0; i < count; ++i) {
    double value = values[i];
    if (!std::isfinite(value))
      continue;
    // Bucket b holds [limits[b - 1], limits[b]), as TensorFlow's upper_bound does.
    std::size_t b = std::upper_bound(limits.begin(), limits.end(), value) - limits.begin();
    counts[std::min(b, limits.size() - 1)] += 1;
    histogram.min = std::min(histogram.min, value);
    histogram.max = std::max(histogram.max, value);
    histogram.num += 1;
    histogram.sum += value;
    histogram.sumSquares += value * value;
  }
  if (histogram.num == 0) {
    // TensorFlow would write min DBL_MAX and max -DBL_MAX here; a finite range and one empty
    // bucket suit readers that assume a bucket, and TensorBoard draws it as empty.
    histogram.min = histogram.max = 0;
    histogram.bucketLimit.push_back(0.0);
    histogram.bucket.push_back(0.0);
    return histogram;
  }
  // From the first to the last non-empty bucket, so that min and max (which TensorBoard uses as
  // the outer edges) fall inside the outer buckets; runs of empty buckets between become one,
  // as TensorFlow writes them.
  std::size_t first = 0, last = counts.size() - 1;
  while (counts[first] == 0)
    ++first;
  while (counts[last] == 0)
    --last;
  for (std::size_t b = first; b <= last; ++b) {
    if (counts[b] == 0)
      while (counts[b + 1] == 0)
        ++b;
    histogram.bucketLimit.push_back(limits[b]);
    histogram.bucket.push_back(counts[b]);
  }
  return histogram;
}

ProtoWriter encodeHistogram(const Histogram &histogram) {
  ProtoWriter proto;
  proto.doubleField(histo_field::kMin, histogram.min);
  proto.doubleField(histo_field::kMax, histogram.max);
  proto.doubleField(histo_field::kNum, histogram.num);
  proto.doubleField(histo_field::kSum, histogram.sum);
  proto.doubleField(histo_field::kSumSquares, histogram.sumSquares);
  proto.packedDoubles(histo_field::kBucketLimit, histogram.bucketLimit);
  proto.packedDoubles(histo_field::kBucket, histogram.bucket);
  return proto;
}

double secondsSinceEpoch() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string hostName() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0 || name[0] == '\0')
    return "localhost";
  return name;
}

//===----------------------------------------------------------------------===//
// Decoding
//===----------------------------------------------------------------------===//

void readDoubles(WireReader &reader, uint32_t field, uint32_t wireType, std::vector<double> &out) {
  readRepeated(reader, field, wireType, kFixed64,
               [&](WireReader &r) { out.push_back(r.fixedDouble()); });
}

Histogram parseHistogram(WireReader reader) {
  Histogram histogram;
  uint32_t field, wireType;
  auto readDouble = [&](double &out) {
    reader.expectWireType(field, wireType, kFixed64);
    out = reader.fixedDouble();
  };
  while (reader.tag(field, wireType)) {
    switch (field) {
    case histo_field::kMin: readDouble(histogram.min); break;
    case histo_field::kMax: readDouble(histogram.max); break;
    case histo_field::kNum: readDouble(histogram.num); break;
    case histo_field::kSum: readDouble(histogram.sum); break;
    case histo_field::kSumSquares: readDouble(histogram.sumSquares); break;
    case histo_field::kBucketLimit:
      readDoubles(reader, field, wireType, histogram.bucketLimit);
      break;
    case histo_field::kBucket: readDoubles(reader, field, wireType, histogram.bucket); break;
    default: reader.skip(field, wireType);
    }
  }
  return histogram;
}

// Whether a TensorShapeProto has exactly one element (rank 0, or every dim 1).
bool isSingleElementShape(WireReader reader) {
  bool single = true;
  uint32_t field, wireType;
  while (reader.tag(field, wireType)) {
    if (field == shape_field::kDim && wireType == kLengthDelimited) {
      WireReader dim = reader.message(field);
      int64_t size = 0;
      uint32_t dimField, dimWire;
      while (dim.tag(dimField, dimWire)) {
        if (dimField == dim_field::kSize && dimWire == kVarint)
          size = static_cast<int64_t>(dim.varint());
        else
          dim.skip(dimField, dimWire);
      }
      single = single && size == 1;
    } else if (field == shape_field::kUnknownRank && wireType == kVarint) {
      single = single && reader.varint() == 0;
    } else {
      reader.skip(field, wireType);
    }
  }
  return single;
}

// The value of a one-element float or double TensorProto, as TensorBoard's summary API writes
// scalars; nullopt for any other tensor (histograms, images, text...).
std::optional<double> parseScalarTensor(WireReader reader) {
  uint64_t dtype = 0;
  bool singleElement = true;
  std::string_view content;
  std::vector<double> values;
  uint32_t field, wireType;
  while (reader.tag(field, wireType)) {
    switch (field) {
    case tensor_field::kDtype:
      reader.expectWireType(field, wireType, kVarint);
      dtype = reader.varint();
      break;
    case tensor_field::kShape:
      reader.expectWireType(field, wireType, kLengthDelimited);
      singleElement = isSingleElementShape(reader.message(field));
      break;
    case tensor_field::kContent:
      reader.expectWireType(field, wireType, kLengthDelimited);
      content = reader.lengthDelimited(field);
      break;
    case tensor_field::kFloatVal:
      readRepeated(reader, field, wireType, kFixed32,
                   [&](WireReader &r) { values.push_back(r.fixedFloat()); });
      break;
    case tensor_field::kDoubleVal: readDoubles(reader, field, wireType, values); break;
    default: reader.skip(field, wireType);
    }
  }
  if (!singleElement)
    return std::nullopt;
  const auto *bytes = reinterpret_cast<const unsigned char *>(content.data());
  if (dtype == kDtFloat && content.size() == 4)
    return fromBits<float>(static_cast<uint32_t>(loadLittleEndian(bytes, 4)));
  if (dtype == kDtDouble && content.size() == 8)
    return fromBits<double>(loadLittleEndian(bytes, 8));
  if ((dtype == kDtFloat || dtype == kDtDouble) && content.empty() && values.size() == 1)
    return values[0];
  return std::nullopt;
}

EventValue parseValue(WireReader reader) {
  EventValue value;
  uint32_t field, wireType;
  while (reader.tag(field, wireType)) {
    switch (field) {
    case value_field::kTag:
      reader.expectWireType(field, wireType, kLengthDelimited);
      value.tag = std::string(reader.lengthDelimited(field));
      break;
    case value_field::kSimpleValue:
      reader.expectWireType(field, wireType, kFixed32);
      value.simpleValue = reader.fixedFloat();
      break;
    case value_field::kHisto:
      reader.expectWireType(field, wireType, kLengthDelimited);
      value.histogram = parseHistogram(reader.message(field));
      break;
    case value_field::kTensor:
      reader.expectWireType(field, wireType, kLengthDelimited);
      if (std::optional<double> scalar = parseScalarTensor(reader.message(field)))
        value.simpleValue = scalar;
      break;
    default: reader.skip(field, wireType);
    }
  }
  return value;
}

int parseSessionStatus(WireReader reader) {
  int status = 0;
  uint32_t field, wireType;
  while (reader.tag(field, wireType)) {
    if (field == session_log_field::kStatus) {
      reader.expectWireType(field, wireType, kVarint);
      status = static_cast<int>(reader.varint());
    } else {
      reader.skip(field, wireType);
    }
  }
  return status;
}

Event parseEvent(WireReader reader) {
  Event event;
  uint32_t field, wireType;
  while (reader.tag(field, wireType)) {
    switch (field) {
    case event_field::kWallTime:
      reader.expectWireType(field, wireType, kFixed64);
      event.wallTime = reader.fixedDouble();
      break;
    case event_field::kStep:
      reader.expectWireType(field, wireType, kVarint);
      event.step = static_cast<int64_t>(reader.varint());
      break;
    case event_field::kFileVersion:
      reader.expectWireType(field, wireType, kLengthDelimited);
      event.fileVersion = std::string(reader.lengthDelimited(field));
      break;
    case event_field::kSummary: {
      reader.expectWireType(field, wireType, kLengthDelimited);
      WireReader summary = reader.message(field);
      uint32_t summaryField, summaryWire;
      while (summary.tag(summaryField, summaryWire)) {
        if (summaryField == summary_field::kValue) {
          summary.expectWireType(summaryField, summaryWire, kLengthDelimited);
          event.values.push_back(parseValue(summary.message(summaryField)));
        } else {
          summary.skip(summaryField, summaryWire);
        }
      }
      break;
    }
    case event_field::kSessionLog:
      reader.expectWireType(field, wireType, kLengthDelimited);
      event.sessionStatus = parseSessionStatus(reader.message(field));
      break;
    default: reader.skip(field, wireType);
    }
  }
  return event;
}


} // namespace

//===----------------------------------------------------------------------===//
// EventWriter
//===----------------------------------------------------------------------===//

EventWriter EventWriter::create(const std::string &logDir) {
  std::string dir = logDir.empty() ? "." : logDir;
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error)
    throw Error(dir + ": cannot create log directory: " + error.message());

  if (dir.back() != '/')
    dir += '/';
  std::string base = dir + "events.out.tfevents." + std::to_string(std::time(nullptr)) + "." +
                     hostName() + "." + std::to_string(getpid()) + ".kiln";
  // O_EXCL: two writers started in the same second in one process must not share a file.
  for (int attempt = 0; attempt < kMaxNameAttempts; ++attempt) {
    std::string path = attempt == 0 ? base : base + "." + std::to_string(attempt);
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno == EEXIST)
      continue;
    if (fd < 0)
      throw Error(path + ": cannot create event file: " + std::strerror(errno));
    std::FILE *file = ::fdopen(fd, "wb");
    if (!file) {
      int fdopenError = errno;
      ::close(fd);
      throw Error(path + ": cannot open event file: " + std::strerror(fdopenError));
    }
    EventWriter writer(file, std::move(path));
    ProtoWriter event;
    event.doubleField(event_field::kWallTime, secondsSinceEpoch());
    event.bytesField(event_field::kFileVersion, kFileVersion);
    writer.writeRecord(event.bytes());
    return writer;
  }
  throw Error(base + ": cannot create event file: " + std::to_string(kMaxNameAttempts) +
              " files of that name exist");
}

EventWriter::EventWriter(EventWriter &&other) noexcept
    : file_(other.file_), path_(std::move(other.path_)) {
  other.file_ = nullptr;
}

EventWriter &EventWriter::operator=(EventWriter &&other) noexcept {
  if (this != &other) {
    close();
    file_ = other.file_;
    path_ = std::move(other.path_);
    other.file_ = nullptr;
  }
  return *this;
}

EventWriter::~EventWriter() { close(); }

void EventWriter::close() noexcept {
  if (file_)
    std::fclose(file_);
  file_ = nullptr;
}

void EventWriter::scalar(const std::string &tag, int64_t step, double value, double wallTime) {
  ProtoWriter summaryValue;
  summaryValue.bytesField(value_field::kTag, tag);
  summaryValue.floatField(value_field::kSimpleValue, static_cast<float>(value));
  writeRecord(encodeEvent(wallTime, step, event_field::kSummary, encodeSummary(summaryValue)));
}

void EventWriter::histogram(const std::string &tag, int64_t step, const float *values,
                            std::size_t count, double wallTime) {
  ProtoWriter summaryValue;
  summaryValue.bytesField(value_field::kTag, tag);
  summaryValue.message(value_field::kHisto, encodeHistogram(buildHistogram(values, count)));
  writeRecord(encodeEvent(wallTime, step, event_field::kSummary, encodeSummary(summaryValue)));
}

void EventWriter::sessionStart(int64_t step, double wallTime) {
  ProtoWriter sessionLog;
  sessionLog.int64Field(session_log_field::kStatus, kSessionStatusStart);
  writeRecord(encodeEvent(wallTime, step, event_field::kSessionLog, sessionLog.bytes()));
}

void EventWriter::writeRecord(const std::string &event) {
  if (!file_)
    throw Error(path_ + ": event writer used after it was moved from");
  unsigned char header[kRecordHeaderBytes];
  storeLittleEndian(header, event.size(), 8);
  storeLittleEndian(header + 8, maskedCrc32c(header, 8), 4);
  unsigned char footer[kRecordFooterBytes];
  storeLittleEndian(footer, maskedCrc32c(event.data(), event.size()), 4);
  if (std::fwrite(header, 1, sizeof header, file_) != sizeof header ||
      std::fwrite(event.data(), 1, event.size(), file_) != event.size() ||
      std::fwrite(footer, 1, sizeof footer, file_) != sizeof footer)
    throw Error(path_ + ": cannot write event: " + std::strerror(errno));
}

void EventWriter::flush() {
  if (!file_)
    throw Error(path_ + ": event writer used after it was moved from");
  if (std::fflush(file_) != 0)
    throw Error(path_ + ": cannot write events: " + std::strerror(errno));
  if (::fsync(::fileno(file_)) != 0)
    throw Error(path_ + ": cannot sync events to disk: " + std::strerror(errno));
}

//===----------------------------------------------------------------------===//
// Reader
//===----------------------------------------------------------------------===//

std::vector<Event> readEvents(const std::string &path) {
  std::string contents = rt::readFileBytes(path);
  const auto *bytes = reinterpret_cast<const unsigned char *>(contents.data());
  std::vector<Event> events;
  std::size_t offset = 0;
  while (offset < contents.size()) {
    std::size_t remaining = contents.size() - offset;
    auto where = [&] { return " in the record at byte " + std::to_string(offset); };
    if (remaining < kRecordHeaderBytes)
      throw Error(path + ": truncated record header" + where() + " (" + std::to_string(remaining) +
                  " bytes left)");
    uint64_t length = loadLittleEndian(bytes + offset, 8);
    if (maskedCrc32c(bytes + offset, 8) != loadLittleEndian(bytes + offset + 8, 4))
      throw Error(path + ": bad length checksum" + where());
    std::size_t dataOffset = offset + kRecordHeaderBytes;
    std::size_t available = contents.size() - dataOffset;
    if (length > available || available - length < kRecordFooterBytes)
      throw Error(path + ": truncated record" + where() + " (" + std::to_string(length) +
                  " data bytes claimed, " + std::to_string(available) + " bytes left)");
    std::size_t dataLength = static_cast<std::size_t>(length);
    if (maskedCrc32c(bytes + dataOffset, dataLength) !=
        loadLittleEndian(bytes + dataOffset + dataLength, 4))
      throw Error(path + ": bad data checksum" + where());
    std::string_view data(contents.data() + dataOffset, dataLength);
    events.push_back(parseEvent(WireReader(data, path, "event", dataOffset, contents.size())));
    offset = dataOffset + dataLength + kRecordFooterBytes;
  }
  return events;
}

} // namespace kiln::train
