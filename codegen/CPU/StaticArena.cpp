//===- StaticArena.cpp - each function's arena as a static global ---------===//
//
// kiln-plan-buffers puts a function's intermediates in one arena allocated
// per call; this makes it a global, mapped and faulted in once, with a tail
// of pages that the function's first call faults in.
//
//===----------------------------------------------------------------------===//
#include "codegen/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"

#include "llvm/Support/MathExtras.h"

#include <algorithm>

namespace kiln {
#define GEN_PASS_DEF_KILNSTATICARENAPASS
#include "codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// Bytes of a page: the tail is faulted in a store per page.
constexpr int64_t kPageBytes = 4096;
/// Largest tail after an arena. oneDNN's AVX2 sgemm prefetches about 16
/// rows of B past the product's last one; when B is the arena's last
/// buffer, those addresses lie past the arena, in pages never touched, and
/// each such prefetch is a failed page walk: ResNet-50's 1x1 convolutions
/// on the arena's last 64 x 56 x 56 image ran 2.5x slower on a Zen 1 core.
/// 1 MiB covers 16 rows of images up to 128 x 128.
constexpr int64_t kMaxTailBytes = 1 << 20;

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
        // A byte arena (kiln-plan-buffers') gets its tail; others stay as
        // they are.
        int64_t size = type.getNumElements();
        bool bytes = type.getRank() == 1 && type.getElementType().isInteger(8) &&
                     type.getLayout().isIdentity() && size > 0;
        int64_t tail =
            bytes ? std::min<int64_t>(kMaxTailBytes, llvm::alignTo(size, kPageBytes)) : 0;
        MemRefType globalType =
            bytes ? MemRefType::get({size + tail}, type.getElementType()) : type;
        Location loc = alloc.getLoc();
        builder.setInsertionPoint(func);
        auto global = memref::GlobalOp::create(
            builder, loc, ("__kiln_arena_" + func.getSymName()).str(),
            builder.getStringAttr("private"), globalType, builder.getUnitAttr(),
            /*constant=*/false,
            alloc.getAlignment() ? builder.getI64IntegerAttr(*alloc.getAlignment())
                                 : IntegerAttr());
        symbols.insert(global); // renames on a clash
        builder.setInsertionPoint(alloc);
        Value arena = memref::GetGlobalOp::create(builder, loc, globalType, global.getSymName());
        if (bytes) {
          faultInTail(builder, symbols, func, loc, arena, size, tail, global.getSymName());
          Value zero = arith::ConstantIndexOp::create(builder, loc, 0);
          arena = memref::ViewOp::create(builder, loc, type, arena, zero, ValueRange{});
        }
        alloc.getResult().replaceAllUsesWith(arena);
        alloc.erase();
      }
    }
  }

  /// On the function's first call (a flag global, `<name>_tail_ready`), a
  /// store of zero into each page of `arena`'s `tail` bytes after `size`.
  static void faultInTail(OpBuilder &builder, SymbolTable &symbols, func::FuncOp func, Location loc,
                          Value arena, int64_t size, int64_t tail, StringRef name) {
    Type i8 = builder.getI8Type();
    auto flagType = MemRefType::get({1}, i8);
    memref::GlobalOp flagGlobal;
    {
      OpBuilder::InsertionGuard guard(builder);
      builder.setInsertionPoint(func);
      flagGlobal = memref::GlobalOp::create(
          builder, loc, (name + "_tail_ready").str(), builder.getStringAttr("private"), flagType,
          DenseElementsAttr::get(RankedTensorType::get({1}, i8), builder.getI8IntegerAttr(0)),
          /*constant=*/false, IntegerAttr());
      symbols.insert(flagGlobal); // renames on a clash
    }
    Value flag = memref::GetGlobalOp::create(builder, loc, flagType, flagGlobal.getSymName());
    Value c0 = arith::ConstantIndexOp::create(builder, loc, 0);
    Value zeroByte = arith::ConstantIntOp::create(builder, loc, i8, 0);
    Value ready = memref::LoadOp::create(builder, loc, flag, c0);
    Value cold = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq, ready, zeroByte);
    scf::IfOp::create(builder, loc, cold, [&](OpBuilder &b, Location l) {
      Value begin = arith::ConstantIndexOp::create(b, l, size);
      Value end = arith::ConstantIndexOp::create(b, l, size + tail);
      Value step = arith::ConstantIndexOp::create(b, l, kPageBytes);
      scf::ForOp::create(b, l, begin, end, step, ValueRange{},
                         [&](OpBuilder &nb, Location nl, Value offset, ValueRange) {
                           memref::StoreOp::create(nb, nl, zeroByte, arena, offset);
                           scf::YieldOp::create(nb, nl);
                         });
      memref::StoreOp::create(b, l, arith::ConstantIntOp::create(b, l, i8, 1), flag, c0);
      scf::YieldOp::create(b, l);
    });
  }
};

} // namespace
} // namespace kiln
