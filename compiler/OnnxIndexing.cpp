//===- OnnxIndexing.cpp - ONNX's ops that read by index --------------------===//
//
// Gather, GatherElements and GatherND, Compress and ReverseSequence (as
// gathers), and the scatters (ScatterElements, ScatterND, and Scatter,
// ScatterElements' old name). Constant indices are checked here, naming the
// node and the index; others are checked at run time (kilnc
// --no-index-checks turns that off) and clamped either way, so a bad index
// never reads outside the data.
//
//===----------------------------------------------------------------------===//
#include "compiler/Importer.h"

#include "mlir/IR/Matchers.h"

namespace kiln::onnx_import {
namespace {

/// The node's `axis` attribute for data of rank `rank`, negative values
/// counting from the end (range checks are the op's verifier's).
int64_t axisOf(Node &n, int64_t rank) {
  int64_t axis = n.getInt("axis", 0);
  return axis < 0 ? axis + rank : axis;
}

/// Fails the node if `indices` is a constant holding an index outside
/// [-size, size) for data whose indexed dimension is `size` long.
LogicalResult checkConstantIndices(Importer &im, Node &n, Value indices, int64_t size) {
  DenseIntElementsAttr values;
  if (!matchPattern(indices, m_Constant(&values)))
    return success();
  for (const APInt &index : values.getValues<APInt>())
    if (index.getSExtValue() < -size || index.getSExtValue() >= size) {
      (void)im.failNode(n, ImportFailure::Invalid,
                        "index " + std::to_string(index.getSExtValue()) +
                            " is out of range for a dimension of " + std::to_string(size));
      return failure();
    }
  return success();
}

/// Gather and GatherElements: data, indices and an axis, the indices
/// checked here when they are constants.
template <typename OpT>
Results importByIndex(Importer &im, Node &n) {
  RankedTensorType data = typeOf(n.input(0));
  int64_t axis = axisOf(n, data.getRank());
  if (axis >= 0 && axis < data.getRank() &&
      failed(checkConstantIndices(im, n, n.input(1), data.getDimSize(axis))))
    return failure();
  return one(im.create<OpT>(n.loc, n.input(0), n.input(1), axis));
}

// GatherND: constant coordinates are checked against the dimension each
// indexes (the last dimension of `indices` cycles through them).
Results importGatherND(Importer &im, Node &n) {
  RankedTensorType data = typeOf(n.input(0)), indices = typeOf(n.input(1));
  int64_t batch = n.getInt("batch_dims", 0);
  DenseIntElementsAttr values;
  if (indices.getRank() >= 1 && batch >= 0 && matchPattern(n.input(1), m_Constant(&values))) {
    int64_t depth = indices.getShape().back(), position = 0;
    for (const APInt &index : values.getValues<APInt>()) {
      int64_t dim = batch + position++ % std::max<int64_t>(depth, 1);
      if (dim >= data.getRank())
        break; // the op's type inference reports the shapes
      int64_t size = data.getDimSize(dim), v = index.getSExtValue();
      if (v < -size || v >= size)
        return im.failNode(n, ImportFailure::Invalid,
                           "index " + std::to_string(v) + " is out of range for dimension " +
                               std::to_string(dim) + " of data, of size " + std::to_string(size));
    }
  }
  return one(im.create<GatherNDOp>(n.loc, n.input(0), n.input(1), batch));
}

// Compress keeps the slices whose condition is true: with the condition
// known at compile time (the result's shape depends on it), a Gather of
// their positions. Without an axis the input is flattened first.
Results importCompress(Importer &im, Node &n) {
  Value x = n.input(0);
  RankedTensorType type = typeOf(x);
  FailureOr<DenseElementsAttr> condition = im.constantOperand(n, 1, "condition");
  if (failed(condition))
    return failure();
  int64_t axis = 0;
  if (n.attr("axis")) {
    axis = axisOf(n, type.getRank());
    if (axis < 0 || axis >= type.getRank())
      return im.failNode(n, ImportFailure::Invalid,
                         "axis " + std::to_string(n.getInt("axis", 0)) +
                             " is out of range for rank " + std::to_string(type.getRank()));
  } else {
    x = ReshapeOp::create(im.builder, n.loc,
                          RankedTensorType::get({type.getNumElements()}, type.getElementType()), x);
  }
  int64_t size = typeOf(x).getDimSize(axis), position = 0;
  SmallVector<int64_t> kept;
  for (const APInt &flag : condition->getValues<APInt>()) {
    if (position >= size)
      break;
    if (!flag.isZero())
      kept.push_back(position);
    ++position;
  }
  return one(im.create<GatherOp>(n.loc, x, im.i64Constant(n.loc, kept), axis));
}

// ReverseSequence reverses the first sequence_lens[b] steps of each batch
// entry b: a GatherElements along the time axis whose index at (t, b) is
// lens[b] - 1 - t for t < lens[b] and t past it.
Results importReverseSequence(Importer &im, Node &n) {
  OpBuilder &b = im.builder;
  Location loc = n.loc;
  Value x = n.input(0), lengths = n.input(1);
  RankedTensorType type = typeOf(x);
  int64_t rank = type.getRank();
  int64_t batchAxis = n.getInt("batch_axis", 1), timeAxis = n.getInt("time_axis", 0);
  if (rank < 2 || !lengths || batchAxis == timeAxis || batchAxis < 0 || batchAxis > 1 ||
      timeAxis < 0 || timeAxis > 1)
    return im.failNode(n, ImportFailure::Invalid,
                       "needs an input of rank >= 2 and batch_axis, time_axis of 0 and 1");
  int64_t batch = type.getDimSize(batchAxis), steps = type.getDimSize(timeAxis);
  if (failed(im.checkBuiltConstant(n, steps, "the time ramp")))
    return failure();
  Type i64 = b.getI64Type();
  if (typeOf(lengths).getShape() != ArrayRef<int64_t>{batch} ||
      !llvm::isa<IntegerType>(typeOf(lengths).getElementType()))
    return im.failNode(n, ImportFailure::Invalid,
                       "sequence_lens must be " + describeShape({batch}) + " integers");
  if (typeOf(lengths).getElementType() != i64)
    lengths = CastOp::create(b, loc, RankedTensorType::get({batch}, i64), lengths);
  SmallVector<int64_t> lengthShape(rank, 1), rampShape(rank, 1);
  lengthShape[batchAxis] = batch;
  rampShape[timeAxis] = steps;
  Value column = ReshapeOp::create(b, loc, RankedTensorType::get(lengthShape, i64), lengths);
  SmallVector<int64_t> ramp;
  for (int64_t t = 0; t < steps; ++t)
    ramp.push_back(t);
  Value t = im.constant(loc, DenseElementsAttr::get(RankedTensorType::get(rampShape, i64),
                                                    ArrayRef<int64_t>(ramp)));
  Value reversed = SubOp::create(b, loc, SubOp::create(b, loc, column, im.splat(loc, i64, 1)), t);
  Value inside = LessOp::create(b, loc, t, column);
  Value index = WhereOp::create(b, loc, inside, reversed, t);
  if (typeOf(index).getShape() != type.getShape())
    index = ExpandOp::create(b, loc, RankedTensorType::get(type.getShape(), i64), index);
  return one(im.create<GatherElementsOp>(loc, x, index, timeAxis));
}

/// The scatter's reduction attribute, checked against the opset.
FailureOr<std::string> scatterReduction(Importer &im, Node &n) {
  std::string reduction = n.getString("reduction", "none");
  if (!llvm::is_contained({"none", "add", "mul", "max", "min"}, StringRef(reduction))) {
    (void)im.failNode(n, ImportFailure::Invalid,
                      "unknown reduction '" + reduction + "' (none, add, mul, max, min)");
    return failure();
  }
  return reduction;
}

Results importScatterElements(Importer &im, Node &n) {
  RankedTensorType data = typeOf(n.input(0));
  int64_t axis = axisOf(n, data.getRank());
  FailureOr<std::string> reduction = scatterReduction(im, n);
  if (failed(reduction))
    return failure();
  if (axis >= 0 && axis < data.getRank() &&
      failed(checkConstantIndices(im, n, n.input(1), data.getDimSize(axis))))
    return failure();
  return one(im.create<ScatterElementsOp>(n.loc, n.input(0), n.input(1), n.input(2), axis,
                                          *reduction));
}

Results importScatterND(Importer &im, Node &n) {
  FailureOr<std::string> reduction = scatterReduction(im, n);
  if (failed(reduction))
    return failure();
  return one(im.create<ScatterNDOp>(n.loc, n.input(0), n.input(1), n.input(2), *reduction));
}

} // namespace

void addIndexingHandlers(llvm::StringMap<Handler> &table) {
  table["Gather"] = importByIndex<GatherOp>;
  table["GatherElements"] = importByIndex<GatherElementsOp>;
  table["GatherND"] = importGatherND;
  table["Compress"] = importCompress;
  table["ReverseSequence"] = importReverseSequence;
  table["ScatterElements"] = importScatterElements;
  table["Scatter"] = importScatterElements;
  table["ScatterND"] = importScatterND;
}

} // namespace kiln::onnx_import
