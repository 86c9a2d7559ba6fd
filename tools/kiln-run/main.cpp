// kiln-run: load a Kiln artifact, bind .npy/.pb inputs, run it, and write or print the outputs.
#include "common/Flags.h"
#include "kiln/artifact.h"
#include "kiln/cuda_program.h"
#include "kiln/tensor.h"

#include <algorithm>
#include <numeric>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <system_error>
#include <vector>

namespace {

using kiln::rt::Artifact;
using kiln::rt::Error;
using kiln::rt::Tensor;
using kiln::rt::TensorFileFormat;
using kiln::rt::TensorSpec;

constexpr int kPrintedValues = 10;

const char kUsage[] = R"(usage: kiln-run MODEL.kiln [options] [FILE...]

Runs a compiled Kiln artifact once (or --repeat N times) on tensors read from .npy or ONNX
TensorProto .pb files, and writes or prints its outputs.

Inputs:
  FILE...                  positional files bind to the model's inputs in manifest order
  --input NAME=FILE        bind the input called NAME (repeatable; mixes with positional
                           files as long as no input is bound twice)
  The format comes from the extension: .npy (NumPy) or .pb (ONNX TensorProto). Each input's
  dtype and shape must match the manifest exactly. bf16 inputs may be given as uint16 tensors
  (.npy <u2 or TensorProto UINT16) holding the raw bfloat16 bits.

Outputs:
  --output-dir DIR         write every output to DIR/<name>.<ext> (DIR is created; names are
                           reduced to [A-Za-z0-9._-]); .pb files carry the real name
  --output-format npy|pb   file format for --output-dir (default npy; bf16 goes to .npy as <u2)
  --print                  print each output's type and first values to stdout
  Without --output-dir or --repeat, --print is implied.

Device:
  --device cpu|gpu|gpu:N   where to run: the CPU, or the Nth NVIDIA GPU ("gpu" is gpu:0). The
                           default is the artifact's: cpu when it has CPU code, else gpu:0. An
                           artifact without code for the device, or a GPU it cannot run on, is
                           refused; nothing falls back to another device
  --no-cuda-graph          on a GPU, launch the program's kernels one by one on every run instead
                           of replaying the CUDA graph captured after the first run

Other:
  --repeat N               run N times and print the median wall time per run (on a GPU also the
                           median time the GPU spent on the program, input and output copies
                           excluded, and whether runs replayed a CUDA graph); on a GPU then 5
                           rounds of N steps back to back on the data left on the device (no
                           copies, one wait per round) and their median time per step
  --warmup N               run N untimed times first (default 0; with --repeat)
  --timing-json FILE       with --repeat, also write every time measured to FILE as JSON:
                           run_ms (wall, per run), device_ms (GPU, per run), step_ms (per round
                           of back-to-back steps), device, cuda_graph; with --profile also
                           kernels (every kernel that ran: id, function, kind, nodes, ms_per_run,
                           calls_per_run)
  --profile                for an artifact compiled with kilnc --profile (CPU code): after the
                           timed runs, print the time per run of each kernel, slowest first
                           (the 30 slowest; --timing-json lists all), its share of the run, its
                           calls, its kind (parallel: a loop over tiles the threads share;
                           serial; copy; call) and the ONNX nodes it computes. Warm-up runs are
                           not counted
  --threads N              threads the artifact's kernels may use (default: every core the
                           process may run on; sets OMP_NUM_THREADS before loading)
  --resident-state         train steps (kilnc --train): keep the state (weights, optimizer slots,
                           step counter) on the artifact's device, set by the init entry; state
                           inputs take no files, state outputs are not written, and each run is
                           the next step, copying only the batch in and the loss and metrics out
                           (state that --info marks in-place is updated in its own buffer)
  --entry NAME             run the artifact's entry NAME instead of its main one: a train step's
                           init (no inputs; writes the initial state, e.g. --entry init
                           --output-dir state/) or eval (the model's inputs and the weights, by
                           name); inputs and outputs follow that entry's signature (--info
                           lists the entries)
  --info                   print the artifact's name, target, devices, GPU code and program and
                           signature, then open it on its device (the default, or --device) and
                           print that device and the code chosen for it; then exit
  --trusted                skip the check of the artifact's seal (the CRC-32 of all its bytes
                           that kilnc ends it with, read in full before loading: about 0.2 ms
                           per MB) for artifacts from a store you trust; the ELF and manifest
                           checks still run
  --help                   show this help

Environment:
  KILN_LIBCUDA=PATH        the CUDA driver to load instead of libcuda.so.1
  KILN_LIBCUBLASLT=PATH    the cuBLASLt to load for matmul records instead of searching
                           libcublasLt.so.13/.12/.11 on the loader path and in /usr/local/cuda
  KILN_CUDA_GRAPH=0        as --no-cuda-graph
  KILN_DIRECT_CONV=0       on an AVX2 CPU without AVX-512, run convolutions by constant
                           filters and products of up to 32 rows (64 when at most 1024
                           deep) by constant weights with oneDNN's kernels instead of
                           Kiln's own
  KILN_WINOGRAD=0          on an AVX2 CPU without AVX-512, run 3x3 convolutions at stride 1
                           on blocked images with oneDNN's direct kernel instead of Kiln's
                           Winograd kernel; on an AVX-512 CPU, a train step's blocked 3x3s
                           with oneDNN's primitives

Examples:
  kiln-run mlp.kiln x.npy --print
  kiln-run mlp.kiln --input x=batch.pb --input flag=flag.npy --output-dir out --output-format pb
  kiln-run mlp.kiln x.npy --repeat 100 --warmup 10 --threads 2
  kiln-run mlp.kiln x.npy --device gpu:1 --repeat 100 --warmup 10
)";

struct Options {
  std::string model;
  std::vector<std::string> positional;
  std::vector<std::string> named; // raw NAME=FILE
  std::optional<std::string> outputDir;
  TensorFileFormat format = TensorFileFormat::Npy;
  bool formatGiven = false;
  bool print = false;
  bool info = false;
  bool trusted = false; // KILN_OPEN_TRUSTED
  long repeat = 0; // 0: not given
  std::optional<std::string> timingJson;
  long warmup = 0;
  long threads = 0; // 0: not given
  std::string device; // "": the artifact's default
  bool noCudaGraph = false;
  bool residentState = false;
  bool profile = false;
  std::string entry; // "": the main entry
};

unsigned openFlags(const Options &options) { return options.trusted ? KILN_OPEN_TRUSTED : 0u; }

[[noreturn]] void usageError(const std::string &message) {
  throw Error(message + " (see kiln-run --help)");
}

long parseCount(const std::string &flag, const std::string &text, long min) {
  char *end = nullptr;
  errno = 0;
  long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || value < min || value > 100000000)
    usageError(flag + " expects " + (min > 0 ? "a positive" : "a non-negative") +
               " integer, got '" + text + "'");
  return value;
}

// Returns std::nullopt after printing --help.
std::optional<Options> parseArgs(int argc, char **argv) {
  Options options;
  bool flagsDone = false;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (flagsDone || arg.size() < 2 || arg[0] != '-') {
      files.push_back(arg);
      continue;
    }
    if (arg == "--") {
      flagsDone = true;
      continue;
    }
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return std::nullopt;
    }
    kiln::tools::Flag parsed = kiln::tools::splitFlag(arg);
    const std::string &flag = parsed.name;
    auto takeValue = [&]() -> std::string {
      if (std::optional<std::string> value = kiln::tools::flagValue(parsed, argc, argv, i))
        return *value;
      usageError(flag + " needs a value");
    };
    auto noValue = [&] {
      if (parsed.inlineValue)
        usageError(flag + " takes no value");
    };
    if (flag == "--input") {
      options.named.push_back(takeValue());
    } else if (flag == "--output-dir") {
      options.outputDir = takeValue();
      if (options.outputDir->empty())
        usageError("--output-dir needs a directory");
    } else if (flag == "--output-format") {
      std::string format = takeValue();
      options.formatGiven = true;
      if (format == "npy")
        options.format = TensorFileFormat::Npy;
      else if (format == "pb")
        options.format = TensorFileFormat::TensorProto;
      else
        usageError("--output-format must be npy or pb, got '" + format + "'");
    } else if (flag == "--print") {
      noValue();
      options.print = true;
    } else if (flag == "--info") {
      noValue();
      options.info = true;
    } else if (flag == "--trusted") {
      noValue();
      options.trusted = true;
    } else if (flag == "--repeat") {
      options.repeat = parseCount(flag, takeValue(), 1);
    } else if (flag == "--timing-json") {
      options.timingJson = takeValue();
    } else if (flag == "--profile") {
      noValue();
      options.profile = true;
    } else if (flag == "--warmup") {
      options.warmup = parseCount(flag, takeValue(), 0);
    } else if (flag == "--threads") {
      options.threads = parseCount(flag, takeValue(), 1);
    } else if (flag == "--device") {
      options.device = takeValue();
      if (!kiln::rt::parseDeviceString(options.device) || options.device.empty())
        usageError("--device expects cpu, gpu or gpu:N, got '" + options.device + "'");
    } else if (flag == "--no-cuda-graph") {
      noValue();
      options.noCudaGraph = true;
    } else if (flag == "--resident-state") {
      noValue();
      options.residentState = true;
    } else if (flag == "--entry") {
      options.entry = takeValue();
    } else {
      usageError("unknown option '" + flag + "'");
    }
  }
  if (files.empty())
    usageError("no model given");
  options.model = files.front();
  options.positional.assign(files.begin() + 1, files.end());
  if (options.formatGiven && !options.outputDir)
    usageError("--output-format only applies with --output-dir");
  if (options.warmup > 0 && options.repeat == 0)
    usageError("--warmup only applies with --repeat");
  if (options.timingJson && options.repeat == 0)
    usageError("--timing-json only applies with --repeat");
  if (!options.outputDir && options.repeat == 0)
    options.print = true;
  return options;
}

std::string listNames(const std::vector<TensorSpec> &specs) {
  std::string out;
  for (const TensorSpec &spec : specs)
    out += (out.empty() ? "" : ", ") + spec.name;
  return out.empty() ? "none" : out;
}

struct Binding {
  std::string file;
  std::string how; // for "bound twice" messages
};

std::vector<Binding> bindInputs(const Options &options, const std::vector<TensorSpec> &specs) {
  std::vector<std::optional<Binding>> bound(specs.size());
  if (options.positional.size() > specs.size())
    usageError(std::to_string(options.positional.size()) + " input files given, but the model has " +
               std::to_string(specs.size()) + " input" + (specs.size() == 1 ? "" : "s") + " (" +
               listNames(specs) + ")");
  for (std::size_t i = 0; i < options.positional.size(); ++i)
    bound[i] = Binding{options.positional[i], "positional file " + options.positional[i]};

  for (const std::string &pair : options.named) {
    // Names and paths may both contain '=', so take the first split whose left side names an
    // input.
    int index = -1;
    std::size_t split = std::string::npos;
    for (std::size_t eq = pair.find('='); eq != std::string::npos; eq = pair.find('=', eq + 1)) {
      index = findSpec(specs, pair.substr(0, eq));
      if (index >= 0) {
        split = eq;
        break;
      }
    }
    if (index < 0) {
      std::size_t eq = pair.find('=');
      if (eq == std::string::npos || eq + 1 == pair.size())
        usageError("--input expects NAME=FILE, got '" + pair + "'");
      throw Error("unknown input '" + pair.substr(0, eq) + "' (model inputs: " + listNames(specs) + ")");
    }
    std::string file = pair.substr(split + 1);
    if (file.empty())
      usageError("--input " + pair + " names no file");
    auto &slot = bound[static_cast<std::size_t>(index)];
    if (slot)
      throw Error("input '" + specs[index].name + "' given twice (" + slot->how + " and --input " +
                  pair + ")");
    slot = Binding{file, "--input " + pair};
  }

  std::string missing;
  int missingCount = 0;
  std::vector<Binding> bindings;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (!bound[i]) {
      missing += (missingCount++ ? ", '" : "'") + specs[i].name + "' (" + specs[i].typeString() + ")";
      continue;
    }
    bindings.push_back(*bound[i]);
  }
  if (missingCount)
    throw Error(std::string(missingCount > 1 ? "missing inputs: " : "missing input: ") + missing +
                "; pass FILEs in manifest order or --input NAME=FILE");
  return bindings;
}

Tensor loadInput(const TensorSpec &spec, const Binding &binding) {
  Tensor tensor = kiln::rt::readTensorFile(binding.file);
  // NumPy has no bfloat16, so .npy files (and ONNX test data written from
  // NumPy) carry bf16 tensors as their raw uint16 bits.
  if (spec.dtype == KILN_DTYPE_BF16 && tensor.dtype() == KILN_DTYPE_U16)
    tensor.reinterpret(KILN_DTYPE_BF16);
  if (tensor.dtype() != spec.dtype || tensor.shape() != spec.dims)
    throw Error("input '" + spec.name + "': expected " + spec.typeString() + ", got " +
                tensor.typeString() + " from " + binding.file);
  return tensor;
}

std::string sanitizeFileName(const std::string &name) {
  std::string out;
  for (char c : name) {
    bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '.' || c == '_' || c == '-';
    out += keep ? c : '_';
  }
  if (out.empty())
    out = "output";
  if (out[0] == '.') // never "." / ".." or a hidden file
    out[0] = '_';
  return out;
}

/// The file --output-dir writes each output to: DIR/<name>.<ext>, names made
/// safe and distinct.
std::vector<std::string> outputPaths(const Options &options,
                                     const std::vector<TensorSpec> &specs) {
  std::filesystem::path dir(*options.outputDir);
  const char *extension = options.format == TensorFileFormat::Npy ? ".npy" : ".pb";
  std::set<std::string> used;
  std::vector<std::string> paths;
  for (const TensorSpec &spec : specs) {
    std::string base = sanitizeFileName(spec.name);
    std::string stem = base;
    for (int n = 2; !used.insert(stem).second; ++n)
      stem = base + "_" + std::to_string(n);
    paths.push_back((dir / (stem + extension)).string());
  }
  return paths;
}

void writeOutputs(const Options &options, const std::vector<Tensor> &outputs,
                  const std::vector<std::string> &paths) {
  std::error_code ec;
  std::filesystem::create_directories(*options.outputDir, ec);
  if (ec)
    throw Error("cannot create output directory " + *options.outputDir + ": " + ec.message());
  for (std::size_t i = 0; i < outputs.size(); ++i)
    kiln::rt::writeTensorFile(outputs[i], paths[i], options.format);
}

void printOutputs(const std::vector<Tensor> &outputs) {
  for (const Tensor &tensor : outputs) {
    std::string line = tensor.name() + ": " + tensor.typeString() + " [";
    int64_t shown = std::min<int64_t>(tensor.numElements(), kPrintedValues);
    for (int64_t i = 0; i < shown; ++i)
      line += (i ? ", " : "") + tensor.formatElement(i);
    if (tensor.numElements() > shown)
      line += ", ... (" + std::to_string(tensor.numElements() - shown) + " more)";
    line += "]";
    std::printf("%s\n", line.c_str());
  }
}

std::string counted(std::size_t count, const char *one, const char *many) {
  return std::to_string(count) + " " + (count == 1 ? one : many);
}

// What the file holds, read without a device.
void printContents(const std::string &path, const kiln::rt::ArtifactInfo &info) {
  const kiln::rt::Manifest &manifest = info.manifest;
  std::printf("artifact %s\n", path.c_str());
  std::printf("name     %s\n", manifest.name.c_str());
  std::printf("target   %s\n", manifest.target.c_str());
  std::printf("cpu      %s\n", manifest.cpu.c_str());
  std::printf("devices  %s\n", manifest.deviceList().c_str());
  for (const kiln::rt::PartitionDevice &device : manifest.partitions) {
    int stages = 0;
    for (const kiln::rt::StageSpec &stage : manifest.stages)
      stages += stage.device == device.name;
    std::printf("partition %s (%s): %s\n", device.name.c_str(), device.fullName.c_str(),
                counted(stages, "stage", "stages").c_str());
  }
  if (manifest.hasDevice("cuda") || !manifest.cudaCubins.empty() || !manifest.cudaPtxTarget.empty()) {
    std::string cubins;
    for (const std::string &arch : manifest.cudaCubins)
      cubins += (cubins.empty() ? "" : " ") + arch;
    std::printf("cubins   %s\n", cubins.empty() ? "none" : cubins.c_str());
    if (manifest.cudaPtxTarget.empty())
      std::printf("ptx      none\n");
    else
      std::printf("ptx      %s (PTX ISA %s)\n", manifest.cudaPtxTarget.c_str(), manifest.cudaPtxIsa.c_str());
    if (manifest.cudaMinDriver > 0)
      std::printf("driver   CUDA %s or newer\n", kiln::rt::formatDriverVersion(manifest.cudaMinDriver).c_str());
  }
  if (!manifest.profiledKernels.empty())
    std::printf("profile  %s timed (kilnc --profile; kiln-run --profile prints them)\n",
                counted(manifest.profiledKernels.size(), "kernel", "kernels").c_str());
  if (const std::optional<kiln::rt::CudaProgram> &program = info.cudaProgram) {
    std::printf("program  %s, %s, %s; arena %llu bytes, constants %llu bytes\n",
                counted(program->launches(), "launch", "launches").c_str(),
                counted(program->matmuls(), "matmul", "matmuls").c_str(),
                counted(program->copies(), "copy", "copies").c_str(),
                static_cast<unsigned long long>(program->arenaBytes),
                static_cast<unsigned long long>(program->constantBytes));
  }
  for (const TensorSpec &spec : manifest.inputs)
    std::printf("input    %s %s%s%s\n", spec.name.c_str(), spec.typeString().c_str(),
                spec.state.empty() ? "" : " state=", spec.state.c_str());
  for (const TensorSpec &spec : manifest.outputs)
    std::printf("output   %s %s%s%s%s\n", spec.name.c_str(), spec.typeString().c_str(),
                spec.state.empty() ? "" : " state=", spec.state.c_str(),
                spec.inPlace ? " in-place" : "");
  for (const kiln::rt::EntrySpec &entry : manifest.entries)
    std::printf("entry    %s (%zu inputs, %zu outputs; kiln_artifact_run_entry)\n",
                entry.name.c_str(), entry.inputs.size(), entry.outputs.size());
}

void printDevice(const Artifact &artifact) {
  if (artifact.device() == "cpu") {
    std::printf("device   cpu (%s)\n", artifact.deviceName().c_str());
    return;
  }
  if (artifact.devices() == "partitioned") {
    std::printf("device   %s (partitioned: one executor thread per device)\n", artifact.device().c_str());
    return;
  }
  std::string graph = artifact.cudaGraph();
  if (graph == "pending")
    graph = "on (captured at the end of the first run)";
  std::printf("device   %s: %s, %s, cuda graph %s\n", artifact.device().c_str(), artifact.deviceName().c_str(),
              artifact.deviceCode().c_str(), graph.c_str());
}

// Rounds of back-to-back steps kiln-run --repeat times on a GPU.
constexpr int kStepRounds = 5;

// Kernels kiln-run --profile prints.
constexpr std::size_t kProfileRows = 30;

// One kernel of kiln-run --profile, per timed run.
struct KernelTime {
  int64_t id = 0; // the kernel's index in the manifest and in kiln.kernel_profile
  std::string function, kind, nodes;
  double millis = 0, calls = 0;
};

// The kernels that ran in the `runs` timed runs, slowest first.
std::vector<KernelTime> kernelTimes(kiln_artifact *artifact, long runs) {
  std::vector<KernelTime> kernels;
  for (int64_t i = 0, n = kiln_artifact_profile_kernels(artifact); i < n; ++i) {
    const char *function, *kind, *nodes;
    int64_t nanoseconds, calls;
    if (kiln_artifact_profile_kernel(artifact, i, &function, &kind, &nodes, &nanoseconds, &calls) != KILN_OK)
      throw Error(kiln_last_error());
    if (calls > 0)
      kernels.push_back({i, function, kind, nodes, nanoseconds / 1e6 / runs, static_cast<double>(calls) / runs});
  }
  std::stable_sort(kernels.begin(), kernels.end(),
                   [](const KernelTime &a, const KernelTime &b) { return a.millis > b.millis; });
  return kernels;
}

void printProfile(const std::vector<KernelTime> &kernels, double runMillis) {
  double total = 0;
  for (const KernelTime &kernel : kernels)
    total += kernel.millis;
  std::printf("profile: %zu kernel%s ran, %.4f ms per run of %.4f ms (%.1f %%) in kernels; slowest first:\n",
              kernels.size(), kernels.size() == 1 ? "" : "s", total, runMillis,
              runMillis > 0 ? 100 * total / runMillis : 0.0);
  std::printf("%10s %6s %7s  %-8s  %s\n", "ms/run", "%run", "calls", "kind", "nodes");
  for (std::size_t i = 0; i < std::min(kernels.size(), kProfileRows); ++i) {
    const KernelTime &kernel = kernels[i];
    std::printf("%10.4f %6.1f %7.4g  %-8s  %s%s\n", kernel.millis,
                runMillis > 0 ? 100 * kernel.millis / runMillis : 0.0, kernel.calls, kernel.kind.c_str(),
                kernel.function == "main" ? "" : (kernel.function + ": ").c_str(), kernel.nodes.c_str());
  }
  if (kernels.size() > kProfileRows) {
    double rest = 0;
    for (std::size_t i = kProfileRows; i < kernels.size(); ++i)
      rest += kernels[i].millis;
    std::printf("%10.4f %6.1f          and %zu more kernels (--timing-json lists them all)\n", rest,
                runMillis > 0 ? 100 * rest / runMillis : 0.0, kernels.size() - kProfileRows);
  }
}

// `text` as a JSON string literal.
std::string jsonString(const std::string &text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out += escaped;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

void writeTimingJson(const std::string &path, const Artifact &artifact,
                     const std::vector<double> &runs, const std::vector<double> &device,
                     const std::vector<double> &steps, const std::vector<KernelTime> *kernels) {
  std::string text;
  char number[64];
  auto list = [&](const char *key, const std::vector<double> &values, bool last) {
    text += std::string("  \"") + key + "\": [";
    for (std::size_t i = 0; i < values.size(); ++i) {
      std::snprintf(number, sizeof number, "%s%.6f", i ? ", " : "", values[i]);
      text += number;
    }
    text += last ? "]\n" : "],\n";
  };
  text += "{\n  \"device\": \"" + artifact.device() + "\",\n  \"cuda_graph\": \"" +
          artifact.cudaGraph() + "\",\n";
  list("run_ms", runs, false);
  list("device_ms", device, false);
  list("step_ms", steps, !kernels);
  if (kernels) {
    text += "  \"kernels\": [";
    for (std::size_t i = 0; i < kernels->size(); ++i) {
      const KernelTime &kernel = (*kernels)[i];
      std::snprintf(number, sizeof number, "%.6f, \"calls_per_run\": %.6g}", kernel.millis, kernel.calls);
      text += std::string(i ? ",\n" : "\n") + "    {\"id\": " + std::to_string(kernel.id) +
              ", \"function\": " + jsonString(kernel.function) +
              ", \"kind\": " + jsonString(kernel.kind) + ", \"nodes\": " + jsonString(kernel.nodes) +
              ", \"ms_per_run\": " + number;
    }
    text += "\n  ]\n";
  }
  text += "}\n";
  kiln::rt::writeFileAtomically(path, text);
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  std::size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

int run(int argc, char **argv) {
  std::optional<Options> parsed = parseArgs(argc, argv);
  if (!parsed)
    return 0;
  const Options &options = *parsed;

  // The OpenMP runtime reads OMP_NUM_THREADS when the artifact first loads it.
  if (options.threads > 0)
    setenv("OMP_NUM_THREADS", std::to_string(options.threads).c_str(), /*overwrite=*/1);
  if (options.info) {
    // The contents first: they are worth seeing even where the device cannot be opened.
    printContents(options.model, kiln::rt::inspectArtifact(options.model, openFlags(options)));
    std::fflush(stdout);
    Artifact artifact = Artifact::open(options.model, options.device, openFlags(options));
    if (options.noCudaGraph)
      artifact.setOption("cuda-graph", "off");
    printDevice(artifact);
    return 0;
  }
  Artifact artifact = Artifact::open(options.model, options.device, openFlags(options));
  if (options.noCudaGraph)
    artifact.setOption("cuda-graph", "off");
  // One GPU program (a partitioned artifact's GPU stages are timed as part of its run).
  bool onGpu = artifact.devices() != "partitioned" && artifact.device().rfind("gpu", 0) == 0;

  // The signature to bind: the main entry's, or --entry's.
  std::vector<TensorSpec> inputSpecs = artifact.inputs(), outputSpecs = artifact.outputs();
  if (!options.entry.empty()) {
    kiln::rt::Manifest manifest = kiln::rt::inspectArtifact(options.model, openFlags(options)).manifest;
    auto entry = std::find_if(manifest.entries.begin(), manifest.entries.end(),
                              [&](const kiln::rt::EntrySpec &e) { return e.name == options.entry; });
    if (entry == manifest.entries.end()) {
      std::string names;
      for (const kiln::rt::EntrySpec &e : manifest.entries)
        names += (names.empty() ? "" : ", ") + e.name;
      usageError(options.model + " has no entry '" + options.entry + "'" +
                 (names.empty() ? " (it has only its main one)" : " (it has " + names + ")"));
    }
    inputSpecs = entry->inputs;
    outputSpecs = entry->outputs;
  }
  // Resident state: the state tensors leave the signature the user binds.
  std::vector<std::size_t> boundInputs(inputSpecs.size()), boundOutputs(outputSpecs.size());
  std::iota(boundInputs.begin(), boundInputs.end(), 0);
  std::iota(boundOutputs.begin(), boundOutputs.end(), 0);
  if (options.residentState) {
    if (!options.entry.empty())
      usageError("--resident-state runs the train step itself; it does not go with --entry");
    if (kiln_artifact_state_init(artifact.handle()) != KILN_OK)
      throw Error(kiln_last_error());
    auto keep = [](const std::vector<TensorSpec> &specs, std::vector<std::size_t> &indices) {
      std::vector<TensorSpec> kept;
      indices.clear();
      for (std::size_t i = 0; i < specs.size(); ++i)
        if (specs[i].state.empty()) {
          kept.push_back(specs[i]);
          indices.push_back(i);
        }
      return kept;
    };
    inputSpecs = keep(artifact.inputs(), boundInputs);
    outputSpecs = keep(artifact.outputs(), boundOutputs);
  }
  std::vector<Binding> bindings = bindInputs(options, inputSpecs);
  // No output may replace a file given to read; checked before anything is written.
  std::vector<kiln::rt::InputFile> given = {{options.model, "the artifact"}};
  for (std::size_t i = 0; i < bindings.size(); ++i)
    given.push_back({bindings[i].file, "input '" + inputSpecs[i].name + "'"});
  std::vector<std::string> outputFiles;
  if (options.outputDir)
    outputFiles = outputPaths(options, outputSpecs);
  for (const std::string &path : outputFiles)
    kiln::rt::refuseToOverwriteInput(path, "--output-dir", given);
  if (options.timingJson)
    kiln::rt::refuseToOverwriteInput(*options.timingJson, "--timing-json", given);
  std::vector<Tensor> inputs;
  for (std::size_t i = 0; i < bindings.size(); ++i)
    inputs.push_back(loadInput(inputSpecs[i], bindings[i]));
  std::vector<Tensor> outputs;
  for (const TensorSpec &spec : outputSpecs)
    outputs.emplace_back(spec.dtype, spec.dims, spec.name);

  std::vector<const Tensor *> inputPtrs;
  for (const Tensor &tensor : inputs)
    inputPtrs.push_back(&tensor);
  std::vector<Tensor *> outputPtrs;
  for (Tensor &tensor : outputs)
    outputPtrs.push_back(&tensor);

  auto runOnce = [&]() {
    if (options.residentState) {
      // Every tensor in manifest order; the runtime ignores the (NULL) state buffers.
      std::vector<void *> in(artifact.inputs().size()), out(artifact.outputs().size());
      for (std::size_t i = 0; i < boundInputs.size(); ++i)
        in[boundInputs[i]] = const_cast<void *>(inputPtrs[i]->data());
      for (std::size_t i = 0; i < boundOutputs.size(); ++i)
        out[boundOutputs[i]] = outputPtrs[i]->data();
      if (kiln_artifact_run(artifact.handle(), in.data(), out.data()) != KILN_OK)
        throw Error(kiln_last_error());
      return;
    }
    if (options.entry.empty())
      return artifact.run(inputPtrs, outputPtrs);
    std::vector<void *> in, out;
    for (const Tensor *tensor : inputPtrs)
      in.push_back(const_cast<void *>(tensor->data()));
    for (Tensor *tensor : outputPtrs)
      out.push_back(tensor->data());
    if (kiln_artifact_run_entry(artifact.handle(), options.entry.c_str(), in.data(), out.data()) !=
        KILN_OK)
      throw Error(kiln_last_error());
  };
  if (options.profile && kiln_artifact_profile_kernels(artifact.handle()) == 0) {
    if (artifact.devices() == "partitioned")
      throw Error(options.model + ": --profile reads the kernel times of CPU code that runs whole; "
                                  "this artifact is partitioned");
    if (artifact.device() != "cpu")
      throw Error(options.model + ": --profile reads the kernel times of CPU code; this runs on " +
                  artifact.device());
    throw Error(options.model + " times no kernels: compile it with kilnc --profile");
  }
  for (long i = 0; i < options.warmup; ++i)
    runOnce();
  if (options.profile && kiln_artifact_profile_reset(artifact.handle()) != KILN_OK)
    throw Error(kiln_last_error());
  long runs = std::max(options.repeat, 1L);
  std::vector<double> millis, deviceMillis;
  millis.reserve(static_cast<std::size_t>(runs));
  for (long i = 0; i < runs; ++i) {
    auto start = std::chrono::steady_clock::now();
    runOnce();
    auto stop = std::chrono::steady_clock::now();
    millis.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
    if (onGpu)
      deviceMillis.push_back(artifact.lastDeviceMs());
  }

  if (options.outputDir)
    writeOutputs(options, outputs, outputFiles);
  if (options.print)
    printOutputs(outputs);
  std::vector<double> stepMillis;
  if (options.repeat > 0) {
    std::string device;
    if (onGpu) {
      // With one timed run and no warmup, that run launched directly and captured the graph.
      std::string graph = artifact.cudaGraph();
      bool replayed = graph == "on" && runs + options.warmup > 1;
      char text[128];
      std::snprintf(text, sizeof text, "; on %s median %.4f ms per run (", artifact.device().c_str(),
                    median(deviceMillis));
      device = text + std::string(replayed ? "CUDA graph" : "direct launches") +
               (graph.rfind("failed: ", 0) == 0 ? "; CUDA graph " + graph : "") + ")";
    }
    std::printf("%ld run%s: median %.4f ms per run (min %.4f ms, max %.4f ms)%s\n", runs, runs == 1 ? "" : "s",
                median(millis), *std::min_element(millis.begin(), millis.end()),
                *std::max_element(millis.begin(), millis.end()), device.c_str());
    // On a GPU, also steps back to back on data that stays on the device, in rounds of
    // --repeat steps: the time a caller that keeps its tensors on the GPU sees.
    if (onGpu) {
      for (int round = 0; round < kStepRounds; ++round)
        stepMillis.push_back(artifact.timeSteps(static_cast<int>(runs)));
      std::printf("%d rounds of %ld steps on data kept on %s: median %.4f ms per step (min %.4f ms)\n",
                  kStepRounds, runs, artifact.device().c_str(), median(stepMillis),
                  *std::min_element(stepMillis.begin(), stepMillis.end()));
    }
  }
  std::vector<KernelTime> kernels;
  if (options.profile) {
    kernels = kernelTimes(artifact.handle(), runs);
    printProfile(kernels, std::accumulate(millis.begin(), millis.end(), 0.0) / runs);
  }
  if (options.timingJson)
    writeTimingJson(*options.timingJson, artifact, millis, deviceMillis, stepMillis,
                    options.profile ? &kernels : nullptr);
  if (std::fflush(stdout) != 0)
    throw Error(std::string("cannot write to stdout: ") + std::strerror(errno));
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  try {
    return run(argc, argv);
  } catch (const std::bad_alloc &) {
    std::fprintf(stderr, "kiln-run: error: out of memory\n");
  } catch (const std::exception &e) {
    std::fprintf(stderr, "kiln-run: error: %s\n", e.what());
  }
  return 1;
}
