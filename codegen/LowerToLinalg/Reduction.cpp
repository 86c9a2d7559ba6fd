//===- Reduction.cpp - Lowering of kiln reductions ------------------------===//
//
// Each reduction is one linalg.generic with reduction iterators over the
// reduced axes, accumulating into an identity-filled output. Composite
// reductions (mean, L2, log-sum-exp) are decomposed before reaching here.
//
//===----------------------------------------------------------------------===//
#include "codegen/LowerToLinalg/Utils.h"
#include "dialects/kiln/KilnOps.h"

#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;

namespace kiln {
namespace {

/// The identity element of `combiner` for `type`.
Value identity(OpBuilder &b, Location loc, Type type, Combiner combiner) {
  if (auto floatType = llvm::dyn_cast<FloatType>(type)) {
    const llvm::fltSemantics &sem = floatType.getFloatSemantics();
    switch (combiner) {
    case Combiner::Add:
      return scalarConstant(b, loc, type, 0);
    case Combiner::Mul:
      return scalarConstant(b, loc, type, 1);
    case Combiner::Max:
      return arith::ConstantOp::create(
          b, loc, b.getFloatAttr(type, APFloat::getInf(sem, /*Negative=*/true)));
    case Combiner::Min:
      return arith::ConstantOp::create(
          b, loc, b.getFloatAttr(type, APFloat::getInf(sem)));
    }
  }
  unsigned width = type.getIntOrFloatBitWidth();
  switch (combiner) {
  case Combiner::Add:
    return scalarConstant(b, loc, type, 0);
  case Combiner::Mul:
    return scalarConstant(b, loc, type, 1);
  case Combiner::Max:
    return arith::ConstantOp::create(
        b, loc, b.getIntegerAttr(type, APInt::getSignedMinValue(width)));
  case Combiner::Min:
    return arith::ConstantOp::create(
        b, loc, b.getIntegerAttr(type, APInt::getSignedMaxValue(width)));
  }
  llvm_unreachable("unknown combiner");
}

/// Maps the loops over `inputType` to the reduced output: reduced axes are
/// dropped, or read at 0 with keepdims.
AffineMap reducedMap(int64_t rank, ArrayRef<int64_t> axes, bool keepDims,
                     MLIRContext *ctx) {
  SmallVector<AffineExpr> exprs;
  for (int64_t i = 0; i < rank; ++i) {
    if (!llvm::is_contained(axes, i))
      exprs.push_back(getAffineDimExpr(i, ctx));
    else if (keepDims)
      exprs.push_back(getAffineConstantExpr(0, ctx));
  }
  return AffineMap::get(rank, 0, exprs, ctx);
}

SmallVector<utils::IteratorType> reductionIterators(int64_t rank,
                                                    ArrayRef<int64_t> axes) {
  SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
  for (int64_t axis : axes)
    iterators[axis] = utils::IteratorType::reduction;
  return iterators;
}

template <typename Op>
struct ReduceLowering : OpRewritePattern<Op> {
  ReduceLowering(MLIRContext *ctx, Combiner combiner, bool abs, bool square)
      : OpRewritePattern<Op>(ctx), combiner(combiner), abs(abs), square(square) {}

  LogicalResult matchAndRewrite(Op op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType inputType = op.getInput().getType();
    RankedTensorType resultType = op.getType();
    int64_t rank = inputType.getRank();
    Value init = filledTensor(
        rewriter, loc, resultType,
        identity(rewriter, loc, resultType.getElementType(), combiner));
    SmallVector<AffineMap> maps = {
        rewriter.getMultiDimIdentityMap(rank),
        reducedMap(rank, op.getAxes(), op.getKeepdims(), rewriter.getContext())};
    auto generic = linalg::GenericOp::create(
        rewriter, loc, resultType, op.getInput(), init, maps,
        reductionIterators(rank, op.getAxes()),
        [&](OpBuilder &b, Location loc, ValueRange args) {
          Value x = args[0];
          bool isFloat = llvm::isa<FloatType>(x.getType());
          if (abs)
            x = isFloat ? Value(math::AbsFOp::create(b, loc, x))
                        : Value(math::AbsIOp::create(b, loc, x));
          if (square)
            x = isFloat ? Value(arith::MulFOp::create(b, loc, x, x))
                        : Value(arith::MulIOp::create(b, loc, x, x));
          linalg::YieldOp::create(b, loc, combine(b, loc, combiner, args[1], x));
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }

  Combiner combiner;
  bool abs, square;
};

// ArgMax/ArgMin carry (best value, best index) through one generic with two
// outputs; strict comparison keeps the first index, non-strict the last.
template <typename Op>
struct ArgReduceLowering : OpRewritePattern<Op> {
  ArgReduceLowering(MLIRContext *ctx, bool isMax)
      : OpRewritePattern<Op>(ctx), isMax(isMax) {}

  LogicalResult matchAndRewrite(Op op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType inputType = op.getInput().getType();
    RankedTensorType resultType = op.getType();
    Type element = inputType.getElementType();
    int64_t rank = inputType.getRank(), axis = op.getAxis();
    auto valueType = RankedTensorType::get(resultType.getShape(), element);
    Value values = filledTensor(
        rewriter, loc, valueType,
        identity(rewriter, loc, element, isMax ? Combiner::Max : Combiner::Min));
    Value indices = filledTensor(rewriter, loc, resultType,
                                 scalarConstant(rewriter, loc, resultType.getElementType(), 0));
    AffineMap outMap = reducedMap(rank, {axis}, op.getKeepdims(), rewriter.getContext());
    bool last = op.getSelectLastIndex();
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{valueType, resultType}, op.getInput(),
        ValueRange{values, indices},
        SmallVector<AffineMap>{rewriter.getMultiDimIdentityMap(rank), outMap, outMap},
        reductionIterators(rank, {axis}),
        [&](OpBuilder &b, Location loc, ValueRange args) {
          Value x = args[0], best = args[1], bestIndex = args[2];
          Value better;
          if (llvm::isa<FloatType>(element)) {
            auto pred = isMax ? (last ? arith::CmpFPredicate::OGE : arith::CmpFPredicate::OGT)
                              : (last ? arith::CmpFPredicate::OLE : arith::CmpFPredicate::OLT);
            better = arith::CmpFOp::create(b, loc, pred, x, best);
          } else {
            auto pred = isMax ? (last ? arith::CmpIPredicate::sge : arith::CmpIPredicate::sgt)
                              : (last ? arith::CmpIPredicate::sle : arith::CmpIPredicate::slt);
            better = arith::CmpIOp::create(b, loc, pred, x, best);
          }
          Value index = arith::IndexCastOp::create(
              b, loc, b.getI64Type(), linalg::IndexOp::create(b, loc, axis));
          // The first element always wins, so all-(-inf) inputs yield 0.
          Value first = arith::CmpIOp::create(
              b, loc, arith::CmpIPredicate::eq, linalg::IndexOp::create(b, loc, axis),
              arith::ConstantIndexOp::create(b, loc, 0));
          better = arith::OrIOp::create(b, loc, better, first);
          linalg::YieldOp::create(
              b, loc,
              ValueRange{arith::SelectOp::create(b, loc, better, x, best),
                         arith::SelectOp::create(b, loc, better, index, bestIndex)});
        });
    rewriter.replaceOp(op, generic.getResult(1));
    return success();
  }

  bool isMax;
};

// CumSum: one more loop, k, runs along the axis and is reduced: result
// element i adds the input at k for k <= i (k < i when exclusive; k >= i
// and k > i when reversed). The work grows with the square of the axis's
// length, but it stays one parallel, fusable kernel on every back end.
struct CumSumLowering : OpRewritePattern<CumSumOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CumSumOp op, PatternRewriter &rewriter) const override {
    MLIRContext *ctx = rewriter.getContext();
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    int64_t rank = type.getRank(), axis = op.getAxis();
    SmallVector<AffineExpr> inputExprs, outputExprs;
    for (int64_t d = 0; d < rank; ++d) {
      outputExprs.push_back(getAffineDimExpr(d, ctx));
      inputExprs.push_back(getAffineDimExpr(d == axis ? rank : d, ctx));
    }
    SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
    iterators.push_back(utils::IteratorType::reduction);
    Type element = type.getElementType();
    Value init = filledTensor(rewriter, loc, type, scalarConstant(rewriter, loc, element, 0));
    arith::CmpIPredicate take = op.getReverse()
                                    ? (op.getExclusive() ? arith::CmpIPredicate::sgt
                                                         : arith::CmpIPredicate::sge)
                                    : (op.getExclusive() ? arith::CmpIPredicate::slt
                                                         : arith::CmpIPredicate::sle);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, type, op.getInput(), init,
        SmallVector<AffineMap>{AffineMap::get(rank + 1, 0, inputExprs, ctx),
                               AffineMap::get(rank + 1, 0, outputExprs, ctx)},
        iterators, [&](OpBuilder &b, Location nested, ValueRange args) {
          Value i = linalg::IndexOp::create(b, nested, axis);
          Value k = linalg::IndexOp::create(b, nested, rank);
          Value taken = arith::CmpIOp::create(b, nested, take, k, i);
          Value x = arith::SelectOp::create(b, nested, taken, args[0],
                                            scalarConstant(b, nested, element, 0));
          linalg::YieldOp::create(b, nested, combine(b, nested, Combiner::Add, args[1], x));
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

} // namespace

void populateReductionLoweringPatterns(RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<ReduceLowering<ReduceSumOp>>(ctx, Combiner::Add, false, false);
  patterns.add<ReduceLowering<ReduceProdOp>>(ctx, Combiner::Mul, false, false);
  patterns.add<ReduceLowering<ReduceMaxOp>>(ctx, Combiner::Max, false, false);
  patterns.add<ReduceLowering<ReduceMinOp>>(ctx, Combiner::Min, false, false);
  patterns.add<ReduceLowering<ReduceL1Op>>(ctx, Combiner::Add, true, false);
  patterns.add<ReduceLowering<ReduceSumSquareOp>>(ctx, Combiner::Add, false, true);
  patterns.add<ArgReduceLowering<ArgMaxOp>>(ctx, true);
  patterns.add<ArgReduceLowering<ArgMinOp>>(ctx, false);
  patterns.add<CumSumLowering>(ctx);
}

} // namespace kiln
