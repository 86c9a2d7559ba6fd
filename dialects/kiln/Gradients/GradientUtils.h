//===- GradientUtils.h - Building blocks of the gradient rules -*- C++ -*-===//
#ifndef KILN_DIALECTS_KILN_GRADIENTS_GRADIENTUTILS_H
#define KILN_DIALECTS_KILN_GRADIENTS_GRADIENTUTILS_H

#include "dialects/kiln/KilnOps.h"

namespace kiln::grad {

inline mlir::RankedTensorType typeOf(mlir::Value value) {
  return llvm::cast<mlir::RankedTensorType>(value.getType());
}

inline mlir::Type elementOf(mlir::Value value) { return typeOf(value).getElementType(); }

/// A rank-0 constant of `element` type; kiln's elementwise ops broadcast it.
mlir::Value scalar(mlir::OpBuilder &b, mlir::Location loc, mlir::Type element, double value);

/// A constant of `type` with every element `value`.
mlir::Value splat(mlir::OpBuilder &b, mlir::Location loc, mlir::RankedTensorType type,
                  double value);

/// Sums `grad`, shaped like a NumPy broadcast of `target`, back to `target`'s
/// shape: leading dimensions are summed away, size-1 dimensions summed in
/// place. Returns `grad` itself when the shapes already agree.
mlir::Value unbroadcast(mlir::OpBuilder &b, mlir::Location loc, mlir::Value grad,
                        mlir::RankedTensorType target);

/// `value` reshaped to `type` (a no-op when the types agree).
mlir::Value reshapeTo(mlir::OpBuilder &b, mlir::Location loc, mlir::Value value,
                      mlir::RankedTensorType type);

/// `value` with its last two dimensions swapped.
mlir::Value transposeLastTwo(mlir::OpBuilder &b, mlir::Location loc, mlir::Value value);

/// `condition ? value : 0`, elementwise, shaped like `value`.
mlir::Value selectOrZero(mlir::OpBuilder &b, mlir::Location loc, mlir::Value condition,
                         mlir::Value value);

/// `value` with `stride - 1` zeros after each element along `axis`, the
/// trailing ones dropped: a strided window's cotangent on the input's grid.
mlir::Value spreadAlong(mlir::OpBuilder &b, mlir::Location loc, mlir::Value value, int64_t axis,
                        int64_t stride);

/// `value` read backwards along each of `axes` (one slice with step -1).
mlir::Value reverseAlong(mlir::OpBuilder &b, mlir::Location loc, mlir::Value value,
                         llvm::ArrayRef<int64_t> axes);

/// `value` with `before` and `after` elements of `fill` added along `axis`.
mlir::Value padAlong(mlir::OpBuilder &b, mlir::Location loc, mlir::Value value, int64_t axis,
                     int64_t before, int64_t after, double fill);

/// The result gradients of an op whose rule needs every one of them: null
/// entries become zeros of the result's type.
llvm::SmallVector<mlir::Value> denseGrads(mlir::OpBuilder &b, mlir::Operation *op,
                                          mlir::ValueRange resultGrads);

} // namespace kiln::grad

#endif // KILN_DIALECTS_KILN_GRADIENTS_GRADIENTUTILS_H
