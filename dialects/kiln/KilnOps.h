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

#define GET_OP_CLASSES
#include "dialects/kiln/KilnOps.h.inc"

namespace kiln {

/// The NumPy broadcast of `shapes`, or failure when two dimensions disagree.
llvm::LogicalResult broadcastShapes(llvm::ArrayRef<llvm::ArrayRef<int64_t>> shapes,
                                    llvm::SmallVectorImpl<int64_t> &result);

/// Whether the permutation `perm` swaps the last two dimensions and keeps the
/// others: a transpose of matrices, which matrix products read in place.
bool swapsLastTwo(llvm::ArrayRef<int64_t> perm);

/// Output extent of a window op along one dimension, ONNX's formula.
int64_t windowOutputSize(int64_t input, int64_t padBegin, int64_t padEnd,
                         int64_t kernel, int64_t stride, int64_t dilation,
                         bool ceilMode);

} // namespace kiln

#endif // KILN_DIALECTS_KILN_KILNOPS_H
