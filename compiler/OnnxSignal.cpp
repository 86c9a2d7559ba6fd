//===- OnnxSignal.cpp - ONNX's DFT and STFT as matrix products ------------===//
//
// A discrete Fourier transform of static length n is a product with
// constant n x K cosine and sine matrices: for x = xr + i xi,
//   forward: Yr = xr C + xi S, Yi = xi C - xr S,
//   inverse: Yr = (xr C - xi S) / n, Yi = (xi C + xr S) / n,
// with C[j, k] = cos(2 pi j k / n), S[j, k] = sin(2 pi j k / n), and K = n
// (or n / 2 + 1 one-sided). STFT gathers the (windowed) frames first. Both
// run as ordinary products on every back end.
//
//===----------------------------------------------------------------------===//
#include "compiler/Importer.h"

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

} // namespace

void addSignalHandlers(llvm::StringMap<Handler> &table) {
  table["DFT"] = importDFT;
  table["STFT"] = importSTFT;
}

} // namespace kiln::onnx_import
