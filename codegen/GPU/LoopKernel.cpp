//===- LoopKernel.cpp - Kernels that loop over their result ---------------===//
//
// The schedule for everything that is not a row reduction or a library
// call: each thread computes `lanes` consecutive elements of the result(s)
// in a grid-stride loop. Reductions inside (pooling windows, column sums)
// run as loops in the thread that needs their value. Results of different
// shapes share the kernel side by side: each shape (a segment) has a range
// of the grid's blocks and its own loop.
//
//===----------------------------------------------------------------------===//
#include "codegen/GPU/Kernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;

namespace kiln {

/// Threads per block of a loop kernel: enough warps to hide latency, few
/// enough that small results still spread over many multiprocessors.
constexpr int64_t kLoopBlock = 256;

/// Items a thread takes per trip around a large result's grid-stride loop,
/// one grid apart: their loads are independent, so they are in flight
/// together while the first item's arithmetic runs (a trip per item would
/// leave one load per thread in flight, too few to cover a GPU's memory
/// latency once the arithmetic takes a while, as GELU's does).
constexpr int64_t kItemsPerTrip = 4;

/// Elements per thread: 16 bytes of the widest result element (one 128-bit
/// access), fewer when the innermost dimension is not a multiple.
static int64_t chooseLanes(ArrayRef<Value> results, ArrayRef<int64_t> shape) {
  if (shape.empty())
    return 1;
  int64_t widest = 1;
  for (Value result : results) {
    Type element = llvm::cast<ShapedType>(result.getType()).getElementType();
    widest = std::max<int64_t>(widest, llvm::divideCeil(element.getIntOrFloatBitWidth(), 8));
  }
  int64_t lanes = std::max<int64_t>(1, std::min<int64_t>(4, 16 / widest));
  while (lanes > 1 && shape.back() % lanes != 0)
    lanes /= 2;
  return lanes;
}

namespace {

/// The results of one shape within a loop kernel, and the blocks that
/// compute them: [firstBlock, firstBlock + blocks).
struct Segment {
  SmallVector<Value> results;
  /// Index of the first of `results` among the kernel's results.
  unsigned firstResult;
  int64_t lanes, work, blocks, firstBlock;
};

/// Emits `segment`'s loop, its block being `localBlock` of its `blocks`.
LogicalResult emitSegment(FusionKernels &state, KernelBuilder &kernel, const Segment &segment,
                          int64_t block, Value localBlock) {
  OpBuilder &b = kernel.getBuilder();
  Location loc = kernel.getLoc();
  ArrayRef<int64_t> shape = llvm::cast<ShapedType>(segment.results.front().getType()).getShape();
  int64_t lanes = segment.lanes, work = segment.work, blocks = segment.blocks;
  Value first = arith::AddIOp::create(
      b, loc, arith::MulIOp::create(b, loc, localBlock, arith::ConstantIndexOp::create(b, loc, block)),
      kernel.threadId());
  Value end = arith::ConstantIndexOp::create(b, loc, work);
  // Several items per trip only when the grid would loop anyway.
  int64_t items = work >= kItemsPerTrip * blocks * block ? kItemsPerTrip : 1;
  int64_t threads = blocks * block;

  // One pass when the grid covers the work, else a grid-stride loop.
  OpBuilder::InsertionGuard after(b);
  Value item;
  if (blocks * block >= work) {
    Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, first, end);
    auto guard = scf::IfOp::create(b, loc, inRange, /*withElseRegion=*/false);
    b.setInsertionPointToStart(guard.thenBlock());
    item = first;
  } else {
    Value stride = arith::ConstantIndexOp::create(b, loc, threads * items);
    auto forOp = scf::ForOp::create(b, loc, first, end, stride);
    b.setInsertionPointToStart(forOp.getBody());
    item = forOp.getInductionVar();
  }

  ElementalEmitter emitter = state.makeEmitter(kernel, lanes);
  // Every item's values first, then every store: nothing orders an item's
  // loads after an earlier item's stores.
  struct Pending {
    SmallVector<Lanes> values;
    SmallVector<LaneIndex> indices;
    Value valid;
  };
  SmallVector<Pending> pending;
  for (int64_t u = 0; u < items; ++u) {
    Value at = item;
    Pending next;
    if (u > 0) {
      at = arith::AddIOp::create(b, loc, item, arith::ConstantIndexOp::create(b, loc, u * threads));
      // The last trip's later items may fall past the end: they compute the
      // last item again and store nothing.
      if (work % (threads * items) != 0) {
        next.valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, at, end);
        at = arith::MinUIOp::create(b, loc, at, arith::ConstantIndexOp::create(b, loc, work - 1));
      }
    }
    LaneIndex linear{arith::MulIOp::create(b, loc, at, arith::ConstantIndexOp::create(b, loc, lanes)),
                     lanes > 1 ? 1 : 0, lanes};
    next.indices = emitter.delinearize(linear, shape);
    for (Value result : segment.results) {
      FailureOr<Lanes> value = emitter.emit(result, next.indices);
      if (failed(value))
        return failure();
      next.values.push_back(*value);
    }
    pending.push_back(std::move(next));
  }
  for (Pending &done : pending) {
    OpBuilder::InsertionGuard guard(b);
    if (done.valid) {
      auto store = scf::IfOp::create(b, loc, done.valid, /*withElseRegion=*/false);
      b.setInsertionPointToStart(store.thenBlock());
    }
    for (auto [i, value] : llvm::enumerate(done.values))
      emitter.store(value, kernel.getResult(segment.firstResult + i), done.indices);
  }
  return success();
}

/// Emits segments [lo, hi) for block `blockId`: a binary search over their
/// first blocks, uniform across each block, down to one segment's loop.
LogicalResult emitSegments(FusionKernels &state, KernelBuilder &kernel, ArrayRef<Segment> segments,
                           int64_t block, Value blockId) {
  OpBuilder &b = kernel.getBuilder();
  Location loc = kernel.getLoc();
  if (segments.size() == 1) {
    Value local = blockId;
    if (segments.front().firstBlock != 0)
      local = arith::SubIOp::create(
          b, loc, blockId, arith::ConstantIndexOp::create(b, loc, segments.front().firstBlock));
    return emitSegment(state, kernel, segments.front(), block, local);
  }
  size_t mid = segments.size() / 2;
  Value below = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ult, blockId,
      arith::ConstantIndexOp::create(b, loc, segments[mid].firstBlock));
  auto branch = scf::IfOp::create(b, loc, below, /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(branch.thenBlock());
  if (failed(emitSegments(state, kernel, segments.take_front(mid), block, blockId)))
    return failure();
  b.setInsertionPointToStart(branch.elseBlock());
  return emitSegments(state, kernel, segments.drop_front(mid), block, blockId);
}

} // namespace

LogicalResult emitLoopKernel(FusionKernels &state, ArrayRef<Value> results) {
  // Results of one shape share a segment, in the order they first appear.
  SmallVector<Segment> segments;
  for (Value result : results) {
    ArrayRef<int64_t> shape = llvm::cast<ShapedType>(result.getType()).getShape();
    auto same = llvm::find_if(segments, [&](const Segment &s) {
      return llvm::cast<ShapedType>(s.results.front().getType()).getShape() == shape;
    });
    if (same == segments.end())
      segments.push_back({{result}, 0, 0, 0, 0, 0});
    else
      same->results.push_back(result);
  }
  SmallVector<Value> ordered;
  int64_t block = 32;
  for (Segment &segment : segments) {
    auto type = llvm::cast<RankedTensorType>(segment.results.front().getType());
    segment.firstResult = ordered.size();
    llvm::append_range(ordered, segment.results);
    segment.lanes = chooseLanes(segment.results, type.getShape());
    segment.work = type.getNumElements() / segment.lanes;
    block = std::max(block, std::min<int64_t>(kLoopBlock, llvm::alignTo(std::max<int64_t>(segment.work, 1), 32)));
  }
  int64_t blocks = 0;
  for (Segment &segment : segments) {
    segment.firstBlock = blocks;
    segment.blocks = std::max<int64_t>(
        1, std::min<int64_t>(llvm::divideCeil(segment.work, block),
                             state.chip.multiprocessors * state.maxBlocksPerSM));
    blocks += segment.blocks;
  }

  SmallVector<Type> types = llvm::map_to_vector(ordered, [](Value v) { return v.getType(); });
  KernelBuilder kernel(state.module, state.newKernelName(), state.fusion.getLoc(), types,
                       {block, 1, 1});
  if (failed(emitSegments(state, kernel, segments, block, kernel.blockId())))
    return failure();
  ValueRange launched = kernel.launch(state.main, {blocks, 1, 1});
  for (auto [result, value] : llvm::zip(ordered, launched))
    state.materialized[result] = value;
  return success();
}

} // namespace kiln
