//===- EpilogueInPlace.cpp - Products written into their epilogue's tile --===//
//
// See KilnEpilogueInPlacePass in Passes.td.
//
//===----------------------------------------------------------------------===//
#include "codegen/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
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

/// The operand of `epilogue` that a product computes for it alone: an input
/// read at the same index as the output, of the output's type, that only
/// this operand uses, computed by a linalg op with a reduction loop (a
/// matrix product or a convolution).
OpOperand *productOperand(linalg::GenericOp epilogue) {
  OpOperand *init = epilogue.getDpsInitOperand(0);
  for (OpOperand *input : epilogue.getDpsInputOperands()) {
    Value value = input->get();
    auto producer = value.getDefiningOp<linalg::LinalgOp>();
    if (value.getType() == init->get().getType() && value.hasOneUse() && producer &&
        producer.getNumReductionLoops() != 0 && epilogue.getMatchingIndexingMap(input).isIdentity())
      return input;
  }
  return nullptr;
}

/// Whether the epilogue is `start -/+ product * scale`: an optimizer's SGD
/// step that kiln-contractions-to-blas and kiln-convolutions-to-blas fold
/// into the product's call (which then adds onto the weights), given the
/// product's own tile to find it in.
bool isScaledUpdate(linalg::GenericOp epilogue, BlockArgument product) {
  Block &body = epilogue.getRegion().front();
  if (body.getOperations().size() != 3)
    return false;
  auto scaled = dyn_cast<arith::MulFOp>(body.front());
  Operation *combine = scaled ? scaled->getNextNode() : nullptr;
  return scaled && isa_and_nonnull<arith::AddFOp, arith::SubFOp>(combine) &&
         llvm::is_contained(scaled->getOperands(), product) &&
         llvm::is_contained(combine->getOperands(), scaled.getResult());
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
  if (!input || isScaledUpdate(epilogue, epilogue.getMatchingBlockArgument(input)))
    return;
  auto product = input->get().getDefiningOp<linalg::LinalgOp>();
  // The product starts from zeros (a fill, perhaps shared with other
  // products) or from undefined contents; anything else stays.
  OpOperand *start = product.getDpsInitOperand(0);
  auto fill = start->get().getDefiningOp<linalg::FillOp>();
  if (!fill && !isUndefined(start->get()))
    return;
  // The epilogue's destination is made before the product: a slice of the
  // loop's shared result (whose operands the loop defines) or an empty
  // tensor made after it moves there.
  Value tile = init->get();
  if (!dominance.properlyDominates(tile, product)) {
    Operation *def = tile.getDefiningOp();
    if (!isa_and_nonnull<tensor::ExtractSliceOp, tensor::EmptyOp>(def) || !def->hasOneUse() ||
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
