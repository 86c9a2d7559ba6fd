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

LogicalResult MatmulOp::verify() {
  auto lhs = getLhs().getType(), rhs = getRhs().getType();
  auto result = getResult().getType();
  if (lhs.getRank() != 3 || rhs.getRank() != 3 || result.getRank() != 3)
    return emitOpError("operands and result must be rank 3 ([batch, rows, columns])");
  Type element = result.getElementType();
  if (!element.isF32() && !element.isF16() && !element.isBF16())
    return emitOpError("element type must be f32, f16 or bf16, got ") << element;
  for (Value operand : getOperands())
    if (llvm::cast<ShapedType>(operand.getType()).getElementType() != element)
      return emitOpError("operands must all have the result's element type ") << element;
  if (!result.hasStaticShape() || !lhs.hasStaticShape() || !rhs.hasStaticShape())
    return emitOpError("shapes must be static");
  int64_t batch = result.getDimSize(0), m = result.getDimSize(1), n = result.getDimSize(2);
  int64_t lhsRows = lhs.getDimSize(getLhsTransposed() ? 2 : 1);
  int64_t k = lhs.getDimSize(getLhsTransposed() ? 1 : 2);
  int64_t rhsK = rhs.getDimSize(getRhsTransposed() ? 2 : 1);
  int64_t rhsColumns = rhs.getDimSize(getRhsTransposed() ? 1 : 2);
  if (lhsRows != m || rhsColumns != n)
    return emitOpError("a ") << lhs << " times a " << rhs << " is not a " << result;
  if (rhsK != k)
    return emitOpError("the lhs has ") << k << " columns but the rhs " << rhsK << " rows";
  for (auto [name, type] : {std::pair{"lhs", lhs}, std::pair{"rhs", rhs}})
    if (type.getDimSize(0) != batch && type.getDimSize(0) != 1)
      return emitOpError(name) << " batch " << type.getDimSize(0) << " is neither 1 nor "
                               << batch;
  if (Value bias = getBias()) {
    auto type = llvm::cast<RankedTensorType>(bias.getType());
    if (type.getRank() != 1 || type.getDimSize(0) != n)
      return emitOpError("bias must be a vector of ") << n << " elements, got " << type;
  }
  if (Value addend = getAddend())
    if (addend.getType() != result)
      return emitOpError("addend must have the result's type ") << result;
  return success();
}
