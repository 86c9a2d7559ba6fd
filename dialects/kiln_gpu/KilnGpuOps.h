//===- KilnGpuOps.h - The kiln_gpu dialect's ops --------------*- C++ -*-===//
#ifndef KILN_DIALECTS_KILN_GPU_KILNGPUOPS_H
#define KILN_DIALECTS_KILN_GPU_KILNGPUOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/kiln_gpu/KilnGpuOpsDialect.h.inc"

#include "dialects/kiln_gpu/KilnGpuEnums.h.inc"

#define GET_OP_CLASSES
#include "dialects/kiln_gpu/KilnGpuOps.h.inc"

#endif // KILN_DIALECTS_KILN_GPU_KILNGPUOPS_H
