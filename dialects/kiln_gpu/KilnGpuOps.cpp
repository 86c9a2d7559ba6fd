//===- KilnGpuOps.cpp - The kiln_gpu dialect: registration and verifiers --===//
#include "dialects/kiln_gpu/KilnGpuOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"

using namespace mlir;
using namespace kiln::kgpu;

#include "dialects/kiln_gpu/KilnGpuOpsDialect.cpp.inc"

#include "dialects/kiln_gpu/KilnGpuEnums.cpp.inc"

void KilnGpuDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/kiln_gpu/KilnGpuOps.cpp.inc"
      >();
}

#define GET_OP_CLASSES
#include "dialects/kiln_gpu/KilnGpuOps.cpp.inc"

//===----------------------------------------------------------------------===//
// LaunchOp
//===----------------------------------------------------------------------===//

LogicalResult LaunchOp::verify() {
  auto checkDims = [&](ArrayRef<int64_t> dims, const char *what) -> LogicalResult {
    if (dims.size() != 3 || llvm::any_of(dims, [](int64_t d) { return d <= 0; }))
      return emitOpError() << what << " must be three positive sizes (x, y, z)";
    return success();
  };
  if (failed(checkDims(getGrid(), "grid")) || failed(checkDims(getBlock(), "block")))
    return failure();
  ArrayRef<int64_t> block = getBlock();
  if (block[0] * block[1] * block[2] > 1024)
    return emitOpError("blocks of ") << block[0] * block[1] * block[2]
                                     << " threads exceed the 1024 a GPU runs";
  if (getSharedAttr().getInt() < 0)
    return emitOpError("shared memory size must not be negative");
  if (getResults().empty())
    return emitOpError("must have at least one result for its kernel to write");
  return success();
}

LogicalResult LaunchOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  Operation *symbol = symbolTable.lookupNearestSymbolFrom(*this, getKernelAttr());
  size_t buffers = getInputs().size() + getResults().size();
  // Once lowered to NVVM, a kernel takes one pointer per buffer.
  if (auto lowered = llvm::dyn_cast_or_null<LLVM::LLVMFuncOp>(symbol)) {
    if (lowered.getNumArguments() != buffers ||
        !llvm::all_of(lowered.getArgumentTypes(), llvm::IsaPred<LLVM::LLVMPointerType>))
      return emitOpError("kernel ") << getKernelAttr() << " must take " << buffers
                                    << " pointers";
    return success();
  }
  auto kernel = llvm::dyn_cast_or_null<gpu::GPUFuncOp>(symbol);
  if (!kernel)
    return emitOpError("kernel ") << getKernelAttr() << " is not a gpu.func";
  if (!kernel.isKernel())
    return emitOpError("kernel ") << getKernelAttr() << " is not marked 'kernel'";
  SmallVector<Type> tensors(getInputs().getTypes());
  llvm::append_range(tensors, getResults().getTypes());
  ArrayRef<Type> params = kernel.getArgumentTypes();
  if (params.size() != tensors.size())
    return emitOpError("kernel ") << getKernelAttr() << " takes " << params.size()
                                  << " buffers, but the launch passes " << tensors.size();
  for (auto [index, pair] : llvm::enumerate(llvm::zip(params, tensors))) {
    auto [param, type] = pair;
    auto memref = llvm::dyn_cast<MemRefType>(param);
    auto tensor = llvm::cast<RankedTensorType>(type);
    if (!memref || !memref.hasStaticShape() || !memref.getLayout().isIdentity() ||
        memref.getElementType() != tensor.getElementType() ||
        memref.getNumElements() != tensor.getNumElements())
      return emitOpError("kernel parameter ")
             << index << " has type " << param << ", which does not hold a " << type;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

/// The view of `value` as `batch` matrices of `rows x columns`: `strides`
/// when given, else dense (a tensor with one matrix shares it across the
/// batch).
static FailureOr<MatmulOp::MatrixView> viewOf(Value value, std::optional<ArrayRef<int64_t>> strides,
                                              int64_t batch, int64_t rows, int64_t columns) {
  int64_t elements = llvm::cast<RankedTensorType>(value.getType()).getNumElements();
  if (strides) {
    if (strides->size() != 2 || (*strides)[0] < 0 || (*strides)[1] < columns)
      return failure();
    bool shared = (*strides)[0] == 0 && batch > 1;
    return MatmulOp::MatrixView{shared ? 1 : batch, rows, columns, (*strides)[0], (*strides)[1]};
  }
  if (elements == batch * rows * columns)
    return MatmulOp::MatrixView{batch, rows, columns, rows * columns, columns};
  if (elements == rows * columns)
    return MatmulOp::MatrixView{1, rows, columns, 0, columns};
  return failure();
}

FailureOr<MatmulOp::MatrixView> MatmulOp::getLhsView() {
  bool t = getLhsTransposed();
  return viewOf(getLhs(), getLhsStrides(), getBatch(), t ? getK() : getM(), t ? getM() : getK());
}

FailureOr<MatmulOp::MatrixView> MatmulOp::getRhsView() {
  bool t = getRhsTransposed();
  return viewOf(getRhs(), getRhsStrides(), getBatch(), t ? getN() : getK(), t ? getK() : getN());
}

FailureOr<MatmulOp::MatrixView> MatmulOp::getResultView() {
  return viewOf(getResult(), getResultStrides(), getBatch(), getM(), getN());
}

FailureOr<MatmulOp::MatrixView> MatmulOp::getAddendView() {
  if (!getAddend())
    return failure();
  return viewOf(getAddend(), getAddendStrides(), getBatch(), getM(), getN());
}

/// One past the last element a view reaches.
static int64_t extent(const MatmulOp::MatrixView &view) {
  return (view.batches - 1) * view.batchStride + (view.rows - 1) * view.rowStride + view.columns;
}

/// Whether the view's elements are all different: its (stride, extent)
/// pairs, sorted by stride, each start past the span of the ones before.
static bool isInjective(const MatmulOp::MatrixView &view) {
  SmallVector<std::pair<int64_t, int64_t>> dims = {
      {1, view.columns}, {view.rowStride, view.rows}, {view.batchStride, view.batches}};
  llvm::erase_if(dims, [](auto d) { return d.second == 1; });
  llvm::sort(dims);
  int64_t span = 1;
  for (auto [stride, count] : dims) {
    if (stride < span)
      return false;
    span = stride * count;
  }
  return true;
}

LogicalResult MatmulOp::verify() {
  Type element = getResult().getType().getElementType();
  if (!element.isF32() && !element.isF16() && !element.isBF16())
    return emitOpError("element type must be f32, f16 or bf16, got ") << element;
  for (Value operand : getOperands())
    if (llvm::cast<ShapedType>(operand.getType()).getElementType() != element)
      return emitOpError("operands must all have the result's element type ") << element;
  for (Value value : llvm::concat<Value>(getOperands(), getODSResults(0)))
    if (!llvm::cast<ShapedType>(value.getType()).hasStaticShape())
      return emitOpError("shapes must be static");
  if (getBatch() < 1 || getM() < 1 || getN() < 1 || getK() < 1)
    return emitOpError("batch, m, n and k must be positive");
  auto check = [&](const char *name, Value value, FailureOr<MatrixView> view,
                   std::optional<ArrayRef<int64_t>> strides) -> LogicalResult {
    if (failed(view) && strides)
      return emitOpError(name) << "_strides must be [batch stride >= 0, row stride >= the "
                               << "row's length]";
    if (failed(view))
      return emitOpError(name) << " " << value.getType() << " does not hold " << getBatch()
                               << " dense matrices of its shape; give " << name << "_strides";
    int64_t elements = llvm::cast<RankedTensorType>(value.getType()).getNumElements();
    if (extent(*view) > elements)
      return emitOpError(name) << " view reaches element " << extent(*view) - 1 << " of a "
                               << value.getType();
    return success();
  };
  if (failed(check("lhs", getLhs(), getLhsView(), getLhsStrides())) ||
      failed(check("rhs", getRhs(), getRhsView(), getRhsStrides())) ||
      failed(check("result", getResult(), getResultView(), getResultStrides())) ||
      (getAddend() && failed(check("addend", getAddend(), getAddendView(), getAddendStrides()))))
    return failure();
  MatrixView result = *getResultView();
  if (result.batches != getBatch() || getBatch() * getM() * getN() != getResult().getType().getNumElements() ||
      !isInjective(result))
    return emitOpError("the result view must cover each of the result's ")
           << getResult().getType().getNumElements() << " elements once";
  if (getAddend() && getAddendView()->batches != getBatch())
    return emitOpError("addend must have a matrix for every batch index");
  if (Value bias = getBias()) {
    auto type = llvm::cast<RankedTensorType>(bias.getType());
    if (type.getNumElements() != getN())
      return emitOpError("bias must have ") << getN() << " elements, got " << type;
  }
  return success();
}
