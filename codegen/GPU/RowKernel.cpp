//===- RowKernel.cpp - Reductions along rows, one thread group per row ----===//
//
// The schedule for input fusions whose reductions all reduce the trailing
// dimensions (the columns) of one iteration space: softmax, layer
// normalization, row sums. A group of T threads (a few lanes of a warp, a
// warp, or a whole block for long rows) owns each row:
//
//   1. each thread takes the row's columns in chunks of `lanes` consecutive
//      elements, chunk t, t + T, t + 2T, ... (so a warp's loads are
//      contiguous and 128 bits wide);
//   2. for each reduction in turn, the thread combines its chunks, the group
//      combines its threads with warp shuffles (and, across warps, through
//      shared memory), and every thread then holds the row's value;
//   3. the results are computed from those row values and stored.
//
// When a thread has at most kMaxSlots chunks, the chunks are unrolled and
// every value computed from the row (the inputs read, an exponential) stays
// in registers from one phase to the next: each input is read once. Longer
// rows loop over their chunks in each phase instead.
//
//===----------------------------------------------------------------------===//
#include "codegen/GPU/Kernels.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/MathExtras.h"

#include <limits>

using namespace mlir;

namespace kiln {

TypedAttr reductionIdentity(Operation *op, Type type) {
  Builder b(op->getContext());
  if (type.isF32()) {
    float inf = std::numeric_limits<float>::infinity();
    float nan = std::numeric_limits<float>::quiet_NaN();
    // -0.0 + x == x for every x, 0.0 + -0.0 is not -0.0.
    if (isa<arith::AddFOp>(op)) return b.getF32FloatAttr(-0.0f);
    if (isa<arith::MulFOp>(op)) return b.getF32FloatAttr(1.0f);
    if (isa<arith::MaximumFOp>(op)) return b.getF32FloatAttr(-inf);
    if (isa<arith::MinimumFOp>(op)) return b.getF32FloatAttr(inf);
    // maxnum/minnum ignore a NaN operand.
    if (isa<arith::MaxNumFOp, arith::MinNumFOp>(op)) return b.getF32FloatAttr(nan);
    return {};
  }
  if (type.isInteger(32)) {
    if (isa<arith::AddIOp, arith::OrIOp, arith::XOrIOp>(op)) return b.getI32IntegerAttr(0);
    if (isa<arith::MulIOp>(op)) return b.getI32IntegerAttr(1);
    if (isa<arith::AndIOp>(op)) return b.getI32IntegerAttr(-1);
    if (isa<arith::MaxSIOp>(op))
      return b.getI32IntegerAttr(std::numeric_limits<int32_t>::min());
    if (isa<arith::MinSIOp>(op))
      return b.getI32IntegerAttr(std::numeric_limits<int32_t>::max());
  }
  return {};
}

namespace {

/// Chunks a thread keeps in registers; more and the row is looped over.
constexpr int64_t kMaxSlots = 8;
/// Chunks per thread the block-per-row shape aims at.
constexpr int64_t kSlotsPerThread = 4;
constexpr int64_t kWarp = 32;
constexpr int64_t kMaxBlock = 1024;
/// Threads per block when several rows share a block.
constexpr int64_t kRowsBlock = 256;

/// How a reduction's payload combines: `combiner(out, x)`, with `identity`
/// such that combiner(identity, x) == x.
struct Reduction {
  linalg::GenericOp op;
  Operation *combiner;
  TypedAttr identity;
};


/// Matches a reduction over trailing loops whose payload yields
/// `combiner(out, x)` with x independent of `out`.
std::optional<Reduction> matchReduction(linalg::GenericOp op) {
  if (op.getNumDpsInits() != 1 || op.getNumReductionLoops() == 0)
    return std::nullopt;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  unsigned parallel = op.getNumParallelLoops();
  for (auto [i, iterator] : llvm::enumerate(iterators))
    if ((i < parallel) != (iterator == utils::IteratorType::parallel))
      return std::nullopt;
  Block &payload = op.getRegion().front();
  BlockArgument out = payload.getArguments().back();
  Value yielded = payload.getTerminator()->getOperand(0);
  Operation *combiner = yielded.getDefiningOp();
  if (!combiner || combiner->getNumOperands() != 2 || !out.hasOneUse() ||
      out.getUses().begin()->getOwner() != combiner)
    return std::nullopt;
  TypedAttr identity = reductionIdentity(combiner, out.getType());
  if (!identity)
    return std::nullopt;
  return Reduction{op, combiner, identity};
}

/// A fusion whose reductions share one row space and whose results are
/// either whole rows or one value per row.
struct RowFusion {
  SmallVector<int64_t> rows, columns;
  SmallVector<Reduction> reductions;
  /// Per result: computed at every element of the row space (true) or once
  /// per row.
  SmallVector<bool> fullRow;
};

int64_t product(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// The op computing `value`, through reshapes.
Operation *producerOf(Value value) {
  Operation *def = value.getDefiningOp();
  while (def && isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(def))
    def = def->getOperand(0).getDefiningOp();
  return def;
}

/// `shape` without its unit dimensions.
SmallVector<int64_t> dropUnits(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> kept;
  llvm::copy_if(shape, std::back_inserter(kept), [](int64_t d) { return d != 1; });
  return kept;
}

/// The results of `map` with every loop of range 1 written as the constant
/// 0, so that maps reading a keep-dims reduction as `(d0, 0)` and as
/// `(d0, d1)` over a unit d1 compare equal.
SmallVector<AffineExpr> normalized(AffineMap map, ArrayRef<int64_t> ranges) {
  SmallVector<AffineExpr> results;
  for (AffineExpr expr : map.getResults()) {
    if (auto dim = dyn_cast<AffineDimExpr>(expr); dim && ranges[dim.getPosition()] == 1)
      expr = getAffineConstantExpr(0, map.getContext());
    results.push_back(expr);
  }
  return results;
}

/// Whether every use of `reduction`'s result reads it at the row being
/// computed: by a generic over the row space (or over the rows alone) that
/// indexes it as the reduction writes it.
bool usedPerRow(Reduction reduction, ArrayRef<int64_t> rows,
                ArrayRef<Value> results) {
  SmallVector<AffineExpr> written = normalized(reduction.op.getIndexingMapsArray().back(),
                                               reduction.op.getStaticLoopRanges());
  for (OpOperand &use : reduction.op->getResult(0).getUses()) {
    Operation *user = use.getOwner();
    if (isa<FusionOp, YieldOp>(user) || llvm::is_contained(results, use.get()))
      continue;
    auto generic = dyn_cast<linalg::GenericOp>(user);
    if (!generic)
      return false;
    SmallVector<int64_t> ranges = generic.getStaticLoopRanges();
    if (ranges.size() < rows.size() || ArrayRef(ranges).take_front(rows.size()) != rows)
      return false;
    if (normalized(generic.getMatchingIndexingMap(&use), ranges) != written)
      return false;
  }
  return true;
}

FailureOr<RowFusion> analyze(FusionKernels &state, ArrayRef<Value> results) {
  // The ops `results` are computed from, up to tensors earlier kernels
  // materialized: only their reductions decide the rows.
  llvm::SmallPtrSet<Operation *, 16> needed;
  SmallVector<Value> work(results.begin(), results.end());
  while (!work.empty()) {
    Value value = work.pop_back_val();
    Operation *def = value.getDefiningOp();
    if (!def || state.materialized.contains(value) || !needed.insert(def).second)
      continue;
    llvm::append_range(work, def->getOperands());
  }
  RowFusion row;
  WalkResult walk = state.fusion.getBody().walk([&](linalg::GenericOp op) {
    // A reduction an earlier kernel computed (a library product) is read,
    // not reduced again.
    if (op.getNumReductionLoops() == 0 || state.materialized.contains(op->getResult(0)) ||
        !needed.contains(op))
      return WalkResult::advance();
    std::optional<Reduction> reduction = matchReduction(op);
    if (!reduction)
      return WalkResult::interrupt();
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    ArrayRef<int64_t> rows = ArrayRef(ranges).take_front(op.getNumParallelLoops());
    ArrayRef<int64_t> columns = ArrayRef(ranges).drop_front(op.getNumParallelLoops());
    if (row.reductions.empty()) {
      row.rows.assign(rows.begin(), rows.end());
      row.columns.assign(columns.begin(), columns.end());
    } else if (rows != ArrayRef(row.rows) || columns != ArrayRef(row.columns)) {
      return WalkResult::interrupt();
    }
    row.reductions.push_back(*reduction);
    return WalkResult::advance();
  });
  if (walk.wasInterrupted() || row.reductions.empty() || ShapedType::isDynamicShape(row.rows) ||
      ShapedType::isDynamicShape(row.columns))
    return failure();
  for (Reduction reduction : row.reductions)
    if (!usedPerRow(reduction, row.rows, results))
      return failure();

  int64_t rows = product(row.rows), columns = product(row.columns);
  for (Value result : results) {
    int64_t elements = llvm::cast<ShapedType>(result.getType()).getNumElements();
    auto generic = dyn_cast_or_null<linalg::GenericOp>(producerOf(result));
    if (!generic)
      return failure();
    SmallVector<int64_t> ranges = generic.getStaticLoopRanges();
    SmallVector<int64_t> full(row.rows);
    llvm::append_range(full, row.columns);
    AffineMap out = generic.getIndexingMapsArray().back();
    // Unit dimensions do not change row-major order, so a result whose
    // loops are the row space's up to unit dimensions is laid out as rows.
    if (elements == rows * columns && generic.getNumReductionLoops() == 0 &&
        dropUnits(ranges) == dropUnits(full) && out.isIdentity()) {
      row.fullRow.push_back(true);
    } else if (elements == rows &&
               ((generic.getNumReductionLoops() == 0 && out.isIdentity() &&
                 dropUnits(ranges) == dropUnits(row.rows)) ||
                llvm::any_of(row.reductions,
                             [&](Reduction r) { return r.op == generic; }))) {
      row.fullRow.push_back(false);
    } else {
      return failure();
    }
  }
  return row;
}

/// Emits the row kernel's code for one fusion.
class RowKernelEmitter {
public:
  RowKernelEmitter(FusionKernels &state, const RowFusion &row, ArrayRef<Value> results,
                   KernelBuilder &kernel, ElementalEmitter &emitter, int64_t lanes,
                   int64_t groupSize, int64_t rowsPerBlock)
      : state(state), row(row), results(results), kernel(kernel), emitter(emitter),
        b(kernel.getBuilder()), loc(kernel.getLoc()), lanes(lanes), groupSize(groupSize),
        rowsPerBlock(rowsPerBlock) {}

  LogicalResult emit();

private:
  Value index(int64_t value) { return arith::ConstantIndexOp::create(b, loc, value); }

  Value combine(Reduction reduction, Value lhs, Value rhs) {
    IRMapping mapping;
    Block &payload = reduction.op.getRegion().front();
    Value out = payload.getArguments().back();
    Value x = reduction.combiner->getOperand(0) == out ? reduction.combiner->getOperand(1)
                                                       : reduction.combiner->getOperand(0);
    mapping.map(out, lhs);
    mapping.map(x, rhs);
    return b.clone(*reduction.combiner, mapping)->getResult(0);
  }

  /// Combines `value` over the group's threads; every thread gets the result.
  Value reduceGroup(Reduction reduction, Value value, Value shared);

  /// The thread's chunk `chunk` as indices into the row space, built once
  /// per chunk so that every phase asks the emitter for the same indices
  /// (and finds the values earlier phases computed).
  ArrayRef<LaneIndex> fullIndex(Value chunk) {
    SmallVector<LaneIndex> &indices = chunkIndices[chunk];
    if (indices.empty()) {
      indices.assign(rowIndex.begin(), rowIndex.end());
      LaneIndex column{arith::MulIOp::create(b, loc, chunk, index(lanes)), lanes > 1 ? 1 : 0,
                       lanes};
      llvm::append_range(indices, emitter.delinearize(column, row.columns));
    }
    return indices;
  }

  /// Combines this thread's contributions to `reduction` over `chunks`.
  FailureOr<Value> accumulate(Reduction reduction, Value acc, Value chunk, Value valid);

  LogicalResult storeFull(unsigned result, Value chunk, Value valid);

  FusionKernels &state;
  const RowFusion &row;
  ArrayRef<Value> results;
  KernelBuilder &kernel;
  ElementalEmitter &emitter;
  OpBuilder &b;
  Location loc;
  int64_t lanes, groupSize, rowsPerBlock;

  Value lane, rowNumber, inRange;
  SmallVector<LaneIndex> rowIndex;
  llvm::DenseMap<Value, SmallVector<LaneIndex>> chunkIndices;
};

Value RowKernelEmitter::reduceGroup(Reduction reduction, Value value, Value shared) {
  int64_t width = std::min(groupSize, kWarp);
  Value warpWidth = arith::ConstantIntOp::create(b, loc, kWarp, 32);
  for (int64_t offset = width / 2; offset >= 1; offset /= 2) {
    Value distance = arith::ConstantIntOp::create(b, loc, offset, 32);
    auto shuffle = gpu::ShuffleOp::create(b, loc, value, distance, warpWidth,
                                          gpu::ShuffleMode::XOR);
    value = combine(reduction, value, shuffle.getShuffleResult());
  }
  if (groupSize <= kWarp)
    return value;
  // Across warps: each warp's first thread leaves its value in shared
  // memory; after the barrier every thread combines them all (the reads are
  // broadcasts, one transaction each).
  Value thread = kernel.threadId();
  Value warp = arith::DivUIOp::create(b, loc, thread, index(kWarp));
  Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                      arith::RemUIOp::create(b, loc, thread, index(kWarp)),
                                      index(0));
  auto leader = scf::IfOp::create(b, loc, first, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(leader.thenBlock());
    memref::StoreOp::create(b, loc, value, shared, ValueRange{warp});
  }
  gpu::BarrierOp::create(b, loc);
  Value total = arith::ConstantOp::create(b, loc, reduction.identity);
  for (int64_t w = 0; w < groupSize / kWarp; ++w)
    total = combine(reduction, total, memref::LoadOp::create(b, loc, shared, ValueRange{index(w)}));
  return total;
}

FailureOr<Value> RowKernelEmitter::accumulate(Reduction reduction, Value acc, Value chunk,
                                              Value valid) {
  Value identity = arith::ConstantOp::create(b, loc, reduction.identity);
  FailureOr<SmallVector<Lanes>> contribution =
      emitter.emitPayload(reduction.op, fullIndex(chunk), {Lanes{{identity}}});
  if (failed(contribution))
    return failure();
  for (int64_t l = 0; l < lanes; ++l) {
    Value value = (*contribution)[0].lane(l);
    if (valid)
      value = arith::SelectOp::create(b, loc, valid, value, identity);
    acc = combine(reduction, acc, value);
  }
  return acc;
}

LogicalResult RowKernelEmitter::storeFull(unsigned result, Value chunk, Value valid) {
  SmallVector<LaneIndex> indices(fullIndex(chunk));
  auto type = llvm::cast<RankedTensorType>(results[result].getType());
  SmallVector<int64_t> full(row.rows);
  llvm::append_range(full, row.columns);
  if (type.getShape() != ArrayRef(full)) {
    LaneIndex linear =
        emitter.add(emitter.mul(emitter.linearize(rowIndex, row.rows), product(row.columns)),
                    emitter.linearize(ArrayRef(indices).drop_front(rowIndex.size()), row.columns));
    indices = emitter.delinearize(linear, type.getShape());
  }
  FailureOr<Lanes> value = emitter.emit(results[result], indices);
  if (failed(value))
    return failure();
  Value guard = inRange;
  if (valid)
    guard = guard ? arith::AndIOp::create(b, loc, guard, valid) : valid;
  if (!guard) {
    emitter.store(*value, kernel.getResult(result), indices);
    return success();
  }
  auto store = scf::IfOp::create(b, loc, guard, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard insertion(b);
  b.setInsertionPointToStart(store.thenBlock());
  emitter.store(*value, kernel.getResult(result), indices);
  return success();
}

LogicalResult RowKernelEmitter::emit() {
  int64_t rows = product(row.rows);
  int64_t chunks = product(row.columns) / lanes;
  Value thread = kernel.threadId();
  Value block = kernel.blockId();
  if (rowsPerBlock > 1) {
    lane = arith::RemUIOp::create(b, loc, thread, index(groupSize));
    Value group = arith::DivUIOp::create(b, loc, thread, index(groupSize));
    rowNumber = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, block, index(rowsPerBlock)), group);
    // Groups past the last row compute the last row again (every lane of a
    // warp must take part in its shuffles) but store nothing.
    if (rows % rowsPerBlock != 0) {
      inRange = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, rowNumber, index(rows));
      rowNumber = arith::MinUIOp::create(b, loc, rowNumber, index(rows - 1));
    }
  } else {
    lane = thread;
    rowNumber = block;
  }
  rowIndex = emitter.delinearize(emitter.uniform(rowNumber), row.rows);

  SmallVector<Value> shared;
  if (groupSize > kWarp)
    for (Reduction reduction : row.reductions)
      shared.push_back(kernel.addSharedBuffer(MemRefType::get(
          {kWarp}, reduction.identity.getType(), AffineMap(),
          gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup))));

  int64_t slots = llvm::divideCeil(chunks, groupSize);
  bool unrolled = slots <= kMaxSlots;
  // The chunks of the unrolled form, clamped into the row (a chunk past its
  // end reads the last one and counts for nothing).
  SmallVector<Value> chunkOf, validOf;
  if (unrolled)
    for (int64_t k = 0; k < slots; ++k) {
      Value chunk = arith::AddIOp::create(b, loc, lane, index(k * groupSize));
      Value valid;
      if ((k + 1) * groupSize > chunks) {
        valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, chunk, index(chunks));
        chunk = arith::MinUIOp::create(b, loc, chunk, index(chunks - 1));
      }
      chunkOf.push_back(chunk);
      validOf.push_back(valid);
    }

  for (auto [r, rowReduction] : llvm::enumerate(row.reductions)) {
    Reduction reduction = rowReduction;
    Value acc = arith::ConstantOp::create(b, loc, reduction.identity);
    if (unrolled) {
      for (int64_t k = 0; k < slots; ++k) {
        FailureOr<Value> next = accumulate(reduction, acc, chunkOf[k], validOf[k]);
        if (failed(next))
          return failure();
        acc = *next;
      }
    } else {
      auto loop = scf::ForOp::create(b, loc, lane, index(chunks), index(groupSize), acc);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      FailureOr<Value> next =
          accumulate(reduction, loop.getRegionIterArgs()[0], loop.getInductionVar(), {});
      if (failed(next))
        return failure();
      scf::YieldOp::create(b, loc, *next);
      b.setInsertionPointAfter(loop);
      acc = loop.getResult(0);
    }
    Value total = reduceGroup(reduction, acc, shared.empty() ? Value() : shared[r]);
    // The reduction's own init (a fill, or a tensor it accumulates onto).
    OpOperand *init = reduction.op.getDpsInitOperand(0);
    SmallVector<LaneIndex> at;
    for (AffineExpr expr : reduction.op.getMatchingIndexingMap(init).getResults()) {
      if (auto dim = dyn_cast<AffineDimExpr>(expr))
        at.push_back(rowIndex[dim.getPosition()]);
      else
        at.push_back(emitter.constant(cast<AffineConstantExpr>(expr).getValue()));
    }
    FailureOr<Lanes> initial = emitter.emit(init->get(), at);
    if (failed(initial))
      return failure();
    emitter.bindUniform(reduction.op->getResult(0), combine(reduction, initial->lane(0), total));
  }

  for (auto [r, result] : llvm::enumerate(results)) {
    if (!row.fullRow[r]) {
      auto type = llvm::cast<RankedTensorType>(result.getType());
      SmallVector<LaneIndex> indices = emitter.delinearize(emitter.uniform(rowNumber), type.getShape());
      FailureOr<Lanes> value = emitter.emit(result, indices);
      if (failed(value))
        return failure();
      Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, index(0));
      Value guard = inRange ? arith::AndIOp::create(b, loc, first, inRange) : first;
      auto store = scf::IfOp::create(b, loc, guard, /*withElseRegion=*/false);
      OpBuilder::InsertionGuard insertion(b);
      b.setInsertionPointToStart(store.thenBlock());
      emitter.store(*value, kernel.getResult(r), indices);
      continue;
    }
    if (unrolled) {
      for (int64_t k = 0; k < slots; ++k)
        if (failed(storeFull(r, chunkOf[k], validOf[k])))
          return failure();
      continue;
    }
    auto loop = scf::ForOp::create(b, loc, lane, index(chunks), index(groupSize));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    if (failed(storeFull(r, loop.getInductionVar(), {})))
      return failure();
  }
  return success();
}

/// Elements per chunk: 16 bytes of 32-bit values when the columns allow.
int64_t chooseLanes(ArrayRef<int64_t> columns, ArrayRef<Value> results) {
  int64_t widest = 4;
  for (Value result : results)
    widest = std::max<int64_t>(
        widest, llvm::divideCeil(
                    llvm::cast<ShapedType>(result.getType()).getElementType().getIntOrFloatBitWidth(), 8));
  int64_t lanes = std::max<int64_t>(1, 16 / widest);
  int64_t columnsTotal = product(columns);
  while (lanes > 1 && (columns.empty() || columns.back() % lanes != 0 || columnsTotal % lanes))
    lanes /= 2;
  return lanes;
}

} // namespace

FailureOr<bool> emitRowKernel(FusionKernels &state, ArrayRef<Value> results) {
  FailureOr<RowFusion> row = analyze(state, results);
  if (failed(row))
    return false;
  int64_t lanes = chooseLanes(row->columns, results);
  int64_t chunks = product(row->columns) / lanes;
  int64_t rows = product(row->rows);
  // A power-of-two group: a part of a warp for short rows, a warp, or a
  // block with about kSlotsPerThread chunks per thread.
  int64_t groupSize;
  if (chunks <= kWarp * kMaxSlots)
    groupSize = std::min<int64_t>(kWarp, llvm::PowerOf2Ceil(chunks));
  else
    groupSize = std::clamp<int64_t>(llvm::PowerOf2Ceil(llvm::divideCeil(chunks, kSlotsPerThread)),
                                    2 * kWarp, kMaxBlock);
  int64_t rowsPerBlock = groupSize <= kWarp ? kRowsBlock / groupSize : 1;
  rowsPerBlock = std::min<int64_t>(rowsPerBlock, llvm::PowerOf2Ceil(rows));
  int64_t block = groupSize * rowsPerBlock;
  int64_t grid = llvm::divideCeil(rows, rowsPerBlock);

  SmallVector<Type> types = llvm::map_to_vector(results, [](Value v) { return v.getType(); });
  KernelBuilder kernel(state.module, state.newKernelName(), state.fusion.getLoc(), types,
                       {block, 1, 1});
  ElementalEmitter emitter = state.makeEmitter(kernel, lanes);
  RowKernelEmitter rowEmitter(state, *row, results, kernel, emitter, lanes, groupSize,
                              rowsPerBlock);
  if (failed(rowEmitter.emit()))
    return failure();
  ValueRange launched = kernel.launch(state.main, {grid, 1, 1});
  for (auto [result, value] : llvm::zip(results, launched))
    state.materialized[result] = value;
  return true;
}

} // namespace kiln
