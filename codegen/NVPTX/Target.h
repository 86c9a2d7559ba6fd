//===- Target.h - NVIDIA code: NVVM lowering, PTX, cubins ------*- C++ -*-===//
//
// The last steps of a GPU compile: the kernels' gpu.module is lowered to the
// LLVM and NVVM dialects, translated to LLVM IR, linked with libdevice (the
// CUDA toolkit's math library) when kernels call it, optimized, and turned
// into PTX by LLVM's NVPTX back end; ptxas then assembles each chip's cubin.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_NVPTX_TARGET_H
#define KILN_CODEGEN_NVPTX_TARGET_H

#include "codegen/GPU/Chip.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>

namespace kiln {

/// What Kiln uses of a CUDA toolkit.
struct CudaToolkit {
  /// The toolkit's root, e.g. /usr/local/cuda.
  std::string root;
  std::string ptxas;
  std::string libdevice;
  /// ptxas's release, e.g. 13.0, and the CUDA driver API version its cubins
  /// need (13000 for 13.0: a driver of the same major release).
  int major = 0, minor = 0;
  int driverVersion() const { return major * 1000; }
};

/// Finds the toolkit: `hint` (kilnc --cuda-path) when given, else $CUDA_HOME,
/// $CUDA_PATH, /usr/local/cuda and the directory of a ptxas on PATH. The
/// error names every place looked at.
llvm::Expected<CudaToolkit> findCudaToolkit(llvm::StringRef hint);

/// Adds the passes that lower the kernels of every gpu.module to the LLVM and
/// NVVM dialects. Indices are `indexBitwidth` bits wide in kernels.
void buildGpuToNVVMPipeline(mlir::OpPassManager &pm, unsigned indexBitwidth);

/// LLVM IR for the kernels of `kernels` (lowered to the LLVM and NVVM
/// dialects), for `chip`, with libdevice linked in where kernels call it,
/// optimized at O3.
llvm::Expected<std::unique_ptr<llvm::Module>>
translateKernelsToLLVMIR(mlir::gpu::GPUModuleOp kernels, const GpuChip &chip,
                         const CudaToolkit &toolkit, llvm::LLVMContext &context);

/// PTX of `module` for `chip`, and the PTX ISA version it declares ("7.8").
struct Ptx {
  std::string text;
  std::string isa;
};
llvm::Expected<Ptx> emitPtx(llvm::Module &module, const GpuChip &chip);

/// Assembles `ptx` into a cubin for `chip` with the toolkit's ptxas; ptxas's
/// own messages are in the error.
llvm::Expected<std::string> assembleCubin(llvm::StringRef ptx, const GpuChip &chip,
                                          const CudaToolkit &toolkit);

/// Registers the `kiln-gpu-to-nvvm` pipeline for kiln-opt.
void registerNVPTXPipelines();

} // namespace kiln

#endif // KILN_CODEGEN_NVPTX_TARGET_H
