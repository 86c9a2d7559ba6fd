//===- Registration.h - Dialects, passes and translations Kiln uses -*- C++ -*-===//
#ifndef KILN_COMPILER_REGISTRATION_H
#define KILN_COMPILER_REGISTRATION_H

#include "mlir/IR/DialectRegistry.h"

namespace kiln {

/// Registers the kiln dialect, every upstream dialect Kiln lowers through and
/// their interface models (bufferization, conversion to LLVM, translation to
/// LLVM IR).
void registerKilnDialects(mlir::DialectRegistry &registry);

/// Registers Kiln's passes and pipelines, and the upstream ones, for
/// textual pass pipelines (kiln-opt, --mlir-print-ir-after-all).
void registerKilnPasses();

} // namespace kiln

#endif // KILN_COMPILER_REGISTRATION_H
