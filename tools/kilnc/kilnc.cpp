//===- kilnc.cpp - Compiles a model graph to a Kiln artifact --------------===//
#include "compiler/Driver.h"
#include "compiler/ObjectCode.h"
#include "compiler/Registration.h"
#include "kiln/files.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ThreadPool.h"

#include <map>
#include <memory>
#include <optional>

namespace cl = llvm::cl;

namespace {

/// kilnc's training flags. Each is also a key of --train-config files and an
/// option of the kiln-train-step pass, under the same name.
struct TrainFlag {
  const char *name, *value, *help;
};
const TrainFlag kTrainFlags[] = {
    {"trainable", "regex",
     "Initializers to train: an extended regular expression matched against the whole name "
     "(default: every float initializer)"},
    {"loss", "kind",
     "softmax-cross-entropy (default: logits [N, C] against i64 class indices [N]), mse "
     "(against labels shaped like the output), or output (the output is already the loss)"},
    {"loss-output", "name", "The model output the loss reads (default: the first)"},
    {"labels", "name", "Name of the labels input the train step gains (default: labels)"},
    {"optimizer", "name", "sgd (default), momentum, nesterov, adam or adamw"},
    {"learning-rate", "x", "Base learning rate (default 0.01)"},
    {"momentum", "x", "Momentum coefficient of momentum and nesterov (default 0.9)"},
    {"beta1", "x", "Adam's first-moment decay (default 0.9)"},
    {"beta2", "x", "Adam's second-moment decay (default 0.999)"},
    {"epsilon", "x", "Adam's epsilon (default 1e-8)"},
    {"weight-decay", "x", "AdamW's decoupled weight decay (default 0.01)"},
    {"lr-schedule", "name",
     "constant (default), exponential (lr * decay-rate^(step / decay-steps)), step (the same, "
     "in whole periods) or cosine (to min-learning-rate over total-steps)"},
    {"decay-rate", "x", "Factor per decay-steps updates of exponential and step (default 0.95)"},
    {"decay-steps", "n", "Updates per factor of decay-rate (default 1000)"},
    {"staircase", "bool", "exponential: decay in whole periods, as TensorFlow's staircase"},
    {"total-steps", "n", "cosine: updates over which the rate falls"},
    {"min-learning-rate", "x", "cosine: the final learning rate (default 0)"},
    {"warmup-steps", "n", "Linear warm-up over the first n updates (default 0: none)"},
    {"l2", "x", "L2 regularization: adds l2 / 2 * sum(w^2) of each chosen weight to the loss"},
    {"l2-weights", "regex", "Weights the l2 term applies to (default: every trained weight)"},
    {"clip-norm", "x", "Clip the gradients to this global norm (default 0: no clipping)"},
    {"ema-decay", "x",
     "Keep an exponential moving average of the weights with this decay (TensorFlow's "
     "ExponentialMovingAverage with the step as num_updates; default 0: none)"},
    {"gradient-outputs", "bool",
     "Also return each weight's gradient as the output gradient/<name> (kiln-train writes "
     "their histograms to TensorBoard; default false)"},
    {"data-parallel", "bool",
     "Average the loss and the gradients over data-parallel replicas before the update "
     "(kiln-train --devices, kiln-launch); the number of replicas is set at run time"},
    {"bucket-cap-mb", "x",
     "data-parallel: gradients are summed in buckets of at most x MiB (default 25)"},
    {"first-bucket-cap-mb", "x",
     "data-parallel: the first bucket, which starts while the backward pass runs, holds at "
     "most x MiB (default 1)"},
};

/// Bucket caps are options of kiln-bucket-all-reduce rather than of the
/// train step: moves them from `values` into `graph`. Returns an error message or "".
std::string takeBucketCaps(std::map<std::string, std::string> &values, kiln::GraphOptions &graph) {
  for (auto [key, bytes] : {std::pair{"bucket-cap-mb", &graph.bucketBytes},
                            std::pair{"first-bucket-cap-mb", &graph.firstBucketBytes}}) {
    auto it = values.find(key);
    if (it == values.end())
      continue;
    double mib;
    if (llvm::StringRef(it->second).getAsDouble(mib) || !(mib > 0) || mib > 1 << 20)
      return std::string("--") + key + ": expected a positive number of MiB, got '" + it->second + "'";
    *bytes = std::max<int64_t>(4, static_cast<int64_t>(mib * (1 << 20)));
    values.erase(it);
  }
  return "";
}

/// Reads `key = value` lines ('#' comments) of a training config file into
/// `values`; returns an error message or "".
std::string readTrainConfig(const std::string &path, std::map<std::string, std::string> &values) {
  std::string text, reason;
  if (!kiln::rt::readRegularFile(path, text, reason))
    return "--train-config: cannot read '" + path + "': " + reason;
  llvm::SmallVector<llvm::StringRef> lines;
  llvm::StringRef(text).split(lines, '\n');
  for (auto [number, raw] : llvm::enumerate(lines)) {
    llvm::StringRef line = raw.split('#').first.trim();
    if (line.empty())
      continue;
    auto [key, value] = line.split('=');
    key = key.trim();
    value = value.trim();
    std::string where = path + ":" + std::to_string(number + 1) + ": ";
    if (!line.contains('=') || value.empty())
      return where + "expected 'key = value', got '" + line.str() + "'";
    if (llvm::none_of(kTrainFlags, [&](const TrainFlag &flag) { return key == flag.name; }))
      return where + "unknown key '" + key.str() + "' (the keys are kilnc's training flags)";
    values[key.str()] = value.str();
  }
  return "";
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::OptionCategory category("kilnc options");
  cl::opt<std::string> input(cl::Positional, cl::desc("<model.onnx | model.mlir>"),
                             cl::Required, cl::cat(category));
  cl::opt<std::string> output("o", cl::desc("Output file ('-' for stdout, text outputs "
                                            "only). Default: the model's name with the "
                                            "emitted kind's extension"),
                              cl::value_desc("file"), cl::cat(category));
  cl::opt<kiln::Emit> emit(
      "emit", cl::desc("What to write:"), cl::init(kiln::Emit::Artifact),
      cl::values(
          clEnumValN(kiln::Emit::Artifact, "artifact",
                     "the .kiln artifact: shared object + weights + manifest (default)"),
          clEnumValN(kiln::Emit::Mlir, "mlir", "the kiln dialect after graph passes"),
          clEnumValN(kiln::Emit::Linalg, "linalg",
                     "linalg on tensors (CPU: tiled kernels; GPU: inside the fusions)"),
          clEnumValN(kiln::Emit::Gpu, "gpu",
                     "GPU kernels (gpu.module) and the kiln_gpu launches that run them"),
          clEnumValN(kiln::Emit::LLVMMlir, "llvm-mlir",
                     "the MLIR LLVM dialect (GPU: kernels in the LLVM and NVVM dialects)"),
          clEnumValN(kiln::Emit::LLVMIR, "llvm",
                     "optimized LLVM IR (GPU: the kernels, libdevice linked in)"),
          clEnumValN(kiln::Emit::Ptx, "ptx", "the kernels' PTX (GPU)"),
          clEnumValN(kiln::Emit::CudaProgram, "cuda-program",
                     "the GPU host program: launches, library calls, buffer offsets"),
          clEnumValN(kiln::Emit::Object, "obj", "a native object file (CPU)"),
          clEnumValN(kiln::Emit::Header, "header",
                     "a C header declaring the compiled function")),
      cl::cat(category));
  cl::list<std::string> targets(
      "target",
      cl::desc("Devices to compile for, comma-separated or repeated: 'cpu' (the default) and "
               "'cuda:sm_NN' for NVIDIA GPUs (sm_75, sm_80, sm_86, sm_89, sm_90, sm_100, "
               "sm_120); e.g. --target=cpu,cuda:sm_80,cuda:sm_90 runs on the CPU and on "
               "GPUs from the A100 on. GPU targets need the CUDA toolkit's ptxas and "
               "libdevice (see --cuda-path)"),
      cl::value_desc("list"), cl::cat(category));
  cl::opt<std::string> cudaPath(
      "cuda-path",
      cl::desc("CUDA toolkit for GPU targets (bin/ptxas, nvvm/libdevice); default: "
               "$CUDA_HOME, $CUDA_PATH, /usr/local/cuda, or where ptxas is on PATH"),
      cl::value_desc("dir"), cl::cat(category));
  cl::opt<bool> gpuTf32("gpu-tf32",
                        cl::desc("Let f32 matrix products and convolutions on GPUs run on TF32 "
                                 "tensor cores (about 10 bits of mantissa in each product; "
                                 "default: full f32)"),
                        cl::cat(category));
  cl::opt<std::string> cpu("cpu",
                           cl::desc("Target CPU: 'native' (this machine, the default) or "
                                    "an LLVM CPU name such as x86-64-v3 or skylake-avx512"),
                           cl::init("native"), cl::cat(category));
  cl::opt<unsigned> vectorWidth(
      "vector-width",
      cl::desc("Width in bits of the vectors CPU loops are vectorized for: 128, 256 or 512. "
               "Default: 512 on CPUs with AVX-512, else the CPU's own preference"),
      cl::value_desc("bits"), cl::init(0), cl::cat(category));
  cl::opt<std::string> name("name",
                            cl::desc("Symbol of the compiled function, as declared by "
                                     "--emit=header (default: kiln_model): a C identifier, "
                                     "not a keyword and not starting with 'kiln_'"),
                            cl::init("kiln_model"), cl::cat(category));
  cl::list<std::string> inputShapes(
      "input-shape",
      cl::desc("Static shape for a graph input, NAME=DIMxDIM... ('scalar' for rank 0); "
               "required for inputs with symbolic dimensions. Repeatable"),
      cl::value_desc("name=shape"), cl::cat(category));
  cl::list<std::string> freezeInputs(
      "freeze-input",
      cl::desc("Bind a graph input to the tensor in an ONNX TensorProto file, making it a "
               "compile-time constant (needed when it decides shapes). Repeatable"),
      cl::value_desc("name=file.pb"), cl::cat(category));
  cl::opt<bool> profile(
      "profile",
      cl::desc("Time each kernel of the CPU code: the artifact adds up the calls and the "
               "nanoseconds of every kernel (two clock reads, some 50 ns, per kernel call), and "
               "kiln-run --profile prints them, slowest first, with the ONNX nodes each kernel "
               "computes. GPU code is not timed"),
      cl::cat(category));
  cl::opt<bool> noIndexChecks(
      "no-index-checks",
      cl::desc("Do not check Gather, GatherElements, GatherND, ScatterElements and "
               "ScatterND indices at run time in CPU code. By default an index outside [-size, size) makes the run "
               "fail naming the node and the index (gathers clamp out-of-range indices "
               "either way, so memory is never read out of bounds, and an unchecked scatter "
               "index out of range writes nothing; GPU code only clamps)"),
      cl::cat(category));
  cl::opt<bool> noFusion("no-fusion",
                         cl::desc("Compile every op as its own kernel instead of fusing "
                                  "(to bisect a suspected fusion bug)"),
                         cl::cat(category));
  cl::opt<kiln::BlockedLayout> blockedLayout(
      "blocked-layout",
      cl::desc("Where CPU code keeps images in blocks of channels (N x C/B x H x W x B) "
               "around convolutions by constant filters (in a train step, 3x3s by the weights "
               "that Winograd speeds up) whose channels fill such blocks, each "
               "convolution then one oneDNN primitive on all threads. A block is one vector: "
               "B = 16 (oneDNN's nChw16c) on a CPU with AVX-512, 8 (nChw8c) on one with AVX2 "
               "and FMA; on others images stay NCHW (see docs/user-guide.md, Performance):"),
      cl::values(
          clEnumValN(kiln::BlockedLayout::Auto, "auto",
                     "where the layout pays for its reorders: a convolution whose input is "
                     "blocked already, whose result reaches another one, or whose window is "
                     "taller than wide (7x1) or strided (a 3x3 at stride 2); in blocks of 8 "
                     "also one alone at stride 1 of 16 or more input channels that is a 3x3 "
                     "(Winograd) or has 2^23 multiply-adds (default)"),
          clEnumValN(kiln::BlockedLayout::All, "all",
                     "around every such convolution, even one alone between NCHW images"),
          clEnumValN(kiln::BlockedLayout::Off, "off", "nowhere: every image stays NCHW")),
      cl::init(kiln::BlockedLayout::Auto), cl::cat(category));
  cl::opt<bool> noBlockedLayout("no-blocked-layout",
                                cl::desc("The same as --blocked-layout=off"), cl::cat(category));
  cl::opt<bool> fusionReport("fusion-report",
                             cl::desc("Print each fusion to stderr: its kind, member ops "
                                      "and the ONNX nodes they came from"),
                             cl::cat(category));
  cl::list<std::string> place(
      "place",
      cl::desc("Place the nodes whose whole name matches the regular expression on a device, "
               "e.g. --place 'encoder/.*=/cpu:1' or --place 'head=/job:localhost/replica:0/"
               "task:0/device:GPU:0'. Repeatable; the first matching rule wins. Ops no rule "
               "places go with their inputs (see --default-device); a model on several devices "
               "is compiled as one program per device with transfers between them"),
      cl::value_desc("regex=device"), cl::cat(category));
  cl::list<std::string> placeFiles(
      "place-file",
      cl::desc("Read placement rules from a file, one NODE_REGEX=DEVICE per line (lines "
               "starting with '#' are comments); they come after the --place rules. Repeatable"),
      cl::value_desc("file"), cl::cat(category));
  cl::opt<std::string> defaultDevice(
      "default-device",
      cl::desc("Device of ops that no --place rule and no input decides, e.g. /cpu:1 "
               "(default: /cpu:0, or /gpu:0 when no cpu target is given)"),
      cl::value_desc("device"), cl::cat(category));
  cl::opt<bool> allowSoftPlacement(
      "allow-soft-placement",
      cl::desc("Move an op placed on a device type the artifact has no code for (a GPU "
               "without a cuda target) to the default device, with a warning, instead of "
               "failing"),
      cl::cat(category));
  cl::opt<bool> logDevicePlacement(
      "log-device-placement",
      cl::desc("Print each node's device to stderr, one line per node: "
               "'add: /job:localhost/replica:0/task:0/device:CPU:0'"),
      cl::cat(category));
  cl::opt<std::string> report(
      "report",
      cl::desc("Write an HTML page showing the graph with nodes coloured by device and fusions "
               "outlined, the partitions with their sends and receives, the stages and every "
               "node's device and fusion (one self-contained file)"),
      cl::value_desc("file.html"), cl::cat(category));
  enum class Gemm { OneDnn, OpenBlas };
  cl::opt<Gemm> gemm(
      "gemm",
      cl::desc("Library that f32 matrix products and convolutions (im2col tiles) call. "
               "oneDNN's OpenMP calls are served by the LLVM OpenMP runtime the kernels use; "
               "in a process that has already loaded GCC's libgomp, prefer openblas"),
      cl::values(clEnumValN(Gemm::OneDnn, "onednn",
                            "oneDNN (default; the faster on bench/): dnnl_sgemm, and for "
                            "products by constant weights a matmul primitive with the "
                            "weights packed once, at the first run; 3x3 convolutions of "
                            "32 or more channels by Winograd F(4x4, 3x3)"),
                 clEnumValN(Gemm::OpenBlas, "openblas",
                            "OpenBLAS's cblas_sgemm, single-threaded per tile")),
      cl::init(Gemm::OneDnn), cl::cat(category));
  cl::opt<bool> stats("buffer-stats",
                      cl::desc("Print the static buffer plan: peak bytes of intermediate "
                               "tensors (one arena, reused by liveness) and buffer counts; "
                               "for GPU targets also the program's launches and constants"),
                      cl::cat(category));
  cl::OptionCategory trainCategory("kilnc training options",
                                   "With --train, kilnc compiles one train step instead of the "
                                   "forward graph: trainable weights become state inputs and "
                                   "outputs, and the step computes the loss, the gradients and "
                                   "the optimizer update (see docs/training.md)");
  cl::opt<bool> train("train", cl::desc("Compile a train step (with the flags below)"),
                      cl::cat(trainCategory));
  cl::opt<std::string> trainConfig(
      "train-config",
      cl::desc("Read training options from a file of 'key = value' lines whose keys are the "
               "flags below ('#' starts a comment); flags given on the command line win"),
      cl::value_desc("file"), cl::cat(trainCategory));
  std::vector<std::unique_ptr<cl::opt<std::string>>> trainFlags;
  for (const TrainFlag &flag : kTrainFlags)
    trainFlags.push_back(std::make_unique<cl::opt<std::string>>(
        llvm::StringRef(flag.name), cl::desc(flag.help), cl::value_desc(flag.value),
        cl::cat(trainCategory)));
  cl::opt<unsigned> jobs(
      "jobs",
      cl::desc("Threads kilnc compiles on: MLIR's passes over functions, and LLVM's code "
               "generation, which splits the code into parts by size and generates them at "
               "once (0, the default: one per core this process may use). The artifact's "
               "bytes do not depend on it"),
      cl::value_desc("N"), cl::init(0), cl::cat(category));
  cl::alias jobsShort("j", cl::aliasopt(jobs), cl::desc("Alias for --jobs"));
  cl::opt<bool> verbose("v", cl::desc("Print each phase and its time"), cl::cat(category));
  cl::alias verboseLong("verbose", cl::aliasopt(verbose), cl::desc("Alias for -v"));

  // Passes first: --mlir-print-ir-after=PASS and friends resolve pass names
  // against the registry when their options are created.
  kiln::registerKilnPasses();
  mlir::registerAsmPrinterCLOptions();
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  // libLLVM registers hundreds of back-end options in the general category;
  // --help shows only kilnc's own. MLIR's debugging flags still work.
  cl::HideUnrelatedOptions({&category, &trainCategory});
  cl::ParseCommandLineOptions(
      argc, argv,
      "kilnc: compiles an ONNX model to a native Kiln artifact\n\n"
      "  kilnc model.onnx -o model.kiln\n"
      "  kilnc model.onnx --target=cuda:sm_90 -o model.kiln\n"
      "  kilnc model.onnx --emit=header -o model.h\n"
      "  kilnc model.onnx --input-shape x=1x3x224x224 --emit=mlir\n"
      "  kilnc model.onnx --place 'head/.*=/cpu:1' --log-device-placement -o model.kiln\n"
      "  kilnc model.onnx --train --optimizer=adam --learning-rate=0.001 -o step.kiln\n\n"
      "Exit codes: 0 success, 1 error, 2 bad usage, 3 the model uses something Kiln\n"
      "does not support, 4 an operand that must be known at compile time is a graph\n"
      "input (see --freeze-input).\n\n"
      "Debugging: MLIR's pass-manager flags apply to every pass kilnc runs, e.g.\n"
      "  --mlir-print-ir-after-all     print the IR after each pass\n"
      "  --mlir-print-ir-before-all    print the IR before each pass\n"
      "  --mlir-print-ir-after=PASS    print the IR after one pass, e.g. kiln-fuse\n"
      "  --mlir-print-debuginfo        show locations (ONNX node names) in printed IR\n"
      "  --mlir-timing                 time each pass\n"
      "  --mlir-print-op-on-diagnostic attach the failing op to error messages\n"
      "--help-hidden lists them all.\n");

  // MLIR's passes and LLVM's code generation share one bound on threads; the
  // pool outlives the context, as MLIR requires.
  unsigned threads = jobs ? jobs.getValue() : kiln::defaultCodegenThreads();
  std::optional<llvm::DefaultThreadPool> threadPool;
  if (threads > 1)
    threadPool.emplace(llvm::hardware_concurrency(threads));
  mlir::DialectRegistry registry;
  kiln::registerKilnDialects(registry);
  mlir::MLIRContext context(registry, mlir::MLIRContext::Threading::DISABLED);
  if (threadPool)
    context.setThreadPool(*threadPool);
  kiln::installDiagnosticPrinter(context, "kilnc");

  kiln::CompilerOptions options;
  options.inputPath = input;
  options.outputPath = output;
  options.emit = emit;
  options.target.cpu = cpu;
  if (vectorWidth != 0 && vectorWidth != 128 && vectorWidth != 256 && vectorWidth != 512) {
    llvm::errs() << "kilnc: error: --vector-width must be 128, 256 or 512, got " << vectorWidth
                 << "\n";
    return kiln::kExitUsage;
  }
  options.target.vectorWidth = vectorWidth;
  if (!targets.empty())
    options.targets.assign(targets.begin(), targets.end());
  options.cudaPath = cudaPath;
  options.allowTf32 = gpuTf32;
  options.target.functionName = name;
  options.inputShapes.assign(inputShapes.begin(), inputShapes.end());
  options.frozenInputs.assign(freezeInputs.begin(), freezeInputs.end());
  options.graph.fusion = !noFusion;
  options.graph.blockedLayout = noBlockedLayout ? kiln::BlockedLayout::Off : blockedLayout;
  options.cpu.gemmLibrary = gemm == Gemm::OneDnn ? "onednn" : "openblas";
  options.graph.fusionReport = fusionReport;
  options.placeRules.assign(place.begin(), place.end());
  options.placeFiles.assign(placeFiles.begin(), placeFiles.end());
  options.trainConfigPath = trainConfig;
  options.defaultDevice = defaultDevice;
  options.allowSoftPlacement = allowSoftPlacement;
  options.logDevicePlacement = logDevicePlacement;
  options.reportPath = report;
  options.stats = stats;
  options.indexChecks = !noIndexChecks;
  options.cpu.profile = profile;
  options.verbose = verbose;
  options.jobs = threads;

  std::map<std::string, std::string> trainValues;
  if (!trainConfig.empty())
    if (std::string error = readTrainConfig(trainConfig, trainValues); !error.empty()) {
      llvm::errs() << "kilnc: error: " << error << "\n";
      return kiln::kExitUsage;
    }
  for (auto [flag, value] : llvm::zip_equal(kTrainFlags, trainFlags))
    if (value->getNumOccurrences())
      trainValues[flag.name] = *value;
  if (!train && (!trainValues.empty() || !trainConfig.empty())) {
    llvm::errs() << "kilnc: error: training options need --train\n";
    return kiln::kExitUsage;
  }
  if (std::string error = takeBucketCaps(trainValues, options.graph); !error.empty()) {
    llvm::errs() << "kilnc: error: " << error << "\n";
    return kiln::kExitUsage;
  }
  if (train) {
    std::string passOptions;
    for (const auto &[key, value] : trainValues)
      passOptions += key + "=" + (value.find(' ') == std::string::npos ? value : "\"" + value + "\"") + " ";
    options.train = passOptions;
  }
  return kiln::runCompiler(options, context);
}
