//===- Pipeline.h - kilnc's phases from ONNX to an artifact ---*- C++ -*-===//
#ifndef KILN_COMPILER_PIPELINE_H
#define KILN_COMPILER_PIPELINE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <string>

namespace kiln {

/// Where kilnc stops, in pipeline order.
enum class Phase {
  Kiln,      // kiln dialect after graph passes (--emit=mlir)
  Linalg,    // linalg on tensors (--emit=linalg)
  LLVMDialect, // LLVM dialect (--emit=llvm-mlir)
};

/// Adds the graph-level passes on the kiln dialect: canonicalization
/// (shape-op folding) and CSE.
void buildGraphPipeline(mlir::OpPassManager &pm);

/// Adds the passes that take a kiln module to `phase` (from the kiln phase).
void buildLoweringPipeline(mlir::OpPassManager &pm, Phase phase);

} // namespace kiln

#endif // KILN_COMPILER_PIPELINE_H
