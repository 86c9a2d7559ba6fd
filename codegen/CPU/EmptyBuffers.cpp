//===- EmptyBuffers.cpp - Zero-element buffers of entry points -------------===//
#include "codegen/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace kiln {
#define GEN_PASS_DEF_KILNEMPTYBUFFERSPASS
#include "codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {
bool isEmpty(Type type) {
  auto memref = llvm::dyn_cast<MemRefType>(type);
  return memref && memref.hasStaticShape() && memref.getNumElements() == 0;
}

struct KilnEmptyBuffersPass : impl::KilnEmptyBuffersPassBase<KilnEmptyBuffersPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    func.walk([](memref::CopyOp copy) {
      if (isEmpty(copy.getSource().getType()) || isEmpty(copy.getTarget().getType()))
        copy.erase();
    });
    // Only a public function's signature is the artifact's: private ones
    // have callers that would need retyping too.
    if (!func.isPublic())
      return;
    Block &entry = func.getBody().front();
    OpBuilder builder = OpBuilder::atBlockBegin(&entry);
    bool changed = false;
    for (BlockArgument argument : entry.getArguments()) {
      auto type = llvm::dyn_cast<MemRefType>(argument.getType());
      if (!isEmpty(type) || type.getRank() == 1)
        continue;
      if (!argument.use_empty()) {
        Value stand = memref::AllocaOp::create(
            builder, argument.getLoc(), MemRefType::get(type.getShape(), type.getElementType()));
        argument.replaceAllUsesWith(stand);
      }
      argument.setType(MemRefType::get({0}, type.getElementType()));
      changed = true;
    }
    if (changed)
      func.setType(builder.getFunctionType(entry.getArgumentTypes(), func.getResultTypes()));
  }
};
} // namespace
} // namespace kiln
