//===- OnnxDataDependent.cpp - Ops whose result shape is their data's ------===//
//
// NonZero and Unique: how many elements they return depends on the values
// of their input, and every Kiln tensor has a static shape, so they are
// evaluated at compile time on a constant input (exporters emit them on
// shape arithmetic and masks made of constants). An input computed from a
// graph input fails with kilnc's "needs a value" exit code, naming the input
// to bind with --freeze-input.
//
//===----------------------------------------------------------------------===//
#include "compiler/Importer.h"

#include <map>

namespace kiln::onnx_import {
namespace {

/// The elements of a constant as a total order: floats by value with every
/// NaN after every number and equal to every other NaN (NumPy's
/// `unique(equal_nan=True)`), integers by signed value.
struct Element {
  double f = 0;
  int64_t i = 0;
  bool nan = false;

  friend bool operator<(const Element &a, const Element &b) {
    if (a.nan || b.nan)
      return !a.nan && b.nan;
    return a.f < b.f || (a.f == b.f && a.i < b.i);
  }
};

SmallVector<Element> elementsOf(DenseElementsAttr attr) {
  SmallVector<Element> out;
  if (llvm::isa<FloatType>(attr.getElementType())) {
    for (APFloat v : attr.getValues<APFloat>()) {
      bool lost;
      v.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
      out.push_back({v.convertToDouble(), 0, v.isNaN()});
    }
  } else {
    bool isBool = attr.getElementType().isInteger(1);
    for (const APInt &v : attr.getValues<APInt>())
      out.push_back({0, isBool ? static_cast<int64_t>(v.getZExtValue()) : v.getSExtValue()});
  }
  return out;
}

// NonZero: the indices of the elements that are not zero, one row per
// dimension ([rank, count], row-major order of the elements). A scalar is
// read as a one-element vector, as NumPy's nonzero does.
Results importNonZero(Importer &im, Node &n) {
  FailureOr<DenseElementsAttr> x = im.constantOperand(n, 0, "X");
  if (failed(x))
    return failure();
  ArrayRef<int64_t> shape = x->getType().getShape();
  SmallVector<int64_t> dims = shape.empty() ? SmallVector<int64_t>{1} : SmallVector<int64_t>(shape);
  int64_t rank = dims.size();
  if (failed(im.checkBuiltConstant(n, rank * x->getNumElements(), "the indices")))
    return failure();
  SmallVector<int64_t> positions;
  for (auto [linear, element] : llvm::enumerate(elementsOf(*x)))
    if (element.nan || element.f != 0 || element.i != 0)
      positions.push_back(linear);
  int64_t count = positions.size();
  SmallVector<int64_t> indices(rank * count);
  for (int64_t k = 0; k < count; ++k)
    for (int64_t d = rank - 1, rest = positions[k]; d >= 0; --d) {
      indices[d * count + k] = rest % dims[d];
      rest /= dims[d];
    }
  auto type = RankedTensorType::get({rank, count}, im.builder.getI64Type());
  return one(im.constant(n.loc, DenseElementsAttr::get(type, ArrayRef<int64_t>(indices))));
}

// Unique: the distinct slices along `axis` (elements, without one), sorted
// lexicographically or in order of first appearance, as a Gather of the
// input at their first positions; with the first positions, the slice of
// the output every input slice equals, and how often each occurs.
Results importUnique(Importer &im, Node &n) {
  OpBuilder &b = im.builder;
  Location loc = n.loc;
  FailureOr<DenseElementsAttr> x = im.constantOperand(n, 0, "X");
  if (failed(x))
    return failure();
  Value input = n.input(0);
  RankedTensorType type = typeOf(input);
  int64_t axis = 0;
  if (n.attr("axis")) {
    axis = n.getInt("axis", 0);
    if (axis < 0)
      axis += type.getRank();
    if (axis < 0 || axis >= type.getRank())
      return im.failNode(n, ImportFailure::Invalid,
                         "axis " + std::to_string(n.getInt("axis", 0)) +
                             " is out of range for rank " + std::to_string(type.getRank()));
  } else {
    input = reshapeTo(b, loc, input, {type.getNumElements()});
  }
  // Slice s along the axis is elements[(o * slices + s) * inner + i] for
  // every outer index o and inner index i.
  ArrayRef<int64_t> shape = typeOf(input).getShape();
  int64_t slices = shape[axis], outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= shape[d];
  for (int64_t d = axis + 1; d < static_cast<int64_t>(shape.size()); ++d)
    inner *= shape[d];
  SmallVector<Element> elements = elementsOf(*x);
  auto sliceOf = [&](int64_t s) {
    SmallVector<Element> slice;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i)
        slice.push_back(elements[(o * slices + s) * inner + i]);
    return slice;
  };
  // The first position of each distinct slice, in order of appearance.
  std::map<SmallVector<Element>, int64_t> seen;
  SmallVector<int64_t> first, inverse(slices), counts;
  for (int64_t s = 0; s < slices; ++s) {
    auto [it, added] = seen.try_emplace(sliceOf(s), first.size());
    if (added) {
      first.push_back(s);
      counts.push_back(0);
    }
    inverse[s] = it->second;
    ++counts[it->second];
  }
  // Sorted (the default): renumber in the map's (lexicographic) order.
  if (n.getInt("sorted", 1) != 0) {
    SmallVector<int64_t> rank(first.size()), sortedFirst, sortedCounts;
    for (const auto &[slice, appearance] : seen) {
      rank[appearance] = sortedFirst.size();
      sortedFirst.push_back(first[appearance]);
      sortedCounts.push_back(counts[appearance]);
    }
    for (int64_t &r : inverse)
      r = rank[r];
    first = std::move(sortedFirst);
    counts = std::move(sortedCounts);
  }
  FailureOr<GatherOp> y = im.create<GatherOp>(loc, input, im.i64Constant(loc, first), axis);
  if (failed(y))
    return failure();
  return SmallVector<Value>{*y, im.i64Constant(loc, first), im.i64Constant(loc, inverse),
                            im.i64Constant(loc, counts)};
}

} // namespace

void addDataDependentHandlers(llvm::StringMap<Handler> &table) {
  table["NonZero"] = importNonZero;
  table["Unique"] = importUnique;
}

} // namespace kiln::onnx_import
