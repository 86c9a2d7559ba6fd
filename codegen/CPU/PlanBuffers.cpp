//===- PlanBuffers.cpp - static liveness-based buffer plan ----------------===//
//
// Places a function's statically shaped intermediate buffers in one arena.
// Every buffer gets a live range over the ops of the entry block, and the
// buffers are packed greedily by size (largest first, lowest aligned offset
// that is free for the whole live range), so buffers that are never live at
// the same time share memory. An elementwise linalg.generic may write its
// result over an input that dies there (in-place reuse).
//
//===----------------------------------------------------------------------===//
#include "codegen/ArenaPacking.h"
#include "codegen/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"
#include "mlir/Interfaces/DestinationStyleOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/EquivalenceClasses.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/MathExtras.h"

#include <limits>
#include <optional>

namespace kiln {
#define GEN_PASS_DEF_KILNPLANBUFFERSPASS
#include "codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// Alignment of the arena and of every offset in it: a cache line, and at
/// least the alignment any element type or vector load needs on CPUs.
constexpr int64_t kArenaAlignment = 64;
constexpr unsigned kBitsPerByte = 8;

/// Function attributes read by kilnc.
constexpr llvm::StringLiteral kPeakBytesAttr = "kiln.peak_intermediate_bytes";
constexpr llvm::StringLiteral kPlannedCountAttr = "kiln.intermediate_buffers";
constexpr llvm::StringLiteral kUnplannedCountAttr = "kiln.unplanned_buffers";
constexpr llvm::StringLiteral kArenaAttr = "kiln.arena";

/// Bytes one element of `type` occupies once finalize-memref-to-llvm has
/// lowered the buffer. The lowering sizes an allocation with LLVM's alloc
/// size of the element type, which is the store size rounded up to a power
/// of two for integers and floats: i1 and i8 take 1 byte, i24 takes 4, f80
/// takes 16. `index` is as wide as the data layout says. Other element types
/// (vectors, complex numbers, memrefs) are not planned.
std::optional<int64_t> getElementStorageBytes(Type type,
                                              const DataLayout &layout) {
  uint64_t bits;
  if (llvm::isa<IndexType>(type))
    bits = layout.getTypeSizeInBits(type);
  else if (type.isIntOrFloat())
    bits = type.getIntOrFloatBitWidth();
  else
    return std::nullopt;
  return static_cast<int64_t>(
      llvm::PowerOf2Ceil(llvm::divideCeil(bits, kBitsPerByte)));
}

/// Whether a value of `type` could carry the address of a buffer, so that an
/// op producing it from a buffer would create an alias this pass cannot see.
bool mayHoldAddress(Type type) {
  return !type.isIntOrIndexOrFloat() &&
         !llvm::isa<VectorType, ComplexType>(type);
}

/// The memref that `value` is a view of, or null if `value` is not a view.
Value getViewSource(Value value) {
  if (auto view = value.getDefiningOp<ViewLikeOpInterface>();
      view && view.getViewDest() == value)
    return view.getViewSource();
  // memref.transpose only permutes strides but does not implement the
  // interface.
  if (auto transpose = value.getDefiningOp<memref::TransposeOp>())
    return transpose.getIn();
  return {};
}

/// How one use of a buffer (or of a view of it) affects the plan.
enum class UseKind {
  /// Reads or writes the buffer, or is an op the pass does not know; the
  /// buffer must stay live until this use.
  Access,
  /// Creates a view of the buffer; the view's uses are the buffer's uses.
  Alias,
  /// The buffer may be used after the last use the pass can see (it is
  /// returned, passed to a call, stored, freed, or forwarded into a region).
  Escape,
};

/// Classifies `use`; for UseKind::Alias, `alias` is set to the new view.
UseKind classifyUse(OpOperand &use, Value &alias) {
  Operation *user = use.getOwner();
  Value buffer = use.get();

  if (auto view = llvm::dyn_cast<ViewLikeOpInterface>(user);
      view && view.getViewSource() == buffer) {
    alias = view.getViewDest();
    return UseKind::Alias;
  }
  // A view too, although without the interface (see getViewSource).
  if (auto transpose = llvm::dyn_cast<memref::TransposeOp>(user)) {
    alias = transpose.getResult();
    return UseKind::Alias;
  }

  // A runtime kernel that uses the buffer during the call only.
  if (llvm::isa<CallOpInterface>(user) && user->hasAttr(kNoCaptureCallAttr))
    return UseKind::Access;
  // Leaving the region (func.return, scf.yield, a branch) or the function.
  if (user->hasTrait<OpTrait::IsTerminator>() ||
      llvm::isa<CallOpInterface>(user))
    return UseKind::Escape;
  // The address leaves as an integer and may be turned back into a pointer,
  // unless it only goes to such kernels, as it is or offset by a constant
  // (an element's address): then their calls are the uses.
  // An address offset by a constant: the address is its first operand.
  auto isOffset = [](Operation *op, Value address) {
    return llvm::isa<arith::AddIOp>(op) && op->getOperand(0) == address &&
           matchPattern(op->getOperand(1), m_Constant());
  };
  bool isAddress = llvm::isa<memref::ExtractAlignedPointerAsIndexOp>(user);
  if (isAddress || (llvm::isa<IndexType>(buffer.getType()) && isOffset(user, buffer))) {
    Value address = user->getResult(0);
    if (llvm::all_of(address.getUsers(), [&](Operation *next) {
          return (llvm::isa<CallOpInterface>(next) && next->hasAttr(kNoCaptureCallAttr)) ||
                 isOffset(next, address);
        })) {
      alias = address;
      return UseKind::Alias;
    }
    return UseKind::Escape;
  }
  if (llvm::any_of(user->getResultTypes(), mayHoldAddress))
    return UseKind::Escape;

  // A destination-style op (linalg) reads its inputs and writes its inits,
  // whether or not its payload actually uses them, and cannot capture them.
  if (llvm::isa<DestinationStyleOpInterface>(user))
    return UseKind::Access;

  if (auto effectOp = llvm::dyn_cast<MemoryEffectOpInterface>(user)) {
    llvm::SmallVector<MemoryEffects::EffectInstance> effects;
    effectOp.getEffects(effects);
    bool touchesBuffer = false;
    bool writesElsewhere = false;
    for (const MemoryEffects::EffectInstance &effect : effects) {
      if (effect.getValue() == buffer) {
        // A view of the arena cannot be freed or reallocated on its own.
        if (llvm::isa<MemoryEffects::Free, MemoryEffects::Allocate>(
                effect.getEffect()))
          return UseKind::Escape;
        touchesBuffer = true;
      } else if (llvm::isa<MemoryEffects::Write>(effect.getEffect())) {
        writesElsewhere = true;
      }
    }
    // An op that writes memory and takes the buffer as an operand without
    // touching it is storing the buffer itself (memref.store of a memref).
    if (!touchesBuffer && writesElsewhere)
      return UseKind::Escape;
    return UseKind::Access;
  }

  // An op with regions but no declared effects (scf.for, scf.while) may
  // forward the buffer to block arguments, which are aliases not followed.
  if (user->getNumRegions() != 0)
    return UseKind::Escape;
  return UseKind::Access;
}

/// A statically shaped buffer allocated in the entry block that the plan
/// places in the arena.
struct Buffer {
  memref::AllocOp alloc;
  int64_t bytes;
  /// Live range in positions of the entry block's ops, both ends included:
  /// from the alloc to the last op that uses the buffer or a view of it.
  unsigned begin;
  unsigned end;
  /// Position of the first op after the alloc that uses the buffer or a
  /// view of it; `begin` when the buffer is unused.
  unsigned firstUse;
};

/// Positions of the entry block's ops and the analysis of its allocations.
class BufferPlanner {
public:
  explicit BufferPlanner(func::FuncOp func)
      : func(func), entry(func.getBody().front()),
        layout(DataLayout::closest(func)) {
    for (Operation &op : entry) {
      positions[&op] = ops.size();
      ops.push_back(&op);
    }
  }

  /// Collects the plannable buffers and counts the static allocations of
  /// the entry block that cannot be planned.
  void collectBuffers();
  /// Merges each buffer that an elementwise op writes over a dying input of
  /// the same size into the input's slot.
  void findInPlaceReuse();
  /// Assigns offsets, greedy by size; returns the arena size.
  int64_t assignOffsets();
  /// Replaces the planned allocations with views of one arena.
  void rewrite(int64_t arenaBytes);

  unsigned getNumPlanned() const { return buffers.size(); }
  unsigned getNumUnplanned() const { return numUnplanned; }

private:
  std::optional<Buffer> analyzeAlloc(memref::AllocOp alloc);
  /// The planned buffer that `value` reads in element order (the buffer
  /// itself or a reshape of it), if any.
  std::optional<unsigned> getReshapedBuffer(Value value) const;
  /// The planned buffer that `value` is a view of, through any views.
  std::optional<unsigned> getViewedBuffer(Value value) const;
  /// Whether `generic`, the first use of buffer `result` and the last of
  /// buffer `donor`, can write `result` in the donor's memory.
  bool canWriteOver(linalg::GenericOp generic, unsigned donor,
                    unsigned result) const;

  func::FuncOp func;
  Block &entry;
  DataLayout layout;
  /// The entry block's ops; an op's position is its index here.
  llvm::SmallVector<Operation *> ops;
  llvm::DenseMap<Operation *, unsigned> positions;
  llvm::SmallVector<Buffer> buffers;
  llvm::DenseMap<Value, unsigned> bufferIndex;
  /// Buffers that share one slot of the arena (in-place chains).
  llvm::EquivalenceClasses<unsigned> slots;
  llvm::SmallVector<int64_t> offsets;
  unsigned numUnplanned = 0;
};

std::optional<Buffer> BufferPlanner::analyzeAlloc(memref::AllocOp alloc) {
  MemRefType type = alloc.getType();
  // memref.view only produces identity-layout memrefs in the source's
  // memory space; the arena lives in the default one.
  if (!type.getLayout().isIdentity() || type.getMemorySpace())
    return std::nullopt;
  if (alloc.getAlignment() && *alloc.getAlignment() > kArenaAlignment)
    return std::nullopt;
  std::optional<int64_t> elementBytes =
      getElementStorageBytes(type.getElementType(), layout);
  if (!elementBytes)
    return std::nullopt;
  int64_t bytes;
  if (llvm::MulOverflow(type.getNumElements(), *elementBytes, bytes))
    return std::nullopt;

  unsigned begin = positions.lookup(alloc);
  Buffer buffer{alloc, bytes, begin, begin, begin};
  unsigned firstUse = std::numeric_limits<unsigned>::max();
  llvm::SmallVector<Value> worklist = {alloc.getResult()};
  llvm::SmallPtrSet<Operation *, 8> seenViews;
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (OpOperand &use : value.getUses()) {
      // A use nested in a loop or other region keeps the buffer live for
      // the whole op that holds the region.
      Operation *topLevel = entry.findAncestorOpInBlock(*use.getOwner());
      if (!topLevel)
        return std::nullopt; // Used in another block of a CFG.
      unsigned position = positions.lookup(topLevel);
      buffer.end = std::max(buffer.end, position);
      firstUse = std::min(firstUse, position);

      Value alias;
      switch (classifyUse(use, alias)) {
      case UseKind::Escape:
        return std::nullopt;
      case UseKind::Alias:
        if (seenViews.insert(alias.getDefiningOp()).second)
          worklist.push_back(alias);
        break;
      case UseKind::Access:
        break;
      }
    }
  }
  if (firstUse != std::numeric_limits<unsigned>::max())
    buffer.firstUse = firstUse;
  return buffer;
}

void BufferPlanner::collectBuffers() {
  for (auto alloc : entry.getOps<memref::AllocOp>()) {
    // Dynamic sizes are only known at run time; they keep their own alloc
    // and are not reported.
    if (!alloc.getType().hasStaticShape())
      continue;
    std::optional<Buffer> buffer = analyzeAlloc(alloc);
    if (!buffer) {
      ++numUnplanned;
      continue;
    }
    bufferIndex[alloc.getResult()] = buffers.size();
    slots.insert(buffers.size());
    buffers.push_back(*buffer);
  }
}

std::optional<unsigned> BufferPlanner::getReshapedBuffer(Value value) const {
  // Reshapes of a contiguous identity-layout buffer keep each element at
  // the same byte offset in row-major order.
  while (Operation *def = value.getDefiningOp()) {
    if (!llvm::isa<memref::CollapseShapeOp, memref::ExpandShapeOp>(def))
      break;
    value = def->getOperand(0);
  }
  auto it = bufferIndex.find(value);
  if (it == bufferIndex.end())
    return std::nullopt;
  return it->second;
}

std::optional<unsigned> BufferPlanner::getViewedBuffer(Value value) const {
  while (Value source = getViewSource(value))
    value = source;
  auto it = bufferIndex.find(value);
  if (it == bufferIndex.end())
    return std::nullopt;
  return it->second;
}

bool BufferPlanner::canWriteOver(linalg::GenericOp generic, unsigned donor,
                                 unsigned result) const {
  const Buffer &donorBuffer = buffers[donor];
  if (donorBuffer.end != buffers[result].firstUse ||
      donorBuffer.bytes != buffers[result].bytes)
    return false;
  // The donor must not also be written by the generic...
  for (Value init : generic.getDpsInits())
    if (getViewedBuffer(init) == donor)
      return false;
  // ...nor be read at another element than the one being overwritten.
  for (Value input : generic.getDpsInputs())
    if (getViewedBuffer(input) == donor && getReshapedBuffer(input) != donor)
      return false;
  return true;
}

void BufferPlanner::findInPlaceReuse() {
  llvm::SmallVector<bool> isDonor(buffers.size(), false);
  for (auto [resultIndex, result] : llvm::enumerate(buffers)) {
    // The generic must be the first op to touch the result, so that the
    // result's memory holds nothing yet when the input is read.
    Operation *firstUser = ops[result.firstUse];
    auto generic = llvm::dyn_cast<linalg::GenericOp>(firstUser);
    if (!generic || result.firstUse == result.begin)
      continue;
    // Each iteration reads and writes the same element of every operand
    // and no iteration depends on another, so an element of the input may
    // be overwritten as soon as it has been read.
    if (!llvm::all_of(generic.getIndexingMapsArray(),
                      [](AffineMap map) { return map.isIdentity(); }) ||
        generic.getNumParallelLoops() != generic.getNumLoops())
      continue;
    Value resultValue = result.alloc.getResult();
    if (llvm::count(generic->getOperands(), resultValue) != 1 ||
        !llvm::is_contained(generic.getDpsInits(), resultValue))
      continue;

    for (Value input : generic.getDpsInputs()) {
      std::optional<unsigned> donor = getReshapedBuffer(input);
      if (!donor || *donor == resultIndex || isDonor[*donor] ||
          !canWriteOver(generic, *donor, resultIndex))
        continue;
      isDonor[*donor] = true;
      slots.unionSets(*donor, resultIndex);
      break;
    }
  }
}

int64_t BufferPlanner::assignOffsets() {
  // One live range per in-place chain, from its first buffer's allocation to
  // its last buffer's last use. The chain's buffers all have the same size.
  llvm::SmallVector<LiveRange> ranges;
  llvm::SmallVector<unsigned> leaders;
  for (const auto *chain : slots) {
    if (!chain->isLeader())
      continue;
    LiveRange range{0, std::numeric_limits<unsigned>::max(), 0};
    for (unsigned member : slots.members(*chain)) {
      const Buffer &buffer = buffers[member];
      range.bytes = buffer.bytes;
      range.begin = std::min(range.begin, buffer.begin);
      range.end = std::max(range.end, buffer.end);
    }
    ranges.push_back(range);
    leaders.push_back(chain->getData());
  }
  int64_t arenaBytes = packLiveRanges(ranges, kArenaAlignment);

  offsets.assign(buffers.size(), 0);
  for (auto [leader, range] : llvm::zip_equal(leaders, ranges))
    for (unsigned member : slots.members(leader))
      offsets[member] = range.offset;
  return arenaBytes;
}

void BufferPlanner::rewrite(int64_t arenaBytes) {
  OpBuilder builder(func.getContext());
  builder.setInsertionPointToStart(&entry);
  auto arenaType = MemRefType::get({arenaBytes}, builder.getI8Type());
  auto arenaAlloc =
      memref::AllocOp::create(builder, func.getLoc(), arenaType,
                              builder.getI64IntegerAttr(kArenaAlignment));
  // kiln-static-arena finds the arena by this mark.
  arenaAlloc->setAttr(kArenaAttr, builder.getUnitAttr());
  Value arena = arenaAlloc;
  // One constant per distinct offset, next to the arena.
  llvm::DenseMap<int64_t, Value> byteShifts;
  for (int64_t offset : offsets)
    if (!byteShifts.contains(offset))
      byteShifts[offset] =
          arith::ConstantIndexOp::create(builder, func.getLoc(), offset);

  for (auto [buffer, offset] : llvm::zip_equal(buffers, offsets)) {
    memref::AllocOp alloc = buffer.alloc;
    builder.setInsertionPoint(alloc);
    Value view =
        memref::ViewOp::create(builder, alloc.getLoc(), alloc.getType(), arena,
                               byteShifts.lookup(offset),
                               /*sizes=*/ValueRange());
    alloc.getResult().replaceAllUsesWith(view);
    alloc.erase();
  }
}

struct KilnPlanBuffersPass
    : impl::KilnPlanBuffersPassBase<KilnPlanBuffersPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;

    BufferPlanner planner(func);
    planner.collectBuffers();
    planner.findInPlaceReuse();
    int64_t arenaBytes = planner.assignOffsets();
    if (planner.getNumPlanned() != 0)
      planner.rewrite(arenaBytes);

    Builder builder(func.getContext());
    func->setAttr(kPeakBytesAttr, builder.getI64IntegerAttr(arenaBytes));
    func->setAttr(kPlannedCountAttr,
                  builder.getI64IntegerAttr(planner.getNumPlanned()));
    func->setAttr(kUnplannedCountAttr,
                  builder.getI64IntegerAttr(planner.getNumUnplanned()));
  }
};

} // namespace
} // namespace kiln
