//===- Kernels.cpp - Building GPU kernels from a kiln.fusion --------------===//
#include "codegen/GPU/Kernels.h"

#include "dialects/kiln_gpu/KilnGpuOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;

namespace kiln {

KernelBuilder::KernelBuilder(gpu::GPUModuleOp module, StringRef name, Location loc,
                             TypeRange results, ArrayRef<int64_t> block)
    : builder(module.getContext()), loc(loc), block(block), resultTypes(results) {
  MLIRContext *ctx = module.getContext();
  SmallVector<Type> params;
  for (Type type : results) {
    auto tensor = llvm::cast<RankedTensorType>(type);
    params.push_back(MemRefType::get(tensor.getShape(), tensor.getElementType()));
  }
  OpBuilder outer(ctx);
  outer.setInsertionPointToEnd(module.getBody());
  func = gpu::GPUFuncOp::create(outer, loc, name, FunctionType::get(ctx, params, {}));
  func->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), UnitAttr::get(ctx));
  SmallVector<int32_t> known = llvm::map_to_vector(block, [](int64_t d) { return int32_t(d); });
  func.setKnownBlockSizeAttr(DenseI32ArrayAttr::get(ctx, known));
  // Every buffer is a distinct allocation: results never alias each other
  // or an input, which lets the back end keep loads in flight across stores.
  for (unsigned i = 0; i < params.size(); ++i) {
    func.setArgAttr(i, LLVM::LLVMDialect::getNoAliasAttrName(), UnitAttr::get(ctx));
    func.setArgAttr(i, LLVM::LLVMDialect::getWriteOnlyAttrName(), UnitAttr::get(ctx));
  }
  builder.setInsertionPointToStart(&func.getBody().front());
}

Value KernelBuilder::getResult(unsigned i) { return func.getArgument(inputs.size() + i); }

Value KernelBuilder::getInput(Value tensor) {
  if (auto it = inputIndex.find(tensor); it != inputIndex.end())
    return func.getArgument(it->second);
  auto type = llvm::cast<RankedTensorType>(tensor.getType());
  unsigned index = inputs.size();
  MLIRContext *ctx = func.getContext();
  NamedAttribute attrs[] = {
      {LLVM::LLVMDialect::getNoAliasAttrName(), UnitAttr::get(ctx)},
      {LLVM::LLVMDialect::getReadonlyAttrName(), UnitAttr::get(ctx)}};
  if (failed(func.insertArgument(index, MemRefType::get(type.getShape(), type.getElementType()),
                                 DictionaryAttr::get(ctx, attrs), loc)))
    llvm::report_fatal_error("kiln-gpu-form-kernels: cannot add a kernel parameter");
  inputs.push_back(tensor);
  inputIndex[tensor] = index;
  return func.getArgument(index);
}

Value KernelBuilder::addSharedBuffer(MemRefType type) {
  return func.addWorkgroupAttribution(type, loc);
}

Value KernelBuilder::threadId(gpu::Dimension dim) {
  return gpu::ThreadIdOp::create(builder, loc, dim);
}

Value KernelBuilder::blockId(gpu::Dimension dim) {
  return gpu::BlockIdOp::create(builder, loc, dim);
}

ValueRange KernelBuilder::launch(OpBuilder &main, ArrayRef<int64_t> grid) {
  gpu::ReturnOp::create(builder, loc);
  MLIRContext *ctx = func.getContext();
  SmallVector<int32_t> known = llvm::map_to_vector(grid, [](int64_t d) { return int32_t(d); });
  func.setKnownGridSizeAttr(DenseI32ArrayAttr::get(ctx, known));
  auto module = func->getParentOfType<gpu::GPUModuleOp>();
  auto kernel = SymbolRefAttr::get(module.getNameAttr(),
                                   {FlatSymbolRefAttr::get(func.getNameAttr())});
  auto op = kgpu::LaunchOp::create(main, loc, resultTypes, kernel,
                                   main.getDenseI64ArrayAttr(grid),
                                   main.getDenseI64ArrayAttr(block),
                                   /*shared=*/main.getI64IntegerAttr(0), inputs);
  return op.getResults();
}

Value FusionKernels::materializeView(Value value) {
  if (Value main = materialized.lookup(value))
    return main;
  Operation *def = value.getDefiningOp();
  if (!def)
    return {};
  if (auto constant = dyn_cast<arith::ConstantOp>(def))
    return materialized[value] = this->main.clone(*constant)->getResult(0);
  if (!isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(def))
    return {};
  Value source = materializeView(def->getOperand(0));
  if (!source)
    return {};
  IRMapping mapping;
  mapping.map(def->getOperand(0), source);
  return materialized[value] = this->main.clone(*def, mapping)->getResult(0);
}

ElementalEmitter FusionKernels::makeEmitter(KernelBuilder &kernel, int64_t lanes) {
  return ElementalEmitter(kernel.getBuilder(), kernel.getLoc(), lanes,
                          [this, &kernel](Value tensor) -> Value {
                            auto it = materialized.find(tensor);
                            return it == materialized.end() ? Value()
                                                            : kernel.getInput(it->second);
                          });
}

} // namespace kiln
