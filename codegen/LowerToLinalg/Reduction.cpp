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

/// Whether `y` at axis position `j` comes before `x` at position `i` in
/// TopK's order: a better value (NaN above every number), or an equal one at
/// a lower position. A total order, so ranks are a permutation.
Value comesBefore(OpBuilder &b, Location loc, Value y, Value j, Value x, Value i, bool largest) {
  Value strictly, equal;
  if (llvm::isa<FloatType>(y.getType())) {
    Value yNaN = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, y, y);
    Value xNaN = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, x, x);
    Value numbers = arith::CmpFOp::create(b, loc, largest ? arith::CmpFPredicate::OGT
                                                          : arith::CmpFPredicate::OLT, y, x);
    Value true_ = arith::ConstantOp::create(b, loc, b.getBoolAttr(true));
    Value xNumber = arith::XOrIOp::create(b, loc, xNaN, true_);
    Value yNumber = arith::XOrIOp::create(b, loc, yNaN, true_);
    // Largest: a NaN y beats a number x; smallest: a number y beats a NaN x.
    Value nanWins = largest ? arith::AndIOp::create(b, loc, yNaN, xNumber)
                            : arith::AndIOp::create(b, loc, yNumber, xNaN);
    strictly = arith::OrIOp::create(b, loc, nanWins, numbers);
    equal = arith::OrIOp::create(
        b, loc, arith::AndIOp::create(b, loc, yNaN, xNaN),
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, y, x));
  } else {
    strictly = arith::CmpIOp::create(b, loc, largest ? arith::CmpIPredicate::sgt
                                                     : arith::CmpIPredicate::slt, y, x);
    equal = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, y, x);
  }
  Value earlier = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, j, i);
  return arith::OrIOp::create(b, loc, strictly, arith::AndIOp::create(b, loc, equal, earlier));
}

// TopK's indices in two generics with one extra loop, p, along the axis.
// The first ranks every element within its row: how many elements of the
// row come before it. The second gives result slot r the position whose
// rank is r.
// Work grows with the square of the axis's length (and its k-fold), but
// needs no sort and stays parallel over the other dimensions.
struct TopKLowering : OpRewritePattern<TopKOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TopKOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType inputType = op.getInput().getType();
    int64_t rank = inputType.getRank(), axis = op.getAxis();
    MLIRContext *ctx = rewriter.getContext();
    Type i64 = rewriter.getI64Type();
    SmallVector<AffineExpr> self, along;
    for (int64_t d = 0; d < rank; ++d) {
      self.push_back(rewriter.getAffineDimExpr(d));
      along.push_back(rewriter.getAffineDimExpr(d == axis ? rank : d));
    }
    AffineMap selfMap = AffineMap::get(rank + 1, 0, self, ctx);
    AffineMap alongMap = AffineMap::get(rank + 1, 0, along, ctx);
    SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
    iterators.push_back(utils::IteratorType::reduction);
    auto position = [&](OpBuilder &b, Location loc, int64_t dim) {
      return linalg::IndexOp::create(b, loc, dim);
    };

    auto ranksType = RankedTensorType::get(inputType.getShape(), i64);
    Value zero = scalarConstant(rewriter, loc, i64, 0);
    bool largest = op.getLargest();
    Value ranks =
        linalg::GenericOp::create(
            rewriter, loc, ranksType, ValueRange{op.getInput(), op.getInput()},
            filledTensor(rewriter, loc, ranksType, zero),
            SmallVector<AffineMap>{selfMap, alongMap, selfMap}, iterators,
            [&](OpBuilder &b, Location loc, ValueRange args) {
              Value before = comesBefore(b, loc, args[1], position(b, loc, rank), args[0],
                                         position(b, loc, axis), largest);
              Value one = arith::ExtUIOp::create(b, loc, i64, before);
              linalg::YieldOp::create(b, loc, Value(arith::AddIOp::create(b, loc, args[2], one)));
            })
            .getResult(0);

    RankedTensorType indicesType = op.getType();
    Value picked =
        linalg::GenericOp::create(
            rewriter, loc, indicesType, ranks, filledTensor(rewriter, loc, indicesType, zero),
            SmallVector<AffineMap>{alongMap, selfMap}, iterators,
            [&](OpBuilder &b, Location loc, ValueRange args) {
              Value slot = arith::IndexCastOp::create(b, loc, i64, position(b, loc, axis));
              Value p = arith::IndexCastOp::create(b, loc, i64, position(b, loc, rank));
              Value hit = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, args[0], slot);
              linalg::YieldOp::create(b, loc, Value(arith::SelectOp::create(b, loc, hit, p, args[1])));
            })
            .getResult(0);
    rewriter.replaceOp(op, picked);
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
  patterns.add<TopKLowering>(ctx);
}

} // namespace kiln
