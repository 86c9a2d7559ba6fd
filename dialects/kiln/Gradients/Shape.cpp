//===- Shape.cpp - Gradient rules of data movement and shape ops ----------===//
//
// These ops move elements without arithmetic, so each rule moves the
// cotangent back: reshapes undo themselves, transposes apply the inverse
// permutation, broadcasts sum, concatenation slices, and slicing pads with
// zeros.
//
//===----------------------------------------------------------------------===//
#include "dialects/kiln/Gradients/GradientUtils.h"

using namespace mlir;
using namespace kiln::grad;

namespace kiln {

/// Ops that only relabel dimensions: the cotangent is reshaped back.
static LogicalResult reshapeBack(OpBuilder &b, Operation *op, ValueRange resultGrads,
                                 SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(reshapeTo(b, op->getLoc(), resultGrads[0], typeOf(op->getOperand(0))));
  return success();
}

LogicalResult ReshapeOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  return reshapeBack(b, *this, resultGrads, operandGrads);
}

LogicalResult FlattenOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  return reshapeBack(b, *this, resultGrads, operandGrads);
}

LogicalResult SqueezeOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  return reshapeBack(b, *this, resultGrads, operandGrads);
}

LogicalResult UnsqueezeOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                          SmallVectorImpl<Value> &operandGrads) {
  return reshapeBack(b, *this, resultGrads, operandGrads);
}

// y = transpose(x, p): dx = transpose(dy, p^-1).
LogicalResult TransposeOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                          SmallVectorImpl<Value> &operandGrads) {
  ArrayRef<int64_t> perm = getPerm();
  SmallVector<int64_t> inverse(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inverse[p] = i;
  operandGrads.push_back(TransposeOp::create(b, getLoc(), resultGrads[0], inverse));
  return success();
}

// A broadcast's cotangent is summed over the broadcast dimensions.
LogicalResult ExpandOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(unbroadcast(b, getLoc(), resultGrads[0], typeOf(getInput())));
  return success();
}

// Each input's cotangent is its window of dy along the axis.
LogicalResult ConcatOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  int64_t axis = getAxis();
  int64_t rank = typeOf(getOutput()).getRank();
  int64_t offset = 0;
  for (Value input : getInputs()) {
    RankedTensorType type = typeOf(input);
    SmallVector<int64_t> start(rank, 0), step(rank, 1);
    start[axis] = offset;
    offset += type.getDimSize(axis);
    auto gradType = RankedTensorType::get(type.getShape(), elementOf(resultGrads[0]));
    operandGrads.push_back(SliceOp::create(b, loc, gradType, resultGrads[0], start, step));
  }
  return success();
}

// dy goes back to the elements the slice read, zeros elsewhere: per sliced
// dimension, dy is reversed where the step is -1 and placed between blocks
// of zeros. Strides other than +-1 have no rule yet.
LogicalResult SliceOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  RankedTensorType inputType = typeOf(getInput());
  Value g = resultGrads[0];
  for (auto [axis, start, step] : llvm::enumerate(getStart(), getStep())) {
    int64_t taken = typeOf(g).getDimSize(axis);
    int64_t size = inputType.getDimSize(axis);
    if (taken == size && step == 1)
      continue;
    if (step != 1 && step != -1)
      return emitOpError("has no gradient rule for step ") << step << " along dimension " << axis;
    int64_t rank = inputType.getRank();
    if (step == -1) {
      SmallVector<int64_t> starts(rank, 0), steps(rank, 1);
      starts[axis] = taken - 1;
      steps[axis] = -1;
      g = SliceOp::create(b, loc, g.getType(), g, starts, steps);
    }
    int64_t first = step == 1 ? start : start - (taken - 1);
    SmallVector<Value> pieces;
    auto zeros = [&](int64_t count) {
      SmallVector<int64_t> shape(typeOf(g).getShape());
      shape[axis] = count;
      return splat(b, loc, RankedTensorType::get(shape, elementOf(g)), 0.0);
    };
    if (first > 0)
      pieces.push_back(zeros(first));
    pieces.push_back(g);
    if (int64_t after = size - first - taken; after > 0)
      pieces.push_back(zeros(after));
    if (pieces.size() > 1)
      g = ConcatOp::create(b, loc, pieces, static_cast<uint64_t>(axis));
  }
  operandGrads.push_back(g);
  return success();
}

} // namespace kiln
