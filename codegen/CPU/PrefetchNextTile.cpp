//===- PrefetchNextTile.cpp - Prefetch the next tile while computing one --===//
//
// A kernel's parallel loop hands each thread a run of consecutive tiles, and
// a row tile is often exactly one 4 KiB page. The hardware prefetchers do
// not cross pages, so every tile starts with cache misses that stall its
// first loop. This pass has the kernel's heaviest elementwise loop fetch, a
// cache line per few iterations, the same elements of the thread's next
// tile.
//
//===----------------------------------------------------------------------===//
#include "codegen/Passes.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace kiln {
#define GEN_PASS_DEF_KILNPREFETCHNEXTTILEPASS
#include "codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

constexpr int64_t kCacheLineBytes = 64;
/// Cache lines fetched per strip of the loop: one strip is then a few
/// vectors, which LLVM still vectorizes as one loop.
constexpr int64_t kLinesPerStrip = 4;
/// At most this many streams (distinct views) per loop.
constexpr size_t kMaxStreams = 4;

/// A load of the current tile that the next tile's prefetch mirrors.
struct Stream {
  memref::LoadOp load;
  SetVector<Operation *> slice; // the ops inside the parallel loop that build its view
};

/// The loop's trip count when it runs from 0 in steps of 1 to a constant.
std::optional<int64_t> staticTripCount(scf::ForOp loop) {
  std::optional<int64_t> lower = getConstantIntValue(loop.getLowerBound());
  std::optional<int64_t> upper = getConstantIntValue(loop.getUpperBound());
  std::optional<int64_t> step = getConstantIntValue(loop.getStep());
  if (!lower || !upper || !step || *lower != 0 || *step != 1)
    return std::nullopt;
  return *upper;
}

/// An innermost loop without loop-carried values whose every store indexes
/// its innermost dimension by the loop: an elementwise loop, which LLVM
/// vectorizes strip by strip as well as whole (a reduction would be reduced
/// across lanes once per strip).
bool isElementwiseInnermost(scf::ForOp loop) {
  if (loop.getNumRegionIterArgs() != 0)
    return false;
  Value iv = loop.getInductionVar();
  for (Operation &op : loop.getBody()->without_terminator()) {
    if (op.getNumRegions() != 0)
      return false;
    if (auto store = dyn_cast<memref::StoreOp>(op)) {
      if (store.getIndices().empty() || store.getIndices().back() != iv)
        return false;
    } else if (!isa<memref::LoadOp>(op) && !isMemoryEffectFree(&op)) {
      return false;
    }
  }
  return true;
}

/// Whether the view's innermost dimension is contiguous.
bool hasUnitInnerStride(MemRefType type) {
  SmallVector<int64_t> strides;
  int64_t offset;
  return type.getRank() > 0 && succeeded(type.getStridesAndOffset(strides, offset)) &&
         strides.back() == 1;
}

/// The load as a stream of the parallel loop's tiles: it reads along the
/// loop's induction variable from a view that the parallel loop builds, from
/// its induction variable, with side-effect-free ops over a buffer from
/// outside it (a tile of a kernel operand, not per-tile scratch).
std::optional<Stream> matchStream(memref::LoadOp load, scf::ForOp loop, scf::ParallelOp parallel,
                                  int64_t maxTileBytes) {
  ValueRange indices = load.getIndices();
  if (indices.empty() || indices.back() != loop.getInductionVar())
    return std::nullopt;
  for (Value index : indices.drop_back())
    if (!loop.isDefinedOutsideOfLoop(index))
      return std::nullopt;
  MemRefType type = load.getMemRefType();
  unsigned bits = type.getElementTypeBitWidth();
  if (!hasUnitInnerStride(type) || !type.hasStaticShape() || bits % 8 != 0 ||
      type.getNumElements() * (bits / 8) > maxTileBytes)
    return std::nullopt;

  Stream stream{load, {}};
  BackwardSliceOptions options;
  options.inclusive = true;
  options.omitBlockArguments = true; // loop indices dominate the loop; they are leaves
  bool pure = true;
  options.filter = [&](Operation *op) {
    if (!parallel->isProperAncestor(op))
      return false;
    pure &= isMemoryEffectFree(op) && op->getNumRegions() == 0;
    return true;
  };
  Operation *view = load.getMemRef().getDefiningOp();
  if (!view || !parallel->isProperAncestor(view) ||
      failed(getBackwardSlice(view, &stream.slice, options)) || !pure)
    return std::nullopt;
  ValueRange ivs = parallel.getInductionVars();
  bool followsTiles = llvm::any_of(stream.slice, [&](Operation *op) {
    return llvm::any_of(op->getOperands(), [&](Value v) { return llvm::is_contained(ivs, v); });
  });
  if (!followsTiles)
    return std::nullopt;
  return stream;
}

struct KilnPrefetchNextTilePass
    : impl::KilnPrefetchNextTilePassBase<KilnPrefetchNextTilePass> {
  using KilnPrefetchNextTilePassBase::KilnPrefetchNextTilePassBase;

  void runOnOperation() override {
    SmallVector<scf::ParallelOp> kernels;
    getOperation().walk([&](scf::ParallelOp parallel) {
      if (!parallel->getParentOfType<scf::ParallelOp>())
        kernels.push_back(parallel);
    });
    for (scf::ParallelOp parallel : kernels)
      prefetchIn(parallel);
  }

  /// Picks the kernel's costliest elementwise loop with tile streams and
  /// strip-mines it, each strip prefetching its part of the next tile.
  void prefetchIn(scf::ParallelOp parallel) {
    scf::ForOp best;
    SmallVector<Stream> bestStreams;
    size_t bestCost = 0;
    parallel.getBody()->walk([&](scf::ForOp loop) {
      if (!isElementwiseInnermost(loop) || !staticTripCount(loop))
        return;
      SmallVector<Stream> streams;
      for (auto load : loop.getBody()->getOps<memref::LoadOp>()) {
        bool seen = llvm::any_of(streams, [&](Stream &s) {
          return s.load.getMemRef() == load.getMemRef() &&
                 s.load.getIndices() == load.getIndices();
        });
        if (seen || streams.size() == kMaxStreams)
          continue;
        if (std::optional<Stream> stream = matchStream(load, loop, parallel, maxTileBytes))
          streams.push_back(std::move(*stream));
      }
      size_t cost = loop.getBody()->getOperations().size();
      if (!streams.empty() && cost > bestCost) {
        best = loop;
        bestStreams = std::move(streams);
        bestCost = cost;
      }
    });
    if (best)
      stripMine(parallel, best, bestStreams);
  }

  void stripMine(scf::ParallelOp parallel, scf::ForOp loop, MutableArrayRef<Stream> streams) {
    int64_t trips = *staticTripCount(loop);
    // The narrowest element decides how many iterations a line holds.
    int64_t elementBytes = kCacheLineBytes;
    for (Stream &stream : streams)
      elementBytes =
          std::min<int64_t>(elementBytes, stream.load.getMemRefType().getElementTypeBitWidth() / 8);
    int64_t lineElements = kCacheLineBytes / elementBytes;
    int64_t strip = lineElements * kLinesPerStrip;
    if (trips % strip != 0)
      strip = lineElements;
    if (trips % strip != 0 || trips < 2 * strip)
      return;

    Location loc = loop.getLoc();
    OpBuilder b(loop);
    // The thread's next tile: the innermost parallel index one step on, or
    // this tile again at the end (prefetching it is harmless).
    Value iv = parallel.getInductionVars().back();
    Value next = arith::AddIOp::create(b, loc, iv, parallel.getStep().back());
    Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, next,
                                          parallel.getUpperBound().back());
    next = arith::SelectOp::create(b, loc, inRange, next, iv);

    SmallVector<Value> nextViews;
    for (Stream &stream : streams) {
      IRMapping mapping;
      mapping.map(iv, next);
      for (Operation *op : stream.slice)
        b.clone(*op, mapping);
      nextViews.push_back(mapping.lookup(stream.load.getMemRef()));
    }

    Value stripSize = arith::ConstantIndexOp::create(b, loc, strip);
    auto strips = scf::ForOp::create(b, loc, loop.getLowerBound(), loop.getUpperBound(), stripSize);
    b.setInsertionPointToStart(strips.getBody());
    Value start = strips.getInductionVar();
    for (auto [stream, view] : llvm::zip(streams, nextViews)) {
      for (int64_t line = 0; line < strip; line += lineElements) {
        SmallVector<Value> indices(stream.load.getIndices());
        indices.back() = line == 0 ? start
                                   : arith::AddIOp::create(
                                         b, loc, start, arith::ConstantIndexOp::create(b, loc, line));
        memref::PrefetchOp::create(b, loc, view, indices, /*isWrite=*/false, /*localityHint=*/3,
                                   /*isDataCache=*/true);
      }
    }
    loop->moveBefore(strips.getBody()->getTerminator());
    b.setInsertionPoint(loop);
    loop.setLowerBound(start);
    loop.setUpperBound(arith::AddIOp::create(b, loc, start, stripSize));
  }
};

} // namespace
} // namespace kiln
