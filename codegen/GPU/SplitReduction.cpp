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
/// Partial results aimed at when a loop is cut in two because no whole
/// loop could turn parallel (a bias gradient over the rows of one matrix):
/// a thread per 4 of them then fills a few multiprocessors; and the
/// shortest sum the cut leaves each (the payload of such a sum is often a
/// long recomputation, as a layer norm's weight gradient is).
constexpr int64_t kTargetCutPartials = 16384;
constexpr int64_t kMinCutReduction = 4;

/// The loops of a generic being split: their ranges and iterator types and
/// the operands' indexing maps over them, and for each input the dimension
/// that is to be expanded in two (see cutLoop), if any.
struct Loops {
  SmallVector<int64_t> ranges;
  SmallVector<utils::IteratorType> iterators;
  SmallVector<AffineMap> maps;
  SmallVector<std::optional<unsigned>> expanded;
};

/// `loops` with reduction loop `loop` (range R) cut into an outer loop of
/// `outer` and an inner one of R / outer, both reductions. Each input that
/// indexes a dimension by the loop is to be read expanded, that dimension
/// in two (outer, inner); fails when an operand uses the loop otherwise
/// (in a sum of indices, or in two dimensions).
std::optional<Loops> cutLoop(const Loops &loops, unsigned loop, int64_t outer, MLIRContext *ctx) {
  int64_t inner = loops.ranges[loop] / outer;
  Loops cut;
  for (auto [i, range] : llvm::enumerate(loops.ranges)) {
    if (i == loop) {
      cut.ranges.append({outer, inner});
      cut.iterators.append(2, utils::IteratorType::reduction);
      continue;
    }
    cut.ranges.push_back(range);
    cut.iterators.push_back(loops.iterators[i]);
  }
  unsigned count = loops.ranges.size();
  SmallVector<AffineExpr> renumbered;
  for (unsigned i = 0; i < count; ++i)
    renumbered.push_back(getAffineDimExpr(i <= loop ? i : i + 1, ctx));
  AffineExpr atLoop = getAffineDimExpr(loop, ctx);
  for (AffineMap map : loops.maps) {
    SmallVector<AffineExpr> results;
    std::optional<unsigned> expanded;
    for (AffineExpr expr : map.getResults()) {
      if (expr == atLoop) {
        if (expanded)
          return std::nullopt;
        expanded = results.size();
        results.append({getAffineDimExpr(loop, ctx), getAffineDimExpr(loop + 1, ctx)});
        continue;
      }
      if (expr.isFunctionOfDim(loop))
        return std::nullopt;
      results.push_back(expr.replaceDims(renumbered));
    }
    cut.maps.push_back(AffineMap::get(count + 1, 0, results, ctx));
    cut.expanded.push_back(expanded);
  }
  return cut;
}

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
  // The output map must name parallel loops only (a reduction's result),
  // or 0 where the reduced dimensions are kept.
  AffineMap outMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  if (!outMap.isProjectedPermutation(/*allowZeroInResults=*/true))
    return failure();

  Loops loops{ranges, op.getIteratorTypesArray(), op.getIndexingMapsArray(), {}};
  loops.expanded.resize(loops.maps.size());
  int64_t parallel = 1, reduced = 1;
  for (auto [range, iterator] : llvm::zip(loops.ranges, loops.iterators))
    (iterator == utils::IteratorType::parallel ? parallel : reduced) *= range;
  if (parallel >= fewerResultsThan || reduced < atLeastReduced)
    return failure();
  // Outer reduction loops become parallel, outermost first.
  SmallVector<utils::IteratorType> first = loops.iterators;
  bool split = false;
  for (auto [loop, range] : llvm::enumerate(loops.ranges)) {
    if (loops.iterators[loop] != utils::IteratorType::reduction || parallel >= kTargetPartials ||
        reduced / range < kMinPartialReduction)
      continue;
    first[loop] = utils::IteratorType::parallel;
    parallel *= range;
    reduced /= range;
    split |= range > 1;
  }
  // No whole loop could turn parallel without leaving its partials too
  // short a sum (one long loop: rows of a matrix): the outermost reduction
  // loop left is cut in two, the outer part parallel, the inner one at
  // least kMinCutReduction long. Payloads that read their loop indices
  // are left alone.
  bool readsIndices = !op.getRegion().getOps<linalg::IndexOp>().empty();
  std::optional<unsigned> cuttable;
  for (unsigned loop = 0; loop < first.size() && !cuttable; ++loop)
    if (first[loop] == utils::IteratorType::reduction && loops.ranges[loop] >= 2 * kMinCutReduction)
      cuttable = loop;
  if (!split && !readsIndices && cuttable) {
    unsigned loop = *cuttable;
    int64_t range = loops.ranges[loop];
    int64_t outer = std::min<int64_t>(range / kMinCutReduction, llvm::divideCeil(kTargetCutPartials, parallel));
    while (outer > 1 && range % outer != 0)
      --outer;
    std::optional<Loops> cut;
    if (outer > 1)
      cut = cutLoop(loops, loop, outer, op.getContext());
    if (cut) {
      loops = std::move(*cut);
      first[loop] = utils::IteratorType::parallel;
      first.insert(first.begin() + loop + 1, utils::IteratorType::reduction);
      split = true;
    }
  }
  if (!split)
    return failure();
  ranges = loops.ranges;
  SmallVector<utils::IteratorType> iterators = loops.iterators;
  outMap = loops.maps.back();

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

  // Step one: the original payload, with the chosen loops parallel (and
  // inputs of a cut loop read through a view of that dimension in two).
  SmallVector<AffineMap> maps = loops.maps;
  maps.back() = partialMap;
  SmallVector<Value> inputs;
  for (auto [input, map, expanded] : llvm::zip(op.getDpsInputs(), loops.maps, loops.expanded)) {
    if (!expanded) {
      inputs.push_back(input);
      continue;
    }
    auto type = llvm::cast<RankedTensorType>(input.getType());
    SmallVector<int64_t> shape;
    SmallVector<ReassociationIndices> groups;
    for (auto [d, size] : llvm::enumerate(type.getShape())) {
      int64_t at = static_cast<int64_t>(shape.size());
      if (d == *expanded) {
        unsigned outer = llvm::cast<AffineDimExpr>(map.getResult(d)).getPosition();
        groups.push_back({at, at + 1});
        shape.append({loops.ranges[outer], loops.ranges[outer + 1]});
        continue;
      }
      groups.push_back({at});
      shape.push_back(size);
    }
    inputs.push_back(tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get(shape, type.getElementType()), input, groups));
  }
  auto partial = linalg::GenericOp::create(b, loc, TypeRange{partialType}, inputs,
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
  for (AffineExpr expr : outMap.getResults()) {
    auto dim = llvm::dyn_cast<AffineDimExpr>(expr);
    resultExprs.push_back(dim ? getAffineDimExpr(positionOf[dim.getPosition()], ctx) : expr);
  }
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
