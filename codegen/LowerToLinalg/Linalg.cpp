//===- Linalg.cpp - Lowering of contractions, convolution and pooling -----===//
//
// Matrix products, convolutions and pooling windows become linalg.generic ops
// whose indexing maps spell out the contraction; tiling and vectorization
// treat them like the named linalg ops.
//
//===----------------------------------------------------------------------===//
#include "codegen/LowerToLinalg/Utils.h"
#include "dialects/kiln/KilnOps.h"

#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;

namespace kiln {
namespace {

Value multiplyAdd(OpBuilder &b, Location loc, Value x, Value y, Value acc) {
  if (llvm::isa<FloatType>(x.getType()))
    return arith::AddFOp::create(b, loc, acc, arith::MulFOp::create(b, loc, x, y));
  return arith::AddIOp::create(b, loc, acc, arith::MulIOp::create(b, loc, x, y));
}

/// The input of `value`'s producer when that is a transpose of only the last
/// two dimensions; null otherwise.
Value lastTwoTransposed(Value value) {
  auto transpose = value.getDefiningOp<TransposeOp>();
  return transpose && swapsLastTwo(transpose.getPerm()) ? transpose.getInput() : nullptr;
}

/// Rows of each matrix of a stack below which a product of the stack by one
/// matrix is lowered as a single product of all the stack's rows.
constexpr int64_t kMinRowsPerStackedProduct = 64;

// numpy.matmul as one generic over (batch..., m, n, k); 1-D operands simply
// have no m (or n) loop. With `stackRows` (the CPU's), a stack of matrices
// of few rows times one matrix (ConvNeXt's pointwise layers on a
// [1, 7, 7, C] image: 7 products of 7 rows) is one product of all the rows
// instead, its left operand and result collapsed and expanded around it:
// the CPU's kernels tile a stack one matrix per tile, each tile streaming
// the whole right operand for its few rows (768x3072 at 7x7 on two Zen 1
// cores: 8.6 ms where one product of 49 rows took 3.6). The GPU's library
// call takes the stack whole, with a broadcast right operand and an addend
// that a reshape would keep out of it. With `foldTransposes`, an operand that is a
// transpose of its last two dimensions is read through a transposed map
// instead (the CPU's BLAS calls take transposed operands, so the backward
// pass's dW = X^T dY copies nothing).
struct MatMulLowering : OpRewritePattern<MatMulOp> {
  MatMulLowering(MLIRContext *context, bool foldTransposes, bool stackRows)
      : OpRewritePattern(context), foldTransposes(foldTransposes), stackRows(stackRows) {
    // A stack's product becomes a product of one matrix (stackAsRows),
    // which this pattern then lowers.
    setHasBoundedRewriteRecursion();
  }
  bool foldTransposes, stackRows;

  LogicalResult matchAndRewrite(MatMulOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    RankedTensorType lhs = op.getLhs().getType(), rhs = op.getRhs().getType();
    Value lhsValue = op.getLhs(), rhsValue = op.getRhs();
    Value lhsSource = foldTransposes ? lastTwoTransposed(lhsValue) : nullptr;
    Value rhsSource = foldTransposes ? lastTwoTransposed(rhsValue) : nullptr;
    RankedTensorType result = op.getType();
    if (Value stacked = stackRows ? stackAsRows(op, lhsSource, rewriter) : nullptr) {
      rewriter.replaceOp(op, stacked);
      return success();
    }
    bool hasM = lhs.getRank() > 1, hasN = rhs.getRank() > 1;
    int64_t batchRank = result.getRank() - hasM - hasN;
    // Loop order: batch dims, m, n, k.
    int64_t m = batchRank, n = batchRank + hasM, k = n + hasN;
    int64_t numLoops = k + 1;
    auto dim = [&](int64_t d) { return getAffineDimExpr(d, ctx); };
    ArrayRef<int64_t> outBatch = result.getShape().take_front(batchRank);
    auto batchExprs = [&](ArrayRef<int64_t> operandBatch) {
      SmallVector<AffineExpr> exprs;
      int64_t offset = batchRank - operandBatch.size();
      for (auto [i, size] : llvm::enumerate(operandBatch)) {
        int64_t d = offset + i;
        exprs.push_back(size == 1 && outBatch[d] != 1
                            ? getAffineConstantExpr(0, ctx)
                            : dim(d));
      }
      return exprs;
    };
    SmallVector<AffineExpr> lhsExprs =
        batchExprs(lhs.getShape().drop_back(hasM ? 2 : 1));
    if (hasM && lhsSource) { // lhs[..., m, k] = source[..., k, m]
      lhsExprs.append({dim(k), dim(m)});
      lhsValue = lhsSource;
    } else {
      if (hasM)
        lhsExprs.push_back(dim(m));
      lhsExprs.push_back(dim(k));
    }
    SmallVector<AffineExpr> rhsExprs =
        batchExprs(rhs.getShape().drop_back(hasN ? 2 : 1));
    if (hasN && rhsSource) { // rhs[..., k, n] = source[..., n, k]
      rhsExprs.append({dim(n), dim(k)});
      rhsValue = rhsSource;
    } else {
      rhsExprs.push_back(dim(k));
      if (hasN)
        rhsExprs.push_back(dim(n));
    }
    SmallVector<AffineExpr> outExprs;
    for (int64_t d = 0; d < k; ++d)
      outExprs.push_back(dim(d));
    SmallVector<AffineMap> maps = {
        AffineMap::get(numLoops, 0, lhsExprs, ctx),
        AffineMap::get(numLoops, 0, rhsExprs, ctx),
        AffineMap::get(numLoops, 0, outExprs, ctx)};
    SmallVector<utils::IteratorType> iterators(numLoops,
                                               utils::IteratorType::parallel);
    iterators.back() = utils::IteratorType::reduction;
    Value zero = scalarConstant(rewriter, loc, result.getElementType(), 0);
    Value init = filledTensor(rewriter, loc, result, zero);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, result, ValueRange{lhsValue, rhsValue}, init, maps,
        iterators, [](OpBuilder &b, Location loc, ValueRange args) {
          linalg::YieldOp::create(b, loc,
                                  multiplyAdd(b, loc, args[0], args[1], args[2]));
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }

  /// `op` as one product of its left operand's rows, when that is a static
  /// stack of more than one matrix of fewer than kMinRowsPerStackedProduct
  /// rows (not read through a transpose) and its right operand one matrix;
  /// null otherwise.
  static Value stackAsRows(MatMulOp op, Value lhsSource, PatternRewriter &rewriter) {
    RankedTensorType lhs = op.getLhs().getType(), rhs = op.getRhs().getType();
    int64_t rank = lhs.getRank();
    if (rhs.getRank() != 2 || rank < 3 || lhsSource || !lhs.hasStaticShape())
      return nullptr;
    int64_t rows = lhs.getShape()[rank - 2];
    int64_t stacked = llvm::product_of(lhs.getShape().drop_back());
    if (stacked == rows || rows >= kMinRowsPerStackedProduct)
      return nullptr;
    Location loc = op.getLoc();
    ReassociationIndices leading = llvm::to_vector(llvm::seq<int64_t>(0, rank - 1));
    SmallVector<ReassociationIndices> reassociation = {leading, {rank - 1}};
    Value matrix = tensor::CollapseShapeOp::create(rewriter, loc, op.getLhs(), reassociation);
    Value product = MatMulOp::create(rewriter, loc, matrix, op.getRhs());
    return tensor::ExpandShapeOp::create(rewriter, loc, op.getType(), product, reassociation);
  }
};

/// `input` padded by `pads` ([begin..., end...] of the trailing dims) with
/// `value`.
Value padTrailing(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> begin,
                  ArrayRef<int64_t> end, Value value) {
  if (llvm::all_of(begin, [](int64_t p) { return p == 0; }) &&
      llvm::all_of(end, [](int64_t p) { return p == 0; }))
    return input;
  auto type = llvm::cast<RankedTensorType>(input.getType());
  int64_t lead = type.getRank() - begin.size();
  SmallVector<OpFoldResult> low(lead, b.getIndexAttr(0)), high(low);
  SmallVector<int64_t> shape(type.getShape());
  for (size_t i = 0; i < begin.size(); ++i) {
    low.push_back(b.getIndexAttr(begin[i]));
    high.push_back(b.getIndexAttr(end[i]));
    shape[lead + i] += begin[i] + end[i];
  }
  return tensor::PadOp::create(b, loc,
                               RankedTensorType::get(shape, type.getElementType()),
                               input, low, high, value);
}

// Grouped convolution: input N x (G*C) x H x W is viewed as N x G x C x H x W
// and the filter (G*F) x C x KH x KW as G x F x C x KH x KW; one generic over
// (n, g, f, oh, ow, c, kh, kw) accumulates into a bias-initialized output.
// A convolution is one generic over (n, g, f, oh, ow | c, kh, kw), its
// result [n, g, f, oh, ow] collapsed to [n, g f, oh, ow]. With
// `foldTransposes`, a convolution whose only user swaps its batch and
// channel dimensions (channelFirstTranspose: a weight gradient) runs over
// (g, f, n, oh, ow | c, kh, kw) instead, its result [g f, n, oh, ow] with
// each output channel's plane a contiguous row: the transpose's value.
struct ConvLowering : OpRewritePattern<ConvOp> {
  ConvLowering(MLIRContext *context, bool foldTransposes)
      : OpRewritePattern(context), foldTransposes(foldTransposes) {}
  bool foldTransposes;

  LogicalResult matchAndRewrite(ConvOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    RankedTensorType inputType = op.getInput().getType();
    RankedTensorType filterType = op.getFilter().getType();
    RankedTensorType resultType = op.getType();
    Type element = inputType.getElementType();
    int64_t groups = op.getGroup();
    int64_t n = inputType.getDimSize(0), c = inputType.getDimSize(1) / groups;
    int64_t f = filterType.getDimSize(0) / groups;
    int64_t kh = filterType.getDimSize(2), kw = filterType.getDimSize(3);
    int64_t oh = resultType.getDimSize(2), ow = resultType.getDimSize(3);
    ArrayRef<int64_t> pads = op.getPads();
    TransposeOp transpose = foldTransposes ? channelFirstTranspose(op) : TransposeOp();
    if (transpose && transpose->getBlock() != op->getBlock())
      transpose = {};

    Value zero = scalarConstant(rewriter, loc, element, 0);
    Value padded = padTrailing(rewriter, loc, op.getInput(), pads.take_front(2),
                               pads.drop_front(2), zero);
    auto paddedType = llvm::cast<RankedTensorType>(padded.getType());
    auto input5 = tensor::ExpandShapeOp::create(
        rewriter, loc,
        RankedTensorType::get({n, groups, c, paddedType.getDimSize(2),
                               paddedType.getDimSize(3)},
                              element),
        padded, ArrayRef<ReassociationIndices>{{0}, {1, 2}, {3}, {4}});
    auto filter5 = tensor::ExpandShapeOp::create(
        rewriter, loc, RankedTensorType::get({groups, f, c, kh, kw}, element),
        op.getFilter(), ArrayRef<ReassociationIndices>{{0, 1}, {2}, {3}, {4}});
    // Loops 0-4 are the output's dimensions in order; (batch, group,
    // channel) are loops (0, 1, 2), or (2, 0, 1) channel-first.
    int64_t nLoop = transpose ? 2 : 0, gLoop = transpose ? 0 : 1, fLoop = transpose ? 1 : 2;
    SmallVector<int64_t> outShape(3);
    outShape[nLoop] = n;
    outShape[gLoop] = groups;
    outShape[fLoop] = f;
    outShape.append({oh, ow});
    auto out5Type = RankedTensorType::get(outShape, element);

    auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
    Value init;
    if (Value bias = op.getBias()) {
      auto bias2 = tensor::ExpandShapeOp::create(
          rewriter, loc, RankedTensorType::get({groups, f}, element), bias,
          ArrayRef<ReassociationIndices>{{0, 1}});
      init = linalg::GenericOp::create(
                 rewriter, loc, out5Type, ValueRange{bias2},
                 emptyTensor(rewriter, loc, out5Type),
                 SmallVector<AffineMap>{AffineMap::get(5, 0, {d(gLoop), d(fLoop)}, ctx),
                                        rewriter.getMultiDimIdentityMap(5)},
                 SmallVector<utils::IteratorType>(5, utils::IteratorType::parallel),
                 [](OpBuilder &b, Location loc, ValueRange args) {
                   linalg::YieldOp::create(b, loc, args[0]);
                 })
                 .getResult(0);
    } else {
      init = filledTensor(rewriter, loc, out5Type, zero);
    }

    // Loops 5-7: c, kh, kw.
    ArrayRef<int64_t> strides = op.getStrides(), dilations = op.getDilations();
    AffineMap inputMap = AffineMap::get(
        8, 0,
        {d(nLoop), d(gLoop), d(5), d(3) * strides[0] + d(6) * dilations[0],
         d(4) * strides[1] + d(7) * dilations[1]},
        ctx);
    AffineMap filterMap = AffineMap::get(8, 0, {d(gLoop), d(fLoop), d(5), d(6), d(7)}, ctx);
    AffineMap outMap = AffineMap::get(8, 0, {d(0), d(1), d(2), d(3), d(4)}, ctx);
    SmallVector<utils::IteratorType> iterators(8, utils::IteratorType::parallel);
    for (int i = 5; i < 8; ++i)
      iterators[i] = utils::IteratorType::reduction;
    auto conv = linalg::GenericOp::create(
        rewriter, loc, out5Type, ValueRange{input5, filter5}, init,
        SmallVector<AffineMap>{inputMap, filterMap, outMap}, iterators,
        [](OpBuilder &b, Location loc, ValueRange args) {
          linalg::YieldOp::create(b, loc,
                                  multiplyAdd(b, loc, args[0], args[1], args[2]));
        });
    if (!transpose) {
      rewriter.replaceOpWithNewOp<tensor::CollapseShapeOp>(
          op, resultType, conv.getResult(0),
          ArrayRef<ReassociationIndices>{{0}, {1, 2}, {3}, {4}});
      return success();
    }
    // The convolution's own result is the channel-first one transposed
    // back; the user's transpose, lowered after it, composes with that into
    // the identity, which canonicalization folds away. (The user is not
    // replaced here: the conversion has yet to visit it.)
    Value channelFirst = tensor::CollapseShapeOp::create(
        rewriter, loc, transpose.getType(), conv.getResult(0),
        ArrayRef<ReassociationIndices>{{0, 1}, {2}, {3}, {4}});
    auto back = linalg::TransposeOp::create(rewriter, loc, channelFirst,
                                            emptyTensor(rewriter, loc, resultType),
                                            ArrayRef<int64_t>{1, 0, 2, 3});
    rewriter.replaceOp(op, back->getResults());
    return success();
  }
};

/// Pads `input` for a pooling window and returns the padded tensor. Beyond
/// the explicit pads, ceil mode may need more rows or columns at the end.
Value padForPool(OpBuilder &b, Location loc, Value input, ArrayRef<int64_t> kernel,
                 ArrayRef<int64_t> strides, ArrayRef<int64_t> dilations,
                 ArrayRef<int64_t> pads, ArrayRef<int64_t> outShape, Value value,
                 SmallVectorImpl<int64_t> &endPads) {
  auto type = llvm::cast<RankedTensorType>(input.getType());
  endPads.clear();
  for (int i = 0; i < 2; ++i) {
    int64_t needed = (outShape[i] - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1;
    int64_t have = type.getDimSize(2 + i) + pads[i];
    endPads.push_back(std::max(pads[2 + i], needed - have));
  }
  SmallVector<int64_t> begin(pads.take_front(2)), end(endPads.begin(), endPads.end());
  // A blocked image's lanes (its trailing block of channels) are not padded.
  if (type.getRank() == 5) {
    begin.push_back(0);
    end.push_back(0);
  }
  return padTrailing(b, loc, input, begin, end, value);
}

/// The pooling generic over (n, c, oh, ow, kh, kw) reading `padded` through
/// a window operand, combining with `combine` into `init`.
Value poolGeneric(OpBuilder &b, Location loc, Value padded, Value init,
                  ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                  ArrayRef<int64_t> dilations,
                  function_ref<Value(OpBuilder &, Location, Value, Value)> combine) {
  MLIRContext *ctx = b.getContext();
  auto d = [&](int64_t i) { return getAffineDimExpr(i, ctx); };
  auto paddedType = llvm::cast<RankedTensorType>(padded.getType());
  Type element = paddedType.getElementType();
  Value window = tensor::EmptyOp::create(b, loc, kernel, element);
  // Plain images loop over (n, c, oh, kh, kw, ow): the window loops sit
  // outside the output row, so the innermost loop runs along a contiguous
  // row of the output (and a strided one of the input) and vectorizes. A
  // blocked image (n, c/16, h, w, 16) loops over (n, c/16, oh, ow, kh, kw,
  // 16): its lanes are the innermost loop, contiguous in both, and each
  // output vector stays in a register across its window.
  bool blocked = paddedType.getRank() == 5;
  int64_t loops = blocked ? 7 : 6;
  int64_t kh = blocked ? 4 : 3, kw = blocked ? 5 : 4, ow = blocked ? 3 : 5;
  SmallVector<AffineExpr> input = {d(0), d(1), d(2) * strides[0] + d(kh) * dilations[0],
                                   d(ow) * strides[1] + d(kw) * dilations[1]};
  SmallVector<AffineExpr> output = {d(0), d(1), d(2), d(ow)};
  if (blocked) {
    input.push_back(d(6));
    output.push_back(d(6));
  }
  SmallVector<AffineMap> maps = {AffineMap::get(loops, 0, input, ctx),
                                 AffineMap::get(loops, 0, {d(kh), d(kw)}, ctx),
                                 AffineMap::get(loops, 0, output, ctx)};
  SmallVector<utils::IteratorType> iterators(loops, utils::IteratorType::parallel);
  iterators[kh] = iterators[kw] = utils::IteratorType::reduction;
  return linalg::GenericOp::create(
             b, loc, init.getType(), ValueRange{padded, window}, init, maps,
             iterators,
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               linalg::YieldOp::create(nb, nloc, combine(nb, nloc, args[0], args[2]));
             })
      .getResult(0);
}

struct MaxPoolLowering : OpRewritePattern<MaxPoolOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MaxPoolOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType resultType = op.getType();
    auto element = llvm::cast<FloatType>(resultType.getElementType());
    Value lowest = arith::ConstantOp::create(
        rewriter, loc,
        rewriter.getFloatAttr(element, APFloat::getInf(element.getFloatSemantics(),
                                                       /*Negative=*/true)));
    SmallVector<int64_t> endPads;
    Value padded = padForPool(rewriter, loc, op.getInput(), op.getKernelShape(),
                              op.getStrides(), op.getDilations(), op.getPads(),
                              resultType.getShape().slice(2, 2), lowest, endPads);
    Value init = filledTensor(rewriter, loc, resultType, lowest);
    Value result = poolGeneric(
        rewriter, loc, padded, init, op.getKernelShape(), op.getStrides(),
        op.getDilations(), [](OpBuilder &b, Location loc, Value x, Value acc) {
          return arith::MaximumFOp::create(b, loc, acc, x);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

// Average pooling sums each window and divides by a compile-time table of
// how many elements each window covers (all positions inside the explicit
// padding with count_include_pad, the real input otherwise).
struct AveragePoolLowering : OpRewritePattern<AveragePoolOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AveragePoolOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType inputType = op.getInput().getType();
    RankedTensorType resultType = op.getType();
    Type element = resultType.getElementType();
    ArrayRef<int64_t> kernel = op.getKernelShape(), strides = op.getStrides(),
                      dilations = op.getDilations(), pads = op.getPads();
    Value zero = scalarConstant(rewriter, loc, element, 0);
    SmallVector<int64_t> endPads;
    Value padded = padForPool(rewriter, loc, op.getInput(), kernel, strides,
                              dilations, pads, resultType.getShape().slice(2, 2),
                              zero, endPads);
    Value sums = poolGeneric(
        rewriter, loc, padded, filledTensor(rewriter, loc, resultType, zero),
        kernel, strides, dilations,
        [](OpBuilder &b, Location loc, Value x, Value acc) {
          return arith::AddFOp::create(b, loc, acc, x);
        });

    int64_t h = inputType.getDimSize(2), w = inputType.getDimSize(3);
    int64_t oh = resultType.getDimSize(2), ow = resultType.getDimSize(3);
    auto counted = [&](int64_t pos, int dim) {
      int64_t size = dim == 0 ? h : w;
      int64_t lo = op.getCountIncludePad() ? -pads[dim] : 0;
      int64_t hi = op.getCountIncludePad() ? size + pads[2 + dim] : size;
      return pos >= lo && pos < hi;
    };
    SmallVector<double> counts;
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        int64_t count = 0;
        for (int64_t a = 0; a < kernel[0]; ++a)
          for (int64_t c = 0; c < kernel[1]; ++c)
            count += counted(i * strides[0] + a * dilations[0] - pads[0], 0) &&
                     counted(j * strides[1] + c * dilations[1] - pads[1], 1);
        counts.push_back(1.0 / std::max<int64_t>(count, 1));
      }
    // Broadcast against the result's trailing dimensions: a blocked image's
    // lanes follow its columns.
    SmallVector<int64_t> countShape = {oh, ow};
    if (resultType.getRank() == 5)
      countShape.push_back(1);
    auto countType = RankedTensorType::get(countShape, rewriter.getF64Type());
    Value scale = arith::ConstantOp::create(
        rewriter, loc, DenseElementsAttr::get(countType, ArrayRef<double>(counts)));
    Value result = buildElementwise(
        rewriter, loc, resultType, ValueRange{sums, scale},
        [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
          return arith::MulFOp::create(b, loc, args[0],
                                       convertScalar(b, loc, args[1], element));
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

// Einsum: one generic with a loop per label, reduction loops for the labels
// the result drops; each operand is read through its labels (a repeated
// label reads a diagonal, a broadcast ellipsis dimension index 0), and the
// product of the operands is added up.
struct EinsumLowering : OpRewritePattern<EinsumOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(EinsumOp op, PatternRewriter &rewriter) const override {
    MLIRContext *ctx = rewriter.getContext();
    Location loc = op.getLoc();
    SmallVector<ArrayRef<int64_t>> shapes;
    for (Value input : op.getInputs())
      shapes.push_back(cast<RankedTensorType>(input.getType()).getShape());
    std::string error;
    FailureOr<EinsumSpec> spec = parseEinsum(op.getEquation(), shapes, error);
    if (failed(spec))
      return rewriter.notifyMatchFailure(op, error);
    int64_t loops = spec->loopSizes.size();
    SmallVector<AffineMap> maps;
    for (ArrayRef<int64_t> operand : spec->operandLoops) {
      SmallVector<AffineExpr> exprs;
      for (int64_t loop : operand)
        exprs.push_back(loop < 0 ? getAffineConstantExpr(0, ctx) : getAffineDimExpr(loop, ctx));
      maps.push_back(AffineMap::get(loops, 0, exprs, ctx));
    }
    SmallVector<AffineExpr> resultExprs;
    SmallVector<utils::IteratorType> iterators(loops, utils::IteratorType::reduction);
    for (int64_t loop : spec->resultLoops) {
      resultExprs.push_back(getAffineDimExpr(loop, ctx));
      iterators[loop] = utils::IteratorType::parallel;
    }
    maps.push_back(AffineMap::get(loops, 0, resultExprs, ctx));
    RankedTensorType type = op.getType();
    Type element = type.getElementType();
    Value init = filledTensor(rewriter, loc, type, scalarConstant(rewriter, loc, element, 0));
    bool isFloat = isa<FloatType>(element);
    auto generic = linalg::GenericOp::create(
        rewriter, loc, type, op.getInputs(), init, maps, iterators,
        [&](OpBuilder &b, Location nested, ValueRange args) {
          Value product = args.front();
          for (Value x : args.drop_front().drop_back())
            product = isFloat ? Value(arith::MulFOp::create(b, nested, product, x))
                              : Value(arith::MulIOp::create(b, nested, product, x));
          Value sum = isFloat ? Value(arith::AddFOp::create(b, nested, args.back(), product))
                              : Value(arith::AddIOp::create(b, nested, args.back(), product));
          linalg::YieldOp::create(b, nested, sum);
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

} // namespace

void populateLinalgOpLoweringPatterns(RewritePatternSet &patterns, bool foldTransposes,
                                      bool stackRows) {
  patterns.add<MatMulLowering>(patterns.getContext(), foldTransposes, stackRows);
  patterns.add<ConvLowering>(patterns.getContext(), foldTransposes);
  patterns.add<MaxPoolLowering, AveragePoolLowering, EinsumLowering>(patterns.getContext());
}

} // namespace kiln
