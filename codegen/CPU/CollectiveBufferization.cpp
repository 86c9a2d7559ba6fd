//===- CollectiveBufferization.cpp - kiln collectives as CPU runtime calls -===//
//
// The collectives of a data-parallel step stay kiln ops through
// kiln-lower-to-linalg and become calls when one-shot bufferization gives
// them buffers: a bucket's start and wait are calls on the bucket's buffer,
// which the start's result shares (the sum is made in place), and the world
// size and the replica's rank are calls returning them. The callees are runtime/kernels/Collective.c,
// which forwards them to the hooks the runtime installs
// (kiln/collective_abi.h).
//
//===----------------------------------------------------------------------===//
#include "codegen/Passes.h"
#include "dialects/kiln/KilnOps.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"

using namespace mlir;
using namespace mlir::bufferization;

namespace kiln {
namespace {

constexpr StringLiteral kStart = "kiln_all_reduce_start";
constexpr StringLiteral kWait = "kiln_all_reduce_wait";
constexpr StringLiteral kWorldSize = "kiln_world_size";
constexpr StringLiteral kReplicaRank = "kiln_replica_rank";

/// The runtime function `name` of type `type`, declared in `op`'s module
/// on first use.
func::FuncOp declareRuntimeFunction(RewriterBase &rewriter, Operation *op, StringRef name,
                                    FunctionType type) {
  auto module = op->getParentOfType<ModuleOp>();
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  OpBuilder::InsertionGuard guard(rewriter);
  rewriter.setInsertionPointToStart(module.getBody());
  auto func = func::FuncOp::create(rewriter, module.getLoc(), name, type);
  func.setPrivate();
  return func;
}

/// all_reduce_start and all_reduce_wait: read and write their operand's
/// buffer in place and call the runtime with it.
template <typename OpTy>
struct BucketModel : public BufferizableOpInterface::ExternalModel<BucketModel<OpTy>, OpTy> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &, const AnalysisState &) const { return true; }
  bool bufferizesToMemoryWrite(Operation *, OpOperand &, const AnalysisState &) const { return true; }
  AliasingValueList getAliasingValues(Operation *op, OpOperand &, const AnalysisState &) const {
    return {{op->getResult(0), BufferRelation::Equivalent}};
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter, const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto bucketOp = llvm::cast<OpTy>(op);
    FailureOr<Value> buffer = getBuffer(rewriter, bucketOp.getInput(), options, state);
    if (failed(buffer))
      return failure();
    auto type = llvm::cast<MemRefType>(buffer->getType());
    if (!type.getLayout().isIdentity())
      return op->emitError("a bucket of all-reduced gradients must be one contiguous buffer");
    MLIRContext *ctx = op->getContext();
    Location loc = op->getLoc();
    Type i64 = rewriter.getI64Type();
    // The address goes as an integer (a pointer in the C callee): the
    // bare-pointer convention passes only statically shaped memrefs, and
    // buckets differ in size. The buffer escapes, so the code after the
    // wait reloads it.
    Type index = rewriter.getIndexType();
    func::FuncOp callee = declareRuntimeFunction(
        rewriter, op, std::is_same_v<OpTy, AllReduceStartOp> ? kStart : kWait,
        FunctionType::get(ctx, {i64, index, i64}, {}));
    Value bucket = arith::ConstantIntOp::create(rewriter, loc, i64, bucketOp.getBucket());
    Value count = arith::ConstantIntOp::create(rewriter, loc, i64, type.getNumElements());
    Value data = memref::ExtractAlignedPointerAsIndexOp::create(rewriter, loc, *buffer);
    func::CallOp::create(rewriter, loc, callee, ValueRange{bucket, data, count});
    replaceOpWithBufferizedValues(rewriter, op, *buffer);
    return success();
  }
};

/// world_size and replica_rank: a fresh one-element buffer holding what the
/// runtime says.
template <typename OpTy>
struct WorldModel : public BufferizableOpInterface::ExternalModel<WorldModel<OpTy>, OpTy> {
  bool bufferizesToAllocation(Operation *, Value) const { return true; }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter, const BufferizationOptions &,
                          BufferizationState &) const {
    Location loc = op->getLoc();
    constexpr bool size = std::is_same_v<OpTy, WorldSizeOp>;
    Type element = size ? Type(rewriter.getF32Type()) : Type(rewriter.getI64Type());
    func::FuncOp callee = declareRuntimeFunction(rewriter, op, size ? kWorldSize : kReplicaRank,
                                                 FunctionType::get(op->getContext(), {}, {element}));
    Value value = func::CallOp::create(rewriter, loc, callee, ValueRange{}).getResult(0);
    Value buffer = memref::AllocOp::create(rewriter, loc, MemRefType::get({}, element));
    memref::StoreOp::create(rewriter, loc, value, buffer);
    replaceOpWithBufferizedValues(rewriter, op, buffer);
    return success();
  }
};

} // namespace

void registerCollectiveBufferization(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, KilnDialect *) {
    AllReduceStartOp::attachInterface<BucketModel<AllReduceStartOp>>(*ctx);
    AllReduceWaitOp::attachInterface<BucketModel<AllReduceWaitOp>>(*ctx);
    WorldSizeOp::attachInterface<WorldModel<WorldSizeOp>>(*ctx);
    ReplicaRankOp::attachInterface<WorldModel<ReplicaRankOp>>(*ctx);
  });
}

} // namespace kiln
