//===- ContractionsToBlas.cpp - f32 matmul tiles as cblas_sgemm calls -----===//
//
// Kiln's matmul lowering is one linalg.generic over (batch..., m, n, k).
// After bufferization each kernel tile holds such a generic on subviews;
// this pass calls the BLAS for it, reading leading dimensions from strides.
// Convolution tiles are lowered by ConvolutionsToBlas.cpp.
//
//===----------------------------------------------------------------------===//
#include "codegen/CPU/BlasCalls.h"
#include "codegen/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ValueBoundsOpInterface.h"

namespace kiln {
#define GEN_PASS_DEF_KILNCONTRACTIONSTOBLASPASS
#include "codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

using namespace blas;

constexpr StringLiteral kSetThreads = "openblas_set_num_threads";
/// runtime/kernels/PackedMatmul.c: C += A * B with B packed once per address.
constexpr StringLiteral kConstantB = "kiln_matmul_constant_b";
/// Products over at most this many rows of a non-transposed B (or of a
/// transposed A) run at full speed whatever its row stride (measured: 256
/// rows 4 KiB apart did).
constexpr int64_t kMaxConflictFreeK = 256;
/// Fewest reuses of each packed element (M for B, N for A) for which
/// copying the operand into conflict-free rows pays.
constexpr int64_t kMinRowsForSpacing = 64;
/// Rows of such a copy are padded to a multiple of this many floats (one
/// 64-byte line), and one more when that is a multiple of 2 KiB (still
/// 5 % slower than an odd number of lines).
constexpr int64_t kRowSpacing = 16;
/// How each operand's dimensions map to the loops (batch..., m, n, k). A
/// product by a vector has no m loop (x^T W, a batch-1 layer: A is one row)
/// or no n loop (W x: B is one column); it is still one sgemm call, which
/// oneDNN runs as a matrix-vector kernel.
struct GemmMatch {
  int64_t batchLoops;
  bool hasM = true, hasN = true;
  /// For A, B and C: the loop each leading (batch) dimension follows, or -1
  /// for a broadcast dimension of size one.
  SmallVector<int64_t> batchOf[3];
  /// A is stored k x m (read as its transpose), B is stored n x k.
  bool transA = false, transB = false;
};

/// Whether the value is a view of rank `rank` whose innermost stride is 1.
bool hasUnitInnerStride(Value value, int64_t rank) {
  auto type = cast<MemRefType>(value.getType());
  if (type.getRank() != rank)
    return false;
  SmallVector<int64_t> strides;
  int64_t offset;
  return succeeded(type.getStridesAndOffset(strides, offset)) && strides.back() == 1;
}

/// matchGemm with the m loop present or not, and the n loop present or not.
std::optional<GemmMatch> matchGemmForm(linalg::GenericOp op, bool hasM, bool hasN) {
  int64_t loops = op.getNumLoops();
  int64_t matrixLoops = 1 + hasM + hasN;
  if (loops < matrixLoops)
    return std::nullopt;
  GemmMatch match;
  match.batchLoops = loops - matrixLoops;
  match.hasM = hasM;
  match.hasN = hasN;
  int64_t m = match.batchLoops, n = m + hasM, k = loops - 1;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  // The trailing results of each map: A (m, k), B (k, n), C (m, n); A and B
  // may also be stored transposed, (k, m) and (n, k). A missing loop drops
  // its dimension.
  SmallVector<int64_t> inner[3];
  if (hasM)
    inner[0].push_back(m);
  inner[0].push_back(k);
  inner[1].push_back(k);
  if (hasN)
    inner[1].push_back(n);
  if (hasM)
    inner[2].push_back(m);
  if (hasN)
    inner[2].push_back(n);
  bool *transposed[3] = {&match.transA, &match.transB, nullptr};
  for (int operand = 0; operand < 3; ++operand) {
    ArrayRef<AffineExpr> results = maps[operand].getResults();
    size_t count = inner[operand].size();
    if (results.size() < count)
      return std::nullopt;
    ArrayRef<AffineExpr> trailing = results.take_back(count);
    bool straight = llvm::all_of(llvm::zip(trailing, inner[operand]), [](auto pair) {
      return isDim(std::get<0>(pair), std::get<1>(pair));
    });
    if (!straight) {
      if (!transposed[operand] || count != 2 || !isDim(trailing[0], inner[operand][1]) ||
          !isDim(trailing[1], inner[operand][0]))
        return std::nullopt;
      *transposed[operand] = true;
    }
    for (AffineExpr expr : results.drop_back(count)) {
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

std::optional<GemmMatch> matchGemm(linalg::GenericOp op) {
  if (!isF32Buffers(op) || op.getNumLoops() < 2 || !isMultiplyAccumulate(op))
    return std::nullopt;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  if (llvm::count(iterators, utils::IteratorType::reduction) != 1 ||
      iterators.back() != utils::IteratorType::reduction)
    return std::nullopt;
  for (auto [hasM, hasN] : {std::pair(true, true), {false, true}, {true, false}})
    if (std::optional<GemmMatch> match = matchGemmForm(op, hasM, hasN))
      return match;
  return std::nullopt;
}

/// The address of element [0, 0] of the 2-D view `view` and its leading
/// dimension, as C values.
std::pair<Value, Value> pointerAndLeadingDim(OpBuilder &b, Location loc, Value view) {
  auto [pointer, strides] = addressOf(b, loc, view);
  return {pointer, asInteger(b, loc, b.getI32Type(), strides[0])};
}

/// The matrix (or vector) of `operand` at batch indices `ivs` (no copy).
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
  int64_t inner = rank - static_cast<int64_t>(batchOf.size());
  for (int64_t i = rank - inner; i < rank; ++i) {
    offsets.push_back(b.getIndexAttr(0));
    sizes.push_back(memref::getMixedSize(b, loc, operand, i));
  }
  auto resultType = memref::SubViewOp::inferRankReducedResultType(
      type.getShape().take_back(inner), type, offsets, sizes, strides);
  return memref::SubViewOp::create(b, loc, cast<MemRefType>(resultType), operand, offsets,
                                   sizes, strides);
}

struct KilnContractionsToBlasPass
    : impl::KilnContractionsToBlasPassBase<KilnContractionsToBlasPass> {
  using KilnContractionsToBlasPassBase::KilnContractionsToBlasPassBase;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (library != "onednn" && library != "openblas") {
      module.emitError() << "kiln-contractions-to-blas: unknown library '" << library
                         << "' (expected 'onednn' or 'openblas')";
      return signalPassFailure();
    }
    MLIRContext *ctx = &getContext();
    Type i32 = IntegerType::get(ctx, 32), f32 = Float32Type::get(ctx);
    Type ptr = LLVM::LLVMPointerType::get(ctx);

    SmallVector<std::pair<linalg::GenericOp, GemmMatch>> gemms;
    SmallVector<std::pair<linalg::GenericOp, ConvolutionLoops>> convolutions;
    module.walk([&](linalg::GenericOp op) {
      if (std::optional<GemmMatch> match = matchGemm(op))
        gemms.push_back({op, *match});
      else if (std::optional<ConvolutionLoops> loops = matchBufferConvolution(op))
        convolutions.push_back({op, *loops});
    });
    if (gemms.empty() && convolutions.empty())
      return;

    Type i8 = IntegerType::get(ctx, 8), i64 = IntegerType::get(ctx, 64);
    func::FuncOp sgemm =
        library == "onednn"
            ? declare(module, kDnnlSgemm,
                      FunctionType::get(ctx, {i8, i8, i64, i64, i64, f32, ptr, i64, ptr, i64, f32, ptr, i64},
                                        {i32}))
            : declare(module, kSgemm,
                      FunctionType::get(
                          ctx, {i32, i32, i32, i32, i32, i32, f32, ptr, i32, ptr, i32, f32, ptr, i32}, {}));

    SymbolTable symbolTable(module);
    CallSites callSites(module, symbolTable);
    sites = &callSites;
    llvm::SetVector<func::FuncOp> callers;
    for (auto &[op, match] : gemms) {
      callers.insert(op->getParentOfType<func::FuncOp>());
      rewrite(op, match, sgemm);
    }
    for (auto &[op, loops] : convolutions) {
      callers.insert(op->getParentOfType<func::FuncOp>());
      bool primitives = constantB && library == "onednn";
      rewriteConvolution(op, loops, sgemm, callSites, primitives,
                         primitives && directConvolutions);
    }
    // Kernels split matmuls into per-thread tiles; the library must not
    // start threads of its own.
    if (library == "onednn")
      return;
    func::FuncOp setThreads = declare(module, kSetThreads, FunctionType::get(ctx, {i32}, {}));
    for (func::FuncOp caller : callers) {
      OpBuilder b = OpBuilder::atBlockBegin(&caller.getBody().front());
      Value one = arith::ConstantIntOp::create(b, caller.getLoc(), 1, 32);
      func::CallOp::create(b, caller.getLoc(), setThreads, ValueRange{one});
    }
  }

  void rewrite(linalg::GenericOp op, const GemmMatch &match, func::FuncOp sgemm) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    SmallVector<OpFoldResult> sizes = loopSizes(b, loc, op);
    int64_t batch = match.batchLoops;
    Value a = op.getDpsInputs()[0], bMatrix = op.getDpsInputs()[1], c = op.getDpsInits()[0];
    OpFoldResult one = b.getIndexAttr(1);
    OpFoldResult mSize = match.hasM ? sizes[batch] : one;
    OpFoldResult nSize = match.hasN ? sizes[batch + match.hasM] : one;
    OpFoldResult kSize = sizes.back();
    auto isOne = [](OpFoldResult size) { return isConstantIntValue(size, 1); };

    // A constant B goes to kiln_matmul_constant_b, which packs it once.
    bool constantWeights = batch == 0 && match.hasN && constantB && library == "onednn" &&
                           !isOne(kSize) && !match.transA && isConstantBuffer(bMatrix);
    // A zeroed C need not be read; a weight update can take C's place.
    std::optional<UpdateEpilogue> update;
    if (!constantWeights && batch == 0)
      update = matchUpdateEpilogue(op, c);
    // The update's output view may be made after the product: the call goes
    // where the update was (only ops that touch no memory lie between).
    if (update)
      b.setInsertionPoint(update->op);
    linalg::FillOp zeroFill;
    if (!update && batch == 0)
      zeroFill = zeroFillBefore(op, c);
    // One call per batch element, in a loop nest over the batch dimensions.
    SmallVector<Value> ivs = loopNest(b, loc, ArrayRef(sizes).take_front(batch));
    Value aView = matrixAt(b, loc, a, match.batchOf[0], ivs);
    Value bView = matrixAt(b, loc, bMatrix, match.batchOf[1], ivs);
    // Operands oneDNN packs down their stored columns: A^T and B.
    Value spacedA, spacedB;
    if (sgemm.getName() == kDnnlSgemm && match.transA && match.hasM)
      spacedA = spacedRows(b, loc, aView, nSize, kSize);
    if (sgemm.getName() == kDnnlSgemm && !match.transB && match.hasN && !constantWeights)
      spacedB = spacedRows(b, loc, bView, mSize, kSize);
    auto [pa, lda] = pointerAndLeadingDim(b, loc, spacedA ? spacedA : aView);
    auto [pb, ldb] = pointerAndLeadingDim(b, loc, spacedB ? spacedB : bView);
    // An update writes its output in C's place.
    auto [pc, ldc] = pointerAndLeadingDim(
        b, loc, update ? update->out : matrixAt(b, loc, c, match.batchOf[2], ivs));
    // A single row or column may have any stride; BLAS wants ld >= width
    // (the stored width: k for A, m for A^T, n for B, k for B^T). A vector
    // that is one column (B or C without n) keeps its element stride, 1.
    auto width = [&](OpFoldResult size) {
      std::optional<int64_t> constant = getConstantIntValue(size);
      return asInteger(b, loc, b.getI32Type(),
                       constant ? b.getIndexAttr(std::max<int64_t>(*constant, 1)) : size);
    };
    if (match.transA ? isOne(kSize) : isOne(mSize))
      lda = width(match.transA ? mSize : kSize);
    if (match.transB ? isOne(nSize) : isOne(kSize))
      ldb = width(match.transB ? kSize : nSize);
    if (isOne(mSize))
      ldc = width(nSize);
    if (constantWeights) {
      // C starts at zero: the primitive writes it rather than adding onto
      // it (the product of a layer without bias, GPT-2's 25 MB of logits).
      callWithConstantB(b, loc, match.transB, mSize, nSize, kSize, pa, lda, pb, ldb, pc, ldc,
                        /*accumulate=*/!zeroFill);
    } else if (update) {
      // out = start, then out += alpha * A B.
      Value alpha = update->begin(b, loc);
      callSgemm(b, loc, sgemm, mSize, nSize, kSize, match.transA, pa, lda, match.transB, pb, ldb,
                pc, ldc, alpha);
    } else {
      // C starts at zero: the library need not read it.
      Value beta;
      if (zeroFill)
        beta = arith::ConstantFloatOp::create(b, loc, b.getF32Type(), APFloat(0.0f));
      callSgemm(b, loc, sgemm, mSize, nSize, kSize, match.transA, pa, lda, match.transB, pb, ldb,
                pc, ldc, /*alpha=*/Value(), beta);
    }
    for (Value spaced : {spacedA, spacedB})
      if (spaced)
        memref::DeallocOp::create(b, loc,
                                  cast<memref::SubViewOp>(spaced.getDefiningOp()).getSource());
    op->erase();
    if (zeroFill)
      zeroFill->erase();
    if (update)
      update->erase();
  }

  /// oneDNN's sgemm packs a B that is not transposed, and an A that is,
  /// down their stored columns: with rows a multiple of 4 KiB apart (1024,
  /// 2048, ... floats: a dense layer's weights, its activations) every row
  /// of a panel falls in the same cache sets, and a product over more than
  /// kMaxConflictFreeK of them runs at three quarters of its speed (27
  /// against 37 GFLOP/s per core at 256x512x1024). Such an operand `view`
  /// (k rows), each element of which `reuse` (M for B, N for A) is at least
  /// kMinRowsForSpacing to repay the copy, is copied into rows an odd number
  /// of cache lines long; the copy's view, or null for any other operand.
  static Value spacedRows(OpBuilder &b, Location loc, Value view, OpFoldResult reuse,
                          OpFoldResult k) {
    auto type = cast<MemRefType>(view.getType());
    SmallVector<int64_t> strides;
    int64_t offset;
    std::optional<int64_t> rows = getConstantIntValue(k), uses = getConstantIntValue(reuse);
    if (type.getRank() != 2 || !type.hasStaticShape() ||
        failed(type.getStridesAndOffset(strides, offset)) || ShapedType::isDynamic(strides[0]) ||
        (strides[0] * sizeof(float)) % 4096 != 0 || !rows || *rows <= kMaxConflictFreeK ||
        !uses || *uses < kMinRowsForSpacing)
      return Value();
    int64_t columns = type.getDimSize(1);
    int64_t width = llvm::alignTo(columns, kRowSpacing);
    if ((width * sizeof(float)) % 2048 == 0)
      width += kRowSpacing;
    Value copy = memref::AllocOp::create(
        b, loc, MemRefType::get({type.getDimSize(0), width}, b.getF32Type()), ValueRange{},
        b.getI64IntegerAttr(64));
    Value rowsView = memref::SubViewOp::create(
        b, loc, copy, ArrayRef<OpFoldResult>{b.getIndexAttr(0), b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(type.getDimSize(0)), b.getIndexAttr(columns)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1), b.getIndexAttr(1)});
    memref::CopyOp::create(b, loc, view, rowsView);
    return rowsView;
  }

  /// Where the runtime's kernels are called, while the pass runs.
  CallSites *sites = nullptr;

  /// A matrix product whose B is constant: kiln_matmul_constant_b with the
  /// call site's own zeroed 8-byte slot, a private global; C += A B where
  /// `accumulate`, else C = A B.
  void callWithConstantB(OpBuilder &b, Location loc, bool transB, OpFoldResult m,
                         OpFoldResult n, OpFoldResult k, Value a, Value lda, Value bMatrix,
                         Value ldb, Value c, Value ldc, bool accumulate) {
    ModuleOp module = getOperation();
    MLIRContext *ctx = b.getContext();
    Type i64 = b.getI64Type(), ptr = LLVM::LLVMPointerType::get(ctx);
    func::FuncOp callee = declare(
        module, kConstantB,
        FunctionType::get(ctx, {ptr, i64, i64, i64, i64, ptr, i64, ptr, i64, ptr, i64, i64}, {}));
    Value slotAddress = sites->slot(b, loc);
    auto wide = [&](Value v) -> Value { return arith::ExtSIOp::create(b, loc, i64, v); };
    auto constant = [&](OpFoldResult v) { return asInteger(b, loc, i64, v); };
    func::CallOp::create(b, loc, callee,
                         ValueRange{slotAddress, constant(b.getIndexAttr(transB)), constant(m),
                                    constant(n), constant(k), a, wide(lda), bMatrix, wide(ldb),
                                    c, wide(ldc), constant(b.getIndexAttr(accumulate))});
  }

};

} // namespace
} // namespace kiln
