//===- SplitReduction.cpp - Long reductions into few results, in two steps -===//
//
// A loop kernel computes a reduction with one thread per result, looping
// over the reduced elements. That is right for pooling windows and short
// sums, and wrong for a training step's bias gradients: 32 sums of 78,400
// elements each (batch x pixels per channel) keep 32 threads busy on a GPU
// of a quarter of a million, for milliseconds. Splitting the sum in two
// steps spreads it out:
//
//   %g = sum over (n, h, w) of x[n, c, h, w]          32 threads x 78,400
//
// becomes
//
//   %p[n, c] = sum over (h, w) of x[n, c, h, w]       3,200 rows of 784: a
//                                                     row kernel (warps)
//   %g[c]    = sum over n of %p[n, c]                 32 threads x 100
//
// Outer reduction loops turn parallel until there are enough partial
// results to fill the GPU. The payload is untouched (the first step is the
// original generic with other iterator types and a fresh accumulator), so
// any combiner with an identity splits; the order of the float sums changes
// as it does between any two schedules.
//
//===----------------------------------------------------------------------===//
#include "codegen/GPU/Kernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;

namespace kiln {
namespace {

/// Partial results the first step aims at (a few warps on every
/// multiprocessor of a large GPU), and the shortest reduction it leaves
/// each of them.
constexpr int64_t kTargetPartials = 2048;
constexpr int64_t kMinPartialReduction = 16;

} // namespace

FailureOr<SplitReduction> splitLongReduction(Value value, int64_t fewerResultsThan, int64_t atLeastReduced) {
  auto op = value.getDefiningOp<linalg::GenericOp>();
  if (!op || op->getNumResults() != 1 || op.getNumDpsInits() != 1 || op.getNumReductionLoops() == 0 ||
      !op.hasPureTensorSemantics())
    return failure();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  if (llvm::any_of(ranges, ShapedType::isDynamic))
    return failure();
  // The payload must end in combiner(x, out) with x independent of out.
  Block &payload = op.getRegion().front();
  BlockArgument out = payload.getArguments().back();
  Operation *combiner = payload.getTerminator()->getOperand(0).getDefiningOp();
  if (!combiner || combiner->getNumOperands() != 2 || !out.hasOneUse() ||
      out.getUses().begin()->getOwner() != combiner)
    return failure();
  TypedAttr identity = reductionIdentity(combiner, out.getType());
  if (!identity)
    return failure();
  // The output map must name parallel loops only (a reduction's result).
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (!outMap.isProjectedPermutation())
    return failure();

  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  int64_t parallel = 1, reduced = 1;
  for (auto [range, iterator] : llvm::zip(ranges, iterators))
    (iterator == utils::IteratorType::parallel ? parallel : reduced) *= range;
  if (parallel >= fewerResultsThan || reduced < atLeastReduced)
    return failure();
  // Outer reduction loops become parallel, outermost first.
  SmallVector<utils::IteratorType> first = iterators;
  for (auto [loop, range] : llvm::enumerate(ranges)) {
    if (iterators[loop] != utils::IteratorType::reduction || parallel >= kTargetPartials ||
        reduced / range < kMinPartialReduction)
      continue;
    first[loop] = utils::IteratorType::parallel;
    parallel *= range;
    reduced /= range;
  }
  if (first == iterators)
    return failure();

  // The partials: one element per parallel loop of the first step, in loop order.
  MLIRContext *ctx = op.getContext();
  SmallVector<unsigned> partialLoops;
  SmallVector<int64_t> partialShape;
  for (auto [loop, iterator] : llvm::enumerate(first))
    if (iterator == utils::IteratorType::parallel) {
      partialLoops.push_back(loop);
      partialShape.push_back(ranges[loop]);
    }
  SmallVector<AffineExpr> partialExprs = llvm::map_to_vector(
      partialLoops, [&](unsigned loop) { return getAffineDimExpr(loop, ctx); });
  AffineMap partialMap = AffineMap::get(ranges.size(), 0, partialExprs, ctx);
  Type element = out.getType();
  auto partialType = RankedTensorType::get(partialShape, element);

  OpBuilder b(op);
  Location loc = op.getLoc();
  // The partials' accumulators start at the combiner's identity.
  Value empty = tensor::EmptyOp::create(b, loc, partialShape, element);
  AffineMap initMap = AffineMap::getMultiDimIdentityMap(partialShape.size(), ctx);
  auto init = linalg::GenericOp::create(
      b, loc, TypeRange{partialType}, ValueRange{}, ValueRange{empty}, ArrayRef<AffineMap>{initMap},
      SmallVector<utils::IteratorType>(partialShape.size(), utils::IteratorType::parallel),
      [&](OpBuilder &nested, Location at, ValueRange) {
        Value start = arith::ConstantOp::create(nested, at, identity);
        linalg::YieldOp::create(nested, at, start);
      });

  // Step one: the original payload, with the chosen loops parallel.
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  maps.back() = partialMap;
  auto partial = linalg::GenericOp::create(b, loc, TypeRange{partialType}, op.getDpsInputs(),
                                           ValueRange{init.getResult(0)}, maps, first);
  IRMapping none;
  op.getRegion().cloneInto(&partial.getRegion(), none);

  // Step two: combine the partials into the original accumulator. Its loops
  // are the partial's dimensions; those the original result has stay parallel.
  SmallVector<int64_t> positionOf(ranges.size(), -1);
  for (auto [position, loop] : llvm::enumerate(partialLoops))
    positionOf[loop] = static_cast<int64_t>(position);
  SmallVector<utils::IteratorType> second;
  for (unsigned loop : partialLoops)
    second.push_back(iterators[loop]);
  SmallVector<AffineExpr> resultExprs;
  for (AffineExpr expr : outMap.getResults())
    resultExprs.push_back(getAffineDimExpr(
        positionOf[llvm::cast<AffineDimExpr>(expr).getPosition()], ctx));
  AffineMap resultMap = AffineMap::get(partialLoops.size(), 0, resultExprs, ctx);
  Value accumulator = op.getDpsInits()[0];
  auto combined = linalg::GenericOp::create(
      b, loc, TypeRange{value.getType()}, ValueRange{partial.getResult(0)}, ValueRange{accumulator},
      ArrayRef<AffineMap>{initMap, resultMap}, second,
      [&](OpBuilder &nested, Location at, ValueRange args) {
        IRMapping mapping;
        Value payloadValue = combiner->getOperand(0) == out ? combiner->getOperand(1) : combiner->getOperand(0);
        mapping.map(payloadValue, args[0]);
        mapping.map(out, args[1]);
        Operation *combine = nested.clone(*combiner, mapping);
        linalg::YieldOp::create(nested, at, combine->getResult(0));
      });
  value.replaceAllUsesWith(combined.getResult(0));
  op.erase();
  return SplitReduction{partial.getResult(0), combined.getResult(0)};
}

} // namespace kiln
