//===- EpilogueInPlace.cpp - Products written into their epilogue's tile --===//
//
// See KilnEpilogueInPlacePass in Passes.td.
//
//===----------------------------------------------------------------------===//
#include "codegen/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Dominance.h"

namespace kiln {
#define GEN_PASS_DEF_KILNEPILOGUEINPLACEPASS
#include "codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// The operand of `epilogue` that a matrix product computes for it alone:
/// an input read at the same index as the output, of the output's type,
/// that only this operand uses, the one result of a linalg op with a
/// reduction loop whose operands are all read at projected permutations of
/// its loops. A windowed convolution is left alone: its BLAS, direct and
/// depthwise lowerings find their epilogue (a clamp, an optimizer's step) by
/// the product's own tile.
OpOperand *productOperand(linalg::GenericOp epilogue) {
  OpOperand *init = epilogue.getDpsInitOperand(0);
  for (OpOperand *input : epilogue.getDpsInputOperands()) {
    Value value = input->get();
    auto producer = value.getDefiningOp<linalg::LinalgOp>();
    if (value.getType() == init->get().getType() && value.hasOneUse() && producer &&
        producer->getNumResults() == 1 && producer.getNumReductionLoops() != 0 &&
        llvm::all_of(producer.getIndexingMapsArray(),
                     [](AffineMap map) { return map.isProjectedPermutation(); }) &&
        epilogue.getMatchingIndexingMap(input).isIdentity())
      return input;
  }
  return nullptr;
}

/// Whether the epilogue reads, at its output's index, a tile of a function
/// argument: an optimizer's update of a weight after its gradient. SGD's
/// step is folded into the product's call by kiln-contractions-to-blas
/// (which adds the scaled product onto the weights), and other updates are
/// written into the weight's own buffer by kiln-state-in-place, which needs
/// the update to read the product from a buffer of its own.
bool updatesArgument(linalg::GenericOp epilogue, OpOperand *product) {
  return llvm::any_of(epilogue.getDpsInputOperands(), [&](OpOperand *input) {
    if (input == product || !epilogue.getMatchingIndexingMap(input).isIdentity())
      return false;
    Value value = input->get();
    while (auto slice = value.getDefiningOp<tensor::ExtractSliceOp>())
      value = slice.getSource();
    auto argument = dyn_cast<BlockArgument>(value);
    return argument && isa<func::FuncOp>(argument.getOwner()->getParentOp());
  });
}

/// Whether `value`'s contents are undefined: a tensor.empty, or a slice of
/// one.
bool isUndefined(Value value) {
  if (auto slice = value.getDefiningOp<tensor::ExtractSliceOp>())
    value = slice.getSource();
  return value.getDefiningOp<tensor::EmptyOp>() != nullptr;
}

/// Erases `op` if nothing uses it, then the producers of its operands that
/// only made a destination for it.
void eraseDeadDestination(Operation *op) {
  while (op && op->use_empty() &&
         isa<tensor::EmptyOp, tensor::ExtractSliceOp, linalg::FillOp>(op)) {
    Operation *next = isa<linalg::FillOp>(op)           ? op->getOperand(1).getDefiningOp()
                      : isa<tensor::ExtractSliceOp>(op) ? op->getOperand(0).getDefiningOp()
                                                        : nullptr;
    op->erase();
    op = next;
  }
}

/// Rewrites `epilogue` to update its product's tile in place, and the
/// product to write that tile into the epilogue's destination.
void writeProductInPlace(linalg::GenericOp epilogue, DominanceInfo &dominance) {
  if (!epilogue.hasPureTensorSemantics() || epilogue.getNumDpsInits() != 1 ||
      epilogue.getNumReductionLoops() != 0 || epilogue->getNumResults() != 1)
    return;
  OpOperand *init = epilogue.getDpsInitOperand(0);
  if (!epilogue.getMatchingIndexingMap(init).isIdentity() ||
      !epilogue.getMatchingBlockArgument(init).use_empty())
    return;
  OpOperand *input = productOperand(epilogue);
  if (!input || updatesArgument(epilogue, input))
    return;
  auto product = input->get().getDefiningOp<linalg::LinalgOp>();
  // The product starts from a fill (perhaps shared with other products),
  // made again in the new destination, or from undefined contents; from
  // anything else it stays.
  OpOperand *start = product.getDpsInitOperand(0);
  auto fill = start->get().getDefiningOp<linalg::FillOp>();
  if (!fill && !isUndefined(start->get()))
    return;
  // The epilogue's destination, which nothing else may read, is made
  // before the product: an empty tensor (of undefined contents, so a new one
  // there will do), or a slice of the loop's shared result (whose operands
  // the loop defines) made after the product moves there.
  Value tile = init->get();
  Operation *def = tile.getDefiningOp();
  if (auto empty = dyn_cast_or_null<tensor::EmptyOp>(def)) {
    if (!llvm::all_of(empty->getOperands(),
                      [&](Value operand) { return dominance.properlyDominates(operand, product); }))
      return;
    OpBuilder b(product);
    tile = b.clone(*empty)->getResult(0);
  } else if (!tile.hasOneUse()) {
    return;
  } else if (!dominance.properlyDominates(tile, product)) {
    if (!isa_and_nonnull<tensor::ExtractSliceOp>(def) ||
        llvm::any_of(def->getOperands(),
                     [&](Value operand) { return !dominance.properlyDominates(operand, product); }))
      return;
    def->moveBefore(product);
  }
  Operation *oldStart = start->get().getDefiningOp();
  if (fill) {
    OpBuilder b(product);
    tile = linalg::FillOp::create(b, fill.getLoc(), fill.getInputs()[0], tile).getResult(0);
  }
  start->set(tile);
  eraseDeadDestination(oldStart);

  // The epilogue reads the product through its output's block argument.
  OpBuilder b(epilogue);
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  for (OpOperand *operand : epilogue.getDpsInputOperands())
    if (operand != input) {
      inputs.push_back(operand->get());
      maps.push_back(epilogue.getMatchingIndexingMap(operand));
    }
  maps.push_back(epilogue.getMatchingIndexingMap(init));
  auto inPlace =
      linalg::GenericOp::create(b, epilogue.getLoc(), epilogue->getResultTypes(), inputs,
                                ValueRange{input->get()}, maps, epilogue.getIteratorTypesArray());
  Region &region = inPlace.getRegion();
  region.takeBody(epilogue.getRegion());
  Block &moved = region.front();
  BlockArgument productArgument = moved.getArgument(input->getOperandNumber());
  productArgument.replaceAllUsesWith(moved.getArguments().back());
  moved.eraseArgument(productArgument.getArgNumber());
  epilogue->replaceAllUsesWith(inPlace);
  epilogue->erase();
  eraseDeadDestination(def);
}

struct KilnEpilogueInPlacePass : impl::KilnEpilogueInPlacePassBase<KilnEpilogueInPlacePass> {
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> epilogues;
    getOperation().walk([&](linalg::GenericOp op) { epilogues.push_back(op); });
    DominanceInfo dominance(getOperation());
    for (linalg::GenericOp epilogue : epilogues)
      writeProductInPlace(epilogue, dominance);
  }
};

} // namespace
} // namespace kiln
