//===- Driver.cpp - The kilnc compilation driver --------------------------===//
#include "compiler/Driver.h"

#include "compiler/GpuProgram.h"
#include "compiler/ObjectCode.h"
#include "compiler/Pipeline.h"
#include "compiler/Report.h"
#include "codegen/GPU/Chip.h"
#include "codegen/NVPTX/Target.h"
#include "dialects/kiln/Device.h"
#include "dialects/kiln/KilnOps.h"
#include "passes/Passes.h"

#include "kiln/files.h"
#include "kiln/tensor.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

using namespace mlir;

namespace {
/// MLIR's pass-manager flags (--mlir-print-ir-*, crash reproducers) and
/// --mlir-timing, for every pass manager kilnc runs: each prints its own
/// timing report when it is destroyed.
mlir::LogicalResult configurePassManager(mlir::PassManager &pm) {
  if (mlir::failed(mlir::applyPassManagerCLOptions(pm)))
    return mlir::failure();
  auto timing = std::make_unique<mlir::DefaultTimingManager>();
  mlir::applyDefaultTimingManagerCLOptions(*timing);
  if (timing->isEnabled())
    pm.enableTiming(std::move(timing));
  return mlir::success();
}
} // namespace

namespace kiln {

std::string parseInputShape(llvm::StringRef spec, ImportOptions &options) {
  auto [name, dims] = spec.rsplit('=');
  if (name.empty() || dims.empty() || !spec.contains('='))
    return "--input-shape expects NAME=DIMxDIM..., got '" + spec.str() + "'";
  llvm::SmallVector<int64_t> shape;
  if (dims != "scalar") {
    llvm::SmallVector<llvm::StringRef> parts;
    dims.split(parts, 'x');
    for (llvm::StringRef part : parts) {
      int64_t d;
      if (part.getAsInteger(10, d) || d < 0)
        return "--input-shape " + spec.str() + ": '" + part.str() +
               "' is not a non-negative dimension";
      shape.push_back(d);
    }
  }
  options.inputShapes[name] = shape;
  return "";
}

/// `file: node 'name': ` for a location, or "" when it names nothing.
static std::string describeLocation(Location loc) {
  if (auto name = llvm::dyn_cast<NameLoc>(loc)) {
    std::string where = describeLocation(name.getChildLoc());
    llvm::StringRef text = name.getName().strref();
    bool isNode = !text.starts_with("input '") && !text.starts_with("output '") &&
                  !text.starts_with("initializer '");
    return where + (isNode ? "node '" + text.str() + "': " : text.str() + ": ");
  }
  if (auto file = llvm::dyn_cast<FileLineColLoc>(loc)) {
    std::string text = file.getFilename().str();
    if (file.getLine() != 0)
      text += ":" + std::to_string(file.getLine()) + ":" + std::to_string(file.getColumn());
    return text + ": ";
  }
  if (auto fused = llvm::dyn_cast<FusedLoc>(loc))
    if (!fused.getLocations().empty())
      return describeLocation(fused.getLocations().front());
  if (auto callSite = llvm::dyn_cast<CallSiteLoc>(loc))
    return describeLocation(callSite.getCallee());
  return "";
}

DiagnosticEngine::HandlerID installDiagnosticPrinter(MLIRContext &context,
                                                     llvm::StringRef tool) {
  std::string prefix = tool.str();
  // One line per problem: the op dump MLIR attaches helps compiler authors,
  // who get it back with --mlir-print-op-on-diagnostic.
  context.printOpOnDiagnostic(false);
  return context.getDiagEngine().registerHandler([prefix](Diagnostic &diag) {
    const char *severity = diag.getSeverity() == DiagnosticSeverity::Error     ? "error"
                           : diag.getSeverity() == DiagnosticSeverity::Warning ? "warning"
                           : diag.getSeverity() == DiagnosticSeverity::Note    ? "note"
                                                                               : "remark";
    llvm::errs() << prefix << ": " << severity << ": " << describeLocation(diag.getLocation())
                 << diag.str() << "\n";
    for (const Diagnostic &note : diag.getNotes())
      llvm::errs() << prefix << ": note: " << describeLocation(note.getLocation())
                   << note.str() << "\n";
    return success();
  });
}

namespace {
/// Reports phase timings on --verbose, so long compiles show progress.
class Progress {
public:
  explicit Progress(bool enabled) : enabled(enabled) {}
  void done(llvm::StringRef what) {
    if (!enabled)
      return;
    auto now = std::chrono::steady_clock::now();
    double seconds = std::chrono::duration<double>(now - last).count();
    last = now;
    llvm::errs() << "kilnc: " << what << " (" << llvm::format("%.2f", seconds) << " s)\n";
  }

private:
  bool enabled;
  std::chrono::steady_clock::time_point last = std::chrono::steady_clock::now();
};

std::string defaultOutput(const CompilerOptions &options) {
  llvm::SmallString<128> path(llvm::sys::path::filename(options.inputPath));
  const char *ext = ".kiln";
  switch (options.emit) {
  case Emit::Artifact: ext = ".kiln"; break;
  case Emit::Mlir: case Emit::Linalg: case Emit::Gpu: case Emit::LLVMMlir: ext = ".mlir"; break;
  case Emit::Ptx: ext = ".ptx"; break;
  case Emit::CudaProgram: ext = ".program"; break;
  case Emit::LLVMIR: ext = ".ll"; break;
  case Emit::Object: ext = ".o"; break;
  case Emit::Header: ext = ".h"; break;
  }
  llvm::sys::path::replace_extension(path, ext);
  return path.str().str();
}

/// Writes `contents` to a temporary file beside `path` and renames it into
/// place, so a failed or interrupted write leaves what was there.
int writeOutput(const std::string &path, llvm::StringRef contents) {
  llvm::Error error = llvm::writeToOutput(path, [&](llvm::raw_ostream &os) {
    os << contents;
    return llvm::Error::success();
  });
  if (error) {
    llvm::errs() << "kilnc: error: cannot write '" << path
                 << "': " << llvm::toString(std::move(error)) << "\n";
    return kExitError;
  }
  return kExitOk;
}

/// Why `name` cannot be the compiled function's symbol, or "": it must be a C
/// identifier (the header declares it) and must not be one of the symbols
/// the artifact defines for the runtime (kiln_entry, kiln_manifest, ...).
std::string invalidSymbolName(llvm::StringRef name) {
  static const char *const kKeywords[] = {
      "auto",     "break",    "case",     "char",   "const",    "continue", "default",
      "do",       "double",   "else",     "enum",   "extern",   "float",    "for",
      "goto",     "if",       "inline",   "int",    "long",     "register", "restrict",
      "return",   "short",    "signed",   "sizeof", "static",   "struct",   "switch",
      "typedef",  "union",    "unsigned", "void",   "volatile", "while",    "bool",
      "true",     "false",    "class",    "delete", "new",      "this",     "template"};
  if (name.empty() || llvm::isDigit(name.front()) ||
      !llvm::all_of(name, [](char c) { return llvm::isAlnum(c) || c == '_'; }))
    return "it must be a C identifier (letters, digits and '_', not starting with a digit)";
  if (llvm::is_contained(kKeywords, name))
    return "it is a C or C++ keyword";
  if (name.starts_with("kiln_") && name != "kiln_model")
    return "names starting with 'kiln_' are reserved for the artifact's own symbols";
  return "";
}

/// Numbers the gathers (Gather, GatherElements, GatherND) and scatters
/// (ScatterElements, ScatterND) of the CPU module `module` for run-time index checks
/// (kIndexCheckAttr) and adds the global their failures are recorded in.
/// Those by constant indices were checked when they were imported.
std::vector<IndexCheck> planIndexChecks(ModuleOp module) {
  std::vector<IndexCheck> checks;
  OpBuilder builder(module.getContext());
  module.walk([&](Operation *op) {
    if (!isa<GatherOp, GatherElementsOp, ScatterElementsOp, GatherNDOp, ScatterNDOp>(op))
      return;
    Value data = op->getOperand(0), indices = op->getOperand(1);
    if (matchPattern(indices, m_Constant()))
      return;
    // The extents the indices address: the axis's, or for GatherND and
    // ScatterND one per coordinate of an index row (a check each, numbered
    // from the op's id).
    ArrayRef<int64_t> shape = cast<RankedTensorType>(data.getType()).getShape();
    int64_t depth = cast<RankedTensorType>(indices.getType()).getShape().back();
    SmallVector<int64_t> extents;
    if (auto gather = dyn_cast<GatherNDOp>(op))
      llvm::append_range(extents, shape.slice(gather.getBatchDims(), depth));
    else if (isa<ScatterNDOp>(op))
      llvm::append_range(extents, shape.take_front(depth));
    else
      extents.push_back(shape[op->getAttrOfType<IntegerAttr>("axis").getInt()]);
    int64_t id = static_cast<int64_t>(checks.size());
    op->setAttr(kIndexCheckAttr, builder.getI64IntegerAttr(id));
    for (int64_t extent : extents)
      checks.push_back({static_cast<int64_t>(checks.size()), extent, nodeName(op->getLoc())});
  });
  if (!checks.empty()) {
    module.getContext()->getOrLoadDialect<memref::MemRefDialect>();
    builder.setInsertionPointToStart(module.getBody());
    auto type = MemRefType::get({2}, builder.getI64Type());
    memref::GlobalOp::create(builder, module.getLoc(), kIndexCheckSymbol,
                             /*sym_visibility=*/nullptr, type,
                             DenseElementsAttr::get(RankedTensorType::get({2}, builder.getI64Type()),
                                                    llvm::ArrayRef<int64_t>{0, 0}),
                             /*constant=*/false, /*alignment=*/nullptr);
  }
  return checks;
}

/// The kernels kiln-profile-kernels timed in the lowered CPU module `module`.
static std::vector<ProfiledKernel> listProfiledKernels(ModuleOp module) {
  std::vector<ProfiledKernel> kernels;
  auto list = module->getAttrOfType<ArrayAttr>(kKernelProfileAttr);
  if (!list)
    return kernels;
  for (auto entry : list.getAsRange<ArrayAttr>()) {
    auto text = [&](unsigned i) { return cast<StringAttr>(entry[i]).getValue().str(); };
    kernels.push_back({text(0), text(1), text(2)});
  }
  return kernels;
}

/// The files the user gave kilnc to read, which no output may replace.
std::vector<rt::InputFile> inputFiles(const CompilerOptions &options) {
  std::vector<rt::InputFile> inputs = {{options.inputPath, "the model"}};
  for (const std::string &path : options.placeFiles)
    inputs.push_back({path, "a --place-file"});
  for (const std::string &spec : options.frozenInputs)
    inputs.push_back({llvm::StringRef(spec).split('=').second.str(), "a --freeze-input tensor"});
  if (!options.trainConfigPath.empty())
    inputs.push_back({options.trainConfigPath, "the --train-config"});
  return inputs;
}

int reportError(llvm::Error error) {
  llvm::errs() << "kilnc: error: " << llvm::toString(std::move(error)) << "\n";
  return kExitError;
}
} // namespace

/// Prints the figures kiln-plan-buffers recorded on the lowered functions.
static void printBufferPlan(ModuleOp module) {
  module.walk([&](Operation *op) {
    auto peak = op->getAttrOfType<IntegerAttr>("kiln.peak_intermediate_bytes");
    if (!peak)
      return;
    auto count = [&](llvm::StringRef name) {
      auto attr = op->getAttrOfType<IntegerAttr>(name);
      return attr ? attr.getInt() : 0;
    };
    llvm::errs() << "kilnc: peak intermediate memory: " << peak.getInt() << " bytes ("
                 << count("kiln.intermediate_buffers") << " buffers in one arena, "
                 << count("kiln.unplanned_buffers") << " left to the heap)\n";
  });
}

namespace {
/// The devices an artifact is compiled for (--target).
struct Targets {
  bool cpu = false;
  /// Lowest first: the first one's PTX is embedded for newer GPUs.
  std::vector<GpuChip> cuda;
};

/// Parses --target values; returns an error message or "".
std::string parseTargets(llvm::ArrayRef<std::string> specs, Targets &targets) {
  for (const std::string &spec : specs) {
    llvm::SmallVector<llvm::StringRef> parts;
    llvm::StringRef(spec).split(parts, ',', -1, /*KeepEmpty=*/false);
    for (llvm::StringRef part : parts) {
      part = part.trim();
      if (part == "cpu") {
        targets.cpu = true;
        continue;
      }
      if (!part.consume_front("cuda"))
        return "--target: unknown target '" + part.str() + "' (cpu, cuda:sm_80, cuda:sm_90, ...)";
      if (!part.consume_front(":") || part.empty())
        return "--target: name the GPU architecture, e.g. cuda:sm_90 (known: " +
               knownGpuChips() + ")";
      std::optional<GpuChip> chip = lookupGpuChip(part);
      if (!chip)
        return "--target: unknown GPU architecture '" + part.str() + "' (known: " +
               knownGpuChips() + ")";
      if (llvm::none_of(targets.cuda, [&](const GpuChip &c) { return c.name == chip->name; }))
        targets.cuda.push_back(*chip);
    }
  }
  llvm::sort(targets.cuda,
             [](const GpuChip &a, const GpuChip &b) { return a.version < b.version; });
  if (!targets.cpu && targets.cuda.empty())
    return "--target: give at least one target";
  return "";
}

const char *emitName(Emit emit) {
  switch (emit) {
  case Emit::Artifact: return "artifact";
  case Emit::Mlir: return "mlir";
  case Emit::Linalg: return "linalg";
  case Emit::Gpu: return "gpu";
  case Emit::LLVMMlir: return "llvm-mlir";
  case Emit::LLVMIR: return "llvm";
  case Emit::Ptx: return "ptx";
  case Emit::CudaProgram: return "cuda-program";
  case Emit::Object: return "obj";
  case Emit::Header: return "header";
  }
  return "";
}

/// Whether `emit` shows one target's code, so that --target must name one.
bool isPerTarget(Emit emit) {
  return emit != Emit::Artifact && emit != Emit::Mlir && emit != Emit::Header;
}

std::string printed(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  op->print(os);
  return text;
}

/// Kernels index their buffers with 32-bit arithmetic unless one of them
/// holds 2^31 elements or more.
unsigned kernelIndexBitwidth(ModuleOp module) {
  unsigned bits = 32;
  module.walk([&](gpu::GPUFuncOp func) {
    for (Type type : func.getArgumentTypes())
      if (auto memref = llvm::dyn_cast<MemRefType>(type);
          memref && memref.getNumElements() >= (int64_t(1) << 31))
        bits = 64;
  });
  return bits;
}

} // namespace

/// Compiles `module` (graph level) for GPUs: kernels, host program, PTX and
/// cubins. For an intermediate --emit, writes it and returns its exit code
/// through `exitCode`; otherwise returns the image.
/// A module holding a copy of `func` as its @main, without a device: a
/// partition's GPU stage or a train step's further entry, compiled as a model.
static OwningOpRef<ModuleOp> asModel(func::FuncOp func) {
  OwningOpRef<ModuleOp> model = ModuleOp::create(func.getLoc());
  model->getBody()->push_back(func.clone());
  auto main = cast<func::FuncOp>(model->getBody()->front());
  main.setSymName("main");
  main->removeAttr(kDeviceAttrName);
  return model;
}

static std::optional<GpuImage> compileForGpu(ModuleOp module, const Targets &targets,
                                             const CompilerOptions &options, Progress &progress,
                                             const std::string &output, int &exitCode) {
  MLIRContext &context = *module.getContext();
  const GpuChip &lowest = targets.cuda.front();
  exitCode = kExitError;
  PassManager kernels(&context);
  if (failed(configurePassManager(kernels))) {
    exitCode = kExitUsage;
    return std::nullopt;
  }
  buildGpuKernelPipeline(kernels, lowest.name, options.emit == Emit::Linalg, options.allowTf32);
  if (failed(kernels.run(module)))
    return std::nullopt;
  progress.done(options.emit == Emit::Linalg ? "lowered to linalg" : "formed GPU kernels");
  if (options.emit == Emit::Linalg || options.emit == Emit::Gpu) {
    exitCode = writeOutput(output, printed(module));
    return std::nullopt;
  }

  auto program = buildGpuProgram(module);
  if (!program) {
    exitCode = reportError(program.takeError());
    return std::nullopt;
  }
  if (options.stats)
    llvm::errs() << "kilnc: GPU program: " << program->launches << " kernel launches, "
                 << program->matmuls << " library matrix products, " << program->copies
                 << " copies; peak intermediate memory: " << program->arenaBytes
                 << " bytes (one arena); constants: " << program->constants.size()
                 << " bytes\n";
  if (options.emit == Emit::CudaProgram) {
    exitCode = writeOutput(output, program->text);
    return std::nullopt;
  }

  PassManager nvvm(&context);
  if (failed(configurePassManager(nvvm))) {
    exitCode = kExitUsage;
    return std::nullopt;
  }
  buildGpuToNVVMPipeline(nvvm, kernelIndexBitwidth(module));
  if (failed(nvvm.run(module)))
    return std::nullopt;
  progress.done("lowered GPU kernels to NVVM");
  if (options.emit == Emit::LLVMMlir) {
    exitCode = writeOutput(output, printed(module));
    return std::nullopt;
  }

  auto toolkit = findCudaToolkit(options.cudaPath);
  if (!toolkit) {
    exitCode = reportError(toolkit.takeError());
    return std::nullopt;
  }
  auto gpuModule = module.lookupSymbol<gpu::GPUModuleOp>("kiln_kernels");
  GpuImage image;
  image.program = std::move(program->text);
  image.constants = std::move(program->constants);
  image.minDriver = toolkit->driverVersion();
  for (const GpuChip &chip : targets.cuda) {
    llvm::LLVMContext llvmContext;
    auto llvmModule = translateKernelsToLLVMIR(gpuModule, chip, *toolkit, llvmContext);
    if (!llvmModule) {
      exitCode = reportError(llvmModule.takeError());
      return std::nullopt;
    }
    if (options.emit == Emit::LLVMIR) {
      std::string text;
      llvm::raw_string_ostream os(text);
      (*llvmModule)->print(os, nullptr);
      exitCode = writeOutput(output, text);
      return std::nullopt;
    }
    auto ptx = emitPtx(**llvmModule, chip);
    if (!ptx) {
      exitCode = reportError(ptx.takeError());
      return std::nullopt;
    }
    if (options.emit == Emit::Ptx) {
      exitCode = writeOutput(output, ptx->text);
      return std::nullopt;
    }
    auto cubin = assembleCubin(ptx->text, chip, *toolkit);
    if (!cubin) {
      exitCode = reportError(cubin.takeError());
      return std::nullopt;
    }
    progress.done("generated " + std::to_string(cubin->size()) + " bytes of " +
                  chip.name.str() + " code (ptxas " + std::to_string(toolkit->major) + "." +
                  std::to_string(toolkit->minor) + ")");
    image.cubins.emplace_back(chip.name.str(), std::move(*cubin));
    // The lowest target's PTX runs, compiled by the driver, on GPUs newer
    // than every cubin.
    if (&chip == &targets.cuda.front()) {
      image.ptx = std::move(ptx->text);
      image.ptxIsa = ptx->isa;
      image.ptxTarget = "compute_" + std::to_string(chip.version);
    }
  }
  exitCode = kExitOk;
  return image;
}

int runCompiler(const CompilerOptions &options, MLIRContext &context) {
  Progress progress(options.verbose);
  std::string output = options.outputPath.empty() ? defaultOutput(options) : options.outputPath;
  try {
    std::vector<rt::InputFile> inputs = inputFiles(options);
    if (output != "-")
      rt::refuseToOverwriteInput(output, options.outputPath.empty() ? "the default output" : "-o",
                                 inputs);
    if (!options.reportPath.empty())
      rt::refuseToOverwriteInput(options.reportPath, "--report", inputs);
  } catch (const kiln::rt::Error &e) {
    llvm::errs() << "kilnc: error: " << e.what() << "\n";
    return kExitUsage;
  }

  Targets targets;
  if (std::string error = parseTargets(options.targets, targets); !error.empty()) {
    llvm::errs() << "kilnc: error: " << error << "\n";
    return kExitUsage;
  }
  std::vector<std::string> placeRules = options.placeRules;
  for (const std::string &rule : placeRules) {
    std::string error;
    if (failed(parsePlacementRule(rule, error))) {
      llvm::errs() << "kilnc: error: --place: " << error << "\n";
      return kExitUsage;
    }
  }
  for (const std::string &path : options.placeFiles) {
    std::string text, reason;
    if (!rt::readRegularFile(path, text, reason)) {
      llvm::errs() << "kilnc: error: --place-file: cannot read '" << path << "': " << reason
                   << "\n";
      return kExitUsage;
    }
    llvm::SmallVector<llvm::StringRef> lines;
    llvm::StringRef(text).split(lines, '\n');
    for (auto [number, line] : llvm::enumerate(lines)) {
      // Node names may hold '#', so only whole lines are comments.
      llvm::StringRef rule = line.trim();
      if (rule.empty() || rule.starts_with("#"))
        continue;
      std::string error;
      if (failed(parsePlacementRule(rule, error))) {
        llvm::errs() << "kilnc: error: " << path << ":" << number + 1 << ": " << error << "\n";
        return kExitUsage;
      }
      placeRules.push_back(rule.str());
    }
  }
  if (std::string why = invalidSymbolName(options.target.functionName); !why.empty()) {
    llvm::errs() << "kilnc: error: --name '" << options.target.functionName << "': " << why
                 << "\n";
    return kExitUsage;
  }
  if (!options.defaultDevice.empty()) {
    std::string error;
    if (!DeviceName::parse(options.defaultDevice, error)) {
      llvm::errs() << "kilnc: error: --default-device: " << error << "\n";
      return kExitUsage;
    }
  }
  bool single = (targets.cpu ? 1 : 0) + targets.cuda.size() == 1;
  if (isPerTarget(options.emit) && !single) {
    llvm::errs() << "kilnc: error: --emit=" << emitName(options.emit)
                 << " shows the code of one target; give one --target\n";
    return kExitUsage;
  }
  bool gpuOnly = options.emit == Emit::Gpu || options.emit == Emit::Ptx ||
                 options.emit == Emit::CudaProgram;
  bool cpuOnly = options.emit == Emit::Object || options.emit == Emit::Header;
  if ((gpuOnly && targets.cuda.empty()) || (cpuOnly && !targets.cpu)) {
    llvm::errs() << "kilnc: error: --emit=" << emitName(options.emit) << " needs --target="
                 << (gpuOnly ? "cuda:sm_NN" : "cpu") << "\n";
    return kExitUsage;
  }

  // The host's machine, which also decides some of the graph's choices.
  auto machine = createTargetMachine(options.target);
  if (!machine)
    return reportError(machine.takeError());

  // Import: ONNX, or a kiln-dialect .mlir file.
  OwningOpRef<ModuleOp> module;
  if (llvm::StringRef(options.inputPath).ends_with(".mlir")) {
    llvm::SourceMgr sourceMgr;
    std::string text, reason;
    if (!rt::readRegularFile(options.inputPath, text, reason)) {
      llvm::errs() << "kilnc: error: cannot read '" << options.inputPath << "': " << reason
                   << "\n";
      return kExitError;
    }
    sourceMgr.AddNewSourceBuffer(llvm::MemoryBuffer::getMemBufferCopy(text, options.inputPath),
                                 llvm::SMLoc());
    module = parseSourceFile<ModuleOp>(sourceMgr, &context);
    if (!module)
      return kExitError;
  } else {
    ImportOptions importOptions;
    for (const std::string &spec : options.inputShapes) {
      std::string error = parseInputShape(spec, importOptions);
      if (!error.empty()) {
        llvm::errs() << "kilnc: error: " << error << "\n";
        return kExitUsage;
      }
    }
    for (const std::string &spec : options.frozenInputs) {
      auto [name, file] = llvm::StringRef(spec).split('=');
      if (name.empty() || file.empty()) {
        llvm::errs() << "kilnc: error: --freeze-input expects NAME=FILE.pb, got '" << spec
                     << "'\n";
        return kExitUsage;
      }
      importOptions.frozenInputs[name] = file.str();
    }
    ImportResult imported = importOnnxFile(options.inputPath, context, importOptions);
    if (!imported.module) {
      switch (imported.failure) {
      case ImportFailure::Unsupported: return kExitUnsupported;
      case ImportFailure::NeedsConstant: return kExitNeedsConstant;
      default: return kExitError;
      }
    }
    module = std::move(imported.module);
  }
  if (failed(verify(*module)))
    return kExitError;
  progress.done("imported " + options.inputPath);

  // The signature is read before lowering erases names and tensor types.
  PassManager graph(&context);
  if (failed(configurePassManager(graph)))
    return kExitUsage;
  GraphOptions graphOptions = options.graph;
  graphOptions.trainStep = options.train;
  graphOptions.fuseOneOpEach = !targets.cuda.empty();
  graphOptions.channelFirstConvolutions = targets.cuda.empty();
  // The blocked convolutions are calls of the runtime's oneDNN kernels.
  bool blockedKernels = targets.cuda.empty() && options.cpu.gemmLibrary == "onednn" &&
                        KILN_CPU_KERNELS_ONEDNN && !cpuKernelsArchive().empty();
  if (!blockedKernels)
    graphOptions.blockedLayout = BlockedLayout::Off;
  // A block is one vector of channels: oneDNN's kernels for 16-channel
  // blocks are AVX-512 code, those for 8-channel blocks AVX2 code, and a CPU
  // without them runs its reference loops, some thousand times slower
  // (ResNet-50: 138 s a run against 87 ms in NCHW).
  if (hasSixteenLaneVectors(**machine))
    graphOptions.channelBlock = kWideChannelBlock;
  else if (hasDirectConvolutionKernel(**machine))
    graphOptions.channelBlock = kNarrowChannelBlock;
  else if (graphOptions.blockedLayout != BlockedLayout::Off) {
    if (graphOptions.blockedLayout == BlockedLayout::All)
      llvm::errs() << "kilnc: warning: --blocked-layout=all needs a CPU with AVX2 and FMA or "
                      "AVX-512 (--cpu="
                   << (*machine)->getTargetCPU() << " has neither); images stay NCHW\n";
    graphOptions.blockedLayout = BlockedLayout::Off;
  }
  PlacementOptions &placement = graphOptions.placement.emplace();
  placement.rules = placeRules;
  placement.defaultDevice = !options.defaultDevice.empty() ? options.defaultDevice
                            : targets.cpu                  ? "/cpu:0"
                                                           : "/gpu:0";
  placement.deviceTypes.clear();
  if (targets.cpu)
    placement.deviceTypes.push_back("CPU");
  if (!targets.cuda.empty())
    placement.deviceTypes.push_back("GPU");
  placement.allowSoftPlacement = options.allowSoftPlacement;
  placement.log = options.logDevicePlacement;
  if (failed(buildGraphPipeline(graph, graphOptions)))
    return kExitUsage; // a training option that does not parse, already reported
  std::shared_ptr<PlacementReport> report;
  if (!options.reportPath.empty()) {
    report = std::make_shared<PlacementReport>();
    graph.addInstrumentation(std::make_unique<ReportInstrumentation>(report));
  }
  if (failed(graph.run(*module)))
    return kExitError;
  progress.done("graph passes");
  if (report) {
    collectFusions(*module, *report);
    if (int code = writeOutput(options.reportPath, renderReport(*report)); code != kExitOk)
      return code;
    progress.done("wrote the placement report " + options.reportPath);
  }
  FailureOr<std::optional<PartitionPlan>> partitions = readPartitionPlan(*module);
  if (failed(partitions))
    return kExitError;
  std::optional<PartitionPlan> &plan = *partitions;
  if (plan) {
    WalkResult collective = module->walk([](AllReduceStartOp op) {
      op.emitError("a data-parallel train step runs whole on one device per replica: it takes no "
                   "--place (placement splits it over devices)");
      return WalkResult::interrupt();
    });
    if (collective.wasInterrupted())
      return kExitError;
  }
  // A train step's @eval and @init are entries of their own, on the CPU and on
  // GPUs; partitioned artifacts carry the step alone for now.
  if (plan)
    for (const char *name : kExtraEntries)
      if (auto func = module->lookupSymbol<func::FuncOp>(name))
        func.erase();
  FailureOr<ModelSignature> signature = readSignature(*module);
  if (failed(signature))
    return kExitError;
  if (plan && options.verbose) {
    std::string devices;
    for (const auto &device : plan->devices)
      devices += (devices.empty() ? "" : ", ") + device.first;
    progress.done("partitioned over " + devices + " in " + std::to_string(plan->stages.size()) +
                  " stages");
  }
  if (options.emit == Emit::Mlir)
    return writeOutput(output, printed(*module));
  if (options.emit == Emit::Header) {
    if (!targets.cuda.empty()) {
      llvm::errs() << "kilnc: error: --emit=header declares the CPU function; GPU code is "
                      "run through the runtime (kiln-run, kiln_artifact_run)\n";
      return kExitUsage;
    }
    if (plan) {
      llvm::errs() << "kilnc: error: --emit=header declares one function; a model placed on "
                      "several devices runs through the runtime (kiln-run, kiln_artifact_run)\n";
      return kExitUsage;
    }
    return writeOutput(output, emitHeader(*signature, options.target));
  }
  if (options.emit == Emit::Artifact && output == "-") {
    llvm::errs() << "kilnc: error: an artifact cannot be written to stdout; give -o FILE\n";
    return kExitUsage;
  }
  // The names live on in the manifest; lowering must not carry them along.
  stripSignatureNames(*module);
  // A partitioned model: each GPU stage is compiled on its own, as a model;
  // the CPU stages are compiled together below. @main only said how the
  // stages connect, which the manifest now records.
  std::vector<std::pair<size_t, GpuImage>> gpuStages;
  if (plan) {
    if (plan->hasGpu() && options.emit != Emit::Artifact) {
      llvm::errs() << "kilnc: error: --emit=" << emitName(options.emit)
                   << " shows one device's code; this placement puts stages on GPUs, which "
                      "only --emit=artifact (or mlir) shows together\n";
      return kExitUsage;
    }
    if (!plan->hasGpu() && (options.emit == Emit::Gpu || options.emit == Emit::Ptx ||
                            options.emit == Emit::CudaProgram)) {
      llvm::errs() << "kilnc: error: --emit=" << emitName(options.emit)
                   << " shows GPU code, and the placement puts nothing on a GPU\n";
      return kExitUsage;
    }
    module->lookupSymbol<func::FuncOp>("main").erase();
    for (auto [index, stage] : llvm::enumerate(plan->stages)) {
      if (!stage.isGpu())
        continue;
      auto func = module->lookupSymbol<func::FuncOp>(stage.function);
      OwningOpRef<ModuleOp> copy = asModel(func);
      func.erase();
      int exitCode;
      std::optional<GpuImage> image =
          compileForGpu(*copy, targets, options, progress, output, exitCode);
      if (!image || exitCode != kExitOk)
        return exitCode;
      gpuStages.push_back({index, std::move(*image)});
    }
    targets.cuda.clear();
    targets.cpu = plan->hasCpu();
  } else if (auto main = module->lookupSymbol<func::FuncOp>("main")) {
    main->removeAttr(kDeviceAttrName);
  }

  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> host;

  std::optional<GpuImage> gpu;
  std::vector<std::pair<std::string, GpuImage>> gpuEntries;
  if (!targets.cuda.empty()) {
    // Each further entry (a train step's @eval and @init) is a GPU program of
    // its own, compiled as a model whose @main it is.
    std::vector<std::pair<std::string, OwningOpRef<ModuleOp>>> entryModules;
    for (const char *name : kExtraEntries)
      if (auto func = module->lookupSymbol<func::FuncOp>(name))
        entryModules.push_back({name, asModel(func)});
    OwningOpRef<ModuleOp> copy = targets.cpu ? module->clone() : std::move(module);
    for (auto &[name, entry] : entryModules)
      copy->lookupSymbol<func::FuncOp>(name).erase();
    int exitCode;
    gpu = compileForGpu(*copy, targets, options, progress, output, exitCode);
    if (!gpu || exitCode != kExitOk)
      return exitCode;
    for (auto &[name, entry] : entryModules) {
      std::optional<GpuImage> image = compileForGpu(*entry, targets, options, progress, output, exitCode);
      if (!image || exitCode != kExitOk)
        return exitCode;
      progress.done("compiled the " + name + " entry for the GPU");
      gpuEntries.push_back({name, std::move(*image)});
    }
  }

  std::vector<IndexCheck> indexChecks;
  std::vector<ProfiledKernel> profiledKernels;
  // The weights and GPU images, whose bytes stay in `module`'s attributes and
  // the GpuImages until the artifact is linked.
  std::vector<DataSymbol> data;
  bool useDataObject =
      options.emit == Emit::Artifact && canWriteDataObject((*machine)->getTargetTriple());
  if (targets.cpu) {
    Phase phase = options.emit == Emit::Linalg ? Phase::Linalg : Phase::LLVMDialect;
    PassManager lowering(&context);
    if (failed(configurePassManager(lowering)))
      return kExitUsage;
    CPUPipelineOptions cpu = options.cpu;
    cpu.vectorLdexp = hasSixteenLaneVectors(**machine);
    cpu.constantB = cpu.gemmLibrary == "onednn" && KILN_CPU_KERNELS_ONEDNN && !cpuKernelsArchive().empty();
    cpu.directConvolutions = cpu.constantB && hasDirectConvolutionKernel(**machine);
    buildLoweringPipeline(lowering, phase, cpu);
    if (options.indexChecks)
      indexChecks = planIndexChecks(*module);
    // Resident state may be updated in its own buffer, unless the step can
    // fail midway (an index check), which must leave the state as it was.
    if (!plan && indexChecks.empty() && phase == Phase::LLVMDialect)
      markStatePairs(*module, *signature);
    if (failed(lowering.run(*module)))
      return kExitError;
    readInPlaceState(*module, *signature);
    profiledKernels = listProfiledKernels(*module);
    if (options.stats)
      printBufferPlan(*module);
    progress.done(phase == Phase::Linalg ? "lowered to linalg" : "lowered to the LLVM dialect");
    if (options.emit == Emit::Linalg || options.emit == Emit::LLVMMlir)
      return writeOutput(output, printed(*module));
    std::vector<EntryPoint> entries =
        plan ? stageEntries(*plan)
             : std::vector<EntryPoint>{modelEntry(*signature, options.target)};
    if (!plan)
      llvm::append_range(entries, extraEntries(*signature));
    // An artifact's weights go from their attributes straight into an object
    // of their own; --emit=llvm and --emit=obj show them in the module.
    if (useDataObject)
      data = takeConstantData(*module, kMinDataObjectBytes);
    auto llvmModule = translateToLLVMIR(*module, entries, **machine, options.target, llvmContext);
    if (!llvmModule)
      return reportError(llvmModule.takeError());
    progress.done("translated and optimized LLVM IR");
    host = std::move(*llvmModule);
  } else {
    host = createDataModule(**machine, llvmContext);
  }

  std::vector<DataSymbol> gpuData;
  if (gpu)
    llvm::append_range(gpuData, gpuImageSymbols(*gpu));
  for (const auto &[name, image] : gpuEntries)
    llvm::append_range(gpuData, gpuImageSymbols(image, "kiln_entry_" + name + "_"));
  for (const auto &[index, image] : gpuStages)
    llvm::append_range(gpuData, gpuImageSymbols(image, "kiln_stage_" + std::to_string(index) + "_"));
  if (useDataObject)
    llvm::append_range(data, gpuData);
  else
    addData(*host, gpuData);
  // GPU stages share one set of targets: the first one's records describe all.
  const GpuImage *gpuRecords = gpu ? &*gpu : gpuStages.empty() ? nullptr : &gpuStages.front().second;
  addManifest(*host, buildManifest(*signature, options.target, **machine, targets.cpu, gpuRecords,
                                   plan ? &*plan : nullptr, indexChecks, profiledKernels));
  if (options.emit == Emit::LLVMIR) {
    std::string text;
    llvm::raw_string_ostream os(text);
    host->print(os, nullptr);
    return writeOutput(output, text);
  }
  if (options.emit == Emit::Object) {
    auto object = emitObject(*host, **machine);
    if (!object)
      return reportError(object.takeError());
    progress.done("generated " + std::to_string(object->size()) + " bytes of " +
                  (*machine)->getTargetCPU().str() + " code");
    return writeOutput(output, *object);
  }
  unsigned threads = options.jobs ? options.jobs : defaultCodegenThreads();
  auto objects = emitObjects(
      *host, [&] { return createTargetMachine(options.target); }, threads);
  if (!objects)
    return reportError(objects.takeError());
  size_t bytes = 0;
  for (const std::string &object : *objects)
    bytes += object.size();
  size_t used = std::min<size_t>(threads, objects->size());
  progress.done("generated " + std::to_string(bytes) + " bytes of " +
                (*machine)->getTargetCPU().str() + " code in " + std::to_string(objects->size()) +
                (objects->size() == 1 ? " part" : " parts") + " on " + std::to_string(used) +
                (used == 1 ? " thread" : " threads"));
  if (llvm::Error error = linkArtifact(*objects, data, (*machine)->getTargetTriple(), output))
    return reportError(std::move(error));
  progress.done("wrote " + output);
  return kExitOk;
}

} // namespace kiln
