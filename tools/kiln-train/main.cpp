//===- main.cpp - kiln-train: the training loop around a train step -------===//
//
// Runs a train-step artifact (kilnc --train) over a data set: shuffles and
// batches it, evaluates on held-out data, prints progress, writes
// checkpoints, TensorBoard event files and a per-step metrics file, resumes
// from the newest valid checkpoint, and exports the trained weights back into
// the ONNX model.
//
//===----------------------------------------------------------------------===//
#include "Export.h"
#include "Progress.h"
#include "TrainStep.h"
#include "common/Flags.h"

#include "kiln/train/checkpoint.h"
#include "kiln/train/dataset.h"
#include "kiln/train/events.h"

#include <chrono>
#include <cstdarg>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace {

using kiln::rt::Error;
using kiln::rt::Tensor;
namespace train = kiln::train;

const char kUsage[] = R"(Usage: kiln-train ARTIFACT.kiln [options]

Trains with a train-step artifact (kilnc --train) on a data set, in C++ with no framework:
each epoch visits the training examples in a seeded random order, in batches of the
artifact's batch size (a last partial batch is left out); every --eval-every steps the
held-out set is classified with the current weights (their moving average when the step
keeps one); checkpoints are written atomically and --resume continues from the newest
valid one, giving on the CPU bitwise the same losses and weights as a run never stopped.

Data (IDX files as MNIST and Fashion-MNIST ship them, gzip-compressed or not, or .npy):
  --data DIR               DIR/train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz],
                           t10k-images-idx3-ubyte[.gz], t10k-labels-idx1-ubyte[.gz]
                           (e.g. /usr/share/datasets/fashion-mnist)
  --train-data FILE        training examples, [count, ...] with the data input's elements
  --train-labels FILE      training labels, [count] (or [count, ...] as the labels input)
  --test-data FILE         held-out examples and labels for evaluation (optional)
  --test-labels FILE
  --scale X                multiplies every example element as it is read (default: 1/255
                           for u8 data into a float input, else 1)
  --labels NAME            the train step's labels input (default: labels)

Length:
  --steps N                train until the step counter reaches N (default: one epoch)
  --epochs E               train for E epochs (overrides --steps)
  --seed N                 seed of the example order (default 0)

Evaluation and output:
  --eval-every N           evaluate every N steps and at the end (default 1000; 0: at the end)
  --eval-weights KIND      ema (default when the step keeps a moving average) or parameters
  --print-every N          print "step N, loss = ..." every N steps (default 10)
  --progress on|off|auto   redraw a progress bar on stderr (default auto: when a terminal)
  --logdir DIR             TensorBoard event files: loss, accuracy, learning_rate,
                           examples_per_sec, eval/loss, eval/accuracy; histograms of the
                           weights (and gradients, if compiled with --gradient-outputs)
  --summary-every N        scalars every N steps (default 100)
  --histogram-every N      histograms every N steps (default 1000; 0: never)
  --metrics FILE           one CSV row per step: step,epoch,loss,accuracy,learning_rate
                           (rows past the step resumed from are dropped on --resume)
  --predictions FILE       the classes the final evaluation predicts for the held-out
                           examples, as an i64 .npy [count]

Checkpoints:
  --checkpoint-dir DIR     write DIR/ckpt-<step>.npz (NumPy's .npz: every state tensor,
                           each with its CRC-32) atomically
  --checkpoint-every N     every N steps and at the end (default 1000)
  --keep K                 keep the newest K checkpoints (default 5)
  --resume                 continue from the newest valid checkpoint in --checkpoint-dir;
                           a corrupt one is reported by name and the one before it used

Export:
  --export FILE            write the trained weights (those --eval-weights picks, and batch
                           normalizations' running statistics) into a copy of --model
  --model FILE             the ONNX model the artifact was compiled from

Other:
  --threads N              threads the artifact's kernels may use (OMP_NUM_THREADS)
  -h, --help               this text

Exit status: 0 when training ended, 1 on an error (bad data, a NaN loss, a checkpoint that
cannot be written: the message names the step or the file), 130 when interrupted (SIGINT or
SIGTERM, after saving a checkpoint when --checkpoint-dir is set).

Example:
  kilnc lenet.onnx --train --train-config=lenet.cfg -o lenet.kiln
  kiln-train lenet.kiln --data /usr/share/datasets/fashion-mnist --epochs 3 \
      --checkpoint-dir ckpt --logdir logs --export lenet-trained.onnx --model lenet.onnx
)";

struct Options {
  std::string artifact;
  std::string data, trainData, trainLabels, testData, testLabels, labels = "labels";
  std::optional<double> scale;
  int64_t steps = -1, epochs = -1, evalEvery = 1000, printEvery = 10;
  int64_t summaryEvery = 100, histogramEvery = 1000, checkpointEvery = 1000, keep = 5;
  uint64_t seed = 0;
  std::string evalWeights, progress = "auto", logdir, metrics, checkpointDir, exportPath, model;
  std::string predictions;
  bool resume = false;
  long threads = 0;
};

[[noreturn]] void usageError(const std::string &message) {
  std::fprintf(stderr, "kiln-train: %s\n(kiln-train --help lists the options)\n", message.c_str());
  std::exit(1);
}

int64_t parseCount(const std::string &flag, const std::string &text, int64_t min) {
  char *end = nullptr;
  errno = 0;
  long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end || errno || value < min)
    usageError(flag + ": expected an integer >= " + std::to_string(min) + ", got '" + text + "'");
  return value;
}

Options parseOptions(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    if (arg.rfind("-", 0) != 0) {
      if (!o.artifact.empty())
        usageError("one artifact, got '" + o.artifact + "' and '" + arg + "'");
      o.artifact = arg;
      continue;
    }
    kiln::tools::Flag flag = kiln::tools::splitFlag(arg);
    const std::string &name = flag.name;
    if (name == "--resume") {
      o.resume = true;
      continue;
    }
    std::optional<std::string> value = kiln::tools::flagValue(flag, argc, argv, i);
    if (!value)
      usageError(name + " needs a value");
    const std::string &v = *value;
    std::map<std::string, std::string *> strings = {
        {"--data", &o.data},           {"--train-data", &o.trainData},
        {"--train-labels", &o.trainLabels}, {"--test-data", &o.testData},
        {"--test-labels", &o.testLabels},   {"--labels", &o.labels},
        {"--eval-weights", &o.evalWeights}, {"--progress", &o.progress},
        {"--logdir", &o.logdir},         {"--metrics", &o.metrics},
        {"--checkpoint-dir", &o.checkpointDir}, {"--export", &o.exportPath},
        {"--model", &o.model},         {"--predictions", &o.predictions}};
    std::map<std::string, std::pair<int64_t *, int64_t>> counts = {
        {"--steps", {&o.steps, 0}},           {"--epochs", {&o.epochs, 1}},
        {"--eval-every", {&o.evalEvery, 0}},  {"--print-every", {&o.printEvery, 1}},
        {"--summary-every", {&o.summaryEvery, 1}}, {"--histogram-every", {&o.histogramEvery, 0}},
        {"--checkpoint-every", {&o.checkpointEvery, 1}}, {"--keep", {&o.keep, 1}}};
    if (auto s = strings.find(name); s != strings.end()) {
      *s->second = v;
    } else if (auto c = counts.find(name); c != counts.end()) {
      *c->second.first = parseCount(name, v, c->second.second);
    } else if (name == "--seed") {
      o.seed = static_cast<uint64_t>(parseCount(name, v, 0));
    } else if (name == "--threads") {
      o.threads = static_cast<long>(parseCount(name, v, 1));
    } else if (name == "--scale") {
      char *end = nullptr;
      double x = std::strtod(v.c_str(), &end);
      if (v.empty() || *end || !std::isfinite(x))
        usageError("--scale: expected a number, got '" + v + "'");
      o.scale = x;
    } else {
      usageError("unknown option '" + name + "'");
    }
  }
  if (o.artifact.empty())
    usageError("no artifact given");
  if (!o.data.empty()) {
    auto pick = [&](std::string &slot, const char *stem) {
      if (!slot.empty())
        return;
      std::string path = o.data + "/" + stem;
      slot = access((path + ".gz").c_str(), R_OK) == 0 ? path + ".gz" : path;
    };
    pick(o.trainData, "train-images-idx3-ubyte");
    pick(o.trainLabels, "train-labels-idx1-ubyte");
    pick(o.testData, "t10k-images-idx3-ubyte");
    pick(o.testLabels, "t10k-labels-idx1-ubyte");
  }
  if (o.trainData.empty() || o.trainLabels.empty())
    usageError("no training data: give --data DIR, or --train-data and --train-labels");
  if (o.testData.empty() != o.testLabels.empty())
    usageError("--test-data and --test-labels go together");
  if (!o.predictions.empty() && o.testData.empty())
    usageError("--predictions needs held-out data (--test-data and --test-labels, or --data)");
  if (o.resume && o.checkpointDir.empty())
    usageError("--resume needs --checkpoint-dir");
  if (!o.exportPath.empty() && o.model.empty())
    usageError("--export needs --model, the ONNX model the artifact was compiled from");
  if (o.progress != "auto" && o.progress != "on" && o.progress != "off")
    usageError("--progress: expected on, off or auto, got '" + o.progress + "'");
  if (!o.evalWeights.empty() && o.evalWeights != "ema" && o.evalWeights != "parameters")
    usageError("--eval-weights: expected ema or parameters, got '" + o.evalWeights + "'");
  return o;
}

/// Reads examples and labels and converts them to the train step's types.
train::Dataset loadDataset(const std::string &dataPath, const std::string &labelsPath,
                           train::TrainStep &step, std::optional<double> scale) {
  Tensor rawData = train::readArray(dataPath);
  Tensor rawLabels = train::readArray(labelsPath);
  const kiln::rt::TensorSpec &dataSpec = step.dataSpec(), &labelSpec = step.labelsSpec();
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
    throw Error(dataPath + ": examples of " + kiln::rt::typeString(rawData.dtype(), rawData.shape()) +
                " do not fit the input '" + dataSpec.name + "' " + dataSpec.typeString());
  if (perExample(rawLabels.shape()) != perExample(labelSpec.dims))
    throw Error(labelsPath + ": labels of " + rawLabels.typeString() + " do not fit the input '" +
                labelSpec.name + "' " + labelSpec.typeString());
  double factor = scale.value_or(rawData.dtype() == KILN_DTYPE_U8 &&
                                         kiln::rt::isFloatingPoint(dataSpec.dtype)
                                     ? 1.0 / 255.0
                                     : 1.0);
  train::Dataset set;
  std::vector<int64_t> shape = dataSpec.dims;
  shape[0] = count;
  Tensor examples = train::convertArray(rawData, dataSpec.dtype, factor, dataPath);
  if (examples.shape() == shape) {
    set.examples = std::move(examples);
  } else { // [count, 28, 28] into [count, 1, 28, 28]: the same bytes
    set.examples = Tensor(dataSpec.dtype, shape);
    std::memcpy(set.examples.data(), examples.data(), set.examples.byteSize());
  }
  if (step.classes() > 0)
    train::checkLabels(rawLabels, step.classes(), labelsPath);
  Tensor labels = train::convertArray(rawLabels, labelSpec.dtype, 1.0, labelsPath);
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
    kiln::rt::writeFileBytes(path + ".tmp", kept);
    if (std::rename((path + ".tmp").c_str(), path.c_str()) != 0)
      throw Error(path + ": cannot replace: " + std::strerror(errno));
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

int run(const Options &o) {
  if (o.threads > 0)
    setenv("OMP_NUM_THREADS", std::to_string(o.threads).c_str(), 1);
  train::TrainStep step(kiln::rt::Artifact::open(o.artifact, "cpu"), o.labels);
  bool useEma = o.evalWeights.empty() ? step.hasEma() : o.evalWeights == "ema";
  if (useEma && !step.hasEma())
    throw Error(o.artifact + ": --eval-weights=ema, but the train step keeps no moving average "
                "(compile with --ema-decay)");

  train::Dataset trainSet = loadDataset(o.trainData, o.trainLabels, step, o.scale);
  std::optional<train::Dataset> testSet;
  if (!o.testData.empty())
    testSet = loadDataset(o.testData, o.testLabels, step, o.scale);
  int64_t batch = step.batchSize();
  int64_t perEpoch = trainSet.count() / batch;
  if (perEpoch == 0)
    throw Error(o.trainData + ": " + std::to_string(trainSet.count()) +
                " examples, fewer than one batch of " + std::to_string(batch));
  int64_t total = o.epochs > 0 ? o.epochs * perEpoch : o.steps >= 0 ? o.steps : perEpoch;

  std::map<std::string, std::string> runInfo = {
      {"seed", std::to_string(o.seed)},
      {"batch", std::to_string(batch)},
      {"examples", std::to_string(trainSet.count())},
      {"artifact", step.artifact().name()},
      {"threads", std::getenv("OMP_NUM_THREADS") ? std::getenv("OMP_NUM_THREADS")
                                                 : std::to_string(std::max(1u, std::thread::hardware_concurrency()))}};

  // The state: the newest valid checkpoint, or the init entry.
  std::optional<train::CheckpointDir> checkpoints;
  std::string lastCheckpoint = "none";
  bool resumed = false;
  step.initialize();
  if (!o.checkpointDir.empty()) {
    checkpoints.emplace(o.checkpointDir, static_cast<int>(o.keep));
    checkpoints->prepare();
    auto present = checkpoints->list();
    if (!o.resume && !present.empty())
      throw Error(o.checkpointDir + ": holds checkpoints (newest " + present.front().second +
                  "); pass --resume to continue from it, or use another directory");
    for (const auto &[number, path] : present) {
      try {
        train::Checkpoint saved = train::readCheckpoint(path);
        for (const char *key : {"seed", "batch", "examples"})
          if (saved.metadata.count(key) && saved.metadata[key] != runInfo[key])
            throw Error(path + ": was written with " + key + " " + saved.metadata[key] +
                        ", this run has " + runInfo[key] + "; resuming would not replay the run");
        if (saved.metadata.count("threads") && saved.metadata["threads"] != runInfo["threads"])
          std::fprintf(stderr,
                       "kiln-train: warning: %s was written with %s threads, this run has %s; "
                       "the losses may differ in the last bits from a run never stopped\n",
                       path.c_str(), saved.metadata["threads"].c_str(), runInfo["threads"].c_str());
        step.restore(saved, path);
        lastCheckpoint = path;
        resumed = true;
        std::printf("kiln-train: resuming from %s (step %lld)\n", path.c_str(),
                    static_cast<long long>(step.step()));
        break;
      } catch (const Error &e) {
        std::fprintf(stderr, "kiln-train: warning: skipping %s\n", e.what());
      }
    }
    if (!resumed && !present.empty())
      throw Error(o.checkpointDir + ": no valid checkpoint among " +
                  std::to_string(present.size()) + "; not starting over on top of them");
  }
  int64_t startStep = step.step();
  if (startStep < 0)
    throw Error(o.artifact + ": the step counter is negative (" + std::to_string(startStep) + ")");

  std::unique_ptr<train::EventWriter> events;
  if (!o.logdir.empty()) {
    events = std::make_unique<train::EventWriter>(train::EventWriter::create(o.logdir));
    if (resumed) // TensorBoard drops what an earlier run logged past this step
      events->sessionStart(startStep + 1, now());
  }
  std::unique_ptr<MetricsFile> metrics;
  if (!o.metrics.empty())
    metrics = std::make_unique<MetricsFile>(o.metrics, resumed ? startStep : 0);

  train::Progress progress(o.progress == "on" || (o.progress == "auto" && isatty(STDERR_FILENO)));
  std::signal(SIGINT, onSignal);
  std::signal(SIGTERM, onSignal);
  std::signal(SIGXFSZ, SIG_IGN); // a file-size limit is a write error, not a kill

  auto saveCheckpoint = [&](int64_t at) {
    if (!checkpoints)
      return;
    // A diverged state is never saved over good checkpoints.
    for (const Tensor *t : step.state())
      if (t->dtype() == KILN_DTYPE_F32)
        for (int64_t i = 0; i < t->numElements(); ++i)
          if (!std::isfinite(t->dataAs<float>()[i]))
            throw Error("step " + std::to_string(at) + ": state tensor '" + t->name() +
                        "' holds NaN or infinity; stopping (last checkpoint: " + lastCheckpoint +
                        "; try a smaller learning rate or --clip-norm)");
    runInfo["step"] = std::to_string(at);
    lastCheckpoint = checkpoints->save(at, step.state(), runInfo);
  };

  auto evaluate = [&](int64_t at, bool last) {
    if (!testSet || step.classes() == 0)
      return;
    std::vector<int64_t> predictions;
    Tensor input(step.dataSpec().dtype, step.dataSpec().dims);
    Scores total;
    std::vector<int64_t> rows(batch);
    for (int64_t first = 0; first < testSet->count(); first += batch) {
      int64_t n = std::min(batch, testSet->count() - first);
      for (int64_t r = 0; r < n; ++r)
        rows[r] = first + r;
      train::gatherRows(testSet->examples, rows.data(), n, input);
      const Tensor &logits = step.evaluate(input, useEma);
      Tensor labels(testSet->labels.dtype(), {n});
      train::gatherRows(testSet->labels, rows.data(), n, labels);
      Scores s = score(logits, labels, n, last ? &predictions : nullptr);
      total.loss += s.loss;
      total.correct += s.correct;
    }
    double accuracy = static_cast<double>(total.correct) / testSet->count();
    double loss = total.loss / testSet->count();
    progress.line(format("step %lld, eval: accuracy = %.2f%%, loss = %.4f (%lld examples%s)",
                         static_cast<long long>(at), 100 * accuracy, loss,
                         static_cast<long long>(testSet->count()), useEma ? ", moving average" : ""));
    if (last && !o.predictions.empty()) {
      Tensor classes(KILN_DTYPE_I64, {static_cast<int64_t>(predictions.size())});
      std::copy(predictions.begin(), predictions.end(), classes.dataAs<int64_t>());
      kiln::rt::writeNpy(classes, o.predictions);
    }
    if (events) {
      events->scalar("eval/accuracy", at, accuracy, now());
      events->scalar("eval/loss", at, loss, now());
      events->flush();
    }
  };

  auto histograms = [&](int64_t at) {
    if (!events)
      return;
    for (auto &[name, tensor] : step.parameters(false))
      events->histogram("weights/" + name, at, tensor->dataAs<float>(),
                        static_cast<size_t>(tensor->numElements()), now());
    for (auto &[name, tensor] : step.gradients())
      events->histogram("gradients/" + name, at, tensor->dataAs<float>(),
                        static_cast<size_t>(tensor->numElements()), now());
  };

  std::printf("kiln-train: %s: %lld examples, batch %lld, %lld steps per epoch; ",
              o.artifact.c_str(), static_cast<long long>(trainSet.count()),
              static_cast<long long>(batch), static_cast<long long>(perEpoch));
  if (startStep < total)
    std::printf("steps %lld to %lld\n", static_cast<long long>(startStep + 1),
                static_cast<long long>(total));
  else
    std::printf("nothing to train (the step counter is %lld)\n", static_cast<long long>(startStep));
  std::fflush(stdout);

  std::vector<int64_t> order;
  int64_t orderEpoch = -1;
  double windowStart = now(), runStart = windowStart, stepSeconds = 0;
  int64_t windowSteps = 0, done = 0;
  float loss = 0;
  while (step.step() < total && !gStop) {
    int64_t s = step.step();
    int64_t epoch = s / perEpoch;
    if (epoch != orderEpoch) {
      order = train::epochOrder(trainSet.count(), o.seed, epoch);
      orderEpoch = epoch;
    }
    const int64_t *rows = order.data() + (s % perEpoch) * batch;
    train::gatherRows(trainSet.examples, rows, batch, step.data());
    train::gatherRows(trainSet.labels, rows, batch, step.labels());
    double t0 = now();
    loss = step.run();
    stepSeconds += now() - t0;
    int64_t at = step.step();
    if (!std::isfinite(loss)) {
      progress.clear();
      throw Error("step " + std::to_string(at) + ": the loss is " + (std::isnan(loss) ? "NaN" : "infinite") +
                  "; stopping (last checkpoint: " + lastCheckpoint +
                  "; try a smaller learning rate or --clip-norm)");
    }
    double accuracy = std::nan("");
    if (const Tensor *logits = step.logits())
      accuracy = static_cast<double>(score(*logits, step.labels(), batch).correct) / batch;
    if (metrics)
      metrics->row(at, epoch, loss, accuracy, step.learningRate());
    ++windowSteps;
    ++done;
    if (at % o.printEvery == 0 || at == total) {
      double elapsed = now() - windowStart;
      double perStep = elapsed / windowSteps;
      double eta = (now() - runStart) / done * (total - at);
      progress.line(format("step %lld, loss = %.2f (%.1f examples/sec; %.3f sec/batch; ETA %s)",
                           static_cast<long long>(at), loss, batch / perStep, perStep,
                           train::formatDuration(eta).c_str()));
      windowStart = now();
      windowSteps = 0;
    }
    if (events && (at % o.summaryEvery == 0 || at == total)) {
      double wall = now();
      events->scalar("loss", at, loss, wall);
      if (!std::isnan(accuracy))
        events->scalar("accuracy", at, accuracy, wall);
      if (!std::isnan(step.learningRate()))
        events->scalar("learning_rate", at, step.learningRate(), wall);
      events->scalar("examples_per_sec", at, done * batch / (wall - runStart), wall);
      events->flush();
    }
    if (o.histogramEvery > 0 && at % o.histogramEvery == 0)
      histograms(at);
    if (o.evalEvery > 0 && at % o.evalEvery == 0 && at != total)
      evaluate(at, false);
    if (at % o.checkpointEvery == 0 && at != total)
      saveCheckpoint(at);
    progress.update(at, total, epoch, loss, (now() - runStart) / done * (total - at));
  }
  progress.clear();
  int64_t at = step.step();
  if (gStop) {
    saveCheckpoint(at);
    std::printf("kiln-train: interrupted at step %lld%s\n", static_cast<long long>(at),
                checkpoints ? (", saved " + lastCheckpoint).c_str() : "");
    return 130;
  }
  if (done > 0) {
    evaluate(at, true);
    saveCheckpoint(at);
    if (o.histogramEvery > 0 && at % o.histogramEvery != 0)
      histograms(at);
  } else if (testSet) {
    evaluate(at, true);
  }
  if (events)
    events->flush();
  double seconds = now() - runStart;
  std::printf("kiln-train: %lld steps in %s (%.1f examples/sec; the step itself %.0f%% of the "
              "time)%s\n",
              static_cast<long long>(done), train::formatDuration(seconds).c_str(),
              done ? done * batch / seconds : 0.0, seconds > 0 ? 100 * stepSeconds / seconds : 0.0,
              checkpoints && done ? ("; checkpoint " + lastCheckpoint).c_str() : "");
  if (!o.exportPath.empty()) {
    int n = train::exportOnnx(o.model, o.exportPath, step.parameters(useEma));
    std::printf("kiln-train: exported %d trained tensors%s into %s\n", n,
                useEma ? " (moving averages)" : "", o.exportPath.c_str());
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  Options options = parseOptions(argc, argv);
  try {
    return run(options);
  } catch (const std::exception &e) {
    std::fflush(stdout);
    std::fprintf(stderr, "kiln-train: error: %s\n", e.what());
    return 1;
  }
}
