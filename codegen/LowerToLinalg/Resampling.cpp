//===- Resampling.cpp - Lowering of pads, resizes and grid samples --------===//
//
// Pad, Resize and GridSample compute each result element from input elements at
// coordinates derived from the element's own: one generic over the result
// (generateFromIndices) whose body works the coordinates out and reads the
// input with tensor.extract, clamped so that no read leaves the input. The
// loops stay parallel and tileable on every back end.
//
//===----------------------------------------------------------------------===//
#include "codegen/LowerToLinalg/Utils.h"
#include "dialects/kiln/KilnOps.h"

#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;

namespace kiln {
namespace {

Value indexConstant(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

// Each result coordinate minus the amount padded before it is the input
// coordinate, brought back into the input as the mode says; in constant
// mode an element whose coordinate falls outside is the constant.
struct PadLowering : OpRewritePattern<PadOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PadOp op, PatternRewriter &rewriter) const override {
    RankedTensorType input = op.getInput().getType();
    ArrayRef<int64_t> pads = op.getPads();
    int64_t rank = input.getRank();
    StringRef mode = op.getMode();
    Value fill = op.getValue();
    Value padded = generateFromIndices(
        rewriter, op.getLoc(), op.getType(),
        [&](OpBuilder &b, Location loc, SmallVector<Value> &coords) -> Value {
          Value outside; // constant mode: outside the input in some dimension
          for (int64_t d = 0; d < rank; ++d) {
            int64_t size = input.getDimSize(d), before = pads[d], after = pads[rank + d];
            Value x = coords[d];
            if (before != 0)
              x = arith::SubIOp::create(b, loc, x, indexConstant(b, loc, before));
            if (before <= 0 && after <= 0) {
              coords[d] = x;
              continue;
            }
            Value zero = indexConstant(b, loc, 0), last = indexConstant(b, loc, size - 1);
            Value below = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, x, zero);
            Value above = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, x, last);
            if (mode == "constant") {
              Value out = arith::OrIOp::create(b, loc, below, above);
              outside = outside ? Value(arith::OrIOp::create(b, loc, outside, out)) : out;
              x = clampIndex(b, loc, x, size);
            } else if (mode == "edge") {
              x = clampIndex(b, loc, x, size);
            } else if (mode == "reflect") {
              // -x before the first element, 2 (size - 1) - x after the last.
              Value mirroredLow = arith::SubIOp::create(b, loc, zero, x);
              Value mirroredHigh =
                  arith::SubIOp::create(b, loc, indexConstant(b, loc, 2 * (size - 1)), x);
              x = arith::SelectOp::create(b, loc, below, mirroredLow, x);
              x = arith::SelectOp::create(b, loc, above, mirroredHigh, x);
              x = clampIndex(b, loc, x, size);
            } else { // wrap
              Value n = indexConstant(b, loc, size);
              x = arith::SelectOp::create(b, loc, below, arith::AddIOp::create(b, loc, x, n), x);
              x = arith::SelectOp::create(b, loc, above, arith::SubIOp::create(b, loc, x, n), x);
              x = clampIndex(b, loc, x, size);
            }
            coords[d] = x;
          }
          Value value = tensor::ExtractOp::create(b, loc, op.getInput(), coords);
          if (!outside)
            return value;
          Value constant;
          if (fill) {
            auto fillType = cast<RankedTensorType>(fill.getType());
            SmallVector<Value> origin(fillType.getRank(), indexConstant(b, loc, 0));
            constant = tensor::ExtractOp::create(b, loc, fill, origin);
          } else {
            constant = scalarConstant(b, loc, input.getElementType(), 0);
          }
          return arith::SelectOp::create(b, loc, outside, constant, value);
        });
    rewriter.replaceOp(op, padded);
    return success();
  }
};

/// How one dimension of a resize maps result coordinates to input ones.
struct ResizeAxis {
  int64_t in, out;
  double scale;
  double roiStart = 0, roiEnd = 1;
  /// Result element i reads input element i (a dimension not resized).
  bool identity() const { return in == out && scale == 1.0; }
};

/// ONNX's input coordinate of result coordinate `i` (f64) for `mode`.
Value inputCoordinate(OpBuilder &b, Location loc, Value i, const ResizeAxis &axis,
                      StringRef mode) {
  Type f64 = b.getF64Type();
  auto c = [&](double v) { return scalarConstant(b, loc, f64, v); };
  double width = axis.scale * axis.in; // as ONNX's reference: the unrounded result size
  auto halfPixel = [&]() {
    Value x = arith::AddFOp::create(b, loc, i, c(0.5));
    x = arith::DivFOp::create(b, loc, x, c(axis.scale));
    return arith::SubFOp::create(b, loc, x, c(0.5));
  };
  if (mode == "half_pixel")
    return halfPixel();
  if (mode == "tf_half_pixel_for_nn")
    return arith::DivFOp::create(b, loc, arith::AddFOp::create(b, loc, i, c(0.5)), c(axis.scale));
  if (mode == "half_pixel_symmetric") {
    double adjustment = axis.out / width, center = axis.in / 2.0;
    return arith::AddFOp::create(b, loc, halfPixel(), c(center * (1 - adjustment)));
  }
  if (mode == "pytorch_half_pixel")
    return axis.out > 1 ? halfPixel() : c(0);
  if (mode == "align_corners")
    return width == 1 ? c(0)
                      : arith::MulFOp::create(b, loc, i, c((axis.in - 1) / (width - 1)));
  if (mode == "asymmetric")
    return arith::DivFOp::create(b, loc, i, c(axis.scale));
  // tf_crop_and_resize
  double span = (axis.roiEnd - axis.roiStart) * (axis.in - 1);
  Value x = width == 1 ? c(span / 2) : arith::MulFOp::create(b, loc, i, c(span / (width - 1)));
  return arith::AddFOp::create(b, loc, x, c(axis.roiStart * (axis.in - 1)));
}

/// The weights of the 4 cubic neighbours floor(x) - 1 .. floor(x) + 2 at
/// fraction `r` = x - floor(x), with coefficient `a` (Keys' kernel).
SmallVector<Value> cubicWeights(OpBuilder &b, Location loc, Value r, double a) {
  Type f64 = b.getF64Type();
  auto c = [&](double v) { return scalarConstant(b, loc, f64, v); };
  auto add = [&](Value x, Value y) { return Value(arith::AddFOp::create(b, loc, x, y)); };
  auto sub = [&](Value x, Value y) { return Value(arith::SubFOp::create(b, loc, x, y)); };
  auto mul = [&](Value x, Value y) { return Value(arith::MulFOp::create(b, loc, x, y)); };
  // |t| in [1, 2): ((a|t| - 5a)|t| + 8a)|t| - 4a; |t| < 1: ((a+2)|t| - (a+3))t² + 1.
  auto far = [&](Value t) {
    return sub(mul(add(mul(sub(mul(c(a), t), c(5 * a)), t), c(8 * a)), t), c(4 * a));
  };
  auto near = [&](Value t) {
    return add(mul(sub(mul(c(a + 2), t), c(a + 3)), mul(t, t)), c(1));
  };
  Value s = sub(c(1), r);
  return {far(add(r, c(1))), near(r), near(s), far(add(s, c(1)))};
}

// Nearest: each resized coordinate rounded as nearest_mode says. Linear and
// cubic: a weighted sum over the 2 or 4 neighbours of each resized
// dimension, every combination (2^k or 4^k terms for k resized
// dimensions), computed in f64 as ONNX's reference does.
struct ResizeLowering : OpRewritePattern<ResizeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ResizeOp op, PatternRewriter &rewriter) const override {
    RankedTensorType input = op.getInput().getType(), result = op.getType();
    int64_t rank = input.getRank();
    StringRef mode = op.getMode(), coordinates = op.getCoordinateMode(),
              nearest = op.getNearestMode();
    bool crop = coordinates == "tf_crop_and_resize";
    SmallVector<ResizeAxis> axes;
    for (int64_t d = 0; d < rank; ++d) {
      ResizeAxis axis{input.getDimSize(d), result.getDimSize(d), op.getScales()[d]};
      if (crop) {
        axis.roiStart = (*op.getRoi())[d];
        axis.roiEnd = (*op.getRoi())[rank + d];
      }
      axes.push_back(axis);
    }
    Type element = input.getElementType(), f64 = rewriter.getF64Type();
    double a = op.getCubicCoeffA().convertToDouble();
    bool excludeOutside = op.getExcludeOutside();

    Value resized = generateFromIndices(
        rewriter, op.getLoc(), result,
        [&](OpBuilder &b, Location loc, SmallVector<Value> &coords) -> Value {
          auto c = [&](double v) { return scalarConstant(b, loc, f64, v); };
          Value outside; // tf_crop_and_resize: some coordinate left the input
          // Per resized dimension: its neighbours' indices and weights.
          SmallVector<int64_t> resizedDims;
          SmallVector<SmallVector<Value>> taps, weights;
          for (int64_t d = 0; d < rank; ++d) {
            const ResizeAxis &axis = axes[d];
            if (axis.identity() && !crop)
              continue;
            Value i = arith::SIToFPOp::create(
                b, loc, f64, arith::IndexCastOp::create(b, loc, b.getI64Type(), coords[d]));
            Value x = inputCoordinate(b, loc, i, axis, coordinates);
            if (crop) {
              Value low = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x, c(0));
              Value high =
                  arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x, c(axis.in - 1));
              Value out = arith::OrIOp::create(b, loc, low, high);
              outside = outside ? Value(arith::OrIOp::create(b, loc, outside, out)) : out;
            }
            Value floor = math::FloorOp::create(b, loc, x);
            Value r = arith::SubFOp::create(b, loc, x, floor);
            auto toIndex = [&](Value v) {
              Value i64 = arith::FPToSIOp::create(b, loc, b.getI64Type(), v);
              return Value(arith::IndexCastOp::create(b, loc, b.getIndexType(), i64));
            };
            Value base = toIndex(floor);
            if (mode == "nearest") {
              Value up;
              if (nearest == "floor")
                up = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 0);
              else if (nearest == "ceil")
                up = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, r, c(0));
              else if (nearest == "round_prefer_floor")
                up = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, r, c(0.5));
              else
                up = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGE, r, c(0.5));
              Value next = arith::AddIOp::create(b, loc, base, indexConstant(b, loc, 1));
              coords[d] = clampIndex(b, loc, arith::SelectOp::create(b, loc, up, next, base),
                                     axis.in);
              continue;
            }
            SmallVector<int64_t> offsets = mode == "linear" ? SmallVector<int64_t>{0, 1}
                                                            : SmallVector<int64_t>{-1, 0, 1, 2};
            SmallVector<Value> w = mode == "linear"
                                       ? SmallVector<Value>{arith::SubFOp::create(b, loc, c(1), r), r}
                                       : cubicWeights(b, loc, r, a);
            SmallVector<Value> idx;
            Value total;
            for (auto [t, offset] : llvm::enumerate(offsets)) {
              Value at = arith::AddIOp::create(b, loc, base, indexConstant(b, loc, offset));
              if (excludeOutside) {
                Value ge = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, at,
                                                 indexConstant(b, loc, 0));
                Value lt = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, at,
                                                 indexConstant(b, loc, axis.in));
                Value in = arith::AndIOp::create(b, loc, ge, lt);
                w[t] = arith::SelectOp::create(b, loc, in, w[t], c(0));
                total = total ? Value(arith::AddFOp::create(b, loc, total, w[t])) : w[t];
              }
              idx.push_back(clampIndex(b, loc, at, axis.in));
            }
            if (excludeOutside)
              for (Value &weight : w)
                weight = arith::DivFOp::create(b, loc, weight, total);
            resizedDims.push_back(d);
            taps.push_back(idx);
            weights.push_back(w);
          }

          Value value;
          if (mode == "nearest") {
            value = tensor::ExtractOp::create(b, loc, op.getInput(), coords);
          } else {
            // Every combination of one neighbour per resized dimension.
            int64_t width = mode == "linear" ? 2 : 4, combinations = 1;
            for (size_t k = 0; k < resizedDims.size(); ++k)
              combinations *= width;
            Value sum = c(0);
            for (int64_t combo = 0; combo < combinations; ++combo) {
              Value weight;
              int64_t rest = combo;
              for (auto [k, d] : llvm::enumerate(resizedDims)) {
                int64_t t = rest % width;
                rest /= width;
                coords[d] = taps[k][t];
                weight = weight ? Value(arith::MulFOp::create(b, loc, weight, weights[k][t]))
                                : weights[k][t];
              }
              Value x = convertScalar(b, loc,
                                      tensor::ExtractOp::create(b, loc, op.getInput(), coords), f64);
              Value term = weight ? Value(arith::MulFOp::create(b, loc, weight, x)) : x;
              sum = arith::AddFOp::create(b, loc, sum, term);
            }
            value = convertScalar(b, loc, sum, element);
          }
          if (outside)
            value = arith::SelectOp::create(
                b, loc, outside,
                scalarConstant(b, loc, element, op.getExtrapolationValue().convertToDouble()),
                value);
          return value;
        });
    rewriter.replaceOp(op, resized);
    return success();
  }
};

// GridSample, as PyTorch's grid_sampler_2d: each result element reads its
// (x, y) from the grid, maps it to input coordinates, applies the padding
// mode to them (to each of the 16 taps' for bicubic), and reads the
// neighbours, zero outside the input. Coordinates are computed in f64.
struct GridSampleLowering : OpRewritePattern<GridSampleOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GridSampleOp op, PatternRewriter &rewriter) const override {
    RankedTensorType input = op.getInput().getType();
    int64_t height = input.getDimSize(2), width = input.getDimSize(3);
    StringRef mode = op.getMode(), padding = op.getPaddingMode();
    bool aligned = op.getAlignCorners();
    Type element = input.getElementType(), f64 = rewriter.getF64Type();
    Value sampled = generateFromIndices(
        rewriter, op.getLoc(), op.getType(),
        [&](OpBuilder &b, Location loc, SmallVector<Value> &coords) -> Value {
          auto c = [&](double v) { return scalarConstant(b, loc, f64, v); };
          auto add = [&](Value x, Value y) { return Value(arith::AddFOp::create(b, loc, x, y)); };
          auto sub = [&](Value x, Value y) { return Value(arith::SubFOp::create(b, loc, x, y)); };
          auto mul = [&](Value x, Value y) { return Value(arith::MulFOp::create(b, loc, x, y)); };
          auto floor = [&](Value x) { return Value(math::FloorOp::create(b, loc, x)); };
          auto clamp = [&](Value x, double lo, double hi) {
            x = arith::MaximumFOp::create(b, loc, x, c(lo));
            return Value(arith::MinimumFOp::create(b, loc, x, c(hi)));
          };
          // A grid coordinate in input pixels.
          auto unnormalize = [&](int64_t component, int64_t size) {
            Value g = tensor::ExtractOp::create(
                b, loc, op.getGrid(),
                ValueRange{coords[0], coords[2], coords[3], indexConstant(b, loc, component)});
            g = convertScalar(b, loc, g, f64);
            return aligned ? mul(add(g, c(1)), c((size - 1) / 2.0))
                           : mul(sub(mul(add(g, c(1)), c(size)), c(1)), c(0.5));
          };
          // Mirrors x into [low, high] / 2 as often as it takes.
          auto reflect = [&](Value x, double twiceLow, double twiceHigh) -> Value {
            if (twiceLow == twiceHigh)
              return c(0);
            double low = twiceLow / 2, span = (twiceHigh - twiceLow) / 2;
            Value d = math::AbsFOp::create(b, loc, sub(x, c(low)));
            Value flips = floor(arith::DivFOp::create(b, loc, d, c(span)));
            Value extra = sub(d, mul(flips, c(span)));
            Value half = floor(mul(flips, c(0.5)));
            Value even = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                               mul(half, c(2)), flips);
            return arith::SelectOp::create(b, loc, even, add(extra, c(low)),
                                           add(sub(c(span), extra), c(low)));
          };
          auto pad = [&](Value x, int64_t size) -> Value {
            if (padding == "border")
              return clamp(x, 0, size - 1);
            if (padding == "reflection") {
              x = aligned ? reflect(x, 0, 2.0 * (size - 1)) : reflect(x, -1, 2.0 * size - 1);
              return clamp(x, 0, size - 1);
            }
            return x;
          };
          // The input at integer (f64) coordinates, zero outside it.
          auto read = [&](Value x, Value y) -> Value {
            auto toIndex = [&](Value v, int64_t size) {
              Value i = arith::IndexCastOp::create(
                  b, loc, b.getIndexType(), arith::FPToSIOp::create(b, loc, b.getI64Type(), v));
              return clampIndex(b, loc, i, size);
            };
            Value inside = arith::AndIOp::create(
                b, loc,
                arith::AndIOp::create(
                    b, loc, arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGE, x, c(0)),
                    arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLE, x, c(width - 1))),
                arith::AndIOp::create(
                    b, loc, arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGE, y, c(0)),
                    arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLE, y, c(height - 1))));
            Value v = tensor::ExtractOp::create(
                b, loc, op.getInput(),
                ValueRange{coords[0], coords[1], toIndex(y, height), toIndex(x, width)});
            return arith::SelectOp::create(b, loc, inside, convertScalar(b, loc, v, f64), c(0));
          };
          Value x = unnormalize(0, width), y = unnormalize(1, height);
          Value result;
          if (mode == "nearest") {
            // Round half to even.
            auto roundEven = [&](Value v) {
              Value r = floor(add(v, c(0.5)));
              Value tie = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, sub(r, v), c(0.5));
              Value odd = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::ONE,
                                                mul(floor(mul(r, c(0.5))), c(2)), r);
              return Value(arith::SelectOp::create(
                  b, loc, arith::AndIOp::create(b, loc, tie, odd), sub(r, c(1)), r));
            };
            result = read(roundEven(pad(x, width)), roundEven(pad(y, height)));
          } else if (mode == "bilinear") {
            x = pad(x, width);
            y = pad(y, height);
            Value x0 = floor(x), y0 = floor(y);
            Value fx = sub(x, x0), fy = sub(y, y0);
            Value x1 = add(x0, c(1)), y1 = add(y0, c(1));
            Value gx = sub(c(1), fx), gy = sub(c(1), fy);
            result = add(add(mul(mul(gx, gy), read(x0, y0)), mul(mul(fx, gy), read(x1, y0))),
                         add(mul(mul(gx, fy), read(x0, y1)), mul(mul(fx, fy), read(x1, y1))));
          } else {
            Value x0 = floor(x), y0 = floor(y);
            SmallVector<Value> wx = cubicWeights(b, loc, sub(x, x0), -0.75);
            SmallVector<Value> wy = cubicWeights(b, loc, sub(y, y0), -0.75);
            result = c(0);
            for (int64_t j = 0; j < 4; ++j) {
              Value ty = pad(add(y0, c(j - 1)), height);
              for (int64_t i = 0; i < 4; ++i) {
                Value tx = pad(add(x0, c(i - 1)), width);
                result = add(result, mul(mul(wx[i], wy[j]), read(tx, ty)));
              }
            }
          }
          return convertScalar(b, loc, result, element);
        });
    rewriter.replaceOp(op, sampled);
    return success();
  }
};

} // namespace

void populateResamplingLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<PadLowering, ResizeLowering, GridSampleLowering>(patterns.getContext());
}

} // namespace kiln
