//===- OnnxResampling.cpp - ONNX's Pad, Resize, Upsample, GridSample ------===//
//
// Pad becomes kiln.pad, Resize and Upsample kiln.resize, and GridSample
// kiln.grid_sample, with the pads, scales and result sizes (operands in
// newer opsets) resolved here: they must be known at compile time, as every
// shape in Kiln is.
//
//===----------------------------------------------------------------------===//
#include "compiler/Importer.h"

#include "llvm/ADT/StringExtras.h"

#include <cmath>

namespace kiln::onnx_import {
namespace {

/// The float values of operand `index`, which must be a constant.
FailureOr<SmallVector<double>> constantFloats(Importer &im, Node &n, size_t index,
                                              StringRef what) {
  FailureOr<DenseElementsAttr> attr = im.constantOperand(n, index, what);
  if (failed(attr))
    return failure();
  SmallVector<double> values;
  if (llvm::isa<FloatType>(attr->getElementType())) {
    for (const APFloat &v : attr->getValues<APFloat>())
      values.push_back(v.convertToDouble());
  } else {
    for (const APInt &v : attr->getValues<APInt>())
      values.push_back(static_cast<double>(v.getSExtValue()));
  }
  return values;
}

std::string listOf(ArrayRef<int64_t> values) {
  return "[" +
         llvm::join(llvm::map_range(values, [](int64_t v) { return std::to_string(v); }), ", ") +
         "]";
}

// Pad: the pads and the constant are attributes before opset 11 and
// operands after.
Results importPad(Importer &im, Node &n) {
  RankedTensorType type = typeOf(n.input(0));
  int64_t rank = type.getRank();
  std::string mode = n.getString("mode", "constant");
  SmallVector<int64_t> given;
  Value value;
  if (n.opset < 11) {
    given = n.getInts("pads").value_or(SmallVector<int64_t>{});
    float constant = n.getFloat("value", 0.0f);
    if (constant != 0.0f)
      value = im.splat(n.loc, type.getElementType(), constant);
  } else {
    FailureOr<SmallVector<int64_t>> pads = im.constantInts(n, 1, "pads");
    if (failed(pads))
      return failure();
    given = *pads;
    value = n.input(2);
  }
  if (static_cast<int64_t>(given.size()) != 2 * rank)
    return im.failNode(n, ImportFailure::Invalid,
                       "pads must have 2 values per dimension (" + std::to_string(2 * rank) +
                           "), got " + listOf(given));
  if (mode != "constant")
    value = Value();
  FailureOr<PadOp> op = im.create<PadOp>(n.loc, n.input(0), value, given, mode);
  if (failed(op))
    return failure();
  return one(op->getResult());
}

/// Resize's and Upsample's attributes, as kiln.resize takes them.
struct ResizeSpec {
  std::string mode = "nearest";
  std::string coordinates = "half_pixel";
  std::string nearest = "round_prefer_floor";
  double cubicA = -0.75;
  bool excludeOutside = false;
  double extrapolation = 0;
  SmallVector<double> roi; // starts then ends, per dimension; empty: [0, 1]
};

/// The kiln.resize of `x` by `scales` or to `sizes` (one of them empty),
/// per dimension.
Results resize(Importer &im, Node &n, const ResizeSpec &spec, ArrayRef<double> scales,
               ArrayRef<int64_t> sizes) {
  RankedTensorType type = typeOf(n.input(0));
  int64_t rank = type.getRank();
  bool crop = spec.coordinates == "tf_crop_and_resize";
  if (crop && spec.roi.size() != static_cast<size_t>(2 * rank))
    return im.failNode(n, ImportFailure::Invalid,
                       "'tf_crop_and_resize' needs an roi of 2 values per dimension (" +
                           std::to_string(2 * rank) + ")");
  SmallVector<double> factors;
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t in = type.getDimSize(d);
    double extent = crop ? spec.roi[rank + d] - spec.roi[d] : 1.0;
    if (!sizes.empty()) {
      if (sizes[d] < 1)
        return im.failNode(n, ImportFailure::Invalid,
                           "sizes must be positive, got " + listOf(sizes));
      shape.push_back(sizes[d]);
      factors.push_back(static_cast<double>(sizes[d]) / in);
      continue;
    }
    double out = std::floor(in * extent * scales[d]);
    if (!(scales[d] > 0) || !(out >= 1) || out > double(int64_t(1) << 40))
      return im.failNode(n, ImportFailure::Invalid,
                         "scale " + std::to_string(scales[d]) + " of dimension " +
                             std::to_string(d) + " (size " + std::to_string(in) +
                             ") leaves no elements or too many");
    shape.push_back(static_cast<int64_t>(out));
    factors.push_back(scales[d]);
  }
  auto resultType = RankedTensorType::get(shape, type.getElementType());
  if (failed(im.checkSize(n.loc, shape, type.getElementType(), n.proto.op_type() + " output")))
    return failure();
  Builder &b = im.builder;
  auto op = ResizeOp::create(
      im.builder, n.loc, resultType, n.input(0), b.getDenseF64ArrayAttr(factors),
      b.getStringAttr(spec.mode), b.getStringAttr(spec.coordinates),
      b.getStringAttr(spec.nearest), b.getF64FloatAttr(spec.cubicA),
      b.getBoolAttr(spec.excludeOutside), b.getF64FloatAttr(spec.extrapolation),
      crop ? b.getDenseF64ArrayAttr(spec.roi) : DenseF64ArrayAttr());
  if (failed(mlir::verify(op, /*verifyRecursively=*/false))) {
    op->erase();
    return failure();
  }
  return one(op.getResult());
}

// Resize: scales or sizes from operands (opset 11+: X, roi, scales, sizes;
// opset 10: X, scales).
Results importResize(Importer &im, Node &n) {
  RankedTensorType type = typeOf(n.input(0));
  int64_t rank = type.getRank();
  ResizeSpec spec;
  spec.mode = n.getString("mode", "nearest");
  if (n.opset < 11) {
    // Resize-10 is asymmetric and rounds down, as ONNX's converter to 11 says.
    spec.coordinates = "asymmetric";
    spec.nearest = "floor";
  } else {
    spec.coordinates = n.getString("coordinate_transformation_mode", "half_pixel");
    spec.nearest = n.getString("nearest_mode", "round_prefer_floor");
  }
  spec.cubicA = n.getFloat("cubic_coeff_a", -0.75f);
  spec.excludeOutside = n.getInt("exclude_outside", 0) != 0;
  spec.extrapolation = n.getFloat("extrapolation_value", 0.0f);
  if (n.getInt("antialias", 0) != 0)
    return im.failNode(n, ImportFailure::Unsupported, "antialias = 1 is not supported");

  size_t scalesIndex = n.opset < 11 ? 1 : 2, sizesIndex = 3;
  SmallVector<double> scales;
  SmallVector<int64_t> sizes;
  if (n.input(scalesIndex)) {
    FailureOr<SmallVector<double>> values = constantFloats(im, n, scalesIndex, "scales");
    if (failed(values))
      return failure();
    scales = *values;
  }
  if (n.opset >= 11 && n.input(sizesIndex)) {
    FailureOr<SmallVector<int64_t>> values = im.constantInts(n, sizesIndex, "sizes");
    if (failed(values))
      return failure();
    sizes = *values;
  }
  if (scales.empty() == sizes.empty())
    return im.failNode(n, ImportFailure::Invalid, "needs exactly one of scales and sizes");
  if (n.opset >= 11 && n.input(1) && spec.coordinates == "tf_crop_and_resize") {
    FailureOr<SmallVector<double>> roi = constantFloats(im, n, 1, "roi");
    if (failed(roi))
      return failure();
    spec.roi = *roi;
  }

  size_t count = std::max(scales.size(), sizes.size());
  if (count != static_cast<size_t>(rank))
    return im.failNode(n, ImportFailure::Invalid,
                       "scales or sizes must have one value per dimension (" +
                           std::to_string(rank) + "), got " + std::to_string(count));
  return resize(im, n, spec, scales, sizes);
}

// Upsample (deprecated in opset 10): scales as an attribute (opset 7) or an
// operand (opset 9), asymmetric coordinates, rounding down.
Results importUpsample(Importer &im, Node &n) {
  ResizeSpec spec;
  spec.mode = n.getString("mode", "nearest");
  if (spec.mode == "bilinear")
    spec.mode = "linear";
  spec.coordinates = "asymmetric";
  spec.nearest = "floor";
  SmallVector<double> scales;
  if (n.input(1)) {
    FailureOr<SmallVector<double>> values = constantFloats(im, n, 1, "scales");
    if (failed(values))
      return failure();
    scales = *values;
  } else if (const auto *attr = n.attr("scales")) {
    scales.assign(attr->floats().begin(), attr->floats().end());
  }
  if (static_cast<int64_t>(scales.size()) != typeOf(n.input(0)).getRank())
    return im.failNode(n, ImportFailure::Invalid, "scales must have one value per dimension");
  return resize(im, n, spec, scales, {});
}

Results importGridSample(Importer &im, Node &n) {
  FailureOr<GridSampleOp> op = im.create<GridSampleOp>(
      n.loc, n.input(0), n.input(1), n.getString("mode", "bilinear"),
      n.getString("padding_mode", "zeros"), n.getInt("align_corners", 0) != 0);
  if (failed(op))
    return failure();
  return one(op->getResult());
}

} // namespace

void addResamplingHandlers(llvm::StringMap<Handler> &table) {
  table["Pad"] = importPad;
  table["Resize"] = importResize;
  table["Upsample"] = importUpsample;
  table["GridSample"] = importGridSample;
}

} // namespace kiln::onnx_import
