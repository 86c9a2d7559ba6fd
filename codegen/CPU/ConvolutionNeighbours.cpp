//===- ConvolutionNeighbours.cpp - Ops a convolution kernel call absorbs --===//
#include "codegen/CPU/ConvolutionNeighbours.h"

#include "codegen/CPU/BlasCalls.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"

#include <limits>

using namespace mlir;

namespace kiln::blas {
namespace {

/// Whether `op` or an op inside it accesses `root`: has an operand viewing
/// it, views themselves aside.
bool touches(Operation *op, Value root) {
  return op
      ->walk([&](Operation *inner) {
        if (isa<ViewLikeOpInterface>(inner))
          return WalkResult::advance();
        for (Value operand : inner->getOperands())
          if (isa<MemRefType>(operand.getType()) && rootOf(operand) == root)
            return WalkResult::interrupt();
        return WalkResult::advance();
      })
      .wasInterrupted();
}

/// Whether `op` sets every element of `target` to +0.0: a linalg.fill, or a
/// linalg op with no inputs whose body yields the constant.
bool isZeroFill(Operation *op, Value target) {
  auto linalgOp = dyn_cast<linalg::LinalgOp>(op);
  if (!linalgOp || linalgOp.getNumDpsInits() != 1 || linalgOp.getDpsInits()[0] != target)
    return false;
  if (auto fill = dyn_cast<linalg::FillOp>(op))
    return matchPattern(fill.getInputs()[0], m_PosZeroFloat());
  if (linalgOp.getNumDpsInputs() != 0 || linalgOp->getNumRegions() != 1)
    return false;
  Block &body = linalgOp->getRegion(0).front();
  return body.getOperations().size() == 1 &&
         matchPattern(body.getTerminator()->getOperand(0), m_PosZeroFloat());
}

} // namespace

std::optional<PaddedCopy> matchPaddedCopy(linalg::GenericOp conv) {
  auto buffer = conv.getDpsInputs()[0].getDefiningOp<memref::AllocOp>();
  if (!buffer || buffer->getBlock() != conv->getBlock())
    return std::nullopt;
  Operation *fill = nullptr;
  memref::SubViewOp window;
  for (Operation *user : buffer->getUsers()) {
    if (user == conv.getOperation() || isa<memref::DeallocOp>(user))
      continue;
    if (auto subview = dyn_cast<memref::SubViewOp>(user); subview && !window)
      window = subview;
    else if (isa<linalg::LinalgOp>(user) && !fill)
      fill = user;
    else
      return std::nullopt;
  }
  if (!fill || !window || !window->hasOneUse() || !isZeroFill(fill, buffer))
    return std::nullopt;
  auto copy = dyn_cast<memref::CopyOp>(*window->user_begin());
  if (!copy || copy.getTarget() != window.getResult() || copy->getBlock() != conv->getBlock() ||
      fill->getBlock() != conv->getBlock() || !fill->isBeforeInBlock(copy) ||
      !copy->isBeforeInBlock(conv))
    return std::nullopt;

  // The window: unit strides, static offsets, the leading dimensions whole
  // and the source's own shape (so the two index their batch alike).
  MemRefType bufferType = buffer.getType();
  auto sourceType = cast<MemRefType>(copy.getSource().getType());
  int64_t rank = bufferType.getRank();
  if (rank < 3 || sourceType.getRank() != rank || !sourceType.hasStaticShape() ||
      window.getType().getShape() != sourceType.getShape() ||
      !llvm::all_of(window.getStaticStrides(), [](int64_t s) { return s == 1; }) ||
      llvm::any_of(window.getStaticOffsets(), ShapedType::isDynamic))
    return std::nullopt;
  ArrayRef<int64_t> offsets = window.getStaticOffsets();
  for (int64_t dim = 0; dim < rank - 2; ++dim)
    if (offsets[dim] != 0 || sourceType.getDimSize(dim) != bufferType.getDimSize(dim))
      return std::nullopt;
  // The kernel reads rows and columns at unit stride.
  if (!isDenseTrailing(copy.getSource(), 1))
    return std::nullopt;
  return PaddedCopy{copy.getSource(), offsets[rank - 2], offsets[rank - 1], buffer,
                    {fill, window, copy}};
}

std::optional<OutputStart> matchOutputStart(linalg::GenericOp conv, unsigned groupDim) {
  Value output = conv.getDpsInits()[0];
  Value root = rootOf(output);
  for (Operation *op = conv->getPrevNode(); op; op = op->getPrevNode()) {
    if (!touches(op, root))
      continue;
    if (isZeroFill(op, output))
      return OutputStart{op, Value()};
    auto broadcast = dyn_cast<linalg::GenericOp>(op);
    if (!broadcast || broadcast.getNumDpsInputs() != 1 || broadcast.getNumDpsInits() != 1 ||
        broadcast.getDpsInits()[0] != output ||
        broadcast.getNumParallelLoops() != broadcast.getNumLoops())
      return std::nullopt;
    Value bias = broadcast.getDpsInputs()[0];
    auto biasType = dyn_cast<MemRefType>(bias.getType());
    SmallVector<AffineMap> maps = broadcast.getIndexingMapsArray();
    Block &body = broadcast.getRegion().front();
    if (!biasType || biasType.getRank() != 1 || !biasType.getElementType().isF32() ||
        !isDenseTrailing(bias, 1) || !maps[1].isIdentity() || maps[0].getNumResults() != 1 ||
        !isDim(maps[0].getResult(0), groupDim) || body.getOperations().size() != 1 ||
        body.getTerminator()->getOperand(0) != body.getArgument(0))
      return std::nullopt;
    return OutputStart{op, bias};
  }
  return std::nullopt;
}

std::optional<ClampEpilogue> matchClampEpilogue(linalg::GenericOp conv, Operation *start) {
  // The output is a scratch buffer of the tile's own: an allocation, or
  // one view of it, that the start, the convolution and the epilogue alone
  // use (and deallocations).
  Value output = conv.getDpsInits()[0];
  Value root = rootOf(output);
  auto buffer = root.getDefiningOp<memref::AllocOp>();
  if (!buffer)
    return std::nullopt;
  if (output != root) {
    auto view = output.getDefiningOp<memref::SubViewOp>();
    if (!view || view.getSource() != root ||
        llvm::any_of(buffer->getUsers(), [&](Operation *user) {
          return user != view.getOperation() && !isa<memref::DeallocOp>(user);
        }))
      return std::nullopt;
  }
  linalg::GenericOp epilogue;
  for (Operation *user : output.getUsers()) {
    if (user == conv.getOperation() || user == start || isa<memref::DeallocOp>(user))
      continue;
    auto generic = dyn_cast<linalg::GenericOp>(user);
    if (!generic || epilogue)
      return std::nullopt;
    epilogue = generic;
  }
  if (!epilogue || epilogue->getBlock() != conv->getBlock() ||
      !conv->isBeforeInBlock(epilogue) || epilogue.getNumDpsInputs() != 1 ||
      epilogue.getDpsInputs()[0] != output || epilogue.getNumDpsInits() != 1 ||
      epilogue.getNumParallelLoops() != epilogue.getNumLoops() ||
      !llvm::all_of(epilogue.getIndexingMapsArray(), [](AffineMap m) { return m.isIdentity(); }))
    return std::nullopt;
  Value destination = epilogue.getDpsInits()[0];
  if (!isa<MemRefType>(destination.getType()) ||
      cast<MemRefType>(destination.getType()).getShape() !=
          cast<MemRefType>(output.getType()).getShape())
    return std::nullopt;
  for (Operation *between = conv->getNextNode(); between != epilogue;
       between = between->getNextNode())
    if (touches(between, root) || touches(between, rootOf(destination)))
      return std::nullopt;

  // The body: max by a constant, then min by a constant (either may be
  // missing), NaN-propagating as the kernel's clamp is.
  Block &body = epilogue.getRegion().front();
  Value value = body.getArgument(0);
  float lo = -std::numeric_limits<float>::infinity(), hi = std::numeric_limits<float>::infinity();
  bool sawMax = false, sawMin = false;
  for (Operation &op : body.without_terminator()) {
    FloatAttr bound;
    if (op.getNumOperands() != 2 || op.getOperand(0) != value ||
        !matchPattern(op.getOperand(1), m_Constant(&bound)) || !bound.getType().isF32())
      return std::nullopt;
    float limit = bound.getValue().convertToFloat();
    if (isa<arith::MaximumFOp>(op) && !sawMax && !sawMin)
      sawMax = true, lo = limit;
    else if (isa<arith::MinimumFOp>(op) && !sawMin)
      sawMin = true, hi = limit;
    else
      return std::nullopt;
    value = op.getResult(0);
  }
  if ((!sawMax && !sawMin) || body.getTerminator()->getOperand(0) != value)
    return std::nullopt;
  return ClampEpilogue{epilogue, destination, lo, hi};
}

void eraseIfUnused(Value view) {
  while (view && view.use_empty()) {
    Operation *def = view.getDefiningOp();
    if (auto subview = dyn_cast_or_null<memref::SubViewOp>(def)) {
      view = subview.getSource();
      subview->erase();
      continue;
    }
    break;
  }
  auto buffer = view ? view.getDefiningOp<memref::AllocOp>() : nullptr;
  if (!buffer || !llvm::all_of(buffer->getUsers(),
                               [](Operation *user) { return isa<memref::DeallocOp>(user); }))
    return;
  for (Operation *user : llvm::make_early_inc_range(buffer->getUsers()))
    user->erase();
  buffer->erase();
}

} // namespace kiln::blas
