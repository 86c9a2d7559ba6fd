//===- VectorizableMath.cpp - Remove what stops LLVM vectorizing kernels --===//
#include "codegen/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/StringSwitch.h"

namespace kiln {
#define GEN_PASS_DEF_KILNVECTORIZABLEMATHPASS
#include "codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// Functions whose approximations are accurate over the whole f32 range.
bool isApproximated(StringRef name) {
  name.consume_front("math.");
  return llvm::StringSwitch<bool>(name)
      .Cases({"exp", "expm1", "log", "log1p", "log2"}, true)
      .Default(false);
}

struct KilnVectorizableMathPass
    : impl::KilnVectorizableMathPassBase<KilnVectorizableMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(patterns, isApproximated);
    populatePolynomialApproximateErfPattern(patterns);
    populatePolynomialApproximateTanhPattern(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();

    auto flags = arith::FastMathFlags::reassoc | arith::FastMathFlags::contract;
    IRRewriter rewriter(&getContext());
    getOperation().walk([&](Operation *op) {
      if (!isa<arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::MaximumFOp,
               arith::MinimumFOp>(op))
        return;
      auto fastMath = cast<arith::ArithFastMathInterface>(op);
      fastMath->setAttr(fastMath.getFastMathAttrName(),
                        arith::FastMathFlagsAttr::get(
                            op->getContext(), fastMath.getFastMathFlagsAttr().getValue() | flags));
      if (isa<arith::MaximumFOp, arith::MinimumFOp>(op))
        toLLVMIntrinsic(rewriter, op);
    });
  }

  /// Later, arith-expand would turn maximumf and minimumf into compare and
  /// select chains, which LLVM does not recognize as a max reduction; its
  /// llvm.maximum and llvm.minimum intrinsics (same NaN semantics) it does.
  static void toLLVMIntrinsic(IRRewriter &rewriter, Operation *op) {
    if (!isa<Float32Type, Float64Type>(op->getResult(0).getType()))
      return;
    rewriter.setInsertionPoint(op);
    auto flags = LLVM::FastmathFlagsAttr::get(
        op->getContext(), LLVM::FastmathFlags::reassoc | LLVM::FastmathFlags::contract);
    Value lhs = op->getOperand(0), rhs = op->getOperand(1);
    if (isa<arith::MaximumFOp>(op))
      rewriter.replaceOpWithNewOp<LLVM::MaximumOp>(op, lhs, rhs, flags);
    else
      rewriter.replaceOpWithNewOp<LLVM::MinimumOp>(op, lhs, rhs, flags);
  }
};

} // namespace
} // namespace kiln
