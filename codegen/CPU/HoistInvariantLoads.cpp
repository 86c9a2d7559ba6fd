//===- HoistInvariantLoads.cpp - Loads of one element out of kernel loops -===//
//
// A loop over a row reads the row's statistics (a layer norm's mean and
// reciprocal deviation, a softmax's maximum) at the same address in every
// iteration. LLVM cannot hoist such a load while the loop stores into a
// buffer it cannot prove apart (two views of the static arena, a result
// passed in from outside), and its vectorizer then gives up on the loop as
// an unknown dependence. Kiln knows the buffers apart: every buffer a kernel
// reads or writes is a function argument, a global, an allocation of its
// own, or a planned range of the arena that overlaps another live buffer
// only where the plan reused an input in place (the same range). This pass
// moves such loads in front of the loop, and keeps a reduction's
// accumulator (loaded and stored at one address in every iteration) in a
// loop-carried value instead of memory.
//
//===----------------------------------------------------------------------===//
#include "codegen/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace kiln {
#define GEN_PASS_DEF_KILNHOISTINVARIANTLOADSPASS
#include "codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// The memory a view reads: the buffer it is a view of, and for a view of a
/// range of bytes (memref.view, as the arena's buffers are) that range.
struct Footprint {
  Value buffer;
  std::optional<int64_t> offset, size; // bytes, when known
};

std::optional<int64_t> staticBytes(MemRefType type) {
  if (!type.hasStaticShape() || !type.getElementType().isIntOrFloat())
    return std::nullopt;
  return type.getNumElements() * llvm::divideCeil(type.getElementTypeBitWidth(), 8);
}

Footprint footprintOf(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (auto view = dyn_cast<memref::ViewOp>(def)) {
      Footprint footprint = footprintOf(view.getSource());
      std::optional<int64_t> shift = getConstantIntValue(view.getByteShift());
      if (footprint.offset && shift && view.getSizes().empty()) {
        footprint.offset = *footprint.offset + *shift;
        footprint.size = staticBytes(view.getType());
      } else {
        footprint.offset = footprint.size = std::nullopt;
      }
      return footprint;
    }
    auto viewLike = dyn_cast<ViewLikeOpInterface>(def);
    if (!viewLike || viewLike.getViewSource() == value)
      break;
    value = viewLike.getViewSource();
  }
  return {value, 0, std::nullopt};
}

/// Whether `buffer` is memory of its own: a function argument (the
/// artifact's entry points take no two that overlap, but for a train step's
/// state input and its `in-place` output, which kiln-state-in-place lets one
/// elementwise update alone touch, element by element, once both are one
/// buffer), a global or an allocation.
bool isDistinctBuffer(Value buffer) {
  if (auto arg = dyn_cast<BlockArgument>(buffer))
    return isa<func::FuncOp>(arg.getOwner()->getParentOp());
  return buffer.getDefiningOp<memref::GetGlobalOp>() || buffer.getDefiningOp<memref::AllocOp>() ||
         buffer.getDefiningOp<memref::AllocaOp>();
}

bool sameBuffer(Value a, Value b) {
  if (a == b)
    return true;
  auto globalA = a.getDefiningOp<memref::GetGlobalOp>();
  auto globalB = b.getDefiningOp<memref::GetGlobalOp>();
  return globalA && globalB && globalA.getName() == globalB.getName();
}

bool mayOverlap(const Footprint &a, const Footprint &b) {
  if (!sameBuffer(a.buffer, b.buffer))
    return !isDistinctBuffer(a.buffer) || !isDistinctBuffer(b.buffer);
  if (!a.offset || !a.size || !b.offset || !b.size)
    return true;
  return *a.offset < *b.offset + *b.size && *b.offset < *a.offset + *a.size;
}

/// The buffers each op in `loop` reads and writes, or nothing when some
/// access's target is unknown.
struct Accesses {
  SmallVector<std::pair<Operation *, Footprint>> reads, writes;
};

std::optional<Accesses> accessesOf(scf::ForOp loop) {
  Accesses accesses;
  WalkResult result = loop.getBody()->walk([&](Operation *op) {
    if (isMemoryEffectFree(op) || op->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
      return WalkResult::advance();
    auto interface = dyn_cast<MemoryEffectOpInterface>(op);
    if (!interface)
      return WalkResult::interrupt();
    SmallVector<MemoryEffects::EffectInstance> effects;
    interface.getEffects(effects);
    for (const MemoryEffects::EffectInstance &effect : effects) {
      bool write = isa<MemoryEffects::Write, MemoryEffects::Free>(effect.getEffect());
      if (!write && !isa<MemoryEffects::Read>(effect.getEffect()))
        continue;
      if (!effect.getValue())
        return WalkResult::interrupt();
      (write ? accesses.writes : accesses.reads)
          .emplace_back(op, footprintOf(effect.getValue()));
    }
    return WalkResult::advance();
  });
  if (result.wasInterrupted())
    return std::nullopt;
  return accesses;
}

bool isInvariantAccess(scf::ForOp loop, Operation *access) {
  return llvm::all_of(access->getOperands(), [&](Value operand) {
    return loop.isDefinedOutsideOfLoop(operand) ||
           (isa<memref::StoreOp>(access) && operand == access->getOperand(0));
  });
}

/// A load and a later store of one address that does not change in the
/// loop (a reduction's accumulator, which linalg's loops keep in memory),
/// where nothing else in the loop touches the accumulator's buffer.
std::optional<std::pair<memref::LoadOp, memref::StoreOp>> accumulatorOf(scf::ForOp loop,
                                                                        const Accesses &accesses) {
  for (Operation &op : loop.getBody()->without_terminator()) {
    auto store = dyn_cast<memref::StoreOp>(op);
    if (!store || !isInvariantAccess(loop, store))
      continue;
    memref::LoadOp load;
    for (Operation *before = store->getPrevNode(); before && !load;
         before = before->getPrevNode())
      if (auto candidate = dyn_cast<memref::LoadOp>(before);
          candidate && candidate.getMemRef() == store.getMemRef() &&
          candidate.getIndices() == store.getIndices())
        load = candidate;
    if (!load)
      continue;
    Footprint accumulator = footprintOf(store.getMemRef());
    auto touches = [&](const std::pair<Operation *, Footprint> &access) {
      return access.first != load && access.first != store &&
             mayOverlap(access.second, accumulator);
    };
    if (llvm::none_of(accesses.reads, touches) && llvm::none_of(accesses.writes, touches))
      return std::make_pair(load, store);
  }
  return std::nullopt;
}

/// Keeps the accumulator in a loop-carried value: the load moves before the
/// loop as its initial value, the store after it.
scf::ForOp promoteAccumulator(scf::ForOp loop, memref::LoadOp load, memref::StoreOp store) {
  IRRewriter rewriter(loop);
  load->moveBefore(loop);
  Value stored = store.getValueToStore();
  auto promoted = cast<scf::ForOp>(
      *loop.replaceWithAdditionalYields(rewriter, load.getResult(),
                                        /*replaceInitOperandUsesInLoop=*/true,
                                        [&](OpBuilder &, Location, ArrayRef<BlockArgument>) {
                                          return SmallVector<Value>{stored};
                                        })
           .value());
  rewriter.setInsertionPointAfter(promoted);
  memref::StoreOp::create(rewriter, store.getLoc(), promoted.getResults().back(),
                          store.getMemRef(), store.getIndices());
  rewriter.eraseOp(store);
  return promoted;
}

/// Whether `loop` runs at least once, so that a load moved before it reads
/// nothing the loop would not have read.
bool runsAtLeastOnce(scf::ForOp loop) {
  std::optional<int64_t> lower = getConstantIntValue(loop.getLowerBound());
  std::optional<int64_t> upper = getConstantIntValue(loop.getUpperBound());
  return lower && upper && *lower < *upper;
}

struct KilnHoistInvariantLoadsPass
    : impl::KilnHoistInvariantLoadsPassBase<KilnHoistInvariantLoadsPass> {
  void runOnOperation() override {
    // Post-order: a load leaves an inner loop first, and may then leave the
    // loop around it too.
    getOperation().walk([](scf::ForOp loop) {
      if (!runsAtLeastOnce(loop))
        return;
      std::optional<Accesses> accesses = accessesOf(loop);
      if (!accesses)
        return;
      for (Operation &op : llvm::make_early_inc_range(loop.getBody()->without_terminator())) {
        auto load = dyn_cast<memref::LoadOp>(op);
        if (!load || !isInvariantAccess(loop, load))
          continue;
        Footprint read = footprintOf(load.getMemRef());
        if (llvm::none_of(accesses->writes, [&](const std::pair<Operation *, Footprint> &w) {
              return mayOverlap(read, w.second);
            }))
          load->moveBefore(loop);
      }
      while (std::optional<std::pair<memref::LoadOp, memref::StoreOp>> accumulator =
                 accumulatorOf(loop, *accesses)) {
        loop = promoteAccumulator(loop, accumulator->first, accumulator->second);
        accesses = accessesOf(loop);
        if (!accesses)
          return;
      }
    });
  }
};

} // namespace
} // namespace kiln
