//===- ConcatInPlace.cpp - Concatenations that extend one another, in place ===//
//
// See KilnConcatInPlacePass in Passes.td.
//
//===----------------------------------------------------------------------===//
#include "codegen/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

#include "llvm/ADT/DenseMap.h"

namespace kiln {
#define GEN_PASS_DEF_KILNCONCATINPLACEPASS
#include "codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// A concatenation as kiln-lower-to-linalg writes it: its parts inserted one
/// after another along `axis` into a tensor.empty that they fill.
struct Concat {
  SmallVector<tensor::InsertSliceOp> parts;
  int64_t axis = 0;
  RankedTensorType type;
  /// The concatenation that this one extends in place, and the one that
  /// extends it, if any.
  Concat *extended = nullptr, *extendedBy = nullptr;

  Value result() { return parts.back().getResult(); }
};

/// The concatenation whose first part `first` inserts, or nothing.
std::optional<Concat> matchConcat(tensor::InsertSliceOp first) {
  if (!first.getDest().getDefiningOp<tensor::EmptyOp>())
    return std::nullopt;
  Concat concat;
  concat.type = first.getDestType();
  if (!concat.type.hasStaticShape())
    return std::nullopt;
  ArrayRef<int64_t> shape = concat.type.getShape();
  // The axis: the one dimension that the first part does not fill.
  ArrayRef<int64_t> sizes = first.getStaticSizes();
  auto partial = llvm::make_filter_range(llvm::seq<int64_t>(0, shape.size()),
                                         [&](int64_t i) { return sizes[i] != shape[i]; });
  if (llvm::range_size(partial) != 1)
    return std::nullopt;
  concat.axis = *partial.begin();

  int64_t filled = 0;
  for (tensor::InsertSliceOp part = first;;) {
    ArrayRef<int64_t> offsets = part.getStaticOffsets();
    if (part.getDestType() != concat.type || ShapedType::isDynamicShape(offsets) ||
        ShapedType::isDynamicShape(part.getStaticSizes()) ||
        !llvm::all_of(part.getStaticStrides(), [](int64_t s) { return s == 1; }))
      return std::nullopt;
    for (auto [i, offset, size] : llvm::enumerate(offsets, part.getStaticSizes())) {
      bool along = static_cast<int64_t>(i) == concat.axis;
      if (along ? offset != filled : (offset != 0 || size != shape[i]))
        return std::nullopt;
    }
    filled += part.getStaticSizes()[concat.axis];
    concat.parts.push_back(part);
    if (!part->hasOneUse())
      break;
    auto next = dyn_cast<tensor::InsertSliceOp>(*part->user_begin());
    if (!next || next.getDest() != part.getResult())
      break;
    part = next;
  }
  if (filled != shape[concat.axis] || concat.parts.size() < 2)
    return std::nullopt;
  return concat;
}

/// Whether `a` and `b` insert the same value at the same place.
bool samePart(tensor::InsertSliceOp a, tensor::InsertSliceOp b) {
  return a.getSource() == b.getSource() && a.getStaticOffsets() == b.getStaticOffsets() &&
         a.getStaticSizes() == b.getStaticSizes();
}

/// Whether `longer`'s first parts are all of `shorter`'s, along the same
/// axis of tensors that differ only in that axis.
bool isPrefix(const Concat &shorter, const Concat &longer) {
  if (shorter.axis != longer.axis || shorter.parts.size() >= longer.parts.size() ||
      shorter.type.getElementType() != longer.type.getElementType() ||
      shorter.type.getRank() != longer.type.getRank())
    return false;
  for (int64_t i = 0, e = shorter.type.getRank(); i < e; ++i)
    if (i != shorter.axis && shorter.type.getDimSize(i) != longer.type.getDimSize(i))
      return false;
  return llvm::all_of(llvm::seq<size_t>(0, shorter.parts.size()), [&](size_t i) {
    return samePart(shorter.parts[i], longer.parts[i]);
  });
}

/// Whether everything that reads `value` (through views of it, at any
/// depth of nesting) comes before `point` in `block`.
bool readBefore(Value value, Operation *point, Block &block) {
  SmallVector<Value> worklist = {value};
  while (!worklist.empty()) {
    Value current = worklist.pop_back_val();
    for (Operation *user : current.getUsers()) {
      if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp, tensor::ExtractSliceOp,
              tensor::CastOp>(user)) {
        worklist.push_back(user->getResult(0));
        continue;
      }
      Operation *top = block.findAncestorOpInBlock(*user);
      if (!top || !top->isBeforeInBlock(point))
        return false;
    }
  }
  return true;
}

/// Rebuilds the chain that starts at `first` in one tensor of its last
/// concatenation's type: each concatenation inserts only the parts that the
/// one it extends does not have, and the shorter ones are views of the
/// leading part of that tensor.
void rebuildChain(Concat *first) {
  Concat *last = first;
  while (last->extendedBy)
    last = last->extendedBy;
  OpBuilder b(first->parts.front());
  Location loc = first->parts.front().getLoc();
  Value grown = tensor::EmptyOp::create(b, loc, last->type.getShape(),
                                        last->type.getElementType());
  SmallVector<Operation *> dead;
  for (Concat *concat = first; concat; concat = concat->extendedBy) {
    size_t shared = concat->extended ? concat->extended->parts.size() : 0;
    for (auto [i, part] : llvm::enumerate(concat->parts)) {
      dead.push_back(part);
      if (i < shared)
        continue;
      b.setInsertionPoint(part);
      grown = tensor::InsertSliceOp::create(b, part.getLoc(), part.getSource(), grown,
                                            part.getMixedOffsets(), part.getMixedSizes(),
                                            part.getMixedStrides());
    }
    Value value = grown;
    if (concat != last) {
      b.setInsertionPointAfterValue(grown);
      SmallVector<OpFoldResult> zeros(concat->type.getRank(), b.getIndexAttr(0));
      SmallVector<OpFoldResult> ones(concat->type.getRank(), b.getIndexAttr(1));
      SmallVector<OpFoldResult> sizes = getAsIndexOpFoldResult(b.getContext(),
                                                               concat->type.getShape());
      value = tensor::ExtractSliceOp::create(b, loc, concat->type, grown, zeros, sizes, ones);
    }
    concat->result().replaceAllUsesWith(value);
  }
  // Each old part is used by the next one of its concatenation only.
  for (Operation *op : llvm::reverse(dead)) {
    Value dest = cast<tensor::InsertSliceOp>(op).getDest();
    op->erase();
    if (Operation *empty = dest.getDefiningOp<tensor::EmptyOp>(); empty && empty->use_empty())
      empty->erase();
  }
}

struct KilnConcatInPlacePass : impl::KilnConcatInPlacePassBase<KilnConcatInPlacePass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.getBody().empty() || !func.getBody().hasOneBlock())
      return;
    Block &block = func.getBody().front();

    // Concatenations in block order, indexed by the value of their first part.
    std::vector<std::unique_ptr<Concat>> concats;
    llvm::DenseMap<Value, SmallVector<Concat *>> byFirstPart;
    for (Operation &op : block) {
      auto insert = dyn_cast<tensor::InsertSliceOp>(op);
      if (!insert)
        continue;
      if (std::optional<Concat> concat = matchConcat(insert)) {
        concats.push_back(std::make_unique<Concat>(std::move(*concat)));
        byFirstPart[insert.getSource()].push_back(concats.back().get());
      }
    }

    // Each concatenation extends the longest earlier one that it starts
    // with, when nothing reads that one after it starts writing its own
    // parts (then the shared tensor needs no copy) and no other one extends
    // it already.
    for (auto &concat : concats) {
      tensor::InsertSliceOp first = concat->parts.front();
      Concat *best = nullptr;
      for (Concat *candidate : byFirstPart[first.getSource()]) {
        if (candidate == concat.get() || candidate->extendedBy ||
            !isPrefix(*candidate, *concat))
          continue;
        Operation *firstOwn = concat->parts[candidate->parts.size()];
        if (!candidate->parts.back()->isBeforeInBlock(firstOwn) ||
            !readBefore(candidate->result(), firstOwn, block))
          continue;
        if (!best || candidate->parts.size() > best->parts.size())
          best = candidate;
      }
      if (best) {
        best->extendedBy = concat.get();
        concat->extended = best;
      }
    }

    for (auto &concat : concats)
      if (!concat->extended && concat->extendedBy)
        rebuildChain(concat.get());
  }
};

} // namespace
} // namespace kiln
