//===- Decompose.cpp - Composite kiln ops in terms of simpler kiln ops ----===//
//
// Softmax, normalizations, Gemm and the composite reductions are written
// here as chains of elementwise ops and plain reductions, which are then
// lowered (and, later, fused) like any other. Half-precision math is done
// in f32, as ONNX Runtime and XLA do on CPUs.
//
//===----------------------------------------------------------------------===//
#include "dialects/kiln/KilnOps.h"
#include "passes/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNDECOMPOSEPASS
#include "passes/Passes.h.inc"

namespace {

/// A rank-0 kiln.constant of `element` type holding `value`; broadcasts.
Value splat(OpBuilder &b, Location loc, Type element, double value) {
  auto type = RankedTensorType::get({}, element);
  Attribute attr = llvm::isa<FloatType>(element)
                       ? Attribute(b.getFloatAttr(element, value))
                       : Attribute(b.getIntegerAttr(element, static_cast<int64_t>(value)));
  return ConstantOp::create(b, loc, DenseElementsAttr::get(type, attr));
}

Type elementOf(Value v) {
  return llvm::cast<RankedTensorType>(v.getType()).getElementType();
}

SmallVector<int64_t> range(int64_t from, int64_t to) {
  SmallVector<int64_t> r;
  for (int64_t i = from; i < to; ++i)
    r.push_back(i);
  return r;
}

/// The mean of `x` over `axes` (kept as dimensions of 1), `x` centred on
/// it, and the centred input's mean square (the biased variance): the
/// statistics of layer and batch normalization.
struct Moments {
  Value mean, centered, variance;
};

Moments momentsOver(PatternRewriter &rewriter, Location loc, Value x, ArrayRef<int64_t> axes) {
  Value mean = ReduceMeanOp::create(rewriter, loc, x, axes, true);
  Value centered = SubOp::create(rewriter, loc, x, mean);
  Value variance = ReduceMeanOp::create(
      rewriter, loc, MulOp::create(rewriter, loc, centered, centered), axes, true);
  return {mean, centered, variance};
}

/// 1 / sqrt(variance + epsilon).
Value inverseStdDev(PatternRewriter &rewriter, Location loc, Value variance, APFloat epsilon) {
  Value shifted = AddOp::create(rewriter, loc, variance,
                                splat(rewriter, loc, elementOf(variance), epsilon.convertToDouble()));
  return ReciprocalOp::create(rewriter, loc, SqrtOp::create(rewriter, loc, shifted));
}

/// Every dimension of a rank-`rank` tensor but the channels (dimension 1).
SmallVector<int64_t> allButChannels(int64_t rank) {
  SmallVector<int64_t> axes = range(1, rank);
  axes.front() = 0;
  return axes;
}

// gemm(A, B, C) = alpha * (A' x B') + beta * C
struct DecomposeGemm : OpRewritePattern<GemmOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GemmOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value a = op.getA(), b = op.getB();
    if (op.getTransA())
      a = TransposeOp::create(rewriter, loc, a, ArrayRef<int64_t>{1, 0});
    if (op.getTransB())
      b = TransposeOp::create(rewriter, loc, b, ArrayRef<int64_t>{1, 0});
    Type element = elementOf(a);
    Value result = MatMulOp::create(rewriter, loc, a, b);
    double alpha = op.getAlpha().convertToDouble();
    if (alpha != 1.0)
      result = MulOp::create(rewriter, loc, result, splat(rewriter, loc, element, alpha));
    if (Value c = op.getC()) {
      double beta = op.getBeta().convertToDouble();
      if (beta != 1.0)
        c = MulOp::create(rewriter, loc, c, splat(rewriter, loc, element, beta));
      result = AddOp::create(rewriter, loc, result, c);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

// softmax(x) = e^(x - max) * (1 / sum(e^(x - max))): one division per row,
// not per element (the sum is at least 1, so the reciprocal is finite);
// log_softmax(x) = (x - max) - ln(sum(e^(x - max)))
template <typename Op, bool isLog>
struct DecomposeSoftmax : OpRewritePattern<Op> {
  using OpRewritePattern<Op>::OpRewritePattern;
  LogicalResult matchAndRewrite(Op op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    SmallVector<int64_t> axes = {static_cast<int64_t>(op.getAxis())};
    Value max = ReduceMaxOp::create(rewriter, loc, op.getInput(), axes, true);
    Value shifted = SubOp::create(rewriter, loc, op.getInput(), max);
    Value exp = ExpOp::create(rewriter, loc, shifted);
    Value sum = ReduceSumOp::create(rewriter, loc, exp, axes, true);
    Value result = isLog ? Value(SubOp::create(rewriter, loc, shifted,
                                               LogOp::create(rewriter, loc, sum)))
                         : Value(MulOp::create(rewriter, loc, exp,
                                               ReciprocalOp::create(rewriter, loc, sum)));
    rewriter.replaceOp(op, result);
    return success();
  }
};

// y = (x - mean) * rsqrt(var + eps) * scale + bias over axes [axis, rank).
struct DecomposeLayerNorm : OpRewritePattern<LayerNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(LayerNormOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = op.getInput();
    int64_t rank = op.getInput().getType().getRank();
    SmallVector<int64_t> axes = range(op.getAxis(), rank);
    auto [mean, centered, variance] = momentsOver(rewriter, loc, x, axes);
    Value invStd = inverseStdDev(rewriter, loc, variance, op.getEpsilon());
    Value y = MulOp::create(rewriter, loc,
                            MulOp::create(rewriter, loc, centered, invStd),
                            op.getScale());
    if (Value bias = op.getBias())
      y = AddOp::create(rewriter, loc, y, bias);
    rewriter.replaceOp(op, {y, mean, invStd});
    return success();
  }
};

// Per-channel parameters become C x 1 x ... x 1 so they broadcast along
// dimension 1: y = (x - mean) * (scale / sqrt(var + eps)) + bias.
struct DecomposeBatchNorm : OpRewritePattern<BatchNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BatchNormOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    SmallVector<int64_t> shape(type.getRank() - 1, 1);
    shape[0] = type.getDimSize(1);
    auto paramType = RankedTensorType::get(shape, type.getElementType());
    auto param = [&](Value v) -> Value {
      return ReshapeOp::create(rewriter, loc, paramType, v);
    };
    Value mean = op.getMean(), variance = op.getVariance();
    if (op.getTraining()) {
      // The batch's statistics over every dimension but the channels.
      auto flat = RankedTensorType::get({type.getDimSize(1)}, type.getElementType());
      Moments batch = momentsOver(rewriter, loc, op.getInput(), allButChannels(type.getRank()));
      mean = ReshapeOp::create(rewriter, loc, flat, batch.mean);
      variance = ReshapeOp::create(rewriter, loc, flat, batch.variance);
    }
    Value factor = DivOp::create(
        rewriter, loc, op.getScale(),
        SqrtOp::create(rewriter, loc,
                       AddOp::create(rewriter, loc, variance,
                                     splat(rewriter, loc, type.getElementType(),
                                           op.getEpsilon().convertToDouble()))));
    Value centered = SubOp::create(rewriter, loc, op.getInput(), param(mean));
    Value y = MulOp::create(rewriter, loc, centered, param(factor));
    rewriter.replaceOp(op, AddOp::create(rewriter, loc, y, param(op.getBias())));
    return success();
  }
};

// Normalization with the batch's statistics, in the same ops a
// BatchNormalization in training mode decomposes into (the statistics over
// every dimension but the channels, the variance of the centred input):
// y = (x - m) / sqrt(v + eps) * scale + bias.
struct DecomposeBatchNormTraining : OpRewritePattern<BatchNormTrainingOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BatchNormTrainingOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = op.getInput();
    RankedTensorType type = cast<RankedTensorType>(x.getType());
    Type element = type.getElementType();
    SmallVector<int64_t> perChannel(type.getRank(), 1);
    perChannel[1] = type.getDimSize(1);
    auto channelType = RankedTensorType::get(perChannel, element);
    auto flatType = RankedTensorType::get({type.getDimSize(1)}, element);
    auto [mean, centered, variance] = momentsOver(rewriter, loc, x, allButChannels(type.getRank()));
    Value inverse = inverseStdDev(rewriter, loc, variance, op.getEpsilon());
    Value normalized = MulOp::create(rewriter, loc, centered, inverse);
    Value scale = ReshapeOp::create(rewriter, loc, channelType, op.getScale());
    Value y = MulOp::create(rewriter, loc, normalized, scale);
    y = AddOp::create(rewriter, loc, y,
                      ReshapeOp::create(rewriter, loc, channelType, op.getBias()));
    rewriter.replaceOp(op, {y, ReshapeOp::create(rewriter, loc, flatType, mean),
                            ReshapeOp::create(rewriter, loc, flatType, variance)});
    return success();
  }
};

int64_t reducedCount(RankedTensorType type, ArrayRef<int64_t> axes) {
  int64_t count = 1;
  for (int64_t axis : axes)
    count *= type.getDimSize(axis);
  return count;
}

// mean = sum / count
struct DecomposeReduceMean : OpRewritePattern<ReduceMeanOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReduceMeanOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value sum = ReduceSumOp::create(rewriter, loc, op.getInput(), op.getAxes(),
                                    op.getKeepdims());
    int64_t count = reducedCount(op.getInput().getType(), op.getAxes());
    rewriter.replaceOpWithNewOp<DivOp>(
        op, sum, splat(rewriter, loc, elementOf(sum), std::max<int64_t>(count, 1)));
    return success();
  }
};

// l2 = sqrt(sum of squares); log_sum = ln(sum)
template <typename Op, typename Inner, typename Outer>
struct DecomposeReduceThen : OpRewritePattern<Op> {
  using OpRewritePattern<Op>::OpRewritePattern;
  LogicalResult matchAndRewrite(Op op, PatternRewriter &rewriter) const override {
    Value inner = Inner::create(rewriter, op.getLoc(), op.getInput(), op.getAxes(),
                                op.getKeepdims());
    rewriter.replaceOpWithNewOp<Outer>(op, inner);
    return success();
  }
};

// log_sum_exp(x) = ln(sum(e^(x - max))) + max, stable for large inputs.
struct DecomposeLogSumExp : OpRewritePattern<ReduceLogSumExpOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReduceLogSumExpOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value max = ReduceMaxOp::create(rewriter, loc, op.getInput(), op.getAxes(), true);
    // An all -inf slice would give inf - inf; shift by 0 there instead.
    Value finite = WhereOp::create(
        rewriter, loc,
        IsInfOp::create(rewriter, loc,
                        RankedTensorType::get(llvm::cast<RankedTensorType>(max.getType()).getShape(),
                                              rewriter.getI1Type()),
                        max, true, true),
        splat(rewriter, loc, elementOf(max), 0), max);
    Value exp = ExpOp::create(rewriter, loc,
                              SubOp::create(rewriter, loc, op.getInput(), finite));
    Value sum = ReduceSumOp::create(rewriter, loc, exp, op.getAxes(), op.getKeepdims());
    Value shift = finite;
    if (!op.getKeepdims())
      shift = ReshapeOp::create(rewriter, loc, sum.getType(), finite);
    rewriter.replaceOpWithNewOp<AddOp>(op, LogOp::create(rewriter, loc, sum), shift);
    return success();
  }
};

// squeeze, unsqueeze and flatten are reshapes.
template <typename Op>
struct ToReshape : OpRewritePattern<Op> {
  using OpRewritePattern<Op>::OpRewritePattern;
  LogicalResult matchAndRewrite(Op op, PatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), op.getInput());
    return success();
  }
};

bool isHalf(Type type) {
  Type element = getElementTypeOrSelf(type);
  return element.isF16() || element.isBF16();
}

Type widen(Type type) {
  if (!isHalf(type))
    return type;
  auto tensor = llvm::cast<RankedTensorType>(type);
  return RankedTensorType::get(tensor.getShape(), Float32Type::get(type.getContext()));
}

// Any arithmetic on f16/bf16 is computed in f32 and rounded once at the end.
struct ComputeHalfInF32 : RewritePattern {
  ComputeHalfInF32(MLIRContext *ctx)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/10, ctx) {}

  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rewriter) const override {
    if (!llvm::isa_and_present<KilnDialect>(op->getDialect()))
      return failure();
    // Ops that only move or convert data keep their element type.
    if (llvm::isa<ConstantOp, CastOp, ReshapeOp, SqueezeOp, UnsqueezeOp, FlattenOp,
                  TransposeOp, ConcatOp, SliceOp, GatherOp, GatherElementsOp, GatherNDOp, ScatterElementsOp, ScatterNDOp,
                  ExpandOp, PadOp,
                  WhereOp, TriluOp>(op))
      return failure();
    if (llvm::none_of(op->getOperandTypes(), isHalf) &&
        llvm::none_of(op->getResultTypes(), isHalf))
      return rewriter.notifyMatchFailure(op, "no half-precision values");
    Location loc = op->getLoc();
    SmallVector<Value> operands;
    for (Value operand : op->getOperands())
      operands.push_back(isHalf(operand.getType())
                             ? Value(CastOp::create(rewriter, loc, widen(operand.getType()),
                                                    operand))
                             : operand);
    Operation *wide = rewriter.clone(*op);
    wide->setOperands(operands);
    for (OpResult result : wide->getResults())
      result.setType(widen(result.getType()));
    SmallVector<Value> results;
    for (auto [original, computed] : llvm::zip(op->getResults(), wide->getResults()))
      results.push_back(original.getType() == computed.getType()
                            ? Value(computed)
                            : Value(CastOp::create(rewriter, loc, original.getType(),
                                                   computed)));
    rewriter.replaceOp(op, results);
    return success();
  }
};

} // namespace

void populateDecompositionPatterns(RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<DecomposeGemm, DecomposeSoftmax<SoftmaxOp, false>,
               DecomposeSoftmax<LogSoftmaxOp, true>, DecomposeLayerNorm,
               DecomposeBatchNorm, DecomposeBatchNormTraining, DecomposeReduceMean,
               DecomposeReduceThen<ReduceL2Op, ReduceSumSquareOp, SqrtOp>,
               DecomposeReduceThen<ReduceLogSumOp, ReduceSumOp, LogOp>,
               DecomposeLogSumExp, ToReshape<SqueezeOp>, ToReshape<UnsqueezeOp>,
               ToReshape<FlattenOp>, ComputeHalfInF32>(ctx);
}

namespace {
struct KilnDecomposePass : impl::KilnDecomposePassBase<KilnDecomposePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateDecompositionPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
} // namespace kiln
