//===- OnnxIndexing.cpp - ONNX's ops that read by index --------------------===//
//
// Gather, GatherElements and GatherND, Compress and ReverseSequence (as
// gathers), the scatters (ScatterElements, ScatterND, and Scatter,
// ScatterElements' old name) and MaxUnpool, a scatter into zeros. Constant
// indices are checked here, naming the node and the index; others are
// checked at run time (kilnc --no-index-checks turns that off) and clamped
// either way, so a bad index never reads outside the data.
//
//===----------------------------------------------------------------------===//
#include "compiler/Importer.h"

#include "mlir/IR/Matchers.h"
#include "llvm/Support/MathExtras.h"

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

// MaxUnpool writes each value at its index (as MaxPool's Indices gives
// them) into zeros of the pooled input's size, (in - 1) s - pads + k per
// window dimension: a ScatterElements into the flattened result. An
// output_shape larger than that size holds the result at its start, the
// rest zeros (ONNX's reference does so, and its tests expect it).
Results importMaxUnpool(Importer &im, Node &n) {
  OpBuilder &b = im.builder;
  Location loc = n.loc;
  Value x = n.input(0), indices = n.input(1);
  RankedTensorType type = typeOf(x);
  int64_t spatial = std::max<int64_t>(type.getRank() - 2, 0);
  std::optional<SmallVector<int64_t>> kernel = n.getInts("kernel_shape");
  SmallVector<int64_t> strides = n.getInts("strides").value_or(SmallVector<int64_t>(spatial, 1));
  SmallVector<int64_t> pads = n.getInts("pads").value_or(SmallVector<int64_t>(2 * spatial, 0));
  if (spatial < 1 || !kernel || static_cast<int64_t>(kernel->size()) != spatial ||
      static_cast<int64_t>(strides.size()) != spatial ||
      static_cast<int64_t>(pads.size()) != 2 * spatial)
    return im.failNode(n, ImportFailure::Invalid,
                       "needs an input of rank >= 3, and kernel_shape, strides and pads for "
                       "each of its window dimensions");
  if (!indices || typeOf(indices).getShape() != type.getShape() ||
      !typeOf(indices).getElementType().isInteger(64))
    return im.failNode(n, ImportFailure::Invalid,
                       "the indices must be int64 of the input's shape " +
                           describeShape(type.getShape()));
  SmallVector<int64_t> shape(type.getShape().take_front(2));
  int64_t total = type.getDimSize(0) * type.getDimSize(1);
  for (int64_t d = 0; d < spatial; ++d) {
    // (in - 1) s - pads + k, each step checked: the attributes are the
    // model's.
    int64_t size;
    bool overflows = llvm::MulOverflow(type.getDimSize(2 + d) - 1, strides[d], size) ||
                     llvm::SubOverflow(size, pads[d], size) ||
                     llvm::SubOverflow(size, pads[spatial + d], size) ||
                     llvm::AddOverflow(size, (*kernel)[d], size) ||
                     llvm::MulOverflow(total, std::max<int64_t>(size, 0), total);
    if ((*kernel)[d] < 1 || strides[d] < 1 || overflows || size < 0)
      return im.failNode(n, ImportFailure::Invalid,
                         "kernel sizes and strides must be >= 1, and dimension " +
                             std::to_string(2 + d) +
                             "'s unpooled size, (in - 1) * stride - pads + kernel, at least 0 "
                             "and the result's elements within int64");
    shape.push_back(size);
  }
  SmallVector<int64_t> outputShape = shape;
  if (n.input(2)) {
    FailureOr<SmallVector<int64_t>> given = im.constantInts(n, 2, "output_shape");
    if (failed(given))
      return failure();
    auto smaller = [](auto sizes) { return std::get<0>(sizes) < std::get<1>(sizes); };
    if (given->size() != shape.size() || llvm::any_of(llvm::zip(*given, shape), smaller))
      return im.failNode(n, ImportFailure::Invalid,
                         "output_shape " + describeShape(*given) + " must have rank " +
                             std::to_string(shape.size()) + " and hold the unpooled shape " +
                             describeShape(shape));
    outputShape = *given;
  }
  if (failed(im.checkBuiltConstant(n, total, "the unpooled zeros")))
    return failure();
  Type element = type.getElementType();
  Value zeros = im.constant(
      loc, DenseElementsAttr::get(RankedTensorType::get({total}, element), b.getZeroAttr(element)));
  int64_t count = type.getNumElements();
  FailureOr<ScatterElementsOp> scattered = im.create<ScatterElementsOp>(
      loc, zeros, reshapeTo(b, loc, indices, {count}), reshapeTo(b, loc, x, {count}), 0, "none");
  if (failed(scattered))
    return failure();
  Value y = reshapeTo(b, loc, *scattered, shape);
  if (outputShape == shape)
    return one(y);
  SmallVector<int64_t> padding(2 * shape.size(), 0);
  for (size_t d = 0; d < shape.size(); ++d)
    padding[shape.size() + d] = outputShape[d] - shape[d];
  return one(im.create<PadOp>(loc, y, Value(), padding, "constant"));
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
  table["MaxUnpool"] = importMaxUnpool;
}

} // namespace kiln::onnx_import
