//===- ConvolutionNeighbours.h - Ops a convolution kernel call absorbs ----===//
//
// Around a convolution tile, bufferized Kiln code pads the image into a
// zero-filled buffer, starts the output from the bias and applies the
// activation in a pass of its own. A kernel that can do these itself while
// a channel is in cache (kiln_depthwise_conv2d) takes them over; these
// matchers find them, and each returns nothing unless taking the op over
// keeps the result the same.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_CPU_CONVOLUTIONNEIGHBOURS_H
#define KILN_CODEGEN_CPU_CONVOLUTIONNEIGHBOURS_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include <optional>

namespace kiln::blas {

/// The convolution's image is a buffer that is zero-filled, then gets
/// `source` copied in at rows and columns (top, left) of its trailing two
/// dimensions (the leading ones whole), and is read by the convolution
/// alone.
struct PaddedCopy {
  mlir::Value source;
  int64_t top, left;
  /// The buffer and the ops that fill it, to erase once the call reads
  /// `source` instead.
  mlir::memref::AllocOp buffer;
  llvm::SmallVector<mlir::Operation *> ops;
};
std::optional<PaddedCopy> matchPaddedCopy(mlir::linalg::GenericOp conv);

/// The op that last writes the convolution's output before it: a zero fill
/// (no bias) or a vector broadcast along the output's dimension `groupDim`
/// (the bias, a dense f32 vector).
struct OutputStart {
  mlir::Operation *op;
  mlir::Value bias;
};
std::optional<OutputStart> matchOutputStart(mlir::linalg::GenericOp conv, unsigned groupDim);

/// The op after the convolution that reads its output, a scratch buffer
/// nothing else reads, and writes min(max(x, lo), hi) into `destination`
/// of the same shape (arith.maximumf then arith.minimumf by constants, or
/// one of them).
struct ClampEpilogue {
  mlir::linalg::GenericOp op;
  mlir::Value destination;
  float lo, hi;
};
std::optional<ClampEpilogue> matchClampEpilogue(mlir::linalg::GenericOp conv,
                                                mlir::Operation *start);

/// Erases the view `view` when nothing uses it, then the views it was taken
/// from, and the buffer at their root once only deallocations use it.
void eraseIfUnused(mlir::Value view);

} // namespace kiln::blas

#endif // KILN_CODEGEN_CPU_CONVOLUTIONNEIGHBOURS_H
