//===- ProfileKernels.cpp - Time each kernel of a CPU artifact ------------===//
//
// kilnc --profile: every kernel at the top level of a function (a parallel
// loop over tiles, a loop nest left serial, a copy, a library call) is
// bracketed by two reads of CLOCK_MONOTONIC, and the time between them and
// one call are added to the kernel's pair of counters in the artifact's
// kKernelProfileSymbol global. The module's kKernelProfileAttr lists the
// kernels in id order, for kilnc to name them in the manifest.
//
//===----------------------------------------------------------------------===//
#include "codegen/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/SetVector.h"

namespace kiln {
#define GEN_PASS_DEF_KILNPROFILEKERNELSPASS
#include "codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

constexpr StringLiteral kClock = "clock_gettime";
constexpr int32_t kClockMonotonic = 1; // Linux's CLOCK_MONOTONIC
/// ONNX nodes named in a kernel's entry, at most; more are counted.
constexpr size_t kMaxNamedNodes = 3;

/// What the profile calls a top-level op, or "" for one that is no kernel
/// (a view, an allocation, a constant).
StringRef kernelKind(Operation *op) {
  if (isa<scf::ForallOp, scf::ParallelOp>(op))
    return "parallel";
  if (isa<memref::CopyOp>(op))
    return "copy";
  if (isa<func::CallOp>(op))
    return "call";
  if (isa<linalg::LinalgOp>(op) || op->getNumRegions() > 0)
    return "serial";
  return "";
}

/// "Conv#3 -> y, Relu#4 -> z": the ONNX nodes of the computations `op`
/// holds (linalg ops and calls: an index or a view may have been merged with
/// another node's), in the order they appear; or of any op, if none.
std::string nodesOf(Operation *op) {
  llvm::SetVector<StringRef> names;
  std::function<void(Location)> collect = [&](Location loc) {
    if (auto fused = dyn_cast<FusedLoc>(loc))
      llvm::for_each(fused.getLocations(), collect);
    else if (auto named = dyn_cast<NameLoc>(loc))
      // The importer's names for graph inputs, outputs and initializers
      // are no nodes.
      if (StringRef name = named.getName().getValue();
          !name.starts_with("input '") && !name.starts_with("output '") &&
          !name.starts_with("initializer '"))
        names.insert(name);
    else if (auto callSite = dyn_cast<CallSiteLoc>(loc))
      collect(callSite.getCallee());
  };
  op->walk([&](Operation *inner) {
    if (isa<linalg::LinalgOp, func::CallOp, memref::CopyOp>(inner))
      collect(inner->getLoc());
  });
  if (names.empty())
    op->walk([&](Operation *inner) { collect(inner->getLoc()); });
  std::string text;
  for (StringRef name : names.getArrayRef().take_front(kMaxNamedNodes))
    text += (text.empty() ? "" : ", ") + name.str();
  if (names.size() > kMaxNamedNodes)
    text += " and " + std::to_string(names.size() - kMaxNamedNodes) + " more";
  return text.empty() ? "(no ONNX node)" : text;
}

struct KilnProfileKernelsPass : impl::KilnProfileKernelsPassBase<KilnProfileKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    OpBuilder builder(context);
    Location loc = module.getLoc();
    auto i64 = builder.getI64Type();
    auto timespec = MemRefType::get({2}, i64);

    SmallVector<Attribute> kernels;
    SmallVector<std::pair<Operation *, int64_t>> timed;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal() || !func.isPublic())
        continue;
      for (Operation &op : func.getBody().front().without_terminator()) {
        StringRef kind = kernelKind(&op);
        if (kind.empty())
          continue;
        timed.push_back({&op, static_cast<int64_t>(kernels.size())});
        kernels.push_back(builder.getArrayAttr({builder.getStringAttr(func.getSymName()),
                                                builder.getStringAttr(kind),
                                                builder.getStringAttr(nodesOf(&op))}));
      }
    }
    if (kernels.empty())
      return;
    module->setAttr(kKernelProfileAttr, builder.getArrayAttr(kernels));

    builder.setInsertionPointToStart(module.getBody());
    auto counters = MemRefType::get({2 * static_cast<int64_t>(kernels.size())}, i64);
    memref::GlobalOp::create(
        builder, loc, kKernelProfileSymbol, /*sym_visibility=*/nullptr, counters,
        DenseElementsAttr::get(RankedTensorType::get(counters.getShape(), i64), builder.getI64IntegerAttr(0)),
        /*constant=*/false, /*alignment=*/nullptr);
    func::FuncOp clock = module.lookupSymbol<func::FuncOp>(kClock);
    if (!clock) {
      clock = func::FuncOp::create(builder, loc, kClock,
                                   builder.getFunctionType({builder.getI32Type(), timespec},
                                                           {builder.getI32Type()}));
      clock.setPrivate();
    }

    // One timespec per function, at its entry.
    DenseMap<Operation *, Value> timespecs;
    auto now = [&](OpBuilder &b, Location at, Value buffer) -> Value {
      Value id = arith::ConstantIntOp::create(b, at, kClockMonotonic, 32);
      func::CallOp::create(b, at, clock, ValueRange{id, buffer});
      Value zero = arith::ConstantIndexOp::create(b, at, 0);
      Value one = arith::ConstantIndexOp::create(b, at, 1);
      Value seconds = memref::LoadOp::create(b, at, buffer, zero);
      Value nanoseconds = memref::LoadOp::create(b, at, buffer, one);
      Value billion = arith::ConstantIntOp::create(b, at, 1'000'000'000, 64);
      return arith::AddIOp::create(b, at, arith::MulIOp::create(b, at, seconds, billion), nanoseconds);
    };
    auto add = [&](OpBuilder &b, Location at, Value table, int64_t slot, Value amount) {
      Value index = arith::ConstantIndexOp::create(b, at, slot);
      Value old = memref::LoadOp::create(b, at, table, index);
      memref::StoreOp::create(b, at, arith::AddIOp::create(b, at, old, amount), table, index);
    };
    for (auto [op, id] : timed) {
      Operation *func = op->getParentOp();
      Value &buffer = timespecs[func];
      if (!buffer) {
        OpBuilder entry = OpBuilder::atBlockBegin(&op->getParentRegion()->front());
        buffer = memref::AllocaOp::create(entry, func->getLoc(), timespec);
      }
      Location at = op->getLoc();
      OpBuilder b(op);
      Value start = now(b, at, buffer);
      b.setInsertionPointAfter(op);
      Value elapsed = arith::SubIOp::create(b, at, now(b, at, buffer), start);
      Value table = memref::GetGlobalOp::create(b, at, counters, kKernelProfileSymbol);
      add(b, at, table, 2 * id, elapsed);
      add(b, at, table, 2 * id + 1, arith::ConstantIntOp::create(b, at, 1, 64));
    }
  }
};

} // namespace
} // namespace kiln
