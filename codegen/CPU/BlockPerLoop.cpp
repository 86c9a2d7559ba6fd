//===- BlockPerLoop.cpp - A block of the function body per loop nest ------===//
#include "codegen/Passes.h"

#include "mlir/Dialect/ControlFlow/IR/ControlFlowOps.h"

namespace kiln {
#define GEN_PASS_DEF_KILNBLOCKPERLOOPPASS
#include "codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {
struct KilnBlockPerLoopPass : impl::KilnBlockPerLoopPassBase<KilnBlockPerLoopPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    // The body's blocks are visited as they were; the ones split off each
    // end in a region-holding op or the old terminator, so need no visit.
    SmallVector<Block *> blocks = llvm::map_to_vector(func.getBody(), [](Block &b) { return &b; });
    OpBuilder builder(&getContext());
    for (Block *block : blocks) {
      SmallVector<Operation *> loops;
      for (Operation &op : block->without_terminator())
        if (op.getNumRegions() > 0 && op.getNextNode() != block->getTerminator())
          loops.push_back(&op);
      // Last first: each split moves only the ops up to the next loop.
      for (Operation *loop : llvm::reverse(loops)) {
        Block *rest = block->splitBlock(loop->getNextNode());
        builder.setInsertionPointToEnd(block);
        cf::BranchOp::create(builder, loop->getLoc(), rest);
      }
    }
  }
};
} // namespace
} // namespace kiln
