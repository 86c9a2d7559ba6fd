//===- FoldConstants.cpp - Evaluate kiln ops on constant operands ---------===//
//
// Numeric constant folding lives here rather than in op folders because it
// has a cost rule (max-elements) and because the importer needs it node by
// node. Element values are handled in three forms: data movement copies
// attributes and so works for every element type; float math runs in double
// and rounds once; integer math runs in int64 and wraps at the result width.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/kiln/KilnOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/APSInt.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <functional>
#include <limits>

namespace kiln {
#define GEN_PASS_DEF_KILNFOLDCONSTANTSPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

RankedTensorType resultType(Operation *op) {
  return llvm::cast<RankedTensorType>(op->getResult(0).getType());
}

SmallVector<int64_t> rowMajorStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

/// Calls `body(resultIndex, multiIndex)` for every element of `shape`.
void forEachIndex(ArrayRef<int64_t> shape,
                  llvm::function_ref<void(int64_t, ArrayRef<int64_t>)> body) {
  int64_t count = ShapedType::getNumElements(shape);
  SmallVector<int64_t> index(shape.size(), 0);
  for (int64_t linear = 0; linear < count; ++linear) {
    body(linear, index);
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
    }
  }
}

/// For each element of `result`, the linear index of the element of an
/// operand of shape `operand` that NumPy broadcasting reads.
SmallVector<int64_t> broadcastSource(ArrayRef<int64_t> result, ArrayRef<int64_t> operand) {
  SmallVector<int64_t> strides = rowMajorStrides(operand);
  size_t offset = result.size() - operand.size();
  SmallVector<int64_t> sources;
  sources.reserve(ShapedType::getNumElements(result));
  forEachIndex(result, [&](int64_t, ArrayRef<int64_t> index) {
    int64_t source = 0;
    for (size_t d = 0; d < operand.size(); ++d)
      if (operand[d] != 1)
        source += index[offset + d] * strides[d];
    sources.push_back(source);
  });
  return sources;
}

/// Result `type` whose element i is element sources[i] of `input`.
DenseElementsAttr gatherElements(DenseElementsAttr input, RankedTensorType type,
                                 ArrayRef<int64_t> sources) {
  if (input.isSplat())
    return DenseElementsAttr::get(type, input.getSplatValue<Attribute>());
  auto values = input.getValues<Attribute>();
  SmallVector<Attribute> out;
  out.reserve(sources.size());
  for (int64_t s : sources)
    out.push_back(values[s]);
  return DenseElementsAttr::get(type, out);
}

//===----------------------------------------------------------------------===//
// Data movement: any element type.
//===----------------------------------------------------------------------===//

DenseElementsAttr foldTranspose(TransposeOp op, DenseElementsAttr input) {
  RankedTensorType type = op.getType();
  SmallVector<int64_t> inStrides = rowMajorStrides(op.getInput().getType().getShape());
  ArrayRef<int64_t> perm = op.getPerm();
  SmallVector<int64_t> sources;
  forEachIndex(type.getShape(), [&](int64_t, ArrayRef<int64_t> index) {
    int64_t source = 0;
    for (size_t d = 0; d < perm.size(); ++d)
      source += index[d] * inStrides[perm[d]];
    sources.push_back(source);
  });
  return gatherElements(input, type, sources);
}

DenseElementsAttr foldSlice(SliceOp op, DenseElementsAttr input) {
  RankedTensorType type = op.getType();
  SmallVector<int64_t> inStrides = rowMajorStrides(op.getInput().getType().getShape());
  SmallVector<int64_t> sources;
  forEachIndex(type.getShape(), [&](int64_t, ArrayRef<int64_t> index) {
    int64_t source = 0;
    for (size_t d = 0; d < index.size(); ++d)
      source += (op.getStart()[d] + index[d] * op.getStep()[d]) * inStrides[d];
    sources.push_back(source);
  });
  return gatherElements(input, type, sources);
}

DenseElementsAttr foldExpand(ExpandOp op, DenseElementsAttr input) {
  return gatherElements(input, op.getType(),
                        broadcastSource(op.getType().getShape(),
                                        op.getInput().getType().getShape()));
}

DenseElementsAttr foldGather(GatherOp op, DenseElementsAttr data, DenseElementsAttr indices) {
  ArrayRef<int64_t> dataShape = op.getData().getType().getShape();
  int64_t axis = op.getAxis();
  int64_t extent = dataShape[axis];
  SmallVector<int64_t> index;
  for (const APInt &i : indices.getValues<APInt>()) {
    int64_t v = i.getSExtValue();
    if (v < 0)
      v += extent;
    if (v < 0 || v >= extent)
      return {}; // out of range: the run-time lowering decides
    index.push_back(v);
  }
  // result = data[:axis] x indices x data[axis+1:]
  int64_t outer = ShapedType::getNumElements(dataShape.take_front(axis));
  int64_t inner = ShapedType::getNumElements(dataShape.drop_front(axis + 1));
  SmallVector<int64_t> sources;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i : index)
      for (int64_t n = 0; n < inner; ++n)
        sources.push_back((o * extent + i) * inner + n);
  return gatherElements(data, op.getType(), sources);
}

DenseElementsAttr foldConcat(ConcatOp op, ArrayRef<DenseElementsAttr> inputs) {
  RankedTensorType type = op.getType();
  int64_t axis = op.getAxis();
  int64_t outer = ShapedType::getNumElements(type.getShape().take_front(axis));
  SmallVector<Attribute> out;
  out.reserve(type.getNumElements());
  SmallVector<SmallVector<Attribute>> values;
  for (DenseElementsAttr input : inputs)
    values.emplace_back(input.getValues<Attribute>());
  for (int64_t o = 0; o < outer; ++o) {
    for (auto [input, value] : llvm::zip(op.getInputs(), values)) {
      auto shape = llvm::cast<RankedTensorType>(input.getType()).getShape();
      int64_t chunk = ShapedType::getNumElements(shape.drop_front(axis));
      out.append(value.begin() + o * chunk, value.begin() + (o + 1) * chunk);
    }
  }
  return DenseElementsAttr::get(type, out);
}

//===----------------------------------------------------------------------===//
// Elementwise math.
//===----------------------------------------------------------------------===//

/// One element of a float or integer tensor.
struct Scalar {
  double f = 0;
  int64_t i = 0;
};

SmallVector<Scalar> readScalars(DenseElementsAttr attr) {
  SmallVector<Scalar> out;
  Type element = attr.getElementType();
  if (llvm::isa<FloatType>(element)) {
    for (APFloat v : attr.getValues<APFloat>()) {
      bool lost;
      v.convert(APFloat::IEEEdouble(), APFloat::rmNearestTiesToEven, &lost);
      out.push_back({v.convertToDouble(), 0});
    }
  } else {
    bool isBool = element.isInteger(1);
    for (const APInt &v : attr.getValues<APInt>())
      out.push_back({0, isBool ? static_cast<int64_t>(v.getZExtValue()) : v.getSExtValue()});
  }
  return out;
}

DenseElementsAttr writeScalars(RankedTensorType type, ArrayRef<Scalar> values) {
  Type element = type.getElementType();
  if (auto floatType = llvm::dyn_cast<FloatType>(element)) {
    SmallVector<APFloat> out;
    for (const Scalar &s : values) {
      APFloat v(s.f);
      bool lost;
      v.convert(floatType.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
      out.push_back(v);
    }
    return DenseElementsAttr::get(type, out);
  }
  unsigned width = element.getIntOrFloatBitWidth();
  SmallVector<APInt> out;
  for (const Scalar &s : values)
    out.push_back(width == 1 ? APInt(1, s.i != 0)
                             : APInt(width, static_cast<uint64_t>(s.i), /*isSigned=*/false,
                                     /*implicitTrunc=*/true));
  return DenseElementsAttr::get(type, out);
}

using FloatUnary = std::function<double(double)>;
using IntUnary = std::function<int64_t(int64_t)>;

/// The scalar functions of unary ops; either may be empty.
std::pair<FloatUnary, IntUnary> unaryFunctions(Operation *op) {
  auto sign = [](auto x) -> decltype(x) { return (x > 0) - (x < 0); };
  return TypeSwitch<Operation *, std::pair<FloatUnary, IntUnary>>(op)
      .Case([&](AbsOp) {
        return std::make_pair(FloatUnary([](double x) { return std::fabs(x); }),
                              IntUnary([](int64_t x) { return x < 0 ? -x : x; }));
      })
      .Case([&](NegOp) {
        return std::make_pair(FloatUnary([](double x) { return -x; }),
                              IntUnary([](int64_t x) { return -x; }));
      })
      .Case([&](SignOp) {
        return std::make_pair(FloatUnary([=](double x) { return sign(x); }),
                              IntUnary([=](int64_t x) { return sign(x); }));
      })
      .Case([&](ReluOp) {
        return std::make_pair(FloatUnary([](double x) { return x > 0 ? x : 0.0; }),
                              IntUnary([](int64_t x) { return x > 0 ? x : 0; }));
      })
      .Case([&](NotOp) {
        return std::make_pair(FloatUnary(), IntUnary([](int64_t x) { return int64_t(!x); }));
      })
      .Case([&](ExpOp) { return std::make_pair(FloatUnary(::exp), IntUnary()); })
      .Case([&](LogOp) { return std::make_pair(FloatUnary(::log), IntUnary()); })
      .Case([&](SqrtOp) { return std::make_pair(FloatUnary(::sqrt), IntUnary()); })
      .Case([&](TanhOp) { return std::make_pair(FloatUnary(::tanh), IntUnary()); })
      .Case([&](ErfOp) { return std::make_pair(FloatUnary(::erf), IntUnary()); })
      .Case([&](FloorOp) { return std::make_pair(FloatUnary(::floor), IntUnary()); })
      .Case([&](CeilOp) { return std::make_pair(FloatUnary(::ceil), IntUnary()); })
      .Case([&](RoundOp) { return std::make_pair(FloatUnary(::nearbyint), IntUnary()); })
      .Case([&](SinOp) { return std::make_pair(FloatUnary(::sin), IntUnary()); })
      .Case([&](CosOp) { return std::make_pair(FloatUnary(::cos), IntUnary()); })
      .Case([&](ReciprocalOp) {
        return std::make_pair(FloatUnary([](double x) { return 1.0 / x; }), IntUnary());
      })
      .Case([&](SigmoidOp) {
        return std::make_pair(FloatUnary([](double x) { return 1.0 / (1.0 + std::exp(-x)); }),
                              IntUnary());
      })
      .Default([](Operation *) { return std::make_pair(FloatUnary(), IntUnary()); });
}

using FloatBinary = std::function<double(double, double)>;
/// Integer functions return nullopt where the result is undefined.
using IntBinary = std::function<std::optional<int64_t>(int64_t, int64_t)>;

std::pair<FloatBinary, IntBinary> binaryFunctions(Operation *op) {
  using R = std::optional<int64_t>;
  auto pair = [](FloatBinary f, IntBinary i) { return std::make_pair(f, i); };
  auto wrap = [](auto fn) {
    // Two's-complement wrap-around, as the generated code computes it.
    return [fn](int64_t a, int64_t b) -> R {
      return static_cast<int64_t>(fn(static_cast<uint64_t>(a), static_cast<uint64_t>(b)));
    };
  };
  return TypeSwitch<Operation *, std::pair<FloatBinary, IntBinary>>(op)
      .Case([&](AddOp) {
        return pair(std::plus<double>(), wrap(std::plus<uint64_t>()));
      })
      .Case([&](SubOp) {
        return pair(std::minus<double>(), wrap(std::minus<uint64_t>()));
      })
      .Case([&](MulOp) {
        return pair(std::multiplies<double>(), wrap(std::multiplies<uint64_t>()));
      })
      .Case([&](DivOp) {
        return pair(std::divides<double>(), [](int64_t a, int64_t b) -> R {
          if (b == 0 || (a == INT64_MIN && b == -1))
            return std::nullopt;
          return a / b;
        });
      })
      .Case([&](ModOp mod) {
        // fmod: the remainder takes the dividend's sign (C's fmod); otherwise
        // the divisor's (Python's %), as ONNX Mod says.
        bool truncated = mod.getFmod();
        return pair(
            truncated ? FloatBinary(::fmod) : FloatBinary(),
            [truncated](int64_t a, int64_t b) -> R {
              if (b == 0 || (a == INT64_MIN && b == -1))
                return std::nullopt;
              int64_t r = a % b;
              if (!truncated && r != 0 && ((r < 0) != (b < 0)))
                r += b;
              return r;
            });
      })
      .Case([&](MaxOp) {
        return pair([](double a, double b) { return std::isnan(a) || a > b ? a : b; },
                    [](int64_t a, int64_t b) -> R { return std::max(a, b); });
      })
      .Case([&](MinOp) {
        return pair([](double a, double b) { return std::isnan(a) || a < b ? a : b; },
                    [](int64_t a, int64_t b) -> R { return std::min(a, b); });
      })
      .Case([&](PowOp) { return pair(FloatBinary(::pow), IntBinary()); })
      .Case([&](AndOp) {
        return pair(FloatBinary(), [](int64_t a, int64_t b) -> R { return a && b; });
      })
      .Case([&](OrOp) {
        return pair(FloatBinary(), [](int64_t a, int64_t b) -> R { return a || b; });
      })
      .Case([&](XorOp) {
        return pair(FloatBinary(), [](int64_t a, int64_t b) -> R { return (a != 0) != (b != 0); });
      })
      .Default([](Operation *) { return std::make_pair(FloatBinary(), IntBinary()); });
}

/// Comparisons as a function of (a < b, a == b) that is false on NaN.
std::function<bool(bool, bool)> comparison(Operation *op) {
  return TypeSwitch<Operation *, std::function<bool(bool, bool)>>(op)
      .Case([](EqualOp) { return [](bool, bool eq) { return eq; }; })
      .Case([](LessOp) { return [](bool lt, bool) { return lt; }; })
      .Case([](LessEqualOp) { return [](bool lt, bool eq) { return lt || eq; }; })
      .Case([](GreaterOp) { return [](bool lt, bool eq) { return !lt && !eq; }; })
      .Case([](GreaterEqualOp) { return [](bool lt, bool) { return !lt; }; })
      .Default([](Operation *) { return nullptr; });
}

DenseElementsAttr foldUnary(Operation *op, DenseElementsAttr input) {
  auto [floatFn, intFn] = unaryFunctions(op);
  bool isFloat = llvm::isa<FloatType>(input.getElementType());
  if ((isFloat && !floatFn) || (!isFloat && !intFn))
    return {};
  SmallVector<Scalar> values = readScalars(input);
  for (Scalar &s : values) {
    if (isFloat)
      s.f = floatFn(s.f);
    else
      s.i = intFn(s.i);
  }
  return writeScalars(resultType(op), values);
}

/// Folds an integer op with `is_unsigned` whose operands `at(operand, i)`
/// returns zero-extended; division by zero is left to run time.
DenseElementsAttr foldUnsigned(Operation *op, RankedTensorType type, int64_t count,
                               function_ref<Scalar(size_t, int64_t)> at) {
  SmallVector<Scalar> out(count);
  auto compare = comparison(op);
  for (int64_t i = 0; i < count; ++i) {
    auto a = static_cast<uint64_t>(at(0, i).i), b = static_cast<uint64_t>(at(1, i).i);
    std::optional<uint64_t> r;
    if (compare)
      r = compare(a < b, a == b);
    else if (isa<MaxOp>(op))
      r = std::max(a, b);
    else if (isa<MinOp>(op))
      r = std::min(a, b);
    else if (isa<DivOp, ModOp>(op) && b != 0)
      r = isa<DivOp>(op) ? a / b : a % b;
    if (!r)
      return {};
    out[i].i = static_cast<int64_t>(*r);
  }
  return writeScalars(type, out);
}

DenseElementsAttr foldBroadcast(Operation *op, ArrayRef<DenseElementsAttr> operands) {
  RankedTensorType type = resultType(op);
  SmallVector<SmallVector<Scalar>> values;
  SmallVector<SmallVector<int64_t>> sources;
  for (DenseElementsAttr operand : operands) {
    values.push_back(readScalars(operand));
    sources.push_back(broadcastSource(type.getShape(),
                                      llvm::cast<ShapedType>(operand.getType()).getShape()));
  }
  int64_t count = type.getNumElements();
  SmallVector<Scalar> out(count);
  auto at = [&](size_t operand, int64_t i) { return values[operand][sources[operand][i]]; };

  if (llvm::isa<WhereOp>(op)) {
    for (int64_t i = 0; i < count; ++i)
      out[i] = at(0, i).i ? at(1, i) : at(2, i);
    return writeScalars(type, out);
  }
  bool isFloat = llvm::isa<FloatType>(operands[0].getElementType());
  if (!isFloat && op->hasAttr("is_unsigned")) {
    // Integers read as unsigned: zero-extended to 64 bits.
    unsigned width = operands[0].getElementType().getIntOrFloatBitWidth();
    uint64_t mask = width >= 64 ? ~uint64_t(0) : (uint64_t(1) << width) - 1;
    for (SmallVector<Scalar> &operandValues : values)
      for (Scalar &v : operandValues)
        v.i = static_cast<int64_t>(static_cast<uint64_t>(v.i) & mask);
    return foldUnsigned(op, type, count, at);
  }
  if (auto compare = comparison(op)) {
    for (int64_t i = 0; i < count; ++i) {
      Scalar a = at(0, i), b = at(1, i);
      out[i].i = isFloat ? (!std::isnan(a.f) && !std::isnan(b.f) && compare(a.f < b.f, a.f == b.f))
                         : compare(a.i < b.i, a.i == b.i);
    }
    return writeScalars(type, out);
  }
  auto [floatFn, intFn] = binaryFunctions(op);
  if ((isFloat && !floatFn) || (!isFloat && !intFn))
    return {};
  for (int64_t i = 0; i < count; ++i) {
    Scalar a = at(0, i), b = at(1, i);
    if (isFloat) {
      out[i].f = floatFn(a.f, b.f);
      continue;
    }
    std::optional<int64_t> r = intFn(a.i, b.i);
    if (!r)
      return {};
    out[i].i = *r;
  }
  return writeScalars(type, out);
}

DenseElementsAttr foldCast(CastOp op, DenseElementsAttr input) {
  RankedTensorType type = op.getType();
  Type from = input.getElementType(), to = type.getElementType();
  if (auto toFloat = llvm::dyn_cast<FloatType>(to)) {
    SmallVector<APFloat> out;
    if (llvm::isa<FloatType>(from)) {
      for (APFloat v : input.getValues<APFloat>()) {
        bool lost;
        v.convert(toFloat.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
        out.push_back(v);
      }
    } else {
      bool isSigned = !from.isInteger(1) && !op.getUnsignedInput();
      for (const APInt &i : input.getValues<APInt>()) {
        APFloat v(toFloat.getFloatSemantics());
        v.convertFromAPInt(i, isSigned, APFloat::rmNearestTiesToEven);
        out.push_back(v);
      }
    }
    return DenseElementsAttr::get(type, out);
  }
  unsigned width = to.getIntOrFloatBitWidth();
  SmallVector<APInt> out;
  if (llvm::isa<FloatType>(from)) {
    for (const APFloat &v : input.getValues<APFloat>()) {
      if (width == 1) {
        out.push_back(APInt(1, !v.isZero()));
        continue;
      }
      APSInt result(width, /*isUnsigned=*/op.getUnsignedOutput());
      bool exact;
      if (v.convertToInteger(result, APFloat::rmTowardZero, &exact) & APFloat::opInvalidOp)
        return {}; // NaN or out of range: undefined, leave it to run time
      out.push_back(result);
    }
  } else {
    bool isSigned = !from.isInteger(1) && !op.getUnsignedInput();
    for (const APInt &v : input.getValues<APInt>())
      out.push_back(width == 1 ? APInt(1, !v.isZero())
                               : (isSigned ? v.sextOrTrunc(width) : v.zextOrTrunc(width)));
  }
  return DenseElementsAttr::get(type, out);
}

/// Sum, product, max and min over `axes`; other reductions stay at run time.
template <typename ReduceOp>
DenseElementsAttr foldReduce(ReduceOp op, DenseElementsAttr input) {
  ArrayRef<int64_t> shape = op.getInput().getType().getShape();
  ArrayRef<int64_t> axes = op.getAxes();
  // Result index of an input element: its index with the reduced dims dropped.
  SmallVector<int64_t> keptStride(shape.size(), 0);
  int64_t stride = 1;
  for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
    if (llvm::is_contained(axes, d))
      continue;
    keptStride[d] = stride;
    stride *= shape[d];
  }
  SmallVector<Scalar> in = readScalars(input);
  // A result that reduces no element is the reduction's identity (ONNX:
  // the element type's lowest value for max, its highest for min).
  Scalar identity;
  Type element = op.getType().getElementType();
  unsigned width = llvm::isa<FloatType>(element) ? 64 : element.getIntOrFloatBitWidth();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if constexpr (std::is_same_v<ReduceOp, ReduceProdOp>)
    identity = {1, 1};
  else if constexpr (std::is_same_v<ReduceOp, ReduceMaxOp>)
    identity = {-kInf, APInt::getSignedMinValue(width).getSExtValue()};
  else if constexpr (std::is_same_v<ReduceOp, ReduceMinOp>)
    identity = {kInf, APInt::getSignedMaxValue(width).getSExtValue()};
  SmallVector<Scalar> out(op.getType().getNumElements(), identity);
  SmallVector<bool> seen(out.size(), false);
  forEachIndex(shape, [&](int64_t linear, ArrayRef<int64_t> index) {
    int64_t target = 0;
    for (size_t d = 0; d < index.size(); ++d)
      target += index[d] * keptStride[d];
    Scalar &acc = out[target];
    const Scalar &v = in[linear];
    if (!seen[target]) {
      seen[target] = true;
      acc = v;
      return;
    }
    if constexpr (std::is_same_v<ReduceOp, ReduceSumOp>) {
      acc.f += v.f;
      acc.i = static_cast<int64_t>(static_cast<uint64_t>(acc.i) + static_cast<uint64_t>(v.i));
    } else if constexpr (std::is_same_v<ReduceOp, ReduceProdOp>) {
      acc.f *= v.f;
      acc.i = static_cast<int64_t>(static_cast<uint64_t>(acc.i) * static_cast<uint64_t>(v.i));
    } else if constexpr (std::is_same_v<ReduceOp, ReduceMaxOp>) {
      acc.f = std::isnan(acc.f) || acc.f > v.f ? acc.f : v.f;
      acc.i = std::max(acc.i, v.i);
    } else {
      acc.f = std::isnan(acc.f) || acc.f < v.f ? acc.f : v.f;
      acc.i = std::min(acc.i, v.i);
    }
  });
  return writeScalars(op.getType(), out);
}

/// The result of the single-result op `op` computed from its constant
/// operands, or null.
DenseElementsAttr evaluate(Operation *op, ArrayRef<DenseElementsAttr> in) {
  return TypeSwitch<Operation *, DenseElementsAttr>(op)
      .Case<ReshapeOp, SqueezeOp, UnsqueezeOp, FlattenOp>(
          [&](auto) { return DenseElementsAttr(in[0]).reshape(resultType(op)); })
      .Case([&](TransposeOp t) { return foldTranspose(t, in[0]); })
      .Case([&](SliceOp s) { return foldSlice(s, in[0]); })
      .Case([&](ExpandOp e) { return foldExpand(e, in[0]); })
      .Case([&](GatherOp g) { return foldGather(g, in[0], in[1]); })
      .Case([&](ConcatOp c) { return foldConcat(c, in); })
      .Case([&](CastOp c) { return foldCast(c, in[0]); })
      .Case<ReduceSumOp, ReduceProdOp, ReduceMaxOp, ReduceMinOp>(
          [&](auto r) { return foldReduce(r, in[0]); })
      .Case<AbsOp, NegOp, SignOp, ReluOp, NotOp, ExpOp, LogOp, SqrtOp, TanhOp, ErfOp,
            FloorOp, CeilOp, RoundOp, SinOp, CosOp, ReciprocalOp, SigmoidOp>(
          [&](auto) { return foldUnary(op, in[0]); })
      .Case<AddOp, SubOp, MulOp, DivOp, ModOp, MaxOp, MinOp, PowOp, AndOp, OrOp, XorOp,
            EqualOp, LessOp, LessEqualOp, GreaterOp, GreaterEqualOp, WhereOp>(
          [&](auto) { return foldBroadcast(op, in); })
      .Default([](Operation *) { return DenseElementsAttr(); });
}

} // namespace

FailureOr<SmallVector<Value>> foldToConstants(OpBuilder &builder, Operation *op,
                                              int64_t maxElements) {
  if (llvm::isa<ConstantOp>(op) || !llvm::isa<KilnDialect>(op->getDialect()) ||
      op->getNumResults() != 1)
    return failure();
  auto type = llvm::dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!type || !type.hasStaticShape())
    return failure();
  // A result with no elements is known from its type alone; a product
  // over an empty dimension is zero. Kernels then never see empty loops.
  if (type.getNumElements() == 0 && isMemoryEffectFree(op))
    return SmallVector<Value>{ConstantOp::create(
        builder, op->getLoc(), DenseElementsAttr::get(type, ArrayRef<Attribute>{}))};
  if (auto matmul = llvm::dyn_cast<MatMulOp>(op);
      matmul && matmul.getLhs().getType().getShape().back() == 0)
    return SmallVector<Value>{ConstantOp::create(
        builder, op->getLoc(),
        DenseElementsAttr::get(type, builder.getZeroAttr(type.getElementType())))};
  if (type.getNumElements() > maxElements)
    return failure();
  SmallVector<DenseElementsAttr> operands;
  for (Value operand : op->getOperands()) {
    DenseElementsAttr attr;
    if (!matchPattern(operand, m_Constant(&attr)))
      return failure();
    operands.push_back(attr);
  }
  DenseElementsAttr result = evaluate(op, operands);
  if (!result)
    return failure();
  return SmallVector<Value>{ConstantOp::create(builder, op->getLoc(), result)};
}

namespace {
struct KilnFoldConstantsPass : impl::KilnFoldConstantsPassBase<KilnFoldConstantsPass> {
  using Base::Base;
  void runOnOperation() override {
    OpBuilder builder(&getContext());
    // Program order, so a chain of constant ops folds in one sweep.
    getOperation().walk([&](Operation *op) {
      builder.setInsertionPoint(op);
      FailureOr<SmallVector<Value>> folded = foldToConstants(builder, op, maxElements);
      if (failed(folded))
        return;
      op->replaceAllUsesWith(*folded);
      op->erase();
    });
  }
};
} // namespace

} // namespace kiln
