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
// dimension, dy is reversed where the step is negative, spread to the
// step's stride (|step| - 1 zeros between elements) and placed between
// blocks of zeros.
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
    int64_t stride = step < 0 ? -step : step;
    if (step < 0)
      g = reverseAlong(b, loc, g, static_cast<int64_t>(axis));
    g = spreadAlong(b, loc, g, axis, stride);
    int64_t extent = typeOf(g).getDimSize(axis);
    int64_t first = step > 0 ? start : start - (extent - 1);
    g = padAlong(b, loc, g, axis, first, size - first - extent, 0.0);
  }
  operandGrads.push_back(g);
  return success();
}

// y = gather(data, indices) along axis a: each data slice's cotangent is the
// sum of the cotangents of the positions that picked it (a scatter-add),
// computed as a product with the one-hot matrix of the indices:
//   d data[v, rest] = sum_p [indices[p] = v] dy[p, rest] = onehot^T dy,
// after moving the axis to the front. It costs positions x rows x row
// length multiply-adds (an embedding table's gradient: tokens x vocabulary x
// width, a few percent of a transformer's step), runs on the BLAS, and the
// indices have no gradient.
LogicalResult GatherOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  RankedTensorType dataType = typeOf(getData()), indexType = typeOf(getIndices());
  Type element = dataType.getElementType(), indexElement = indexType.getElementType();
  int64_t axis = getAxis(), rows = dataType.getDimSize(axis);
  int64_t positions = indexType.getNumElements();
  int64_t before = 1, after = 1;
  for (int64_t i = 0; i < axis; ++i)
    before *= dataType.getDimSize(i);
  for (int64_t i = axis + 1; i < dataType.getRank(); ++i)
    after *= dataType.getDimSize(i);

  // One-hot [positions, rows] of the indices, negative ones counted from the end.
  Value flatIndices = reshapeTo(b, loc, getIndices(), RankedTensorType::get({positions, 1}, indexElement));
  Value negative = LessOp::create(b, loc, flatIndices, scalar(b, loc, indexElement, 0));
  flatIndices = WhereOp::create(b, loc, negative,
                                AddOp::create(b, loc, flatIndices, scalar(b, loc, indexElement, rows)),
                                flatIndices);
  SmallVector<APInt> ids;
  for (int64_t r = 0; r < rows; ++r)
    ids.push_back(APInt(indexElement.getIntOrFloatBitWidth(), r));
  Value rowIds = ConstantOp::create(
      b, loc, DenseElementsAttr::get(RankedTensorType::get({rows}, indexElement), ids));
  Value oneHot = CastOp::create(b, loc, RankedTensorType::get({positions, rows}, element),
                                EqualOp::create(b, loc, flatIndices, rowIds));

  // dy as [positions, before * after]: dy is [before, positions, after].
  Value g = reshapeTo(b, loc, resultGrads[0],
                      RankedTensorType::get({before, positions, after}, element));
  if (before > 1)
    g = TransposeOp::create(b, loc, g, ArrayRef<int64_t>{1, 0, 2});
  g = reshapeTo(b, loc, g, RankedTensorType::get({positions, before * after}, element));
  Value summed = MatMulOp::create(b, loc,
                                  TransposeOp::create(b, loc, oneHot, ArrayRef<int64_t>{1, 0}), g);
  // [rows, before * after] back to data's layout [before, rows, after].
  Value grad = reshapeTo(b, loc, summed, RankedTensorType::get({rows, before, after}, element));
  if (before > 1)
    grad = TransposeOp::create(b, loc, grad, ArrayRef<int64_t>{1, 0, 2});
  operandGrads.push_back(reshapeTo(b, loc, grad, dataType));
  operandGrads.push_back(Value());
  return success();
}

} // namespace kiln
