//===- Random.cpp - Lowering of kiln.dropout: Philox4x32-10 per element ---===//
//
// Counter-based random numbers: each element's draw is Philox4x32-10 of its
// own row-major index and the op's counter under the op's seed, so kernels
// need no state, tiles and threads draw the same numbers in any order, and a
// gradient recomputes the mask its forward op drew.
//
//===----------------------------------------------------------------------===//
#include "codegen/LowerToLinalg/Utils.h"
#include "dialects/kiln/KilnOps.h"

using namespace mlir;

namespace kiln {
namespace {

// Philox4x32's multipliers and Weyl key increments (Salmon et al., 2011).
constexpr uint32_t kPhiloxM0 = 0xD2511F53, kPhiloxM1 = 0xCD9E8D57;
constexpr uint32_t kPhiloxW0 = 0x9E3779B9, kPhiloxW1 = 0xBB67AE85;
constexpr int kPhiloxRounds = 10;

struct Philox {
  OpBuilder &b;
  Location loc;

  Value i32(uint32_t v) { return arith::ConstantIntOp::create(b, loc, static_cast<int32_t>(v), 32); }
  /// The high and low words of the 64-bit product of two 32-bit words.
  std::pair<Value, Value> mulHiLo(uint32_t m, Value x) {
    Type i64 = b.getI64Type();
    Value wide = arith::MulIOp::create(b, loc, arith::ExtUIOp::create(b, loc, i64, x),
                                       arith::ConstantIntOp::create(b, loc, int64_t(m), 64));
    Value hi = arith::TruncIOp::create(
        b, loc, b.getI32Type(),
        arith::ShRUIOp::create(b, loc, wide, arith::ConstantIntOp::create(b, loc, 32, 64)));
    Value lo = arith::TruncIOp::create(b, loc, b.getI32Type(), wide);
    return {hi, lo};
  }
  /// The first word of Philox4x32-10(counter, key).
  Value firstWord(std::array<Value, 4> c, std::array<Value, 2> k) {
    for (int round = 0; round < kPhiloxRounds; ++round) {
      if (round > 0) {
        k[0] = arith::AddIOp::create(b, loc, k[0], i32(kPhiloxW0));
        k[1] = arith::AddIOp::create(b, loc, k[1], i32(kPhiloxW1));
      }
      auto [hi0, lo0] = mulHiLo(kPhiloxM0, c[0]);
      auto [hi1, lo1] = mulHiLo(kPhiloxM1, c[2]);
      c = {arith::XOrIOp::create(b, loc, arith::XOrIOp::create(b, loc, hi1, c[1]), k[0]), lo1,
           arith::XOrIOp::create(b, loc, arith::XOrIOp::create(b, loc, hi0, c[3]), k[1]), lo0};
    }
    return c[0];
  }
  /// The low and high words of a 64-bit value.
  std::pair<Value, Value> split(Value v) {
    Value lo = arith::TruncIOp::create(b, loc, b.getI32Type(), v);
    Value hi = arith::TruncIOp::create(
        b, loc, b.getI32Type(),
        arith::ShRUIOp::create(b, loc, v, arith::ConstantIntOp::create(b, loc, 32, 64)));
    return {lo, hi};
  }
};

// y = u(index) >= ratio ? x / (1 - ratio) : 0, u the draw's top 24 bits as a
// fraction of 2^24.
struct DropoutLowering : OpRewritePattern<DropoutOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(DropoutOp op, PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    ArrayRef<int64_t> shape = type.getShape();
    double ratio = op.getRatio().convertToDouble();
    auto seed = static_cast<uint64_t>(op.getSeed());
    SmallVector<Value> inputs{op.getInput()};
    Value counterOperand = op.getCounter(), offsetOperand = op.getOffset();
    if (counterOperand)
      inputs.push_back(counterOperand);
    if (offsetOperand)
      inputs.push_back(offsetOperand);
    Value result = buildElementwise(
        rewriter, loc, type, inputs, [&](OpBuilder &b, Location l, ValueRange args) {
          Philox philox{b, l};
          // The element's row-major index.
          Value index = arith::ConstantIndexOp::create(b, l, 0);
          int64_t stride = 1;
          for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
            Value at = linalg::IndexOp::create(b, l, d);
            index = arith::AddIOp::create(
                b, l, index,
                arith::MulIOp::create(b, l, at, arith::ConstantIndexOp::create(b, l, stride)));
            stride *= shape[d];
          }
          Value index64 = arith::IndexCastUIOp::create(b, l, b.getI64Type(), index);
          if (offsetOperand)
            index64 = arith::AddIOp::create(b, l, index64, args.back());
          auto [i0, i1] = philox.split(index64);
          Value counter = counterOperand ? args[1] : arith::ConstantIntOp::create(b, l, 0, 64);
          auto [c0, c1] = philox.split(counter);
          Value draw = philox.firstWord({i0, i1, c0, c1},
                                        {philox.i32(uint32_t(seed)), philox.i32(uint32_t(seed >> 32))});
          Value top = arith::ShRUIOp::create(b, l, draw, philox.i32(8));
          Value fraction = arith::MulFOp::create(
              b, l, arith::UIToFPOp::create(b, l, b.getF32Type(), top),
              arith::ConstantOp::create(b, l, b.getF32FloatAttr(1.0f / (1 << 24))));
          Value keep = arith::CmpFOp::create(
              b, l, arith::CmpFPredicate::OGE, fraction,
              arith::ConstantOp::create(b, l, b.getF32FloatAttr(static_cast<float>(ratio))));
          Type element = type.getElementType();
          Value scaled = arith::MulFOp::create(b, l, args[0],
                                               scalarConstant(b, l, element, 1.0 / (1.0 - ratio)));
          return arith::SelectOp::create(b, l, keep, scaled, scalarConstant(b, l, element, 0.0));
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void populateRandomLoweringPatterns(RewritePatternSet &patterns) {
  patterns.add<DropoutLowering>(patterns.getContext());
}

} // namespace kiln
