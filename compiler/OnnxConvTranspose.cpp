//===- OnnxConvTranspose.cpp - ONNX's ConvTranspose as a convolution -------===//
//
// A transposed convolution is the convolution, with the filter flipped and
// its channel roles swapped, of the input spread out by the strides (s - 1
// zeros between neighbours) and padded by d (k - 1) less the node's pads on
// each side (plus output_padding at the end; a negative amount crops). Built
// from kiln ops, it runs on every back end. The spread input costs s² (s³)
// more multiplications than a direct transposed convolution would. 1-D
// transposed convolutions are 2-D ones one row high; 3-D ones end in the
// sum of 2-D convolutions that a 3-D Conv is.
//
//===----------------------------------------------------------------------===//
#include "compiler/Importer.h"

namespace kiln::onnx_import {
namespace {

/// `x` with `count` zeros inserted after every element along `axis` (as a
/// new dimension after it, of size 1 before).
Value spread(Importer &im, Location loc, Value x, int64_t axis, int64_t count) {
  RankedTensorType type = typeOf(x);
  SmallVector<int64_t> zeros(type.getShape());
  zeros[axis] = count;
  auto zeroType = RankedTensorType::get(zeros, type.getElementType());
  Value fill = im.constant(loc, DenseElementsAttr::get(zeroType, im.builder.getZeroAttr(
                                                                     type.getElementType())));
  return ConcatOp::create(im.builder, loc, ValueRange{x, fill}, axis);
}

Results importConvTranspose(Importer &im, Node &n) {
  OpBuilder &b = im.builder;
  Location loc = n.loc;
  Value x = n.input(0), w = n.input(1), bias = n.input(2);
  RankedTensorType xType = typeOf(x), wType = typeOf(w);
  int64_t rank = xType.getRank();
  if (rank < 3 || rank > 5 || wType.getRank() != rank)
    return im.failNode(n, ImportFailure::Unsupported,
                       "only 1-D, 2-D and 3-D transposed convolutions (3-D to 5-D inputs) are "
                       "supported, got input " +
                           describeShape(xType.getShape()) + " and filter " +
                           describeShape(wType.getShape()));
  int64_t spatial = rank - 2, group = n.getInt("group", 1);
  auto ints = [&](StringRef name, int64_t count, int64_t dflt) {
    return n.getInts(name).value_or(SmallVector<int64_t>(count, dflt));
  };
  SmallVector<int64_t> strides = ints("strides", spatial, 1),
                       dilations = ints("dilations", spatial, 1),
                       outputPadding = ints("output_padding", spatial, 0),
                       pads = ints("pads", 2 * spatial, 0);
  SmallVector<int64_t> kernel(wType.getShape().drop_front(2));
  std::optional<SmallVector<int64_t>> outputShape = n.getInts("output_shape");
  std::string autoPad = n.getString("auto_pad", "NOTSET");
  if (static_cast<int64_t>(strides.size()) != spatial ||
      static_cast<int64_t>(dilations.size()) != spatial ||
      static_cast<int64_t>(outputPadding.size()) != spatial ||
      static_cast<int64_t>(pads.size()) != 2 * spatial ||
      (outputShape && static_cast<int64_t>(outputShape->size()) != spatial))
    return im.failNode(n, ImportFailure::Invalid,
                       "strides, dilations, output_padding and output_shape need one value per "
                       "spatial dimension, pads two");
  int64_t inChannels = xType.getDimSize(1);
  if (group < 1 || inChannels % group != 0 || wType.getDimSize(0) != inChannels)
    return im.failNode(n, ImportFailure::Invalid,
                       "with group = " + std::to_string(group) + ", input channels " +
                           std::to_string(inChannels) + " and filter " +
                           describeShape(wType.getShape()) + " do not match");
  for (int64_t i = 0; i < spatial; ++i)
    if (strides[i] < 1 || dilations[i] < 1 || outputPadding[i] < 0 || kernel[i] < 1)
      return im.failNode(n, ImportFailure::Invalid,
                         "strides, dilations and kernel sizes must be >= 1, output_padding >= 0");
  // With an output shape (or SAME padding), the pads follow from it.
  if (outputShape || autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (int64_t i = 0; i < spatial; ++i) {
      int64_t in = xType.getDimSize(2 + i);
      int64_t out = outputShape ? (*outputShape)[i] : in * strides[i];
      int64_t total =
          strides[i] * (in - 1) + outputPadding[i] + (kernel[i] - 1) * dilations[i] + 1 - out;
      // ONNX's formula, with Python's floor division (total may be negative).
      int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      bool upper = autoPad == "SAME_UPPER";
      pads[i] = upper ? half : total - half;
      pads[spatial + i] = upper ? total - half : half;
    }
  } else if (autoPad != "NOTSET" && autoPad != "VALID") {
    return im.failNode(n, ImportFailure::Invalid, "unknown auto_pad '" + autoPad + "'");
  }

  // 1-D: one row high.
  if (spatial == 1) {
    x = reshapeTo(b, loc, x, {xType.getDimSize(0), inChannels, 1, xType.getDimSize(2)});
    w = reshapeTo(b, loc, w, {wType.getDimSize(0), wType.getDimSize(1), 1, kernel[0]});
    strides.insert(strides.begin(), 1);
    dilations.insert(dilations.begin(), 1);
    outputPadding.insert(outputPadding.begin(), 0);
    kernel.insert(kernel.begin(), 1);
    pads = {0, pads[0], 0, pads[1]};
  }
  int64_t dims = std::max<int64_t>(spatial, 2);
  RankedTensorType type = typeOf(x);
  int64_t batch = type.getDimSize(0);
  ArrayRef<int64_t> sizes = type.getShape().drop_front(2);

  // Spread: [N, C, H, W] -> [N, C, H, 1, W, 1] -> [N, C, H, s, W, s] ->
  // [N, C, H s, W s] (likewise with D); the trailing s - 1 zeros are cropped
  // by the padding below.
  if (llvm::any_of(strides, [](int64_t s) { return s > 1; })) {
    SmallVector<int64_t> split = {batch, inChannels}, spreadShape = {batch, inChannels};
    for (int64_t i = 0; i < dims; ++i) {
      split.append({sizes[i], 1});
      spreadShape.push_back(sizes[i] * strides[i]);
    }
    x = reshapeTo(b, loc, x, split);
    for (int64_t i = 0; i < dims; ++i)
      if (strides[i] > 1)
        x = spread(im, loc, x, 3 + 2 * i, strides[i] - 1);
    x = reshapeTo(b, loc, x, spreadShape);
  }
  SmallVector<int64_t> padding(2 * (dims + 2), 0);
  for (int64_t i = 0; i < dims; ++i) {
    int64_t reach = dilations[i] * (kernel[i] - 1);
    padding[2 + i] = reach - pads[i];
    padding[dims + 4 + i] = reach - pads[dims + i] + outputPadding[i] - (strides[i] - 1);
  }
  if (llvm::any_of(padding, [](int64_t p) { return p != 0; })) {
    FailureOr<PadOp> padded = im.create<PadOp>(loc, x, Value(), padding, "constant");
    if (failed(padded))
      return failure();
    x = *padded;
  }

  // Filter [Cin, Cout/g, k...] -> [Cout, Cin/g, k...], flipped.
  int64_t outPerGroup = wType.getDimSize(1), inPerGroup = inChannels / group;
  SmallVector<int64_t> grouped = {group, inPerGroup, outPerGroup}, swap = {0, 2, 1},
                       regrouped = {group * outPerGroup, inPerGroup}, start = {0, 0},
                       step = {1, 1};
  for (int64_t i = 0; i < dims; ++i) {
    grouped.push_back(kernel[i]);
    swap.push_back(3 + i);
    regrouped.push_back(kernel[i]);
    start.push_back(kernel[i] - 1);
    step.push_back(kernel[i] > 1 ? -1 : 1);
  }
  Value filter = reshapeTo(b, loc, w, grouped);
  filter = TransposeOp::create(b, loc, filter, swap);
  filter = reshapeTo(b, loc, filter, regrouped);
  filter = SliceOp::create(b, loc, typeOf(filter), filter, start, step);
  SmallVector<int64_t> ones(dims, 1), zeros(2 * dims, 0);
  if (dims == 3)
    return buildConv3D(im, n, x, filter, bias, ones, zeros, dilations, group);
  FailureOr<ConvOp> conv = im.create<ConvOp>(loc, x, filter, bias, ones, zeros, dilations, group);
  if (failed(conv))
    return failure();
  Value y = conv->getResult();
  if (spatial == 1) {
    RankedTensorType yType = typeOf(y);
    y = reshapeTo(b, loc, y, {yType.getDimSize(0), yType.getDimSize(1), yType.getDimSize(3)});
  }
  return one(y);
}

} // namespace

void addConvTransposeHandlers(llvm::StringMap<Handler> &table) {
  table["ConvTranspose"] = importConvTranspose;
}

} // namespace kiln::onnx_import
