//===- Normalization.cpp - Gradient rules of reductions and normalizations ===//
//
// Reductions broadcast their cotangent back over the reduced dimensions;
// softmax and layer normalization use their closed-form vector-Jacobian
// products, written in terms of their forward results so nothing is
// recomputed.
//
//===----------------------------------------------------------------------===//
#include "dialects/kiln/Gradients/GradientUtils.h"

using namespace mlir;
using namespace kiln::grad;

namespace kiln {

/// The cotangent of a reduction over `axes` of `input`, spread back over the
/// reduced dimensions.
static Value spreadOverAxes(OpBuilder &b, Location loc, Value g, Value input,
                            ArrayRef<int64_t> axes) {
  RankedTensorType inputType = typeOf(input);
  SmallVector<int64_t> kept(inputType.getShape());
  for (int64_t axis : axes)
    kept[axis] = 1;
  if (axes.empty()) // ONNX: no axes reduces over every dimension
    kept.assign(inputType.getRank(), 1);
  g = reshapeTo(b, loc, g, RankedTensorType::get(kept, elementOf(g)));
  if (typeOf(g).getShape() == inputType.getShape())
    return g;
  return ExpandOp::create(b, loc, RankedTensorType::get(inputType.getShape(), elementOf(g)), g);
}

// d sum(x) = dy, spread over the summed dimensions.
LogicalResult ReduceSumOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                          SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(spreadOverAxes(b, getLoc(), resultGrads[0], getInput(), getAxes()));
  return success();
}

// d mean(x) = dy / n, spread over the n averaged elements.
LogicalResult ReduceMeanOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                           SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  RankedTensorType type = typeOf(getInput());
  int64_t count = 1;
  if (getAxes().empty())
    count = type.getNumElements();
  for (int64_t axis : getAxes())
    count *= type.getDimSize(axis);
  Value spread = spreadOverAxes(b, loc, resultGrads[0], getInput(), getAxes());
  operandGrads.push_back(
      MulOp::create(b, loc, spread, scalar(b, loc, type.getElementType(), 1.0 / count)));
  return success();
}

/// max and min reductions: the cotangent is split evenly among the elements
/// equal to the extremum (torch.amax's rule): dx = [x = y] dy / count.
template <typename OpTy>
static LogicalResult extremumRule(OpBuilder &b, OpTy op, ValueRange resultGrads,
                                  SmallVectorImpl<Value> &operandGrads) {
  Location loc = op.getLoc();
  Value x = op.getInput();
  ArrayRef<int64_t> axes = op.getAxes();
  Value y = spreadOverAxes(b, loc, op.getOutput(), x, axes);
  Value g = spreadOverAxes(b, loc, resultGrads[0], x, axes);
  Value mask = CastOp::create(b, loc, typeOf(x), EqualOp::create(b, loc, x, y));
  SmallVector<int64_t> all;
  if (axes.empty())
    for (int64_t i = 0; i < typeOf(x).getRank(); ++i)
      all.push_back(i);
  Value count = ReduceSumOp::create(b, loc, mask, axes.empty() ? ArrayRef<int64_t>(all) : axes,
                                    /*keepdims=*/true);
  Value share = DivOp::create(b, loc, g, count);
  operandGrads.push_back(MulOp::create(b, loc, mask, share));
  return success();
}

LogicalResult ReduceMaxOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                          SmallVectorImpl<Value> &operandGrads) {
  return extremumRule(b, *this, resultGrads, operandGrads);
}

LogicalResult ReduceMinOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                          SmallVectorImpl<Value> &operandGrads) {
  return extremumRule(b, *this, resultGrads, operandGrads);
}

/// A normalization's statistics results (`names`) are for its caller, not
/// for a loss: fails, naming them, when a loss depends on one.
static LogicalResult refuseStatisticGradients(Operation *op, ValueRange resultGrads,
                                              StringRef names) {
  if (llvm::any_of(resultGrads.drop_front(), [](Value grad) { return bool(grad); }))
    return op->emitOpError("has no gradient rule for its ")
           << names << " results; only the normalized output may feed the loss";
  return success();
}

// y = softmax(x): dx = y (dy - sum(dy y)), sums along the axis.
LogicalResult SoftmaxOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value y = getOutput(), g = resultGrads[0];
  int64_t axis = getAxis();
  Value dot = ReduceSumOp::create(b, loc, MulOp::create(b, loc, g, y), ArrayRef<int64_t>{axis},
                                  /*keepdims=*/true);
  operandGrads.push_back(MulOp::create(b, loc, y, SubOp::create(b, loc, g, dot)));
  return success();
}

// y = log_softmax(x): dx = dy - e^y sum(dy), the sum along the axis.
LogicalResult LogSoftmaxOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                           SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value g = resultGrads[0];
  int64_t axis = getAxis();
  Value sum = ReduceSumOp::create(b, loc, g, ArrayRef<int64_t>{axis}, /*keepdims=*/true);
  Value softmax = ExpOp::create(b, loc, getOutput());
  operandGrads.push_back(SubOp::create(b, loc, g, MulOp::create(b, loc, softmax, sum)));
  return success();
}

// With x^ = (x - mean) r, r = 1/sqrt(var + eps), y = x^ scale + bias, means
// over the normalized dimensions:
//   dx = r (dx^ - mean(dx^) - x^ mean(dx^ x^)),  dx^ = dy scale,
//   dscale = sum(dy x^), dbias = sum(dy), over the other dimensions.
// The `mean` and `inv_std_dev` results are statistics for the caller; a loss
// that depends on them is refused.
LogicalResult LayerNormOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                          SmallVectorImpl<Value> &operandGrads) {
  if (failed(refuseStatisticGradients(*this, resultGrads, "mean and inv_std_dev")))
    return failure();
  Location loc = getLoc();
  Value g = resultGrads[0];
  Value x = getInput();
  int64_t rank = typeOf(x).getRank();
  SmallVector<int64_t> axes;
  for (int64_t i = getAxis(); i < rank; ++i)
    axes.push_back(i);
  Value xhat = MulOp::create(b, loc, SubOp::create(b, loc, x, getMean()), getInvStdDev());
  Value dxhat = MulOp::create(b, loc, g, getScale());
  Value meanDxhat = ReduceMeanOp::create(b, loc, dxhat, axes, /*keepdims=*/true);
  Value meanDxhatXhat =
      ReduceMeanOp::create(b, loc, MulOp::create(b, loc, dxhat, xhat), axes, /*keepdims=*/true);
  Value centered = SubOp::create(b, loc, SubOp::create(b, loc, dxhat, meanDxhat),
                                 MulOp::create(b, loc, xhat, meanDxhatXhat));
  operandGrads.push_back(MulOp::create(b, loc, getInvStdDev(), centered));
  operandGrads.push_back(unbroadcast(b, loc, MulOp::create(b, loc, g, xhat), typeOf(getScale())));
  if (Value bias = getBias())
    operandGrads.push_back(unbroadcast(b, loc, g, typeOf(bias)));
  return success();
}

// With x^ = (x - m) r, r = 1/sqrt(v + eps), m and v the batch's mean and
// variance per channel over the other dimensions (n elements), and
// y = x^ scale + bias:
//   dx = r scale (dy - sum(dy) / n - x^ sum(dy x^) / n),
//   dscale = sum(dy x^), dbias = sum(dy),
// sums per channel: two sums over the same elements (which fuse into one
// loop) and one elementwise pass, where the chain rule through m and v
// would sum four times. The statistics results feed the running averages;
// a loss that depends on them is refused.
LogicalResult BatchNormTrainingOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                                  SmallVectorImpl<Value> &operandGrads) {
  if (failed(refuseStatisticGradients(*this, resultGrads, "mean and variance")))
    return failure();
  Location loc = getLoc();
  Value g = resultGrads[0], x = getInput();
  RankedTensorType type = typeOf(x);
  Type element = type.getElementType();
  SmallVector<int64_t> axes{0}, perChannel(type.getRank(), 1);
  int64_t count = type.getDimSize(0);
  for (int64_t i = 2; i < type.getRank(); ++i) {
    axes.push_back(i);
    count *= type.getDimSize(i);
  }
  perChannel[1] = type.getDimSize(1);
  auto channel = [&](Value value) {
    return reshapeTo(b, loc, value, RankedTensorType::get(perChannel, element));
  };
  double epsilon = getEpsilon().convertToDouble();
  // One op per statement: the order of a call's arguments is the
  // compiler's, and the IR's order should not be.
  Value variance = channel(getVariance());
  Value shifted = AddOp::create(b, loc, variance, scalar(b, loc, element, epsilon));
  Value inverse = ReciprocalOp::create(b, loc, SqrtOp::create(b, loc, shifted));
  Value mean = channel(getMean());
  Value normalized = MulOp::create(b, loc, SubOp::create(b, loc, x, mean), inverse);
  Value sum = ReduceSumOp::create(b, loc, g, axes, /*keepdims=*/true);
  Value sumNormalized = ReduceSumOp::create(b, loc, MulOp::create(b, loc, g, normalized), axes,
                                            /*keepdims=*/true);
  Value perElement = scalar(b, loc, element, 1.0 / double(count));
  Value meanG = MulOp::create(b, loc, sum, perElement);
  Value meanGNormalized = MulOp::create(b, loc, sumNormalized, perElement);
  Value deviation = SubOp::create(b, loc, g, meanG);
  Value centered =
      SubOp::create(b, loc, deviation, MulOp::create(b, loc, normalized, meanGNormalized));
  operandGrads.push_back(
      MulOp::create(b, loc, centered, MulOp::create(b, loc, inverse, channel(getScale()))));
  operandGrads.push_back(reshapeTo(b, loc, sumNormalized, typeOf(getScale())));
  operandGrads.push_back(reshapeTo(b, loc, sum, typeOf(getBias())));
  return success();
}

} // namespace kiln
