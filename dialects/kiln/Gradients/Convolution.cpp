//===- Convolution.cpp - Gradient rules of convolution and pooling --------===//
//
// The convolution's gradients are convolutions again: the input's is the
// cotangent, dilated by the stride, correlated with the flipped filter whose
// input and output channels are swapped (a transposed convolution; strided,
// one per stride phase with that phase's taps, skipping the zeros); the
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

/// How many times the activations (cotangent and input together) a filter
/// must outweigh for the input gradient to flip them rather than it.
constexpr int64_t kFlipActivationsRatio = 4;

/// `value` [N, C, ...] read backwards along each spatial dimension.
static Value flipSpatial(OpBuilder &b, Location loc, Value value) {
  return reverseAlong(b, loc, value,
                      llvm::to_vector(llvm::seq<int64_t>(2, typeOf(value).getRank())));
}

/// A filter [F, C/g, K...] (already flipped) as the filter of the
/// transposed convolution: [C, F/g, K...], input and output channels
/// swapped within each of the `groups` groups.
static Value swapFilterChannels(OpBuilder &b, Location loc, Value filter, int64_t groups) {
  RankedTensorType type = typeOf(filter);
  Type element = type.getElementType();
  int64_t outPerGroup = type.getDimSize(0) / groups, inPerGroup = type.getDimSize(1);
  ArrayRef<int64_t> kernel = type.getShape().drop_front(2);
  SmallVector<int64_t> grouped{groups, outPerGroup, inPerGroup};
  grouped.append(kernel.begin(), kernel.end());
  Value swapped = reshapeTo(b, loc, filter, RankedTensorType::get(grouped, element));
  SmallVector<int64_t> perm{0, 2, 1};
  for (size_t i = 0; i < kernel.size(); ++i)
    perm.push_back(3 + i);
  swapped = TransposeOp::create(b, loc, swapped, perm);
  SmallVector<int64_t> swappedShape{groups * inPerGroup, outPerGroup};
  swappedShape.append(kernel.begin(), kernel.end());
  return reshapeTo(b, loc, swapped, RankedTensorType::get(swappedShape, element));
}

/// Interleaves the results [N, C, Q...] of the phases of a grid of
/// `strides` (phase r holds the rows q s + r; the last dimension's phase
/// varies fastest in `phases`) into [N, C, Q0 s0, Q1 s1, ...]: each phase
/// viewed as [N, C, Q0, 1, Q1, 1, ...], the phases of the last dimension
/// side by side, then of the one before, ...
static Value interleavePhases(OpBuilder &b, Location loc, ArrayRef<Value> phases,
                              ArrayRef<int64_t> strides) {
  RankedTensorType type = typeOf(phases.front());
  Type element = type.getElementType();
  int64_t spatial = strides.size();
  SmallVector<int64_t> columnShape(type.getShape().take_front(2));
  SmallVector<int64_t> interleaved(columnShape);
  for (int64_t i = 0; i < spatial; ++i) {
    columnShape.append({type.getDimSize(2 + i), 1});
    interleaved.push_back(type.getDimSize(2 + i) * strides[i]);
  }
  SmallVector<Value> parts;
  for (Value phase : phases)
    parts.push_back(reshapeTo(b, loc, phase, RankedTensorType::get(columnShape, element)));
  for (int64_t i = spatial - 1; i >= 0; --i) {
    if (strides[i] == 1)
      continue;
    SmallVector<Value> merged;
    for (size_t at = 0; at < parts.size(); at += strides[i])
      merged.push_back(ConcatOp::create(b, loc, ArrayRef(parts).slice(at, strides[i]),
                                        static_cast<uint64_t>(3 + 2 * i)));
    parts = std::move(merged);
  }
  return reshapeTo(b, loc, parts.front(), RankedTensorType::get(interleaved, element));
}

/// The window of `value` [N, C, ...] with `type`'s shape whose spatial
/// dimensions start at `corner`; `value` itself when its shape is `type`'s.
static Value cropTo(OpBuilder &b, Location loc, Value value, RankedTensorType type,
                    ArrayRef<int64_t> corner) {
  if (typeOf(value).getShape() == type.getShape())
    return value;
  SmallVector<int64_t> start{0, 0}, unit(type.getRank(), 1);
  start.append(corner.begin(), corner.end());
  return SliceOp::create(b, loc, RankedTensorType::get(type.getShape(), elementOf(value)), value,
                         start, unit);
}

/// The input gradient of a strided, undilated convolution, one stride phase
/// at a time, so that no multiply-add meets a zero of the spread cotangent.
/// Along a dimension of stride s, pad p and K taps, input position i reads
/// taps k = r + s m, r = (i + p) mod s, against cotangent positions
/// q - m, q = floor((i + p) / s):
///   dX[s q + r - p] = sum_m dY[q - m] W[r + s m],
/// a stride-1 correlation of dY with phase r's flipped taps. The phases'
/// results [N, C, Q...] interleave into [N, C, Q s...], of which dX is a
/// window. A phase without taps (K < s) contributes zeros. The spread
/// cotangent's convolution did s^2 times the work for a 2-D stride s.
static Value stridedInputGradient(OpBuilder &b, Location loc, Value g, Value w,
                                  RankedTensorType xType, ArrayRef<int64_t> strides,
                                  ArrayRef<int64_t> pads, int64_t groups) {
  RankedTensorType wType = typeOf(w), gType = typeOf(g);
  Type element = xType.getElementType();
  int64_t spatial = xType.getRank() - 2;
  int64_t batch = xType.getDimSize(0), channels = xType.getDimSize(1);
  // Per dimension: the first cotangent row q0 any input row needs, the rows
  // Q needed from it, and where dX starts in the interleaved result.
  SmallVector<int64_t> first(spatial), rows(spatial), offset(spatial);
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t s = strides[i], p = pads[i], extent = xType.getDimSize(2 + i);
    first[i] = p / s;
    rows[i] = (p + extent - 1) / s - first[i] + 1;
    offset[i] = p - first[i] * s;
  }
  SmallVector<int64_t> phaseShape{batch, channels};
  phaseShape.append(rows);
  SmallVector<int64_t> ones(spatial, 1);

  // Every phase, the last dimension's fastest.
  SmallVector<Value> phases;
  int64_t count = 1;
  for (int64_t s : strides)
    count *= s;
  for (int64_t index = 0; index < count; ++index) {
    SmallVector<int64_t> phase(spatial), taps(spatial);
    for (int64_t i = spatial - 1, rest = index; i >= 0; --i) {
      phase[i] = rest % strides[i];
      rest /= strides[i];
    }
    int64_t kernelSize = 1;
    for (int64_t i = 0; i < spatial; ++i) {
      int64_t k = wType.getDimSize(2 + i);
      taps[i] = phase[i] < k ? llvm::divideCeil(k - phase[i], strides[i]) : 0;
      kernelSize *= taps[i];
    }
    Value result;
    if (kernelSize == 0) {
      result = splat(b, loc, RankedTensorType::get(phaseShape, element), 0.0);
    } else {
      // Taps r + s m, flipped: from r + s (taps - 1) down by s.
      SmallVector<int64_t> start(wType.getRank(), 0), step(wType.getRank(), 1);
      SmallVector<int64_t> subShape(wType.getShape().take_front(2));
      for (int64_t i = 0; i < spatial; ++i) {
        start[2 + i] = phase[i] + strides[i] * (taps[i] - 1);
        step[2 + i] = -strides[i];
        subShape.push_back(taps[i]);
      }
      Value taken = SliceOp::create(b, loc, RankedTensorType::get(subShape, element), w, start, step);
      Value filter = swapFilterChannels(b, loc, taken, groups);
      // Output j of the correlation is cotangent row q = j - begin + taps - 1:
      // pad so that row q0 comes first, or drop the rows before it.
      SmallVector<int64_t> convPads(2 * spatial), crop(spatial);
      for (int64_t i = 0; i < spatial; ++i) {
        int64_t begin = std::max<int64_t>(0, taps[i] - 1 - first[i]);
        crop[i] = first[i] - (taps[i] - 1 - begin);
        int64_t produced = gType.getDimSize(2 + i) + begin - taps[i] + 1;
        convPads[i] = begin;
        convPads[spatial + i] = std::max<int64_t>(0, crop[i] + rows[i] - produced);
      }
      result = ConvOp::create(b, loc, g, filter, Value(), ones, convPads, ones,
                              static_cast<uint64_t>(groups));
      if (typeOf(result).getShape() != ArrayRef<int64_t>(phaseShape)) {
        SmallVector<int64_t> cropStart(phaseShape.size(), 0), unit(phaseShape.size(), 1);
        for (int64_t i = 0; i < spatial; ++i)
          cropStart[2 + i] = crop[i];
        result = SliceOp::create(b, loc, RankedTensorType::get(phaseShape, element), result,
                                 cropStart, unit);
      }
    }
    phases.push_back(result);
  }

  return cropTo(b, loc, interleavePhases(b, loc, phases, strides), xType, offset);
}

// Y[n,m,o] = sum_{c,k} Xpad[n,c,o s + k d] W[m,c,k] + bias[m] (per spatial
// dimension, channels within a group):
//   dX = conv(spread(dY, s), flip(W) with channels swapped, dilation d,
//             pads d (K - 1) - p, and what the last window left uncovered),
//        or, strided and undilated, one such convolution per stride phase
//        (stridedInputGradient);
//   dW = conv(X^T, dY^T, stride d, dilation s, pads p less the rows no
//        window reached, and X less them where p falls short), cut to K
//        where X could not be, per group;
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
  SmallVector<int64_t> kernel(wType.getShape().drop_front(2));

  // dX. Padding wider than the kernel makes outputs that read no input;
  // only the phased form crops them.
  bool widePadding = false;
  for (int64_t i = 0; i < spatial; ++i)
    widePadding |= pads[i] > dilations[i] * (kernel[i] - 1) ||
                   pads[spatial + i] > dilations[i] * (kernel[i] - 1);
  if ((widePadding || llvm::any_of(strides, [](int64_t stride) { return stride > 1; })) &&
      llvm::all_of(dilations, [](int64_t dilation) { return dilation == 1; })) {
    operandGrads.push_back(stridedInputGradient(b, loc, g, w, xType, strides, pads, groups));
  } else {
    // Correlating with the flipped filter is flipping the correlation of
    // the flipped cotangent with the filter as it is, its pads trading
    // ends. Where the filter far outweighs the cotangent and the input (a
    // late layer: 512x512x3x3 filters, 8x512x4x4 activations) the two small
    // flips replace the large one. They cost more than their size says: the
    // flip of the result stands between the convolution and its epilogue
    // (a ReLU's mask), which then runs as a pass of its own. ResNet-18's
    // 256x256x3x3 layer at 8x7x7, three times the activations, ran 1 ms
    // slower so; its 512-channel layers, 18 times, 0.5 ms faster each.
    bool flipActivations = kFlipActivationsRatio * (gType.getNumElements() +
                                                     xType.getNumElements()) <
                           wType.getNumElements();
    Value filter = flipActivations ? w : flipSpatial(b, loc, w);
    Value swapped = swapFilterChannels(b, loc, filter, groups);
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
    Value spread = g;
    for (int64_t i = 0; i < spatial; ++i)
      spread = spreadAlong(b, loc, spread, 2 + i, strides[i]);
    if (flipActivations) {
      spread = flipSpatial(b, loc, spread);
      for (int64_t i = 0; i < spatial; ++i)
        std::swap(dxPads[i], dxPads[spatial + i]);
    }
    SmallVector<int64_t> ones(spatial, 1);
    Value dx = ConvOp::create(b, loc, spread, swapped, Value(), ones, dxPads, dilations,
                              static_cast<uint64_t>(groups));
    operandGrads.push_back(flipActivations ? flipSpatial(b, loc, dx) : dx);
  }

  // dW, one group at a time: batch and channels trade places. Rows that
  // the forward windows left uncovered at the end would make the
  // correlation longer than the kernel; they are dropped from its end
  // padding, and from the input's end where the padding is too short (a
  // 1x1 at stride 2 on an even size reads no last row), so that no output
  // is computed to be cut. An input every window misses (all of it past
  // the last window, behind a start padding wider than the kernel) is not
  // cut to nothing: its correlation is computed whole and cut after.
  SmallVector<int64_t> swapBatch{1, 0};
  for (int64_t i = 0; i < spatial; ++i)
    swapBatch.push_back(2 + i);
  SmallVector<int64_t> dwPads(pads);
  SmallVector<int64_t> croppedShape(xType.getShape());
  for (int64_t i = 0; i < spatial; ++i) {
    int64_t needed =
        dilations[i] * (kernel[i] - 1) + (gType.getDimSize(2 + i) - 1) * strides[i] + 1;
    int64_t surplus = xType.getDimSize(2 + i) + pads[i] + pads[spatial + i] - needed;
    int64_t fromPads = std::clamp<int64_t>(surplus, 0, pads[spatial + i]);
    dwPads[spatial + i] -= fromPads;
    int64_t cut = std::max<int64_t>(0, surplus - fromPads);
    if (cut < croppedShape[2 + i])
      croppedShape[2 + i] -= cut;
  }
  Value xUsed = x;
  if (ArrayRef<int64_t>(croppedShape) != xType.getShape())
    xUsed = SliceOp::create(b, loc, RankedTensorType::get(croppedShape, element), x,
                            SmallVector<int64_t>(croppedShape.size(), 0),
                            SmallVector<int64_t>(croppedShape.size(), 1));
  SmallVector<Value> perGroup;
  for (int64_t group = 0; group < groups; ++group) {
    Value xs = TransposeOp::create(b, loc, channels(b, loc, xUsed, group * inPerGroup, inPerGroup),
                                   swapBatch);
    Value gs = TransposeOp::create(b, loc, channels(b, loc, g, group * outPerGroup, outPerGroup),
                                   swapBatch);
    Value full = ConvOp::create(b, loc, xs, gs, Value(), dilations, dwPads, strides, 1);
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
// (first = min over (i, j) of X_ij == Y ? i * kw + j : size).
//
// Its cotangent goes back one stride phase of the padded input at a time,
// as a strided convolution's does: along a dimension of stride s, window o's
// tap i lands on padded row s o + d i, which is row q = o + m of phase r,
// where d i = s m + r. So phase r's rows are
//   dXp[s q + r] = sum over taps i of phase r of (first[q - m] == i ? dY[q - m] : 0),
// elementwise over shifted windows of dY and first (padded with m rows of
// nothing in front), with no tensor of the input's size but the result. The
// phases interleave into the padded grid, of which dX is a window. Each
// input element is summed over the 2x2 windows of a 3x3, stride-2 pool
// that cover it, not over all nine positions.
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
  Value first;
  for (int64_t i = 0; i < kh; ++i)
    for (int64_t j = 0; j < kw; ++j) {
      Value view = SliceOp::create(b, loc, outLike, padded,
                                   ArrayRef<int64_t>{0, 0, i * dilations[0], j * dilations[1]},
                                   ArrayRef<int64_t>{1, 1, strides[0], strides[1]});
      Value isMax = EqualOp::create(b, loc, view, y);
      Value position = scalar(b, loc, element, double(i * kw + j));
      Value none = scalar(b, loc, element, double(kh * kw));
      Value candidate = WhereOp::create(b, loc, isMax, position, none);
      first = first ? Value(MinOp::create(b, loc, first, candidate)) : candidate;
    }

  // Per dimension: the phase's rows Q, and the most rows a tap shifts by.
  SmallVector<int64_t> rows(2), shift(2);
  for (int a = 0; a < 2; ++a) {
    rows[a] = llvm::divideCeil(paddedType.getDimSize(2 + a), strides[a]);
    shift[a] = dilations[a] * (kernel[a] - 1) / strides[a];
  }
  // dY and first with `shift` rows in front and enough behind for Q rows.
  Value gShifted = g, firstShifted = first;
  for (int a = 0; a < 2; ++a) {
    int64_t behind = std::max<int64_t>(0, rows[a] - outType.getDimSize(2 + a));
    gShifted = padAlong(b, loc, gShifted, 2 + a, shift[a], behind, 0.0);
    firstShifted = padAlong(b, loc, firstShifted, 2 + a, shift[a], behind, double(kh * kw));
  }
  auto phaseType =
      RankedTensorType::get({outType.getDimSize(0), outType.getDimSize(1), rows[0], rows[1]},
                            element);
  SmallVector<Value> phases(strides[0] * strides[1]);
  for (int64_t i = 0; i < kh; ++i)
    for (int64_t j = 0; j < kw; ++j) {
      int64_t at[2] = {i * dilations[0], j * dilations[1]};
      SmallVector<int64_t> start{0, 0}, unit(4, 1);
      for (int a = 0; a < 2; ++a)
        start.push_back(shift[a] - at[a] / strides[a]);
      // One op per statement, so that the IR's order is not the compiler's
      // order of a call's arguments.
      Value position = SliceOp::create(b, loc, phaseType, firstShifted, start, unit);
      Value tap = scalar(b, loc, element, double(i * kw + j));
      Value chosen = EqualOp::create(b, loc, position, tap);
      Value cotangent = SliceOp::create(b, loc, phaseType, gShifted, start, unit);
      Value share = WhereOp::create(b, loc, chosen, cotangent, scalar(b, loc, element, 0.0));
      Value &phase = phases[(at[0] % strides[0]) * strides[1] + at[1] % strides[1]];
      phase = phase ? Value(AddOp::create(b, loc, phase, share)) : share;
    }
  for (Value &phase : phases)
    if (!phase)
      phase = splat(b, loc, phaseType, 0.0);
  return cropTo(b, loc, interleavePhases(b, loc, phases, strides), inType,
                ArrayRef<int64_t>{pads[0], pads[1]});
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
  if (inType.getRank() != 4)
    return emitOpError("has no gradient rule on blocked images");
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
  if (inType.getRank() != 4)
    return emitOpError("has no gradient rule on blocked images");
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
