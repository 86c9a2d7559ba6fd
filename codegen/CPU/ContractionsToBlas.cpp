//===- ContractionsToBlas.cpp - f32 matmul tiles as cblas_sgemm calls -----===//
//
// Kiln's matmul lowering is one linalg.generic over (batch..., m, n, k).
// After bufferization each kernel tile holds such a generic on subviews;
// this pass calls the BLAS for it, reading leading dimensions from strides.
//
//===----------------------------------------------------------------------===//
#include "codegen/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/SymbolTable.h"

namespace kiln {
#define GEN_PASS_DEF_KILNCONTRACTIONSTOBLASPASS
#include "codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

// CBLAS enumerators (cblas.h).
constexpr int32_t kCblasRowMajor = 101;
constexpr int32_t kCblasNoTrans = 111;
constexpr StringLiteral kSgemm = "cblas_sgemm";
constexpr StringLiteral kSetThreads = "openblas_set_num_threads";

/// How each operand's dimensions map to the loops (batch..., m, n, k).
struct GemmMatch {
  int64_t batchLoops;
  /// For A, B and C: the loop each leading (batch) dimension follows, or -1
  /// for a broadcast dimension of size one.
  SmallVector<int64_t> batchOf[3];
};

/// Whether `expr` is the loop dimension `dim`.
bool isDim(AffineExpr expr, int64_t dim) {
  auto d = dyn_cast<AffineDimExpr>(expr);
  return d && d.getPosition() == dim;
}

/// Whether the value is a 2-D row-major view (innermost stride 1).
bool hasUnitInnerStride(Value value, int64_t rank) {
  auto type = cast<MemRefType>(value.getType());
  if (type.getRank() != rank)
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  return succeeded(type.getStridesAndOffset(strides, offset)) && strides.back() == 1;
}

std::optional<GemmMatch> matchGemm(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1)
    return std::nullopt;
  for (Value operand : op->getOperands())
    if (!cast<MemRefType>(operand.getType()).getElementType().isF32())
      return std::nullopt;
  int64_t loops = op.getNumLoops();
  if (loops < 3)
    return std::nullopt;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  for (int64_t i = 0; i + 1 < loops; ++i)
    if (iterators[i] != utils::IteratorType::parallel)
      return std::nullopt;
  if (iterators.back() != utils::IteratorType::reduction)
    return std::nullopt;
  int64_t m = loops - 3, n = loops - 2, k = loops - 1;

  // Body: yield(c + a * b).
  Block &body = op.getRegion().front();
  if (body.getOperations().size() != 3)
    return std::nullopt;
  auto mul = dyn_cast<arith::MulFOp>(&body.front());
  auto add = dyn_cast<arith::AddFOp>(mul ? mul->getNextNode() : nullptr);
  if (!mul || !add)
    return std::nullopt;
  Value a = body.getArgument(0), b = body.getArgument(1), c = body.getArgument(2);
  bool mulOk = (mul.getLhs() == a && mul.getRhs() == b) || (mul.getLhs() == b && mul.getRhs() == a);
  bool addOk = (add.getLhs() == c && add.getRhs() == mul) || (add.getLhs() == mul && add.getRhs() == c);
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  if (!mulOk || !addOk || yield.getValues().size() != 1 || yield.getValues()[0] != add)
    return std::nullopt;

  GemmMatch match;
  match.batchLoops = m;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  // The trailing two results of each map: A (m, k), B (k, n), C (m, n).
  int64_t inner[3][2] = {{m, k}, {k, n}, {m, n}};
  for (int operand = 0; operand < 3; ++operand) {
    ArrayRef<AffineExpr> results = maps[operand].getResults();
    if (results.size() < 2 || !isDim(results[results.size() - 2], inner[operand][0]) ||
        !isDim(results.back(), inner[operand][1]))
      return std::nullopt;
    for (AffineExpr expr : results.drop_back(2)) {
      if (auto dim = dyn_cast<AffineDimExpr>(expr); dim && dim.getPosition() < m) {
        match.batchOf[operand].push_back(dim.getPosition());
      } else if (auto constant = dyn_cast<AffineConstantExpr>(expr);
                 constant && constant.getValue() == 0) {
        match.batchOf[operand].push_back(-1);
      } else {
        return std::nullopt;
      }
    }
    if (!hasUnitInnerStride(op->getOperand(operand), results.size()))
      return std::nullopt;
  }
  if (match.batchOf[2].size() != static_cast<size_t>(m))
    return std::nullopt; // C has every batch dimension
  return match;
}

func::FuncOp declare(ModuleOp module, StringRef name, FunctionType type) {
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
  auto decl = func::FuncOp::create(builder, module.getLoc(), name, type);
  decl.setPrivate();
  return decl;
}

/// The address of element [0, 0] of the 2-D view `view` and its leading
/// dimension, as C values.
std::pair<Value, Value> pointerAndLeadingDim(OpBuilder &b, Location loc, Value view) {
  auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, view);
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, metadata.getBaseBuffer());
  Value bytes = arith::MulIOp::create(b, loc, metadata.getOffset(),
                                      arith::ConstantIndexOp::create(b, loc, sizeof(float)));
  Value address = arith::AddIOp::create(b, loc, base, bytes);
  Value asInt = arith::IndexCastOp::create(b, loc, b.getI64Type(), address);
  Value pointer =
      LLVM::IntToPtrOp::create(b, loc, LLVM::LLVMPointerType::get(b.getContext()), asInt);
  Value leading = arith::IndexCastOp::create(b, loc, b.getI32Type(), metadata.getStrides()[0]);
  return {pointer, leading};
}

/// The 2-D matrix of `operand` at batch indices `ivs` (no copy).
Value matrixAt(OpBuilder &b, Location loc, Value operand, ArrayRef<int64_t> batchOf,
               ValueRange ivs) {
  auto type = cast<MemRefType>(operand.getType());
  if (batchOf.empty())
    return operand;
  int64_t rank = type.getRank();
  SmallVector<OpFoldResult> offsets, sizes, strides(rank, b.getIndexAttr(1));
  for (int64_t loop : batchOf) {
    offsets.push_back(loop < 0 ? OpFoldResult(b.getIndexAttr(0)) : OpFoldResult(ivs[loop]));
    sizes.push_back(b.getIndexAttr(1));
  }
  for (int64_t i = rank - 2; i < rank; ++i) {
    offsets.push_back(b.getIndexAttr(0));
    sizes.push_back(b.getIndexAttr(type.getDimSize(i)));
  }
  auto resultType = memref::SubViewOp::inferRankReducedResultType(
      type.getShape().take_back(2), type, offsets, sizes, strides);
  return memref::SubViewOp::create(b, loc, cast<MemRefType>(resultType), operand, offsets,
                                   sizes, strides);
}

struct KilnContractionsToBlasPass
    : impl::KilnContractionsToBlasPassBase<KilnContractionsToBlasPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    Type i32 = IntegerType::get(ctx, 32), f32 = Float32Type::get(ctx);
    Type ptr = LLVM::LLVMPointerType::get(ctx);

    SmallVector<std::pair<linalg::GenericOp, GemmMatch>> gemms;
    module.walk([&](linalg::GenericOp op) {
      if (std::optional<GemmMatch> match = matchGemm(op))
        gemms.push_back({op, *match});
    });
    if (gemms.empty())
      return;

    func::FuncOp sgemm = declare(
        module, kSgemm,
        FunctionType::get(ctx, {i32, i32, i32, i32, i32, i32, f32, ptr, i32, ptr, i32, f32, ptr, i32},
                          {}));
    func::FuncOp setThreads = declare(module, kSetThreads, FunctionType::get(ctx, {i32}, {}));

    llvm::SetVector<func::FuncOp> callers;
    for (auto &[op, match] : gemms) {
      callers.insert(op->getParentOfType<func::FuncOp>());
      rewrite(op, match, sgemm);
    }
    // Kernels split matmuls into per-thread tiles; the library must not
    // start threads of its own.
    for (func::FuncOp caller : callers) {
      OpBuilder b = OpBuilder::atBlockBegin(&caller.getBody().front());
      Value one = arith::ConstantIntOp::create(b, caller.getLoc(), 1, 32);
      func::CallOp::create(b, caller.getLoc(), setThreads, ValueRange{one});
    }
  }

  void rewrite(linalg::GenericOp op, const GemmMatch &match, func::FuncOp sgemm) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    int64_t m = match.batchLoops;
    Value a = op.getDpsInputs()[0], bMatrix = op.getDpsInputs()[1], c = op.getDpsInits()[0];

    // One call per batch element, in a loop nest over the batch dimensions.
    SmallVector<Value> ivs;
    for (int64_t i = 0; i < m; ++i) {
      auto loop = scf::ForOp::create(b, loc, arith::ConstantIndexOp::create(b, loc, 0),
                                     arith::ConstantIndexOp::create(b, loc, ranges[i]),
                                     arith::ConstantIndexOp::create(b, loc, 1));
      ivs.push_back(loop.getInductionVar());
      b.setInsertionPointToStart(loop.getBody());
    }
    auto [pa, lda] = pointerAndLeadingDim(b, loc, matrixAt(b, loc, a, match.batchOf[0], ivs));
    auto [pb, ldb] =
        pointerAndLeadingDim(b, loc, matrixAt(b, loc, bMatrix, match.batchOf[1], ivs));
    auto [pc, ldc] = pointerAndLeadingDim(b, loc, matrixAt(b, loc, c, match.batchOf[2], ivs));
    auto i32 = [&](int64_t value) -> Value {
      return arith::ConstantIntOp::create(b, loc, value, 32);
    };
    // A single row or column may have any stride; BLAS wants ld >= width.
    int64_t mSize = ranges[m], nSize = ranges[m + 1], kSize = ranges[m + 2];
    if (mSize == 1)
      lda = i32(std::max<int64_t>(kSize, 1));
    if (kSize == 1)
      ldb = i32(std::max<int64_t>(nSize, 1));
    if (mSize == 1)
      ldc = i32(std::max<int64_t>(nSize, 1));
    Value one = arith::ConstantFloatOp::create(b, loc, b.getF32Type(), APFloat(1.0f));
    func::CallOp::create(b, loc, sgemm,
                         ValueRange{i32(kCblasRowMajor), i32(kCblasNoTrans), i32(kCblasNoTrans),
                                    i32(mSize), i32(nSize), i32(kSize), one, pa, lda, pb, ldb,
                                    one, pc, ldc});
    op->erase();
  }
};

} // namespace
} // namespace kiln
