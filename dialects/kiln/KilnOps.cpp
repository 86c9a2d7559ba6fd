//===- KilnOps.cpp - Shape inference and verifiers of kiln ops ------------===//
//
// Result types are derived here, once, so the importer and every rewrite get
// the same answer, and the verifier reports a mismatch with the op's location
// (the ONNX node name).
//
//===----------------------------------------------------------------------===//
#include "dialects/kiln/KilnOps.h"
#include "dialects/kiln/Device.h"

#include "mlir/Dialect/Traits.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>

using namespace mlir;
using namespace kiln;

LogicalResult kiln::broadcastShapes(ArrayRef<ArrayRef<int64_t>> shapes,
                                    SmallVectorImpl<int64_t> &result) {
  result.clear();
  for (ArrayRef<int64_t> shape : shapes) {
    SmallVector<int64_t> next;
    if (!OpTrait::util::getBroadcastedShape(result, shape, next))
      return failure();
    result = std::move(next);
  }
  return success();
}

bool kiln::swapsLastTwo(ArrayRef<int64_t> perm) {
  int64_t rank = perm.size();
  if (rank < 2 || perm[rank - 2] != rank - 1 || perm[rank - 1] != rank - 2)
    return false;
  for (int64_t i = 0; i + 2 < rank; ++i)
    if (perm[i] != i)
      return false;
  return true;
}

TransposeOp kiln::channelFirstTranspose(ConvOp conv) {
  if (conv.getGroup() != 1 || conv.getBias() || !conv->hasOneUse())
    return {};
  auto transpose = dyn_cast<TransposeOp>(*conv->getUsers().begin());
  ArrayRef<int64_t> shape = conv.getType().getShape();
  if (!transpose || shape.size() != 4 || shape[2] * shape[3] < 2 ||
      transpose.getPerm() != ArrayRef<int64_t>{1, 0, 2, 3})
    return {};
  return transpose;
}

bool kiln::isBlockedImage(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getRank() == 5 && isChannelBlock(tensor.getDimSize(4));
}

bool kiln::isBlockedPool(Operation *op) {
  if (!isa<MaxPoolOp, AveragePoolOp>(op))
    return false;
  Type type = op->getOperand(0).getType();
  return isBlockedImage(type) && cast<RankedTensorType>(type).getElementType().isF32();
}

int64_t kiln::windowOutputSize(int64_t input, int64_t padBegin, int64_t padEnd,
                               int64_t kernel, int64_t stride,
                               int64_t dilation, bool ceilMode) {
  int64_t span = input + padBegin + padEnd - dilation * (kernel - 1) - 1;
  if (span < 0)
    return 0;
  int64_t size = (ceilMode ? llvm::divideCeil(span, stride) : span / stride) + 1;
  // With ceil_mode, a window must start inside the input or the left padding.
  if (ceilMode && (size - 1) * stride >= input + padBegin)
    --size;
  return size;
}

static RankedTensorType rankedType(Value value) {
  return llvm::cast<RankedTensorType>(value.getType());
}

static std::string shapeString(ArrayRef<int64_t> shape) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "[";
  llvm::interleave(shape, os, "x");
  os << "]";
  return text;
}

static std::string listString(ArrayRef<int64_t> values) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "[";
  llvm::interleaveComma(values, os);
  os << "]";
  return text;
}

/// Infers the broadcast result of `operands`, with `elementType` as result
/// element type (null: that of the last operand).
static LogicalResult inferBroadcast(std::optional<Location> loc,
                                    ValueRange operands, Type elementType,
                                    SmallVectorImpl<Type> &results) {
  SmallVector<ArrayRef<int64_t>> shapes;
  for (Value operand : operands)
    shapes.push_back(rankedType(operand).getShape());
  SmallVector<int64_t> shape;
  if (failed(broadcastShapes(shapes, shape))) {
    std::string list;
    for (ArrayRef<int64_t> s : shapes)
      list += (list.empty() ? "" : ", ") + shapeString(s);
    return emitOptionalError(loc, "operand shapes ", list,
                             " do not broadcast (NumPy rules)");
  }
  if (!elementType)
    elementType = rankedType(operands.back()).getElementType();
  results.push_back(RankedTensorType::get(shape, elementType));
  return success();
}

/// Checks that every operand of a broadcasting op but `skip` leading ones has
/// the same element type.
static LogicalResult verifySameElementTypes(Operation *op, unsigned skip = 0) {
  Type expected;
  for (Value operand : op->getOperands().drop_front(skip)) {
    Type type = rankedType(operand).getElementType();
    if (!expected)
      expected = type;
    else if (type != expected)
      return op->emitOpError("operands have different element types: ")
             << expected << " and " << type;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Constant
//===----------------------------------------------------------------------===//

LogicalResult ConstantOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &results) {
  auto type = llvm::dyn_cast<RankedTensorType>(adaptor.getValue().getType());
  if (!type)
    return emitOptionalError(loc, "value must be a ranked tensor");
  results.push_back(type);
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

#define KILN_BROADCAST_OP(Op, ResultElement, Skip)                             \
  LogicalResult Op::inferReturnTypes(MLIRContext *ctx,                         \
                                     std::optional<Location> loc,              \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &results) {         \
    (void)ctx;                                                                 \
    return inferBroadcast(loc, adaptor.getOperands(), ResultElement, results); \
  }                                                                            \
  LogicalResult Op::verify() { return verifySameElementTypes(*this, Skip); }

#define KILN_BINARY_OP(Op) KILN_BROADCAST_OP(Op, Type(), 0)
KILN_BINARY_OP(AddOp)
KILN_BINARY_OP(SubOp)
KILN_BINARY_OP(MulOp)
KILN_BINARY_OP(DivOp)
KILN_BINARY_OP(MaxOp)
KILN_BINARY_OP(MinOp)
KILN_BINARY_OP(PReluOp)
KILN_BINARY_OP(AndOp)
KILN_BINARY_OP(OrOp)
KILN_BINARY_OP(XorOp)
KILN_BINARY_OP(ShiftLeftOp)
KILN_BINARY_OP(ShiftRightOp)
#undef KILN_BINARY_OP

// Pow allows an exponent of another numeric type, as ONNX does; the result
// has the base's type.
LogicalResult PowOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                      Adaptor adaptor, SmallVectorImpl<Type> &results) {
  return inferBroadcast(loc, adaptor.getOperands(),
                        rankedType(adaptor.getLhs()).getElementType(), results);
}
LogicalResult PowOp::verify() { return success(); }

LogicalResult DropoutOp::verify() {
  double ratio = getRatio().convertToDouble();
  if (!(ratio >= 0 && ratio < 1))
    return emitOpError("ratio must be in [0, 1), got ") << ratio;
  if (Value counter = getCounter(); counter && llvm::cast<RankedTensorType>(counter.getType()).getRank() != 0)
    return emitOpError("counter must be a scalar (tensor<i64>), got ") << counter.getType();
  if (Value offset = getOffset(); offset && llvm::cast<RankedTensorType>(offset.getType()).getRank() != 0)
    return emitOpError("offset must be a scalar (tensor<i64>), got ") << offset.getType();
  return success();
}
// Where's condition is i1 while both branches share a type.
KILN_BROADCAST_OP(WhereOp, Type(), 1)

#define KILN_COMPARE_OP(Op) KILN_BROADCAST_OP(Op, IntegerType::get(ctx, 1), 0)
KILN_COMPARE_OP(EqualOp)
KILN_COMPARE_OP(LessOp)
KILN_COMPARE_OP(LessEqualOp)
KILN_COMPARE_OP(GreaterOp)
KILN_COMPARE_OP(GreaterEqualOp)
#undef KILN_COMPARE_OP

LogicalResult ModOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &results) {
  return inferBroadcast(loc, adaptor.getOperands(), Type(), results);
}

LogicalResult ModOp::verify() {
  if (failed(verifySameElementTypes(*this)))
    return failure();
  if (!getFmod() && !llvm::isa<IntegerType>(getElementTypeOrSelf(getLhs())))
    return emitOpError("integer modulo (fmod = false) needs integer operands, "
                       "got ")
           << getLhs().getType();
  return success();
}
#undef KILN_BROADCAST_OP

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

LogicalResult MatMulOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  RankedTensorType lhs = rankedType(adaptor.getLhs());
  RankedTensorType rhs = rankedType(adaptor.getRhs());
  if (lhs.getElementType() != rhs.getElementType())
    return emitOptionalError(loc, "operands have different element types: ",
                             lhs.getElementType(), " and ",
                             rhs.getElementType());
  if (lhs.getRank() == 0 || rhs.getRank() == 0)
    return emitOptionalError(loc, "operands must have rank >= 1");
  SmallVector<int64_t> a(lhs.getShape()), b(rhs.getShape());
  bool vecLhs = a.size() == 1, vecRhs = b.size() == 1;
  if (vecLhs)
    a.insert(a.begin(), 1);
  if (vecRhs)
    b.push_back(1);
  int64_t k = a.back(), kb = b[b.size() - 2];
  if (k != kb)
    return emitOptionalError(loc, "contracting dimensions differ: lhs ",
                             shapeString(lhs.getShape()), " has ", k,
                             ", rhs ", shapeString(rhs.getShape()), " has ",
                             kb);
  SmallVector<int64_t> batch;
  ArrayRef<int64_t> batchA = ArrayRef(a).drop_back(2);
  ArrayRef<int64_t> batchB = ArrayRef(b).drop_back(2);
  if (failed(broadcastShapes({batchA, batchB}, batch)))
    return emitOptionalError(loc, "batch dimensions ", shapeString(batchA),
                             " and ", shapeString(batchB),
                             " do not broadcast");
  SmallVector<int64_t> shape(batch);
  if (!vecLhs)
    shape.push_back(a[a.size() - 2]);
  if (!vecRhs)
    shape.push_back(b.back());
  results.push_back(RankedTensorType::get(shape, lhs.getElementType()));
  return success();
}

LogicalResult GemmOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &results) {
  RankedTensorType a = rankedType(adaptor.getA());
  RankedTensorType b = rankedType(adaptor.getB());
  if (a.getRank() != 2 || b.getRank() != 2)
    return emitOptionalError(loc, "A and B must be matrices, got ", a, " and ",
                             b);
  int64_t m = a.getDimSize(adaptor.getTransA() ? 1 : 0);
  int64_t ka = a.getDimSize(adaptor.getTransA() ? 0 : 1);
  int64_t kb = b.getDimSize(adaptor.getTransB() ? 1 : 0);
  int64_t n = b.getDimSize(adaptor.getTransB() ? 0 : 1);
  if (ka != kb)
    return emitOptionalError(loc, "contracting dimensions differ: ", ka,
                             " vs ", kb);
  results.push_back(RankedTensorType::get({m, n}, a.getElementType()));
  return success();
}

LogicalResult GemmOp::verify() {
  if (failed(verifySameElementTypes(*this)))
    return failure();
  if (Value c = getC()) {
    SmallVector<int64_t> shape;
    ArrayRef<int64_t> result = getType().getShape();
    if (failed(broadcastShapes({rankedType(c).getShape(), result}, shape)) ||
        ArrayRef<int64_t>(shape) != result)
      return emitOpError("C of shape ")
             << shapeString(rankedType(c).getShape())
             << " does not broadcast to the result " << shapeString(result);
  }
  return success();
}

/// The NCHW shape of a convolution's result from its input's NCHW shape
/// (`image`) and the attributes and operands of `adaptor` (a kiln.conv's or
/// a kiln.blocked_conv's), or failure after emitting why.
template <typename Adaptor>
static FailureOr<SmallVector<int64_t>> convResultShape(std::optional<Location> loc,
                                                       ArrayRef<int64_t> image, Adaptor adaptor) {
  RankedTensorType filter = rankedType(adaptor.getFilter());
  if (filter.getRank() != 4)
    return emitOptionalError(loc, "filter must be 4-D (MCHW), got ", filter);
  if (adaptor.getStrides().size() != 2 || adaptor.getDilations().size() != 2 ||
      adaptor.getPads().size() != 4)
    return emitOptionalError(loc, "expected 2 strides, 2 dilations, 4 pads");
  if (llvm::any_of(adaptor.getStrides(), [](int64_t s) { return s < 1; }) ||
      llvm::any_of(adaptor.getDilations(), [](int64_t d) { return d < 1; }) ||
      llvm::any_of(adaptor.getPads(), [](int64_t p) { return p < 0; }))
    return emitOptionalError(loc, "strides and dilations must be >= 1, pads >= 0");
  int64_t group = adaptor.getGroup();
  int64_t channels = image[1], filters = filter.getDimSize(0);
  if (group < 1 || channels % group != 0 || filters % group != 0 ||
      filter.getDimSize(1) != channels / group)
    return emitOptionalError(loc, "with group = ", group, ", input channels ",
                             channels, " and filter ", shapeString(filter.getShape()),
                             " do not match");
  if (Value bias = adaptor.getBias()) {
    RankedTensorType biasType = rankedType(bias);
    if (biasType.getRank() != 1 || biasType.getDimSize(0) != filters)
      return emitOptionalError(loc, "bias must have ", filters,
                               " elements, got ", biasType);
  }
  SmallVector<int64_t> shape = {image[0], filters};
  for (int i = 0; i < 2; ++i)
    shape.push_back(windowOutputSize(
        image[2 + i], adaptor.getPads()[i], adaptor.getPads()[2 + i],
        filter.getDimSize(2 + i), adaptor.getStrides()[i],
        adaptor.getDilations()[i], /*ceilMode=*/false));
  return shape;
}

LogicalResult ConvOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                       Adaptor adaptor,
                                       SmallVectorImpl<Type> &results) {
  RankedTensorType input = rankedType(adaptor.getInput());
  RankedTensorType filter = rankedType(adaptor.getFilter());
  if (input.getRank() != 4 || filter.getRank() != 4)
    return emitOptionalError(loc, "input and filter must be 4-D (NCHW, "
                             "MCHW), got ", input, " and ", filter);
  FailureOr<SmallVector<int64_t>> shape = convResultShape(loc, input.getShape(), adaptor);
  if (failed(shape))
    return failure();
  results.push_back(RankedTensorType::get(*shape, input.getElementType()));
  return success();
}

LogicalResult BlockedConvOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &results) {
  RankedTensorType input = rankedType(adaptor.getInput());
  RankedTensorType filter = rankedType(adaptor.getFilter());
  int64_t block = adaptor.getBlock();
  if (!isChannelBlock(block))
    return emitOptionalError(loc, "block must be ", kNarrowChannelBlock, " or ", kWideChannelBlock,
                             " channels, got ", block);
  // An image too narrow for blocks (RGB) comes as it is, in NCHW.
  bool plain = input.getRank() == 4 && input.getDimSize(1) < block;
  if (!plain && (input.getRank() != 5 || input.getDimSize(4) != block))
    return emitOptionalError(loc, "input must be 5-D in blocks of ", block, " channels (N x C/",
                             block, " x H x W x ", block, "), or NCHW with fewer than ", block,
                             " channels, got ", input);
  if (filter.getRank() != 4)
    return emitOptionalError(loc, "filter must be 4-D (MCHW), got ", filter);
  // The image's channels are the filter's: a last, partial block is
  // padded with zeros.
  int64_t group = adaptor.getGroup();
  int64_t channels = group * filter.getDimSize(1);
  if (plain && (group != 1 || input.getDimSize(1) != channels))
    return emitOptionalError(loc, "filter ", shapeString(filter.getShape()), " with group = ",
                             group, " does not convolve the ", input.getDimSize(1),
                             " channels of NCHW ", input, " in one group");
  if (!plain && input.getDimSize(1) != channelBlocks(channels, block))
    return emitOptionalError(loc, "filter ", shapeString(filter.getShape()),
                             " with group = ", group, " reads ", channels, " channels, not the ",
                             input.getDimSize(1), " blocks of ", block, " of ", input);
  SmallVector<int64_t> image = {input.getDimSize(0), channels, input.getDimSize(2),
                                input.getDimSize(3)};
  FailureOr<SmallVector<int64_t>> shape = convResultShape(loc, image, adaptor);
  if (failed(shape))
    return failure();
  int64_t filters = (*shape)[1];
  if (group != 1 && (group != channels || filters != channels))
    return emitOptionalError(loc, "a grouped blocked convolution must be depthwise (group = "
                             "channels = filters), got group ", group, " with ", channels,
                             " channels and ", filters, " filters");
  FloatAttr low = adaptor.getClampMinAttr(), high = adaptor.getClampMaxAttr();
  if (low && high && !(low.getValueAsDouble() <= high.getValueAsDouble()))
    return emitOptionalError(loc, "clamp_min ", low, " exceeds clamp_max ", high);
  auto result = RankedTensorType::get(
      {(*shape)[0], channelBlocks(filters, block), (*shape)[2], (*shape)[3], block},
      input.getElementType());
  if (Value addend = adaptor.getAddend(); addend && addend.getType() != result)
    return emitOptionalError(loc, "addend ", addend.getType(), " is not the result's type ",
                             result);
  if (adaptor.getAddend() && adaptor.getDest())
    return emitOptionalError(loc, "takes an addend or a dest, not both");
  if (Value dest = adaptor.getDest(); dest && dest.getType() != result)
    return emitOptionalError(loc, "dest ", dest.getType(), " is not the result's type ", result);
  results.push_back(result);
  return success();
}

template <typename PoolOp>
static LogicalResult inferPool(std::optional<Location> loc,
                               typename PoolOp::Adaptor adaptor,
                               SmallVectorImpl<Type> &results) {
  RankedTensorType input = rankedType(adaptor.getInput());
  // A blocked image (kiln-blocked-layout) has its rows and columns where an
  // NCHW one has them, and a trailing block of channels.
  bool blocked = isBlockedImage(input);
  if (input.getRank() != 4 && !blocked)
    return emitOptionalError(
        loc, "input must be 4-D (NCHW) or a blocked image (N x C/B x H x W x B, B = ",
        kNarrowChannelBlock, " or ", kWideChannelBlock, "), got ", input);
  if (adaptor.getKernelShape().size() != 2 || adaptor.getStrides().size() != 2 ||
      adaptor.getDilations().size() != 2 || adaptor.getPads().size() != 4)
    return emitOptionalError(loc, "expected 2 kernel sizes, strides and "
                             "dilations, and 4 pads");
  SmallVector<int64_t> shape(input.getShape().take_front(2));
  for (int i = 0; i < 2; ++i) {
    int64_t kernel = adaptor.getKernelShape()[i];
    if (kernel < 1 || adaptor.getStrides()[i] < 1 || adaptor.getDilations()[i] < 1)
      return emitOptionalError(loc, "kernel sizes, strides and dilations must be >= 1");
    if (adaptor.getPads()[i] >= kernel || adaptor.getPads()[2 + i] >= kernel)
      return emitOptionalError(loc, "padding must be smaller than the kernel");
    shape.push_back(windowOutputSize(
        input.getDimSize(2 + i), adaptor.getPads()[i], adaptor.getPads()[2 + i],
        kernel, adaptor.getStrides()[i], adaptor.getDilations()[i],
        adaptor.getCeilMode()));
  }
  if (blocked)
    shape.push_back(input.getDimSize(4));
  results.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult MaxPoolOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &results) {
  return inferPool<MaxPoolOp>(loc, adaptor, results);
}

LogicalResult AveragePoolOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &results) {
  return inferPool<AveragePoolOp>(loc, adaptor, results);
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

static LogicalResult checkAxes(std::optional<Location> loc, ArrayRef<int64_t> axes,
                               int64_t rank) {
  for (auto [i, axis] : llvm::enumerate(axes)) {
    if (axis < 0 || axis >= rank)
      return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                               rank);
    if (i > 0 && axes[i - 1] >= axis)
      return emitOptionalError(loc, "axes must be sorted and unique");
  }
  return success();
}

static SmallVector<int64_t> reducedShape(ArrayRef<int64_t> shape,
                                         ArrayRef<int64_t> axes, bool keepDims) {
  SmallVector<int64_t> result;
  for (auto [i, size] : llvm::enumerate(shape)) {
    if (!llvm::is_contained(axes, static_cast<int64_t>(i)))
      result.push_back(size);
    else if (keepDims)
      result.push_back(1);
  }
  return result;
}

#define KILN_REDUCE_OP(Op)                                                     \
  LogicalResult Op::inferReturnTypes(MLIRContext *,                            \
                                     std::optional<Location> loc,              \
                                     Adaptor adaptor,                          \
                                     SmallVectorImpl<Type> &results) {         \
    RankedTensorType input = rankedType(adaptor.getInput());                   \
    if (failed(checkAxes(loc, adaptor.getAxes(), input.getRank())))            \
      return failure();                                                        \
    results.push_back(RankedTensorType::get(                                   \
        reducedShape(input.getShape(), adaptor.getAxes(),                      \
                     adaptor.getKeepdims()),                                   \
        input.getElementType()));                                              \
    return success();                                                          \
  }                                                                            \
  LogicalResult Op::verify() {                                                 \
    return checkAxes(getLoc(), getAxes(), getInput().getType().getRank());     \
  }
KILN_REDUCE_OP(ReduceSumOp)
KILN_REDUCE_OP(ReduceMeanOp)
KILN_REDUCE_OP(ReduceMaxOp)
KILN_REDUCE_OP(ReduceMinOp)
KILN_REDUCE_OP(ReduceProdOp)
KILN_REDUCE_OP(ReduceL1Op)
KILN_REDUCE_OP(ReduceL2Op)
KILN_REDUCE_OP(ReduceSumSquareOp)
KILN_REDUCE_OP(ReduceLogSumOp)
KILN_REDUCE_OP(ReduceLogSumExpOp)
#undef KILN_REDUCE_OP

template <typename ArgOp>
static LogicalResult inferArgReduce(MLIRContext *ctx, std::optional<Location> loc,
                                    typename ArgOp::Adaptor adaptor,
                                    SmallVectorImpl<Type> &results) {
  RankedTensorType input = rankedType(adaptor.getInput());
  int64_t axis = adaptor.getAxis();
  if (failed(checkAxes(loc, {axis}, input.getRank())))
    return failure();
  results.push_back(RankedTensorType::get(
      reducedShape(input.getShape(), {axis}, adaptor.getKeepdims()),
      IntegerType::get(ctx, 64)));
  return success();
}

LogicalResult ArgMaxOp::inferReturnTypes(MLIRContext *ctx,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  return inferArgReduce<ArgMaxOp>(ctx, loc, adaptor, results);
}

LogicalResult ArgMinOp::inferReturnTypes(MLIRContext *ctx,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  return inferArgReduce<ArgMinOp>(ctx, loc, adaptor, results);
}

LogicalResult TopKOp::inferReturnTypes(MLIRContext *ctx, std::optional<Location> loc,
                                       Adaptor adaptor, SmallVectorImpl<Type> &results) {
  RankedTensorType input = rankedType(adaptor.getInput());
  int64_t axis = adaptor.getAxis(), k = adaptor.getK();
  if (failed(checkAxes(loc, {axis}, input.getRank())))
    return failure();
  int64_t extent = input.getDimSize(axis);
  if (k < 1 || k > extent)
    return emitOptionalError(loc, "k = ", k, " must be between 1 and the extent of axis ", axis,
                             " (", extent, ")");
  SmallVector<int64_t> shape(input.getShape());
  shape[axis] = k;
  results.push_back(RankedTensorType::get(shape, IntegerType::get(ctx, 64)));
  return success();
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::verify() {
  return checkAxes(getLoc(), {static_cast<int64_t>(getAxis())}, getType().getRank());
}

LogicalResult LogSoftmaxOp::verify() {
  return checkAxes(getLoc(), {static_cast<int64_t>(getAxis())}, getType().getRank());
}

LogicalResult BatchNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  RankedTensorType input = rankedType(adaptor.getInput());
  if (input.getRank() < 2)
    return emitOptionalError(loc, "input must have rank >= 2, got ", input);
  results.push_back(input);
  return success();
}

/// A batch normalization's input has channels along dimension 1, and each
/// of `perChannel` one element of the input's type per channel.
static LogicalResult verifyChannels(Operation *op, RankedTensorType input,
                                    ValueRange perChannel) {
  if (input.getRank() < 2)
    return op->emitOpError("input must have rank >= 2, got ") << input;
  int64_t channels = input.getDimSize(1);
  for (Value operand : perChannel) {
    RankedTensorType type = rankedType(operand);
    if (type.getRank() != 1 || type.getDimSize(0) != channels)
      return op->emitOpError("per-channel operands must have ")
             << channels << " elements, got " << type;
    if (type.getElementType() != input.getElementType())
      return op->emitOpError("per-channel operand type ")
             << type << " differs from the input element type";
  }
  return success();
}

LogicalResult BatchNormOp::verify() {
  return verifyChannels(*this, rankedType(getInput()), getOperands().drop_front());
}

LogicalResult BatchNormTrainingOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                    Adaptor adaptor,
                                                    SmallVectorImpl<Type> &results) {
  RankedTensorType input = rankedType(adaptor.getInput());
  if (input.getRank() < 2)
    return emitOptionalError(loc, "input must have rank >= 2, got ", input);
  auto statistic = RankedTensorType::get({input.getDimSize(1)}, input.getElementType());
  results.append({input, statistic, statistic});
  return success();
}

LogicalResult BatchNormTrainingOp::verify() {
  return verifyChannels(*this, rankedType(getInput()), {getScale(), getBias()});
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  RankedTensorType input = rankedType(adaptor.getInput());
  int64_t axis = adaptor.getAxis();
  if (axis < 0 || axis >= std::max<int64_t>(input.getRank(), 1))
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                             input.getRank());
  ArrayRef<int64_t> normalized = input.getShape().drop_front(axis);
  for (Value param : {adaptor.getScale(), adaptor.getBias()}) {
    if (!param)
      continue;
    SmallVector<int64_t> shape;
    if (failed(broadcastShapes({rankedType(param).getShape(), normalized}, shape)) ||
        ArrayRef<int64_t>(shape) != normalized)
      return emitOptionalError(loc, "scale and bias must broadcast to the "
                               "normalized shape ", shapeString(normalized),
                               ", got ", param.getType());
  }
  SmallVector<int64_t> statShape(input.getShape());
  for (int64_t i = axis; i < input.getRank(); ++i)
    statShape[i] = 1;
  results.push_back(input);
  results.push_back(RankedTensorType::get(statShape, input.getElementType()));
  results.push_back(RankedTensorType::get(statShape, input.getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  if (getInput().getType().getNumElements() != getType().getNumElements())
    return emitOpError("cannot reshape ")
           << shapeString(getInput().getType().getShape()) << " ("
           << getInput().getType().getNumElements() << " elements) to "
           << shapeString(getType().getShape()) << " ("
           << getType().getNumElements() << " elements)";
  if (getInput().getType().getElementType() != getType().getElementType())
    return emitOpError("must not change the element type");
  return success();
}

LogicalResult SqueezeOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &results) {
  RankedTensorType input = rankedType(adaptor.getInput());
  if (failed(checkAxes(loc, adaptor.getAxes(), input.getRank())))
    return failure();
  for (int64_t axis : adaptor.getAxes())
    if (input.getDimSize(axis) != 1)
      return emitOptionalError(loc, "cannot squeeze dimension ", axis,
                               " of size ", input.getDimSize(axis));
  results.push_back(RankedTensorType::get(
      reducedShape(input.getShape(), adaptor.getAxes(), false),
      input.getElementType()));
  return success();
}

LogicalResult UnsqueezeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  RankedTensorType input = rankedType(adaptor.getInput());
  int64_t rank = input.getRank() + adaptor.getAxes().size();
  if (failed(checkAxes(loc, adaptor.getAxes(), rank)))
    return failure();
  SmallVector<int64_t> shape;
  ArrayRef<int64_t> rest = input.getShape();
  for (int64_t i = 0; i < rank; ++i) {
    if (llvm::is_contained(adaptor.getAxes(), i)) {
      shape.push_back(1);
    } else {
      shape.push_back(rest.front());
      rest = rest.drop_front();
    }
  }
  results.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult FlattenOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &results) {
  RankedTensorType input = rankedType(adaptor.getInput());
  int64_t axis = adaptor.getAxis();
  if (axis < 0 || axis > input.getRank())
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                             input.getRank());
  int64_t outer = 1, inner = 1;
  for (auto [i, size] : llvm::enumerate(input.getShape()))
    (static_cast<int64_t>(i) < axis ? outer : inner) *= size;
  results.push_back(RankedTensorType::get({outer, inner}, input.getElementType()));
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  RankedTensorType input = rankedType(adaptor.getInput());
  ArrayRef<int64_t> perm = adaptor.getPerm();
  SmallVector<int64_t> sorted(perm);
  llvm::sort(sorted);
  if (static_cast<int64_t>(perm.size()) != input.getRank() ||
      llvm::any_of(llvm::enumerate(sorted), [](auto it) {
        return it.value() != static_cast<int64_t>(it.index());
      }))
    return emitOptionalError(loc, "perm ", listString(perm),
                             " is not a permutation of ", input.getRank(),
                             " dimensions");
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(input.getDimSize(p));
  results.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  if (adaptor.getInputs().empty())
    return emitOptionalError(loc, "needs at least one input");
  RankedTensorType first = rankedType(adaptor.getInputs().front());
  int64_t axis = adaptor.getAxis();
  if (axis < 0 || axis >= first.getRank())
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                             first.getRank());
  SmallVector<int64_t> shape(first.getShape());
  shape[axis] = 0;
  for (Value input : adaptor.getInputs()) {
    RankedTensorType type = rankedType(input);
    if (type.getElementType() != first.getElementType() ||
        type.getRank() != first.getRank())
      return emitOptionalError(loc, "inputs ", first, " and ", type,
                               " cannot be concatenated");
    for (int64_t i = 0; i < type.getRank(); ++i)
      if (i != axis && type.getDimSize(i) != first.getDimSize(i))
        return emitOptionalError(loc, "inputs ", first, " and ", type,
                                 " differ in dimension ", i);
    shape[axis] += type.getDimSize(axis);
  }
  results.push_back(RankedTensorType::get(shape, first.getElementType()));
  return success();
}

LogicalResult SliceOp::verify() {
  RankedTensorType input = getInput().getType();
  int64_t rank = input.getRank();
  if (getType().getRank() != rank || static_cast<int64_t>(getStart().size()) != rank ||
      static_cast<int64_t>(getStep().size()) != rank)
    return emitOpError("start, step and result must all have rank ") << rank;
  if (getType().getElementType() != input.getElementType())
    return emitOpError("must not change the element type");
  for (int64_t i = 0; i < rank; ++i) {
    int64_t start = getStart()[i], step = getStep()[i];
    int64_t count = getType().getDimSize(i), size = input.getDimSize(i);
    if (step == 0)
      return emitOpError("step of dimension ") << i << " is zero";
    if (count == 0)
      continue;
    int64_t last = start + (count - 1) * step;
    if (start < 0 || start >= size || last < 0 || last >= size)
      return emitOpError("dimension ")
             << i << " reads indices " << start << ".." << last
             << " outside [0, " << size << ")";
  }
  return success();
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  RankedTensorType data = rankedType(adaptor.getData());
  RankedTensorType indices = rankedType(adaptor.getIndices());
  int64_t axis = adaptor.getAxis();
  if (axis < 0 || axis >= data.getRank())
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ",
                             data.getRank());
  SmallVector<int64_t> shape(data.getShape().take_front(axis));
  llvm::append_range(shape, indices.getShape());
  llvm::append_range(shape, data.getShape().drop_front(axis + 1));
  results.push_back(RankedTensorType::get(shape, data.getElementType()));
  return success();
}

LogicalResult GatherElementsOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                                 Adaptor adaptor, SmallVectorImpl<Type> &results) {
  RankedTensorType data = rankedType(adaptor.getData());
  RankedTensorType indices = rankedType(adaptor.getIndices());
  int64_t axis = adaptor.getAxis();
  if (axis < 0 || axis >= data.getRank())
    return emitOptionalError(loc, "axis ", axis, " is out of range for rank ", data.getRank());
  if (indices.getRank() != data.getRank())
    return emitOptionalError(loc, "indices must have the rank of data (", data.getRank(), "), got ",
                             indices.getRank());
  results.push_back(RankedTensorType::get(indices.getShape(), data.getElementType()));
  return success();
}

LogicalResult GatherElementsOp::verify() {
  RankedTensorType data = getData().getType(), indices = getIndices().getType();
  int64_t axis = getAxis();
  if (indices.getRank() != data.getRank())
    return emitOpError("indices must have the rank of data (") << data.getRank() << "), got "
                                                                << indices.getRank();
  for (int64_t d = 0; d < data.getRank(); ++d)
    if (d != axis && indices.getDimSize(d) > data.getDimSize(d))
      return emitOpError("indices dimension ")
             << d << " (" << indices.getDimSize(d) << ") is longer than data's ("
             << data.getDimSize(d) << ")";
  return success();
}

LogicalResult GatherNDOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                           Adaptor adaptor, SmallVectorImpl<Type> &results) {
  RankedTensorType data = rankedType(adaptor.getData());
  RankedTensorType indices = rankedType(adaptor.getIndices());
  int64_t batch = adaptor.getBatchDims();
  if (indices.getRank() < 1)
    return emitOptionalError(loc, "indices must have at least one dimension");
  int64_t depth = indices.getShape().back();
  if (batch < 0 || batch >= indices.getRank() || batch > data.getRank())
    return emitOptionalError(loc, "batch_dims ", batch, " is out of range for indices ",
                             shapeString(indices.getShape()), " and data ",
                             shapeString(data.getShape()));
  if (depth < 1 || batch + depth > data.getRank())
    return emitOptionalError(loc, "indices ", shapeString(indices.getShape()), " index ", depth,
                             " dimensions of data ", shapeString(data.getShape()), " after ",
                             batch, " batch dimensions");
  if (indices.getShape().take_front(batch) != data.getShape().take_front(batch))
    return emitOptionalError(loc, "the batch dimensions of indices ",
                             shapeString(indices.getShape()), " and data ",
                             shapeString(data.getShape()), " differ");
  SmallVector<int64_t> shape(indices.getShape().drop_back());
  llvm::append_range(shape, data.getShape().drop_front(batch + depth));
  results.push_back(RankedTensorType::get(shape, data.getElementType()));
  return success();
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
                                      SmallVectorImpl<Type> &results) {
  RankedTensorType input = rankedType(adaptor.getInput());
  ArrayRef<int64_t> pads = adaptor.getPads();
  int64_t rank = input.getRank();
  if (static_cast<int64_t>(pads.size()) != 2 * rank)
    return emitOptionalError(loc, "pads must have 2 values per dimension (", 2 * rank,
                             "), got ", pads.size());
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t size;
    if (llvm::AddOverflow(input.getDimSize(d), pads[d], size) ||
        llvm::AddOverflow(size, pads[rank + d], size) || size < 0)
      return emitOptionalError(loc, "padding dimension ", d, " of ", shapeString(input.getShape()),
                               " by ", pads[d], " and ", pads[rank + d],
                               " leaves a negative size");
    shape.push_back(size);
  }
  results.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

LogicalResult PadOp::verify() {
  RankedTensorType input = getInput().getType();
  StringRef mode = getMode();
  if (mode != "constant" && mode != "edge" && mode != "reflect" && mode != "wrap")
    return emitOpError("unknown mode '") << mode << "' (constant, edge, reflect, wrap)";
  if (Value value = getValue()) {
    auto type = cast<RankedTensorType>(value.getType());
    if (type.getNumElements() != 1 || type.getElementType() != input.getElementType())
      return emitOpError("the constant value must be one element of the input's type");
    if (mode != "constant")
      return emitOpError("a constant value needs mode 'constant'");
  }
  ArrayRef<int64_t> pads = getPads();
  int64_t rank = input.getRank();
  for (int64_t d = 0; d < rank; ++d) {
    int64_t size = input.getDimSize(d), most = pads[d] > pads[rank + d] ? pads[d] : pads[rank + d];
    if (mode == "reflect" && most > size - 1)
      return emitOpError("mode 'reflect' adds at most ")
             << size - 1 << " elements to a side of dimension " << d << " (size " << size
             << "), got " << most;
    if (mode == "wrap" && most > size)
      return emitOpError("mode 'wrap' adds at most ")
             << size << " elements to a side of dimension " << d << ", got " << most;
  }
  return success();
}

LogicalResult ResizeOp::verify() {
  RankedTensorType input = getInput().getType(), result = getType();
  StringRef mode = getMode(), coordinates = getCoordinateMode(), nearest = getNearestMode();
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    return emitOpError("unknown mode '") << mode << "' (nearest, linear, cubic)";
  if (!llvm::is_contained({"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                           "align_corners", "asymmetric", "tf_crop_and_resize",
                           "tf_half_pixel_for_nn"},
                          coordinates))
    return emitOpError("unknown coordinate transformation mode '") << coordinates << "'";
  if (!llvm::is_contained({"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}, nearest))
    return emitOpError("unknown nearest mode '") << nearest << "'";
  if (mode != "nearest" && !isa<FloatType>(input.getElementType()))
    return emitOpError("mode '") << mode << "' needs floating-point data";
  if (result.getRank() != input.getRank() || result.getElementType() != input.getElementType())
    return emitOpError("the result must have the input's rank and element type");
  if (static_cast<int64_t>(getScales().size()) != input.getRank())
    return emitOpError("scales must have one value per dimension (")
           << input.getRank() << "), got " << getScales().size();
  for (double scale : getScales())
    if (!(scale > 0) || !std::isfinite(scale))
      return emitOpError("scales must be positive and finite");
  if (coordinates == "tf_crop_and_resize" &&
      (!getRoi() || static_cast<int64_t>(getRoi()->size()) != 2 * input.getRank()))
    return emitOpError("'tf_crop_and_resize' needs an roi of 2 values per dimension");
  return success();
}

LogicalResult GridSampleOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                             Adaptor adaptor, SmallVectorImpl<Type> &results) {
  RankedTensorType input = rankedType(adaptor.getInput()), grid = rankedType(adaptor.getGrid());
  if (input.getRank() != 4 || grid.getRank() != 4 || grid.getDimSize(3) != 2 ||
      grid.getDimSize(0) != input.getDimSize(0))
    return emitOptionalError(loc, "needs an input [N, C, H, W] and a grid [N, Ho, Wo, 2], got ",
                             shapeString(input.getShape()), " and ",
                             shapeString(grid.getShape()));
  results.push_back(RankedTensorType::get(
      {input.getDimSize(0), input.getDimSize(1), grid.getDimSize(1), grid.getDimSize(2)},
      input.getElementType()));
  return success();
}

LogicalResult GridSampleOp::verify() {
  if (!llvm::is_contained({"nearest", "bilinear", "bicubic"}, getMode()))
    return emitOpError("unknown mode '") << getMode() << "' (nearest, bilinear, bicubic)";
  if (!llvm::is_contained({"zeros", "border", "reflection"}, getPaddingMode()))
    return emitOpError("unknown padding mode '")
           << getPaddingMode() << "' (zeros, border, reflection)";
  if (getGrid().getType().getElementType() != getInput().getType().getElementType())
    return emitOpError("the grid must have the input's element type");
  return success();
}

LogicalResult CumSumOp::verify() {
  int64_t rank = getType().getRank();
  if (getAxis() < 0 || getAxis() >= rank)
    return emitOpError("axis ") << getAxis() << " is out of range for rank " << rank;
  return success();
}

static bool isScatterReduction(StringRef reduction) {
  return llvm::is_contained({"none", "add", "mul", "max", "min"}, reduction);
}

LogicalResult ScatterElementsOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                                  Adaptor adaptor,
                                                  SmallVectorImpl<Type> &results) {
  results.push_back(adaptor.getData().getType());
  return success();
}

LogicalResult ScatterElementsOp::verify() {
  RankedTensorType data = getData().getType(), indices = getIndices().getType(),
                   updates = getUpdates().getType();
  int64_t rank = data.getRank(), axis = getAxis();
  if (axis < 0 || axis >= rank)
    return emitOpError("axis ") << axis << " is out of range for rank " << rank;
  if (indices.getShape() != updates.getShape() || indices.getRank() != rank)
    return emitOpError("indices ") << shapeString(indices.getShape()) << " and updates "
                                   << shapeString(updates.getShape())
                                   << " must have one shape, of data's rank (" << rank << ")";
  if (updates.getElementType() != data.getElementType())
    return emitOpError("updates must have data's element type");
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && indices.getDimSize(d) > data.getDimSize(d))
      return emitOpError("indices dimension ")
             << d << " (" << indices.getDimSize(d) << ") is longer than data's ("
             << data.getDimSize(d) << ")";
  if (!isScatterReduction(getReduction()))
    return emitOpError("unknown reduction '") << getReduction() << "' (none, add, mul, max, min)";
  return success();
}

LogicalResult ScatterNDOp::inferReturnTypes(MLIRContext *, std::optional<Location>,
                                            Adaptor adaptor, SmallVectorImpl<Type> &results) {
  results.push_back(adaptor.getData().getType());
  return success();
}

LogicalResult ScatterNDOp::verify() {
  RankedTensorType data = getData().getType(), indices = getIndices().getType(),
                   updates = getUpdates().getType();
  if (indices.getRank() < 1 || indices.getShape().back() < 1 ||
      indices.getShape().back() > data.getRank())
    return emitOpError("the last dimension of indices ")
           << shapeString(indices.getShape()) << " must index 1 to " << data.getRank()
           << " dimensions of data";
  SmallVector<int64_t> expected(indices.getShape().drop_back());
  llvm::append_range(expected, data.getShape().drop_front(indices.getShape().back()));
  if (updates.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError("updates must be ") << shapeString(expected) << ", got "
                                           << shapeString(updates.getShape());
  if (updates.getElementType() != data.getElementType())
    return emitOpError("updates must have data's element type");
  if (!isScatterReduction(getReduction()))
    return emitOpError("unknown reduction '") << getReduction() << "' (none, add, mul, max, min)";
  return success();
}

FailureOr<EinsumSpec> kiln::parseEinsum(StringRef equation, ArrayRef<ArrayRef<int64_t>> shapes,
                                  std::string &error) {
  std::string text;
  for (char c : equation)
    if (c != ' ')
      text += c;
  StringRef eq(text);
  auto [lhs, rhs] = eq.split("->");
  bool explicitResult = eq.contains("->");
  SmallVector<StringRef> terms;
  lhs.split(terms, ',');
  if (terms.size() != shapes.size()) {
    error = "the equation names " + std::to_string(terms.size()) + " operands, but there are " +
            std::to_string(shapes.size());
    return failure();
  }
  // Labels of each term, with '.' standing for the whole ellipsis.
  auto labelsOf = [&](StringRef term, std::string &labels) -> LogicalResult {
    for (size_t i = 0; i < term.size(); ++i) {
      if (term.substr(i).starts_with("...")) {
        if (StringRef(labels).contains('.')) {
          error = "'" + term.str() + "' has more than one ellipsis";
          return failure();
        }
        labels += '.';
        i += 2;
      } else if (llvm::isAlpha(term[i])) {
        labels += term[i];
      } else {
        error = "unexpected '" + std::string(1, term[i]) + "' in '" + term.str() + "'";
        return failure();
      }
    }
    return success();
  };
  SmallVector<std::string> labels(terms.size());
  int64_t ellipsisRank = 0;
  for (auto [i, term] : llvm::enumerate(terms)) {
    if (failed(labelsOf(term, labels[i])))
      return failure();
    int64_t letters = llvm::count_if(labels[i], [](char c) { return c != '.'; });
    bool ellipsis = StringRef(labels[i]).contains('.');
    int64_t rank = shapes[i].size();
    if (ellipsis ? letters > rank : letters != rank) {
      error = "'" + term.str() + "' does not fit operand " + std::to_string(i) + " of rank " +
              std::to_string(rank);
      return failure();
    }
    if (ellipsis)
      ellipsisRank = std::max(ellipsisRank, rank - letters);
  }
  EinsumSpec spec;
  spec.loopSizes.assign(ellipsisRank, 1);
  llvm::DenseMap<char, int64_t> loopOf, uses;
  auto setSize = [&](int64_t loop, int64_t size, bool broadcastable) -> int64_t {
    int64_t &known = spec.loopSizes[loop];
    if (known == size || (broadcastable && size == 1))
      return broadcastable && size == 1 && known != 1 ? -1 : loop;
    if (broadcastable && known == 1) {
      known = size;
      return loop;
    }
    return -2;
  };
  for (auto [i, term] : llvm::enumerate(terms)) {
    ArrayRef<int64_t> shape = shapes[i];
    int64_t letters = llvm::count_if(labels[i], [](char c) { return c != '.'; });
    int64_t ellipsisDims = shape.size() - letters, dim = 0;
    SmallVector<int64_t> loops;
    for (char c : labels[i]) {
      if (c == '.') {
        for (int64_t e = 0; e < ellipsisDims; ++e, ++dim)
          loops.push_back(ellipsisRank - ellipsisDims + e);
        continue;
      }
      ++uses[c];
      auto [it, fresh] = loopOf.try_emplace(c, spec.loopSizes.size());
      if (fresh)
        spec.loopSizes.push_back(shape[dim]);
      loops.push_back(it->second);
      ++dim;
    }
    // Sizes: letters must agree; ellipsis dimensions broadcast.
    for (auto [d, loop] : llvm::enumerate(loops)) {
      bool isEllipsis = loop < ellipsisRank;
      int64_t resolved = setSize(loop, shape[d], isEllipsis);
      if (resolved == -2) {
        error = "dimension " + std::to_string(d) + " of operand " + std::to_string(i) +
                " (size " + std::to_string(shape[d]) + ") does not match the size " +
                std::to_string(spec.loopSizes[loop]) + " of its label elsewhere";
        return failure();
      }
      loop = resolved;
    }
    spec.operandLoops.push_back(loops);
  }
  // Ellipsis dimensions read before a later operand widened them broadcast.
  for (auto [i, loops] : llvm::enumerate(spec.operandLoops))
    for (auto [d, loop] : llvm::enumerate(loops))
      if (loop >= 0 && loop < ellipsisRank && shapes[i][d] == 1 && spec.loopSizes[loop] != 1)
        loop = -1;

  if (explicitResult) {
    std::string result;
    if (failed(labelsOf(rhs, result)))
      return failure();
    llvm::DenseSet<char> seen;
    for (char c : result) {
      if (c == '.') {
        for (int64_t e = 0; e < ellipsisRank; ++e)
          spec.resultLoops.push_back(e);
        continue;
      }
      if (!loopOf.count(c) || !seen.insert(c).second) {
        error = "result label '" + std::string(1, c) +
                "' is not an operand's, or appears twice";
        return failure();
      }
      spec.resultLoops.push_back(loopOf[c]);
    }
  } else {
    for (int64_t e = 0; e < ellipsisRank; ++e)
      spec.resultLoops.push_back(e);
    SmallVector<char> once;
    for (auto [c, count] : uses)
      if (count == 1)
        once.push_back(c);
    llvm::sort(once);
    for (char c : once)
      spec.resultLoops.push_back(loopOf[c]);
  }
  return spec;
}

LogicalResult EinsumOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                         Adaptor adaptor, SmallVectorImpl<Type> &results) {
  if (adaptor.getInputs().empty())
    return emitOptionalError(loc, "needs at least one input");
  SmallVector<ArrayRef<int64_t>> shapes;
  Type element = rankedType(adaptor.getInputs().front()).getElementType();
  for (Value input : adaptor.getInputs()) {
    shapes.push_back(rankedType(input).getShape());
    if (rankedType(input).getElementType() != element)
      return emitOptionalError(loc, "the operands must have one element type");
  }
  std::string error;
  FailureOr<EinsumSpec> spec = parseEinsum(adaptor.getEquation(), shapes, error);
  if (failed(spec))
    return emitOptionalError(loc, "equation '", adaptor.getEquation(), "': ", error);
  SmallVector<int64_t> shape;
  for (int64_t loop : spec->resultLoops)
    shape.push_back(spec->loopSizes[loop]);
  results.push_back(RankedTensorType::get(shape, element));
  return success();
}

LogicalResult ExpandOp::verify() {
  SmallVector<int64_t> shape;
  ArrayRef<int64_t> result = getType().getShape();
  if (failed(broadcastShapes({getInput().getType().getShape(), result}, shape)) ||
      ArrayRef<int64_t>(shape) != result)
    return emitOpError("cannot broadcast ")
           << shapeString(getInput().getType().getShape()) << " to "
           << shapeString(result);
  if (getType().getElementType() != getInput().getType().getElementType())
    return emitOpError("must not change the element type");
  return success();
}

//===----------------------------------------------------------------------===//
// FusionOp
//===----------------------------------------------------------------------===//

void FusionOp::build(OpBuilder &builder, OperationState &state, TypeRange resultTypes,
                     ValueRange inputs, FusionKind kind) {
  state.addOperands(inputs);
  state.addTypes(resultTypes);
  state.addAttribute(getKindAttrName(state.name),
                     FusionKindAttr::get(builder.getContext(), kind));
  Region *body = state.addRegion();
  Block *block = new Block();
  body->push_back(block);
  for (Value input : inputs)
    block->addArgument(input.getType(), input.getLoc());
}

YieldOp FusionOp::getYield() { return llvm::cast<YieldOp>(getBody().front().getTerminator()); }

LogicalResult FusionOp::verify() {
  Block &block = getBody().front();
  if (block.getNumArguments() != getInputs().size())
    return emitOpError("has ") << getInputs().size() << " inputs but its body takes "
                               << block.getNumArguments() << " arguments";
  for (auto [i, input, argument] : llvm::enumerate(getInputs(), block.getArguments()))
    if (input.getType() != argument.getType())
      return emitOpError("input #") << i << " is " << input.getType()
                                    << " but the body's argument is " << argument.getType();
  auto yield = llvm::dyn_cast<YieldOp>(block.getTerminator());
  if (!yield)
    return emitOpError("body must end in kiln.yield");
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("yields ") << yield.getValues().getTypes().size()
                                  << " values whose types differ from its results";
  return success();
}

#define GET_OP_CLASSES
#include "dialects/kiln/KilnOps.cpp.inc"

#include "dialects/kiln/KilnEnums.cpp.inc"

//===----------------------------------------------------------------------===//
// Transfers between devices
//===----------------------------------------------------------------------===//

/// Send and receive name two different, fully specified devices.
static LogicalResult verifyTransfer(Operation *op, StringRef sendDevice, StringRef recvDevice) {
  std::optional<DeviceName> devices[2];
  StringRef texts[2] = {sendDevice, recvDevice};
  const char *roles[2] = {"send_device", "recv_device"};
  for (int i = 0; i < 2; ++i) {
    std::string error;
    devices[i] = DeviceName::parse(texts[i], error);
    if (!devices[i])
      return op->emitOpError() << roles[i] << ": " << error;
    if (!devices[i]->isFull())
      return op->emitOpError() << roles[i] << " '" << texts[i]
                               << "' must name one device fully, e.g. "
                                  "/job:localhost/replica:0/task:0/device:CPU:0";
  }
  if (*devices[0] == *devices[1])
    return op->emitOpError() << "sends to its own device '" << sendDevice << "'";
  return success();
}

LogicalResult SendOp::verify() {
  return verifyTransfer(*this, getSendDevice(), getRecvDevice());
}

LogicalResult RecvOp::verify() {
  return verifyTransfer(*this, getSendDevice(), getRecvDevice());
}

LogicalResult AllReduceStartOp::verify() {
  for (Operation *user : getOutput().getUsers()) {
    auto wait = dyn_cast<AllReduceWaitOp>(user);
    if (!wait || wait.getBucket() != getBucket())
      return emitOpError() << "bucket " << getBucket()
                           << " in flight may only be read by the all_reduce_wait of bucket "
                           << getBucket();
  }
  return success();
}

LogicalResult AllReduceWaitOp::verify() {
  auto start = getInput().getDefiningOp<AllReduceStartOp>();
  if (!start || start.getBucket() != getBucket())
    return emitOpError() << "waits for bucket " << getBucket()
                         << ", which needs the all_reduce_start of that bucket as its input";
  return success();
}
