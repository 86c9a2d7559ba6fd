//===- Utils.h - Shared helpers for lowering kiln to linalg ---*- C++ -*-===//
#ifndef KILN_CODEGEN_LOWERTOLINALG_UTILS_H
#define KILN_CODEGEN_LOWERTOLINALG_UTILS_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

namespace kiln {

using BodyBuilder =
    llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::Location,
                                   mlir::ValueRange)>;

/// An empty tensor of `type`.
mlir::Value emptyTensor(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::RankedTensorType type);

/// A tensor of `type` filled with `value` (a scalar of the element type).
mlir::Value filledTensor(mlir::OpBuilder &b, mlir::Location loc,
                         mlir::RankedTensorType type, mlir::Value value);

/// The map reading an operand of `shape` broadcast (NumPy rules) into a loop
/// nest over `resultShape`: size-1 dimensions that grow read index 0.
mlir::AffineMap broadcastMap(mlir::ArrayRef<int64_t> shape,
                             mlir::ArrayRef<int64_t> resultShape,
                             mlir::MLIRContext *ctx);

/// A parallel linalg.generic over `resultType` whose body yields
/// `body(block arguments of the broadcast inputs)`.
mlir::Value buildElementwise(mlir::OpBuilder &b, mlir::Location loc,
                             mlir::RankedTensorType resultType,
                             mlir::ValueRange inputs, BodyBuilder body);

/// A scalar constant of `type` (float or integer) with value `value`.
mlir::Value scalarConstant(mlir::OpBuilder &b, mlir::Location loc,
                           mlir::Type type, double value);

/// Converts a scalar between any two kiln element types with ONNX Cast
/// semantics (float to int truncates, to i1 tests non-zero). Integers are
/// signed unless `unsignedInput` (for `value`) or `unsignedOutput` (for
/// `to`) says otherwise; i1 is always unsigned.
mlir::Value convertScalar(mlir::OpBuilder &b, mlir::Location loc,
                          mlir::Value value, mlir::Type to, bool unsignedInput = false,
                          bool unsignedOutput = false);

/// How a reduction or a scatter merges a value into what it has so far.
enum class Combiner { Add, Mul, Max, Min };

/// `acc` combined with `x` (floats: NaN-propagating max and min; integers:
/// signed, or unsigned with `isUnsigned`).
mlir::Value combine(mlir::OpBuilder &b, mlir::Location loc, Combiner combiner,
                    mlir::Value acc, mlir::Value x, bool isUnsigned = false);

/// `index` (an index value) plus `size` when it is negative.
mlir::Value wrapNegative(mlir::OpBuilder &b, mlir::Location loc, mlir::Value index,
                         int64_t size);

/// `index` clamped to [0, size), so that it reads inside a dimension of
/// `size` (size 0: 0).
mlir::Value clampIndex(mlir::OpBuilder &b, mlir::Location loc, mlir::Value index,
                       int64_t size);

/// A tensor of `type` computed element by element from the element's
/// indices (`element` may change them): a generic with the output as its
/// only operand, tileable in every loop whatever the body reads.
mlir::Value generateFromIndices(
    mlir::OpBuilder &builder, mlir::Location loc, mlir::RankedTensorType type,
    llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::Location,
                                   llvm::SmallVector<mlir::Value> &)>
        element);

/// Patterns that lower kiln ops to linalg, tensor, arith and math, by family.
void populateElementwiseLoweringPatterns(mlir::RewritePatternSet &patterns);
void populateLinalgOpLoweringPatterns(mlir::RewritePatternSet &patterns,
                                      bool foldTransposes = false, bool stackRows = false);
void populateReductionLoweringPatterns(mlir::RewritePatternSet &patterns);
void populateRandomLoweringPatterns(mlir::RewritePatternSet &patterns);
void populateDataMovementLoweringPatterns(mlir::RewritePatternSet &patterns);
void populateResamplingLoweringPatterns(mlir::RewritePatternSet &patterns);

} // namespace kiln

#endif // KILN_CODEGEN_LOWERTOLINALG_UTILS_H
