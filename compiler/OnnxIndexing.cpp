//===- OnnxIndexing.cpp - ONNX's ops that read by index --------------------===//
//
// Gather, GatherElements and GatherND, and the scatters (ScatterElements,
// ScatterND, and Scatter, ScatterElements' old name). Constant indices are checked here, naming the
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
  table["ScatterElements"] = importScatterElements;
  table["Scatter"] = importScatterElements;
  table["ScatterND"] = importScatterND;
}

} // namespace kiln::onnx_import
