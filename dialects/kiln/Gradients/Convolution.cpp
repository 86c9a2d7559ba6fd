//===- Convolution.cpp - Gradient rules of convolution and pooling --------===//
//
// The convolution's gradients are convolutions again: the input's is the
// cotangent, dilated by the stride, correlated with the flipped filter whose
// input and output channels are swapped (a transposed convolution); the
// filter's correlates the input with the cotangent, batch and channels
// exchanged, the stride and dilation trading places. Pooling windows that
// tile the input are undone by splitting it into one strided sub-grid per
// window position.
//
//===----------------------------------------------------------------------===//
#include "dialects/kiln/Gradients/GradientUtils.h"

using namespace mlir;
using namespace kiln::grad;

namespace kiln {

/// `value` with `count` zeros after each element along `axis`, the trailing
/// ones dropped: the cotangent of a strided window op, on the input's grid.
static Value spreadAlong(OpBuilder &b, Location loc, Value value, int64_t axis, int64_t stride) {
  if (stride == 1)
    return value;
  RankedTensorType type = typeOf(value);
  SmallVector<int64_t> shape(type.getShape());
  int64_t length = shape[axis];
  SmallVector<int64_t> column(shape);
  column.insert(column.begin() + axis + 1, 1);
  Value split = reshapeTo(b, loc, value, RankedTensorType::get(column, type.getElementType()));
  SmallVector<int64_t> zerosShape(column);
  zerosShape[axis + 1] = stride - 1;
  Value zeros = splat(b, loc, RankedTensorType::get(zerosShape, type.getElementType()), 0.0);
  Value widened = ConcatOp::create(b, loc, ValueRange{split, zeros}, static_cast<uint64_t>(axis + 1));
  SmallVector<int64_t> flat(shape);
  flat[axis] = length * stride;
  Value spread = reshapeTo(b, loc, widened, RankedTensorType::get(flat, type.getElementType()));
  SmallVector<int64_t> kept(shape);
  kept[axis] = (length - 1) * stride + 1;
  SmallVector<int64_t> start(shape.size(), 0), step(shape.size(), 1);
  return SliceOp::create(b, loc, RankedTensorType::get(kept, type.getElementType()), spread, start,
                         step);
}

/// `value[:, from:from+count]` along dimension 1.
static Value channels(OpBuilder &b, Location loc, Value value, int64_t from, int64_t count) {
  RankedTensorType type = typeOf(value);
  if (from == 0 && count == type.getDimSize(1))
    return value;
  SmallVector<int64_t> shape(type.getShape());
  shape[1] = count;
  SmallVector<int64_t> start(shape.size(), 0), step(shape.size(), 1);
  start[1] = from;
  return SliceOp::create(b, loc, RankedTensorType::get(shape, type.getElementType()), value, start,
                         step);
}

// Y[n,m,o] = sum_{c,k} Xpad[n,c,o s + k d] W[m,c,k] + bias[m] (per spatial
// dimension, channels within a group):
//   dX = conv(spread(dY, s), flip(W) with channels swapped, dilation d,
//             pads d (K - 1) - p, and what the last window left uncovered);
//   dW = conv(X^T, dY^T, stride d, dilation s, pads p) cut to K, per group;
//   dbias = sum of dY over batch and space.
LogicalResult ConvOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value g = resultGrads[0];
  Value x = getInput(), w = getFilter();
  RankedTensorType xType = typeOf(x), wType = typeOf(w), gType = typeOf(g);
  Type element = xType.getElementType();
  int64_t groups = getGroup();
  int64_t batch = xType.getDimSize(0), inChannels = xType.getDimSize(1);
  int64_t outChannels = wType.getDimSize(0);
  int64_t inPerGroup = inChannels / groups, outPerGroup = outChannels / groups;
  ArrayRef<int64_t> strides = getStrides(), pads = getPads(), dilations = getDilations();
  int64_t spatial = xType.getRank() - 2;

  // dX.
  Value spread = g;
  for (int64_t i = 0; i < spatial; ++i)
    spread = spreadAlong(b, loc, spread, 2 + i, strides[i]);
  SmallVector<int64_t> flipStart(wType.getRank(), 0), flipStep(wType.getRank(), 1);
  for (int64_t i = 0; i < spatial; ++i) {
    flipStart[2 + i] = wType.getDimSize(2 + i) - 1;
    flipStep[2 + i] = -1;
  }
  Value flipped = SliceOp::create(b, loc, wType, w, flipStart, flipStep);
  SmallVector<int64_t> kernel(wType.getShape().drop_front(2));
  SmallVector<int64_t> grouped{groups, outPerGroup, inPerGroup};
  grouped.append(kernel);
  Value swapped = reshapeTo(b, loc, flipped, RankedTensorType::get(grouped, element));
  SmallVector<int64_t> perm{0, 2, 1};
  for (int64_t i = 0; i < spatial; ++i)
    perm.push_back(3 + i);
  swapped = TransposeOp::create(b, loc, swapped, perm);
  SmallVector<int64_t> swappedShape{inChannels, outPerGroup};
  swappedShape.append(kernel);
  swapped = reshapeTo(b, loc, swapped, RankedTensorType::get(swappedShape, element));
  SmallVector<int64_t> dxPads(2 * spatial);
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t extent = dilations[i] * (kernel[i] - 1);
    int64_t begin = extent - pads[i];
    int64_t covered = (gType.getDimSize(2 + i) - 1) * strides[i] + 1;
    int64_t end = xType.getDimSize(2 + i) - covered - begin + extent;
    if (begin < 0 || end < 0)
      return emitOpError("has no gradient rule for padding wider than the dilated kernel");
    dxPads[i] = begin;
    dxPads[spatial + i] = end;
  }
  SmallVector<int64_t> ones(spatial, 1);
  operandGrads.push_back(ConvOp::create(b, loc, spread, swapped, Value(), ones, dxPads,
                                        dilations, static_cast<uint64_t>(groups)));

  // dW, one group at a time: batch and channels trade places.
  SmallVector<int64_t> swapBatch{1, 0};
  for (int64_t i = 0; i < spatial; ++i)
    swapBatch.push_back(2 + i);
  SmallVector<Value> perGroup;
  for (int64_t group = 0; group < groups; ++group) {
    Value xs = TransposeOp::create(b, loc, channels(b, loc, x, group * inPerGroup, inPerGroup),
                                   swapBatch);
    Value gs = TransposeOp::create(b, loc, channels(b, loc, g, group * outPerGroup, outPerGroup),
                                   swapBatch);
    Value full = ConvOp::create(b, loc, xs, gs, Value(), dilations, pads, strides, 1);
    SmallVector<int64_t> cut{inPerGroup, outPerGroup};
    cut.append(kernel);
    SmallVector<int64_t> start(cut.size(), 0), step(cut.size(), 1);
    Value window = typeOf(full).getShape() == ArrayRef<int64_t>(cut)
                       ? full
                       : Value(SliceOp::create(b, loc, RankedTensorType::get(cut, element), full,
                                               start, step));
    perGroup.push_back(TransposeOp::create(b, loc, window, swapBatch));
  }
  operandGrads.push_back(perGroup.size() == 1
                             ? perGroup.front()
                             : Value(ConcatOp::create(b, loc, perGroup, static_cast<uint64_t>(0))));
  (void)batch;

  if (Value bias = getBias()) {
    SmallVector<int64_t> axes{0};
    for (int64_t i = 0; i < spatial; ++i)
      axes.push_back(2 + i);
    operandGrads.push_back(ReduceSumOp::create(b, loc, g, axes, /*keepdims=*/false));
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

/// Pooling windows that tile the input: no padding or dilation, and along
/// each dimension a stride equal to the window, or a single window.
static bool windowsTile(ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                        ArrayRef<int64_t> pads, ArrayRef<int64_t> dilations,
                        RankedTensorType output) {
  for (auto [i, k] : llvm::enumerate(kernel))
    if (dilations[i] != 1 || pads[i] != 0 || pads[kernel.size() + i] != 0 ||
        (strides[i] != k && output.getDimSize(2 + i) != 1))
      return false;
  return true;
}

/// The input-shaped cotangent from one value per window position: `parts`
/// holds, for each position (i, j) of a kh x kw window in row-major order,
/// an output-shaped tensor; they are interleaved back onto the input's grid
/// and rows or columns no window covered get zeros.
static Value interleave(OpBuilder &b, Location loc, ArrayRef<Value> parts, int64_t kh, int64_t kw,
                        RankedTensorType inputType) {
  RankedTensorType part = typeOf(parts.front());
  Type element = part.getElementType();
  int64_t n = part.getDimSize(0), c = part.getDimSize(1), oh = part.getDimSize(2),
          ow = part.getDimSize(3);
  auto six = RankedTensorType::get({n, c, oh, 1, ow, 1}, element);
  SmallVector<Value> rows;
  for (int64_t i = 0; i < kh; ++i) {
    SmallVector<Value> row;
    for (int64_t j = 0; j < kw; ++j)
      row.push_back(reshapeTo(b, loc, parts[i * kw + j], six));
    rows.push_back(row.size() == 1 ? row.front()
                                   : Value(ConcatOp::create(b, loc, row, static_cast<uint64_t>(5))));
  }
  Value grid = rows.size() == 1 ? rows.front()
                                : Value(ConcatOp::create(b, loc, rows, static_cast<uint64_t>(3)));
  Value dense = reshapeTo(b, loc, grid, RankedTensorType::get({n, c, oh * kh, ow * kw}, element));
  // Windows that do not fit at the end were dropped: their elements get zeros.
  for (int64_t axis : {2, 3}) {
    int64_t missing = inputType.getDimSize(axis) - typeOf(dense).getDimSize(axis);
    if (missing > 0) {
      SmallVector<int64_t> zerosShape(typeOf(dense).getShape());
      zerosShape[axis] = missing;
      Value zeros = splat(b, loc, RankedTensorType::get(zerosShape, element), 0.0);
      dense = ConcatOp::create(b, loc, ValueRange{dense, zeros}, static_cast<uint64_t>(axis));
    }
  }
  return dense;
}

/// The elements at window position (i, j) of every window: a strided slice.
static Value windowPosition(OpBuilder &b, Location loc, Value x, int64_t i, int64_t j,
                            int64_t kh, int64_t kw, RankedTensorType outType) {
  auto type = RankedTensorType::get(outType.getShape(), typeOf(x).getElementType());
  return SliceOp::create(b, loc, type, x, ArrayRef<int64_t>{0, 0, i, j},
                         ArrayRef<int64_t>{1, 1, kh, kw});
}

// Each output is the maximum of its window; its cotangent goes to the first
// element (in row-major order) equal to it, as PyTorch's does, which needs
// windows that tile the input (2x2 stride 2, global pooling).
LogicalResult MaxPoolOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  RankedTensorType outType = typeOf(getOutput());
  ArrayRef<int64_t> kernel = getKernelShape();
  if (kernel.size() != 2 || getCeilMode() ||
      !windowsTile(kernel, getStrides(), getPads(), getDilations(), outType))
    return emitOpError("has no gradient rule for overlapping, padded, dilated or ceil-mode "
                       "windows yet; only windows that tile the input (stride = kernel)");
  int64_t kh = outType.getDimSize(2) == 1 ? typeOf(getInput()).getDimSize(2) : kernel[0];
  int64_t kw = outType.getDimSize(3) == 1 ? typeOf(getInput()).getDimSize(3) : kernel[1];
  Value g = resultGrads[0];
  Value zero = scalar(b, loc, elementOf(g), 0.0);
  Value taken; // some earlier position of the window held the maximum
  SmallVector<Value> parts;
  for (int64_t i = 0; i < kh; ++i)
    for (int64_t j = 0; j < kw; ++j) {
      Value at = windowPosition(b, loc, getInput(), i, j, kh, kw, outType);
      Value isMax = EqualOp::create(b, loc, at, getOutput());
      Value first = taken ? Value(AndOp::create(b, loc, isMax, NotOp::create(b, loc, taken)))
                          : isMax;
      taken = taken ? Value(OrOp::create(b, loc, taken, isMax)) : isMax;
      parts.push_back(WhereOp::create(b, loc, first, g, zero));
    }
  operandGrads.push_back(interleave(b, loc, parts, kh, kw, typeOf(getInput())));
  return success();
}

// Each output is the mean of its window's kh * kw elements, so each element
// gets its window's cotangent divided by kh * kw.
LogicalResult AveragePoolOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                            SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  RankedTensorType outType = typeOf(getOutput());
  ArrayRef<int64_t> kernel = getKernelShape();
  if (kernel.size() != 2 || getCeilMode() ||
      !windowsTile(kernel, getStrides(), getPads(), getDilations(), outType))
    return emitOpError("has no gradient rule for overlapping, padded, dilated or ceil-mode "
                       "windows yet; only windows that tile the input (stride = kernel)");
  int64_t kh = outType.getDimSize(2) == 1 ? typeOf(getInput()).getDimSize(2) : kernel[0];
  int64_t kw = outType.getDimSize(3) == 1 ? typeOf(getInput()).getDimSize(3) : kernel[1];
  Value share = MulOp::create(b, loc, resultGrads[0],
                              scalar(b, loc, elementOf(resultGrads[0]), 1.0 / (kh * kw)));
  SmallVector<Value> parts(kh * kw, share);
  operandGrads.push_back(interleave(b, loc, parts, kh, kw, typeOf(getInput())));
  return success();
}

} // namespace kiln
