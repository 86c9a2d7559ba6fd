//===- Elemental.cpp - Computing one element of a fusion's tensor ---------===//
#include "codegen/GPU/Elemental.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

#include <numeric>

using namespace mlir;

namespace kiln {

ElementalEmitter::ElementalEmitter(OpBuilder &builder, Location loc, int64_t lanes,
                                   BufferProvider buffers)
    : builder(builder), loc(loc), lanes(lanes), buffers(std::move(buffers)) {
  Operation *function = builder.getInsertionBlock()->getParentOp();
  while (function && !isa<FunctionOpInterface>(function))
    function = function->getParentOp();
  entry = &function->getRegion(0).front();
}

Value ElementalEmitter::indexConstant(int64_t value) {
  Value &cached = indexConstants[value];
  if (!cached) {
    OpBuilder atEntry = OpBuilder::atBlockBegin(entry);
    cached = arith::ConstantIndexOp::create(atEntry, loc, value);
  }
  return cached;
}

void ElementalEmitter::bindUniform(Value tensor, Value value) { uniforms[tensor] = value; }

//===----------------------------------------------------------------------===//
// Index arithmetic
//===----------------------------------------------------------------------===//

/// The constant an index value holds, if it is one.
static std::optional<int64_t> constantOf(Value value) {
  if (auto op = value.getDefiningOp<arith::ConstantIndexOp>())
    return op.value();
  return std::nullopt;
}

Value ElementalEmitter::scalarConstant(TypedAttr value) {
  Value &cached = scalarConstants[value];
  if (!cached) {
    OpBuilder atEntry = OpBuilder::atBlockBegin(entry);
    cached = arith::ConstantOp::create(atEntry, loc, value);
  }
  return cached;
}

LaneIndex ElementalEmitter::constant(int64_t value) {
  // 0 is a multiple of everything; align 0 says so (gcd(0, x) = x).
  return {indexConstant(value), 0, value};
}

LaneIndex ElementalEmitter::uniform(Value index, int64_t align) { return {index, 0, align}; }

Value ElementalEmitter::laneValue(const LaneIndex &index, int64_t l) {
  if (!index.lanes.empty())
    return index.lanes[l];
  if (index.step == 0 || l == 0)
    return index.base;
  Value offset = indexConstant(index.step * l);
  return arith::AddIOp::create(builder, loc, index.base, offset);
}

/// Applies `scalar` to each lane of the operands; used when a result is not
/// affine in the lane.
template <typename Fn>
static LaneIndex perLane(ElementalEmitter &emitter, int64_t lanes, Fn &&scalar) {
  LaneIndex result;
  for (int64_t l = 0; l < lanes; ++l)
    result.lanes.push_back(scalar(l));
  result.base = result.lanes.front();
  return result;
}

LaneIndex ElementalEmitter::add(const LaneIndex &lhs, const LaneIndex &rhs) {
  if (!lhs.isAffine() || !rhs.isAffine())
    return perLane(*this, lanes, [&](int64_t l) -> Value {
      return arith::AddIOp::create(builder, loc, laneValue(lhs, l), laneValue(rhs, l));
    });
  Value base;
  if (constantOf(lhs.base) == 0)
    base = rhs.base;
  else if (constantOf(rhs.base) == 0)
    base = lhs.base;
  else if (auto a = constantOf(lhs.base), b = constantOf(rhs.base); a && b)
    base = indexConstant(*a + *b);
  else
    base = arith::AddIOp::create(builder, loc, lhs.base, rhs.base);
  return {base, lhs.step + rhs.step, std::gcd(lhs.align, rhs.align)};
}

LaneIndex ElementalEmitter::mul(const LaneIndex &index, int64_t factor) {
  if (factor == 1)
    return index;
  if (!index.isAffine())
    return perLane(*this, lanes, [&](int64_t l) -> Value {
      Value c = indexConstant(factor);
      return arith::MulIOp::create(builder, loc, laneValue(index, l), c);
    });
  Value base;
  if (auto c = constantOf(index.base))
    base = indexConstant(*c * factor);
  else
    base = arith::MulIOp::create(builder, loc, index.base,
                                 indexConstant(factor));
  return {base, index.step * factor, index.align * std::abs(factor)};
}

/// Whether every lane of `index` falls in the same block of `divisor`
/// elements: lane 0 sits at a multiple of g = gcd(align, divisor) within
/// its block, at most divisor - g, and the last lane is (lanes-1)*step
/// further on.
static bool lanesShareBlock(const LaneIndex &index, int64_t divisor, int64_t lanes) {
  if (!index.isAffine() || index.step < 0)
    return false;
  int64_t g = std::gcd(index.align, divisor);
  return index.step * (lanes - 1) < g;
}

LaneIndex ElementalEmitter::floorDiv(const LaneIndex &index, int64_t divisor) {
  if (divisor == 1)
    return index;
  // Indices are never negative, so unsigned division is floor division (and
  // LLVM turns it into a multiply and a shift).
  if (index.isUniform() || lanesShareBlock(index, divisor, lanes)) {
    Value base;
    if (auto c = constantOf(index.base))
      base = indexConstant(*c / divisor);
    else
      base = arith::DivUIOp::create(builder, loc, index.base,
                                    indexConstant(divisor));
    int64_t align = index.align % divisor == 0 ? index.align / divisor : 1;
    return {base, 0, align};
  }
  return perLane(*this, lanes, [&](int64_t l) -> Value {
    return arith::DivUIOp::create(builder, loc, laneValue(index, l),
                                  indexConstant(divisor));
  });
}

LaneIndex ElementalEmitter::mod(const LaneIndex &index, int64_t divisor) {
  if (divisor == 1)
    return constant(0);
  if (index.isUniform() || lanesShareBlock(index, divisor, lanes)) {
    Value base;
    if (auto c = constantOf(index.base))
      base = indexConstant(*c % divisor);
    else
      base = arith::RemUIOp::create(builder, loc, index.base,
                                    indexConstant(divisor));
    return {base, index.step, std::gcd(index.align, divisor)};
  }
  return perLane(*this, lanes, [&](int64_t l) -> Value {
    return arith::RemUIOp::create(builder, loc, laneValue(index, l),
                                  indexConstant(divisor));
  });
}

SmallVector<LaneIndex> ElementalEmitter::delinearize(const LaneIndex &linear,
                                                     ArrayRef<int64_t> shape) {
  SmallVector<LaneIndex> indices(shape.size());
  LaneIndex rest = linear;
  for (int64_t i = static_cast<int64_t>(shape.size()) - 1; i >= 0; --i) {
    if (shape[i] == 1) {
      indices[i] = constant(0);
      continue;
    }
    bool outermost = llvm::all_of(shape.take_front(i), [](int64_t d) { return d == 1; });
    if (outermost) {
      indices[i] = rest;
      break;
    }
    indices[i] = mod(rest, shape[i]);
    rest = floorDiv(rest, shape[i]);
  }
  for (LaneIndex &index : indices)
    if (!index.base)
      index = constant(0);
  return indices;
}

LaneIndex ElementalEmitter::linearize(ArrayRef<LaneIndex> indices, ArrayRef<int64_t> shape) {
  LaneIndex linear = constant(0);
  int64_t stride = 1;
  for (int64_t i = static_cast<int64_t>(shape.size()) - 1; i >= 0; --i) {
    if (shape[i] != 1)
      linear = add(linear, mul(indices[i], stride));
    stride *= shape[i];
  }
  return linear;
}

FailureOr<LaneIndex> ElementalEmitter::applyExpr(AffineExpr expr, ArrayRef<LaneIndex> dims) {
  if (auto dim = dyn_cast<AffineDimExpr>(expr))
    return dims[dim.getPosition()];
  if (auto c = dyn_cast<AffineConstantExpr>(expr))
    return constant(c.getValue());
  auto binary = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!binary)
    return failure();
  FailureOr<LaneIndex> lhs = applyExpr(binary.getLHS(), dims);
  if (failed(lhs))
    return failure();
  auto rhsConstant = dyn_cast<AffineConstantExpr>(binary.getRHS());
  switch (expr.getKind()) {
  case AffineExprKind::Add: {
    FailureOr<LaneIndex> rhs = applyExpr(binary.getRHS(), dims);
    if (failed(rhs))
      return failure();
    return add(*lhs, *rhs);
  }
  case AffineExprKind::Mul:
    if (!rhsConstant)
      return failure();
    return mul(*lhs, rhsConstant.getValue());
  case AffineExprKind::FloorDiv:
    if (!rhsConstant || rhsConstant.getValue() <= 0)
      return failure();
    return floorDiv(*lhs, rhsConstant.getValue());
  case AffineExprKind::Mod:
    if (!rhsConstant || rhsConstant.getValue() <= 0)
      return failure();
    return mod(*lhs, rhsConstant.getValue());
  default:
    return failure();
  }
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

/// Bytes of one element in memory (i1 is stored in a byte).
static int64_t elementBytes(Type type) {
  return std::max<int64_t>(1, llvm::divideCeil(type.getIntOrFloatBitWidth(), 8));
}

/// Whether lanes at `indices` into `type` are consecutive and the first is
/// aligned to the whole vector, so they can move as one vector access.
static bool isVectorAccess(MemRefType type, ArrayRef<LaneIndex> indices, int64_t lanes) {
  if (lanes == 1 || type.getRank() == 0 || type.getElementType().isInteger(1))
    return false;
  const LaneIndex &inner = indices.back();
  if (!inner.isAffine() || inner.step != 1 || inner.align % lanes != 0 ||
      type.getShape().back() % lanes != 0)
    return false;
  return llvm::all_of(indices.drop_back(), [](const LaneIndex &i) { return i.isUniform(); });
}

Lanes ElementalEmitter::load(Value buffer, ArrayRef<LaneIndex> indices) {
  auto type = llvm::cast<MemRefType>(buffer.getType());
  Type element = type.getElementType();
  if (llvm::all_of(indices, [](const LaneIndex &i) { return i.isUniform(); })) {
    SmallVector<Value> bases = llvm::map_to_vector(indices, [](const LaneIndex &i) { return i.base; });
    return {{memref::LoadOp::create(builder, loc, buffer, bases)}};
  }
  if (isVectorAccess(type, indices, lanes)) {
    SmallVector<Value> bases = llvm::map_to_vector(indices, [](const LaneIndex &i) { return i.base; });
    auto vectorType = VectorType::get({lanes}, element);
    Value vector = vector::LoadOp::create(builder, loc, vectorType, buffer, bases,
                                          /*nontemporal=*/false,
                                          llvm::MaybeAlign(elementBytes(element) * lanes));
    Lanes result;
    for (int64_t l = 0; l < lanes; ++l)
      result.values.push_back(vector::ExtractOp::create(builder, loc, vector, l));
    return result;
  }
  Lanes result;
  for (int64_t l = 0; l < lanes; ++l) {
    SmallVector<Value> lane =
        llvm::map_to_vector(indices, [&](const LaneIndex &i) { return laneValue(i, l); });
    result.values.push_back(memref::LoadOp::create(builder, loc, buffer, lane));
  }
  return result;
}

void ElementalEmitter::store(const Lanes &values, Value buffer, ArrayRef<LaneIndex> indices) {
  auto type = llvm::cast<MemRefType>(buffer.getType());
  Type element = type.getElementType();
  bool uniformIndex = llvm::all_of(indices, [](const LaneIndex &i) { return i.isUniform(); });
  if (uniformIndex) {
    SmallVector<Value> bases = llvm::map_to_vector(indices, [](const LaneIndex &i) { return i.base; });
    memref::StoreOp::create(builder, loc, values.lane(0), buffer, bases);
    return;
  }
  if (isVectorAccess(type, indices, lanes)) {
    SmallVector<Value> bases = llvm::map_to_vector(indices, [](const LaneIndex &i) { return i.base; });
    SmallVector<Value> elements;
    for (int64_t l = 0; l < lanes; ++l)
      elements.push_back(values.lane(l));
    Value vector = vector::FromElementsOp::create(
        builder, loc, VectorType::get({lanes}, element), elements);
    vector::StoreOp::create(builder, loc, vector, buffer, bases, /*nontemporal=*/false,
                            llvm::MaybeAlign(elementBytes(element) * lanes));
    return;
  }
  for (int64_t l = 0; l < lanes; ++l) {
    SmallVector<Value> lane =
        llvm::map_to_vector(indices, [&](const LaneIndex &i) { return laneValue(i, l); });
    memref::StoreOp::create(builder, loc, values.lane(l), buffer, lane);
  }
}

//===----------------------------------------------------------------------===//
// Memoization
//===----------------------------------------------------------------------===//

static bool sameIndex(const LaneIndex &a, const LaneIndex &b) {
  return a.base == b.base && a.step == b.step && a.lanes == b.lanes;
}

bool ElementalEmitter::isVisible(Value value) const {
  Block *defining = value.getParentBlock();
  for (Block *block = builder.getInsertionBlock(); block;
       block = block->getParentOp() ? block->getParentOp()->getBlock() : nullptr)
    if (block == defining)
      return true;
  return false;
}

Lanes ElementalEmitter::lookup(Value tensor, ArrayRef<LaneIndex> indices) const {
  auto it = memo.find(tensor);
  if (it == memo.end())
    return {};
  for (const MemoEntry &entry : it->second) {
    if (entry.indices.size() != indices.size() ||
        !llvm::all_of(llvm::zip(entry.indices, indices),
                      [](auto pair) { return sameIndex(std::get<0>(pair), std::get<1>(pair)); }))
      continue;
    if (llvm::all_of(entry.value.values, [&](Value v) { return isVisible(v); }))
      return entry.value;
  }
  return {};
}

void ElementalEmitter::remember(Value tensor, ArrayRef<LaneIndex> indices, const Lanes &value) {
  memo[tensor].push_back({SmallVector<LaneIndex, 4>(indices), value});
}

//===----------------------------------------------------------------------===//
// Elements
//===----------------------------------------------------------------------===//

FailureOr<Lanes> ElementalEmitter::emit(Value tensor, ArrayRef<LaneIndex> indices) {
  Lanes cached = lookup(tensor, indices);
  if (!cached.values.empty())
    return cached;
  FailureOr<Lanes> value = emitUncached(tensor, indices);
  if (succeeded(value))
    remember(tensor, indices, *value);
  return value;
}

FailureOr<Value> ElementalEmitter::emitScalar(Value scalar) {
  if (auto it = scalars.find(scalar); it != scalars.end() && isVisible(it->second))
    return it->second;
  Operation *def = scalar.getDefiningOp();
  if (!def || def->getNumRegions() != 0 || !isMemoryEffectFree(def)) {
    if (def)
      def->emitError("kiln-gpu-form-kernels: cannot compute this scalar in a kernel");
    return failure();
  }
  if (auto constant = dyn_cast<arith::ConstantOp>(def))
    return scalars[scalar] = scalarConstant(constant.getValue());
  IRMapping mapping;
  if (auto extract = dyn_cast<tensor::ExtractOp>(def)) {
    SmallVector<LaneIndex> indices;
    for (Value index : extract.getIndices()) {
      FailureOr<Value> i = emitScalar(index);
      if (failed(i))
        return failure();
      indices.push_back(uniform(*i));
    }
    FailureOr<Lanes> element = emit(extract.getTensor(), indices);
    if (failed(element))
      return failure();
    scalars[scalar] = element->lane(0);
    return element->lane(0);
  }
  for (Value operand : def->getOperands()) {
    FailureOr<Value> mapped = emitScalar(operand);
    if (failed(mapped))
      return failure();
    mapping.map(operand, *mapped);
  }
  Operation *clone = builder.clone(*def, mapping);
  for (auto [original, copy] : llvm::zip(def->getResults(), clone->getResults()))
    scalars[original] = copy;
  return scalars[scalar];
}

FailureOr<Lanes> ElementalEmitter::emitUncached(Value tensor, ArrayRef<LaneIndex> indices) {
  if (Value value = uniforms.lookup(tensor))
    return Lanes{{value}};
  if (Value buffer = buffers(tensor))
    return load(buffer, indices);
  Operation *def = tensor.getDefiningOp();
  if (!def) {
    mlir::emitError(tensor.getLoc(), "kiln-gpu-form-kernels: no buffer holds this kernel input");
    return failure();
  }
  auto type = llvm::cast<RankedTensorType>(tensor.getType());

  if (auto constant = dyn_cast<arith::ConstantOp>(def)) {
    auto dense = llvm::dyn_cast<SplatElementsAttr>(constant.getValue());
    if (!dense) {
      def->emitError("kiln-gpu-form-kernels: a constant tensor must be a kernel parameter");
      return failure();
    }
    return Lanes{{scalarConstant(dense.getSplatValue<TypedAttr>())}};
  }
  if (isa<tensor::EmptyOp>(def)) {
    // Its elements are unspecified; only a payload that ignores them reads them.
    return Lanes{{scalarConstant(llvm::cast<TypedAttr>(builder.getZeroAttr(type.getElementType())))}};
  }
  if (isa<linalg::GenericOp>(def))
    return emitGeneric(def, llvm::cast<OpResult>(tensor).getResultNumber(), indices);
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(def)) {
    ArrayRef<int64_t> shape = expand.getResultType().getShape();
    SmallVector<LaneIndex> source;
    for (ReassociationIndices group : expand.getReassociationIndices()) {
      SmallVector<LaneIndex> parts;
      SmallVector<int64_t> sizes;
      for (int64_t dim : group) {
        parts.push_back(indices[dim]);
        sizes.push_back(shape[dim]);
      }
      source.push_back(linearize(parts, sizes));
    }
    return emit(expand.getSrc(), source);
  }
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(def)) {
    ArrayRef<int64_t> shape = collapse.getSrcType().getShape();
    SmallVector<LaneIndex> source;
    for (auto [dim, group] : llvm::enumerate(collapse.getReassociationIndices())) {
      SmallVector<int64_t> sizes;
      for (int64_t d : group)
        sizes.push_back(shape[d]);
      llvm::append_range(source, delinearize(indices[dim], sizes));
    }
    if (source.size() != shape.size()) // a collapse of a rank-0 source
      source.assign(shape.size(), constant(0));
    return emit(collapse.getSrc(), source);
  }
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(def)) {
    if (!slice.hasUnitStride() && ShapedType::isDynamicShape(slice.getStaticStrides()))
      return def->emitError("kiln-gpu-form-kernels: dynamic slices are not supported"), failure();
    if (ShapedType::isDynamicShape(slice.getStaticOffsets()) ||
        ShapedType::isDynamicShape(slice.getStaticStrides()))
      return def->emitError("kiln-gpu-form-kernels: dynamic slices are not supported"), failure();
    llvm::SmallBitVector dropped = slice.getDroppedDims();
    SmallVector<LaneIndex> source;
    unsigned next = 0;
    for (auto [dim, offset, stride] :
         llvm::enumerate(slice.getStaticOffsets(), slice.getStaticStrides())) {
      if (dropped.test(dim)) {
        source.push_back(constant(offset));
        continue;
      }
      source.push_back(add(mul(indices[next++], stride), constant(offset)));
    }
    return emit(slice.getSource(), source);
  }
  if (isa<tensor::InsertSliceOp>(def))
    return emitInsertSlice(def, indices);
  if (isa<tensor::PadOp>(def))
    return emitPad(def, indices);
  def->emitError("kiln-gpu-form-kernels: no GPU code for '") << def->getName() << "'";
  return failure();
}

FailureOr<SmallVector<Value>>
ElementalEmitter::choose(Value condition, int64_t count, Type type,
                         llvm::function_ref<FailureOr<Lanes>()> inside,
                         llvm::function_ref<FailureOr<Lanes>()> outside) {
  SmallVector<Type> types(count, type);
  auto choice = scf::IfOp::create(builder, loc, types, condition, /*addThenBlock=*/true,
                                  /*addElseBlock=*/true);
  OpBuilder::InsertionGuard guard(builder);
  for (auto [block, side] : {std::pair{choice.thenBlock(), inside}, std::pair{choice.elseBlock(), outside}}) {
    builder.setInsertionPointToStart(block);
    FailureOr<Lanes> value = side();
    if (failed(value))
      return failure();
    SmallVector<Value> yielded;
    for (int64_t k = 0; k < count; ++k)
      yielded.push_back(value->lane(k));
    scf::YieldOp::create(builder, loc, yielded);
  }
  return SmallVector<Value>(choice.getResults());
}

/// Whether `index`, lo <= index < hi, gives the same answer for every lane.
static bool lanesAgree(const LaneIndex &index, int64_t lo, int64_t hi, int64_t lanes) {
  if (index.isUniform())
    return true;
  return index.isAffine() && index.step == 1 && index.align % lanes == 0 && lo % lanes == 0 &&
         hi % lanes == 0;
}

FailureOr<Lanes> ElementalEmitter::emitInsertSlice(Operation *op, ArrayRef<LaneIndex> indices) {
  auto insert = cast<tensor::InsertSliceOp>(op);
  if (ShapedType::isDynamicShape(insert.getStaticOffsets()) ||
      ShapedType::isDynamicShape(insert.getStaticSizes()) ||
      ShapedType::isDynamicShape(insert.getStaticStrides()))
    return op->emitError("kiln-gpu-form-kernels: dynamic slices are not supported"), failure();
  ArrayRef<int64_t> offsets = insert.getStaticOffsets(), sizes = insert.getStaticSizes(),
                    strides = insert.getStaticStrides();
  llvm::SmallBitVector dropped = insert.getDroppedDims();
  Type element = insert.getType().getElementType();
  ArrayRef<int64_t> destShape = insert.getType().getShape();
  // Dimensions the slice covers whole need no bounds check.
  auto whole = [&](size_t dim) {
    return offsets[dim] == 0 && strides[dim] == 1 && sizes[dim] == destShape[dim];
  };
  bool agree = true;
  for (auto [dim, index] : llvm::enumerate(indices))
    agree &= whole(dim) || (strides[dim] == 1 && lanesAgree(index, offsets[dim],
                                                             offsets[dim] + sizes[dim], lanes));
  int64_t width = agree ? 1 : lanes;

  auto laneIndex = [&](const LaneIndex &index, int64_t l) {
    return agree ? index : uniform(laneValue(index, l));
  };
  SmallVector<Value> conditions;
  Value i1True = arith::ConstantIntOp::create(builder, loc, 1, 1);
  for (int64_t l = 0; l < width; ++l) {
    Value inside = i1True;
    for (auto [dim, index] : llvm::enumerate(indices)) {
      if (whole(dim))
        continue;
      Value at = laneIndex(index, l).base;
      Value lo = indexConstant(offsets[dim]);
      Value hi =
          indexConstant(offsets[dim] + sizes[dim] * strides[dim]);
      Value ge = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::uge, at, lo);
      Value lt = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::ult, at, hi);
      inside = arith::AndIOp::create(builder, loc, inside,
                                     arith::AndIOp::create(builder, loc, ge, lt));
      if (strides[dim] != 1) {
        Value offset = arith::SubIOp::create(builder, loc, at, lo);
        Value rem = arith::RemUIOp::create(
            builder, loc, offset, indexConstant(strides[dim]));
        Value zero = indexConstant(0);
        inside = arith::AndIOp::create(
            builder, loc, inside,
            arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::eq, rem, zero));
      }
    }
    conditions.push_back(inside);
  }

  // One scf.if per distinct condition; with agreeing lanes, one for all.
  Lanes result;
  for (int64_t l = 0; l < width; ++l) {
    SmallVector<LaneIndex> at =
        llvm::map_to_vector(indices, [&](const LaneIndex &i) { return laneIndex(i, l); });
    bool allUniform = llvm::all_of(at, [](const LaneIndex &i) { return i.isUniform(); });
    FailureOr<SmallVector<Value>> chosen = choose(
        conditions[l], agree && !allUniform ? lanes : 1, element,
        [&]() -> FailureOr<Lanes> {
          SmallVector<LaneIndex> source;
          for (auto [dim, index] : llvm::enumerate(at)) {
            if (dropped.test(dim))
              continue;
            LaneIndex shifted = add(index, constant(-offsets[dim]));
            source.push_back(strides[dim] == 1 ? shifted : floorDiv(shifted, strides[dim]));
          }
          return emit(insert.getSource(), source);
        },
        [&]() { return emit(insert.getDest(), at); });
    if (failed(chosen))
      return failure();
    llvm::append_range(result.values, *chosen);
  }
  return result;
}

FailureOr<Lanes> ElementalEmitter::emitPad(Operation *op, ArrayRef<LaneIndex> indices) {
  auto pad = cast<tensor::PadOp>(op);
  if (ShapedType::isDynamicShape(pad.getStaticLow()))
    return op->emitError("kiln-gpu-form-kernels: dynamic padding is not supported"), failure();
  Value padding = pad.getConstantPaddingValue();
  if (!padding)
    return op->emitError("kiln-gpu-form-kernels: padding must be one value"), failure();
  ArrayRef<int64_t> low = pad.getStaticLow();
  ArrayRef<int64_t> sourceShape = pad.getSourceType().getShape();
  Type element = pad.getResultType().getElementType();
  ArrayRef<int64_t> high = pad.getStaticHigh();
  auto padded = [&](size_t dim) { return low[dim] != 0 || high[dim] != 0; };
  bool agree = true;
  for (auto [dim, index] : llvm::enumerate(indices))
    agree &= !padded(dim) || lanesAgree(index, low[dim], low[dim] + sourceShape[dim], lanes);
  int64_t width = agree ? 1 : lanes;
  auto laneIndex = [&](const LaneIndex &index, int64_t l) {
    return agree ? index : uniform(laneValue(index, l));
  };

  FailureOr<Value> padValue = emitScalar(padding);
  if (failed(padValue))
    return failure();
  Lanes result;
  for (int64_t l = 0; l < width; ++l) {
    SmallVector<LaneIndex> at =
        llvm::map_to_vector(indices, [&](const LaneIndex &i) { return laneIndex(i, l); });
    Value inside = arith::ConstantIntOp::create(builder, loc, 1, 1);
    for (auto [dim, index] : llvm::enumerate(at)) {
      if (!padded(dim))
        continue;
      Value lo = indexConstant(low[dim]);
      Value hi = indexConstant(low[dim] + sourceShape[dim]);
      Value ge = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::uge, index.base, lo);
      Value lt = arith::CmpIOp::create(builder, loc, arith::CmpIPredicate::ult, index.base, hi);
      inside = arith::AndIOp::create(builder, loc, inside,
                                     arith::AndIOp::create(builder, loc, ge, lt));
    }
    bool allUniform = llvm::all_of(at, [](const LaneIndex &i) { return i.isUniform(); });
    FailureOr<SmallVector<Value>> chosen = choose(
        inside, agree && !allUniform ? lanes : 1, element,
        [&]() -> FailureOr<Lanes> {
          SmallVector<LaneIndex> source;
          for (auto [dim, index] : llvm::enumerate(at))
            source.push_back(low[dim] == 0 ? index : add(index, constant(-low[dim])));
          return emit(pad.getSource(), source);
        },
        [&]() -> FailureOr<Lanes> { return Lanes{{*padValue}}; });
    if (failed(chosen))
      return failure();
    llvm::append_range(result.values, *chosen);
  }
  if (result.values.size() != 1 && result.values.size() != static_cast<size_t>(lanes))
    return op->emitError("kiln-gpu-form-kernels: internal error: lanes of a pad"), failure();
  return result;
}

//===----------------------------------------------------------------------===//
// linalg.generic
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<Lanes>>
ElementalEmitter::clonePayload(Block &payload, ArrayRef<Lanes> arguments,
                               ArrayRef<LaneIndex> loopIndices) {
  // Scalars the payload uses from the fusion body (constants, mostly).
  llvm::SetVector<Value> above;
  getUsedValuesDefinedAbove(*payload.getParent(), above);
  IRMapping outer;
  for (Value value : above) {
    if (llvm::isa<ShapedType>(value.getType()))
      continue; // tensors read by tensor.extract
    FailureOr<Value> scalar = emitScalar(value);
    if (failed(scalar))
      return failure();
    outer.map(value, *scalar);
  }

  bool sameForEveryLane = llvm::all_of(arguments, [](const Lanes &lanes) {
    return lanes.values.empty() || lanes.isUniform();
  });
  payload.walk([&](linalg::IndexOp index) {
    sameForEveryLane &= loopIndices[index.getDim()].isUniform();
  });
  int64_t width = sameForEveryLane ? 1 : lanes;
  auto yield = cast<linalg::YieldOp>(payload.getTerminator());
  SmallVector<Lanes> results(yield.getNumOperands());
  for (int64_t l = 0; l < width; ++l) {
    IRMapping mapping = outer;
    for (auto [argument, value] : llvm::zip(payload.getArguments(), arguments))
      if (!value.values.empty())
        mapping.map(argument, value.lane(l));
    for (Operation &op : payload.without_terminator()) {
      if (auto index = dyn_cast<linalg::IndexOp>(op)) {
        mapping.map(index.getResult(), laneValue(loopIndices[index.getDim()], l));
        continue;
      }
      if (auto extract = dyn_cast<tensor::ExtractOp>(op);
          extract && extract.getTensor().getParentRegion() != payload.getParent()) {
        SmallVector<LaneIndex> at;
        for (Value index : extract.getIndices())
          at.push_back(uniform(mapping.lookupOrDefault(index)));
        FailureOr<Lanes> element = emit(extract.getTensor(), at);
        if (failed(element))
          return failure();
        mapping.map(extract.getResult(), element->lane(0));
        continue;
      }
      // x / c is x * (1 / c), c rounded: a multiply instead of a
      // correctly rounded division (about ten instructions on a GPU), at
      // most one ulp from the division, as XLA does.
      if (auto divide = dyn_cast<arith::DivFOp>(op)) {
        FloatAttr divisor;
        if (matchPattern(mapping.lookupOrDefault(divide.getRhs()), m_Constant(&divisor)) &&
            divisor.getValue().isFiniteNonZero()) {
          APFloat reciprocal(divisor.getValue().getSemantics(), 1);
          reciprocal.divide(divisor.getValue(), APFloat::rmNearestTiesToEven);
          if (reciprocal.isFiniteNonZero()) {
            Value scale = scalarConstant(FloatAttr::get(divisor.getType(), reciprocal));
            Value product = arith::MulFOp::create(builder, loc, mapping.lookupOrDefault(divide.getLhs()),
                                                  scale, divide.getFastmathAttr());
            mapping.map(divide.getResult(), product);
            continue;
          }
        }
      }
      builder.clone(op, mapping);
    }
    for (auto [k, value] : llvm::enumerate(yield.getOperands()))
      results[k].values.push_back(mapping.lookupOrDefault(value));
  }
  return results;
}

FailureOr<SmallVector<Lanes>> ElementalEmitter::emitPayload(linalg::GenericOp generic,
                                                           ArrayRef<LaneIndex> loops,
                                                           ArrayRef<Lanes> accumulators) {
  Block &payload = generic.getRegion().front();
  SmallVector<Lanes> arguments;
  for (OpOperand *input : generic.getDpsInputOperands()) {
    BlockArgument argument = payload.getArgument(input->getOperandNumber());
    if (argument.use_empty()) {
      arguments.push_back({});
      continue;
    }
    if (!llvm::isa<ShapedType>(input->get().getType())) {
      FailureOr<Value> scalar = emitScalar(input->get());
      if (failed(scalar))
        return failure();
      arguments.push_back({{*scalar}});
      continue;
    }
    SmallVector<LaneIndex> at;
    for (AffineExpr expr : generic.getMatchingIndexingMap(input).getResults()) {
      FailureOr<LaneIndex> index = applyExpr(expr, loops);
      if (failed(index))
        return generic->emitError("kiln-gpu-form-kernels: unsupported indexing map"), failure();
      at.push_back(*index);
    }
    FailureOr<Lanes> element = emit(input->get(), at);
    if (failed(element))
      return failure();
    arguments.push_back(*element);
  }
  llvm::append_range(arguments, accumulators);
  return clonePayload(payload, arguments, loops);
}

FailureOr<Lanes> ElementalEmitter::emitGeneric(Operation *op, unsigned resultNumber,
                                               ArrayRef<LaneIndex> indices) {
  auto generic = cast<linalg::GenericOp>(op);
  unsigned numLoops = generic.getNumLoops();
  SmallVector<int64_t> ranges = generic.getStaticLoopRanges();
  SmallVector<utils::IteratorType> iterators = generic.getIteratorTypesArray();
  AffineMap outputMap = generic.getMatchingIndexingMap(generic.getDpsInitOperand(resultNumber));

  SmallVector<std::optional<LaneIndex>> known(numLoops);
  for (auto [j, expr] : llvm::enumerate(outputMap.getResults())) {
    if (auto dim = dyn_cast<AffineDimExpr>(expr))
      known[dim.getPosition()] = indices[j];
    else if (!isa<AffineConstantExpr>(expr))
      return op->emitError("kiln-gpu-form-kernels: results must be indexed by loops"), failure();
  }
  SmallVector<unsigned> reductionLoops;
  for (unsigned d = 0; d < numLoops; ++d) {
    if (known[d])
      continue;
    if (iterators[d] != utils::IteratorType::reduction)
      return op->emitError("kiln-gpu-form-kernels: a parallel loop missing from the result"),
             failure();
    reductionLoops.push_back(d);
  }
  bool uniformResult = llvm::all_of(indices, [](const LaneIndex &i) { return i.isUniform(); });
  int64_t width = uniformResult ? 1 : lanes;

  // The elements of every result's init at the output index.
  auto initValue = [&](unsigned k, ArrayRef<LaneIndex> loops) -> FailureOr<Lanes> {
    OpOperand *init = generic.getDpsInitOperand(k);
    SmallVector<LaneIndex> at;
    for (AffineExpr expr : generic.getMatchingIndexingMap(init).getResults()) {
      FailureOr<LaneIndex> index = applyExpr(expr, loops);
      if (failed(index))
        return failure();
      at.push_back(*index);
    }
    return emit(init->get(), at);
  };

  Block &payload = generic.getRegion().front();
  unsigned numResults = generic.getNumDpsInits();
  if (reductionLoops.empty()) {
    SmallVector<LaneIndex> loops = llvm::map_to_vector(known, [](auto &i) { return *i; });
    SmallVector<Lanes> accumulators;
    for (unsigned k = 0; k < numResults; ++k) {
      if (payload.getArgument(generic.getNumDpsInputs() + k).use_empty()) {
        accumulators.push_back({});
        continue;
      }
      FailureOr<Lanes> init = initValue(k, loops);
      if (failed(init))
        return failure();
      accumulators.push_back(*init);
    }
    FailureOr<SmallVector<Lanes>> results = emitPayload(generic, loops, accumulators);
    if (failed(results))
      return failure();
    for (unsigned k = 0; k < numResults; ++k)
      if (k != resultNumber && generic.getMatchingIndexingMap(generic.getDpsInitOperand(k)) ==
                                   outputMap)
        remember(generic->getResult(k), indices, (*results)[k]);
    return (*results)[resultNumber];
  }

  // A reduction computed by this thread alone: a loop nest over the reduced
  // dimensions carrying every result's partial value, per lane.
  SmallVector<LaneIndex> partialLoops = llvm::map_to_vector(known, [&](auto &i) {
    return i ? *i : constant(0);
  });
  SmallVector<Value> carried;
  for (unsigned k = 0; k < numResults; ++k) {
    FailureOr<Lanes> init = initValue(k, partialLoops);
    if (failed(init))
      return failure();
    for (int64_t l = 0; l < width; ++l)
      carried.push_back(init->lane(l));
  }
  SmallVector<scf::ForOp> nest;
  SmallVector<std::optional<LaneIndex>> loops = known;
  for (unsigned d : reductionLoops) {
    Value lower = indexConstant(0);
    Value upper = indexConstant(ranges[d]);
    Value step = indexConstant(1);
    auto loop = scf::ForOp::create(builder, loc, lower, upper, step, carried);
    builder.setInsertionPointToStart(loop.getBody());
    loops[d] = uniform(loop.getInductionVar());
    carried.assign(loop.getRegionIterArgs().begin(), loop.getRegionIterArgs().end());
    nest.push_back(loop);
  }
  SmallVector<Lanes> accumulators;
  for (unsigned k = 0; k < numResults; ++k) {
    Lanes acc;
    for (int64_t l = 0; l < width; ++l)
      acc.values.push_back(carried[k * width + l]);
    accumulators.push_back(acc);
  }
  SmallVector<LaneIndex> all = llvm::map_to_vector(loops, [](auto &i) { return *i; });
  FailureOr<SmallVector<Lanes>> results = emitPayload(generic, all, accumulators);
  if (failed(results))
    return failure();
  SmallVector<Value> yielded;
  for (unsigned k = 0; k < numResults; ++k)
    for (int64_t l = 0; l < width; ++l)
      yielded.push_back((*results)[k].lane(l));
  for (scf::ForOp loop : llvm::reverse(nest)) {
    builder.setInsertionPointToEnd(loop.getBody());
    scf::YieldOp::create(builder, loc, yielded);
    yielded.assign(loop.getResults().begin(), loop.getResults().end());
  }
  builder.setInsertionPointAfter(nest.front());
  for (unsigned k = 0; k < numResults; ++k) {
    Lanes value;
    for (int64_t l = 0; l < width; ++l)
      value.values.push_back(yielded[k * width + l]);
    if (k == resultNumber)
      continue;
    if (generic.getMatchingIndexingMap(generic.getDpsInitOperand(k)) == outputMap)
      remember(generic->getResult(k), indices, value);
  }
  Lanes value;
  for (int64_t l = 0; l < width; ++l)
    value.values.push_back(yielded[resultNumber * width + l]);
  return value;
}

} // namespace kiln
