//===- BlockedConvInPlace.cpp - Blocked convolutions into their slots -----===//
//
// See KilnBlockedConvInPlacePass in Passes.td.
//
//===----------------------------------------------------------------------===//
#include "codegen/Passes.h"
#include "dialects/kiln/KilnOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

namespace kiln {
#define GEN_PASS_DEF_KILNBLOCKEDCONVINPLACEPASS
#include "codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// The insertion of `conv`'s result that it can write in place, if any:
/// one with unit strides of the result as it is or reshaped only to drop
/// its unit dimensions (batch 1), in `conv`'s block, before every other
/// reader of the result.
tensor::InsertSliceOp slotOf(BlockedConvOp conv) {
  if (conv.getAddend() || conv.getDest())
    return {};
  Block *block = conv->getBlock();
  tensor::InsertSliceOp insert;
  for (OpOperand &use : conv->getUses()) {
    Value inserted = use.get();
    Operation *user = use.getOwner();
    if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(user); collapse && collapse->hasOneUse()) {
      inserted = collapse.getResult();
      user = *collapse->user_begin();
    }
    auto candidate = dyn_cast<tensor::InsertSliceOp>(user);
    if (candidate && candidate.getSource() == inserted && candidate->getBlock() == block &&
        (!insert || candidate->isBeforeInBlock(insert)))
      insert = candidate;
  }
  if (!insert || insert.getStaticSizes() != conv.getType().getShape() ||
      !llvm::all_of(insert.getStaticStrides(), [](int64_t s) { return s == 1; }))
    return {};
  for (Operation *user : conv->getUsers()) {
    Operation *reader = block->findAncestorOpInBlock(*user);
    if (reader != insert && reader != insert.getSource().getDefiningOp() &&
        (!reader || !insert->isBeforeInBlock(reader)))
      return {};
  }
  return insert;
}

struct KilnBlockedConvInPlacePass
    : impl::KilnBlockedConvInPlacePassBase<KilnBlockedConvInPlacePass> {
  void runOnOperation() override {
    SmallVector<BlockedConvOp> convs;
    for (Block &block : getOperation().getBody())
      for (auto conv : block.getOps<BlockedConvOp>())
        convs.push_back(conv);
    for (BlockedConvOp conv : convs) {
      tensor::InsertSliceOp insert = slotOf(conv);
      if (!insert)
        continue;
      // The convolution's operands are defined above it, so above the
      // insertion too; the tensor inserted into may be defined in between.
      // The slot and the insertion are of the result's own type, so that
      // their buffers are one view (CSE merges them, and the copy between
      // them folds away).
      Operation *reshape = insert.getSource().getDefiningOp();
      conv->moveBefore(insert);
      OpBuilder b(conv);
      Value slot = tensor::ExtractSliceOp::create(
          b, insert.getLoc(), conv.getType(), insert.getDest(), insert.getMixedOffsets(),
          insert.getMixedSizes(), insert.getMixedStrides());
      conv.getDestMutable().assign(slot);
      if (reshape != conv) {
        insert.getSourceMutable().assign(conv.getResult());
        if (reshape->use_empty())
          reshape->erase();
      }
    }
  }
};

} // namespace
} // namespace kiln
