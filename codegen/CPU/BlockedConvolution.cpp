//===- BlockedConvolution.cpp - kiln.blocked_conv as a CPU runtime call ----===//
//
// A kiln.blocked_conv (kiln-blocked-layout) stays a kiln op through
// kiln-lower-to-linalg and kiln-form-kernels, and becomes a call of the
// runtime's kiln_conv2d_blocked (runtime/kernels/BlockedConvolution.c) when
// one-shot bufferization gives it buffers: the blocked input, the filters
// and bias as they are, a fresh blocked output (or, with an addend, the
// addend's buffer, which the convolution is added into), and the call site's state
// (a zeroed 8-byte global, where the runtime keeps its oneDNN primitive
// and packed filters). The call runs outside the kernels' parallel loops,
// so oneDNN spreads the convolution over all the threads itself.
//
//===----------------------------------------------------------------------===//
#include "codegen/CPU/BlasCalls.h"
#include "codegen/Passes.h"
#include "dialects/kiln/KilnOps.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

#include <limits>

using namespace mlir;
using namespace mlir::bufferization;

namespace kiln {
namespace {

constexpr StringLiteral kBlockedConvolution = "kiln_conv2d_blocked";
// kiln_conv2d_blocked's flags.
constexpr int64_t kAccumulate = 1, kPlainInput = 2;

/// Whether `operand` is the convolution's addend.
bool isAddend(Operation *op, OpOperand &operand) {
  Value addend = cast<BlockedConvOp>(op).getAddend();
  return addend && operand.getOperandNumber() == op->getNumOperands() - 1;
}

/// Whether `buffer` is a view of one of its function's arguments: a buffer
/// of the caller's (an input of the model), never written.
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

/// Reads its operands; writes its result into its addend's buffer, in
/// place (one-shot bufferization copies the addend first where it is read
/// later, and the call copies it where it is the caller's), or without one
/// into a new buffer.
struct BlockedConvModel
    : public BufferizableOpInterface::ExternalModel<BlockedConvModel, BlockedConvOp> {
  bool bufferizesToMemoryRead(Operation *, OpOperand &, const AnalysisState &) const { return true; }
  bool bufferizesToMemoryWrite(Operation *op, OpOperand &operand, const AnalysisState &) const {
    return isAddend(op, operand);
  }
  AliasingValueList getAliasingValues(Operation *op, OpOperand &operand,
                                      const AnalysisState &) const {
    if (!isAddend(op, operand))
      return {};
    return {{op->getResult(0), BufferRelation::Equivalent, /*isDefinite=*/true}};
  }
  bool bufferizesToAllocation(Operation *op, Value) const {
    return !cast<BlockedConvOp>(op).getAddend();
  }

  LogicalResult bufferize(Operation *op, RewriterBase &rewriter, const BufferizationOptions &options,
                          BufferizationState &state) const {
    auto conv = cast<BlockedConvOp>(op);
    Location loc = op->getLoc();
    MLIRContext *ctx = op->getContext();
    Type i64 = rewriter.getI64Type(), f32 = rewriter.getF32Type();
    Type index = rewriter.getIndexType();
    // The runtime reads dense buffers: a view of another layout is copied,
    // and so is a buffer of the caller's that would be written.
    auto dense = [&](Value tensor, bool written = false) -> FailureOr<Value> {
      FailureOr<Value> buffer = getBuffer(rewriter, tensor, options, state);
      if (failed(buffer))
        return failure();
      auto type = cast<MemRefType>(buffer->getType());
      if (type.getLayout().isIdentity() && !(written && isArgumentView(*buffer)))
        return *buffer;
      Value copy = memref::AllocOp::create(
          rewriter, loc, MemRefType::get(type.getShape(), type.getElementType()),
          rewriter.getI64IntegerAttr(64));
      memref::CopyOp::create(rewriter, loc, *buffer, copy);
      return copy;
    };
    FailureOr<Value> input = dense(conv.getInput());
    FailureOr<Value> filter = dense(conv.getFilter());
    if (failed(input) || failed(filter))
      return failure();
    Value bias;
    if (conv.getBias()) {
      FailureOr<Value> buffer = dense(conv.getBias());
      if (failed(buffer))
        return failure();
      bias = *buffer;
    }
    RankedTensorType resultType = conv.getType();
    Value output;
    if (conv.getAddend()) {
      FailureOr<Value> buffer = dense(conv.getAddend(), /*written=*/true);
      if (failed(buffer))
        return failure();
      output = *buffer;
    } else {
      output = memref::AllocOp::create(
          rewriter, loc, MemRefType::get(resultType.getShape(), resultType.getElementType()),
          rewriter.getI64IntegerAttr(64));
    }

    // Arguments: slot, n, c, ih, iw, f, group, kh, kw, oh, ow, strides (2),
    // dilations (2), pads (top, left, bottom, right), input, filter, bias
    // (0: none), output, clamp low, clamp high, flags (1: the output holds
    // an addend; 2: the input is NCHW).
    auto module = op->getParentOfType<ModuleOp>();
    SmallVector<Type> argTypes(1, index);
    argTypes.append(18, i64);
    argTypes.append(4, index);
    argTypes.append(2, f32);
    argTypes.push_back(i64);
    func::FuncOp callee =
        blas::declare(module, kBlockedConvolution, FunctionType::get(ctx, argTypes, {}));

    SymbolTable symbols(module);
    Value slot = blas::CallSites(module, symbols).slotBuffer(rewriter, loc);

    ArrayRef<int64_t> in = conv.getInput().getType().getShape();
    ArrayRef<int64_t> w = conv.getFilter().getType().getShape();
    ArrayRef<int64_t> out = resultType.getShape();
    // The channels are the filter's; the image's last block may be padded.
    int64_t group = static_cast<int64_t>(conv.getGroup());
    SmallVector<int64_t> sizes = {in[0], group * w[1], in[2], in[3],  w[0],
                                  group, w[2],         w[3],  out[2], out[3]};
    llvm::append_range(sizes, conv.getStrides());
    llvm::append_range(sizes, conv.getDilations());
    llvm::append_range(sizes, conv.getPads());
    auto address = [&](Value buffer) -> Value {
      return memref::ExtractAlignedPointerAsIndexOp::create(rewriter, loc, buffer);
    };
    SmallVector<Value> args = {address(slot)};
    for (int64_t size : sizes)
      args.push_back(arith::ConstantIntOp::create(rewriter, loc, i64, size));
    args.push_back(address(*input));
    args.push_back(address(*filter));
    args.push_back(bias ? address(bias) : arith::ConstantIndexOp::create(rewriter, loc, 0));
    args.push_back(address(output));
    auto bound = [&](FloatAttr attr, float unbounded) -> Value {
      float value = attr ? static_cast<float>(attr.getValueAsDouble()) : unbounded;
      return arith::ConstantOp::create(rewriter, loc, rewriter.getF32FloatAttr(value));
    };
    args.push_back(bound(conv.getClampMinAttr(), -std::numeric_limits<float>::infinity()));
    args.push_back(bound(conv.getClampMaxAttr(), std::numeric_limits<float>::infinity()));
    int64_t flags = (conv.getAddend() ? kAccumulate : 0) | (in.size() == 4 ? kPlainInput : 0);
    args.push_back(arith::ConstantIntOp::create(rewriter, loc, i64, flags));
    auto call = func::CallOp::create(rewriter, loc, callee, args);
    call->setAttr(kNoCaptureCallAttr, rewriter.getUnitAttr());
    replaceOpWithBufferizedValues(rewriter, op, output);
    return success();
  }
};

} // namespace

void registerBlockedConvolutionBufferization(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, KilnDialect *) {
    BlockedConvOp::attachInterface<BlockedConvModel>(*ctx);
  });
}

} // namespace kiln
