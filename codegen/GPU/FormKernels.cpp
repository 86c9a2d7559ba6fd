//===- FormKernels.cpp - kiln.fusion to GPU kernels and launches ----------===//
//
// Walks @main's fusions in order and replaces each by the kernels that
// compute it (see Kernels.h for the schedules), leaving @main a straight
// line of kiln_gpu ops, constants and reshapes on tensors.
//
//===----------------------------------------------------------------------===//
#include "codegen/GPU/Kernels.h"
#include "codegen/Passes.h"

#include "dialects/kiln_gpu/KilnGpuOps.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"

namespace kiln {
#define GEN_PASS_DEF_KILNGPUFORMKERNELSPASS
#include "codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

constexpr llvm::StringLiteral kKernelModule = "kiln_kernels";
/// Reductions split before the row kernel: fewer results than this...
constexpr int64_t kFewRows = 64;
/// ...each of at least this many elements (a block per row would crawl).
constexpr int64_t kVeryLongRow = 1 << 16;
/// Reductions split instead of a loop kernel's thread per result: a sum of
/// the 64 rows of a matrix into its columns (a bias gradient at batch 64)
/// in one kernel would run a few dozen threads through 64 loads each, one
/// after the other (about 10 microseconds on an H100).
constexpr int64_t kFewResults = 8192;
constexpr int64_t kLongReduction = 32;
/// A second step is split again only if it is this long: one more kernel
/// costs about as much as a loop of a few hundred adds.
constexpr int64_t kLongSecondStep = 256;

struct KilnGpuFormKernelsPass : impl::KilnGpuFormKernelsPassBase<KilnGpuFormKernelsPass> {
  using KilnGpuFormKernelsPassBase::KilnGpuFormKernelsPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<GpuChip> target = lookupGpuChip(chip);
    if (!target) {
      module.emitError("kiln-gpu-form-kernels: unknown chip '")
          << chip << "' (known: " << knownGpuChips() << ")";
      return signalPassFailure();
    }
    module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(), UnitAttr::get(&getContext()));
    auto kernels = module.lookupSymbol<gpu::GPUModuleOp>(kKernelModule);
    if (!kernels) {
      OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
      kernels = gpu::GPUModuleOp::create(builder, module.getLoc(), kKernelModule);
    }

    unsigned nextKernel = 0;
    for (auto func : module.getOps<func::FuncOp>()) {
      for (FusionOp fusion : func.getOps<FusionOp>())
        if (failed(generalizeNamedOps(fusion)))
          return signalPassFailure();
      if (libraryGemm)
        absorbMovementIntoProducts(func);
      mergeReturnedLoopFusions(func);
      SmallVector<FusionOp> fusions(func.getOps<FusionOp>());
      for (FusionOp fusion : fusions) {
        FusionKernels state{fusion, kernels, *target, maxBlocksPerSM, allowTf32, nextKernel,
                            llvm::DenseMap<Value, Value>(), OpBuilder(fusion)};
        if (failed(formKernels(state)))
          return signalPassFailure();
      }
      if (failed(checkHostOps(func)))
        return signalPassFailure();
    }
  }

private:
  /// What @main may hold once every fusion is kernels.
  static LogicalResult checkHostOps(func::FuncOp func) {
    WalkResult result = func.walk([](Operation *op) {
      if (op->getParentOp() != op->getParentOfType<func::FuncOp>() ||
          isa<kgpu::KilnGpuDialect>(op->getDialect()) ||
          isa<func::ReturnOp, arith::ConstantOp, tensor::ExpandShapeOp, tensor::CollapseShapeOp,
              tensor::EmptyOp>(op) ||
          // A data-parallel step's collectives: records of the host program.
          isa<AllReduceStartOp, AllReduceWaitOp, WorldSizeOp, ReplicaRankOp>(op))
        return WalkResult::advance();
      op->emitError("kiln-gpu-form-kernels: '")
          << op->getName() << "' is outside every kiln.fusion; GPU code is formed from "
          << "fusions (kiln-fuse)";
      return WalkResult::interrupt();
    });
    return failure(result.wasInterrupted());
  }

  /// Constants in the body move to @main, where the host program places
  /// them; splats stay, since the emitter folds them into the code.
  static void hoistConstants(FusionKernels &state) {
    for (auto constant : llvm::make_early_inc_range(
             state.fusion.getBody().getOps<arith::ConstantOp>())) {
      auto elements = llvm::dyn_cast<ElementsAttr>(constant.getValue());
      if (!elements || llvm::isa<SplatElementsAttr>(elements))
        continue;
      Operation *copy = state.main.clone(*constant);
      state.materialized[constant.getResult()] = copy->getResult(0);
    }
  }

  static LogicalResult generalizeNamedOps(FusionOp fusion) {
    IRRewriter rewriter(fusion.getContext());
    SmallVector<linalg::LinalgOp> named;
    fusion.getBody().walk([&](linalg::LinalgOp op) {
      if (!isa<linalg::GenericOp>(op))
        named.push_back(op);
    });
    for (linalg::LinalgOp op : named) {
      rewriter.setInsertionPoint(op);
      if (failed(linalg::generalizeNamedOp(rewriter, op)))
        return op->emitError("kiln-gpu-form-kernels: cannot generalize this op");
    }
    return success();
  }

  /// Splits the reductions among `pending` that splitLongReduction takes
  /// with these bounds: their partial sums are materialized at once, by a
  /// row kernel where their reductions trail (else a loop kernel), and the
  /// second step takes their place in `pending`, to be split again while it
  /// sums at least kLongSecondStep partials into each result (each split
  /// shortens the sum, so this ends).
  static LogicalResult splitLongReductions(FusionKernels &state, SmallVector<Value> &pending,
                                           int64_t fewerResultsThan, int64_t atLeastReduced) {
    int64_t again = std::max(atLeastReduced, kLongSecondStep);
    for (Value &value : pending) {
      for (FailureOr<SplitReduction> split = splitLongReduction(value, fewerResultsThan, atLeastReduced);
           succeeded(split); split = splitLongReduction(value, fewerResultsThan, again)) {
        FailureOr<bool> rows = emitRowKernel(state, {split->partial});
        if (failed(rows) || (!*rows && failed(emitLoopKernel(state, {split->partial}))))
          return failure();
        value = split->result;
      }
    }
    return success();
  }

  LogicalResult formKernels(FusionKernels &state) {
    FusionOp fusion = state.fusion;
    for (auto [argument, input] :
         llvm::zip(fusion.getBody().getArguments(), fusion.getInputs()))
      state.materialized[argument] = input;
    hoistConstants(state);

    // The yielded values that still need a kernel (the body may change as
    // kernels are formed: a split product's sum replaces the product).
    auto collectPending = [&] {
      SmallVector<Value> pending;
      for (Value value : fusion.getYield().getValues()) {
        if (state.materialized.contains(value) || llvm::is_contained(pending, value))
          continue;
        auto type = llvm::cast<RankedTensorType>(value.getType());
        if (type.getNumElements() == 0) {
          state.materialized[value] = tensor::EmptyOp::create(
              state.main, fusion.getLoc(), type.getShape(), type.getElementType());
          continue;
        }
        if (Value direct = state.materializeView(value)) {
          state.materialized[value] = direct;
          continue;
        }
        pending.push_back(value);
      }
      return pending;
    };
    SmallVector<Value> pending = collectPending();

    // A matrix product by the vendor library, with what it can apply to its
    // result; the rest of the fusion then reads the product.
    if (!pending.empty() && libraryGemm) {
      if (failed(emitLibraryMatmul(state)))
        return failure();
      pending = collectPending();
    }
    // A reduction into a handful of results over very long rows (a loss
    // term's sum of squares of a whole weight) would take one block per row:
    // it goes in two steps whatever the rest of the fusion is.
    if (failed(splitLongReductions(state, pending, kFewRows, kVeryLongRow)))
      return failure();
    // Rows reduced cooperatively, when the fusion's reductions allow it.
    if (!pending.empty()) {
      FailureOr<bool> rows = emitRowKernel(state, pending);
      if (failed(rows))
        return failure();
      if (*rows)
        pending.clear();
    }
    // Otherwise long reductions into few results go in two steps, rather
    // than a thread per result.
    if (failed(splitLongReductions(state, pending, kFewResults, kLongReduction)))
      return failure();
    // The rest is one loop kernel, with a range of blocks per shape.
    if (!pending.empty() && failed(emitLoopKernel(state, pending)))
      return failure();

    SmallVector<Value> replacements =
        llvm::map_to_vector(fusion.getYield().getValues(), [&](Value v) { return state.materialized.lookup(v); });
    fusion->replaceAllUsesWith(replacements);
    fusion->erase();
    return success();
  }
};

} // namespace
} // namespace kiln
