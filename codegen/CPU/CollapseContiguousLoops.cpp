//===- CollapseContiguousLoops.cpp - One loop per contiguous run ----------===//
//
// See KilnCollapseContiguousLoopsPass in Passes.td.
//
//===----------------------------------------------------------------------===//
#include "codegen/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"

namespace kiln {
#define GEN_PASS_DEF_KILNCOLLAPSECONTIGUOUSLOOPSPASS
#include "codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// Whether loops `dim` and `dim + 1` can run as one loop in `op`: both
/// parallel (joined reductions would add in another order), and in every
/// operand that reads either, adjacent dimensions in that order, the outer
/// one's stride the inner one's extent times its stride (static), so that
/// together they are one run.
bool joinsNext(linalg::LinalgOp op, unsigned dim) {
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  if (iterators[dim] != utils::IteratorType::parallel ||
      iterators[dim + 1] != utils::IteratorType::parallel)
    return false;
  for (OpOperand &operand : op->getOpOperands()) {
    AffineMap map = op.getMatchingIndexingMap(&operand);
    std::optional<unsigned> outer = map.getResultPosition(getAffineDimExpr(dim, op.getContext()));
    std::optional<unsigned> inner =
        map.getResultPosition(getAffineDimExpr(dim + 1, op.getContext()));
    if (!outer && !inner)
      continue;
    if (!outer || !inner || *inner != *outer + 1)
      return false;
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    SmallVector<int64_t> strides;
    int64_t offset;
    if (!type || failed(type.getStridesAndOffset(strides, offset)))
      return false;
    int64_t extent = type.getDimSize(*inner);
    if (ShapedType::isDynamic(extent) || ShapedType::isDynamic(strides[*inner]) ||
        ShapedType::isDynamic(strides[*outer]) || strides[*outer] != extent * strides[*inner])
      return false;
  }
  return true;
}

/// The op's loops grouped into maximal runs that joinsNext allows, or
/// nothing when no two loops join.
SmallVector<ReassociationIndices> contiguousRuns(linalg::LinalgOp op) {
  unsigned loops = op.getNumLoops();
  SmallVector<ReassociationIndices> runs;
  bool joined = false;
  for (unsigned dim = 0; dim < loops; ++dim) {
    if (dim > 0 && joinsNext(op, dim - 1)) {
      runs.back().push_back(dim);
      joined = true;
    } else {
      runs.push_back({static_cast<int64_t>(dim)});
    }
  }
  return joined ? runs : SmallVector<ReassociationIndices>{};
}

/// `collapse` as a reinterpret_cast of its source's buffer with the
/// collapsed sizes and strides. Loads through a collapse_shape would be
/// folded into loads of the source at delinearized indices (a division and
/// a remainder per access, which LLVM does not undo); a reinterpret_cast
/// keeps the collapsed loop's addresses affine in it.
void replaceWithReinterpretCast(RewriterBase &rewriter, memref::CollapseShapeOp collapse) {
  rewriter.setInsertionPoint(collapse);
  Location loc = collapse.getLoc();
  MemRefType type = collapse.getResultType();
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) ||
      llvm::any_of(strides, ShapedType::isDynamic))
    return;
  auto metadata = memref::ExtractStridedMetadataOp::create(rewriter, loc, collapse.getSrc());
  SmallVector<OpFoldResult> sizes;
  for (auto [dim, group] : llvm::enumerate(collapse.getReassociationIndices())) {
    if (!type.isDynamicDim(dim)) {
      sizes.push_back(rewriter.getIndexAttr(type.getDimSize(dim)));
      continue;
    }
    Value size = metadata.getSizes()[group.front()];
    for (int64_t source : ArrayRef(group).drop_front())
      size = arith::MulIOp::create(rewriter, loc, size, metadata.getSizes()[source]);
    sizes.push_back(size);
  }
  OpFoldResult start = ShapedType::isDynamic(offset) ? OpFoldResult(metadata.getOffset())
                                                     : rewriter.getIndexAttr(offset);
  SmallVector<OpFoldResult> strideValues = llvm::map_to_vector(
      strides, [&](int64_t stride) -> OpFoldResult { return rewriter.getIndexAttr(stride); });
  rewriter.replaceOpWithNewOp<memref::ReinterpretCastOp>(
      collapse, type, metadata.getBaseBuffer(), start, sizes, strideValues);
}

struct KilnCollapseContiguousLoopsPass
    : impl::KilnCollapseContiguousLoopsPassBase<KilnCollapseContiguousLoopsPass> {
  void runOnOperation() override {
    SmallVector<linalg::LinalgOp> candidates;
    getOperation().walk([&](linalg::LinalgOp op) {
      // Plain loop nests on buffers; a body that reads its indices would
      // need them rebuilt from the joined loop's.
      if (!op.hasPureBufferSemantics() || op.getNumLoops() < 2 ||
          !isa<linalg::GenericOp, linalg::CopyOp, linalg::TransposeOp>(op))
        return;
      if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation()))
        if (generic.hasIndexSemantics())
          return;
      // Each operand indexed by loops, not by sums of them (a window) or
      // constants (a unit dimension read at 0, which
      // linalg::areDimSequencesPreserved cannot take).
      if (!llvm::all_of(op.getIndexingMapsArray(), [](AffineMap map) {
            return map.isProjectedPermutation(/*allowZeroInResults=*/false);
          }))
        return;
      candidates.push_back(op);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::LinalgOp op : candidates) {
      SmallVector<ReassociationIndices> runs = contiguousRuns(op);
      if (runs.empty() || !linalg::areDimSequencesPreserved(op.getIndexingMapsArray(), runs))
        continue;
      rewriter.setInsertionPoint(op);
      if (auto transpose = dyn_cast<linalg::TransposeOp>(op.getOperation())) {
        FailureOr<linalg::GenericOp> generic = linalg::generalizeNamedOp(rewriter, transpose);
        if (failed(generic))
          continue;
        op = *generic;
      }
      FailureOr<linalg::CollapseResult> collapsed =
          linalg::collapseOpIterationDims(op, runs, rewriter);
      if (failed(collapsed))
        continue;
      rewriter.replaceOp(op, collapsed->results);
      for (Value operand : collapsed->collapsedOp->getOperands())
        if (auto collapse = operand.getDefiningOp<memref::CollapseShapeOp>())
          replaceWithReinterpretCast(rewriter, collapse);
    }
  }
};

} // namespace
} // namespace kiln
