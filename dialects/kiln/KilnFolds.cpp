//===- KilnFolds.cpp - Folders and canonicalizations of kiln ops ----------===//
//
// Only rewrites that are always profitable live here: removing no-op shape
// changes and merging chains of them. Numeric constant folding is a pass.
//
//===----------------------------------------------------------------------===//
#include "dialects/kiln/KilnOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace kiln;

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

// cast(x : T -> T) = x
OpFoldResult CastOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

// reshape(x : T -> T) = x; reshape(constant) = constant with the new shape.
OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto dense = llvm::dyn_cast_if_present<DenseElementsAttr>(adaptor.getInput()))
    return dense.reshape(getType());
  return {};
}

namespace {
// reshape(reshape(x)) = reshape(x): only the final shape matters.
struct MergeReshapes : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    auto producer = op.getInput().getDefiningOp<ReshapeOp>();
    if (!producer)
      return rewriter.notifyMatchFailure(op, "input is not a reshape");
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), producer.getInput());
    return success();
  }
};

// squeeze, unsqueeze and flatten are reshapes with a shape computed by
// inference; rewriting them lets later passes handle one op.
template <typename ShapeOp>
struct ShapeOpToReshape : OpRewritePattern<ShapeOp> {
  using OpRewritePattern<ShapeOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(ShapeOp op,
                                PatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), op.getInput());
    return success();
  }
};

// transpose(transpose(x, p), q) = transpose(x, p o q)
struct MergeTransposes : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    auto producer = op.getInput().getDefiningOp<TransposeOp>();
    if (!producer)
      return rewriter.notifyMatchFailure(op, "input is not a transpose");
    SmallVector<int64_t> perm;
    for (int64_t p : op.getPerm())
      perm.push_back(producer.getPerm()[p]);
    rewriter.replaceOpWithNewOp<TransposeOp>(op, producer.getInput(), perm);
    return success();
  }
};
} // namespace

void ReshapeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                            MLIRContext *context) {
  results.add<MergeReshapes>(context);
}

void SqueezeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                            MLIRContext *context) {
  results.add<ShapeOpToReshape<SqueezeOp>>(context);
}

void UnsqueezeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<ShapeOpToReshape<UnsqueezeOp>>(context);
}

void FlattenOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                            MLIRContext *context) {
  results.add<ShapeOpToReshape<FlattenOp>>(context);
}

void TransposeOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<MergeTransposes>(context);
}

// transpose(x, identity) = x
OpFoldResult TransposeOp::fold(FoldAdaptor) {
  for (auto [i, p] : llvm::enumerate(getPerm()))
    if (p != static_cast<int64_t>(i))
      return {};
  return getInput();
}

// concat(x) = x
OpFoldResult ConcatOp::fold(FoldAdaptor) {
  if (getInputs().size() == 1)
    return getInputs().front();
  return {};
}

// A slice that reads every element in order is the input.
OpFoldResult SliceOp::fold(FoldAdaptor) {
  if (getInput().getType() != getType())
    return {};
  if (llvm::all_of(getStart(), [](int64_t s) { return s == 0; }) &&
      llvm::all_of(getStep(), [](int64_t s) { return s == 1; }))
    return getInput();
  return {};
}

// expand(x : T -> T) = x; expand(splat) = splat of the new shape.
OpFoldResult ExpandOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto splat = llvm::dyn_cast_if_present<SplatElementsAttr>(adaptor.getInput()))
    return splat.resizeSplat(getType());
  return {};
}
