//===- BlasCalls.cpp - Shared pieces of the CPU's BLAS and kernel calls ---===//
#include "codegen/CPU/BlasCalls.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;

namespace kiln::blas {

Value rootOf(Value value) {
  while (auto view = value.getDefiningOp<ViewLikeOpInterface>())
    value = view.getViewSource();
  return value;
}

// CBLAS enumerators (cblas.h).
constexpr int32_t kCblasRowMajor = 101;
constexpr int32_t kCblasNoTrans = 111;
constexpr int32_t kCblasTrans = 112;

bool isDim(AffineExpr expr, int64_t dim) {
  auto d = dyn_cast<AffineDimExpr>(expr);
  return d && d.getPosition() == dim;
}

bool isF32Buffers(linalg::GenericOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1)
    return false;
  return llvm::all_of(op->getOperands(), [](Value operand) {
    return cast<MemRefType>(operand.getType()).getElementType().isF32();
  });
}

int64_t upperBound(const ValueBoundsConstraintSet::Variable &size) {
  FailureOr<int64_t> bound = ValueBoundsConstraintSet::computeConstantBound(
      presburger::BoundType::UB, size, /*stopCondition=*/nullptr, /*closedUB=*/true);
  return succeeded(bound) ? *bound : ShapedType::kDynamic;
}

SmallVector<OpFoldResult> loopSizes(OpBuilder &b, Location loc, linalg::LinalgOp op) {
  return llvm::map_to_vector(op.createLoopRanges(b, loc), [](Range range) { return range.size; });
}

OpFoldResult product(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes) {
  AffineExpr expr = getAffineConstantExpr(1, b.getContext());
  for (size_t i = 0; i < sizes.size(); ++i)
    expr = expr * getAffineSymbolExpr(i, b.getContext());
  return affine::makeComposedFoldedAffineApply(b, loc, AffineMap::get(0, sizes.size(), expr),
                                               sizes);
}

bool isDenseTrailing(Value operand, size_t count) {
  auto type = cast<MemRefType>(operand.getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)))
    return false;
  int64_t expected = 1, outermost = type.getRank() - static_cast<int64_t>(count);
  for (int64_t i = type.getRank() - 1; i >= outermost; --i) {
    if (type.getDimSize(i) != 1 && strides[i] != expected)
      return false;
    if (type.isDynamicDim(i)) {
      if (i != outermost)
        return false;
      continue;
    }
    expected *= type.getDimSize(i);
  }
  return true;
}

bool isConstantBuffer(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (auto global = dyn_cast<memref::GetGlobalOp>(def)) {
      auto symbol = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(def, global.getNameAttr());
      return symbol && symbol.getConstant();
    }
    if (!isa<memref::SubViewOp, memref::CastOp, memref::ReinterpretCastOp, memref::ExpandShapeOp,
             memref::CollapseShapeOp>(def))
      return false;
    value = def->getOperand(0);
  }
  return false;
}

func::FuncOp declare(ModuleOp module, StringRef name, FunctionType type) {
  if (auto existing = module.lookupSymbol<func::FuncOp>(name))
    return existing;
  OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
  auto decl = func::FuncOp::create(builder, module.getLoc(), name, type);
  decl.setPrivate();
  return decl;
}

std::pair<Value, SmallVector<Value>> addressOf(OpBuilder &b, Location loc, Value buffer,
                                               ValueRange indices) {
  auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, buffer);
  Value element = metadata.getOffset();
  for (auto [index, stride] : llvm::zip(indices, metadata.getStrides()))
    if (!isZeroInteger(index))
      element = arith::AddIOp::create(b, loc, element, arith::MulIOp::create(b, loc, index, stride));
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, metadata.getBaseBuffer());
  Value bytes = arith::MulIOp::create(b, loc, element,
                                      arith::ConstantIndexOp::create(b, loc, sizeof(float)));
  Value address = arith::AddIOp::create(b, loc, base, bytes);
  Value asInt = arith::IndexCastOp::create(b, loc, b.getI64Type(), address);
  Value pointer =
      LLVM::IntToPtrOp::create(b, loc, LLVM::LLVMPointerType::get(b.getContext()), asInt);
  return {pointer, SmallVector<Value>(metadata.getStrides())};
}

Value asInteger(OpBuilder &b, Location loc, Type type, OpFoldResult size) {
  if (std::optional<int64_t> constant = getConstantIntValue(size))
    return arith::ConstantIntOp::create(b, loc, type, *constant);
  return arith::IndexCastOp::create(b, loc, type, cast<Value>(size));
}

Value advanceFloats(OpBuilder &b, Location loc, Value pointer, Value elements) {
  return LLVM::GEPOp::create(b, loc, pointer.getType(), b.getF32Type(), pointer,
                             ValueRange{elements});
}

SmallVector<Value> loopNest(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> ranges) {
  SmallVector<Value> ivs;
  for (OpFoldResult range : ranges) {
    auto loop = scf::ForOp::create(b, loc, arith::ConstantIndexOp::create(b, loc, 0),
                                   getValueOrCreateConstantIndexOp(b, loc, range),
                                   arith::ConstantIndexOp::create(b, loc, 1));
    ivs.push_back(loop.getInductionVar());
    b.setInsertionPointToStart(loop.getBody());
  }
  return ivs;
}

void callSgemm(OpBuilder &b, Location loc, func::FuncOp sgemm, OpFoldResult m, OpFoldResult n,
               OpFoldResult k, bool transA, Value a, Value lda, bool transB, Value bMatrix,
               Value ldb, Value c, Value ldc, Value alpha, Value beta) {
  auto i32 = [&](OpFoldResult value) { return asInteger(b, loc, b.getI32Type(), value); };
  Value one;
  if (!alpha || !beta)
    one = arith::ConstantFloatOp::create(b, loc, b.getF32Type(), APFloat(1.0f));
  alpha = alpha ? alpha : one;
  beta = beta ? beta : one;
  if (sgemm.getName() == kDnnlSgemm) {
    auto i64 = [&](OpFoldResult value) { return asInteger(b, loc, b.getI64Type(), value); };
    auto wide = [&](Value v) -> Value {
      return arith::ExtSIOp::create(b, loc, b.getI64Type(), v);
    };
    auto flag = [&](bool trans) -> Value {
      return arith::ConstantIntOp::create(b, loc, trans ? 'T' : 'N', 8);
    };
    func::CallOp::create(b, loc, sgemm,
                         ValueRange{flag(transA), flag(transB), i64(m), i64(n), i64(k), alpha, a,
                                    wide(lda), bMatrix, wide(ldb), beta, c, wide(ldc)});
    return;
  }
  auto flag = [&](bool trans) {
    return i32(b.getIndexAttr(trans ? kCblasTrans : kCblasNoTrans));
  };
  func::CallOp::create(b, loc, sgemm,
                       ValueRange{i32(b.getIndexAttr(kCblasRowMajor)), flag(transA), flag(transB),
                                  i32(m), i32(n), i32(k), alpha, a, lda, bMatrix, ldb, beta, c,
                                  ldc});
}

Value CallSites::slotBuffer(OpBuilder &b, Location loc) {
  Type i64 = b.getI64Type();
  auto slotType = MemRefType::get({1}, i64);
  OpBuilder detached(b.getContext());
  auto slot = memref::GlobalOp::create(
      detached, loc, "kiln_kernel_site", b.getStringAttr("private"), slotType,
      DenseElementsAttr::get(RankedTensorType::get({1}, i64), b.getI64IntegerAttr(0)),
      /*constant=*/false, b.getI64IntegerAttr(8));
  symbols.insert(slot, module.getBody()->begin()); // renamed if taken
  return memref::GetGlobalOp::create(b, loc, slotType, slot.getSymName());
}

Value CallSites::slot(OpBuilder &b, Location loc) {
  return addressOf(b, loc, slotBuffer(b, loc)).first;
}

func::FuncOp CallSites::declareKernel(StringRef name, unsigned count,
                                      ArrayRef<unsigned> pointers) {
  MLIRContext *ctx = module.getContext();
  SmallVector<Type> argTypes(count, IntegerType::get(ctx, 64));
  for (unsigned i : pointers)
    argTypes[i] = LLVM::LLVMPointerType::get(ctx);
  return declare(module, name, FunctionType::get(ctx, argTypes, {}));
}

linalg::FillOp zeroFillBefore(Operation *op, Value c) {
  for (Operation *prev = op->getPrevNode(); prev; prev = prev->getPrevNode()) {
    if (auto fill = dyn_cast<linalg::FillOp>(prev))
      return fill.getOutputs()[0] == c && matchPattern(fill.getInputs()[0], m_PosZeroFloat())
                 ? fill
                 : linalg::FillOp();
    if (!isMemoryEffectFree(prev))
      return {};
  }
  return {};
}

Value UpdateEpilogue::begin(OpBuilder &b, Location loc) const {
  // A train step's state may be updated in its own buffer (see
  // kiln-state-in-place): then `start` is `out`, and needs no copy.
  auto address = [&](Value view) {
    auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, view);
    Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, metadata.getBaseBuffer());
    return std::make_pair(base, metadata.getOffset());
  };
  auto [startBase, startOffset] = address(start);
  auto [outBase, outOffset] = address(out);
  Value distinct = arith::OrIOp::create(
      b, loc, arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, startBase, outBase),
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, startOffset, outOffset));
  auto copy = scf::IfOp::create(b, loc, distinct, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(copy.thenBlock());
  memref::CopyOp::create(b, loc, start, out);
  b.setInsertionPointAfter(copy);
  Value factor = scale;
  if (isa<MemRefType>(factor.getType()))
    factor = memref::LoadOp::create(b, loc, factor);
  return subtract ? arith::NegFOp::create(b, loc, factor).getResult() : factor;
}

void UpdateEpilogue::erase() {
  Operation *alloc = fill.getOutputs()[0].getDefiningOp();
  op->erase();
  fill->erase();
  // The tile buffer is left with its deallocation alone.
  for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
    user->erase();
  alloc->erase();
}

std::optional<UpdateEpilogue> matchUpdateEpilogue(linalg::GenericOp gemm, Value c) {
  if (!isa_and_nonnull<memref::AllocOp, memref::AllocaOp>(c.getDefiningOp()))
    return std::nullopt;
  UpdateEpilogue update;
  update.fill = zeroFillBefore(gemm, c);
  if (!update.fill)
    return std::nullopt;
  Operation *next = gemm->getNextNode();
  while (next && isMemoryEffectFree(next))
    next = next->getNextNode();
  auto epilogue = dyn_cast_or_null<linalg::GenericOp>(next);
  if (!epilogue || !epilogue.hasPureBufferSemantics() || epilogue.getNumDpsInits() != 1 ||
      epilogue.getNumParallelLoops() != epilogue.getNumLoops())
    return std::nullopt;
  update.op = epilogue;
  for (Operation *user : c.getUsers())
    if (user != gemm && user != update.fill && user != epilogue && !isa<memref::DeallocOp>(user))
      return std::nullopt;
  auto cType = cast<MemRefType>(c.getType());
  // Operands: C and the start, whole and in order; the output likewise; and
  // perhaps the scale as a rank-0 buffer.
  Block &body = epilogue.getRegion().front();
  Value gradient, start, scaleArg;
  for (OpOperand &operand : epilogue->getOpOperands()) {
    AffineMap map = epilogue.getMatchingIndexingMap(&operand);
    auto type = dyn_cast<MemRefType>(operand.get().getType());
    Value arg = body.getArgument(operand.getOperandNumber());
    if (type && type.getRank() == 0 && map.getNumResults() == 0 &&
        !epilogue.isDpsInit(&operand) && !scaleArg) {
      scaleArg = arg;
      update.scale = operand.get();
    } else if (type && map.isIdentity() && type.getShape() == cType.getShape()) {
      if (epilogue.isDpsInit(&operand))
        update.out = operand.get();
      else if (operand.get() == c && !gradient)
        gradient = arg;
      else if (!start) {
        start = arg;
        update.start = operand.get();
      } else {
        return std::nullopt;
      }
    } else {
      return std::nullopt;
    }
  }
  if (!gradient || !start || !update.out || body.getOperations().size() != 3)
    return std::nullopt;
  // yield(start -/+ gradient * scale), in either operand order.
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  Operation *combine = yield.getValues()[0].getDefiningOp();
  if (!isa_and_nonnull<arith::SubFOp, arith::AddFOp>(combine))
    return std::nullopt;
  update.subtract = isa<arith::SubFOp>(combine);
  Value lhs = combine->getOperand(0), rhs = combine->getOperand(1);
  if (!update.subtract && rhs == start)
    std::swap(lhs, rhs);
  auto product = rhs.getDefiningOp<arith::MulFOp>();
  if (lhs != start || !product)
    return std::nullopt;
  Value factor = product.getLhs() == gradient ? product.getRhs()
                 : product.getRhs() == gradient ? product.getLhs()
                                                : Value();
  if (!factor)
    return std::nullopt;
  if (factor != scaleArg) {
    // A scalar from outside the body, available where the product runs.
    if (scaleArg || factor.getParentRegion() == &epilogue.getRegion() ||
        !factor.getType().isF32())
      return std::nullopt;
    if (Operation *def = factor.getDefiningOp();
        def && def->getBlock() == gemm->getBlock() && !def->isBeforeInBlock(gemm))
      return std::nullopt;
    update.scale = factor;
  }
  // The output is written before the product reads its operands: it must be
  // a caller's buffer (an out-parameter), which no operand can share.
  Value outRoot = rootOf(update.out);
  if (!isa<BlockArgument>(outRoot) || rootOf(gemm.getDpsInputs()[0]) == outRoot ||
      rootOf(gemm.getDpsInputs()[1]) == outRoot)
    return std::nullopt;
  return update;
}

} // namespace kiln::blas
