//===- LowerToLinalgPass.cpp - The kiln-lower-to-linalg pass --------------===//
#include "codegen/LowerToLinalg/Utils.h"
#include "codegen/Passes.h"
#include "dialects/kiln/KilnOps.h"
#include "passes/Passes.h"

#include "mlir/Transforms/DialectConversion.h"

namespace kiln {
#define GEN_PASS_DEF_KILNLOWERTOLINALGPASS
#include "codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {
struct KilnLowerToLinalgPass
    : impl::KilnLowerToLinalgPassBase<KilnLowerToLinalgPass> {
  using Base::Base;
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    populateDecompositionPatterns(patterns);
    populateElementwiseLoweringPatterns(patterns);
    populateLinalgOpLoweringPatterns(patterns, foldTransposes, stackRows);
    populateReductionLoweringPatterns(patterns);
    populateRandomLoweringPatterns(patterns);
    populateDataMovementLoweringPatterns(patterns);
    populateResamplingLoweringPatterns(patterns);

    ConversionTarget target(*ctx);
    target.addIllegalDialect<KilnDialect>();
    // Fusions stay; their bodies are lowered like any other ops.
    target.addLegalOp<FusionOp, YieldOp>();
    // Collectives and blocked convolutions become runtime calls at
    // bufferization.
    target.addLegalOp<AllReduceStartOp, AllReduceWaitOp, WorldSizeOp, ReplicaRankOp,
                      BlockedConvOp>();
    // ... and so do pools of blocked images outside fusions, when asked.
    if (blockedPoolCalls)
      target.addDynamicallyLegalOp<MaxPoolOp, AveragePoolOp>([](Operation *op) {
        return isBlockedPool(op) && !op->getParentOfType<FusionOp>();
      });
    target.addLegalDialect<arith::ArithDialect, linalg::LinalgDialect,
                           math::MathDialect, tensor::TensorDialect,
                           func::FuncDialect>();
    // Index checks (kIndexCheckAttr) record a bad index in a global.
    target.addLegalOp<scf::IfOp, scf::YieldOp, memref::GetGlobalOp, memref::AtomicRMWOp>();
    if (failed(applyPartialConversion(getOperation(), target, std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
} // namespace kiln
