//===- StaticArena.cpp - each function's arena as a static global ---------===//
//
// kiln-plan-buffers puts a function's intermediates in one arena allocated
// per call; this makes it a global, mapped and faulted in once.
//
//===----------------------------------------------------------------------===//
#include "codegen/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

namespace kiln {
#define GEN_PASS_DEF_KILNSTATICARENAPASS
#include "codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

struct KilnStaticArenaPass : impl::KilnStaticArenaPassBase<KilnStaticArenaPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    OpBuilder builder(module.getContext());
    for (auto func : module.getOps<func::FuncOp>()) {
      SmallVector<memref::AllocOp> arenas;
      func.walk([&](memref::AllocOp alloc) {
        if (alloc->hasAttr("kiln.arena"))
          arenas.push_back(alloc);
      });
      for (memref::AllocOp alloc : arenas) {
        MemRefType type = alloc.getType();
        if (!type.hasStaticShape() || !alloc.getDynamicSizes().empty()) {
          alloc.emitError("kiln-static-arena: the arena must have a static size");
          return signalPassFailure();
        }
        builder.setInsertionPoint(func);
        auto global = memref::GlobalOp::create(
            builder, alloc.getLoc(), ("__kiln_arena_" + func.getSymName()).str(),
            builder.getStringAttr("private"), type, builder.getUnitAttr(),
            /*constant=*/false,
            alloc.getAlignment() ? builder.getI64IntegerAttr(*alloc.getAlignment())
                                 : IntegerAttr());
        symbols.insert(global); // renames on a clash
        builder.setInsertionPoint(alloc);
        Value view = memref::GetGlobalOp::create(builder, alloc.getLoc(), type,
                                                 global.getSymName());
        alloc.getResult().replaceAllUsesWith(view);
        alloc.erase();
      }
    }
  }
};

} // namespace
} // namespace kiln
