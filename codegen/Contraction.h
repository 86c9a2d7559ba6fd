//===- Contraction.h - Recognizing Kiln's matmul and convolution generics -===//
//
// Kiln lowers matmul and convolution to linalg.generic ops (see
// LowerToLinalg/Linalg.cpp). Tiling, unit-dimension folding and
// bufferization change their shapes but not their structure; these helpers
// recognize that structure from the indexing maps alone, so they work on
// tensors and on buffers alike.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_CONTRACTION_H
#define KILN_CODEGEN_CONTRACTION_H

#include "dialects/kiln/KilnOps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <optional>

namespace kiln {

/// Whether the body of `op` is `yield(out + in0 * in1)` on floats.
bool isMultiplyAccumulate(mlir::linalg::LinalgOp op);

/// The roles of a direct convolution's loops when it is computed as a matrix
/// product: `output[batch][channel][spatial] += filter[channel][window] *
/// im2col(input)[window][spatial]`, one product per batch index.
struct ConvolutionLoops {
  /// Parallel loops outside the matrix product (image, group), in order.
  /// They come before the channel loop, or after it in a channel-first
  /// output `output[channel][batch][spatial]` (a weight gradient written in
  /// the filter's layout), where they index the image before its window.
  llvm::SmallVector<int64_t> batch;
  /// The output-channel loop (the matrix rows); absent when unit-folded.
  std::optional<int64_t> channel;
  /// The reduction loops in the filter's order (the matrix K dimension).
  llvm::SmallVector<int64_t> window;
  /// The trailing output loops (the matrix columns), in output order.
  llvm::SmallVector<int64_t> spatial;
};

/// Matches a multiply-accumulate generic `out(parallel loops) +=
/// in0(...) * in1(...)` whose first operand (the image) is indexed by sums
/// of an output loop and a window loop, or by two or more trailing output
/// loops that the second operand (the filter) does not use. The output must
/// be indexed by the parallel loops in order and the filter by plain loops
/// ordered batch, channel, window; the channel loop may also come before
/// the batch loops (channel-first). With `withoutPositions`, a strided
/// image read by no output loop matches too, with no spatial loops: the
/// weight gradient of a 1x1 convolution at stride 2, whose one output
/// position the unit-dimension folding removed.
std::optional<ConvolutionLoops> matchConvolution(mlir::linalg::LinalgOp op,
                                                 bool withoutPositions = false);

/// Fewest output positions per batch element for which a convolution is
/// one matrix product per batch element. Below it, batch elements that share
/// the filter become more columns of one product instead: a weight
/// gradient's batch elements are the input channels, each with as many
/// positions as the filter has taps (a 3x3 filter: 9 columns, a product
/// far too narrow for the GEMM kernels).
constexpr int64_t kMinColumnsPerProduct = 64;

/// Whether `op` (matched as `loops`) computes its batch elements as columns
/// of one product: the filter reads no batch loop, there is an output
/// channel loop, the window is more than the input channels (a 1x1
/// convolution reads its image in place instead) and each batch element has
/// fewer than kMinColumnsPerProduct output positions.
bool joinsBatchIntoColumns(mlir::linalg::LinalgOp op, const ConvolutionLoops &loops);

/// Fewest input and output channels for which the blocked layout pays
/// (channels come in whole blocks of kWideChannelBlock, KilnOps.h, or oneDNN's
/// Winograd kernels fall back to a direct convolution no faster than im2col
/// and sgemm).
/// Winograd's element-wise products are batched matrix products over
/// channels: measured per thread on a band of 4x48 outputs it beats a
/// direct convolution by 15 % at 16 channels, 50 % at 32 and 80 % at 64.
constexpr int64_t kMinBlockedChannels = 32;
/// Output rows of oneDNN's Winograd tile, F(4x4, 3x3). A band of fewer rows
/// wastes the rest of each tile (3x3 256->256 at 56x56 in bands of 2 rows
/// ran 2x slower than in bands of 4), and a band of one row gets its
/// F(2x2, 3x3) kernel, 6x slower.
constexpr int64_t kWinogradTileRows = 4;

/// `value` before any reshapes (tensor.expand_shape, tensor.collapse_shape:
/// views), transitively.
inline mlir::Value throughReshapes(mlir::Value value) {
  while (mlir::Operation *def = value.getDefiningOp()) {
    if (!llvm::isa<mlir::tensor::ExpandShapeOp, mlir::tensor::CollapseShapeOp>(def))
      break;
    value = def->getOperand(0);
  }
  return value;
}

/// Whether a convolution by constant filters with `channels` input and
/// `filters` output channels per group and a window of `taps` positions runs
/// through kiln_conv2d_constant_w (oneDNN in its blocked layout, Winograd
/// for 3x3 at stride 1) rather than as im2col and sgemm. Its tiles then hold
/// input and output bands but no column buffer. With `direct` (a target
/// with AVX2 and FMA but not AVX-512, where the call runs Kiln's direct
/// kernel on the plain image) any channel count does: an RGB stem's 3
/// channels (ResNet's 7x7 3->64 at stride 2: 1.4 ms a thread against 3.4
/// ms as im2col and sgemm on two).
inline bool convolvesInBlockedLayout(int64_t channels, int64_t filters, int64_t taps,
                                     bool direct = false) {
  if (direct)
    return taps >= 2 && filters >= kWideChannelBlock;
  return taps >= 2 && channels % kWideChannelBlock == 0 && filters % kWideChannelBlock == 0 &&
         channels >= kMinBlockedChannels && filters >= kMinBlockedChannels;
}

} // namespace kiln

#endif // KILN_CODEGEN_CONTRACTION_H
