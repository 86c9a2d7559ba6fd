//===- RuntimeCallBuffers.h - Buffers of runtime calls made at bufferization ===//
//
// Blocked convolutions and pools (BlockedConvolution.cpp, BlockedPool.cpp)
// become calls of the runtime when one-shot bufferization gives them
// buffers; the runtime reads and writes dense arrays by the address of
// their first element. These are the helpers both use to get such buffers.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_CPU_RUNTIMECALLBUFFERS_H
#define KILN_CODEGEN_CPU_RUNTIMECALLBUFFERS_H

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/IR/Builders.h"

namespace kiln {

/// Whether the buffer `buffer` views one of its function's arguments (a
/// buffer of the caller's, which the model must not write).
bool isArgumentView(mlir::Value buffer);

/// Whether `type`'s elements from dimension `from` on are dense and
/// row-major and its offset is static: the whole buffer with `from` = 0, or
/// each of its images, whatever their stride, with `from` = 1.
bool isDenseFrom(mlir::MemRefType type, int64_t from = 0);

/// A dense buffer (isDenseFrom) holding `tensor` for a runtime call to read,
/// and with `written` to write too: `tensor`'s own where it is dense (and,
/// written, not the caller's), else a new one that it is copied into.
mlir::FailureOr<mlir::Value> denseBuffer(mlir::RewriterBase &rewriter, mlir::Location loc,
                                         mlir::Value tensor,
                                         const mlir::bufferization::BufferizationOptions &options,
                                         mlir::bufferization::BufferizationState &state,
                                         bool written = false);

/// A new 64-byte aligned buffer of `type`'s shape, with the identity layout.
mlir::Value allocateDense(mlir::OpBuilder &b, mlir::Location loc, mlir::ShapedType type);

/// The address, as an index, of the first element of `buffer`, a buffer
/// whose offset is static: its aligned pointer plus that offset.
/// kiln-plan-buffers sees through it to the no-capture call it is passed to.
mlir::Value firstElementAddress(mlir::OpBuilder &b, mlir::Location loc, mlir::Value buffer);

} // namespace kiln

#endif // KILN_CODEGEN_CPU_RUNTIMECALLBUFFERS_H
