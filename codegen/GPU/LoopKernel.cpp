//===- LoopKernel.cpp - Kernels that loop over their result ---------------===//
//
// The schedule for everything that is not a row reduction or a library
// call: each thread computes `lanes` consecutive elements of the result(s)
// in a grid-stride loop. Reductions inside (pooling windows, column sums)
// run as loops in the thread that needs their value.
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

LogicalResult emitLoopKernel(FusionKernels &state, ArrayRef<Value> results) {
  auto type = llvm::cast<RankedTensorType>(results.front().getType());
  ArrayRef<int64_t> shape = type.getShape();
  int64_t lanes = chooseLanes(results, shape);
  int64_t work = type.getNumElements() / lanes;
  int64_t block = std::min<int64_t>(kLoopBlock, llvm::alignTo(std::max<int64_t>(work, 1), 32));
  int64_t blocks = std::min<int64_t>(llvm::divideCeil(work, block),
                                     state.chip.multiprocessors * state.maxBlocksPerSM);

  SmallVector<Type> types = llvm::map_to_vector(results, [](Value v) { return v.getType(); });
  KernelBuilder kernel(state.module, state.newKernelName(), state.fusion.getLoc(), types,
                       {block, 1, 1});
  OpBuilder &b = kernel.getBuilder();
  Location loc = kernel.getLoc();
  Value thread = kernel.threadId();
  Value first = arith::AddIOp::create(
      b, loc,
      arith::MulIOp::create(b, loc, kernel.blockId(),
                            arith::ConstantIndexOp::create(b, loc, block)),
      thread);
  Value end = arith::ConstantIndexOp::create(b, loc, work);
  // Several items per trip only when the grid would loop anyway.
  int64_t items = work >= kItemsPerTrip * blocks * block ? kItemsPerTrip : 1;
  int64_t threads = blocks * block;

  // One pass when the grid covers the work, else a grid-stride loop.
  Value item;
  Operation *loop;
  if (blocks * block >= work) {
    Value inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, first, end);
    auto guard = scf::IfOp::create(b, loc, inRange, /*withElseRegion=*/false);
    b.setInsertionPointToStart(guard.thenBlock());
    item = first;
    loop = guard;
  } else {
    Value stride = arith::ConstantIndexOp::create(b, loc, threads * items);
    auto forOp = scf::ForOp::create(b, loc, first, end, stride);
    b.setInsertionPointToStart(forOp.getBody());
    item = forOp.getInductionVar();
    loop = forOp;
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
    for (Value result : results) {
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
      emitter.store(value, kernel.getResult(i), done.indices);
  }
  b.setInsertionPointAfter(loop);

  ValueRange launched = kernel.launch(state.main, {std::max<int64_t>(blocks, 1), 1, 1});
  for (auto [result, value] : llvm::zip(results, launched))
    state.materialized[result] = value;
  return success();
}

} // namespace kiln
