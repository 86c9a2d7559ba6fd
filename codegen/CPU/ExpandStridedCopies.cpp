//===- ExpandStridedCopies.cpp - memref.copy of views to linalg.copy ------===//
#include "codegen/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
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
/// Whether `type`'s innermost dimension is static with unit stride (outer
/// ones may be dynamic: the last tile of a band of rows).
bool hasContiguousRows(MemRefType type) {
  SmallVector<int64_t> strides;
  int64_t offset;
  return type.getRank() >= 2 && !type.isDynamicDim(type.getRank() - 1) &&
         succeeded(type.getStridesAndOffset(strides, offset)) && strides.back() == 1;
}

/// memref.copy lowers to memcpy only when both sides are contiguous; any
/// other copy would call the C runner library's `memrefCopy`. Copies whose
/// rows are contiguous on both sides become a loop nest of row copies
/// (memcpy's, which LLVM expands inline for short rows: a loop over a short
/// row stays scalar when LLVM cannot tell that the buffers do not overlap);
/// the others become linalg.copy, plain loops later.
struct StridedCopyToLinalg : OpRewritePattern<memref::CopyOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(memref::CopyOp op,
                                PatternRewriter &rewriter) const override {
    auto source = llvm::cast<MemRefType>(op.getSource().getType());
    auto target = llvm::cast<MemRefType>(op.getTarget().getType());
    if (memref::isStaticShapeAndContiguousRowMajor(source) &&
        memref::isStaticShapeAndContiguousRowMajor(target))
      return rewriter.notifyMatchFailure(op, "both buffers are contiguous");
    if (!hasContiguousRows(source) || !hasContiguousRows(target)) {
      rewriter.replaceOpWithNewOp<linalg::CopyOp>(op, op.getSource(), op.getTarget());
      return success();
    }
    Location loc = op.getLoc();
    ArrayRef<int64_t> shape = source.getShape();
    int64_t rank = source.getRank();
    SmallVector<OpFoldResult> offsets;
    for (int64_t dim = 0; dim + 1 < rank; ++dim) {
      Value extent = getValueOrCreateConstantIndexOp(
          rewriter, loc, memref::getMixedSize(rewriter, loc, op.getSource(), dim));
      auto loop = scf::ForOp::create(rewriter, loc, arith::ConstantIndexOp::create(rewriter, loc, 0),
                                     extent, arith::ConstantIndexOp::create(rewriter, loc, 1));
      offsets.push_back(loop.getInductionVar());
      rewriter.setInsertionPointToStart(loop.getBody());
    }
    offsets.push_back(rewriter.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes(rank, rewriter.getIndexAttr(1));
    sizes.back() = rewriter.getIndexAttr(shape.back());
    SmallVector<OpFoldResult> strides(rank, rewriter.getIndexAttr(1));
    auto row = [&](Value buffer) -> Value {
      auto type = memref::SubViewOp::inferRankReducedResultType(
          {shape.back()}, llvm::cast<MemRefType>(buffer.getType()), offsets, sizes, strides);
      return memref::SubViewOp::create(rewriter, loc, llvm::cast<MemRefType>(type), buffer,
                                       offsets, sizes, strides);
    };
    Value from = row(op.getSource());
    Value to = row(op.getTarget());
    memref::CopyOp::create(rewriter, loc, from, to);
    rewriter.eraseOp(op);
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
