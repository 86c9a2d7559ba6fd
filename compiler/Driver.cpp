//===- Driver.cpp - The kilnc compilation driver --------------------------===//
#include "compiler/Driver.h"

#include "compiler/Pipeline.h"
#include "dialects/kiln/KilnOps.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

using namespace mlir;

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
  case Emit::Mlir: case Emit::Linalg: case Emit::LLVMMlir: ext = ".mlir"; break;
  case Emit::LLVMIR: ext = ".ll"; break;
  case Emit::Object: ext = ".o"; break;
  case Emit::Header: ext = ".h"; break;
  }
  llvm::sys::path::replace_extension(path, ext);
  return path.str().str();
}

int writeOutput(const std::string &path, llvm::StringRef contents) {
  std::string error;
  auto file = openOutputFile(path, &error);
  if (!file) {
    llvm::errs() << "kilnc: error: cannot write '" << path << "': " << error << "\n";
    return kExitError;
  }
  file->os() << contents;
  file->keep();
  return kExitOk;
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

int runCompiler(const CompilerOptions &options, MLIRContext &context) {
  Progress progress(options.verbose);
  std::string output = options.outputPath.empty() ? defaultOutput(options) : options.outputPath;

  // Import: ONNX, or a kiln-dialect .mlir file.
  OwningOpRef<ModuleOp> module;
  if (llvm::StringRef(options.inputPath).ends_with(".mlir")) {
    llvm::SourceMgr sourceMgr;
    std::string error;
    auto file = openInputFile(options.inputPath, &error);
    if (!file) {
      llvm::errs() << "kilnc: error: " << error << "\n";
      return kExitError;
    }
    sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
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
  if (failed(applyPassManagerCLOptions(graph)))
    return kExitUsage;
  buildGraphPipeline(graph, options.graph);
  if (failed(graph.run(*module)))
    return kExitError;
  progress.done("graph passes");
  FailureOr<ModelSignature> signature = readSignature(*module);
  if (failed(signature))
    return kExitError;
  Phase phase = options.emit == Emit::Mlir     ? Phase::Kiln
                : options.emit == Emit::Linalg ? Phase::Linalg
                                               : Phase::LLVMDialect;
  // The names live on in the manifest; lowering must not carry them along.
  if (phase != Phase::Kiln)
    stripSignatureNames(*module);
  PassManager lowering(&context);
  if (failed(applyPassManagerCLOptions(lowering)))
    return kExitUsage;
  buildLoweringPipeline(lowering, phase, options.cpu);
  if (failed(lowering.run(*module)))
    return kExitError;
  if (options.stats && phase == Phase::LLVMDialect)
    printBufferPlan(*module);
  progress.done("lowered to " + std::string(phase == Phase::Kiln     ? "kiln"
                                            : phase == Phase::Linalg ? "linalg"
                                                                     : "the LLVM dialect"));
  if (options.emit == Emit::Mlir || options.emit == Emit::Linalg ||
      options.emit == Emit::LLVMMlir) {
    std::string text;
    llvm::raw_string_ostream os(text);
    module->print(os);
    return writeOutput(output, text);
  }
  if (options.emit == Emit::Header)
    return writeOutput(output, emitHeader(*signature, options.target));

  auto machine = createTargetMachine(options.target);
  if (!machine)
    return reportError(machine.takeError());
  llvm::LLVMContext llvmContext;
  auto llvmModule =
      translateToLLVMIR(*module, *signature, **machine, options.target, llvmContext);
  if (!llvmModule)
    return reportError(llvmModule.takeError());
  progress.done("translated and optimized LLVM IR");
  if (options.emit == Emit::LLVMIR) {
    std::string text;
    llvm::raw_string_ostream os(text);
    (*llvmModule)->print(os, nullptr);
    return writeOutput(output, text);
  }
  auto object = emitObject(**llvmModule, **machine);
  if (!object)
    return reportError(object.takeError());
  progress.done("generated " + std::to_string(object->size()) + " bytes of " +
                (*machine)->getTargetCPU().str() + " code");
  if (options.emit == Emit::Object)
    return writeOutput(output, *object);
  if (output == "-") {
    llvm::errs() << "kilnc: error: an artifact cannot be written to stdout; give -o FILE\n";
    return kExitUsage;
  }
  if (llvm::Error error = linkArtifact(*object, output))
    return reportError(std::move(error));
  progress.done("wrote " + output);
  return kExitOk;
}

} // namespace kiln
