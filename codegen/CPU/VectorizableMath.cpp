//===- VectorizableMath.cpp - Remove what stops LLVM vectorizing kernels --===//
#include "codegen/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/StringSwitch.h"

#include <iterator>
#include <limits>

namespace kiln {
#define GEN_PASS_DEF_KILNVECTORIZABLEMATHPASS
#include "codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// Functions whose approximations are accurate over the whole f32 range.
bool isApproximated(StringRef name) {
  name.consume_front("math.");
  return llvm::StringSwitch<bool>(name)
      .Cases({"exp", "expm1", "log", "log1p", "log2"}, true)
      .Default(false);
}

/// erf on f32 as x * P(x^2) / Q(x^2) for |x| < 3.95 and +-1 beyond, where
/// erf rounds to 1 in f32. P (degree 6) and Q (degree 5) are a rational
/// least-squares fit of erf(x)/x over [0, 4], refined by reweighting
/// (fit_approximations.py): relative error 1.2e-8 in exact arithmetic, at
/// most 6 ulp and on average under 1 when evaluated in f32. About twenty vector instructions against the ~47 of
/// MLIR's three-interval rational approximation.
struct RationalErf : OpRewritePattern<math::ErfOp> {
  using OpRewritePattern::OpRewritePattern;

  static constexpr float kP[] = {1.128379225730896f,     0.18503138422966003f,
                                 0.05407203361392021f,   0.0038134518545120955f,
                                 0.0003697761567309499f, 4.427892235980835e-06f,
                                 -1.1866137406002508e-08f};
  static constexpr float kQ[] = {1.0f,
                                 0.49731317162513733f,
                                 0.11369075626134872f,
                                 0.015355749987065792f,
                                 0.0012869397178292274f,
                                 6.066818968974985e-05f};

  LogicalResult matchAndRewrite(math::ErfOp op, PatternRewriter &rewriter) const override {
    Type type = op.getType();
    if (!getElementTypeOrSelf(type).isF32())
      return failure();
    Location loc = op.getLoc();
    auto constant = [&](float value) -> Value {
      Attribute attr = rewriter.getF32FloatAttr(value);
      if (auto shaped = dyn_cast<ShapedType>(type))
        attr = SplatElementsAttr::get(shaped, attr);
      return arith::ConstantOp::create(rewriter, loc, type, cast<TypedAttr>(attr));
    };
    auto select = [&](arith::CmpFPredicate predicate, Value a, Value b, Value then,
                      Value otherwise) -> Value {
      Value cond = arith::CmpFOp::create(rewriter, loc, predicate, a, b);
      return arith::SelectOp::create(rewriter, loc, cond, then, otherwise);
    };
    auto horner = [&](ArrayRef<float> coefficients, Value s) {
      Value acc = constant(coefficients.back());
      for (float c : llvm::reverse(coefficients.drop_back()))
        acc = math::FmaOp::create(rewriter, loc, acc, s, constant(c));
      return acc;
    };
    Value x = op.getOperand();
    // Clamp to [-4, 4]; a NaN fails both comparisons and passes through.
    Value four = constant(4.0f), minusFour = constant(-4.0f);
    Value clamped = select(arith::CmpFPredicate::OLT, x, minusFour, minusFour, x);
    clamped = select(arith::CmpFPredicate::OGT, clamped, four, four, clamped);
    Value s = arith::MulFOp::create(rewriter, loc, clamped, clamped);
    Value ratio = arith::DivFOp::create(rewriter, loc, horner(kP, s), horner(kQ, s));
    Value approx = arith::MulFOp::create(rewriter, loc, clamped, ratio);
    Value one = math::CopySignOp::create(rewriter, loc, constant(1.0f), x);
    Value magnitude = math::AbsFOp::create(rewriter, loc, x);
    rewriter.replaceOp(op, select(arith::CmpFPredicate::OGE, magnitude, constant(3.95f), one,
                                  approx));
    return success();
  }
};

/// exp on f32 with fewer operations than MLIR's approximation (about 17
/// vector instructions instead of 25): x = k ln2 + r with k = floor(x / ln2)
/// and 0 <= r < ln2 (ln2 split in two for an exact reduction), exp(r) as
/// 1 + r (c1 + r (c2 + ... + r c6)), a least-squares fit of relative error
/// 6e-9 (fit_approximations.py; under 2 ulp evaluated in f32), and 2^k
/// added to the exponent bits: exp(r) is in [1, 2), so for x clamped to
/// [ln(FLT_MIN), ln(FLT_MAX)] the exponent stays normal. Below that range
/// the result is 0, above it +inf; NaN stays NaN.
///
/// Where the target scales by 2^k in one vector instruction (`scaled`; x86
/// with AVX-512: vscalefps), 2^k is applied by llvm.ldexp instead, which
/// over- and underflows by itself: k = round(x / ln2), |r| <= ln2 / 2, a
/// degree-5 polynomial (relative error 9e-8, at most 2.2 ulp in f32) and no
/// selects after it: 13 vector instructions.
struct ExpF32 : OpRewritePattern<math::ExpOp> {
  ExpF32(MLIRContext *context, bool scaled)
      : OpRewritePattern(context, /*benefit=*/2), scaled(scaled) {}

  static constexpr float kCoefficients[] = {0.9999998807907104f, 0.5000050663948059f,
                                            0.16661106050014496f, 0.04192185401916504f,
                                            0.007773528806865215f, 0.001961688045412302f};
  static constexpr float kScaledCoefficients[] = {0.9999997019767761f, 0.49999138712882996f,
                                                  0.16667647659778595f, 0.04189926013350487f,
                                                  0.008290068246424198f};

  LogicalResult matchAndRewrite(math::ExpOp op, PatternRewriter &rewriter) const override {
    Type type = op.getType();
    if (!getElementTypeOrSelf(type).isF32())
      return failure();
    Location loc = op.getLoc();
    Type intType = rewriter.getI32Type();
    if (auto shaped = dyn_cast<ShapedType>(type))
      intType = shaped.clone(intType);
    auto constant = [&](Type t, Attribute value) -> Value {
      if (auto shaped = dyn_cast<ShapedType>(t))
        value = SplatElementsAttr::get(shaped, value);
      return arith::ConstantOp::create(rewriter, loc, t, cast<TypedAttr>(value));
    };
    auto f32 = [&](float value) { return constant(type, rewriter.getF32FloatAttr(value)); };
    auto select = [&](arith::CmpFPredicate predicate, Value a, Value b, Value then,
                      Value otherwise) -> Value {
      Value cond = arith::CmpFOp::create(rewriter, loc, predicate, a, b);
      return arith::SelectOp::create(rewriter, loc, cond, then, otherwise);
    };
    // 1 + r (c1 + r (c2 + ...)).
    auto polynomial = [&](ArrayRef<float> coefficients, Value r) {
      Value poly = f32(coefficients.back());
      for (float c : llvm::reverse(coefficients.drop_back()))
        poly = math::FmaOp::create(rewriter, loc, poly, r, f32(c));
      return math::FmaOp::create(rewriter, loc, poly, r, f32(1.0f));
    };
    // x - k ln2, with ln2 split so that k * 0.693359375 is exact.
    auto reduce = [&](Value k, Value x) -> Value {
      Value r = math::FmaOp::create(rewriter, loc, k, f32(-0.693359375f), x);
      return math::FmaOp::create(rewriter, loc, k, f32(2.12194440e-4f), r);
    };

    Value x = op.getOperand();
    if (scaled && !isa<TensorType, MemRefType>(type)) {
      // exp(-104) rounds to 0 and exp(89) overflows; NaN fails both
      // comparisons and flows through the arithmetic.
      Value low = f32(-104.0f), high = f32(89.0f);
      Value clamped = select(arith::CmpFPredicate::OLT, x, low, low, x);
      clamped = select(arith::CmpFPredicate::OGT, clamped, high, high, clamped);
      // Adding 1.5 * 2^23 rounds x / ln2 to an integer k, which then fills
      // the low mantissa bits: k as an integer without a conversion (which
      // LLVM would leave undefined for NaN).
      Value shifter = f32(12582912.0f);
      Value shifted = math::FmaOp::create(rewriter, loc, clamped, f32(1.44269504f), shifter);
      Value kInt = arith::SubIOp::create(
          rewriter, loc, arith::BitcastOp::create(rewriter, loc, intType, shifted),
          constant(intType, rewriter.getI32IntegerAttr(0x4B400000)));
      Value k = arith::SIToFPOp::create(rewriter, loc, type, kInt);
      Value poly = polynomial(kScaledCoefficients, reduce(k, clamped));
      rewriter.replaceOpWithNewOp<LLVM::LoadExpOp>(op, type, poly, kInt);
      return success();
    }

    Value low = f32(-87.3365f), high = f32(88.72283f);
    // NaN fails both comparisons and flows through the arithmetic.
    Value clamped = select(arith::CmpFPredicate::OLT, x, low, low, x);
    clamped = select(arith::CmpFPredicate::OGT, clamped, high, high, clamped);
    Value k = math::FloorOp::create(
        rewriter, loc, arith::MulFOp::create(rewriter, loc, clamped, f32(1.44269504f)));
    Value poly = polynomial(kCoefficients, reduce(k, clamped));
    // poly * 2^k, by adding k to the exponent field.
    Value exponent = arith::ShLIOp::create(
        rewriter, loc, arith::FPToSIOp::create(rewriter, loc, intType, k),
        constant(intType, rewriter.getI32IntegerAttr(23)));
    Value bits = arith::AddIOp::create(
        rewriter, loc, arith::BitcastOp::create(rewriter, loc, intType, poly), exponent);
    Value result = arith::BitcastOp::create(rewriter, loc, type, bits);
    result = select(arith::CmpFPredicate::OLT, x, low, f32(0.0f), result);
    result = select(arith::CmpFPredicate::OGT, x, high,
                    f32(std::numeric_limits<float>::infinity()), result);
    rewriter.replaceOp(op, result);
    return success();
  }

private:
  bool scaled;
};

/// powf by a constant 2, 3 or 4 as multiplications, which vectorize, where
/// libm's powf is a scalar call (GPT-2's GELU cubes its input: 6 % of its
/// time went to __powf_fma). x * x is powf(x, 2) correctly rounded; x * x * x
/// and (x * x) * (x * x) round twice, within an ulp or two of it. NaN and
/// infinities come out as powf's.
struct SmallWholePower : OpRewritePattern<math::PowFOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(math::PowFOp op, PatternRewriter &rewriter) const override {
    APFloat exponent(0.0);
    if (!matchPattern(op.getRhs(), m_ConstantFloat(&exponent)))
      return failure();
    bool losesInfo = false;
    exponent.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &losesInfo);
    double power = exponent.convertToDouble();
    if (power != 2.0 && power != 3.0 && power != 4.0)
      return failure();
    Location loc = op.getLoc();
    Value x = op.getLhs();
    Value square = arith::MulFOp::create(rewriter, loc, x, x);
    Value result = power == 2.0   ? square
                   : power == 3.0 ? arith::MulFOp::create(rewriter, loc, square, x).getResult()
                                  : arith::MulFOp::create(rewriter, loc, square, square).getResult();
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct KilnVectorizableMathPass
    : impl::KilnVectorizableMathPassBase<KilnVectorizableMathPass> {
  using KilnVectorizableMathPassBase::KilnVectorizableMathPassBase;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns, isApproximated);
    patterns.add<ExpF32>(&getContext(), ldexp);
    patterns.add<RationalErf>(&getContext(), /*benefit=*/2);
    patterns.add<SmallWholePower>(&getContext());
    populatePolynomialApproximateErfPattern(patterns);
    populatePolynomialApproximateTanhPattern(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();

    auto flags = arith::FastMathFlags::reassoc | arith::FastMathFlags::contract;
    IRRewriter rewriter(&getContext());
    getOperation().walk([&](Operation *op) {
      if (!isa<arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::MaximumFOp,
               arith::MinimumFOp>(op))
        return;
      auto fastMath = cast<arith::ArithFastMathInterface>(op);
      fastMath->setAttr(fastMath.getFastMathAttrName(),
                        arith::FastMathFlagsAttr::get(
                            op->getContext(), fastMath.getFastMathFlagsAttr().getValue() | flags));
      if (isa<arith::MaximumFOp, arith::MinimumFOp>(op))
        toLLVMIntrinsic(rewriter, op);
    });
  }

  /// Later, arith-expand would turn maximumf and minimumf into compare and
  /// select chains, which LLVM does not recognize as a max reduction; its
  /// llvm.maximum and llvm.minimum intrinsics (same NaN semantics) it does.
  static void toLLVMIntrinsic(IRRewriter &rewriter, Operation *op) {
    if (!isa<Float32Type, Float64Type>(op->getResult(0).getType()))
      return;
    rewriter.setInsertionPoint(op);
    // No signed zeros: which of -0 and +0 is the larger is left open (ONNX
    // does not order them, NumPy's maximum does not either), which spares
    // x86 a sign test and blend per vector; NaNs still propagate.
    auto flags = LLVM::FastmathFlagsAttr::get(op->getContext(), LLVM::FastmathFlags::reassoc |
                                                                     LLVM::FastmathFlags::contract |
                                                                     LLVM::FastmathFlags::nsz);
    Value lhs = op->getOperand(0), rhs = op->getOperand(1);
    if (isa<arith::MaximumFOp>(op))
      rewriter.replaceOpWithNewOp<LLVM::MaximumOp>(op, lhs, rhs, flags);
    else
      rewriter.replaceOpWithNewOp<LLVM::MinimumOp>(op, lhs, rhs, flags);
  }
};

} // namespace
} // namespace kiln
