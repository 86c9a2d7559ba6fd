//===- Registration.cpp - Dialects, passes and translations Kiln uses -----===//
#include "compiler/Registration.h"

#include "codegen/NVPTX/Target.h"
#include "codegen/Passes.h"
#include "passes/Passes.h"
#include "dialects/kiln/KilnOps.h"
#include "dialects/kiln_gpu/KilnGpuOps.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"

namespace kiln {

void registerKilnDialects(mlir::DialectRegistry &registry) {
  registry.insert<KilnDialect, kgpu::KilnGpuDialect>();
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllToLLVMIRTranslations(registry);
  registerCollectiveBufferization(registry);
  registerBlockedConvolutionBufferization(registry);
  registerBlockedPoolBufferization(registry);
}

void registerKilnPasses() {
  mlir::registerAllPasses();
  registerKilnGraphPasses();
  registerKilnCodegenPasses();
  registerCodegenPipelines();
  registerNVPTXPipelines();
}

} // namespace kiln
