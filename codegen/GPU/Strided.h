//===- Strided.h - Tensors as strided views of row-major storage -*- C++ -*-===//
//
// Reshapes and transposes only move elements, so a tensor computed from
// another by a chain of them is a strided view of the other's row-major
// storage, when every reshape merges dimensions that are contiguous. The
// library matrix products read and write such views in place (the heads of
// attention inside a [seq, hidden] tensor) instead of a kernel copying
// them.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_GPU_STRIDED_H
#define KILN_CODEGEN_GPU_STRIDED_H

#include "mlir/Dialect/Utils/ReshapeOpsUtils.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace kiln {

/// A tensor's elements in another tensor's row-major storage: element
/// (i0, i1, ...) is at Σ i_j * strides[j].
struct Strided {
  llvm::SmallVector<int64_t> shape, strides;
};

/// The tensor of `shape` in its own storage.
Strided rowMajor(llvm::ArrayRef<int64_t> shape);

/// Whether `op` only moves elements: tensor.expand_shape,
/// tensor.collapse_shape, or a linalg.generic copying its one input through
/// a permutation.
bool isMovement(mlir::Operation *op);

/// The view of movement op `op`'s result given that of its operand, and the
/// other way round; nullopt when a reshape merges dimensions that are not
/// contiguous.
std::optional<Strided> forward(mlir::Operation *op, const Strided &operand);
std::optional<Strided> backward(mlir::Operation *op, const Strided &result);

} // namespace kiln

#endif // KILN_CODEGEN_GPU_STRIDED_H
