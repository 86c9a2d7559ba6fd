//===- InlineAllocaScopes.cpp - Alloca scopes as stacksave/stackrestore ---===//
#include "codegen/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/PatternMatch.h"

namespace kiln {
#define GEN_PASS_DEF_KILNINLINEALLOCASCOPESPASS
#include "codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {
struct KilnInlineAllocaScopesPass
    : impl::KilnInlineAllocaScopesPassBase<KilnInlineAllocaScopesPass> {
  void runOnOperation() override {
    // Post-order: inner scopes first, so each body is a single block when it
    // is inlined.
    SmallVector<memref::AllocaScopeOp> scopes;
    getOperation().walk([&](memref::AllocaScopeOp scope) { scopes.push_back(scope); });
    IRRewriter rewriter(&getContext());
    for (memref::AllocaScopeOp scope : scopes) {
      bool allocates = scope.getBodyRegion()
                           .walk([](memref::AllocaOp) { return WalkResult::interrupt(); })
                           .wasInterrupted();
      Location loc = scope.getLoc();
      rewriter.setInsertionPoint(scope);
      Value stack;
      if (allocates)
        stack = LLVM::StackSaveOp::create(rewriter, loc,
                                          LLVM::LLVMPointerType::get(&getContext()));
      Block &body = scope.getBodyRegion().front();
      Operation *terminator = body.getTerminator();
      SmallVector<Value> results(terminator->getOperands());
      rewriter.eraseOp(terminator);
      rewriter.inlineBlockBefore(&body, scope);
      if (allocates)
        LLVM::StackRestoreOp::create(rewriter, loc, stack);
      rewriter.replaceOp(scope, results);
    }
  }
};
} // namespace
} // namespace kiln
