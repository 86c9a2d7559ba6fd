//===- ExpandStridedCopies.cpp - memref.copy of views to linalg.copy ------===//
#include "codegen/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Utils/MemRefUtils.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace kiln {
#define GEN_PASS_DEF_KILNEXPANDSTRIDEDCOPIESPASS
#include "codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {
/// memref.copy lowers to memcpy only when both sides are contiguous; any
/// other copy would call the C runner library's `memrefCopy`.
struct StridedCopyToLinalg : OpRewritePattern<memref::CopyOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(memref::CopyOp op,
                                PatternRewriter &rewriter) const override {
    auto source = llvm::cast<MemRefType>(op.getSource().getType());
    auto target = llvm::cast<MemRefType>(op.getTarget().getType());
    if (memref::isStaticShapeAndContiguousRowMajor(source) &&
        memref::isStaticShapeAndContiguousRowMajor(target))
      return rewriter.notifyMatchFailure(op, "both buffers are contiguous");
    rewriter.replaceOpWithNewOp<linalg::CopyOp>(op, op.getSource(), op.getTarget());
    return success();
  }
};

struct KilnExpandStridedCopiesPass
    : impl::KilnExpandStridedCopiesPassBase<KilnExpandStridedCopiesPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<StridedCopyToLinalg>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
} // namespace kiln
