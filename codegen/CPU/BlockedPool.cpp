//===- BlockedPool.cpp - Pools of blocked images as CPU runtime calls -----===//
//
// A kiln.max_pool or kiln.average_pool of a blocked image (isBlockedPool)
// that kiln-lower-to-linalg left as it is (blocked-pool-calls) becomes a
// call of the runtime's kiln_pool2d_blocked (runtime/kernels/BlockedPool.c)
// when one-shot bufferization gives it buffers: the blocked input as it is,
// a fresh blocked output, and the call site's state (a zeroed 8-byte
// global, where the runtime keeps its oneDNN primitive). The call runs
// outside the kernels' parallel loops, so oneDNN spreads the pool over all
// the threads itself.
//
//===----------------------------------------------------------------------===//
#include "codegen/CPU/BlasCalls.h"
#include "codegen/CPU/RuntimeCallBuffers.h"
#include "codegen/Passes.h"
#include "dialects/kiln/KilnOps.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::bufferization;

namespace kiln {
namespace {

constexpr StringLiteral kBlockedPool = "kiln_pool2d_blocked";
// kiln_pool2d_blocked's kinds.
constexpr int64_t kMax = 0, kAverageCountingPads = 1, kAverage = 2;

/// Reads its input; writes a new buffer.
template <typename Pool>
struct BlockedPoolModel
    : public BufferizableOpInterface::ExternalModel<BlockedPoolModel<Pool>, Pool> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &, const AnalysisState &) const {
    return true;
  }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &, const AnalysisState &) const {
    return false;
  }
  AliasingValueList getAliasingValues(Operation *, OpOperand &, const AnalysisState &) const {
    return {};
  }
  bool bufferizesToAllocation(Operation *, Value) const { return true; }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter, const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto pool = cast<Pool>(op);
    if (!isBlockedPool(op))
      return op->emitOpError("reached bufferization without a blocked f32 image to pool "
                             "(kiln-lower-to-linalg lowers the others)");
    Location loc = op->getLoc();
    MLIRContext *ctx = op->getContext();
    Type i64 = rewriter.getI64Type(), index = rewriter.getIndexType();

    // The runtime reads a dense image: a view of another layout is copied.
    FailureOr<Value> input = denseBuffer(rewriter, loc, pool.getInput(), options, state);
    if (failed(input))
      return failure();
    Value output = allocateDense(rewriter, loc, pool.getType());
    RankedTensorType resultType = pool.getType();

    // Arguments: slot, n, blocks, ih, iw, oh, ow, kh, kw, strides (2),
    // dilations (2), pads (top, left, bottom, right), channels per block,
    // input, output, kind.
    auto module = op->template getParentOfType<ModuleOp>();
    SmallVector<Type> argTypes(1, index);
    argTypes.append(17, i64);
    argTypes.append(2, index);
    argTypes.push_back(i64);
    func::FuncOp callee = blas::declare(module, kBlockedPool, FunctionType::get(ctx, argTypes, {}));
    SymbolTable symbols(module);
    Value slot = blas::CallSites(module, symbols).slotBuffer(rewriter, loc);

    ArrayRef<int64_t> in = pool.getInput().getType().getShape(), out = resultType.getShape();
    SmallVector<int64_t> sizes = {in[0], in[1], in[2], in[3], out[2], out[3]};
    llvm::append_range(sizes, pool.getKernelShape());
    llvm::append_range(sizes, pool.getStrides());
    llvm::append_range(sizes, pool.getDilations());
    llvm::append_range(sizes, pool.getPads());
    sizes.push_back(in[4]);
    int64_t kind = kMax;
    if (auto average = dyn_cast<AveragePoolOp>(op))
      kind = average.getCountIncludePad() ? kAverageCountingPads : kAverage;
    sizes.push_back(kind);

    auto address = [&](Value buffer) { return firstElementAddress(rewriter, loc, buffer); };
    SmallVector<Value> args = {address(slot)};
    for (int64_t size : ArrayRef(sizes).drop_back())
      args.push_back(arith::ConstantIntOp::create(rewriter, loc, i64, size));
    int64_t inputOperand = static_cast<int64_t>(args.size());
    args.push_back(address(*input));
    args.push_back(address(output));
    args.push_back(arith::ConstantIntOp::create(rewriter, loc, i64, sizes.back()));
    auto call = func::CallOp::create(rewriter, loc, callee, args);
    call->setAttr(kNoCaptureCallAttr, rewriter.getUnitAttr());
    call->setAttr(kReadOnlyOperandsAttr, rewriter.getDenseI64ArrayAttr({inputOperand}));
    replaceOpWithBufferizedValues(rewriter, op, output);
    return success();
  }
};

} // namespace

void registerBlockedPoolBufferization(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, KilnDialect *) {
    MaxPoolOp::attachInterface<BlockedPoolModel<MaxPoolOp>>(*ctx);
    AveragePoolOp::attachInterface<BlockedPoolModel<AveragePoolOp>>(*ctx);
  });
}

} // namespace kiln
