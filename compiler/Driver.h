//===- Driver.h - The kilnc compilation driver ----------------*- C++ -*-===//
#ifndef KILN_COMPILER_DRIVER_H
#define KILN_COMPILER_DRIVER_H

#include "compiler/Artifact.h"
#include "compiler/OnnxImporter.h"
#include "compiler/Pipeline.h"

#include "mlir/IR/MLIRContext.h"

#include <string>
#include <vector>

namespace kiln {

/// kilnc's exit codes; test drivers rely on them.
enum ExitCode : int {
  kExitOk = 0,
  kExitError = 1,
  kExitUsage = 2,
  kExitUnsupported = 3,
  kExitNeedsConstant = 4,
};

/// What kilnc writes.
enum class Emit {
  Artifact,
  Mlir,
  Linalg,
  Gpu,         // GPU kernels and their launches (cuda targets)
  LLVMMlir,
  LLVMIR,
  Ptx,         // cuda targets
  CudaProgram, // the GPU host program (cuda targets)
  Object,
  Header
};

struct CompilerOptions {
  std::string inputPath;
  std::string outputPath; // empty: derived from the input; "-": stdout
  Emit emit = Emit::Artifact;
  TargetOptions target;
  /// --target values: "cpu", "cuda:sm_90", comma-separated lists of them.
  std::vector<std::string> targets = {"cpu"};
  /// The CUDA toolkit (ptxas, libdevice); empty: look in the usual places.
  std::string cudaPath;
  /// Let f32 matrix products on GPUs use TF32 tensor cores.
  bool allowTf32 = false;
  std::vector<std::string> inputShapes;  // name=AxBxC
  std::vector<std::string> frozenInputs; // name=tensor.pb
  GraphOptions graph;
  /// kiln-train-step's options when compiling a train step (kilnc --train).
  std::optional<std::string> train;
  /// Placement (kiln-place): NODE_REGEX=DEVICE rules, the default device
  /// (empty: /cpu:0, or /gpu:0 for GPU-only targets), soft placement and
  /// the placement log.
  std::vector<std::string> placeRules;
  /// Files of rules, one per line ('#' lines are comments), after `placeRules`.
  std::vector<std::string> placeFiles;
  /// The training config file (--train-config), an input like the model.
  std::string trainConfigPath;
  std::string defaultDevice;
  bool allowSoftPlacement = false;
  bool logDevicePlacement = false;
  /// Where to write the HTML placement report; empty: none.
  std::string reportPath;
  CPUPipelineOptions cpu;
  /// Check Gather indices at run time in CPU code (--no-index-checks: off).
  bool indexChecks = true;
  bool stats = false; // print the buffer plan's figures
  bool verbose = false;
  /// Threads that generate native code at once; 0: one per core.
  unsigned jobs = 0;
};

/// Parses `name=2x3x4` into `options`; returns an error message or "".
std::string parseInputShape(llvm::StringRef spec, ImportOptions &options);

/// Prints diagnostics as one line each, `tool: error: file: node 'n': msg`.
mlir::DiagnosticEngine::HandlerID installDiagnosticPrinter(mlir::MLIRContext &context,
                                                           llvm::StringRef tool);

/// Runs kilnc: import, graph passes, lowering, code generation, packaging.
int runCompiler(const CompilerOptions &options, mlir::MLIRContext &context);

} // namespace kiln

#endif // KILN_COMPILER_DRIVER_H
