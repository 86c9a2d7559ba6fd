//===- Kernels.h - Building GPU kernels from a kiln.fusion -----*- C++ -*-===//
//
// kiln-gpu-form-kernels turns each fusion into kernels with one of a few
// schedules (a loop over the result, a row per warp or block, a library
// call with an epilogue). They share what is here: a kernel under
// construction, whose parameters appear as the elemental emitter asks for
// buffers, and the fusion's state: which of its body's tensors already
// live in @main tensors.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_GPU_KERNELS_H
#define KILN_CODEGEN_GPU_KERNELS_H

#include "codegen/GPU/Chip.h"
#include "codegen/GPU/Elemental.h"
#include "dialects/kiln/KilnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Builders.h"

namespace kiln {

/// A gpu.func being built. Its parameters are the buffers of @main tensors
/// it reads, in the order it first asks for them, then those of its results.
class KernelBuilder {
public:
  KernelBuilder(mlir::gpu::GPUModuleOp module, llvm::StringRef name, mlir::Location loc,
                mlir::TypeRange results, llvm::ArrayRef<int64_t> block);

  /// Inserts into the kernel's body.
  mlir::OpBuilder &getBuilder() { return builder; }
  mlir::Location getLoc() const { return loc; }
  /// The buffer of result `i`.
  mlir::Value getResult(unsigned i);
  /// The buffer holding @main tensor `tensor`, a new parameter the first time.
  mlir::Value getInput(mlir::Value tensor);
  /// Workgroup (shared) memory of `type`, private to each block.
  mlir::Value addSharedBuffer(mlir::MemRefType type);
  /// Thread and block coordinates, as index values.
  mlir::Value threadId(mlir::gpu::Dimension dim = mlir::gpu::Dimension::x);
  mlir::Value blockId(mlir::gpu::Dimension dim = mlir::gpu::Dimension::x);

  /// Finishes the kernel and launches it in @main at `main`'s insertion
  /// point over `grid`; returns the launch's results.
  mlir::ValueRange launch(mlir::OpBuilder &main, llvm::ArrayRef<int64_t> grid);

private:
  mlir::gpu::GPUFuncOp func;
  mlir::OpBuilder builder;
  mlir::Location loc;
  llvm::SmallVector<int64_t, 3> block;
  llvm::SmallVector<mlir::Type> resultTypes;
  llvm::SmallVector<mlir::Value> inputs;
  llvm::DenseMap<mlir::Value, unsigned> inputIndex;
};

/// One fusion on its way to kernels.
struct FusionKernels {
  FusionOp fusion;
  mlir::gpu::GPUModuleOp module;
  const GpuChip &chip;
  int64_t maxBlocksPerSM;
  bool allowTf32;
  /// Counter behind kernel names (kiln_k0, kiln_k1, ...), shared by the pass.
  unsigned &nextKernel;
  /// Body tensors whose elements already live in @main tensors: the
  /// fusion's inputs, constants moved to @main, results of this fusion's
  /// earlier kernels.
  llvm::DenseMap<mlir::Value, mlir::Value> materialized;
  /// Inserts into @main, before the fusion.
  mlir::OpBuilder main;

  std::string newKernelName() { return "kiln_k" + std::to_string(nextKernel++); }
  /// The @main value of body tensor `value` when no kernel needs to compute
  /// it: a materialized tensor, through reshapes (which become views in
  /// @main), or a constant; null otherwise.
  mlir::Value materializeView(mlir::Value value);
  /// An emitter whose buffers are `kernel`'s parameters for materialized
  /// tensors.
  ElementalEmitter makeEmitter(KernelBuilder &kernel, int64_t lanes);
};

/// Computes `results` with one loop kernel, a range of its blocks for each
/// shape among them, and records their @main tensors in
/// `state.materialized`.
mlir::LogicalResult emitLoopKernel(FusionKernels &state, llvm::ArrayRef<mlir::Value> results);

/// Computes the fusion's matrix product with the vendor library when it has
/// exactly one, of f32, f16 or bf16, and folds into the call the bias, the
/// addend and the ReLU that follow it; materializes the product (or what
/// the call computed) in `state.materialized`. Leaves everything when the
/// fusion has no such product.
mlir::LogicalResult emitLibraryMatmul(FusionKernels &state);

/// Moves fusions that only reshape and transpose (movement) into the product
/// fusion they feed, when that product can read the mover's input in place as
/// strided matrices, or else into the product fusion they read, when that
/// product can write its matrices in place of the mover's result. The
/// library then does without the copy. Runs on fusions of linalg ops.
void absorbMovementIntoProducts(mlir::func::FuncOp func);

/// Merges the loop fusions of `func` that only its return reads (a train
/// step's parameter and optimizer-slot updates) into one loop fusion before
/// the return, to be one kernel instead of one per parameter.
void mergeReturnedLoopFusions(mlir::func::FuncOp func);

/// Computes `results` with one row kernel when the fusion's reductions all
/// reduce the trailing dimensions of one row space (softmax, layer norm);
/// false when the fusion is not of that form.
mlir::FailureOr<bool> emitRowKernel(FusionKernels &state, llvm::ArrayRef<mlir::Value> results);

/// The identity of `combiner` (an associative, commutative reduction of
/// `type`: x + -0.0, x * 1, max(x, -inf), ...), or null when Kiln does not
/// reduce with it cooperatively.
mlir::TypedAttr reductionIdentity(mlir::Operation *combiner, mlir::Type type);

/// Splits the reduction computing body tensor `value` when it has fewer than
/// `fewerResultsThan` results and reduces at least `atLeastReduced` elements
/// into each (a bias's gradient: one sum over batch and pixels per channel),
/// which a kernel would compute with a thread or a block per result and most
/// of the GPU idle: outer reduction loops become parallel
/// ones of a partial result (`partial`, to materialize first, with its own
/// kernel), and a second reduction combines the partials into `value`'s
/// replacement (`result`). Fails, changing nothing, for other values.
struct SplitReduction {
  mlir::Value partial;
  mlir::Value result;
};
mlir::FailureOr<SplitReduction> splitLongReduction(mlir::Value value, int64_t fewerResultsThan,
                                                   int64_t atLeastReduced);

} // namespace kiln

#endif // KILN_CODEGEN_GPU_KERNELS_H
