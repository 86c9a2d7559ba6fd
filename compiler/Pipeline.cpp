//===- Pipeline.cpp - kilnc's phases from ONNX to an artifact -------------===//
#include "compiler/Pipeline.h"

#include "codegen/Passes.h"
#include "passes/Passes.h"

#include "mlir/Transforms/Passes.h"

namespace kiln {

/// Adds kiln-train-step with `passOptions`; fails, printing why, when they
/// do not parse.
static mlir::LogicalResult addTrainStepPass(mlir::OpPassManager &pm, llvm::StringRef passOptions) {
  std::unique_ptr<mlir::Pass> pass = createKilnTrainStepPass();
  if (mlir::failed(pass->initializeOptions(passOptions, [](const llvm::Twine &message) {
        // The option parser prints which value it rejected, then calls this.
        std::string text = message.str();
        llvm::errs() << "kilnc: error: "
                     << (text.empty() ? "a training option has a bad value" : text) << "\n";
        return mlir::failure();
      })))
    return mlir::failure();
  pm.addPass(std::move(pass));
  return mlir::success();
}

mlir::LogicalResult buildGraphPipeline(mlir::OpPassManager &pm, const GraphOptions &options) {
  // Before anything merges or folds the weights: each is still one initializer.
  if (options.trainStep && mlir::failed(addTrainStepPass(pm, *options.trainStep)))
    return mlir::failure();
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addNestedPass<mlir::func::FuncOp>(createKilnFoldConstantsPass());
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
  if (options.placement) {
    // Before decomposition, so that ops still map one to one to ONNX nodes.
    const PlacementOptions &placement = *options.placement;
    KilnPlacePassOptions place;
    place.rules.assign(placement.rules.begin(), placement.rules.end());
    place.defaultDevice = placement.defaultDevice;
    place.deviceTypes.assign(placement.deviceTypes.begin(), placement.deviceTypes.end());
    place.allowSoftPlacement = placement.allowSoftPlacement;
    place.log = placement.log;
    pm.addNestedPass<mlir::func::FuncOp>(createKilnPlacePass(place));
    pm.addPass(createKilnPartitionPass());
    pm.addPass(createKilnFormStagesPass());
  }
  pm.addNestedPass<mlir::func::FuncOp>(createKilnDecomposePass());
  if (options.blockedLayout != BlockedLayout::Off) {
    KilnBlockedLayoutPassOptions blocked;
    blocked.everywhere = options.blockedLayout == BlockedLayout::All;
    blocked.block = options.channelBlock;
    pm.addNestedPass<mlir::func::FuncOp>(createKilnBlockedLayoutPass(blocked));
  }
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
  if (options.trainStep) {
    // Once the step's ops are in their final order, before fusion: the
    // slices out of a bucket fuse into the optimizer's kernels.
    KilnBucketAllReducePassOptions buckets;
    buckets.firstBucketBytes = options.firstBucketBytes;
    buckets.bucketBytes = options.bucketBytes;
    pm.addNestedPass<mlir::func::FuncOp>(createKilnBucketAllReducePass(buckets));
  }
  KilnFusePassOptions fuse;
  fuse.report = options.fusionReport;
  fuse.channelFirstConvolutions = options.channelFirstConvolutions;
  if (!options.fusion && options.fuseOneOpEach)
    fuse.maxOps = 1;
  if (options.fusion || options.fuseOneOpEach) {
    pm.addNestedPass<mlir::func::FuncOp>(createKilnFusePass(fuse));
    // Copies of cheap producers that sibling fusion brought together.
    pm.addPass(mlir::createCSEPass());
  }
  return mlir::success();
}

void buildLoweringPipeline(mlir::OpPassManager &pm, Phase phase,
                           const CPUPipelineOptions &cpu) {
  if (phase == Phase::Kiln)
    return;
  KilnLowerToLinalgPassOptions lower;
  lower.foldTransposes = true;
  lower.stackRows = true;
  lower.blockedPoolCalls = true;
  pm.addNestedPass<mlir::func::FuncOp>(createKilnLowerToLinalgPass(lower));
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
  KilnFormKernelsPassOptions kernels;
  kernels.directConvolutions = cpu.constantB && cpu.directConvolutions;
  pm.addNestedPass<mlir::func::FuncOp>(createKilnFormKernelsPass(kernels));
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
  if (phase == Phase::Linalg)
    return;
  buildCPULoweringPipeline(pm, cpu);
}

void buildGpuKernelPipeline(mlir::OpPassManager &pm, llvm::StringRef chip, bool stopAtLinalg,
                            bool allowTf32) {
  pm.addNestedPass<mlir::func::FuncOp>(createKilnLowerToLinalgPass());
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
  if (stopAtLinalg)
    return;
  KilnGpuFormKernelsPassOptions options;
  options.chip = chip.str();
  options.allowTf32 = allowTf32;
  pm.addPass(createKilnGpuFormKernelsPass(options));
  pm.addPass(mlir::createCanonicalizerPass());
  pm.addPass(mlir::createCSEPass());
}

} // namespace kiln
