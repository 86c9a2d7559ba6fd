//===- Elementwise.cpp - Lowering of elementwise kiln ops -----------------===//
//
// Every elementwise op becomes one parallel linalg.generic whose operands are
// read through broadcasting maps; only the scalar body differs per op.
//
//===----------------------------------------------------------------------===//
#include "codegen/LowerToLinalg/Utils.h"
#include "dialects/kiln/KilnOps.h"

#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;

namespace kiln {
namespace {

bool isFloat(Value v) { return llvm::isa<FloatType>(v.getType()); }
Value cst(OpBuilder &b, Location loc, Value like, double value) {
  return scalarConstant(b, loc, like.getType(), value);
}
Value lessThanZero(OpBuilder &b, Location loc, Value x) {
  if (isFloat(x))
    return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x,
                                 cst(b, loc, x, 0));
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, x,
                               cst(b, loc, x, 0));
}
Value clamp01(OpBuilder &b, Location loc, Value x) {
  Value upper = arith::MinimumFOp::create(b, loc, x, cst(b, loc, x, 1));
  return arith::MaximumFOp::create(b, loc, upper, cst(b, loc, x, 0));
}
// e^x - 1 via expm1 keeps precision near zero, as ONNX's references do.
Value expMinusOne(OpBuilder &b, Location loc, Value x) {
  return math::ExpM1Op::create(b, loc, x);
}

// The scalar body of each op: args are the broadcast operand elements.
Value scalar(AbsOp, OpBuilder &b, Location loc, ValueRange a) {
  if (isFloat(a[0]))
    return math::AbsFOp::create(b, loc, a[0]);
  return math::AbsIOp::create(b, loc, a[0]);
}
Value scalar(NegOp, OpBuilder &b, Location loc, ValueRange a) {
  if (isFloat(a[0]))
    return arith::NegFOp::create(b, loc, a[0]);
  return arith::SubIOp::create(b, loc, cst(b, loc, a[0], 0), a[0]);
}
Value scalar(SignOp, OpBuilder &b, Location loc, ValueRange a) {
  Value x = a[0], zero = cst(b, loc, x, 0);
  Value positive, negative;
  if (isFloat(x)) {
    positive = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x, zero);
    negative = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x, zero);
  } else {
    positive = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, x, zero);
    negative = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, x, zero);
  }
  Value neg = arith::SelectOp::create(b, loc, negative, cst(b, loc, x, -1), zero);
  return arith::SelectOp::create(b, loc, positive, cst(b, loc, x, 1), neg);
}
Value scalar(ExpOp, OpBuilder &b, Location loc, ValueRange a) {
  return math::ExpOp::create(b, loc, a[0]);
}
Value scalar(LogOp, OpBuilder &b, Location loc, ValueRange a) {
  return math::LogOp::create(b, loc, a[0]);
}
Value scalar(SqrtOp, OpBuilder &b, Location loc, ValueRange a) {
  return math::SqrtOp::create(b, loc, a[0]);
}
Value scalar(ReciprocalOp, OpBuilder &b, Location loc, ValueRange a) {
  return arith::DivFOp::create(b, loc, cst(b, loc, a[0], 1), a[0]);
}
Value scalar(TanhOp, OpBuilder &b, Location loc, ValueRange a) {
  return math::TanhOp::create(b, loc, a[0]);
}
Value scalar(SigmoidOp, OpBuilder &b, Location loc, ValueRange a) {
  Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, a[0]));
  Value denom = arith::AddFOp::create(b, loc, cst(b, loc, a[0], 1), e);
  return arith::DivFOp::create(b, loc, cst(b, loc, a[0], 1), denom);
}
Value scalar(ReluOp, OpBuilder &b, Location loc, ValueRange a) {
  // Selecting keeps NaN inputs NaN, as ONNX's reference does.
  return arith::SelectOp::create(b, loc, lessThanZero(b, loc, a[0]),
                                 cst(b, loc, a[0], 0), a[0]);
}
Value scalar(ErfOp, OpBuilder &b, Location loc, ValueRange a) {
  return math::ErfOp::create(b, loc, a[0]);
}
Value scalar(FloorOp, OpBuilder &b, Location loc, ValueRange a) {
  return math::FloorOp::create(b, loc, a[0]);
}
Value scalar(CeilOp, OpBuilder &b, Location loc, ValueRange a) {
  return math::CeilOp::create(b, loc, a[0]);
}
Value scalar(RoundOp, OpBuilder &b, Location loc, ValueRange a) {
  return math::RoundEvenOp::create(b, loc, a[0]);
}
#define KILN_MATH_UNARY(KilnOp, MathOp)                                        \
  Value scalar(KilnOp, OpBuilder &b, Location loc, ValueRange a) {             \
    return math::MathOp::create(b, loc, a[0]);                                 \
  }
KILN_MATH_UNARY(SinOp, SinOp)
KILN_MATH_UNARY(CosOp, CosOp)
KILN_MATH_UNARY(TanOp, TanOp)
KILN_MATH_UNARY(AsinOp, AsinOp)
KILN_MATH_UNARY(AcosOp, AcosOp)
KILN_MATH_UNARY(AtanOp, AtanOp)
KILN_MATH_UNARY(SinhOp, SinhOp)
KILN_MATH_UNARY(CoshOp, CoshOp)
KILN_MATH_UNARY(AsinhOp, AsinhOp)
KILN_MATH_UNARY(AcoshOp, AcoshOp)
KILN_MATH_UNARY(AtanhOp, AtanhOp)
#undef KILN_MATH_UNARY
Value scalar(SoftplusOp, OpBuilder &b, Location loc, ValueRange a) {
  return math::Log1pOp::create(b, loc, math::ExpOp::create(b, loc, a[0]));
}
Value scalar(SoftsignOp, OpBuilder &b, Location loc, ValueRange a) {
  Value denom = arith::AddFOp::create(b, loc, cst(b, loc, a[0], 1),
                                      math::AbsFOp::create(b, loc, a[0]));
  return arith::DivFOp::create(b, loc, a[0], denom);
}
Value scalar(HardSwishOp, OpBuilder &b, Location loc, ValueRange a) {
  Value x = a[0];
  Value t = arith::AddFOp::create(
      b, loc, arith::MulFOp::create(b, loc, x, cst(b, loc, x, 1.0 / 6.0)),
      cst(b, loc, x, 0.5));
  return arith::MulFOp::create(b, loc, x, clamp01(b, loc, t));
}
Value scalar(NotOp, OpBuilder &b, Location loc, ValueRange a) {
  return arith::XOrIOp::create(b, loc, a[0], cst(b, loc, a[0], 1));
}
Value scalar(LeakyReluOp op, OpBuilder &b, Location loc, ValueRange a) {
  Value x = a[0];
  Value scaled = arith::MulFOp::create(
      b, loc, x, cst(b, loc, x, op.getAlpha().convertToDouble()));
  return arith::SelectOp::create(b, loc, lessThanZero(b, loc, x), scaled, x);
}
Value scalar(EluOp op, OpBuilder &b, Location loc, ValueRange a) {
  Value x = a[0];
  Value neg = arith::MulFOp::create(
      b, loc, cst(b, loc, x, op.getAlpha().convertToDouble()),
      expMinusOne(b, loc, x));
  return arith::SelectOp::create(b, loc, lessThanZero(b, loc, x), neg, x);
}
Value scalar(CeluOp op, OpBuilder &b, Location loc, ValueRange a) {
  Value x = a[0], alpha = cst(b, loc, x, op.getAlpha().convertToDouble());
  Value neg = arith::MulFOp::create(
      b, loc, alpha,
      expMinusOne(b, loc, arith::DivFOp::create(b, loc, x, alpha)));
  Value zero = cst(b, loc, x, 0);
  return arith::AddFOp::create(b, loc, arith::MaximumFOp::create(b, loc, x, zero),
                               arith::MinimumFOp::create(b, loc, neg, zero));
}
Value scalar(SeluOp op, OpBuilder &b, Location loc, ValueRange a) {
  Value x = a[0];
  Value neg = arith::MulFOp::create(
      b, loc, cst(b, loc, x, op.getAlpha().convertToDouble()),
      expMinusOne(b, loc, x));
  Value notPositive = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLE,
                                            x, cst(b, loc, x, 0));
  Value pick = arith::SelectOp::create(b, loc, notPositive, neg, x);
  return arith::MulFOp::create(
      b, loc, cst(b, loc, x, op.getGamma().convertToDouble()), pick);
}
Value scalar(HardSigmoidOp op, OpBuilder &b, Location loc, ValueRange a) {
  Value x = a[0];
  Value t = arith::AddFOp::create(
      b, loc,
      arith::MulFOp::create(b, loc, x,
                            cst(b, loc, x, op.getAlpha().convertToDouble())),
      cst(b, loc, x, op.getBeta().convertToDouble()));
  return clamp01(b, loc, t);
}
Value scalar(ThresholdedReluOp op, OpBuilder &b, Location loc, ValueRange a) {
  Value x = a[0];
  Value above = arith::CmpFOp::create(
      b, loc, arith::CmpFPredicate::OGT, x,
      cst(b, loc, x, op.getAlpha().convertToDouble()));
  return arith::SelectOp::create(b, loc, above, x, cst(b, loc, x, 0));
}
Value scalar(IsNaNOp, OpBuilder &b, Location loc, ValueRange a) {
  return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, a[0], a[0]);
}
Value scalar(IsInfOp op, OpBuilder &b, Location loc, ValueRange a) {
  Value x = a[0];
  auto type = llvm::cast<FloatType>(x.getType());
  auto infinity = [&](bool negative) -> Value {
    return arith::ConstantOp::create(
        b, loc, b.getFloatAttr(type, APFloat::getInf(type.getFloatSemantics(),
                                                     negative)));
  };
  Value result = arith::ConstantOp::create(b, loc, b.getBoolAttr(false));
  if (op.getDetectPositive())
    result = arith::OrIOp::create(
        b, loc, result,
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, x, infinity(false)));
  if (op.getDetectNegative())
    result = arith::OrIOp::create(
        b, loc, result,
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, x, infinity(true)));
  return result;
}

#define KILN_ARITH_BINARY(KilnOp, FloatOp, IntOp)                              \
  Value scalar(KilnOp, OpBuilder &b, Location loc, ValueRange a) {             \
    if (isFloat(a[0]))                                                         \
      return arith::FloatOp::create(b, loc, a[0], a[1]);                       \
    return arith::IntOp::create(b, loc, a[0], a[1]);                           \
  }
KILN_ARITH_BINARY(AddOp, AddFOp, AddIOp)
KILN_ARITH_BINARY(SubOp, SubFOp, SubIOp)
KILN_ARITH_BINARY(MulOp, MulFOp, MulIOp)
#undef KILN_ARITH_BINARY
Value scalar(MaxOp op, OpBuilder &b, Location loc, ValueRange a) {
  return combine(b, loc, Combiner::Max, a[0], a[1], op.getIsUnsigned());
}
Value scalar(MinOp op, OpBuilder &b, Location loc, ValueRange a) {
  return combine(b, loc, Combiner::Min, a[0], a[1], op.getIsUnsigned());
}
/// Shifts by the unsigned amount `a[1]`; LLVM leaves shifts by the bit width
/// or more undefined, Kiln gives 0 (every bit shifted out).
template <typename ShiftOp>
Value shift(OpBuilder &b, Location loc, ValueRange a) {
  Value width = cst(b, loc, a[1], a[1].getType().getIntOrFloatBitWidth());
  Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, a[1], width);
  Value shifted = ShiftOp::create(b, loc, a[0], a[1]);
  return arith::SelectOp::create(b, loc, inRange, shifted, cst(b, loc, a[0], 0));
}
Value scalar(ShiftLeftOp, OpBuilder &b, Location loc, ValueRange a) {
  return shift<arith::ShLIOp>(b, loc, a);
}
Value scalar(ShiftRightOp, OpBuilder &b, Location loc, ValueRange a) {
  return shift<arith::ShRUIOp>(b, loc, a);
}
/// Signed division and remainder with the two cases that trap on x86 made
/// harmless: ONNX leaves x / 0 and INT_MIN / -1 undefined, and Kiln defines
/// x / 0 = x % 0 = 0 and x / -1 = -x (wrapping), x % -1 = 0, so that bad data
/// cannot crash the program.
Value safeIntDivision(OpBuilder &b, Location loc, Value x, Value y, bool remainder) {
  Value zero = cst(b, loc, y, 0), one = cst(b, loc, y, 1), minusOne = cst(b, loc, y, -1);
  Value isZero = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, y, zero);
  Value isMinusOne = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, y, minusOne);
  Value special = arith::OrIOp::create(b, loc, isZero, isMinusOne);
  Value divisor = arith::SelectOp::create(b, loc, special, one, y);
  if (remainder) {
    Value rem = arith::RemSIOp::create(b, loc, x, divisor);
    return arith::SelectOp::create(b, loc, special, zero, rem);
  }
  Value quotient = arith::DivSIOp::create(b, loc, x, divisor);
  Value negated = arith::SubIOp::create(b, loc, zero, x);
  Value edge = arith::SelectOp::create(b, loc, isMinusOne, negated, zero);
  return arith::SelectOp::create(b, loc, special, edge, quotient);
}
/// Unsigned division and remainder, with x / 0 = x % 0 = 0 as for signed
/// integers.
Value safeUnsignedDivision(OpBuilder &b, Location loc, Value x, Value y, bool remainder) {
  Value zero = cst(b, loc, y, 0);
  Value isZero = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, y, zero);
  Value divisor = arith::SelectOp::create(b, loc, isZero, cst(b, loc, y, 1), y);
  Value result = remainder ? Value(arith::RemUIOp::create(b, loc, x, divisor))
                           : Value(arith::DivUIOp::create(b, loc, x, divisor));
  return arith::SelectOp::create(b, loc, isZero, zero, result);
}
Value scalar(DivOp op, OpBuilder &b, Location loc, ValueRange a) {
  if (isFloat(a[0]))
    return arith::DivFOp::create(b, loc, a[0], a[1]);
  if (op.getIsUnsigned())
    return safeUnsignedDivision(b, loc, a[0], a[1], /*remainder=*/false);
  return safeIntDivision(b, loc, a[0], a[1], /*remainder=*/false);
}
Value scalar(AndOp, OpBuilder &b, Location loc, ValueRange a) {
  return arith::AndIOp::create(b, loc, a[0], a[1]);
}
Value scalar(OrOp, OpBuilder &b, Location loc, ValueRange a) {
  return arith::OrIOp::create(b, loc, a[0], a[1]);
}
Value scalar(XorOp, OpBuilder &b, Location loc, ValueRange a) {
  return arith::XOrIOp::create(b, loc, a[0], a[1]);
}
Value scalar(PowOp, OpBuilder &b, Location loc, ValueRange a) {
  Type type = a[0].getType();
  if (isFloat(a[0]))
    return math::PowFOp::create(b, loc, a[0], convertScalar(b, loc, a[1], type));
  // Integer powers go through f64, exact for the magnitudes ints can hold.
  Value base = convertScalar(b, loc, a[0], b.getF64Type());
  Value exponent = convertScalar(b, loc, a[1], b.getF64Type());
  return convertScalar(b, loc, math::PowFOp::create(b, loc, base, exponent), type);
}
Value scalar(PReluOp, OpBuilder &b, Location loc, ValueRange a) {
  Value scaled = arith::MulFOp::create(b, loc, a[0], a[1]);
  return arith::SelectOp::create(b, loc, lessThanZero(b, loc, a[0]), scaled, a[0]);
}
Value scalar(ModOp op, OpBuilder &b, Location loc, ValueRange a) {
  if (isFloat(a[0]))
    return arith::RemFOp::create(b, loc, a[0], a[1]);
  if (op.getIsUnsigned())
    return safeUnsignedDivision(b, loc, a[0], a[1], /*remainder=*/true);
  Value rem = safeIntDivision(b, loc, a[0], a[1], /*remainder=*/true);
  if (op.getFmod())
    return rem;
  // Python's %: a non-zero remainder takes the divisor's sign.
  Value zero = cst(b, loc, rem, 0);
  Value nonZero = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, rem, zero);
  Value signsDiffer = arith::XOrIOp::create(b, loc, lessThanZero(b, loc, rem),
                                            lessThanZero(b, loc, a[1]));
  Value adjust = arith::AndIOp::create(b, loc, nonZero, signsDiffer);
  return arith::SelectOp::create(b, loc, adjust,
                                 arith::AddIOp::create(b, loc, rem, a[1]), rem);
}

Value compare(OpBuilder &b, Location loc, ValueRange a, arith::CmpFPredicate f,
              arith::CmpIPredicate i) {
  if (isFloat(a[0]))
    return arith::CmpFOp::create(b, loc, f, a[0], a[1]);
  return arith::CmpIOp::create(b, loc, i, a[0], a[1]);
}
Value scalar(EqualOp, OpBuilder &b, Location loc, ValueRange a) {
  return compare(b, loc, a, arith::CmpFPredicate::OEQ, arith::CmpIPredicate::eq);
}
#define KILN_COMPARE(KilnOp, F, I, U)                                          \
  Value scalar(KilnOp op, OpBuilder &b, Location loc, ValueRange a) {          \
    return compare(b, loc, a, arith::CmpFPredicate::F,                         \
                   op.getIsUnsigned() ? arith::CmpIPredicate::U                \
                                      : arith::CmpIPredicate::I);              \
  }
KILN_COMPARE(LessOp, OLT, slt, ult)
KILN_COMPARE(LessEqualOp, OLE, sle, ule)
KILN_COMPARE(GreaterOp, OGT, sgt, ugt)
KILN_COMPARE(GreaterEqualOp, OGE, sge, uge)
#undef KILN_COMPARE
Value scalar(WhereOp, OpBuilder &b, Location loc, ValueRange a) {
  return arith::SelectOp::create(b, loc, a[0], a[1], a[2]);
}
Value scalar(CastOp op, OpBuilder &b, Location loc, ValueRange a) {
  return convertScalar(b, loc, a[0], op.getType().getElementType(), op.getUnsignedInput(),
                       op.getUnsignedOutput());
}
Value scalar(ExpandOp, OpBuilder &, Location, ValueRange a) { return a[0]; }

template <typename Op>
struct ElementwiseLowering : OpRewritePattern<Op> {
  using OpRewritePattern<Op>::OpRewritePattern;
  LogicalResult matchAndRewrite(Op op, PatternRewriter &rewriter) const override {
    auto resultType = llvm::cast<RankedTensorType>(op->getResult(0).getType());
    Value result = buildElementwise(
        rewriter, op.getLoc(), resultType, op->getOperands(),
        [&](OpBuilder &b, Location loc, ValueRange args) {
          return scalar(op, b, loc, args);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

// Trilu reads its own element positions, so it is a generic over indices.
struct TriluLowering : OpRewritePattern<TriluOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TriluOp op,
                                PatternRewriter &rewriter) const override {
    RankedTensorType type = op.getType();
    int64_t rank = type.getRank();
    if (rank < 2)
      return rewriter.notifyMatchFailure(op, "needs rank >= 2");
    Value result = buildElementwise(
        rewriter, op.getLoc(), type, op.getInput(),
        [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
          Value row = linalg::IndexOp::create(b, loc, rank - 2);
          Value col = linalg::IndexOp::create(b, loc, rank - 1);
          Value diff = arith::SubIOp::create(b, loc, col, row);
          Value k = arith::ConstantIndexOp::create(b, loc, op.getK());
          Value keep = arith::CmpIOp::create(
              b, loc,
              op.getUpper() ? arith::CmpIPredicate::sge : arith::CmpIPredicate::sle,
              diff, k);
          return arith::SelectOp::create(b, loc, keep, args[0],
                                         cst(b, loc, args[0], 0));
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct ConstantLowering : OpRewritePattern<ConstantOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConstantOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, op.getType(),
                                                   op.getValue());
    return success();
  }
};

} // namespace

void populateElementwiseLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<
      ElementwiseLowering<AbsOp>, ElementwiseLowering<NegOp>,
      ElementwiseLowering<SignOp>, ElementwiseLowering<ExpOp>,
      ElementwiseLowering<LogOp>, ElementwiseLowering<SqrtOp>,
      ElementwiseLowering<ReciprocalOp>, ElementwiseLowering<TanhOp>,
      ElementwiseLowering<SigmoidOp>, ElementwiseLowering<ReluOp>,
      ElementwiseLowering<ErfOp>, ElementwiseLowering<FloorOp>,
      ElementwiseLowering<CeilOp>, ElementwiseLowering<RoundOp>,
      ElementwiseLowering<SinOp>, ElementwiseLowering<CosOp>,
      ElementwiseLowering<TanOp>, ElementwiseLowering<AsinOp>,
      ElementwiseLowering<AcosOp>, ElementwiseLowering<AtanOp>,
      ElementwiseLowering<SinhOp>, ElementwiseLowering<CoshOp>,
      ElementwiseLowering<AsinhOp>, ElementwiseLowering<AcoshOp>,
      ElementwiseLowering<AtanhOp>, ElementwiseLowering<SoftplusOp>,
      ElementwiseLowering<SoftsignOp>, ElementwiseLowering<HardSwishOp>,
      ElementwiseLowering<NotOp>, ElementwiseLowering<LeakyReluOp>,
      ElementwiseLowering<EluOp>, ElementwiseLowering<CeluOp>,
      ElementwiseLowering<SeluOp>, ElementwiseLowering<HardSigmoidOp>,
      ElementwiseLowering<ThresholdedReluOp>, ElementwiseLowering<IsNaNOp>,
      ElementwiseLowering<IsInfOp>, ElementwiseLowering<AddOp>,
      ElementwiseLowering<SubOp>, ElementwiseLowering<MulOp>,
      ElementwiseLowering<DivOp>, ElementwiseLowering<MaxOp>,
      ElementwiseLowering<MinOp>, ElementwiseLowering<AndOp>,
      ElementwiseLowering<OrOp>, ElementwiseLowering<XorOp>,
      ElementwiseLowering<ShiftLeftOp>, ElementwiseLowering<ShiftRightOp>,
      ElementwiseLowering<PowOp>, ElementwiseLowering<PReluOp>,
      ElementwiseLowering<ModOp>, ElementwiseLowering<EqualOp>,
      ElementwiseLowering<LessOp>, ElementwiseLowering<LessEqualOp>,
      ElementwiseLowering<GreaterOp>, ElementwiseLowering<GreaterEqualOp>,
      ElementwiseLowering<WhereOp>, ElementwiseLowering<CastOp>,
      ElementwiseLowering<ExpandOp>, TriluLowering, ConstantLowering>(
      patterns.getContext());
}

} // namespace kiln
