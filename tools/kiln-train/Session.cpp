//===- Session.cpp - One kiln-train run -----------------------------------===//
#include "Session.h"
#include "Export.h"

#include <chrono>
#include <climits>
#include <cstdint>
#include <cmath>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <thread>
#include <unistd.h>

namespace kiln::train {
namespace {

using rt::Error;
using rt::Tensor;

/// Reads examples and labels and converts them to the train step's types.
Dataset loadDataset(const std::string &dataPath, const std::string &labelsPath,
                           TrainStep &step, std::optional<double> scale) {
  Tensor rawData = readArray(dataPath);
  Tensor rawLabels = readArray(labelsPath);
  const rt::TensorSpec &dataSpec = step.dataSpec(), &labelSpec = step.labelsSpec();
  int64_t count = rawData.shape()[0];
  if (rawLabels.shape()[0] != count)
    throw Error(labelsPath + ": " + std::to_string(rawLabels.shape()[0]) + " labels for the " +
                std::to_string(count) + " examples of " + dataPath);
  auto perExample = [](const std::vector<int64_t> &dims) {
    int64_t n = 1;
    for (size_t d = 1; d < dims.size(); ++d)
      n *= dims[d];
    return n;
  };
  if (perExample(rawData.shape()) != perExample(dataSpec.dims))
    throw Error(dataPath + ": examples of " + rt::typeString(rawData.dtype(), rawData.shape()) +
                " do not fit the input '" + dataSpec.name + "' " + dataSpec.typeString());
  if (perExample(rawLabels.shape()) != perExample(labelSpec.dims))
    throw Error(labelsPath + ": labels of " + rawLabels.typeString() + " do not fit the input '" +
                labelSpec.name + "' " + labelSpec.typeString());
  double factor = scale.value_or(rawData.dtype() == KILN_DTYPE_U8 &&
                                         rt::isFloatingPoint(dataSpec.dtype)
                                     ? 1.0 / 255.0
                                     : 1.0);
  Dataset set;
  std::vector<int64_t> shape = dataSpec.dims;
  shape[0] = count;
  Tensor examples = convertArray(rawData, dataSpec.dtype, factor, dataPath);
  if (examples.shape() == shape) {
    set.examples = std::move(examples);
  } else { // [count, 28, 28] into [count, 1, 28, 28]: the same bytes
    set.examples = Tensor(dataSpec.dtype, shape);
    std::memcpy(set.examples.data(), examples.data(), set.examples.byteSize());
  }
  if (step.classes() > 0)
    checkLabels(rawLabels, step.classes(), labelsPath);
  Tensor labels = convertArray(rawLabels, labelSpec.dtype, 1.0, labelsPath);
  std::vector<int64_t> labelShape = labelSpec.dims;
  labelShape[0] = count;
  set.labels = Tensor(labelSpec.dtype, labelShape);
  std::memcpy(set.labels.data(), labels.data(), set.labels.byteSize());
  return set;
}

/// Softmax cross-entropy and correct predictions of the first `rows` rows.
struct Scores {
  double loss = 0;
  int64_t correct = 0;
};
Scores score(const Tensor &logits, const Tensor &labels, int64_t rows,
             std::vector<int64_t> *predictions = nullptr) {
  Scores s;
  int64_t classes = logits.shape()[1];
  const float *x = logits.dataAs<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const float *row = x + r * classes;
    int64_t best = 0;
    for (int64_t c = 1; c < classes; ++c)
      if (row[c] > row[best])
        best = c;
    double sum = 0;
    for (int64_t c = 0; c < classes; ++c)
      sum += std::exp(static_cast<double>(row[c]) - row[best]);
    auto label = static_cast<int64_t>(labels.elementAsDouble(r));
    s.loss += std::log(sum) - (static_cast<double>(row[label]) - row[best]);
    s.correct += best == label;
    if (predictions)
      predictions->push_back(best);
  }
  return s;
}

volatile std::sig_atomic_t gStop = 0;
void onSignal(int) { gStop = 1; }

double now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string format(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char *fmt, ...) {
  char text[512];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(text, sizeof(text), fmt, args);
  va_end(args);
  return text;
}

} // namespace

/// The metrics CSV, reopened on --resume with its rows past `step` dropped
/// (rewritten through a temporary file: the rows kept are never at risk).
class MetricsFile {
public:
  MetricsFile(const std::string &path, int64_t resumedStep) : path_(path) {
    std::string kept = "step,epoch,loss,accuracy,learning_rate\n";
    if (resumedStep > 0) {
      std::ifstream in(path);
      std::string line;
      std::getline(in, line); // header
      while (std::getline(in, line) && !in.eof()) { // the last line may be torn: only whole lines
        if (std::strtoll(line.c_str(), nullptr, 10) > resumedStep)
          break;
        kept += line + "\n";
      }
    }
    rt::writeFileAtomically(path, kept);
    file_ = std::fopen(path.c_str(), "a");
    if (!file_)
      throw Error(path + ": cannot open: " + std::strerror(errno));
  }
  ~MetricsFile() { std::fclose(file_); }
  void row(int64_t step, int64_t epoch, float loss, double accuracy, float learningRate) {
    // %.9g: floats round-trip, so runs compare bitwise as text.
    if (std::fprintf(file_, "%lld,%lld,%.9g,%.9g,%.9g\n", static_cast<long long>(step),
                     static_cast<long long>(epoch), loss, accuracy, learningRate) < 0 ||
        std::fflush(file_) != 0)
      throw Error(path_ + ": cannot write: " + std::strerror(errno));
  }

private:
  std::string path_;
  std::FILE *file_ = nullptr;
};

/// The artifact on the CPU (or the GPU --devices names), with --threads in OMP_NUM_THREADS first: the
/// OpenMP runtime reads it when the artifact loads it.
/// Replicas sharing a process share its cores: each gets its part unless
/// --threads says otherwise.
static rt::Artifact openArtifact(const Options &o, const World &world) {
  if (o.threads > 0)
    setenv("OMP_NUM_THREADS", std::to_string(o.threads).c_str(), 1);
  else if (world.local > 1 && !std::getenv("OMP_NUM_THREADS"))
    setenv("OMP_NUM_THREADS",
           std::to_string(std::max(1u, std::thread::hardware_concurrency() / world.local)).c_str(), 1);
  return rt::Artifact::open(o.artifact, world.gpus.empty() ? "cpu" : "gpu:" + std::to_string(world.gpus[0]));
}

Session::Session(const Options &o)
    : options_(o), world_(World::fromEnvironment(o.devices, o.timeout)),
      step_(openArtifact(o, world_), o.labels),
      progress_(world_.leader() &&
                (o.progress == "on" || (o.progress == "auto" && isatty(STDERR_FILENO)))) {
  replicas_ = std::make_unique<Replicas>(world_, step_, o.artifact, o.labels);
  useEma_ = o.evalWeights.empty() ? step_.hasEma() : o.evalWeights == "ema";
  if (useEma_ && !step_.hasEma())
    throw Error(o.artifact + ": --eval-weights=ema, but the train step keeps no moving average "
                "(compile with --ema-decay)");
  trainSet_ = loadDataset(o.trainData, o.trainLabels, step_, o.scale);
  if (!o.testData.empty())
    testSet_ = loadDataset(o.testData, o.testLabels, step_, o.scale);
  batch_ = step_.batchSize();
  globalBatch_ = batch_ * world_.size();
  perEpoch_ = trainSet_.count() / globalBatch_;
  if (perEpoch_ == 0)
    throw Error(o.trainData + ": " + std::to_string(trainSet_.count()) +
                " examples, fewer than one batch of " + std::to_string(globalBatch_) +
                (world_.size() > 1 ? " (" + std::to_string(world_.size()) + " replicas of " +
                                         std::to_string(batch_) + ")"
                                   : std::string()));
  if (o.epochs > INT64_MAX / perEpoch_)
    throw Error("--epochs " + std::to_string(o.epochs) + ": too many steps to count");
  total_ = o.epochs > 0 ? o.epochs * perEpoch_ : o.steps >= 0 ? o.steps : perEpoch_;
  if (!o.predictions.empty() && step_.classes() == 0)
    throw Error(o.artifact + ": --predictions needs a classifier (logits [batch, classes] "
                "against integer labels [batch])");
  const char *threads = std::getenv("OMP_NUM_THREADS");
  runInfo_ = {{"seed", std::to_string(o.seed)},
              {"batch", std::to_string(batch_)},
              {"examples", std::to_string(trainSet_.count())},
              {"artifact", step_.artifact().name()},
              {"replicas", std::to_string(world_.size())},
              {"threads", threads ? threads
                                  : std::to_string(std::max(1u, std::thread::hardware_concurrency()))}};

  replicas_->initialize();
  if (!o.checkpointDir.empty())
    resume();
  int64_t startStep = step_.step();
  if (startStep < 0)
    throw Error(o.artifact + ": the step counter is negative (" + std::to_string(startStep) + ")");
  replicas_->checkSameStep();
  if (!world_.leader()) // the leader writes the logs and checkpoints
    return;
  if (!o.logdir.empty()) {
    events_ = std::make_unique<EventWriter>(EventWriter::create(o.logdir));
    if (resumed_) // TensorBoard drops what an earlier run logged past this step
      events_->sessionStart(startStep + 1, now());
  }
  if (!o.metrics.empty())
    metrics_ = std::make_unique<MetricsFile>(o.metrics, resumed_ ? startStep : 0);
}

Session::~Session() = default;

/// The state from the newest checkpoint that reads back whole and was
/// written by a run like this one; refuses to start over on top of others.
void Session::resume() {
  const Options &o = options_;
  checkpoints_.emplace(o.checkpointDir, static_cast<int>(o.keep));
  if (world_.leader())
    checkpoints_->prepare();
  auto present = checkpoints_->list();
  if (!o.resume && !present.empty())
    throw Error(o.checkpointDir + ": holds checkpoints (newest " + present.front().second +
                "); pass --resume to continue from it, or use another directory");
  for (const auto &[number, path] : present) {
    try {
      Checkpoint saved = readCheckpoint(path);
      for (const char *key : {"seed", "batch", "examples"})
        if (saved.metadata.count(key) && saved.metadata[key] != runInfo_[key])
          throw Error(path + ": was written with " + key + " " + saved.metadata[key] +
                      ", this run has " + runInfo_[key] + "; resuming would not replay the run");
      if (saved.metadata.count("replicas") && saved.metadata["replicas"] != runInfo_["replicas"] &&
          world_.leader())
        std::fprintf(stderr,
                     "kiln-train: warning: %s was written with %s replica(s), this run has %s: from "
                     "here on the batches hold %lld examples, and the order they come in differs "
                     "from the run that wrote it\n",
                     path.c_str(), saved.metadata["replicas"].c_str(), runInfo_["replicas"].c_str(),
                     static_cast<long long>(globalBatch_));
      else if (saved.metadata.count("threads") && saved.metadata["threads"] != runInfo_["threads"])
        std::fprintf(stderr,
                     "kiln-train: warning: %s was written with %s threads, this run has %s; "
                     "the losses may differ in the last bits from a run never stopped\n",
                     path.c_str(), saved.metadata["threads"].c_str(), runInfo_["threads"].c_str());
      replicas_->restore(saved, path);
      lastCheckpoint_ = path;
      resumed_ = true;
      if (world_.leader())
        std::printf("kiln-train: resuming from %s (step %lld)\n", path.c_str(),
                    static_cast<long long>(step_.step()));
      return;
    } catch (const std::bad_alloc &) {
      std::fprintf(stderr, "kiln-train: warning: skipping %s: too large to read\n", path.c_str());
    } catch (const Error &e) {
      std::fprintf(stderr, "kiln-train: warning: skipping %s\n", e.what());
    }
  }
  if (!present.empty())
    throw Error(o.checkpointDir + ": no valid checkpoint among " + std::to_string(present.size()) +
                "; not starting over on top of them");
}

void Session::saveCheckpoint(int64_t at) {
  if (!checkpoints_ || !world_.leader())
    return;
  // A diverged state is never saved over good checkpoints.
  auto finite = [](const Tensor &t, int64_t i) {
    return t.dtype() == KILN_DTYPE_F32 ? std::isfinite(t.dataAs<float>()[i])
                                       : std::isfinite(t.elementAsDouble(i));
  };
  for (const Tensor *t : step_.state())
    if (rt::isFloatingPoint(t->dtype()))
      for (int64_t i = 0; i < t->numElements(); ++i)
        if (!finite(*t, i))
          throw Error("step " + std::to_string(at) + ": state tensor '" + t->name() +
                      "' holds NaN or infinity; stopping (last checkpoint: " + lastCheckpoint_ +
                      "; try a smaller learning rate or --clip-norm)");
  runInfo_["step"] = std::to_string(at);
  lastCheckpoint_ = checkpoints_->save(at, step_.state(), runInfo_);
}

void Session::evaluate(int64_t at, bool last) {
  if (!testSet_ || step_.classes() == 0 || !world_.leader())
    return;
  std::vector<int64_t> predictions;
  Tensor input(step_.dataSpec().dtype, step_.dataSpec().dims);
  Scores total;
  std::vector<int64_t> rows(batch_);
  for (int64_t first = 0; first < testSet_->count(); first += batch_) {
    int64_t n = std::min(batch_, testSet_->count() - first);
    for (int64_t r = 0; r < n; ++r)
      rows[r] = first + r;
    gatherRows(testSet_->examples, rows.data(), n, input);
    const Tensor &logits = step_.evaluate(input, useEma_);
    Tensor labels(testSet_->labels.dtype(), {n});
    gatherRows(testSet_->labels, rows.data(), n, labels);
    Scores s = score(logits, labels, n, last ? &predictions : nullptr);
    total.loss += s.loss;
    total.correct += s.correct;
  }
  double accuracy = static_cast<double>(total.correct) / testSet_->count();
  double loss = total.loss / testSet_->count();
  progress_.line(format("step %lld, eval: accuracy = %.2f%%, loss = %.4f (%lld examples%s)",
                        static_cast<long long>(at), 100 * accuracy, loss,
                        static_cast<long long>(testSet_->count()),
                        useEma_ ? ", moving average" : ""));
  if (last && !options_.predictions.empty()) {
    Tensor classes(KILN_DTYPE_I64, {static_cast<int64_t>(predictions.size())});
    std::copy(predictions.begin(), predictions.end(), classes.dataAs<int64_t>());
    rt::writeNpy(classes, options_.predictions);
  }
  if (events_) {
    events_->scalar("eval/accuracy", at, accuracy, now());
    events_->scalar("eval/loss", at, loss, now());
    events_->flush();
  }
}

void Session::writeHistograms(int64_t at) {
  if (!events_)
    return;
  auto histogram = [&](const std::string &tag, const Tensor &tensor) {
    if (tensor.dtype() == KILN_DTYPE_F32) // the others would need a converted copy
      events_->histogram(tag, at, tensor.dataAs<float>(),
                         static_cast<size_t>(tensor.numElements()), now());
  };
  for (auto &[name, tensor] : step_.parameters(false))
    histogram("weights/" + name, *tensor);
  for (auto &[name, tensor] : step_.gradients())
    histogram("gradients/" + name, *tensor);
}

int Session::run() {
  const Options &o = options_;
  // `batch`: the examples one update learns from, over every replica.
  const int64_t batch = globalBatch_, perEpoch = perEpoch_, total = total_;
  const bool leader = world_.leader();
  int64_t startStep = step_.step();
  std::signal(SIGINT, onSignal);
  std::signal(SIGTERM, onSignal);

  if (leader) {
    std::printf("kiln-train: %s: %lld examples, batch %lld", o.artifact.c_str(),
                static_cast<long long>(trainSet_.count()), static_cast<long long>(batch));
    if (world_.size() > 1)
      std::printf(" (%d replicas of %lld)", world_.size(), static_cast<long long>(batch_));
    std::printf(", %lld steps per epoch; ", static_cast<long long>(perEpoch));
    if (startStep < total)
      std::printf("steps %lld to %lld\n", static_cast<long long>(startStep + 1),
                  static_cast<long long>(total));
    else
      std::printf("nothing to train (the step counter is %lld)\n", static_cast<long long>(startStep));
    std::fflush(stdout);
  }

  std::vector<int64_t> order;
  int64_t orderEpoch = -1;
  double windowStart = now(), runStart = windowStart, stepSeconds = 0;
  int64_t windowSteps = 0, done = 0;
  float loss = 0;
  while (step_.step() < total && !gStop) {
    int64_t s = step_.step();
    int64_t epoch = s / perEpoch;
    if (epoch != orderEpoch) {
      order = epochOrder(trainSet_.count(), o.seed, epoch);
      orderEpoch = epoch;
    }
    // Replica r of the world takes rows [r * batch_, (r + 1) * batch_) of the step's batch.
    for (int i = 0; i < replicas_->count(); ++i) {
      const int64_t *rows = order.data() + (s % perEpoch) * batch + (world_.firstRank() + i) * batch_;
      TrainStep &replica = replicas_->step(i);
      gatherRows(trainSet_.examples, rows, batch_, replica.data());
      gatherRows(trainSet_.labels, rows, batch_, replica.labels());
    }
    double t0 = now();
    try {
      loss = replicas_->run();
    } catch (const Error &e) {
      progress_.clear();
      throw Error(std::string(e.what()) + "; stopping at step " + std::to_string(s + 1) +
                  " (last step completed: " + std::to_string(s) + ", last checkpoint: " +
                  lastCheckpoint_ + ")");
    }
    stepSeconds += now() - t0;
    int64_t at = step_.step();
    if (!std::isfinite(loss)) {
      progress_.clear();
      throw Error("step " + std::to_string(at) + ": the loss is " + (std::isnan(loss) ? "NaN" : "infinite") +
                  "; stopping (last checkpoint: " + lastCheckpoint_ +
                  "; try a smaller learning rate or --clip-norm)");
    }
    double accuracy = std::nan(""); // of the first replica's shard
    if (const Tensor *logits = step_.logits())
      accuracy = static_cast<double>(score(*logits, step_.labels(), batch_).correct) / batch_;
    if (metrics_)
      metrics_->row(at, epoch, loss, accuracy, step_.learningRate());
    ++windowSteps;
    ++done;
    if (leader && (at % o.printEvery == 0 || at == total)) {
      double elapsed = now() - windowStart;
      double perStep = elapsed / windowSteps;
      double eta = (now() - runStart) / done * (total - at);
      progress_.line(format("step %lld, loss = %.2f (%.1f examples/sec; %.3f sec/batch; ETA %s)",
                           static_cast<long long>(at), loss, batch / perStep, perStep,
                           formatDuration(eta).c_str()));
      windowStart = now();
      windowSteps = 0;
    }
    if (events_ && (at % o.summaryEvery == 0 || at == total)) {
      double wall = now();
      events_->scalar("loss", at, loss, wall);
      if (!std::isnan(accuracy))
        events_->scalar("accuracy", at, accuracy, wall);
      if (!std::isnan(step_.learningRate()))
        events_->scalar("learning_rate", at, step_.learningRate(), wall);
      events_->scalar("examples_per_sec", at, done * batch / (wall - runStart), wall);
      events_->flush();
    }
    if (o.histogramEvery > 0 && at % o.histogramEvery == 0)
      writeHistograms(at);
    if (o.evalEvery > 0 && at % o.evalEvery == 0 && at != total)
      evaluate(at, false);
    if (at % o.checkpointEvery == 0 && at != total)
      saveCheckpoint(at);
    progress_.update(at, total, epoch, loss, (now() - runStart) / done * (total - at));
  }
  progress_.clear();
  int64_t at = step_.step();
  if (gStop) {
    saveCheckpoint(at);
    std::printf("kiln-train: interrupted at step %lld%s\n", static_cast<long long>(at),
                checkpoints_ && leader ? (", saved " + lastCheckpoint_).c_str() : "");
    return 130;
  }
  if (!leader) {
    std::printf("kiln-train: rank %d: %lld steps\n", world_.firstRank(), static_cast<long long>(done));
    return 0;
  }
  if (done > 0) {
    evaluate(at, true);
    saveCheckpoint(at);
    if (o.histogramEvery > 0 && at % o.histogramEvery != 0)
      writeHistograms(at);
  } else if (testSet_) {
    evaluate(at, true);
  }
  if (events_)
    events_->flush();
  double seconds = now() - runStart;
  std::printf("kiln-train: %lld steps in %s (%.1f examples/sec; the step itself %.0f%% of the "
              "time)%s\n",
              static_cast<long long>(done), formatDuration(seconds).c_str(),
              done ? done * batch / seconds : 0.0, seconds > 0 ? 100 * stepSeconds / seconds : 0.0,
              checkpoints_ && done ? ("; checkpoint " + lastCheckpoint_).c_str() : "");
  if (std::string overlap = replicas_->overlapSummary(); !overlap.empty())
    std::printf("kiln-train: %s\n", overlap.c_str());
  if (!o.exportPath.empty()) {
    int n = exportOnnx(o.model, o.exportPath, step_.parameters(useEma_));
    std::printf("kiln-train: exported %d trained tensors%s into %s\n", n,
                useEma_ ? " (moving averages)" : "", o.exportPath.c_str());
  }
  return 0;
}

} // namespace kiln::train
