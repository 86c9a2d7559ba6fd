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
  }
};

} // namespace
} // namespace kiln
