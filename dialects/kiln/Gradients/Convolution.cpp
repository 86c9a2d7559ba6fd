//===- Convolution.cpp - Gradient rules of convolution and pooling --------===//
//
// The convolution's gradients are convolutions again: the input's is the
// cotangent, dilated by the stride, correlated with the flipped filter whose
// input and output channels are swapped (a transposed convolution); the
// filter's correlates the input with the cotangent, batch and channels
// exchanged, the stride and dilation trading places. Pooling windows that
// tile the input are undone by viewing the input as one window per row.
//
//===----------------------------------------------------------------------===//
#include "dialects/kiln/Gradients/GradientUtils.h"

#include <limits>

using namespace mlir;
using namespace kiln::grad;

namespace kiln {

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

/// Pooling over windows that tile the input, as tensors with one window per
/// row: [N, C, OH, OW, kh * kw] views of the input (the first OH * kh rows
/// and OW * kw columns) and back.
struct Windows {
  int64_t n, c, oh, ow, kh, kw;
  Type element;

  static Windows of(Value input, RankedTensorType output, int64_t kh, int64_t kw) {
    RankedTensorType type = typeOf(input);
    return {type.getDimSize(0), type.getDimSize(1), output.getDimSize(2), output.getDimSize(3),
            kh, kw, type.getElementType()};
  }
  RankedTensorType typeWith(ArrayRef<int64_t> shape) const {
    return RankedTensorType::get(shape, element);
  }

  /// x[N, C, H, W] -> [N, C, OH, OW, kh * kw].
  Value split(OpBuilder &b, Location loc, Value x) const {
    RankedTensorType type = typeOf(x);
    if (type.getDimSize(2) != oh * kh || type.getDimSize(3) != ow * kw)
      x = SliceOp::create(b, loc, typeWith({n, c, oh * kh, ow * kw}), x,
                          ArrayRef<int64_t>{0, 0, 0, 0}, ArrayRef<int64_t>{1, 1, 1, 1});
    Value six = reshapeTo(b, loc, x, typeWith({n, c, oh, kh, ow, kw}));
    Value rows = TransposeOp::create(b, loc, six, ArrayRef<int64_t>{0, 1, 2, 4, 3, 5});
    return reshapeTo(b, loc, rows, typeWith({n, c, oh, ow, kh * kw}));
  }

  /// The inverse of split, with zeros for the rows and columns no window
  /// covered, shaped like `input`.
  Value merge(OpBuilder &b, Location loc, Value rows, RankedTensorType input) const {
    Value six = reshapeTo(b, loc, rows, typeWith({n, c, oh, ow, kh, kw}));
    Value grid = TransposeOp::create(b, loc, six, ArrayRef<int64_t>{0, 1, 2, 4, 3, 5});
    Value dense = reshapeTo(b, loc, grid, typeWith({n, c, oh * kh, ow * kw}));
    for (int64_t axis : {2, 3}) {
      int64_t missing = input.getDimSize(axis) - typeOf(dense).getDimSize(axis);
      if (missing > 0) {
        SmallVector<int64_t> zerosShape(typeOf(dense).getShape());
        zerosShape[axis] = missing;
        Value zeros = splat(b, loc, typeWith(zerosShape), 0.0);
        dense = ConcatOp::create(b, loc, ValueRange{dense, zeros}, static_cast<uint64_t>(axis));
      }
    }
    return dense;
  }

  /// An output-shaped tensor as one value per window: [N, C, OH, OW, 1].
  Value perWindow(OpBuilder &b, Location loc, Value value) const {
    return reshapeTo(b, loc, value, typeWith({n, c, oh, ow, 1}));
  }
};

/// The window extent of a pooling op whose output has one window along a
/// dimension: the whole input.
static std::pair<int64_t, int64_t> windowExtent(ArrayRef<int64_t> kernel, RankedTensorType input,
                                                RankedTensorType output) {
  return {output.getDimSize(2) == 1 ? input.getDimSize(2) : kernel[0],
          output.getDimSize(3) == 1 ? input.getDimSize(3) : kernel[1]};
}

// Windows that overlap, pad or dilate: for each window position (i, j), the
// strided view X_ij of the (-inf padded) input holds that position's element
// of every window. The first position equal to the maximum wins
// (first = min over (i, j) of X_ij == Y ? i * kw + j : size), and its
// cotangent is spread back onto the input's grid at offset (i, j): the sum of
// those kh * kw placed tensors, cropped to the input, is dX.
static Value overlappingMaxPoolGradient(OpBuilder &b, MaxPoolOp op, ArrayRef<int64_t> pads,
                                        Value g) {
  Location loc = op.getLoc();
  Value x = op.getInput(), y = op.getOutput();
  RankedTensorType inType = typeOf(x), outType = typeOf(y);
  Type element = inType.getElementType();
  ArrayRef<int64_t> kernel = op.getKernelShape(), strides = op.getStrides(),
                    dilations = op.getDilations();
  int64_t kh = kernel[0], kw = kernel[1];
  double inf = std::numeric_limits<double>::infinity();
  Value padded = padAlong(b, loc, x, 2, pads[0], pads[2], -inf);
  padded = padAlong(b, loc, padded, 3, pads[1], pads[3], -inf);
  RankedTensorType paddedType = typeOf(padded);
  auto outLike = RankedTensorType::get(outType.getShape(), element);
  SmallVector<Value> atPosition;
  Value first;
  for (int64_t i = 0; i < kh; ++i)
    for (int64_t j = 0; j < kw; ++j) {
      Value view = SliceOp::create(b, loc, outLike, padded,
                                   ArrayRef<int64_t>{0, 0, i * dilations[0], j * dilations[1]},
                                   ArrayRef<int64_t>{1, 1, strides[0], strides[1]});
      atPosition.push_back(view);
      Value candidate = WhereOp::create(b, loc, EqualOp::create(b, loc, view, y),
                                        scalar(b, loc, element, double(i * kw + j)),
                                        scalar(b, loc, element, double(kh * kw)));
      first = first ? Value(MinOp::create(b, loc, first, candidate)) : candidate;
    }
  Value sum;
  for (int64_t i = 0; i < kh; ++i)
    for (int64_t j = 0; j < kw; ++j) {
      Value chosen = EqualOp::create(b, loc, first, scalar(b, loc, element, double(i * kw + j)));
      Value share = WhereOp::create(b, loc, chosen, g, scalar(b, loc, element, 0.0));
      Value placed = spreadAlong(b, loc, spreadAlong(b, loc, share, 2, strides[0]), 3, strides[1]);
      int64_t top = i * dilations[0], left = j * dilations[1];
      placed = padAlong(b, loc, placed, 2, top,
                        paddedType.getDimSize(2) - top - typeOf(placed).getDimSize(2), 0.0);
      placed = padAlong(b, loc, placed, 3, left,
                        paddedType.getDimSize(3) - left - typeOf(placed).getDimSize(3), 0.0);
      sum = sum ? Value(AddOp::create(b, loc, sum, placed)) : placed;
    }
  if (typeOf(sum).getShape() == inType.getShape())
    return sum;
  return SliceOp::create(b, loc, inType, sum, ArrayRef<int64_t>{0, 0, pads[0], pads[1]},
                         ArrayRef<int64_t>{1, 1, 1, 1});
}

// Each output is the maximum of its window; its cotangent goes to the first
// element (in row-major order) equal to it, as PyTorch's does. With windows
// that tile the input (2x2 stride 2, global pooling), viewed one window per
// row: first = min over the row of (x == y ? position : size), and
// dx = position == first ? dy : 0. Everything is elementwise over the input
// or a reduction over a row of kh * kw, so it fuses into two kernels.
LogicalResult MaxPoolOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                        SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  RankedTensorType outType = typeOf(getOutput()), inType = typeOf(getInput());
  ArrayRef<int64_t> kernel = getKernelShape();
  if (kernel.size() != 2)
    return emitOpError("has no gradient rule for non-2-D windows yet");
  if (getCeilMode()) {
    // Ceil mode is floor mode over an input padded at the end with as many
    // -inf rows and columns as the last windows reach past it.
    SmallVector<int64_t> pads(getPads());
    for (int i = 0; i < 2; ++i) {
      int64_t reach = (outType.getDimSize(2 + i) - 1) * getStrides()[i] +
                      (kernel[i] - 1) * getDilations()[i] + 1;
      pads[2 + i] = std::max(pads[2 + i], reach - inType.getDimSize(2 + i) - pads[i]);
    }
    operandGrads.push_back(overlappingMaxPoolGradient(b, *this, pads, resultGrads[0]));
    return success();
  }
  if (!windowsTile(kernel, getStrides(), getPads(), getDilations(), outType)) {
    operandGrads.push_back(overlappingMaxPoolGradient(b, *this, getPads(), resultGrads[0]));
    return success();
  }
  auto [kh, kw] = windowExtent(kernel, inType, outType);
  Windows windows = Windows::of(getInput(), outType, kh, kw);
  int64_t size = kh * kw;
  SmallVector<double> positions;
  for (int64_t i = 0; i < size; ++i)
    positions.push_back(i);
  auto positionsType = RankedTensorType::get({size}, windows.element);
  Value position = ConstantOp::create(
      b, loc, DenseElementsAttr::get(positionsType, llvm::map_to_vector(positions, [&](double v) {
                                       return cast<Attribute>(b.getFloatAttr(windows.element, v));
                                     })));
  Value isMax = EqualOp::create(b, loc, windows.split(b, loc, getInput()),
                                windows.perWindow(b, loc, getOutput()));
  Value candidate =
      WhereOp::create(b, loc, isMax, position, scalar(b, loc, windows.element, double(size)));
  Value first = ReduceMinOp::create(b, loc, candidate, ArrayRef<int64_t>{4}, /*keepdims=*/true);
  Value chosen = EqualOp::create(b, loc, position, first);
  Value rows = WhereOp::create(b, loc, chosen, windows.perWindow(b, loc, resultGrads[0]),
                               scalar(b, loc, windows.element, 0.0));
  operandGrads.push_back(windows.merge(b, loc, rows, inType));
  return success();
}

// Each output is the mean of its window's kh * kw elements, so each element
// gets its window's cotangent divided by kh * kw.
LogicalResult AveragePoolOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                            SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  RankedTensorType outType = typeOf(getOutput()), inType = typeOf(getInput());
  ArrayRef<int64_t> kernel = getKernelShape();
  if (kernel.size() != 2 || getCeilMode() ||
      !windowsTile(kernel, getStrides(), getPads(), getDilations(), outType))
    return emitOpError("has no gradient rule for overlapping, padded, dilated or ceil-mode "
                       "windows yet; only windows that tile the input (stride = kernel)");
  auto [kh, kw] = windowExtent(kernel, inType, outType);
  Windows windows = Windows::of(getInput(), outType, kh, kw);
  Value share = splat(b, loc, RankedTensorType::get({kh * kw}, windows.element), 1.0 / (kh * kw));
  Value rows = MulOp::create(b, loc, windows.perWindow(b, loc, resultGrads[0]), share);
  operandGrads.push_back(windows.merge(b, loc, rows, inType));
  return success();
}

} // namespace kiln
