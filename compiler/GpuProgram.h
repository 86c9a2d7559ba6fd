//===- GpuProgram.h - The host program of a GPU artifact -------*- C++ -*-===//
//
// After kiln-gpu-form-kernels, @main is a straight line of kiln_gpu ops,
// constants and reshapes on tensors. This places every tensor in device
// memory (an input, an output, the constants, or the arena, shared by
// tensors that are never live at once) and writes the program the runtime
// runs: see docs/cuda-artifact.md.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_GPUPROGRAM_H
#define KILN_COMPILER_GPUPROGRAM_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <string>

namespace kiln {

struct GpuProgram {
  /// The `kiln_cuda_program` text.
  std::string text;
  /// The `kiln_cuda_constants` bytes.
  std::string constants;
  int64_t arenaBytes = 0;
  unsigned launches = 0, matmuls = 0, copies = 0;
};

/// Alignment of every buffer and of every offset in the arena and the
/// constants (what the runtime guarantees and cuBLASLt likes).
constexpr int64_t kGpuBufferAlignment = 256;

/// The program of `module`'s @main; an op it cannot place is an error at
/// that op.
llvm::Expected<GpuProgram> buildGpuProgram(mlir::ModuleOp module);

} // namespace kiln

#endif // KILN_COMPILER_GPUPROGRAM_H
