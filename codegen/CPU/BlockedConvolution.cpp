//===- BlockedConvolution.cpp - kiln.blocked_conv as a CPU runtime call ----===//
//
// A kiln.blocked_conv (kiln-blocked-layout) stays a kiln op through
// kiln-lower-to-linalg and kiln-form-kernels, and becomes a call of the
// runtime's kiln_conv2d_blocked (runtime/kernels/BlockedConvolution.c) when
// one-shot bufferization gives it buffers: the blocked input, the filters
// and bias as they are, a fresh blocked output (or, with an addend, the
// addend's buffer, which the convolution is added into; with a destination,
// its buffer: a slot of a concatenation), and the call site's state (a
// zeroed 8-byte global, where the runtime keeps its oneDNN primitive
// and packed filters). The call runs outside the kernels' parallel loops,
// so oneDNN spreads the convolution over all the threads itself.
//
//===----------------------------------------------------------------------===//
#include "codegen/CPU/BlasCalls.h"
#include "codegen/CPU/RuntimeCallBuffers.h"
#include "codegen/Passes.h"
#include "dialects/kiln/KilnOps.h"

#include "mlir/Dialect/Bufferization/IR/BufferizableOpInterface.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include <limits>

using namespace mlir;
using namespace mlir::bufferization;

namespace kiln {
namespace {

constexpr StringLiteral kBlockedConvolution = "kiln_conv2d_blocked";
// kiln_conv2d_blocked's flags.
constexpr int64_t kAccumulate = 1, kPlainInput = 2, kSwish = 4, kHardSwish = 8,
                  kComputedFilters = 16;

/// Whether `operand` is the one of `range`, an optional operand.
bool isOperand(OpOperand &operand, MutableOperandRange range) {
  return !range.empty() && &range[0] == &operand;
}

/// Whether `operand` is written: the addend (which the result is added to in
/// its buffer) or the destination (which the result is written over).
bool isWritten(Operation *op, OpOperand &operand) {
  auto conv = cast<BlockedConvOp>(op);
  return isOperand(operand, conv.getAddendMutable()) || isOperand(operand, conv.getDestMutable());
}

/// Reads its operands but its destination; writes its result into its
/// addend's buffer, in place (one-shot bufferization copies the addend
/// first where it is read later, and the call copies it where it is the
/// caller's), or into its destination's, or without either into a new
/// buffer.
struct BlockedConvModel
    : public BufferizableOpInterface::ExternalModel<BlockedConvModel, BlockedConvOp> {
  bool bufferizesToMemoryRead(Operation *op, OpOperand &operand, const AnalysisState &) const {
    return !isOperand(operand, cast<BlockedConvOp>(op).getDestMutable());
  }
  bool bufferizesToMemoryWrite(Operation *op, OpOperand &operand, const AnalysisState &) const {
    return isWritten(op, operand);
  }
  AliasingValueList getAliasingValues(Operation *op, OpOperand &operand,
                                      const AnalysisState &) const {
    if (!isWritten(op, operand))
      return {};
    return {{op->getResult(0), BufferRelation::Equivalent, /*isDefinite=*/true}};
  }
  bool bufferizesToAllocation(Operation *op, Value) const {
    auto conv = cast<BlockedConvOp>(op);
    return !conv.getAddend() && !conv.getDest();
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
    FailureOr<Value> input = denseBuffer(rewriter, loc, conv.getInput(), options, state);
    FailureOr<Value> filter = denseBuffer(rewriter, loc, conv.getFilter(), options, state);
    if (failed(input) || failed(filter))
      return failure();
    Value bias;
    if (conv.getBias()) {
      FailureOr<Value> buffer = denseBuffer(rewriter, loc, conv.getBias(), options, state);
      if (failed(buffer))
        return failure();
      bias = *buffer;
    }
    // The output: the addend's buffer, the destination's where each of its
    // images is dense (the runtime takes the distance between them: a slot
    // of a concatenation of several images), or a new buffer (copied into
    // the destination's after the call, where that is not dense).
    RankedTensorType resultType = conv.getType();
    Value output, result;
    if (conv.getAddend()) {
      FailureOr<Value> buffer =
          denseBuffer(rewriter, loc, conv.getAddend(), options, state, /*written=*/true);
      if (failed(buffer))
        return failure();
      output = result = *buffer;
    } else if (conv.getDest()) {
      // The destination is a slot of the tensor its result is inserted
      // into, which that insertion writes in place anyway.
      FailureOr<Value> buffer = getBuffer(rewriter, conv.getDest(), options, state);
      if (failed(buffer))
        return failure();
      result = *buffer;
      output = isDenseFrom(cast<MemRefType>(result.getType()), /*from=*/1)
                   ? result
                   : allocateDense(rewriter, loc, resultType);
    } else {
      output = result = allocateDense(rewriter, loc, resultType);
    }
    SmallVector<int64_t> outStrides;
    int64_t outOffset;
    if (failed(cast<MemRefType>(output.getType()).getStridesAndOffset(outStrides, outOffset)))
      return op->emitOpError("has an output buffer without strides");

    // Arguments: slot, n, c, ih, iw, f, group, kh, kw, oh, ow, strides (2),
    // dilations (2), pads (top, left, bottom, right), channels per block,
    // input, filter, bias (0: none), output, the elements from one output
    // image to the next, clamp low, clamp high, flags (1: the output holds
    // an addend; 2: the input is NCHW; 4: a swish, 8: a hard swish before
    // the clamp; 16: the filters are not constant).
    auto module = op->getParentOfType<ModuleOp>();
    SmallVector<Type> argTypes(1, index);
    argTypes.append(19, i64);
    argTypes.append(4, index);
    argTypes.push_back(i64);
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
    sizes.push_back(static_cast<int64_t>(conv.getBlock()));
    auto address = [&](Value buffer) { return firstElementAddress(rewriter, loc, buffer); };
    SmallVector<Value> args = {address(slot)};
    for (int64_t size : sizes)
      args.push_back(arith::ConstantIntOp::create(rewriter, loc, i64, size));
    int64_t firstRead = static_cast<int64_t>(args.size());
    args.push_back(address(*input));
    args.push_back(address(*filter));
    args.push_back(bias ? address(bias) : arith::ConstantIndexOp::create(rewriter, loc, 0));
    args.push_back(address(output));
    args.push_back(arith::ConstantIntOp::create(rewriter, loc, i64, outStrides[0]));
    auto bound = [&](FloatAttr attr, float unbounded) -> Value {
      float value = attr ? static_cast<float>(attr.getValueAsDouble()) : unbounded;
      return arith::ConstantOp::create(rewriter, loc, rewriter.getF32FloatAttr(value));
    };
    args.push_back(bound(conv.getClampMinAttr(), -std::numeric_limits<float>::infinity()));
    args.push_back(bound(conv.getClampMaxAttr(), std::numeric_limits<float>::infinity()));
    int64_t flags = (conv.getAddend() ? kAccumulate : 0) | (in.size() == 4 ? kPlainInput : 0);
    if (std::optional<ConvActivation> activation = conv.getActivation())
      flags |= *activation == ConvActivation::Swish ? kSwish : kHardSwish;
    // Filters that are not a constant global (a train step's weights, or a
    // dense copy of a constant that was not dense) may change between
    // calls, so the runtime packs them again on each.
    if (!blas::isConstantBuffer(*filter))
      flags |= kComputedFilters;
    args.push_back(arith::ConstantIntOp::create(rewriter, loc, i64, flags));
    auto call = func::CallOp::create(rewriter, loc, callee, args);
    call->setAttr(kNoCaptureCallAttr, rewriter.getUnitAttr());
    call->setAttr(kReadOnlyOperandsAttr,
                  rewriter.getDenseI64ArrayAttr({firstRead, firstRead + 1, firstRead + 2}));
    if (output != result)
      memref::CopyOp::create(rewriter, loc, output, result);
    replaceOpWithBufferizedValues(rewriter, op, result);
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
