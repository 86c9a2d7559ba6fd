//===- Elementwise.cpp - Gradient rules of elementwise kiln ops -----------===//
//
// Unary math, binary arithmetic with NumPy broadcasting (gradients summed back
// to each operand's shape), selection and casts. Each rule is the op's
// derivative written with kiln ops; the comment above it states the law.
//
//===----------------------------------------------------------------------===//
#include "dialects/kiln/Gradients/GradientUtils.h"

#include <cmath>

using namespace mlir;
using namespace kiln::grad;

namespace kiln {

//===----------------------------------------------------------------------===//
// Unary
//===----------------------------------------------------------------------===//

/// Unary rules set `operandGrads` to `g * dy/dx`, with `dydx` built by `derivative`.
template <typename Fn>
static LogicalResult unaryRule(OpBuilder &b, Operation *op, ValueRange resultGrads,
                               SmallVectorImpl<Value> &operandGrads, Fn derivative) {
  Location loc = op->getLoc();
  Value dydx = derivative(loc, op->getOperand(0), op->getResult(0));
  operandGrads.push_back(dydx ? Value(MulOp::create(b, loc, resultGrads[0], dydx))
                              : Value(NegOp::create(b, loc, resultGrads[0])));
  return success();
}

// d(-x) = -dx
LogicalResult NegOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  return unaryRule(b, *this, resultGrads, operandGrads,
                   [](Location, Value, Value) { return Value(); });
}

// d|x| = sign(x) dx (zero at 0, as in PyTorch)
LogicalResult AbsOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  return unaryRule(b, *this, resultGrads, operandGrads,
                   [&](Location loc, Value x, Value) { return SignOp::create(b, loc, x); });
}

// d e^x = e^x dx
LogicalResult ExpOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  return unaryRule(b, *this, resultGrads, operandGrads, [](Location, Value, Value y) { return y; });
}

// d ln x = dx / x
LogicalResult LogOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  return unaryRule(b, *this, resultGrads, operandGrads, [&](Location loc, Value x, Value) {
    return ReciprocalOp::create(b, loc, x);
  });
}

// d sqrt(x) = dx / (2 sqrt(x))
LogicalResult SqrtOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  return unaryRule(b, *this, resultGrads, operandGrads, [&](Location loc, Value, Value y) {
    return DivOp::create(b, loc, scalar(b, loc, elementOf(y), 0.5), y);
  });
}

// d (1/x) = -dx / x^2 = -y^2 dx
LogicalResult ReciprocalOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                           SmallVectorImpl<Value> &operandGrads) {
  return unaryRule(b, *this, resultGrads, operandGrads, [&](Location loc, Value, Value y) {
    return NegOp::create(b, loc, MulOp::create(b, loc, y, y));
  });
}

// d tanh(x) = (1 - y^2) dx
LogicalResult TanhOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  return unaryRule(b, *this, resultGrads, operandGrads, [&](Location loc, Value, Value y) {
    return SubOp::create(b, loc, scalar(b, loc, elementOf(y), 1.0), MulOp::create(b, loc, y, y));
  });
}

// d sigmoid(x) = y (1 - y) dx
LogicalResult SigmoidOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  return unaryRule(b, *this, resultGrads, operandGrads, [&](Location loc, Value, Value y) {
    return MulOp::create(b, loc, y,
                         SubOp::create(b, loc, scalar(b, loc, elementOf(y), 1.0), y));
  });
}

// d relu(x) = [x > 0] dx: a selection, not a product, so that infinities in
// the cotangent of inactive units do not turn into NaN.
LogicalResult ReluOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  // relu(x) > 0 exactly where x > 0. Testing the result leaves the input
  // unread by the backward pass, so the forward ReLU can fuse into the
  // product or convolution that feeds it.
  Value positive =
      GreaterOp::create(b, loc, getResult(), scalar(b, loc, elementOf(getInput()), 0));
  operandGrads.push_back(selectOrZero(b, loc, positive, resultGrads[0]));
  return success();
}

// d erf(x) = 2/sqrt(pi) e^(-x^2) dx
LogicalResult ErfOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  return unaryRule(b, *this, resultGrads, operandGrads, [&](Location loc, Value x, Value) {
    Value negSquare = NegOp::create(b, loc, MulOp::create(b, loc, x, x));
    return MulOp::create(b, loc, ExpOp::create(b, loc, negSquare),
                         scalar(b, loc, elementOf(x), 2.0 / std::sqrt(M_PI)));
  });
}

// d sin(x) = cos(x) dx
LogicalResult SinOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  return unaryRule(b, *this, resultGrads, operandGrads,
                   [&](Location loc, Value x, Value) { return CosOp::create(b, loc, x); });
}

// d cos(x) = -sin(x) dx
LogicalResult CosOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  return unaryRule(b, *this, resultGrads, operandGrads, [&](Location loc, Value x, Value) {
    return NegOp::create(b, loc, SinOp::create(b, loc, x));
  });
}

// d ln(1 + e^x) = sigmoid(x) dx
LogicalResult SoftplusOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                         SmallVectorImpl<Value> &operandGrads) {
  return unaryRule(b, *this, resultGrads, operandGrads,
                   [&](Location loc, Value x, Value) { return SigmoidOp::create(b, loc, x); });
}

// d x/(1 + |x|) = dx / (1 + |x|)^2
LogicalResult SoftsignOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                         SmallVectorImpl<Value> &operandGrads) {
  return unaryRule(b, *this, resultGrads, operandGrads, [&](Location loc, Value x, Value) {
    Value d = AddOp::create(b, loc, scalar(b, loc, elementOf(x), 1.0), AbsOp::create(b, loc, x));
    return ReciprocalOp::create(b, loc, MulOp::create(b, loc, d, d));
  });
}

//===----------------------------------------------------------------------===//
// Binary, with broadcasting
//===----------------------------------------------------------------------===//

/// Sets the gradients of a binary op's operands, each summed to its shape.
static LogicalResult binaryGrads(OpBuilder &b, Operation *op, Value lhsGrad, Value rhsGrad,
                                 SmallVectorImpl<Value> &operandGrads) {
  Location loc = op->getLoc();
  operandGrads.push_back(unbroadcast(b, loc, lhsGrad, typeOf(op->getOperand(0))));
  operandGrads.push_back(unbroadcast(b, loc, rhsGrad, typeOf(op->getOperand(1))));
  return success();
}

// d(l + r) = dl + dr
LogicalResult AddOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  return binaryGrads(b, *this, resultGrads[0], resultGrads[0], operandGrads);
}

// d(l - r) = dl - dr
LogicalResult SubOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  return binaryGrads(b, *this, resultGrads[0], NegOp::create(b, getLoc(), resultGrads[0]),
                     operandGrads);
}

// d(l r) = r dl + l dr
LogicalResult MulOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value g = resultGrads[0];
  // Built one statement at a time: argument evaluation order differs between compilers, and
  // the order of the ops is visible in the IR.
  Value lhsGrad = MulOp::create(b, loc, g, getRhs());
  Value rhsGrad = MulOp::create(b, loc, g, getLhs());
  return binaryGrads(b, *this, lhsGrad, rhsGrad, operandGrads);
}

// d(l / r) = dl / r - (l / r^2) dr = dl / r - y dr / r
LogicalResult DivOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value lhsGrad = DivOp::create(b, loc, resultGrads[0], getRhs());
  Value rhsGrad = NegOp::create(b, loc, MulOp::create(b, loc, lhsGrad, getOutput()));
  return binaryGrads(b, *this, lhsGrad, rhsGrad, operandGrads);
}

// d(l^r) = r l^(r-1) dl + ln(l) y dr; the exponent's term is taken as zero
// where l <= 0, where ln(l) is not real (PyTorch does the same at l = 0).
LogicalResult PowOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value g = resultGrads[0];
  Type element = elementOf(getLhs());
  Value rMinusOne = SubOp::create(b, loc, getRhs(), scalar(b, loc, element, 1.0));
  Value lhsGrad = MulOp::create(
      b, loc, g, MulOp::create(b, loc, getRhs(), PowOp::create(b, loc, getLhs(), rMinusOne)));
  Value positive = GreaterOp::create(b, loc, getLhs(), scalar(b, loc, element, 0.0));
  Value safeLhs = WhereOp::create(b, loc, positive, getLhs(), scalar(b, loc, element, 1.0));
  Value rhsGrad = MulOp::create(b, loc, MulOp::create(b, loc, g, getOutput()),
                                LogOp::create(b, loc, safeLhs));
  return binaryGrads(b, *this, lhsGrad, rhsGrad, operandGrads);
}

/// max and min: the cotangent goes to the operand that was chosen, to `lhs`
/// on ties.
template <typename OpTy, typename CompareOp>
static LogicalResult selectionRule(OpBuilder &b, OpTy op, ValueRange resultGrads,
                                   SmallVectorImpl<Value> &operandGrads) {
  Location loc = op.getLoc();
  Value g = resultGrads[0];
  Value lhsChosen = CompareOp::create(b, loc, op.getLhs(), op.getRhs());
  Value zero = scalar(b, loc, elementOf(g), 0.0);
  Value lhsGrad = WhereOp::create(b, loc, lhsChosen, g, zero);
  Value rhsGrad = WhereOp::create(b, loc, lhsChosen, zero, g);
  return binaryGrads(b, op, lhsGrad, rhsGrad, operandGrads);
}

// d max(l, r) = [l >= r] dl + [l < r] dr
LogicalResult MaxOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  return selectionRule<MaxOp, GreaterEqualOp>(b, *this, resultGrads, operandGrads);
}

// d min(l, r) = [l <= r] dl + [l > r] dr
LogicalResult MinOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  return selectionRule<MinOp, LessEqualOp>(b, *this, resultGrads, operandGrads);
}

// Dropout multiplies by its mask / (1 - ratio), a function of its seed,
// counter and each element's index: the gradient is the same dropout of the
// cotangent, which recomputes the mask rather than storing it.
LogicalResult DropoutOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  operandGrads.push_back(DropoutOp::create(b, getLoc(), getInput().getType(), resultGrads[0],
                                           getCounter(), getOffset(), getRatioAttr(), getSeedAttr()));
  if (getCounter())
    operandGrads.push_back(Value());
  if (getOffset())
    operandGrads.push_back(Value());
  return success();
}

//===----------------------------------------------------------------------===//
// Selection and conversion
//===----------------------------------------------------------------------===//

// d where(c, t, f) = [c] dt + [!c] df; the condition has no gradient.
LogicalResult WhereOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value g = resultGrads[0];
  Value zero = scalar(b, loc, elementOf(g), 0.0);
  operandGrads.push_back(Value());
  operandGrads.push_back(
      unbroadcast(b, loc, WhereOp::create(b, loc, getCondition(), g, zero), typeOf(getOnTrue())));
  operandGrads.push_back(unbroadcast(b, loc, WhereOp::create(b, loc, getCondition(), zero, g),
                                     typeOf(getOnFalse())));
  return success();
}

// A cast between float types passes the gradient through, cast back; casts
// to or from integers are not differentiable.
LogicalResult CastOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  if (!llvm::isa<FloatType>(elementOf(getInput())) || !llvm::isa<FloatType>(elementOf(getOutput()))) {
    operandGrads.push_back(Value());
    return success();
  }
  operandGrads.push_back(CastOp::create(b, getLoc(), getInput().getType(), resultGrads[0]));
  return success();
}

} // namespace kiln
