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
    Value stride = arith::ConstantIndexOp::create(b, loc, blocks * block);
    auto forOp = scf::ForOp::create(b, loc, first, end, stride);
    b.setInsertionPointToStart(forOp.getBody());
    item = forOp.getInductionVar();
    loop = forOp;
  }

  ElementalEmitter emitter = state.makeEmitter(kernel, lanes);
  LaneIndex linear{arith::MulIOp::create(b, loc, item, arith::ConstantIndexOp::create(b, loc, lanes)),
                   lanes > 1 ? 1 : 0, lanes};
  SmallVector<LaneIndex> indices = emitter.delinearize(linear, shape);
  for (auto [i, result] : llvm::enumerate(results)) {
    FailureOr<Lanes> value = emitter.emit(result, indices);
    if (failed(value))
      return failure();
    emitter.store(*value, kernel.getResult(i), indices);
  }
  b.setInsertionPointAfter(loop);

  ValueRange launched = kernel.launch(state.main, {std::max<int64_t>(blocks, 1), 1, 1});
  for (auto [result, value] : llvm::zip(results, launched))
    state.materialized[result] = value;
  return success();
}

} // namespace kiln
