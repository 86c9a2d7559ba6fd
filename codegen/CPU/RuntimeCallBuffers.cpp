//===- RuntimeCallBuffers.cpp - Buffers of runtime calls made at bufferization ===//
#include "codegen/CPU/RuntimeCallBuffers.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;
using namespace mlir::bufferization;

namespace kiln {

bool isArgumentView(Value buffer) {
  for (Value value = buffer;;) {
    if (isa<BlockArgument>(value))
      return true;
    Operation *def = value.getDefiningOp();
    if (auto view = dyn_cast_or_null<ViewLikeOpInterface>(def))
      value = view.getViewSource();
    else if (auto toBuffer = dyn_cast_or_null<ToBufferOp>(def))
      value = toBuffer.getTensor();
    else if (auto toTensor = dyn_cast_or_null<ToTensorOp>(def))
      value = toTensor.getBuffer();
    else
      return false;
  }
}

bool isDenseFrom(MemRefType type, int64_t from) {
  SmallVector<int64_t> strides;
  int64_t offset;
  if (!type.hasStaticShape() || failed(type.getStridesAndOffset(strides, offset)) ||
      ShapedType::isDynamic(offset))
    return false;
  int64_t dense = 1;
  for (int64_t dim = type.getRank() - 1; dim >= from; --dim) {
    // A dimension of one element has no stride to keep.
    if (type.getDimSize(dim) != 1 && strides[dim] != dense)
      return false;
    dense *= type.getDimSize(dim);
  }
  return true;
}

Value allocateDense(OpBuilder &b, Location loc, ShapedType type) {
  return memref::AllocOp::create(b, loc, MemRefType::get(type.getShape(), type.getElementType()),
                                 b.getI64IntegerAttr(64));
}

FailureOr<Value> denseBuffer(RewriterBase &rewriter, Location loc, Value tensor,
                             const BufferizationOptions &options, BufferizationState &state,
                             bool written) {
  FailureOr<Value> buffer = getBuffer(rewriter, tensor, options, state);
  if (failed(buffer))
    return failure();
  auto type = cast<MemRefType>(buffer->getType());
  if (isDenseFrom(type) && !(written && isArgumentView(*buffer)))
    return *buffer;
  Value copy = allocateDense(rewriter, loc, type);
  memref::CopyOp::create(rewriter, loc, *buffer, copy);
  return copy;
}

Value firstElementAddress(OpBuilder &b, Location loc, Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  Value address = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, buffer);
  SmallVector<int64_t> strides;
  int64_t offset = 0;
  if (failed(type.getStridesAndOffset(strides, offset)) || ShapedType::isDynamic(offset))
    llvm::report_fatal_error("firstElementAddress: a buffer without a static offset");
  if (offset == 0)
    return address;
  int64_t bytes = offset * static_cast<int64_t>(type.getElementTypeBitWidth() / 8);
  return arith::AddIOp::create(b, loc, address, arith::ConstantIndexOp::create(b, loc, bytes));
}

} // namespace kiln
