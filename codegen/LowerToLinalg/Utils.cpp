//===- Utils.cpp - Shared helpers for lowering kiln to linalg -------------===//
#include "codegen/LowerToLinalg/Utils.h"

#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;

namespace kiln {

Value emptyTensor(OpBuilder &b, Location loc, RankedTensorType type) {
  return tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
}

Value filledTensor(OpBuilder &b, Location loc, RankedTensorType type,
                   Value value) {
  return linalg::FillOp::create(b, loc, ValueRange{value},
                                ValueRange{emptyTensor(b, loc, type)})
      .getResult(0);
}

AffineMap broadcastMap(ArrayRef<int64_t> shape, ArrayRef<int64_t> resultShape,
                       MLIRContext *ctx) {
  int64_t offset = resultShape.size() - shape.size();
  SmallVector<AffineExpr> exprs;
  for (auto [i, size] : llvm::enumerate(shape)) {
    int64_t dim = offset + i;
    exprs.push_back(size == 1 && resultShape[dim] != 1
                        ? getAffineConstantExpr(0, ctx)
                        : getAffineDimExpr(dim, ctx));
  }
  return AffineMap::get(resultShape.size(), 0, exprs, ctx);
}

Value buildElementwise(OpBuilder &b, Location loc, RankedTensorType resultType,
                       ValueRange inputs, BodyBuilder body) {
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineMap> maps;
  for (Value input : inputs)
    maps.push_back(broadcastMap(
        llvm::cast<RankedTensorType>(input.getType()).getShape(),
        resultType.getShape(), ctx));
  maps.push_back(b.getMultiDimIdentityMap(resultType.getRank()));
  SmallVector<utils::IteratorType> iterators(resultType.getRank(),
                                             utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, resultType, inputs, emptyTensor(b, loc, resultType), maps,
      iterators, [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        Value result = body(nested, nestedLoc, args.drop_back());
        linalg::YieldOp::create(nested, nestedLoc, result);
      });
  return generic.getResult(0);
}

Value scalarConstant(OpBuilder &b, Location loc, Type type, double value) {
  if (auto floatType = llvm::dyn_cast<FloatType>(type))
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(floatType, value));
  return arith::ConstantOp::create(
      b, loc, b.getIntegerAttr(type, static_cast<int64_t>(value)));
}

Value convertScalar(OpBuilder &b, Location loc, Value value, Type to, bool unsignedInput,
                   bool unsignedOutput) {
  Type from = value.getType();
  if (from == to)
    return value;
  auto fromFloat = llvm::dyn_cast<FloatType>(from);
  auto toFloat = llvm::dyn_cast<FloatType>(to);
  bool fromUnsigned = from.isInteger(1) || unsignedInput;
  if (to.isInteger(1)) {
    if (fromFloat)
      return arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, value,
                                   scalarConstant(b, loc, from, 0));
    return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, value,
                                 scalarConstant(b, loc, from, 0));
  }
  if (fromFloat && toFloat) {
    // f16 <-> bf16 has no direct instruction; go through f32.
    if (fromFloat.getWidth() == toFloat.getWidth()) {
      Value wide = arith::ExtFOp::create(b, loc, b.getF32Type(), value);
      return arith::TruncFOp::create(b, loc, to, wide);
    }
    if (fromFloat.getWidth() < toFloat.getWidth())
      return arith::ExtFOp::create(b, loc, to, value);
    return arith::TruncFOp::create(b, loc, to, value);
  }
  if (fromFloat)
    return unsignedOutput ? Value(arith::FPToUIOp::create(b, loc, to, value))
                          : Value(arith::FPToSIOp::create(b, loc, to, value));
  if (toFloat)
    return fromUnsigned ? Value(arith::UIToFPOp::create(b, loc, to, value))
                        : Value(arith::SIToFPOp::create(b, loc, to, value));
  unsigned fromWidth = from.getIntOrFloatBitWidth();
  unsigned toWidth = to.getIntOrFloatBitWidth();
  if (fromWidth < toWidth)
    return fromUnsigned ? Value(arith::ExtUIOp::create(b, loc, to, value))
                        : Value(arith::ExtSIOp::create(b, loc, to, value));
  return arith::TruncIOp::create(b, loc, to, value);
}

Value combine(OpBuilder &b, Location loc, Combiner combiner, Value acc, Value x,
              bool isUnsigned) {
  bool isFloat = llvm::isa<FloatType>(x.getType());
  switch (combiner) {
  case Combiner::Add:
    return isFloat ? Value(arith::AddFOp::create(b, loc, acc, x))
                   : Value(arith::AddIOp::create(b, loc, acc, x));
  case Combiner::Mul:
    return isFloat ? Value(arith::MulFOp::create(b, loc, acc, x))
                   : Value(arith::MulIOp::create(b, loc, acc, x));
  case Combiner::Max:
    if (isFloat)
      return arith::MaximumFOp::create(b, loc, acc, x);
    return isUnsigned ? Value(arith::MaxUIOp::create(b, loc, acc, x))
                      : Value(arith::MaxSIOp::create(b, loc, acc, x));
  case Combiner::Min:
    if (isFloat)
      return arith::MinimumFOp::create(b, loc, acc, x);
    return isUnsigned ? Value(arith::MinUIOp::create(b, loc, acc, x))
                      : Value(arith::MinSIOp::create(b, loc, acc, x));
  }
  llvm_unreachable("unknown combiner");
}

Value wrapNegative(OpBuilder &b, Location loc, Value index, int64_t size) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value negative = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, index, zero);
  Value wrapped = arith::AddIOp::create(b, loc, index, arith::ConstantIndexOp::create(b, loc, size));
  return arith::SelectOp::create(b, loc, negative, wrapped, index);
}

Value clampIndex(OpBuilder &b, Location loc, Value index, int64_t size) {
  index = arith::MaxSIOp::create(b, loc, index, arith::ConstantIndexOp::create(b, loc, 0));
  return arith::MinSIOp::create(
      b, loc, index, arith::ConstantIndexOp::create(b, loc, std::max<int64_t>(size - 1, 0)));
}

Value generateFromIndices(
    OpBuilder &builder, Location loc, RankedTensorType type,
    function_ref<Value(OpBuilder &, Location, SmallVector<Value> &)> element) {
  int64_t rank = type.getRank();
  return linalg::GenericOp::create(
             builder, loc, type, ValueRange{}, emptyTensor(builder, loc, type),
             SmallVector<AffineMap>{builder.getMultiDimIdentityMap(rank)},
             SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
             [&](OpBuilder &b, Location nloc, ValueRange) {
               SmallVector<Value> indices;
               for (int64_t i = 0; i < rank; ++i)
                 indices.push_back(linalg::IndexOp::create(b, nloc, i));
               linalg::YieldOp::create(b, nloc, element(b, nloc, indices));
             })
      .getResult(0);
}

} // namespace kiln
