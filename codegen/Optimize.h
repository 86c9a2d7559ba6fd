//===- Optimize.h - LLVM's O3 pipeline for a target ---------------*- C++ -*-===//
#ifndef KILN_CODEGEN_OPTIMIZE_H
#define KILN_CODEGEN_OPTIMIZE_H

#include "llvm/IR/Module.h"
#include "llvm/Target/TargetMachine.h"

namespace kiln {

/// Runs LLVM's default O3 pipeline on `module`, tuned by `machine` (which
/// also adds its own passes, such as NVVMReflect for NVPTX).
void optimizeModule(llvm::Module &module, llvm::TargetMachine &machine);

} // namespace kiln

#endif // KILN_CODEGEN_OPTIMIZE_H
