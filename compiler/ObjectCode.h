//===- ObjectCode.h - Native object code for the host module ---*- C++ -*-===//
//
// The last step of a CPU compilation: LLVM's code generator turns the
// optimized module into object code, either as one object or split by
// function into parts generated on several threads at once and linked
// together into the artifact.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_OBJECTCODE_H
#define KILN_COMPILER_OBJECTCODE_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"
#include "llvm/Target/TargetMachine.h"

#include <memory>
#include <string>
#include <vector>

namespace kiln {

/// Native object code for `module` (whose large constants become byte
/// arrays on the way), as one object.
llvm::Expected<std::string> emitObject(llvm::Module &module, llvm::TargetMachine &machine);

/// Creates a target machine for one code-generation thread.
using TargetMachineFactory =
    llvm::function_ref<llvm::Expected<std::unique_ptr<llvm::TargetMachine>>()>;

/// Native object code for `module` as objects to be linked together: its
/// functions are split into parts by size (how many depends on the module
/// alone, so the objects are the same whatever `threads` is), each part is
/// generated on its own thread, at most `threads` at a time, and the first
/// object holds every global variable (the weights). `module` is consumed:
/// what is left of it is the first part.
llvm::Expected<std::vector<std::string>>
emitObjects(llvm::Module &module, TargetMachineFactory createMachine, unsigned threads);

/// The threads `--jobs=0` stands for: one per core this process may use.
unsigned defaultCodegenThreads();

} // namespace kiln

#endif // KILN_COMPILER_OBJECTCODE_H
