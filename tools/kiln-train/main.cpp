//===- main.cpp - kiln-train: the training loop around a train step -------===//
//
// Runs a train-step artifact (kilnc --train) over a data set: shuffles and
// batches it, evaluates on held-out data, prints progress, writes
// checkpoints, TensorBoard event files and a per-step metrics file, resumes
// from the newest valid checkpoint, and exports the trained weights back into
// the ONNX model. The flags are parsed here; Session runs the training.
//
//===----------------------------------------------------------------------===//
#include "Options.h"
#include "Session.h"
#include "common/Flags.h"

#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <unistd.h>

namespace {

using kiln::train::Options;

const char kUsage[] = R"(Usage: kiln-train ARTIFACT.kiln [options]

Trains with a train-step artifact (kilnc --train) on a data set, in C++ with no framework:
each epoch visits the training examples in a seeded random order, in batches of the
artifact's batch size (a last partial batch is left out); every --eval-every steps the
held-out set is classified with the current weights (their moving average when the step
keeps one); checkpoints are written atomically and --resume continues from the newest
valid one, giving bitwise the same losses and weights as a run never stopped (on the CPU and,
with --devices gpu:N, on a GPU).

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

Devices:
  --devices gpu:N          run the step on GPU N (a step compiled with --target=cuda:sm_XY or
                           cpu,cuda:sm_XY): parameters, optimizer slots and the step counter stay
                           on the GPU between steps, each step is one CUDA graph, and the state
                           is copied back only for checkpoints, histograms and the export
  --devices gpu            the GPU of this process's local rank (KILN_LOCAL_RANK, which
                           kiln-launch sets; 0 without it): one process per GPU

Data-parallel training (a step compiled with kilnc --train --data-parallel=true):
  --devices LIST           replicas in this process, e.g. cpu:0,cpu:1 or gpu:0,gpu:1: each runs
                           the step on its shard of every batch (the artifact's batch size
                           each), on a thread and a copy of the artifact of its own; the
                           gradients are averaged over every replica by the step itself (Gloo
                           between CPUs, NCCL between GPUs; a GPU step sums through NCCL even
                           alone, as one rank)
  --timeout SECONDS        how long a replica waits for a peer before the run stops with the
                           peer's rank (default 10)
  Processes started by kiln-launch (or given KILN_RANK, KILN_WORLD_SIZE and KILN_RENDEZVOUS,
  a directory every process reaches) form one world; process 0 prints, evaluates and writes
  the checkpoints, logs and export. A checkpoint resumes at any number of replicas.

Other:
  --threads N              threads the artifact's kernels may use (OMP_NUM_THREADS; default:
                           every core, shared out among the replicas of --devices)
  -h, --help               this text

Exit status: 0 when training ended, 1 on an error (bad data, a NaN loss, a checkpoint that
cannot be written: the message names the step or the file), 130 when interrupted (SIGINT or
SIGTERM, after saving a checkpoint when --checkpoint-dir is set).

Example:
  kilnc lenet.onnx --train --train-config=lenet.cfg -o lenet.kiln
  kiln-train lenet.kiln --data /usr/share/datasets/fashion-mnist --epochs 3 \
      --checkpoint-dir ckpt --logdir logs --export lenet-trained.onnx --model lenet.onnx
)";

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
        {"--model", &o.model},         {"--predictions", &o.predictions},
        {"--devices", &o.devices}};
    std::map<std::string, std::pair<int64_t *, int64_t>> counts = {
        {"--steps", {&o.steps, 0}},           {"--epochs", {&o.epochs, 1}},
        {"--eval-every", {&o.evalEvery, 0}},  {"--print-every", {&o.printEvery, 1}},
        {"--summary-every", {&o.summaryEvery, 1}}, {"--histogram-every", {&o.histogramEvery, 0}},
        {"--checkpoint-every", {&o.checkpointEvery, 1}}, {"--keep", {&o.keep, 1}}};
    if (auto s = strings.find(name); s != strings.end()) {
      *s->second = v;
    } else if (auto c = counts.find(name); c != counts.end()) {
      *c->second.first = parseCount(name, v, c->second.second);
      if (name == "--keep" && o.keep > 1000000)
        usageError("--keep: at most 1000000 checkpoints, got " + v);
    } else if (name == "--seed") {
      o.seed = static_cast<uint64_t>(parseCount(name, v, 0));
    } else if (name == "--threads") {
      o.threads = static_cast<long>(parseCount(name, v, 1));
    } else if (name == "--timeout") {
      char *end = nullptr;
      double x = std::strtod(v.c_str(), &end);
      if (v.empty() || *end || !(x > 0) || x > 86400)
        usageError("--timeout: expected seconds in (0, 86400], got '" + v + "'");
      o.timeout = x;
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

} // namespace

int main(int argc, char **argv) {
  Options options = parseOptions(argc, argv);
  std::signal(SIGXFSZ, SIG_IGN); // a file-size limit is a write error, not a kill
  std::signal(SIGPIPE, SIG_IGN); // so is a dead replica's socket: the collective names it
  try {
    return kiln::train::Session(options).run();
  } catch (const std::exception &e) {
    std::fflush(stdout);
    std::fprintf(stderr, "kiln-train: error: %s\n", e.what());
    return 1;
  }
}
