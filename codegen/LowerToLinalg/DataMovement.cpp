//===- DataMovement.cpp - Lowering of reshapes, slices and gathers --------===//
#include "codegen/LowerToLinalg/Utils.h"
#include "codegen/Passes.h"
#include "dialects/kiln/KilnOps.h"

#include "mlir/IR/Matchers.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;

namespace kiln {
namespace {

// Reshapes go through a 1-D collapse and expand, which bufferize to views
// of the same buffer; rank-0 ends need no intermediate.
struct ReshapeLowering : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType from = op.getInput().getType(), to = op.getType();
    auto allDims = [](int64_t rank) {
      ReassociationIndices dims;
      for (int64_t i = 0; i < rank; ++i)
        dims.push_back(i);
      return SmallVector<ReassociationIndices>{dims};
    };
    Value value = op.getInput();
    if (from.getRank() == 0) {
      rewriter.replaceOpWithNewOp<tensor::ExpandShapeOp>(
          op, to, value, SmallVector<ReassociationIndices>{});
      return success();
    }
    if (to.getRank() == 0) {
      rewriter.replaceOpWithNewOp<tensor::CollapseShapeOp>(
          op, to, value, SmallVector<ReassociationIndices>{});
      return success();
    }
    if (from.getRank() != 1)
      value = tensor::CollapseShapeOp::create(
          rewriter, loc,
          RankedTensorType::get({from.getNumElements()}, from.getElementType()),
          value, allDims(from.getRank()));
    if (to.getRank() != 1)
      value = tensor::ExpandShapeOp::create(rewriter, loc, to, value,
                                            allDims(to.getRank()));
    rewriter.replaceOp(op, value);
    return success();
  }
};

struct TransposeLowering : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    Value init = emptyTensor(rewriter, op.getLoc(), op.getType());
    rewriter.replaceOp(op, linalg::TransposeOp::create(rewriter, op.getLoc(),
                                                       op.getInput(), init,
                                                       op.getPerm())
                               .getResult());
    return success();
  }
};

// A concat of one tensor and splat constants is padding (the gradient
// rules pad and spread cotangents with zeros this way): a generic over the
// output that reads the tensor where it lies and the constants elsewhere, so
// it is split over the threads and fuses. Other concats copy each input in
// with insert_slice.
struct PaddingConcatLowering : OpRewritePattern<ConcatOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConcatOp op,
                                PatternRewriter &rewriter) const override {
    RankedTensorType type = op.getType();
    int64_t axis = op.getAxis();
    std::optional<unsigned> tensorInput;
    SmallVector<TypedAttr> fills;
    for (auto [i, input] : llvm::enumerate(op.getInputs())) {
      DenseElementsAttr attr;
      if (matchPattern(input, m_Constant(&attr)) && attr.isSplat()) {
        fills.push_back(attr.getSplatValue<TypedAttr>());
        continue;
      }
      if (tensorInput)
        return failure();
      tensorInput = i;
      fills.push_back(TypedAttr());
    }
    if (!tensorInput)
      return failure();
    SmallVector<int64_t> offsets;
    int64_t offset = 0;
    for (Value input : op.getInputs()) {
      offsets.push_back(offset);
      offset += llvm::cast<RankedTensorType>(input.getType()).getDimSize(axis);
    }
    Value source = op.getInputs()[*tensorInput];
    int64_t sourceSize = llvm::cast<RankedTensorType>(source.getType()).getDimSize(axis);
    Value padded = generateFromIndices(
        rewriter, op.getLoc(), type,
        [&](OpBuilder &b, Location loc, SmallVector<Value> &coords) {
          Value index = coords[axis];
          auto constant = [&](int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); };
          Value value;
          for (auto [i, fill] : llvm::enumerate(fills)) {
            Value piece;
            if (fill) {
              piece = arith::ConstantOp::create(b, loc, fill);
            } else {
              // Clamped: the select below evaluates this outside the piece too.
              Value local = arith::SubIOp::create(b, loc, index, constant(offsets[i]));
              local = arith::MaxSIOp::create(b, loc, local, constant(0));
              coords[axis] = arith::MinSIOp::create(b, loc, local, constant(sourceSize - 1));
              piece = tensor::ExtractOp::create(b, loc, source, coords);
            }
            value = i == 0 ? piece
                           : Value(arith::SelectOp::create(
                                 b, loc,
                                 arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, index,
                                                       constant(offsets[i])),
                                 piece, value));
          }
          return value;
        });
    rewriter.replaceOp(op, padded);
    return success();
  }
};

// A concat of tensors one element thick along the axis (the gradient rules
// interleave stride phases this way: [N, C, Q, 1, Q, 1] side by side along
// a unit axis) is a generic over the output that reads, at position j of
// the axis, input j (each input's map holds the axis at 0). Copying each
// input in with insert_slice wrote every other element, one input at a
// time, on one thread; the generic is split over the threads and its
// inputs' producers fuse into it.
struct InterleavingConcatLowering : OpRewritePattern<ConcatOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConcatOp op,
                                PatternRewriter &rewriter) const override {
    RankedTensorType type = op.getType();
    int64_t axis = op.getAxis(), rank = type.getRank();
    if (op.getInputs().size() < 2 ||
        llvm::any_of(op.getInputs().getTypes(), [&](Type input) {
          return llvm::cast<RankedTensorType>(input).getDimSize(axis) != 1;
        }))
      return failure();
    MLIRContext *ctx = rewriter.getContext();
    SmallVector<AffineExpr> inputExprs;
    for (int64_t i = 0; i < rank; ++i)
      inputExprs.push_back(i == axis ? getAffineConstantExpr(0, ctx) : getAffineDimExpr(i, ctx));
    SmallVector<AffineMap> maps(op.getInputs().size(), AffineMap::get(rank, 0, inputExprs, ctx));
    maps.push_back(rewriter.getMultiDimIdentityMap(rank));
    Location loc = op.getLoc();
    auto generic = linalg::GenericOp::create(
        rewriter, loc, type, op.getInputs(), emptyTensor(rewriter, loc, type), maps,
        SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
        [&](OpBuilder &b, Location nloc, ValueRange args) {
          Value position = linalg::IndexOp::create(b, nloc, axis);
          size_t count = op.getInputs().size();
          Value value = args[count - 1];
          for (size_t i = count - 1; i-- > 0;) {
            Value here = arith::CmpIOp::create(b, nloc, arith::CmpIPredicate::eq, position,
                                               arith::ConstantIndexOp::create(b, nloc, i));
            value = arith::SelectOp::create(b, nloc, here, args[i], value);
          }
          linalg::YieldOp::create(b, nloc, value);
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

struct ConcatLowering : OpRewritePattern<ConcatOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConcatOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    int64_t axis = op.getAxis(), offset = 0;
    Value result = emptyTensor(rewriter, loc, type);
    for (Value input : op.getInputs()) {
      auto inputType = llvm::cast<RankedTensorType>(input.getType());
      SmallVector<OpFoldResult> offsets(type.getRank(), rewriter.getIndexAttr(0));
      offsets[axis] = rewriter.getIndexAttr(offset);
      SmallVector<OpFoldResult> sizes, strides(type.getRank(),
                                               rewriter.getIndexAttr(1));
      for (int64_t size : inputType.getShape())
        sizes.push_back(rewriter.getIndexAttr(size));
      offset += inputType.getDimSize(axis);
      if (inputType.getNumElements() == 0)
        continue;
      result = tensor::InsertSliceOp::create(rewriter, loc, input, result,
                                             offsets, sizes, strides);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

// A slice is an extract_slice with positive strides; dimensions read with a
// negative step are then reversed by a generic that writes the output in
// order and reads the reversed element with tensor.extract at computed
// indices. An indexing map with a negative coefficient would say the same,
// but tiling derives an operand's tile from its map as if every index grew
// with the loop, so a reversed map would keep the kernel on one thread (a
// convolution gradient's flipped filters: several per ResNet layer).
struct SliceLowering : OpRewritePattern<SliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SliceOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    int64_t rank = type.getRank();
    SmallVector<OpFoldResult> offsets, sizes, strides;
    SmallVector<int64_t> reversed; // dims read backwards, of more than one element
    for (int64_t i = 0; i < rank; ++i) {
      int64_t start = op.getStart()[i], step = op.getStep()[i];
      int64_t count = type.getDimSize(i);
      int64_t first = step > 0 || count == 0 ? start : start + (count - 1) * step;
      offsets.push_back(rewriter.getIndexAttr(first));
      sizes.push_back(rewriter.getIndexAttr(count));
      strides.push_back(rewriter.getIndexAttr(std::abs(step)));
      if (step < 0 && count > 1)
        reversed.push_back(i);
    }
    Value result = tensor::ExtractSliceOp::create(rewriter, loc, type, op.getInput(),
                                                  offsets, sizes, strides);
    if (!reversed.empty()) {
      Value source = result;
      result = generateFromIndices(rewriter, loc, type,
                                   [&](OpBuilder &b, Location loc, SmallVector<Value> &coords) {
                                     for (int64_t i : reversed)
                                       coords[i] = arith::SubIOp::create(
                                           b, loc,
                                           arith::ConstantIndexOp::create(
                                               b, loc, type.getDimSize(i) - 1),
                                           coords[i]);
                                     return Value(tensor::ExtractOp::create(b, loc, source, coords));
                                   });
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// In the body of a gather with index check `id`: when `index` (before
/// wrapping) is outside [-size, size), records the check (id + 1, atomic max)
/// and the index in the artifact's kiln_index_check global, which the
/// runtime reads after each run. The branch is almost never taken.
static void recordBadIndex(OpBuilder &b, Location loc, Value index, int64_t size, int64_t id) {
  Value low = arith::ConstantIndexOp::create(b, loc, -size);
  Value high = arith::ConstantIndexOp::create(b, loc, size);
  Value below = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, index, low);
  Value above = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, index, high);
  Value bad = arith::OrIOp::create(b, loc, below, above);
  scf::IfOp::create(b, loc, bad, [&](OpBuilder &then, Location loc) {
    auto type = MemRefType::get({2}, then.getI64Type());
    Value slots = memref::GetGlobalOp::create(then, loc, type, kIndexCheckSymbol);
    Value check = arith::ConstantIntOp::create(then, loc, then.getI64Type(), id + 1);
    Value first = arith::ConstantIndexOp::create(then, loc, 0);
    Value second = arith::ConstantIndexOp::create(then, loc, 1);
    memref::AtomicRMWOp::create(then, loc, arith::AtomicRMWKind::maxs, check, slots, first);
    Value value = arith::IndexCastOp::create(then, loc, then.getI64Type(), index);
    memref::AtomicRMWOp::create(then, loc, arith::AtomicRMWKind::assign, value, slots, second);
    scf::YieldOp::create(then, loc);
  });
}

/// `index` wrapped when negative and clamped to [0, size), so that no index
/// reads outside the data.
static Value wrapAndClamp(OpBuilder &b, Location loc, Value index, int64_t size) {
  return clampIndex(b, loc, wrapNegative(b, loc, index, size), size);
}

/// `indices` wrapped when negative and clamped into [0, size) by a generic
/// over them, each index once; with `checkId` (kIndexCheckAttr) an index out
/// of range is also recorded for the run to report. One size serves every
/// index; several (GatherND's and ScatterND's rows of coordinates) give the
/// size of each position along the last dimension, checked as `checkId`
/// plus that position.
static Value clampedIndices(PatternRewriter &rewriter, Location loc, Value indices,
                            ArrayRef<int64_t> sizes, IntegerAttr checkId) {
  auto indexType = cast<RankedTensorType>(indices.getType());
  int64_t rank = indexType.getRank();
  AffineMap id = rewriter.getMultiDimIdentityMap(rank);
  return linalg::GenericOp::create(
             rewriter, loc, indexType, indices, emptyTensor(rewriter, loc, indexType),
             SmallVector<AffineMap>{id, id}, SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
             [&](OpBuilder &b, Location nested, ValueRange args) {
               Value index = arith::IndexCastOp::create(b, nested, b.getIndexType(), args[0]);
               Value position = sizes.size() > 1 ? linalg::IndexOp::create(b, nested, rank - 1) : Value();
               Value clamped;
               for (auto [j, size] : llvm::enumerate(sizes)) {
                 Value here = position ? arith::CmpIOp::create(b, nested, arith::CmpIPredicate::eq, position,
                                                               arith::ConstantIndexOp::create(b, nested, j))
                                       : Value();
                 if (checkId && here) {
                   scf::IfOp::create(b, nested, here, [&](OpBuilder &then, Location loc) {
                     recordBadIndex(then, loc, index, size, checkId.getInt() + j);
                     scf::YieldOp::create(then, loc);
                   });
                 } else if (checkId) {
                   recordBadIndex(b, nested, index, size, checkId.getInt());
                 }
                 Value inRange = wrapAndClamp(b, nested, index, size);
                 clamped = clamped ? Value(arith::SelectOp::create(b, nested, here, inRange, clamped)) : inRange;
               }
               linalg::YieldOp::create(
                   b, nested, Value(arith::IndexCastOp::create(b, nested, indexType.getElementType(), clamped)));
             })
      .getResult(0);
}

// Gather: a generic over the indices wraps them when negative and clamps
// them, so a bad index can never read outside the buffer; a gather that
// carries a check id (kIndexCheckAttr, set by kilnc for CPU code) also
// reports one out of range there. A generic over the output then reads the
// clamped index through a projection and extracts from `data`. Index work is
// done once per index, not once per element gathered, and the copy loop is
// left without it, free to vectorize.
struct GatherLowering : OpRewritePattern<GatherOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GatherOp op,
                                PatternRewriter &rewriter) const override {
    MLIRContext *ctx = rewriter.getContext();
    RankedTensorType type = op.getType();
    RankedTensorType dataType = op.getData().getType();
    int64_t rank = type.getRank(), axis = op.getAxis();
    int64_t indexRank = op.getIndices().getType().getRank();
    SmallVector<AffineExpr> indexExprs;
    for (int64_t i = 0; i < indexRank; ++i)
      indexExprs.push_back(getAffineDimExpr(axis + i, ctx));
    int64_t axisSize = dataType.getDimSize(axis);
    Value indices = clampedIndices(rewriter, op.getLoc(), op.getIndices(), axisSize,
                                   op->getAttrOfType<IntegerAttr>(kIndexCheckAttr));
    auto generic = linalg::GenericOp::create(
        rewriter, op.getLoc(), type, indices,
        emptyTensor(rewriter, op.getLoc(), type),
        SmallVector<AffineMap>{AffineMap::get(rank, 0, indexExprs, ctx),
                               rewriter.getMultiDimIdentityMap(rank)},
        SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
        [&](OpBuilder &b, Location loc, ValueRange args) {
          Value index = arith::IndexCastOp::create(b, loc, b.getIndexType(), args[0]);
          SmallVector<Value> coords;
          for (int64_t i = 0; i < axis; ++i)
            coords.push_back(linalg::IndexOp::create(b, loc, i));
          coords.push_back(index);
          for (int64_t i = axis + 1; i < dataType.getRank(); ++i)
            coords.push_back(linalg::IndexOp::create(b, loc, i - 1 + indexRank));
          linalg::YieldOp::create(
              b, loc, Value(tensor::ExtractOp::create(b, loc, op.getData(), coords)));
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

// GatherElements: as Gather, the indices wrapped, clamped (and checked, with
// a check id) once each by a generic over them; then a generic over the
// result reads data at its own position with the axis coordinate replaced
// by the index there.
struct GatherElementsLowering : OpRewritePattern<GatherElementsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GatherElementsOp op, PatternRewriter &rewriter) const override {
    RankedTensorType type = op.getType();
    int64_t rank = type.getRank(), axis = op.getAxis();
    int64_t axisSize = op.getData().getType().getDimSize(axis);
    Value indices = clampedIndices(rewriter, op.getLoc(), op.getIndices(), axisSize,
                                   op->getAttrOfType<IntegerAttr>(kIndexCheckAttr));
    AffineMap id = rewriter.getMultiDimIdentityMap(rank);
    SmallVector<utils::IteratorType> parallel(rank, utils::IteratorType::parallel);
    auto generic = linalg::GenericOp::create(
        rewriter, op.getLoc(), type, indices, emptyTensor(rewriter, op.getLoc(), type),
        SmallVector<AffineMap>{id, id}, parallel, [&](OpBuilder &b, Location loc, ValueRange args) {
          SmallVector<Value> coords;
          for (int64_t d = 0; d < rank; ++d)
            coords.push_back(d == axis ? Value(arith::IndexCastOp::create(b, loc, b.getIndexType(), args[0]))
                                       : Value(linalg::IndexOp::create(b, loc, d)));
          linalg::YieldOp::create(b, loc, Value(tensor::ExtractOp::create(b, loc, op.getData(), coords)));
        });
    rewriter.replaceOp(op, generic.getResult(0));
    return success();
  }
};

// GatherND: a generic over the result reads each element's coordinates from
// the last dimension of `indices`, each wrapped when negative and clamped
// into its dimension, so that no read leaves `data`, then the element. With
// a check id, a generic over the indices first reports any out of range.
struct GatherNDLowering : OpRewritePattern<GatherNDOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GatherNDOp op, PatternRewriter &rewriter) const override {
    RankedTensorType data = op.getData().getType(), indices = op.getIndices().getType();
    int64_t batch = op.getBatchDims(), leading = indices.getRank() - 1;
    int64_t depth = indices.getShape().back();
    Value indexValues = op.getIndices();
    if (auto checkId = op->getAttrOfType<IntegerAttr>(kIndexCheckAttr))
      indexValues = clampedIndices(rewriter, op.getLoc(), indexValues,
                                   data.getShape().slice(batch, depth), checkId);
    Value gathered = generateFromIndices(
        rewriter, op.getLoc(), op.getType(),
        [&](OpBuilder &b, Location loc, SmallVector<Value> &coords) -> Value {
          SmallVector<Value> at(coords.begin(), coords.begin() + leading);
          SmallVector<Value> dataCoords(coords.begin(), coords.begin() + batch);
          for (int64_t j = 0; j < depth; ++j) {
            at.push_back(arith::ConstantIndexOp::create(b, loc, j));
            Value index = tensor::ExtractOp::create(b, loc, indexValues, at);
            at.pop_back();
            index = arith::IndexCastOp::create(b, loc, b.getIndexType(), index);
            dataCoords.push_back(wrapAndClamp(b, loc, index, data.getDimSize(batch + j)));
          }
          dataCoords.append(coords.begin() + leading, coords.end());
          return tensor::ExtractOp::create(b, loc, op.getData(), dataCoords);
        });
    rewriter.replaceOp(op, gathered);
    return success();
  }
};

/// `acc` combined with `update` as a scatter's `reduction` says ("none":
/// the update replaces it).
Value scatterCombine(OpBuilder &b, Location loc, StringRef reduction, Value acc, Value update) {
  std::optional<Combiner> combiner = llvm::StringSwitch<std::optional<Combiner>>(reduction)
                                         .Case("add", Combiner::Add)
                                         .Case("mul", Combiner::Mul)
                                         .Case("max", Combiner::Max)
                                         .Case("min", Combiner::Min)
                                         .Default(std::nullopt);
  return combiner ? combine(b, loc, *combiner, acc, update) : update;
}

/// A generic over the result, starting from `data`, with `extraLoops` more loops
/// (reduced, innermost) that visit the updates in order; `indices` is read
/// (and ignored) through `indexDims`, its dimensions' loops (-1: index 0),
/// which gives the extra loops their bounds. `body` gets the result
/// coordinates, the extra loops' indices and the value so far, and returns
/// the new value.
Value scatterInto(PatternRewriter &rewriter, Location loc, Value data, int64_t extraLoops,
                  Value indices, ArrayRef<int64_t> indexDims,
                  function_ref<Value(OpBuilder &, Location, ArrayRef<Value>, ArrayRef<Value>, Value)> body) {
  auto type = cast<RankedTensorType>(data.getType());
  int64_t rank = type.getRank(), loops = rank + extraLoops;
  SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
  iterators.append(extraLoops, utils::IteratorType::reduction);
  SmallVector<AffineExpr> exprs, indexExprs;
  for (int64_t d = 0; d < rank; ++d)
    exprs.push_back(rewriter.getAffineDimExpr(d));
  for (int64_t loop : indexDims)
    indexExprs.push_back(loop < 0 ? rewriter.getAffineConstantExpr(0)
                                  : rewriter.getAffineDimExpr(loop));
  MLIRContext *ctx = rewriter.getContext();
  return linalg::GenericOp::create(
             rewriter, loc, type, indices, data,
             SmallVector<AffineMap>{AffineMap::get(loops, 0, indexExprs, ctx),
                                    AffineMap::get(loops, 0, exprs, ctx)},
             iterators,
             [&](OpBuilder &b, Location nested, ValueRange args) {
               SmallVector<Value> coords, extra;
               for (int64_t d = 0; d < loops; ++d)
                 (d < rank ? coords : extra).push_back(linalg::IndexOp::create(b, nested, d));
               linalg::YieldOp::create(b, nested, body(b, nested, coords, extra, args[1]));
             })
      .getResult(0);
}

/// Whether `index` (wrapped when negative) equals `position` in a
/// dimension of `size`; an index outside matches nothing.
Value indexMatches(OpBuilder &b, Location loc, Value index, Value position, int64_t size) {
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, wrapNegative(b, loc, index, size),
                               position);
}

// ScatterElements: each result element visits the updates along the axis
// at its own other coordinates, in order, and takes those whose index
// names its axis coordinate. Work grows with data size times the updates'
// length along the axis.
struct ScatterElementsLowering : OpRewritePattern<ScatterElementsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ScatterElementsOp op, PatternRewriter &rewriter) const override {
    RankedTensorType data = op.getData().getType(), updates = op.getUpdates().getType();
    int64_t rank = data.getRank(), axis = op.getAxis();
    StringRef reduction = op.getReduction();
    // With a check id, an index out of range is reported (the run's outputs
    // are then invalid) and clamped; without, it writes nothing.
    Value indices = op.getIndices();
    if (auto checkId = op->getAttrOfType<IntegerAttr>(kIndexCheckAttr))
      indices = clampedIndices(rewriter, op.getLoc(), indices, {data.getDimSize(axis)}, checkId);
    // The indices are read at [0, .., k, .., 0] only for the bound of k.
    SmallVector<int64_t> indexDims(rank, -1);
    indexDims[axis] = rank;
    Value result = scatterInto(
        rewriter, op.getLoc(), op.getData(), 1, indices, indexDims,
        [&](OpBuilder &b, Location loc, ArrayRef<Value> coords, ArrayRef<Value> extra,
            Value acc) -> Value {
          // The update at the result's coordinates with the axis one set to k;
          // outside the updates' extent in another dimension, none applies.
          SmallVector<Value> at(coords);
          at[axis] = extra[0];
          Value inside;
          for (int64_t d = 0; d < rank; ++d) {
            if (d == axis || updates.getDimSize(d) == data.getDimSize(d))
              continue;
            Value in = arith::CmpIOp::create(
                b, loc, arith::CmpIPredicate::slt, coords[d],
                arith::ConstantIndexOp::create(b, loc, updates.getDimSize(d)));
            inside = inside ? Value(arith::AndIOp::create(b, loc, inside, in)) : in;
            at[d] = arith::MinSIOp::create(
                b, loc, coords[d], arith::ConstantIndexOp::create(b, loc, updates.getDimSize(d) - 1));
          }
          Value index = arith::IndexCastOp::create(
              b, loc, b.getIndexType(), tensor::ExtractOp::create(b, loc, indices, at));
          Value match = indexMatches(b, loc, index, coords[axis], data.getDimSize(axis));
          if (inside)
            match = arith::AndIOp::create(b, loc, match, inside);
          Value update = tensor::ExtractOp::create(b, loc, op.getUpdates(), at);
          return arith::SelectOp::create(b, loc, match,
                                         scatterCombine(b, loc, reduction, acc, update), acc);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

// ScatterND: each result element visits every index row, in order, and
// takes the update slice of those that name its leading coordinates. Work
// grows with data size times the number of rows.
struct ScatterNDLowering : OpRewritePattern<ScatterNDOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ScatterNDOp op, PatternRewriter &rewriter) const override {
    RankedTensorType data = op.getData().getType(), indices = op.getIndices().getType();
    ArrayRef<int64_t> rows = indices.getShape().drop_back();
    int64_t depth = indices.getShape().back();
    StringRef reduction = op.getReduction();
    // With a check id, an index out of range is reported (the run's outputs
    // are then invalid) and clamped; without, its row writes nothing.
    Value indexValues = op.getIndices();
    if (auto checkId = op->getAttrOfType<IntegerAttr>(kIndexCheckAttr))
      indexValues = clampedIndices(rewriter, op.getLoc(), indexValues,
                                   data.getShape().take_front(depth), checkId);
    // The indices are read at [rows..., 0] only for the rows' bounds.
    int64_t rank = data.getRank();
    SmallVector<int64_t> indexDims;
    for (size_t i = 0; i < rows.size(); ++i)
      indexDims.push_back(rank + i);
    indexDims.push_back(-1);
    Value result = scatterInto(
        rewriter, op.getLoc(), op.getData(), rows.size(), indexValues, indexDims,
        [&](OpBuilder &b, Location loc, ArrayRef<Value> coords, ArrayRef<Value> row,
            Value acc) -> Value {
          SmallVector<Value> at(row);
          Value match;
          for (int64_t j = 0; j < depth; ++j) {
            at.push_back(arith::ConstantIndexOp::create(b, loc, j));
            Value index = arith::IndexCastOp::create(
                b, loc, b.getIndexType(), tensor::ExtractOp::create(b, loc, indexValues, at));
            at.pop_back();
            Value same = indexMatches(b, loc, index, coords[j], data.getDimSize(j));
            match = match ? Value(arith::AndIOp::create(b, loc, match, same)) : same;
          }
          SmallVector<Value> updateAt(row);
          updateAt.append(coords.begin() + depth, coords.end());
          Value update = tensor::ExtractOp::create(b, loc, op.getUpdates(), updateAt);
          return arith::SelectOp::create(b, loc, match,
                                         scatterCombine(b, loc, reduction, acc, update), acc);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void populateDataMovementLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<ReshapeLowering, TransposeLowering, ConcatLowering, SliceLowering,
               GatherLowering, GatherElementsLowering, GatherNDLowering,
               ScatterElementsLowering, ScatterNDLowering>(patterns.getContext());
  // Tried before the general concat lowering.
  patterns.add<PaddingConcatLowering, InterleavingConcatLowering>(patterns.getContext(),
                                                                /*benefit=*/2);
}

} // namespace kiln
