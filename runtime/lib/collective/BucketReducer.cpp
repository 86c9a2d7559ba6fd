//===- BucketReducer.cpp - A train step's buckets summed beside it --------===//
//
// The step calls start(bucket) as soon as a bucket is computed and
// wait(bucket) where it first needs the sums. Starts go to a queue that one
// thread works through in order, which is the same order on every rank
// since every rank runs the same code; a wait blocks until its bucket is
// through. The first error ends the step's collectives: later starts and
// queued buckets are dropped, every wait returns as soon as its bucket is not
// being summed (the hooks cannot fail the step), and finishStep() throws it.
//
//===----------------------------------------------------------------------===//
#include "kiln/collective.h"
#include "kiln/tensor.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

namespace kiln::rt {

namespace {
using Clock = std::chrono::steady_clock;
double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
} // namespace

struct BucketReducer::State {
  struct Job {
    int64_t bucket;
    float *data;
    int64_t count;
  };
  enum class Bucket { Queued, Done };

  explicit State(Collective &c) : collective(c), worker([this] { work(); }) {}
  ~State() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    changed.notify_all();
    worker.join();
  }

  void start(int64_t bucket, float *data, int64_t count) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!error.empty())
      return;
    if (buckets.count(bucket)) {
      error = "bucket " + std::to_string(bucket) + " was started twice in one step";
      changed.notify_all();
      return;
    }
    buckets[bucket] = Bucket::Queued;
    queue.push_back({bucket, data, count});
    ++stats.buckets;
    stats.bytes += count * static_cast<int64_t>(sizeof(float));
    changed.notify_all();
  }

  void wait(int64_t bucket) {
    Clock::time_point begin = Clock::now();
    std::unique_lock<std::mutex> lock(mutex);
    auto found = buckets.find(bucket);
    if (found == buckets.end()) {
      if (error.empty())
        error = "bucket " + std::to_string(bucket) + " was waited for but never started";
      return;
    }
    // After an error a bucket still queued is dropped (the step's results are garbage anyway),
    // but one being summed is waited for: its buffer is in use until the collective returns,
    // which its timeout bounds.
    changed.wait(lock, [&] {
      return buckets[bucket] == Bucket::Done || (!error.empty() && inFlight != bucket);
    });
    stats.exposedSeconds += seconds(Clock::now() - begin);
  }

  void work() {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      changed.wait(lock, [&] { return stopping || !queue.empty(); });
      if (queue.empty())
        return; // stopping
      Job job = queue.front();
      queue.pop_front();
      if (!error.empty()) { // the step failed: its buffers may be gone, and so may the peers
        buckets[job.bucket] = Bucket::Done;
        changed.notify_all();
        continue;
      }
      inFlight = job.bucket;
      lock.unlock();
      Clock::time_point begin = Clock::now();
      std::string failure;
      try {
        collective.allReduce(job.data, static_cast<std::size_t>(job.count), /*average=*/false);
      } catch (const std::exception &e) {
        failure = e.what();
      }
      lock.lock();
      inFlight = -1;
      stats.communicationSeconds += seconds(Clock::now() - begin);
      if (!failure.empty() && error.empty())
        error = failure;
      buckets[job.bucket] = Bucket::Done;
      changed.notify_all();
    }
  }

  void finishStep() {
    std::unique_lock<std::mutex> lock(mutex);
    // A bucket started but never waited for still travels; the next step
    // must not write its buffer before it is through.
    changed.wait(lock, [&] { return queue.empty() && !busy(); });
    ++stats.steps;
    buckets.clear();
    if (!error.empty())
      throw Error(error);
  }

  bool busy() const {
    for (const auto &[bucket, state] : buckets)
      if (state != Bucket::Done)
        return true;
    return false;
  }

  Collective &collective;
  mutable std::mutex mutex;
  std::condition_variable changed;
  std::deque<Job> queue;
  std::map<int64_t, Bucket> buckets;
  std::string error; // sticky: the collective is unusable after a failure
  int64_t inFlight = -1; // the bucket being summed
  bool stopping = false;
  Stats stats;
  std::thread worker; // last: starts once the rest is ready
};

BucketReducer::BucketReducer(Collective &collective) : state_(std::make_unique<State>(collective)) {}
BucketReducer::~BucketReducer() = default;

kiln_collective_hooks BucketReducer::hooks() {
  kiln_collective_hooks table{};
  table.context = state_.get();
  table.start = [](void *context, int64_t bucket, float *data, int64_t count) {
    static_cast<State *>(context)->start(bucket, data, count);
  };
  table.wait = [](void *context, int64_t bucket, float *, int64_t) {
    static_cast<State *>(context)->wait(bucket);
  };
  table.world_size = state_->collective.size();
  table.rank = state_->collective.rank();
  return table;
}

void BucketReducer::finishStep() { state_->finishStep(); }

BucketReducer::Stats BucketReducer::stats() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->stats;
}

} // namespace kiln::rt
