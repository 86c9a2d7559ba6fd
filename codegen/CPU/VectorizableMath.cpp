//===- VectorizableMath.cpp - Remove what stops LLVM vectorizing kernels --===//
#include "codegen/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/StringSwitch.h"

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
/// least-squares fit of erf(x)/x over [0, 4] (relative error 1.2e-8 in exact
/// arithmetic; at most 6.4 ulp, mean 1 ulp, when evaluated in f32), refined
/// by reweighting. About twenty vector instructions against the ~47 of
/// MLIR's three-interval rational approximation.
struct RationalErf : OpRewritePattern<math::ErfOp> {
  using OpRewritePattern::OpRewritePattern;

  static constexpr float kP[] = {1.128379225730896f,    0.1850314438343048f,
                                 0.054071635007858276f, 0.003813401097431779f,
                                 0.00036975849070586264f, 4.427427484188229e-06f,
                                 -1.186379083861766e-08f};
  static constexpr float kQ[] = {1.0f,
                                 0.4973132312297821f,
                                 0.11369042098522186f,
                                 0.015355587005615234f,
                                 0.0012869054917246103f,
                                 6.0663744079647586e-05f};

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

struct KilnVectorizableMathPass
    : impl::KilnVectorizableMathPassBase<KilnVectorizableMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns, isApproximated);
    patterns.add<RationalErf>(&getContext(), /*benefit=*/2);
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
    auto flags = LLVM::FastmathFlagsAttr::get(
        op->getContext(), LLVM::FastmathFlags::reassoc | LLVM::FastmathFlags::contract);
    Value lhs = op->getOperand(0), rhs = op->getOperand(1);
    if (isa<arith::MaximumFOp>(op))
      rewriter.replaceOpWithNewOp<LLVM::MaximumOp>(op, lhs, rhs, flags);
    else
      rewriter.replaceOpWithNewOp<LLVM::MinimumOp>(op, lhs, rhs, flags);
  }
};

} // namespace
} // namespace kiln
