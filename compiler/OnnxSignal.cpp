//===- OnnxSignal.cpp - ONNX's DFT and STFT as matrix products ------------===//
//
// A discrete Fourier transform of static length n is a product with
// constant n x K cosine and sine matrices: for x = xr + i xi,
//   forward: Yr = xr C + xi S, Yi = xi C - xr S,
//   inverse: Yr = (xr C - xi S) / n, Yi = (xi C + xr S) / n,
// with C[j, k] = cos(2 pi j k / n), S[j, k] = sin(2 pi j k / n), and K = n
// (or n / 2 + 1 one-sided). STFT gathers the (windowed) frames first. Both
// run as ordinary products on every back end. MelWeightMatrix, the
// triangular filters that map such a spectrum to mel bands, is a constant.
//
//===----------------------------------------------------------------------===//
#include "compiler/Importer.h"

#include "llvm/Support/MathExtras.h"

#include <cmath>

namespace kiln::onnx_import {
namespace {

/// The DFT of `x` [..., n at `axis`, ..., 1 or 2 (real, imaginary)] over
/// `axis` with period `length` (the input cut or padded with zeros to it).
FailureOr<Value> transform(Importer &im, Node &n, Value x, int64_t axis, int64_t length,
                           bool inverse, bool onesided) {
  OpBuilder &b = im.builder;
  Location loc = n.loc;
  RankedTensorType type = typeOf(x);
  int64_t rank = type.getRank();
  Type element = type.getElementType();
  if (rank < 2 || (type.getShape().back() != 1 && type.getShape().back() != 2) ||
      !llvm::isa<FloatType>(element)) {
    (void)im.failNode(n, ImportFailure::Invalid,
                      "the input must be floats [..., 1] (real) or [..., 2] (complex), got " +
                          describeShape(type.getShape()));
    return failure();
  }
  if (axis < 0 || axis >= rank - 1 || length < 1) {
    (void)im.failNode(n, ImportFailure::Invalid,
                      "axis must name a signal dimension and the length be positive");
    return failure();
  }
  bool complex = type.getShape().back() == 2;
  int64_t size = type.getDimSize(axis), used = std::min(size, length);
  int64_t bins = onesided ? length / 2 + 1 : length;
  // Real and imaginary parts with the axis last, cut to `used`.
  SmallVector<int64_t> perm;
  for (int64_t d = 0; d < rank - 1; ++d)
    if (d != axis)
      perm.push_back(d);
  perm.push_back(axis);
  auto part = [&](int64_t which) {
    SmallVector<int64_t> shape(type.getShape()), start(rank, 0), step(rank, 1);
    shape.back() = 1;
    start.back() = which;
    shape[axis] = used;
    Value v = SliceOp::create(b, loc, RankedTensorType::get(shape, element), x, start, step);
    shape.pop_back();
    v = reshapeTo(b, loc, v, shape);
    return Value(TransposeOp::create(b, loc, v, perm));
  };
  if (failed(im.checkBuiltConstant(n, used * bins, "the DFT's cosine matrix")))
    return failure();
  Value real = part(0), imag = complex ? part(1) : Value();
  SmallVector<Attribute> cosines, sines;
  for (int64_t j = 0; j < used; ++j)
    for (int64_t k = 0; k < bins; ++k) {
      // j k mod length keeps the angle small, and exact for large products.
      double angle = 2 * M_PI * double((j * k) % length) / double(length);
      cosines.push_back(b.getFloatAttr(element, std::cos(angle)));
      sines.push_back(b.getFloatAttr(element, std::sin(angle)));
    }
  auto matrixType = RankedTensorType::get({used, bins}, element);
  Value c = im.constant(loc, DenseElementsAttr::get(matrixType, cosines));
  Value s = im.constant(loc, DenseElementsAttr::get(matrixType, sines));
  auto mm = [&](Value v, Value m) { return Value(MatMulOp::create(b, loc, v, m)); };
  Value yr = mm(real, c), yi = mm(real, s);
  // forward: yi = -xr S; inverse: yi = xr S.
  if (!inverse)
    yi = NegOp::create(b, loc, yi);
  if (imag) {
    Value ic = mm(imag, c), is = mm(imag, s);
    yr = inverse ? Value(SubOp::create(b, loc, yr, is)) : Value(AddOp::create(b, loc, yr, is));
    yi = AddOp::create(b, loc, yi, ic);
  }
  if (inverse) {
    Value scale = im.splat(loc, element, 1.0 / length);
    yr = MulOp::create(b, loc, yr, scale);
    yi = MulOp::create(b, loc, yi, scale);
  }
  // Back to the input's order, with [real, imaginary] last.
  SmallVector<int64_t> inverted(rank - 1);
  for (auto [i, d] : llvm::enumerate(perm))
    inverted[d] = i;
  auto restore = [&](Value v) {
    v = TransposeOp::create(b, loc, v, inverted);
    SmallVector<int64_t> shape(typeOf(v).getShape());
    shape.push_back(1);
    return reshapeTo(b, loc, v, shape);
  };
  return Value(ConcatOp::create(b, loc, ValueRange{restore(yr), restore(yi)}, rank - 1));
}

Results importDFT(Importer &im, Node &n) {
  RankedTensorType type = typeOf(n.input(0));
  int64_t rank = type.getRank();
  int64_t axis = n.getInt("axis", 1);
  if (axis < 0)
    axis += rank;
  int64_t length = axis >= 0 && axis < rank ? type.getDimSize(axis) : 0;
  if (n.input(1)) {
    FailureOr<int64_t> given = im.constantInt(n, 1, "dft_length");
    if (failed(given))
      return failure();
    length = *given;
  }
  bool inverse = n.getInt("inverse", 0) != 0, onesided = n.getInt("onesided", 0) != 0;
  if (onesided && (inverse || type.getShape().back() != 1))
    return im.failNode(n, ImportFailure::Invalid, "onesided needs a real input and inverse = 0");
  FailureOr<Value> y = transform(im, n, n.input(0), axis, length, inverse, onesided);
  if (failed(y))
    return failure();
  return one(*y);
}

// STFT: frames [batch, frames, length, 1 or 2] gathered at multiples of
// frame_step, times the window, transformed along the frame.
Results importSTFT(Importer &im, Node &n) {
  OpBuilder &b = im.builder;
  Location loc = n.loc;
  Value signal = n.input(0), window = n.input(2);
  RankedTensorType type = typeOf(signal);
  FailureOr<int64_t> step = im.constantInt(n, 1, "frame_step");
  if (failed(step))
    return failure();
  int64_t length = window ? typeOf(window).getNumElements() : 0;
  if (n.input(3)) {
    FailureOr<int64_t> given = im.constantInt(n, 3, "frame_length");
    if (failed(given))
      return failure();
    length = *given;
  }
  if (type.getRank() != 3 || *step < 1 || length < 1 ||
      length > type.getDimSize(1) ||
      (window && typeOf(window).getShape() != ArrayRef<int64_t>{length}))
    return im.failNode(n, ImportFailure::Invalid,
                       "needs a signal [batch, length, 1 or 2], a positive scalar frame_step and "
                       "a frame length (or a window of that length) within the signal");
  int64_t frames = (type.getDimSize(1) - length) / *step + 1;
  if (failed(im.checkBuiltConstant(n, frames * length, "the frames' positions")))
    return failure();
  SmallVector<int64_t> positions;
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t j = 0; j < length; ++j)
      positions.push_back(f * *step + j);
  Value indices = im.constant(
      loc, DenseElementsAttr::get(RankedTensorType::get({frames, length}, b.getI64Type()),
                                  ArrayRef<int64_t>(positions)));
  Value framed = GatherOp::create(b, loc, signal, indices, 1); // [batch, frames, length, c]
  if (window)
    framed = MulOp::create(b, loc, framed, reshapeTo(b, loc, window, {length, 1}));
  bool onesided = n.getInt("onesided", 1) != 0;
  if (onesided && type.getShape().back() != 1)
    return im.failNode(n, ImportFailure::Invalid, "onesided needs a real signal");
  FailureOr<Value> y = transform(im, n, framed, 2, length, false, onesided);
  if (failed(y))
    return failure();
  return one(*y);
}

/// NumPy's floor division of doubles (`a // b`): the quotient of a less its
/// remainder, rounded down.
double floorDivide(double a, double b) {
  double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0)))
    div -= 1;
  double floor = std::floor(div);
  return div - floor > 0.5 ? floor + 1 : floor;
}

// MelWeightMatrix: [dft_length / 2 + 1, num_mel_bins] triangles between
// num_mel_bins + 2 edges spaced evenly in mels (2595 log10(1 + f / 700))
// from the lower to the upper edge frequency, each edge mapped to the
// spectrogram bin (dft_length + 1) f // sample_rate; computed as ONNX's
// reference computes it.
Results importMelWeightMatrix(Importer &im, Node &n) {
  FailureOr<int64_t> bands = im.constantInt(n, 0, "num_mel_bins");
  if (failed(bands))
    return failure();
  FailureOr<int64_t> length = im.constantInt(n, 1, "dft_length");
  if (failed(length))
    return failure();
  FailureOr<int64_t> rate = im.constantInt(n, 2, "sample_rate");
  if (failed(rate))
    return failure();
  FailureOr<double> lower = im.constantScalar(n, 3, "lower_edge_hertz");
  if (failed(lower))
    return failure();
  FailureOr<double> upper = im.constantScalar(n, 4, "upper_edge_hertz");
  if (failed(upper))
    return failure();
  if (*bands < 1 || *length < 1 || *rate < 1)
    return im.failNode(n, ImportFailure::Invalid,
                       "num_mel_bins, dft_length and sample_rate must be >= 1");
  int64_t bins = *length / 2 + 1, elements;
  if (llvm::MulOverflow(bins, *bands, elements))
    elements = -1; // too many, as checkBuiltConstant then says
  if (failed(im.checkBuiltConstant(n, elements, "the weight matrix")))
    return failure();
  FailureOr<Type> element =
      im.elementType(n.getInt("output_datatype", 1), n.loc, "MelWeightMatrix's 'output_datatype'");
  if (failed(element))
    return failure();
  double lowMel = 2595 * std::log1p(*lower / 700) / std::log(10.0);
  double highMel = 2595 * std::log1p(*upper / 700) / std::log(10.0);
  double step = (highMel - lowMel) / double(*bands + 2);
  SmallVector<int64_t> edges;
  for (int64_t i = 0; i < *bands + 2; ++i) {
    double hertz = 700 * std::expm1((double(i) * step + lowMel) / 2595 * std::log(10.0));
    double bin = floorDivide(double(*length + 1) * hertz, double(*rate));
    if (!(bin >= 0 && bin < double(bins)))
      return im.failNode(n, ImportFailure::Invalid,
                         "the edge frequencies " + std::to_string(*lower) + " to " +
                             std::to_string(*upper) + " Hz map outside the spectrum's " +
                             std::to_string(bins) + " bins");
    edges.push_back(static_cast<int64_t>(bin));
  }
  SmallVector<double> weights(bins * *bands, 0.0);
  for (int64_t band = 0; band < *bands; ++band) {
    int64_t left = edges[band], center = edges[band + 1], right = edges[band + 2];
    if (center == left)
      weights[center * *bands + band] = 1;
    for (int64_t j = left; center > left && j <= center; ++j)
      weights[j * *bands + band] = double(j - left) / double(center - left);
    for (int64_t j = center; j < right; ++j)
      weights[j * *bands + band] = double(right - j) / double(right - center);
  }
  SmallVector<Attribute> values =
      llvm::map_to_vector(weights, [&](double w) { return im.numberAttr(*element, w); });
  return one(im.constant(
      n.loc, DenseElementsAttr::get(RankedTensorType::get({bins, *bands}, *element), values)));
}

} // namespace

void addSignalHandlers(llvm::StringMap<Handler> &table) {
  table["DFT"] = importDFT;
  table["STFT"] = importSTFT;
  table["MelWeightMatrix"] = importMelWeightMatrix;
}

} // namespace kiln::onnx_import
