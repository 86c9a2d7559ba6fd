//===- ResultsInPlace.cpp - Reshaped results written in place -------------===//
//
// See KilnResultsInPlacePass in Passes.td.
//
//===----------------------------------------------------------------------===//
#include "codegen/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace kiln {
#define GEN_PASS_DEF_KILNRESULTSINPLACEPASS
#include "codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// Whether `type` is a static buffer with the identity layout: what an
/// out-parameter is, and what its reshapes are.
bool isPlainStatic(MemRefType type) {
  return type.hasStaticShape() && type.getLayout().isIdentity();
}

/// The reshape (expand_shape or collapse_shape) defining `value`, if any.
Operation *reshapeOf(Value value) {
  Operation *def = value.getDefiningOp();
  return isa_and_nonnull<memref::ExpandShapeOp, memref::CollapseShapeOp>(def) ? def : nullptr;
}

struct KilnResultsInPlacePass : impl::KilnResultsInPlacePassBase<KilnResultsInPlacePass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || !func.getBody().hasOneBlock())
      return;
    auto ret = dyn_cast<func::ReturnOp>(func.getBody().front().getTerminator());
    if (!ret)
      return;
    // How often each allocation is returned, itself or reshaped: one that is
    // returned twice must keep separate buffers for its results.
    llvm::DenseMap<Operation *, int> returned;
    for (Value result : ret.getOperands()) {
      Operation *reshape = reshapeOf(result);
      Value source = reshape ? reshape->getOperand(0) : result;
      if (auto alloc = source.getDefiningOp<memref::AllocOp>())
        ++returned[alloc];
    }
    for (OpOperand &result : ret->getOpOperands()) {
      Operation *reshape = reshapeOf(result.get());
      if (!reshape)
        continue;
      auto alloc = reshape->getOperand(0).getDefiningOp<memref::AllocOp>();
      auto resultType = cast<MemRefType>(result.get().getType());
      if (!alloc || returned.lookup(alloc) != 1 || !isPlainStatic(alloc.getType()) ||
          !isPlainStatic(resultType))
        continue;
      // The result's buffer is allocated where the intermediate was, and
      // the intermediate becomes the inverse reshape of it.
      OpBuilder b(alloc);
      Location loc = alloc.getLoc();
      auto buffer = memref::AllocOp::create(b, loc, resultType, alloc.getAlignmentAttr());
      Value view;
      if (auto expand = dyn_cast<memref::ExpandShapeOp>(reshape))
        view = memref::CollapseShapeOp::create(b, loc, alloc.getType(), buffer,
                                               expand.getReassociationIndices());
      else
        view = memref::ExpandShapeOp::create(
            b, loc, alloc.getType(), buffer,
            cast<memref::CollapseShapeOp>(reshape).getReassociationIndices());
      alloc.replaceAllUsesWith(view);
      alloc.erase();
      result.set(buffer);
      if (reshape->use_empty())
        reshape->erase();
    }
  }
};

} // namespace
} // namespace kiln
