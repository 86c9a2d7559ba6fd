//===- Pipeline.h - kilnc's phases from ONNX to an artifact ---*- C++ -*-===//
#ifndef KILN_COMPILER_PIPELINE_H
#define KILN_COMPILER_PIPELINE_H

#include "codegen/Passes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <optional>
#include <string>
#include <vector>

namespace kiln {

/// Where kilnc stops, in pipeline order.
enum class Phase {
  Kiln,      // kiln dialect after graph passes (--emit=mlir)
  Linalg,    // linalg on tensors (--emit=linalg)
  LLVMDialect, // LLVM dialect (--emit=llvm-mlir)
};

/// Where ops run (kiln-place); see docs/user-guide.md, "Placing ops on devices".
struct PlacementOptions {
  /// NODE_REGEX=DEVICE rules, first match wins.
  std::vector<std::string> rules;
  /// Device of ops no rule or input decides.
  std::string defaultDevice = "/cpu:0";
  /// Device types the artifact has code for ("CPU", "GPU").
  std::vector<std::string> deviceTypes = {"CPU"};
  bool allowSoftPlacement = false;
  /// Print each node's device (log_device_placement).
  bool log = false;
};

/// Where kiln-blocked-layout puts images in blocks of channels.
enum class BlockedLayout {
  /// Nowhere: every image stays NCHW.
  Off,
  /// Where the layout pays for its reorders: chains of convolutions.
  Auto,
  /// Around every convolution that can take it, even one alone.
  All,
};

/// Choices that shape the graph-level pipeline.
struct GraphOptions {
  /// Build a train step (kiln-train-step) first, with these pass options
  /// ("optimizer=adam learning-rate=0.001 ..."); none: compile for inference.
  std::optional<std::string> trainStep;
  /// Caps on a data-parallel step's all-reduce buckets (kiln-bucket-all-reduce).
  int64_t firstBucketBytes = 1 << 20;
  int64_t bucketBytes = 25 << 20;
  /// Place ops on devices and split the graph into one program per device
  /// (kiln-place, kiln-partition, kiln-form-stages).
  std::optional<PlacementOptions> placement;
  /// Group ops into kiln.fusion kernels (off: every op is its own kernel,
  /// for bisecting a miscompile).
  bool fusion = true;
  /// Print each fusion, its ops and ONNX nodes to stderr.
  bool fusionReport = false;
  /// With fusion off, still put each op in a fusion of its own (GPU code is
  /// formed from fusions).
  bool fuseOneOpEach = false;
  /// Fuse a weight gradient's transpose into its convolution, which the CPU
  /// lowering then writes channel-first (kiln-fuse
  /// channel-first-convolutions); only when every kernel is CPU code.
  bool channelFirstConvolutions = false;
  /// Where images go in blocks of channels around convolutions by constant
  /// filters (kiln-blocked-layout); only for CPU inference with the
  /// runtime's oneDNN kernels.
  BlockedLayout blockedLayout = BlockedLayout::Off;
  /// Channels per block: the target's vector of floats, 16 (AVX-512) or 8
  /// (AVX2).
  int64_t channelBlock = 16;
};

/// Adds the graph-level passes on the kiln dialect: canonicalization
/// (shape-op folding), constant folding, CSE, placement and partitioning
/// (when asked), decomposition of composite ops and fusion; first
/// kiln-train-step for a train step. Fails, printing why, when the training
/// options do not parse.
mlir::LogicalResult buildGraphPipeline(mlir::OpPassManager &pm,
                                       const GraphOptions &options = {});

/// Adds the passes that take a kiln module to `phase` (from the kiln phase).
void buildLoweringPipeline(mlir::OpPassManager &pm, Phase phase,
                           const CPUPipelineOptions &cpu = {});

/// Adds the passes that take a kiln module to GPU kernels (a gpu.module) and
/// their launches on `chip` (kiln-lower-to-linalg, kiln-gpu-form-kernels);
/// with `stopAtLinalg`, only as far as linalg inside the fusions; `allowTf32`
/// lets f32 library products use TF32 tensor cores.
void buildGpuKernelPipeline(mlir::OpPassManager &pm, llvm::StringRef chip, bool stopAtLinalg,
                            bool allowTf32 = false);

} // namespace kiln

#endif // KILN_COMPILER_PIPELINE_H
