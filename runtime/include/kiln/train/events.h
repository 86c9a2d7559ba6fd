// TensorBoard event files: a writer for training curves and weight histograms, and a checking
// reader, both on TFRecord framing and hand-encoded tensorflow.Event protobufs.
#ifndef KILN_TRAIN_EVENTS_H
#define KILN_TRAIN_EVENTS_H

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kiln::train {

// tensorflow.SessionLog.SessionStatus values.
constexpr int kSessionStatusStart = 1;

// A tensorflow.HistogramProto. Bucket i counts the values in
// [bucketLimit[i - 1], bucketLimit[i]); TensorBoard takes `min` as the left edge of the first
// bucket and `max` as the right edge of the last.
struct Histogram {
  double min = 0;
  double max = 0;
  double num = 0;
  double sum = 0;
  double sumSquares = 0;
  std::vector<double> bucketLimit;
  std::vector<double> bucket;
};

// One tensorflow.Summary.Value. A scalar stored as a one-element float or double tensor (as
// TensorBoard's own summary API writes them) is read into simpleValue as well.
struct EventValue {
  std::string tag;
  std::optional<double> simpleValue;
  std::optional<Histogram> histogram;
};

struct Event {
  double wallTime = 0;
  int64_t step = 0;
  std::string fileVersion;
  std::vector<EventValue> values;
  // SessionLog status; 0 when the event carries no session log.
  int sessionStatus = 0;
};

// Appends events to a new file in a log directory that TensorBoard can watch while training
// runs. Writes go through stdio's buffer: call flush() to make them visible (and durable).
// Every failure, a full disk included, throws kiln::rt::Error naming the file. Not thread-safe.
class EventWriter {
public:
  // Creates `logDir` (and its parents) if missing and a new file
  // logDir/events.out.tfevents.<unix seconds>.<hostname>.<pid>.kiln in it, beginning with the
  // file_version "brain.Event:2" event TensorBoard expects. Never overwrites a file.
  static EventWriter create(const std::string &logDir);

  EventWriter(EventWriter &&other) noexcept;
  EventWriter &operator=(EventWriter &&other) noexcept;
  EventWriter(const EventWriter &) = delete;
  EventWriter &operator=(const EventWriter &) = delete;
  // Closes the file; errors are lost here, so flush() first where they matter.
  ~EventWriter();

  // A point on the curve `tag`. Stored as TensorBoard's simple_value, a float.
  void scalar(const std::string &tag, int64_t step, double value, double wallTime);

  // The distribution of `values` in TensorFlow's default buckets (limits growing by 10% from
  // 1e-12 to 1e20, mirrored for negatives, 0 and +-DBL_MAX at the ends). NaN and infinite
  // values are skipped: they count towards neither the buckets, num, min, max nor sum. Without
  // a finite value the histogram is empty (num 0, min = max = 0, one empty bucket).
  void histogram(const std::string &tag, int64_t step, const float *values, std::size_t count,
                 double wallTime);

  // Marks a (re)start at `step`. TensorBoard then discards the events at `step` and later that
  // it read before this one: the curves of a run resumed from a checkpoint continue from the
  // checkpoint instead of doubling back.
  void sessionStart(int64_t step, double wallTime);

  // Writes out the buffer and fsyncs the file.
  void flush();

  const std::string &path() const { return path_; }

private:
  EventWriter(std::FILE *file, std::string path) : file_(file), path_(std::move(path)) {}

  // Appends one serialized Event in TFRecord framing.
  void writeRecord(const std::string &event);
  void close() noexcept;

  std::FILE *file_ = nullptr;
  std::string path_;
};

// Every event in a TFRecord file of tensorflow.Event protobufs, in file order. Checks both
// checksums of every record; a bad checksum, a truncated record or a malformed Event throws
// kiln::rt::Error naming the file and the byte offset. Fields Kiln does not know are skipped.
std::vector<Event> readEvents(const std::string &path);

} // namespace kiln::train

#endif // KILN_TRAIN_EVENTS_H
