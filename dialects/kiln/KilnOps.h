//===- KilnOps.h - The kiln dialect's ops ---------------------*- C++ -*-===//
#ifndef KILN_DIALECTS_KILN_KILNOPS_H
#define KILN_DIALECTS_KILN_KILNOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/kiln/GradientInterface.h"

#include "dialects/kiln/KilnOpsDialect.h.inc"

#include "dialects/kiln/KilnEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/kiln/KilnAttrs.h.inc"

#define GET_OP_CLASSES
#include "dialects/kiln/KilnOps.h.inc"

namespace kiln {

/// Channels per block of the blocked image layout that kiln.blocked_conv
/// takes and gives: one vector of channels per pixel, 16 on AVX-512
/// (oneDNN's nChw16c) and 8 on AVX2 (nChw8c).
constexpr int64_t kWideChannelBlock = 16;
constexpr int64_t kNarrowChannelBlock = 8;

/// Whether `lanes` is a block size of the blocked layout.
constexpr bool isChannelBlock(int64_t lanes) {
  return lanes == kWideChannelBlock || lanes == kNarrowChannelBlock;
}

/// Blocks of `block` channels that `channels` channels take, the last one
/// padded.
constexpr int64_t channelBlocks(int64_t channels, int64_t block) {
  return (channels + block - 1) / block;
}

/// Whether `type` is a blocked image: 5-D, its last dimension a block of
/// channels.
bool isBlockedImage(mlir::Type type);

/// The NumPy broadcast of `shapes`, or failure when two dimensions disagree.
llvm::LogicalResult broadcastShapes(llvm::ArrayRef<llvm::ArrayRef<int64_t>> shapes,
                                    llvm::SmallVectorImpl<int64_t> &result);

/// Whether the permutation `perm` swaps the last two dimensions and keeps the
/// others: a transpose of matrices, which matrix products read in place.
bool swapsLastTwo(llvm::ArrayRef<int64_t> perm);

/// The transpose that swaps the batch and channel dimensions of `conv`'s
/// result, when it is the result's only user and the convolution can write
/// that layout itself: one group, no bias, a 2-D window with more than one
/// output position per channel pair. A weight gradient is such a
/// convolution (its batch is the input's channels, its channels the
/// cotangent's) followed by the transpose back to the filter's layout;
/// computed channel-first, each output channel's row is one row of the
/// product the CPU code generator forms, in the filter's order.
TransposeOp channelFirstTranspose(ConvOp conv);

/// Whether `op` is a max or average pool of a blocked f32 image
/// (N x C/16 x H x W x 16, see kiln-blocked-layout). The CPU back end
/// computes such a pool by a call of the runtime, as it does a
/// kiln.blocked_conv, not by a kernel of its own: kiln-fuse leaves it out of
/// fusions.
bool isBlockedPool(mlir::Operation *op);

/// Output extent of a window op along one dimension, ONNX's formula.
int64_t windowOutputSize(int64_t input, int64_t padBegin, int64_t padEnd,
                         int64_t kernel, int64_t stride, int64_t dilation,
                         bool ceilMode);

/// An einsum equation resolved against its operands' shapes: one loop per
/// distinct label (each ellipsis dimension is a label of its own), the loop
/// each operand dimension and each result dimension runs over (-1: an
/// ellipsis dimension of size 1 that broadcasts), and the loops' sizes.
struct EinsumSpec {
  llvm::SmallVector<int64_t> loopSizes;
  llvm::SmallVector<llvm::SmallVector<int64_t>> operandLoops;
  llvm::SmallVector<int64_t> resultLoops;
};

/// Resolves `equation` (ONNX Einsum's) for operands of `shapes`; on failure
/// `error` says why.
llvm::FailureOr<EinsumSpec> parseEinsum(llvm::StringRef equation,
                                        llvm::ArrayRef<llvm::ArrayRef<int64_t>> shapes,
                                        std::string &error);

} // namespace kiln

#endif // KILN_DIALECTS_KILN_KILNOPS_H
