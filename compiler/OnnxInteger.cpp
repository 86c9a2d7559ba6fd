//===- OnnxInteger.cpp - Quantization ops and BitShift -------------------===//
//
// ONNX's quantization ops as compositions of kiln ops: QuantizeLinear,
// DequantizeLinear and DynamicQuantizeLinear elementwise; MatMulInteger,
// ConvInteger, QLinearMatMul and QLinearConv as products in f64 of the
// zero-point-corrected operands. Products of 8-bit integers summed in f64 are
// exact (up to 2^53 / 2^16 terms), so the integer results are those of an
// int32 accumulation. Kiln's integer tensors are signless; which operands
// are ONNX uint8 the node says (Node::isUnsigned).
//
//===----------------------------------------------------------------------===//

#include "compiler/Importer.h"

namespace kiln::onnx_import {

Results importConv(Importer &im, Node &n);

namespace {

/// Operand `index` of `n` converted to `element` (a float type), read as
/// unsigned where the node says so.
Value toFloat(Importer &im, Node &n, size_t index, Type element) {
  Value v = n.input(index);
  auto cast = CastOp::create(im.builder, n.loc, typeOf(v).clone(element), v);
  cast.setUnsignedInput(n.isUnsigned(index));
  return cast;
}

/// A per-axis parameter (scale or zero point) shaped to broadcast against a
/// tensor of rank `rank` along `axis`: a scalar or one-element tensor stays
/// as it is, a 1-D tensor becomes [1, .., C, .., 1].
FailureOr<Value> alongAxis(Importer &im, Node &n, Value param, int64_t axis, int64_t rank,
                           int64_t extent, StringRef what) {
  RankedTensorType type = typeOf(param);
  if (type.getNumElements() == 1)
    return reshapeTo(im.builder, n.loc, param, {});
  if (type.getRank() != 1 || type.getDimSize(0) != extent) {
    (void)im.failNode(n, ImportFailure::Invalid,
                      what + " must be a scalar or have " + Twine(extent) +
                          " elements (one per index of axis " + Twine(axis) + "), got " +
                          describeShape(type.getShape()));
    return failure();
  }
  SmallVector<int64_t> shape(rank, 1);
  shape[axis] = extent;
  return reshapeTo(im.builder, n.loc, param, shape);
}

/// The axis attribute of a per-axis quantization op, normalized; unused (0)
/// when the scale is a scalar.
FailureOr<int64_t> quantizationAxis(Importer &im, Node &n, int64_t rank) {
  if (typeOf(n.input(1)).getNumElements() == 1)
    return 0;
  int64_t axis = n.getInt("axis", 1);
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1)) {
    (void)im.failNode(n, ImportFailure::Invalid,
                      "axis " + Twine(axis) + " is out of range for rank " + Twine(rank));
    return failure();
  }
  return axis < 0 ? axis + rank : axis;
}

/// saturate(round_half_even(real) + zeroPoint) as an 8-bit integer tensor,
/// unsigned (0..255) or signed (-128..127). `zeroPoint` is a float tensor or
/// null (0).
Value quantize(Importer &im, Location loc, Value real, Value zeroPoint, bool isUnsigned) {
  OpBuilder &b = im.builder;
  Type element = typeOf(real).getElementType();
  Value q = RoundOp::create(b, loc, real);
  if (zeroPoint)
    q = AddOp::create(b, loc, q, zeroPoint);
  q = MaxOp::create(b, loc, q, im.splat(loc, element, isUnsigned ? 0 : -128));
  q = MinOp::create(b, loc, q, im.splat(loc, element, isUnsigned ? 255 : 127));
  auto cast = CastOp::create(b, loc, typeOf(q).clone(b.getI8Type()), q);
  cast.setUnsignedOutput(isUnsigned);
  return cast;
}

/// Whether an optional zero point at `index` makes the result unsigned: its
/// own type, or uint8 when it is absent (ONNX's default).
bool zeroPointIsUnsigned(Node &n, size_t index) {
  return n.input(index) ? n.isUnsigned(index) : true;
}

Results importQuantizeLinear(Importer &im, Node &n) {
  Value x = n.input(0);
  RankedTensorType type = typeOf(x);
  if (!llvm::isa<FloatType>(type.getElementType()))
    return im.failNode(n, ImportFailure::Unsupported, "only float inputs are supported");
  if (n.input(2) && typeOf(n.input(2)).getElementType().getIntOrFloatBitWidth() != 8)
    return im.failNode(n, ImportFailure::Unsupported,
                       "only 8-bit zero points (uint8, int8) are supported");
  FailureOr<int64_t> axis = quantizationAxis(im, n, type.getRank());
  if (failed(axis))
    return failure();
  int64_t extent = type.getRank() ? type.getDimSize(*axis) : 1;
  FailureOr<Value> scale = alongAxis(im, n, n.input(1), *axis, type.getRank(), extent, "y_scale");
  if (failed(scale))
    return failure();
  Value zeroPoint;
  if (n.input(2)) {
    FailureOr<Value> zp = alongAxis(im, n, toFloat(im, n, 2, type.getElementType()), *axis,
                                    type.getRank(), extent, "y_zero_point");
    if (failed(zp))
      return failure();
    zeroPoint = *zp;
  }
  bool isUnsigned = zeroPointIsUnsigned(n, 2);
  Value divisor = *scale;
  if (typeOf(divisor).getElementType() != type.getElementType())
    divisor = CastOp::create(im.builder, n.loc, typeOf(divisor).clone(type.getElementType()),
                             divisor);
  Value real = DivOp::create(im.builder, n.loc, x, divisor);
  n.setUnsignedOutput(0, isUnsigned);
  return one(quantize(im, n.loc, real, zeroPoint, isUnsigned));
}

Results importDequantizeLinear(Importer &im, Node &n) {
  RankedTensorType type = typeOf(n.input(0));
  Type element = typeOf(n.input(1)).getElementType();
  if (!type.getElementType().isInteger() || type.getElementType().isInteger(1))
    return im.failNode(n, ImportFailure::Unsupported, "only integer inputs are supported");
  FailureOr<int64_t> axis = quantizationAxis(im, n, type.getRank());
  if (failed(axis))
    return failure();
  int64_t extent = type.getRank() ? type.getDimSize(*axis) : 1;
  FailureOr<Value> scale =
      alongAxis(im, n, n.input(1), *axis, type.getRank(), extent, "x_scale");
  if (failed(scale))
    return failure();
  Value y = toFloat(im, n, 0, element);
  if (n.input(2)) {
    FailureOr<Value> zp =
        alongAxis(im, n, toFloat(im, n, 2, element), *axis, type.getRank(), extent,
                  "x_zero_point");
    if (failed(zp))
      return failure();
    y = SubOp::create(im.builder, n.loc, y, *zp);
  }
  n.setUnsignedOutput(0, false);
  return one(MulOp::create(im.builder, n.loc, y, *scale));
}

// y_scale = (max(0, max(x)) - min(0, min(x))) / 255,
// y_zero_point = saturate(round(-min(0, min(x)) / y_scale)),
// y = saturate(round(x / y_scale) + y_zero_point), all uint8.
Results importDynamicQuantizeLinear(Importer &im, Node &n) {
  OpBuilder &b = im.builder;
  Value x = n.input(0);
  RankedTensorType type = typeOf(x);
  Type element = type.getElementType();
  if (!element.isF32())
    return im.failNode(n, ImportFailure::Unsupported, "only float inputs are supported");
  SmallVector<int64_t> all = llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
  Value zero = im.splat(n.loc, element, 0);
  Value lo = MinOp::create(b, n.loc, zero, ReduceMinOp::create(b, n.loc, x, all, false));
  Value hi = MaxOp::create(b, n.loc, zero, ReduceMaxOp::create(b, n.loc, x, all, false));
  Value scale = DivOp::create(b, n.loc, SubOp::create(b, n.loc, hi, lo),
                              im.splat(n.loc, element, 255));
  Value zeroPoint = quantize(im, n.loc, DivOp::create(b, n.loc, NegOp::create(b, n.loc, lo), scale),
                             Value(), /*isUnsigned=*/true);
  auto zeroPointReal = CastOp::create(b, n.loc, typeOf(zeroPoint).clone(element), zeroPoint);
  zeroPointReal.setUnsignedInput(true);
  Value y = quantize(im, n.loc, DivOp::create(b, n.loc, x, scale), zeroPointReal,
                     /*isUnsigned=*/true);
  n.setUnsignedOutput(0, true);
  n.setUnsignedOutput(1, false);
  n.setUnsignedOutput(2, true);
  return SmallVector<Value>{y, scale, zeroPoint};
}

/// Operand `index` in f64 minus the f64 zero point at `zpIndex` (if given),
/// the zero point shaped by `shapeZeroPoint`.
FailureOr<Value> centered(Importer &im, Node &n, size_t index, size_t zpIndex,
                          function_ref<FailureOr<Value>(Value)> shapeZeroPoint) {
  Type f64 = im.builder.getF64Type();
  Value v = toFloat(im, n, index, f64);
  if (!n.input(zpIndex))
    return v;
  FailureOr<Value> zp = shapeZeroPoint(toFloat(im, n, zpIndex, f64));
  if (failed(zp))
    return failure();
  FailureOr<SubOp> difference = im.create<SubOp>(n.loc, v, *zp);
  if (failed(difference))
    return failure();
  return Value(*difference);
}

/// A zero point or scale that must be a scalar (one element), as a rank-0
/// tensor; otherwise fails naming `what`.
FailureOr<Value> scalarOperand(Importer &im, Node &n, Value v, StringRef what) {
  if (typeOf(v).getNumElements() != 1) {
    (void)im.failNode(n, ImportFailure::Invalid,
                      what + " must be a scalar, got " + describeShape(typeOf(v).getShape()));
    return failure();
  }
  return reshapeTo(im.builder, n.loc, v, {});
}

/// The integer product (A - a_zero_point) (B - b_zero_point) in f64, for
/// MatMulInteger (zero points at 2 and 3) and QLinearMatMul (2 and 5).
FailureOr<Value> integerMatMul(Importer &im, Node &n, size_t a, size_t aZp, size_t b,
                               size_t bZp) {
  RankedTensorType aType = typeOf(n.input(a));
  if (aType.getRank() < 1 || typeOf(n.input(b)).getRank() < 1) {
    (void)im.failNode(n, ImportFailure::Invalid, "operands must have rank 1 or more");
    return failure();
  }
  // a's zero point is a scalar or one per row of A; b's one per column of B.
  FailureOr<Value> lhs = centered(im, n, a, aZp, [&](Value zp) -> FailureOr<Value> {
    if (aType.getRank() < 2)
      return scalarOperand(im, n, zp, "a_zero_point");
    return alongAxis(im, n, zp, aType.getRank() - 2, aType.getRank(),
                     aType.getDimSize(aType.getRank() - 2), "a_zero_point");
  });
  if (failed(lhs))
    return failure();
  RankedTensorType bType = typeOf(n.input(b));
  FailureOr<Value> rhs = centered(im, n, b, bZp, [&](Value zp) -> FailureOr<Value> {
    return alongAxis(im, n, zp, bType.getRank() - 1, bType.getRank(), bType.getShape().back(),
                     "b_zero_point");
  });
  if (failed(rhs))
    return failure();
  FailureOr<MatMulOp> product = im.create<MatMulOp>(n.loc, *lhs, *rhs);
  if (failed(product))
    return failure();
  return Value(*product);
}

/// The integer convolution of (X - x_zero_point) by (W - w_zero_point) in
/// f64, with Conv's attributes: ConvInteger (zero points at 2 and 3) and
/// QLinearConv (2 and 5).
FailureOr<Value> integerConv(Importer &im, Node &n, size_t x, size_t xZp, size_t w,
                             size_t wZp) {
  RankedTensorType wType = typeOf(n.input(w));
  FailureOr<Value> input = centered(im, n, x, xZp, [&](Value zp) -> FailureOr<Value> {
    return scalarOperand(im, n, zp, "x_zero_point");
  });
  if (failed(input))
    return failure();
  if (wType.getRank() < 1) {
    (void)im.failNode(n, ImportFailure::Invalid, "the filter must have rank 1 or more");
    return failure();
  }
  FailureOr<Value> filter = centered(im, n, w, wZp, [&](Value zp) -> FailureOr<Value> {
    return alongAxis(im, n, zp, 0, wType.getRank(), wType.getDimSize(0), "w_zero_point");
  });
  if (failed(filter))
    return failure();
  Node conv = n;
  conv.inputs = {*input, *filter};
  Results result = importConv(im, conv);
  if (failed(result))
    return failure();
  return result->front();
}

/// An integer product computed in f64 as the int32 result of MatMulInteger
/// and ConvInteger.
Results asInt32(Importer &im, Node &n, FailureOr<Value> product) {
  if (failed(product))
    return failure();
  n.setUnsignedOutput(0, false);
  return one(CastOp::create(im.builder, n.loc, typeOf(*product).clone(im.builder.getI32Type()),
                            *product));
}

Results importMatMulInteger(Importer &im, Node &n) {
  return asInt32(im, n, integerMatMul(im, n, 0, 2, 1, 3));
}

Results importConvInteger(Importer &im, Node &n) {
  return asInt32(im, n, integerConv(im, n, 0, 2, 1, 3));
}

/// Requantizes an integer accumulator (f64) by `multiplier` (f64, the
/// product of the input scales over the output scale) into y's type with
/// y's zero point at `yZp`.
Results requantize(Importer &im, Node &n, Value accumulator, Value multiplier, size_t yZp) {
  Type f64 = im.builder.getF64Type();
  FailureOr<MulOp> real = im.create<MulOp>(n.loc, accumulator, multiplier);
  if (failed(real))
    return failure();
  FailureOr<Value> zp = scalarOperand(im, n, toFloat(im, n, yZp, f64), "y_zero_point");
  if (failed(zp))
    return failure();
  bool isUnsigned = n.isUnsigned(yZp);
  n.setUnsignedOutput(0, isUnsigned);
  return one(quantize(im, n.loc, *real, *zp, isUnsigned));
}

/// A scale operand in f64.
Value scaleF64(Importer &im, Node &n, size_t index) {
  return toFloat(im, n, index, im.builder.getF64Type());
}

// QLinearMatMul(a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale,
// y_zero_point).
Results importQLinearMatMul(Importer &im, Node &n) {
  if (n.inputs.size() != 8)
    return im.failNode(n, ImportFailure::Invalid, "needs 8 inputs");
  FailureOr<Value> product = integerMatMul(im, n, 0, 2, 3, 5);
  if (failed(product))
    return failure();
  OpBuilder &b = im.builder;
  for (size_t i : {1, 4, 6})
    if (typeOf(n.input(i)).getNumElements() != 1)
      return im.failNode(n, ImportFailure::Unsupported, "only scalar scales are supported");
  auto scalar = [&](size_t i) { return reshapeTo(b, n.loc, scaleF64(im, n, i), {}); };
  Value multiplier = DivOp::create(b, n.loc, MulOp::create(b, n.loc, scalar(1), scalar(4)),
                                   scalar(6));
  return requantize(im, n, *product, multiplier, 7);
}

// QLinearConv(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale,
// y_zero_point, B), w_scale per output channel or scalar, B int32.
Results importQLinearConv(Importer &im, Node &n) {
  if (n.inputs.size() < 8)
    return im.failNode(n, ImportFailure::Invalid, "needs at least 8 inputs");
  FailureOr<Value> product = integerConv(im, n, 0, 2, 3, 5);
  if (failed(product))
    return failure();
  OpBuilder &b = im.builder;
  int64_t channels = typeOf(n.input(3)).getDimSize(0);
  Value accumulator = *product;
  if (n.input(8)) {
    FailureOr<Value> bias =
        alongAxis(im, n, toFloat(im, n, 8, b.getF64Type()), 1, 4, channels, "B");
    if (failed(bias))
      return failure();
    accumulator = AddOp::create(b, n.loc, accumulator, *bias);
  }
  FailureOr<Value> wScale = alongAxis(im, n, scaleF64(im, n, 4), 1, 4, channels, "w_scale");
  FailureOr<Value> xScale = scalarOperand(im, n, scaleF64(im, n, 1), "x_scale");
  FailureOr<Value> yScale = scalarOperand(im, n, scaleF64(im, n, 6), "y_scale");
  if (failed(wScale) || failed(xScale) || failed(yScale))
    return failure();
  Value multiplier =
      DivOp::create(b, n.loc, MulOp::create(b, n.loc, *xScale, *wScale), *yScale);
  return requantize(im, n, accumulator, multiplier, 7);
}

Results importBitShift(Importer &im, Node &n) {
  if (!n.isUnsigned(0) || !n.isUnsigned(1))
    return im.failNode(n, ImportFailure::Invalid,
                       "BitShift is defined for unsigned integers (uint8 to uint64) only");
  std::string direction = n.getString("direction", "");
  if (direction == "LEFT")
    return one(im.create<ShiftLeftOp>(n.loc, n.input(0), n.input(1)));
  if (direction == "RIGHT")
    return one(im.create<ShiftRightOp>(n.loc, n.input(0), n.input(1)));
  return im.failNode(n, ImportFailure::Invalid,
                     "direction must be \"LEFT\" or \"RIGHT\", got \"" + direction + "\"");
}

} // namespace

void addIntegerHandlers(llvm::StringMap<Handler> &t) {
  t["QuantizeLinear"] = importQuantizeLinear;
  t["DequantizeLinear"] = importDequantizeLinear;
  t["DynamicQuantizeLinear"] = importDynamicQuantizeLinear;
  t["MatMulInteger"] = importMatMulInteger;
  t["ConvInteger"] = importConvInteger;
  t["QLinearMatMul"] = importQLinearMatMul;
  t["QLinearConv"] = importQLinearConv;
  t["BitShift"] = importBitShift;
}

} // namespace kiln::onnx_import
