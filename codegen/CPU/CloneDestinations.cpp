//===- CloneDestinations.cpp - One destination tensor per kernel ----------===//
//
// See KilnCloneDestinationsPass in Passes.td.
//
//===----------------------------------------------------------------------===//
#include "codegen/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

namespace kiln {
#define GEN_PASS_DEF_KILNCLONEDESTINATIONSPASS
#include "codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// Whether `op` only makes a destination: a tensor.empty, or a fill of a
/// constant into one.
bool isDestination(Operation *op) {
  if (isa<tensor::EmptyOp>(op))
    return true;
  auto fill = dyn_cast<linalg::FillOp>(op);
  return fill && fill.hasPureTensorSemantics() &&
         matchPattern(fill.getInputs()[0], m_Constant()) &&
         fill.getOutputs()[0].getDefiningOp<tensor::EmptyOp>();
}

/// Clones `op` (and, for a fill, its tensor.empty) before `user`.
Value cloneBefore(Operation *op, Operation *user) {
  OpBuilder b(user);
  if (auto fill = dyn_cast<linalg::FillOp>(op)) {
    Operation *empty = b.clone(*fill.getOutputs()[0].getDefiningOp());
    IRMapping mapping;
    mapping.map(fill.getOutputs()[0], empty->getResult(0));
    return b.clone(*fill, mapping)->getResult(0);
  }
  return b.clone(*op)->getResult(0);
}

/// Gives each result of `ret` a value of its own: a value returned a second
/// time (`return %a, %a`, or a value and an op that folded to it) is copied
/// into a new tensor, so that each result gets its own out-parameter.
void copyRepeatedResults(func::ReturnOp ret) {
  llvm::SmallPtrSet<Value, 8> seen;
  OpBuilder b(ret);
  for (OpOperand &result : ret->getOpOperands()) {
    Value value = result.get();
    auto type = dyn_cast<RankedTensorType>(value.getType());
    if (!type || seen.insert(value).second)
      continue;
    Value empty = tensor::EmptyOp::create(b, ret.getLoc(), type, ValueRange());
    result.set(linalg::CopyOp::create(b, ret.getLoc(), value, empty)->getResult(0));
  }
}

/// Smallest whole-result destination worth shrinking to its tile. Every tile
/// allocating a large one costs page faults whenever the allocator hands the
/// memory back to the system in between (a MobileNetV2 expansion layer,
/// 4.8 MB per tile, ran 2x slower). A small one is cheap to allocate, and a
/// tile-sized buffer of a small image (7x7) lets LLVM unroll the tile's loops
/// fully, which tripled MobileNetV2's LLVM time for no gain.
constexpr int64_t kMinShrunkBytes = 512 << 10;

/// Replaces a full-rank slice of a large destination that nothing else uses
/// by a destination of the slice's size: a kernel tiled in a loop would
/// otherwise allocate its whole result in every tile and write one tile of
/// it.
void shrinkSlicedDestination(tensor::ExtractSliceOp slice) {
  Operation *source = slice.getSource().getDefiningOp();
  if (!source || !isDestination(source) || !source->hasOneUse() ||
      slice.getResultType().getRank() != slice.getSourceType().getRank() ||
      !slice.getSourceType().hasStaticShape() ||
      slice.getSourceType().getNumElements() * slice.getSourceType().getElementTypeBitWidth() <
          8 * kMinShrunkBytes)
    return;
  OpBuilder b(slice);
  Location loc = slice.getLoc();
  Value shrunk = tensor::EmptyOp::create(b, loc, slice.getResultType(), slice.getSizes());
  if (auto fill = dyn_cast<linalg::FillOp>(source))
    shrunk = linalg::FillOp::create(b, loc, fill.getInputs()[0], shrunk).getResult(0);
  slice.replaceAllUsesWith(shrunk);
  slice.erase();
  Operation *empty = isa<linalg::FillOp>(source)
                         ? source->getOperand(1).getDefiningOp()
                         : nullptr;
  source->erase();
  if (empty && empty->use_empty())
    empty->erase();
}

struct KilnCloneDestinationsPass
    : impl::KilnCloneDestinationsPassBase<KilnCloneDestinationsPass> {
  void runOnOperation() override {
    getOperation().walk(copyRepeatedResults);
    SmallVector<Operation *> shared;
    getOperation().walk([&](Operation *op) {
      if (isDestination(op) && !op->getResult(0).hasOneUse() && !op->use_empty())
        shared.push_back(op);
    });
    // Fills first: cloning one gives it an empty of its own, leaving the
    // shared empty with fewer uses.
    std::stable_partition(shared.begin(), shared.end(),
                          [](Operation *op) { return isa<linalg::FillOp>(op); });
    for (Operation *op : shared) {
      SmallVector<OpOperand *> uses = llvm::map_to_vector(
          op->getResult(0).getUses(), [](OpOperand &use) { return &use; });
      // The first user in the block keeps the original; the others get
      // clones.
      OpOperand *first = *llvm::min_element(uses, [](OpOperand *a, OpOperand *b) {
        Operation *x = a->getOwner(), *y = b->getOwner();
        return x->getBlock() == y->getBlock() && x->isBeforeInBlock(y);
      });
      for (OpOperand *use : uses)
        if (use != first)
          use->set(cloneBefore(op, use->getOwner()));
    }
    getOperation().walk(shrinkSlicedDestination);
  }
};

} // namespace
} // namespace kiln
