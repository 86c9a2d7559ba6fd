//===- Passes.h - Kiln code generation passes and pipelines ---*- C++ -*-===//
#ifndef KILN_CODEGEN_PASSES_H
#define KILN_CODEGEN_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

#include "dialects/kiln_gpu/KilnGpuOps.h"

namespace kiln {

#define GEN_PASS_DECL
#include "codegen/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "codegen/Passes.h.inc"

/// Run-time index checks (CPU): a kiln.gather carrying the integer attribute
/// kIndexCheckAttr (its check id) is lowered with a test of each index that
/// records an out-of-range one in the module's memref.global
/// kIndexCheckSymbol, memref<2xi64> = [id + 1 (atomic max), index]. kilnc
/// creates the global, numbers the checks and lists them in the manifest;
/// the runtime reads and clears the global after each run.
inline constexpr const char *kIndexCheckAttr = "kiln.index_check";
inline constexpr const char *kIndexCheckSymbol = "kiln_index_check";

/// Kernel profiles (CPU, kilnc --profile): kiln-profile-kernels lists the
/// kernels it times in the module attribute kKernelProfileAttr, an array of
/// [function, kind, ONNX nodes] string triples in id order, and adds their
/// time in nanoseconds and their calls to the module's memref.global
/// kKernelProfileSymbol, memref<(2 x kernels)xi64>, at 2 * id and 2 * id + 1.
/// kilnc lists the kernels in the manifest; the runtime reads the counters.
inline constexpr const char *kKernelProfileAttr = "kiln.kernel_profile";
inline constexpr const char *kKernelProfileSymbol = "kiln_kernel_profile";

/// Choices for the CPU back end.
struct CPUPipelineOptions {
  /// The sgemm matrix products and convolutions call: "onednn" (dnnl_sgemm)
  /// or "openblas" (cblas_sgemm).
  std::string gemmLibrary = "onednn";
  /// The target scales floats by powers of two in one vector instruction
  /// (x86 AVX-512's vscalefps), which exp then uses.
  bool vectorLdexp = false;
  /// Products by constant weights call kiln_matmul_constant_b (the artifact
  /// links runtime/kernels' archive).
  bool constantB = false;
  /// The target has AVX2 and FMA but not AVX-512, where the runtime's
  /// kiln_conv2d_constant_w runs Kiln's direct kernel on plain images:
  /// convolutions by constant filters of any channel count call it (with
  /// constantB).
  bool directConvolutions = false;
  /// Time each kernel (kiln-profile-kernels).
  bool profile = false;
};

/// Adds the passes from linalg-on-tensors to the LLVM dialect for CPUs:
/// bufferization with results as out-parameters, loops, and conversion of
/// every dialect to LLVM with the bare-pointer calling convention.
void buildCPULoweringPipeline(mlir::OpPassManager &pm, const CPUPipelineOptions &options = {});

/// Lets one-shot bufferization turn the kiln collectives of data-parallel
/// steps (all_reduce_start, all_reduce_wait, world_size, replica_rank) into calls of the
/// runtime hooks that CPU artifacts link (runtime/kernels/Collective.c).
void registerCollectiveBufferization(mlir::DialectRegistry &registry);

/// Marks a call of a runtime kernel that reads and writes the buffers it
/// is given (as memrefs or as addresses from
/// memref.extract_aligned_pointer_as_index) during the call only:
/// kiln-plan-buffers may then place them in the arena, live until the call.
constexpr llvm::StringLiteral kNoCaptureCallAttr = "kiln.no_capture";

/// On such a call: the operands (numbers) whose buffers it only reads (a
/// blocked convolution's input, filters and bias), which
/// kiln-state-in-place may take for reads where the call stands.
constexpr llvm::StringLiteral kReadOnlyOperandsAttr = "kiln.read_only_operands";

/// Lets one-shot bufferization turn kiln.blocked_conv into calls of the
/// runtime's oneDNN convolution on blocked images
/// (runtime/kernels/BlockedConvolution.c).
void registerBlockedConvolutionBufferization(mlir::DialectRegistry &registry);

/// Lets one-shot bufferization turn pools of blocked images into calls of
/// the runtime's oneDNN pooling (runtime/kernels/BlockedPool.c).
void registerBlockedPoolBufferization(mlir::DialectRegistry &registry);

/// Registers the `kiln-cpu-lowering` pipeline for kiln-opt.
void registerCodegenPipelines();

} // namespace kiln

#endif // KILN_CODEGEN_PASSES_H
