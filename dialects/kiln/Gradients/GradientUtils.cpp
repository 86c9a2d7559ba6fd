//===- GradientUtils.cpp - Building blocks of the gradient rules ----------===//
#include "dialects/kiln/Gradients/GradientUtils.h"

#include "dialects/kiln/GradientInterface.cpp.inc"

using namespace mlir;

namespace kiln::grad {

static Attribute elementAttr(OpBuilder &b, Type element, double value) {
  if (llvm::isa<FloatType>(element))
    return b.getFloatAttr(element, value);
  return b.getIntegerAttr(element, static_cast<int64_t>(value));
}

Value scalar(OpBuilder &b, Location loc, Type element, double value) {
  auto type = RankedTensorType::get({}, element);
  return ConstantOp::create(b, loc, DenseElementsAttr::get(type, elementAttr(b, element, value)));
}

Value splat(OpBuilder &b, Location loc, RankedTensorType type, double value) {
  return ConstantOp::create(
      b, loc, DenseElementsAttr::get(type, elementAttr(b, type.getElementType(), value)));
}

Value reshapeTo(OpBuilder &b, Location loc, Value value, RankedTensorType type) {
  if (value.getType() == type)
    return value;
  return ReshapeOp::create(b, loc, type, value);
}

Value unbroadcast(OpBuilder &b, Location loc, Value grad, RankedTensorType target) {
  RankedTensorType type = typeOf(grad);
  if (type.getShape() == target.getShape())
    return grad;
  int64_t lead = type.getRank() - target.getRank();
  SmallVector<int64_t> axes;
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (i < lead || (target.getDimSize(i - lead) == 1 && type.getDimSize(i) != 1))
      axes.push_back(i);
  if (!axes.empty())
    grad = ReduceSumOp::create(b, loc, grad, axes, /*keepdims=*/true);
  return reshapeTo(b, loc, grad,
                   RankedTensorType::get(target.getShape(), typeOf(grad).getElementType()));
}

Value transposeLastTwo(OpBuilder &b, Location loc, Value value) {
  int64_t rank = typeOf(value).getRank();
  SmallVector<int64_t> perm;
  for (int64_t i = 0; i < rank; ++i)
    perm.push_back(i);
  std::swap(perm[rank - 2], perm[rank - 1]);
  return TransposeOp::create(b, loc, value, perm);
}

Value selectOrZero(OpBuilder &b, Location loc, Value condition, Value value) {
  Value zero = scalar(b, loc, elementOf(value), 0.0);
  Value selected = WhereOp::create(b, loc, condition, value, zero);
  return unbroadcast(b, loc, selected, typeOf(value));
}

SmallVector<Value> denseGrads(OpBuilder &b, Operation *op, ValueRange resultGrads) {
  SmallVector<Value> grads;
  for (auto [result, grad] : llvm::zip_equal(op->getResults(), resultGrads))
    grads.push_back(grad ? grad : splat(b, op->getLoc(), typeOf(result), 0.0));
  return grads;
}

/// `value` with `count` zeros after each element along `axis`, the trailing
/// ones dropped: the cotangent of a strided window op, on the input's grid.
Value spreadAlong(OpBuilder &b, Location loc, Value value, int64_t axis, int64_t stride) {
  if (stride == 1)
    return value;
  RankedTensorType type = typeOf(value);
  SmallVector<int64_t> shape(type.getShape());
  int64_t length = shape[axis];
  SmallVector<int64_t> column(shape);
  column.insert(column.begin() + axis + 1, 1);
  Value split = reshapeTo(b, loc, value, RankedTensorType::get(column, type.getElementType()));
  SmallVector<int64_t> zerosShape(column);
  zerosShape[axis + 1] = stride - 1;
  Value zeros = splat(b, loc, RankedTensorType::get(zerosShape, type.getElementType()), 0.0);
  Value widened = ConcatOp::create(b, loc, ValueRange{split, zeros}, static_cast<uint64_t>(axis + 1));
  SmallVector<int64_t> flat(shape);
  flat[axis] = length * stride;
  Value spread = reshapeTo(b, loc, widened, RankedTensorType::get(flat, type.getElementType()));
  SmallVector<int64_t> kept(shape);
  kept[axis] = (length - 1) * stride + 1;
  SmallVector<int64_t> start(shape.size(), 0), step(shape.size(), 1);
  return SliceOp::create(b, loc, RankedTensorType::get(kept, type.getElementType()), spread, start,
                         step);
}

/// `value` read backwards along each of `axes`.
Value reverseAlong(OpBuilder &b, Location loc, Value value, ArrayRef<int64_t> axes) {
  RankedTensorType type = typeOf(value);
  SmallVector<int64_t> start(type.getRank(), 0), step(type.getRank(), 1);
  for (int64_t axis : axes) {
    start[axis] = type.getDimSize(axis) - 1;
    step[axis] = -1;
  }
  return SliceOp::create(b, loc, type, value, start, step);
}

/// `value` with `before` and `after` elements of `fill` added along `axis`.
Value padAlong(OpBuilder &b, Location loc, Value value, int64_t axis, int64_t before,
                      int64_t after, double fill) {
  SmallVector<Value> pieces;
  auto block = [&](int64_t count) {
    SmallVector<int64_t> shape(typeOf(value).getShape());
    shape[axis] = count;
    return splat(b, loc, RankedTensorType::get(shape, elementOf(value)), fill);
  };
  if (before > 0)
    pieces.push_back(block(before));
  pieces.push_back(value);
  if (after > 0)
    pieces.push_back(block(after));
  if (pieces.size() == 1)
    return value;
  return ConcatOp::create(b, loc, pieces, static_cast<uint64_t>(axis));
}

} // namespace kiln::grad
