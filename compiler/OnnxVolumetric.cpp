//===- OnnxVolumetric.cpp - 3-D convolution and pooling ------------------===//
//
// Conv, MaxPool and AveragePool over [N, C, D, H, W] inputs, built from the
// 2-D kiln ops:
//   * a 3-D convolution is a sum over the filter's depth of 2-D
//     convolutions, each of the input's depth slices that filter plane
//     meets (a strided slice along D, folded into the batch);
//   * a 3-D pooling window is a box, so the maximum (or the sum, and the
//     count of elements it divides by) separates: a 2-D pooling over height
//     and width of every depth plane, then one over depth.
//
//===----------------------------------------------------------------------===//

#include "compiler/Importer.h"

namespace kiln::onnx_import {

namespace {

/// The window attributes of a 3-D window op: kernel, strides, dilations and
/// pads (begins, then ends), checked.
struct Window3D {
  SmallVector<int64_t> kernel, strides, dilations, pads;
};

FailureOr<Window3D> window3D(Importer &im, Node &n, ArrayRef<int64_t> spatial,
                             ArrayRef<int64_t> kernel) {
  Window3D w;
  w.kernel.assign(kernel.begin(), kernel.end());
  w.strides = n.getInts("strides").value_or(SmallVector<int64_t>{1, 1, 1});
  w.dilations = n.getInts("dilations").value_or(SmallVector<int64_t>{1, 1, 1});
  if (w.kernel.size() != 3 || w.strides.size() != 3 || w.dilations.size() != 3) {
    (void)im.failNode(n, ImportFailure::Invalid,
                      "kernel_shape, strides and dilations need 3 values for a 3-D window");
    return failure();
  }
  for (int i = 0; i < 3; ++i)
    if (w.kernel[i] < 1 || w.strides[i] < 1 || w.dilations[i] < 1) {
      (void)im.failNode(n, ImportFailure::Invalid,
                        "kernel sizes, strides and dilations must be >= 1");
      return failure();
    }
  FailureOr<SmallVector<int64_t>> pads =
      windowPads(im, n, spatial, w.kernel, w.strides, w.dilations);
  if (failed(pads))
    return failure();
  if (llvm::any_of(*pads, [](int64_t p) { return p < 0; })) {
    (void)im.failNode(n, ImportFailure::Invalid, "pads must be >= 0");
    return failure();
  }
  w.pads = std::move(*pads);
  return w;
}

} // namespace

Results importConv3D(Importer &im, Node &n) {
  Value x = n.input(0), filter = n.input(1);
  FailureOr<Window3D> w = window3D(im, n, typeOf(x).getShape().drop_front(2),
                                   typeOf(filter).getShape().drop_front(2));
  if (failed(w))
    return failure();
  return buildConv3D(im, n, x, filter, n.input(2), w->strides, w->pads, w->dilations,
                     n.getInt("group", 1));
}

Results buildConv3D(Importer &im, Node &n, Value x, Value filter, Value bias,
                    ArrayRef<int64_t> strides, ArrayRef<int64_t> pads,
                    ArrayRef<int64_t> dilations, int64_t group) {
  OpBuilder &b = im.builder;
  Location loc = n.loc;
  RankedTensorType xType = typeOf(x), wType = typeOf(filter);
  ArrayRef<int64_t> shape = xType.getShape();
  int64_t batch = shape[0], channels = shape[1], height = shape[3], width = shape[4];
  int64_t outChannels = wType.getDimSize(0), perGroup = wType.getDimSize(1);
  ArrayRef<int64_t> kernel = wType.getShape().drop_front(2);
  int64_t depthKernel = kernel[0], depthStride = strides[0], depthDilation = dilations[0];

  // Pad the depth; the 2-D convolutions pad height and width.
  if (pads[0] || pads[3]) {
    FailureOr<PadOp> padded = im.create<PadOp>(
        loc, x, Value(), ArrayRef<int64_t>{0, 0, pads[0], 0, 0, 0, 0, pads[3], 0, 0},
        "constant");
    if (failed(padded))
      return failure();
    x = *padded;
  }
  int64_t depth = typeOf(x).getDimSize(2);
  int64_t reach = (depthKernel - 1) * depthDilation + 1;
  if (depth < reach)
    return im.failNode(n, ImportFailure::Invalid,
                       "the filter's depth reach (" + Twine(reach) +
                           ") exceeds the padded input's depth (" + Twine(depth) + ")");
  int64_t outDepth = (depth - reach) / depthStride + 1;

  Value sum;
  for (int64_t t = 0; t < depthKernel; ++t) {
    // The input planes filter plane t meets: [N, C, D', H, W] -> [N D', C, H, W].
    Value planes = SliceOp::create(
        b, loc, RankedTensorType::get({batch, channels, outDepth, height, width},
                                      xType.getElementType()),
        x, ArrayRef<int64_t>{0, 0, t * depthDilation, 0, 0},
        ArrayRef<int64_t>{1, 1, depthStride, 1, 1});
    planes = TransposeOp::create(b, loc, planes, ArrayRef<int64_t>{0, 2, 1, 3, 4});
    planes = reshapeTo(b, loc, planes, {batch * outDepth, channels, height, width});
    Value plane = SliceOp::create(
        b, loc,
        RankedTensorType::get({outChannels, perGroup, 1, kernel[1], kernel[2]},
                              wType.getElementType()),
        filter, ArrayRef<int64_t>{0, 0, t, 0, 0}, ArrayRef<int64_t>{1, 1, 1, 1, 1});
    plane = reshapeTo(b, loc, plane, {outChannels, perGroup, kernel[1], kernel[2]});
    FailureOr<ConvOp> conv = im.create<ConvOp>(
        loc, planes, plane, Value(), ArrayRef<int64_t>{strides[1], strides[2]},
        ArrayRef<int64_t>{pads[1], pads[2], pads[4], pads[5]},
        ArrayRef<int64_t>{dilations[1], dilations[2]}, group);
    if (failed(conv))
      return failure();
    sum = sum ? Value(AddOp::create(b, loc, sum, *conv)) : Value(*conv);
  }
  // [N D', Cout, H', W'] -> [N, Cout, D', H', W'].
  RankedTensorType planeType = typeOf(sum);
  Value y = reshapeTo(b, loc, sum,
                      {batch, outDepth, outChannels, planeType.getDimSize(2),
                       planeType.getDimSize(3)});
  y = TransposeOp::create(b, loc, y, ArrayRef<int64_t>{0, 2, 1, 3, 4});
  if (bias) {
    if (typeOf(bias).getRank() != 1 || typeOf(bias).getDimSize(0) != outChannels)
      return im.failNode(n, ImportFailure::Invalid,
                         "the bias must have " + Twine(outChannels) + " elements, got " +
                             describeShape(typeOf(bias).getShape()));
    y = AddOp::create(b, loc, y, reshapeTo(b, loc, bias, {1, outChannels, 1, 1, 1}));
  }
  return one(y);
}

Results importPool3D(Importer &im, Node &n, bool max) {
  OpBuilder &b = im.builder;
  Location loc = n.loc;
  RankedTensorType type = typeOf(n.input(0));
  std::optional<SmallVector<int64_t>> kernel = n.getInts("kernel_shape");
  if (!kernel)
    return im.failNode(n, ImportFailure::Invalid, "kernel_shape is required");
  ArrayRef<int64_t> shape = type.getShape();
  FailureOr<Window3D> w = window3D(im, n, shape.drop_front(2), *kernel);
  if (failed(w))
    return failure();
  bool ceil = n.getInt("ceil_mode", 0) != 0;
  bool countPads = n.getInt("count_include_pad", 0) != 0;
  auto pool = [&](Value input, ArrayRef<int64_t> k, ArrayRef<int64_t> s, ArrayRef<int64_t> p,
                  ArrayRef<int64_t> d) -> FailureOr<Value> {
    if (max) {
      FailureOr<MaxPoolOp> op = im.create<MaxPoolOp>(loc, input, k, s, p, d, ceil);
      return failed(op) ? FailureOr<Value>(failure()) : FailureOr<Value>(op->getResult());
    }
    FailureOr<AveragePoolOp> op = im.create<AveragePoolOp>(loc, input, k, s, p, d, ceil);
    if (failed(op))
      return failure();
    op->setCountIncludePad(countPads);
    return op->getResult();
  };
  int64_t batch = shape[0], channels = shape[1], depth = shape[2];
  // Height and width of every depth plane: [N, C D, H, W].
  FailureOr<Value> planes =
      pool(reshapeTo(b, loc, n.input(0), {batch, channels * depth, shape[3], shape[4]}),
           {w->kernel[1], w->kernel[2]}, {w->strides[1], w->strides[2]},
           {w->pads[1], w->pads[2], w->pads[4], w->pads[5]}, {w->dilations[1], w->dilations[2]});
  if (failed(planes))
    return failure();
  int64_t height = typeOf(*planes).getDimSize(2), width = typeOf(*planes).getDimSize(3);
  // Then depth, a window one column wide over [N, C, D, H' W'].
  FailureOr<Value> pooled =
      pool(reshapeTo(b, loc, *planes, {batch, channels, depth, height * width}),
           {w->kernel[0], 1}, {w->strides[0], 1}, {w->pads[0], 0, w->pads[3], 0},
           {w->dilations[0], 1});
  if (failed(pooled))
    return failure();
  return one(reshapeTo(b, loc, *pooled,
                       {batch, channels, typeOf(*pooled).getDimSize(2), height, width}));
}

} // namespace kiln::onnx_import
