//===- OnnxComposite.cpp - ONNX ops written as other kiln ops ------------===//
//
// ONNX ops that are compositions of ops Kiln already has, so that they fuse
// and run on every back end with no code of their own (and train where each
// piece has a gradient rule):
//   - DepthToSpace, SpaceToDepth: a reshape, a transpose and a reshape;
//   - EyeLike, HannWindow, HammingWindow, BlackmanWindow: constants (shapes
//     and sizes are static);
//   - Hardmax, OneHot: comparisons with an index ramp along the axis;
//   - Shrink: two comparisons and selects;
//   - InstanceNormalization, MeanVarianceNormalization: mean and variance
//     reductions;
//   - LRN: a sum of shifted squares along the channels;
//   - Det of 1x1, 2x2 and 3x3 matrices: the cofactor expansion;
//   - MaxPool's Indices output: each window tap's element compared with the
//     window's maximum, selecting that tap's index from a constant map.
//
//===----------------------------------------------------------------------===//
#include "compiler/Importer.h"

#include <array>
#include <cmath>

namespace kiln::onnx_import {
namespace {

/// An integer constant of `rank` dimensions, all of size 1 except `axis`,
/// which holds 0, 1, ..., size - 1: compared with indices, it broadcasts
/// them into one-hot masks along `axis`.
Value indexRamp(Importer &im, Location loc, Type element, int64_t rank, int64_t axis,
                int64_t size) {
  SmallVector<int64_t> shape(rank, 1);
  shape[axis] = size;
  SmallVector<APInt> values;
  for (int64_t i = 0; i < size; ++i)
    values.push_back(APInt(element.getIntOrFloatBitWidth(), i, /*isSigned=*/true));
  return im.constant(loc, DenseElementsAttr::get(RankedTensorType::get(shape, element), values));
}

/// A positive `blocksize` that divides what it must, or a failure naming it.
FailureOr<int64_t> blockSize(Importer &im, Node &n, RankedTensorType type) {
  int64_t b = n.getInt("blocksize", 0);
  if (type.getRank() != 4) {
    (void)im.failNode(n, ImportFailure::Invalid,
                      "the input must be [N, C, H, W], got " + describeShape(type.getShape()));
    return failure();
  }
  if (b <= 0 || b > (int64_t(1) << 20)) {
    (void)im.failNode(n, ImportFailure::Invalid,
                      "blocksize must be positive, got " + std::to_string(b));
    return failure();
  }
  return b;
}

// DCR: [N, b, b, C/b², H, W] -> [N, C/b², H, b, W, b];
// CRD: [N, C/b², b, b, H, W] -> [N, C/b², H, b, W, b].
Results importDepthToSpace(Importer &im, Node &n) {
  RankedTensorType type = typeOf(n.input(0));
  FailureOr<int64_t> b = blockSize(im, n, type);
  if (failed(b))
    return failure();
  auto shape = type.getShape();
  int64_t c = shape[1], h = shape[2], w = shape[3];
  if (c % (*b * *b) != 0)
    return im.failNode(n, ImportFailure::Invalid,
                       "the channels (" + std::to_string(c) + ") must be a multiple of blocksize² (" +
                           std::to_string(*b * *b) + ")");
  std::string mode = n.getString("mode", "DCR");
  if (mode != "DCR" && mode != "CRD")
    return im.failNode(n, ImportFailure::Invalid, "unknown mode '" + mode + "' (DCR, CRD)");
  int64_t depth = c / (*b * *b);
  bool dcr = mode == "DCR";
  Value v = dcr ? reshapeTo(im.builder, n.loc, n.input(0), {shape[0], *b, *b, depth, h, w})
                : reshapeTo(im.builder, n.loc, n.input(0), {shape[0], depth, *b, *b, h, w});
  SmallVector<int64_t> perm = dcr ? SmallVector<int64_t>{0, 3, 4, 1, 5, 2}
                                  : SmallVector<int64_t>{0, 1, 4, 2, 5, 3};
  v = TransposeOp::create(im.builder, n.loc, v, perm);
  return one(reshapeTo(im.builder, n.loc, v, {shape[0], depth, h * *b, w * *b}));
}

// [N, C, H/b, b, W/b, b] -> [N, b, b, C, H/b, W/b].
Results importSpaceToDepth(Importer &im, Node &n) {
  RankedTensorType type = typeOf(n.input(0));
  FailureOr<int64_t> b = blockSize(im, n, type);
  if (failed(b))
    return failure();
  auto shape = type.getShape();
  int64_t c = shape[1], h = shape[2], w = shape[3];
  if (h % *b != 0 || w % *b != 0)
    return im.failNode(n, ImportFailure::Invalid,
                       "the height and width (" + std::to_string(h) + ", " + std::to_string(w) +
                           ") must be multiples of blocksize (" + std::to_string(*b) + ")");
  Value v = reshapeTo(im.builder, n.loc, n.input(0), {shape[0], c, h / *b, *b, w / *b, *b});
  v = TransposeOp::create(im.builder, n.loc, v, ArrayRef<int64_t>{0, 3, 5, 1, 2, 4});
  return one(reshapeTo(im.builder, n.loc, v, {shape[0], c * *b * *b, h / *b, w / *b}));
}

Results importEyeLike(Importer &im, Node &n) {
  RankedTensorType type = typeOf(n.input(0));
  if (type.getRank() != 2)
    return im.failNode(n, ImportFailure::Invalid,
                       "the input must be a matrix, got " + describeShape(type.getShape()));
  Type element = type.getElementType();
  if (n.attr("dtype")) {
    FailureOr<Type> given = im.elementType(n.getInt("dtype", 0), n.loc, "EyeLike's 'dtype'");
    if (failed(given))
      return failure();
    element = *given;
  }
  int64_t k = n.getInt("k", 0), rows = type.getDimSize(0), cols = type.getDimSize(1);
  if (failed(im.checkBuiltConstant(n, type.getNumElements(), "the identity matrix")))
    return failure();
  Attribute zero = im.builder.getZeroAttr(element);
  Attribute unit = llvm::isa<FloatType>(element) ? Attribute(im.builder.getFloatAttr(element, 1))
                                                 : Attribute(im.builder.getIntegerAttr(element, 1));
  SmallVector<Attribute> values;
  values.reserve(rows * cols);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      values.push_back(j - i == k ? unit : zero);
  return one(im.constant(n.loc, DenseElementsAttr::get(
                                    RankedTensorType::get(type.getShape(), element), values)));
}

/// A generalized cosine window of `size` points, sum over k of
/// (-1)^k a[k] cos(2πkn / N), with N = size when `periodic`, else size - 1.
template <int Terms>
Handler cosineWindow(std::array<double, Terms> a) {
  return [a](Importer &im, Node &n) -> Results {
    FailureOr<double> sizeValue = im.constantScalar(n, 0, "size");
    if (failed(sizeValue))
      return failure();
    if (!(*sizeValue >= 1 && *sizeValue <= double(int64_t(1) << 32)))
      return im.failNode(n, ImportFailure::Invalid,
                         "size must be at least 1, got " + std::to_string(*sizeValue));
    auto size = static_cast<int64_t>(*sizeValue);
    if (failed(im.checkBuiltConstant(n, size, "the window")))
      return failure();
    FailureOr<Type> element =
        im.elementType(n.getInt("output_datatype", 1), n.loc, "the window's 'output_datatype'");
    if (failed(element))
      return failure();
    double period = n.getInt("periodic", 1) != 0 ? size : size - 1;
    SmallVector<Attribute> values;
    for (int64_t i = 0; i < size; ++i) {
      double v = 0;
      for (int k = 0; k < Terms; ++k)
        v += (k % 2 ? -a[k] : a[k]) *
             (period == 0 ? 1.0 : std::cos(2 * M_PI * k * double(i) / period));
      values.push_back(im.numberAttr(*element, v));
    }
    return one(im.constant(
        n.loc, DenseElementsAttr::get(RankedTensorType::get({size}, *element), values)));
  };
}

/// The axis attribute for rank `rank`, negative values counted from the
/// end, or a failure naming the valid range.
FailureOr<int64_t> axisIn(Importer &im, Node &n, int64_t dflt, int64_t rank) {
  int64_t axis = n.getInt("axis", dflt);
  if (axis < -rank || axis >= rank) {
    (void)im.failNode(n, ImportFailure::Invalid,
                      "axis " + std::to_string(axis) + " is out of range for rank " +
                          std::to_string(rank));
    return failure();
  }
  return axis < 0 ? axis + rank : axis;
}

// 1 where the element is the first maximum along the axis, else 0. Before
// opset 13 the input is coerced to a matrix split at the axis.
Results importHardmax(Importer &im, Node &n) {
  OpBuilder &b = im.builder;
  Value x = n.input(0);
  RankedTensorType type = typeOf(x);
  if (type.getRank() == 0)
    return im.failNode(n, ImportFailure::Invalid, "the input must have at least one dimension");
  FailureOr<int64_t> axis = axisIn(im, n, n.opset < 13 ? 1 : -1, type.getRank());
  if (failed(axis))
    return failure();
  Value v = x;
  int64_t along = *axis;
  if (n.opset < 13) {
    v = FlattenOp::create(b, n.loc, x, *axis);
    along = 1;
  }
  RankedTensorType vType = typeOf(v);
  if (failed(im.checkBuiltConstant(n, vType.getDimSize(along), "the index ramp")))
    return failure();
  Value first = ArgMaxOp::create(b, n.loc, v, along, /*keepdims=*/true, /*select_last_index=*/false);
  Value ramp = indexRamp(im, n.loc, b.getI64Type(), vType.getRank(), along,
                         vType.getDimSize(along));
  Value mask = EqualOp::create(b, n.loc, ramp, first);
  Value y = CastOp::create(b, n.loc, vType, mask);
  return one(v == x ? y : ReshapeOp::create(b, n.loc, type, y));
}

// indices [d...] -> [d..., depth, d'...] with `depth` inserted at the axis:
// on_value where the (wrapped) index equals the position, off_value
// elsewhere, and off_value all along for an index outside [-depth, depth).
Results importOneHot(Importer &im, Node &n) {
  OpBuilder &b = im.builder;
  Location loc = n.loc;
  Value indices = n.input(0), values = n.input(2);
  if (!indices || !n.input(1) || !values)
    return im.failNode(n, ImportFailure::Invalid, "needs indices, depth and values");
  FailureOr<double> depthValue = im.constantScalar(n, 1, "depth");
  if (failed(depthValue))
    return failure();
  if (!(*depthValue >= 1 && *depthValue <= double(int64_t(1) << 40)))
    return im.failNode(n, ImportFailure::Invalid,
                       "depth must be at least 1, got " + std::to_string(*depthValue));
  auto depth = static_cast<int64_t>(*depthValue);
  if (failed(im.checkBuiltConstant(n, depth, "the ramp of depth " + std::to_string(depth))))
    return failure();
  RankedTensorType indexType = typeOf(indices), valueType = typeOf(values);
  if (valueType.getNumElements() != 2)
    return im.failNode(n, ImportFailure::Invalid,
                       "values must hold [off_value, on_value], got " +
                           describeShape(valueType.getShape()));
  int64_t rank = indexType.getRank() + 1;
  FailureOr<int64_t> axis = axisIn(im, n, -1, rank);
  if (failed(axis))
    return failure();

  // Indices of any numeric type become int64 (floats truncated, as ONNX
  // says), negative ones counted from depth.
  Type i64 = b.getI64Type();
  Value index = indices;
  if (indexType.getElementType() != i64)
    index = CastOp::create(b, loc, RankedTensorType::get(indexType.getShape(), i64), indices);
  Value negative = LessOp::create(b, loc, index, im.splat(loc, i64, 0));
  Value wrapped = AddOp::create(b, loc, index, im.intSplat(loc, i64, depth));
  index = WhereOp::create(b, loc, negative, wrapped, index);
  index = UnsqueezeOp::create(b, loc, index, ArrayRef<int64_t>{*axis});
  Value mask = EqualOp::create(b, loc, index, indexRamp(im, loc, i64, rank, *axis, depth));

  Type element = valueType.getElementType();
  auto scalar = RankedTensorType::get({}, element);
  Value flat = reshapeTo(im.builder, loc, values, {2});
  auto pick = [&](int64_t i) {
    auto one = RankedTensorType::get({1}, element);
    Value slice = SliceOp::create(b, loc, one, flat, ArrayRef<int64_t>{i}, ArrayRef<int64_t>{1});
    return ReshapeOp::create(b, loc, scalar, slice);
  };
  return one(WhereOp::create(b, loc, mask, pick(1), pick(0)));
}

// y = x + bias where x < -lambd, x - bias where x > lambd, else 0.
Results importShrink(Importer &im, Node &n) {
  OpBuilder &b = im.builder;
  Location loc = n.loc;
  Value x = n.input(0);
  Type element = typeOf(x).getElementType();
  double lambd = n.getFloat("lambd", 0.5f), bias = n.getFloat("bias", 0.0f);
  Value below = LessOp::create(b, loc, x, im.splat(loc, element, -lambd));
  Value above = GreaterOp::create(b, loc, x, im.splat(loc, element, lambd));
  Value zero = im.splat(loc, element, 0);
  Value raised = AddOp::create(b, loc, x, im.splat(loc, element, bias));
  Value lowered = SubOp::create(b, loc, x, im.splat(loc, element, bias));
  Value inner = WhereOp::create(b, loc, above, lowered, zero);
  return one(WhereOp::create(b, loc, below, raised, inner));
}

/// (x - mean) and the mean of its squares over `axes` (kept as size 1).
std::pair<Value, Value> centeredAndVariance(OpBuilder &b, Location loc, Value x,
                                            ArrayRef<int64_t> axes) {
  Value mean = ReduceMeanOp::create(b, loc, x, axes, /*keepdims=*/true);
  Value centered = SubOp::create(b, loc, x, mean);
  Value variance = ReduceMeanOp::create(b, loc, MulOp::create(b, loc, centered, centered), axes,
                                        /*keepdims=*/true);
  return {centered, variance};
}

// y = scale[c] * (x - mean) / sqrt(var + epsilon) + B[c], statistics over
// each instance's spatial dimensions.
Results importInstanceNorm(Importer &im, Node &n) {
  OpBuilder &b = im.builder;
  Location loc = n.loc;
  Value x = n.input(0), scale = n.input(1), bias = n.input(2);
  RankedTensorType type = typeOf(x);
  if (type.getRank() < 3 || !scale || !bias)
    return im.failNode(n, ImportFailure::Invalid,
                       "needs an input [N, C, d1, ...], a scale and a bias, got input " +
                           describeShape(type.getShape()));
  int64_t channels = type.getDimSize(1);
  for (Value v : {scale, bias})
    if (typeOf(v).getShape() != ArrayRef<int64_t>{channels} ||
        typeOf(v).getElementType() != type.getElementType())
      return im.failNode(n, ImportFailure::Invalid,
                         "the scale and bias must have one element per channel, " +
                             std::to_string(channels) + ", of the input's type");
  SmallVector<int64_t> axes, perChannel(type.getRank(), 1);
  for (int64_t i = 2; i < type.getRank(); ++i)
    axes.push_back(i);
  perChannel[1] = channels;
  Type element = type.getElementType();
  auto [centered, variance] = centeredAndVariance(b, loc, x, axes);
  Value epsilon = im.splat(loc, element, n.getFloat("epsilon", 1e-5f));
  Value deviation = SqrtOp::create(b, loc, AddOp::create(b, loc, variance, epsilon));
  Value normalized = DivOp::create(b, loc, centered, deviation);
  Value scaled = MulOp::create(b, loc, normalized, reshapeTo(im.builder, loc, scale, perChannel));
  return one(AddOp::create(b, loc, scaled, reshapeTo(im.builder, loc, bias, perChannel)));
}

// ONNX's function body: (x - E[x]) / (sqrt(E[x²] - E[x]²) + 1e-9) over
// `axes` (default [0, 2, 3]).
Results importMeanVarianceNorm(Importer &im, Node &n) {
  OpBuilder &b = im.builder;
  Location loc = n.loc;
  Value x = n.input(0);
  RankedTensorType type = typeOf(x);
  SmallVector<int64_t> given = n.getInts("axes").value_or(SmallVector<int64_t>{0, 2, 3});
  FailureOr<SmallVector<int64_t>> axes = normalizeAxes(given, type.getRank());
  if (failed(axes))
    return im.failNode(n, ImportFailure::Invalid,
                       "axes out of range for input " + describeShape(type.getShape()));
  Type element = type.getElementType();
  Value mean = ReduceMeanOp::create(b, loc, x, *axes, /*keepdims=*/true);
  Value meanOfSquares =
      ReduceMeanOp::create(b, loc, MulOp::create(b, loc, x, x), *axes, /*keepdims=*/true);
  Value variance = SubOp::create(b, loc, meanOfSquares, MulOp::create(b, loc, mean, mean));
  Value deviation = AddOp::create(b, loc, SqrtOp::create(b, loc, variance),
                                  im.splat(loc, element, 1e-9));
  return one(DivOp::create(b, loc, SubOp::create(b, loc, x, mean), deviation));
}

// y = x / (bias + alpha / size * sum of x² over the channels
// [c - floor((size-1)/2), c + ceil((size-1)/2)])^beta.
Results importLRN(Importer &im, Node &n) {
  OpBuilder &b = im.builder;
  Location loc = n.loc;
  Value x = n.input(0);
  RankedTensorType type = typeOf(x);
  int64_t size = n.getInt("size", 0);
  if (type.getRank() < 3)
    return im.failNode(n, ImportFailure::Invalid,
                       "the input must be [N, C, d1, ...], got " + describeShape(type.getShape()));
  int64_t channels = type.getDimSize(1);
  if (size <= 0 || size > 2 * channels + 1)
    return im.failNode(n, ImportFailure::Invalid,
                       "size must be in [1, " + std::to_string(2 * channels + 1) + "], got " +
                           std::to_string(size));
  Type element = type.getElementType();
  int64_t before = (size - 1) / 2, after = size - 1 - before;
  // The squares with `before` zero channels in front and `after` behind;
  // window c is then channels [c, c + size) of the padded squares.
  Value squares = MulOp::create(b, loc, x, x);
  SmallVector<Value> parts;
  auto zeros = [&](int64_t count) {
    SmallVector<int64_t> shape(type.getShape());
    shape[1] = count;
    auto zeroType = RankedTensorType::get(shape, element);
    return im.constant(loc, DenseElementsAttr::get(zeroType, b.getZeroAttr(element)));
  };
  if (before)
    parts.push_back(zeros(before));
  parts.push_back(squares);
  if (after)
    parts.push_back(zeros(after));
  Value padded = parts.size() == 1 ? squares : ConcatOp::create(b, loc, parts, 1).getResult();
  SmallVector<int64_t> start(type.getRank(), 0), step(type.getRank(), 1);
  Value sum;
  for (int64_t i = 0; i < size; ++i) {
    start[1] = i;
    Value window = SliceOp::create(b, loc, type, padded, start, step);
    sum = sum ? AddOp::create(b, loc, sum, window).getResult() : window;
  }
  double alpha = n.getFloat("alpha", 1e-4f), beta = n.getFloat("beta", 0.75f),
         bias = n.getFloat("bias", 1.0f);
  Value base = AddOp::create(b, loc, im.splat(loc, element, bias),
                             MulOp::create(b, loc, sum, im.splat(loc, element, alpha / size)));
  Value denominator = PowOp::create(b, loc, base, im.splat(loc, element, beta));
  return one(DivOp::create(b, loc, x, denominator));
}

// Det of [..., n, n] for n <= 3, by cofactors: each entry is a slice
// [..., 1, 1] reshaped to the batch shape.
Results importDet(Importer &im, Node &n) {
  OpBuilder &b = im.builder;
  Location loc = n.loc;
  Value x = n.input(0);
  RankedTensorType type = typeOf(x);
  int64_t rank = type.getRank();
  if (rank < 2 || type.getDimSize(rank - 1) != type.getDimSize(rank - 2) ||
      !llvm::isa<FloatType>(type.getElementType()))
    return im.failNode(n, ImportFailure::Invalid,
                       "the input must be floats [..., n, n], got " +
                           describeShape(type.getShape()));
  int64_t size = type.getDimSize(rank - 1);
  if (size > 3)
    return im.failNode(n, ImportFailure::Unsupported,
                       "determinants of matrices larger than 3x3 are not supported");
  SmallVector<int64_t> batch(type.getShape().drop_back(2));
  auto entry = [&](int64_t r, int64_t c) {
    SmallVector<int64_t> shape(type.getShape()), start(rank, 0), step(rank, 1);
    shape[rank - 2] = shape[rank - 1] = 1;
    start[rank - 2] = r;
    start[rank - 1] = c;
    Value v = SliceOp::create(b, loc, RankedTensorType::get(shape, type.getElementType()), x,
                              start, step);
    return reshapeTo(b, loc, v, batch);
  };
  auto mul = [&](Value p, Value q) { return Value(MulOp::create(b, loc, p, q)); };
  auto sub = [&](Value p, Value q) { return Value(SubOp::create(b, loc, p, q)); };
  // The 2x2 minor of rows r0, r1 and columns c0, c1.
  auto minor = [&](int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
    return sub(mul(entry(r0, c0), entry(r1, c1)), mul(entry(r0, c1), entry(r1, c0)));
  };
  if (size == 1)
    return one(entry(0, 0));
  if (size == 2)
    return one(minor(0, 1, 0, 1));
  Value det = sub(mul(entry(0, 0), minor(1, 2, 1, 2)), mul(entry(0, 1), minor(1, 2, 0, 2)));
  return one(AddOp::create(b, loc, det, mul(entry(0, 2), minor(1, 2, 0, 1))));
}

} // namespace

// ONNX's indices are into the flattened input, [N C] planes of H x W, each
// in row-major order (storage_order 0) or column-major (1); a window's
// first maximum in row-major tap order wins. The taps are visited last to
// first, each selecting its own index where its element equals the
// maximum, so the first tap's selection is the one that stays. Padding
// (and the reach of ceil_mode windows past the input) has index -1 in the
// map and never matches.
FailureOr<Value> maxPoolIndices(Importer &im, Node &n, Value x, Value pooled,
                                ArrayRef<int64_t> kernel, ArrayRef<int64_t> strides,
                                ArrayRef<int64_t> pads, ArrayRef<int64_t> dilations) {
  OpBuilder &b = im.builder;
  Location loc = n.loc;
  RankedTensorType type = typeOf(x), outType = typeOf(pooled);
  int64_t planes = type.getDimSize(0) * type.getDimSize(1);
  int64_t height = type.getDimSize(2), width = type.getDimSize(3);
  int64_t outHeight = outType.getDimSize(2), outWidth = outType.getDimSize(3);
  // Padded to every window's reach.
  auto reach = [&](int64_t d, int64_t out) {
    return (out - 1) * strides[d] + (kernel[d] - 1) * dilations[d] + 1;
  };
  int64_t paddedHeight = std::max(height + pads[0] + pads[2], reach(0, outHeight));
  int64_t paddedWidth = std::max(width + pads[1] + pads[3], reach(1, outWidth));
  if (failed(im.checkBuiltConstant(n, planes * paddedHeight * paddedWidth, "the index map")))
    return failure();
  bool columnMajor = n.getInt("storage_order", 0) != 0;
  SmallVector<int64_t> map;
  map.reserve(planes * paddedHeight * paddedWidth);
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t h = -pads[0]; h < paddedHeight - pads[0]; ++h)
      for (int64_t w = -pads[1]; w < paddedWidth - pads[1]; ++w) {
        bool inside = h >= 0 && h < height && w >= 0 && w < width;
        int64_t within = columnMajor ? w * height + h : h * width + w;
        map.push_back(inside ? p * height * width + within : -1);
      }
  SmallVector<int64_t> paddedShape = {type.getDimSize(0), type.getDimSize(1), paddedHeight,
                                      paddedWidth};
  Type i64 = b.getI64Type();
  Value indexMap = im.constant(
      loc, DenseElementsAttr::get(RankedTensorType::get(paddedShape, i64), ArrayRef<int64_t>(map)));
  FailureOr<PadOp> padded =
      im.create<PadOp>(loc, x, Value(),
                       ArrayRef<int64_t>{0, 0, pads[0], pads[1], 0, 0,
                                         paddedHeight - height - pads[0],
                                         paddedWidth - width - pads[1]},
                       "constant");
  if (failed(padded))
    return failure();
  Value none = im.intSplat(loc, i64, -1);
  Value indices;
  for (int64_t tap = kernel[0] * kernel[1] - 1; tap >= 0; --tap) {
    int64_t i = tap / kernel[1], j = tap % kernel[1];
    SmallVector<int64_t> start = {0, 0, i * dilations[0], j * dilations[1]},
                         step = {1, 1, strides[0], strides[1]};
    Value element = SliceOp::create(b, loc, outType, *padded, start, step);
    Value index = SliceOp::create(b, loc, outType.clone(i64), indexMap, start, step);
    Value match = EqualOp::create(b, loc, element, pooled);
    match = AndOp::create(b, loc, match, GreaterOp::create(b, loc, index, none));
    indices = WhereOp::create(b, loc, match, index, indices ? indices : index);
  }
  return indices;
}

void addCompositeHandlers(llvm::StringMap<Handler> &table) {
  table["DepthToSpace"] = importDepthToSpace;
  table["SpaceToDepth"] = importSpaceToDepth;
  table["EyeLike"] = importEyeLike;
  table["HannWindow"] = cosineWindow<2>({0.5, 0.5});
  table["HammingWindow"] = cosineWindow<2>({25.0 / 46, 21.0 / 46});
  table["BlackmanWindow"] = cosineWindow<3>({0.42, 0.5, 0.08});
  table["Hardmax"] = importHardmax;
  table["OneHot"] = importOneHot;
  table["Shrink"] = importShrink;
  table["InstanceNormalization"] = importInstanceNorm;
  table["MeanVarianceNormalization"] = importMeanVarianceNorm;
  table["LRN"] = importLRN;
  table["Det"] = importDet;
}

} // namespace kiln::onnx_import
