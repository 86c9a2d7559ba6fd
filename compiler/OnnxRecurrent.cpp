//===- OnnxRecurrent.cpp - ONNX's RNN, GRU and LSTM ------------------------===//
//
// The recurrent layers are unrolled over their (static) sequence length into
// kiln ops: one product of the whole input sequence with the input weights,
// then per step a product of the hidden state with the recurrent weights and
// the cell's gates, which fuse into a few kernels per step. Forward, reverse
// and bidirectional layers, both layouts, initial states, per-batch sequence
// lengths (steps past a sequence's end leave its state alone and output
// zeros), peepholes, clipping and GRU's linear_before_reset are supported.
//
//===----------------------------------------------------------------------===//
#include "compiler/Importer.h"

namespace kiln::onnx_import {
namespace {

enum class Cell { RNN, GRU, LSTM };

/// The longest sequence unrolled (compile time and code grow with it).
constexpr int64_t kMaxSteps = 4096;

/// Builds the kiln ops of one recurrent node.
struct Recurrence {
  Importer &im;
  Node &n;
  OpBuilder &b;
  Location loc;
  Cell cell;
  Type element;
  int64_t steps = 0, batch = 0, inputSize = 0, hidden = 0, directions = 1, gates = 1;
  float clip = 0;
  SmallVector<std::string> activations;

  Recurrence(Importer &im, Node &n, Cell cell)
      : im(im), n(n), b(im.builder), loc(n.loc), cell(cell) {}

  RankedTensorType tensor(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, element);
  }
  /// `count` elements of `x` from `start` along `axis`.
  Value take(Value x, int64_t axis, int64_t start, int64_t count) {
    RankedTensorType type = typeOf(x);
    SmallVector<int64_t> shape(type.getShape()), begin(type.getRank(), 0),
        step(type.getRank(), 1);
    shape[axis] = count;
    begin[axis] = start;
    return SliceOp::create(b, loc, RankedTensorType::get(shape, type.getElementType()), x, begin,
                           step);
  }
  Value reshape(Value x, ArrayRef<int64_t> shape) { return reshapeTo(b, loc, x, shape); }
  Value transpose(Value x, ArrayRef<int64_t> perm) { return TransposeOp::create(b, loc, x, perm); }
  Value add(Value x, Value y) { return AddOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return MulOp::create(b, loc, x, y); }
  Value matmul(Value x, Value y) { return MatMulOp::create(b, loc, x, y); }

  /// Applies activation `which` (an index into the activations of the
  /// direction) to `x`, clipping first when the node asks.
  Value activate(Value x, int64_t direction, int64_t which) {
    int64_t perDirection = cell == Cell::LSTM ? 3 : cell == Cell::GRU ? 2 : 1;
    StringRef name = activations[direction * perDirection + which];
    if (name == "Sigmoid")
      return SigmoidOp::create(b, loc, x);
    if (name == "Tanh")
      return TanhOp::create(b, loc, x);
    if (name == "Relu")
      return ReluOp::create(b, loc, x);
    if (name == "Softsign")
      return SoftsignOp::create(b, loc, x);
    return SoftplusOp::create(b, loc, x); // checked in run()
  }
  Value clipped(Value x) {
    if (clip <= 0)
      return x;
    x = MaxOp::create(b, loc, x, im.splat(loc, element, -clip));
    return MinOp::create(b, loc, x, im.splat(loc, element, clip));
  }

  Results run();
};

Results Recurrence::run() {
  Value x = n.input(0), w = n.input(1), r = n.input(2);
  if (!x || !w || !r)
    return im.failNode(n, ImportFailure::Invalid, "needs X, W and R");
  element = typeOf(x).getElementType();
  if (!llvm::isa<FloatType>(element))
    return im.failNode(n, ImportFailure::Invalid, "X must be floating-point");
  gates = cell == Cell::LSTM ? 4 : cell == Cell::GRU ? 3 : 1;
  bool batchMajor = n.getInt("layout", 0) != 0;
  std::string direction = n.getString("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    return im.failNode(n, ImportFailure::Invalid,
                       "unknown direction '" + direction + "' (forward, reverse, bidirectional)");
  directions = direction == "bidirectional" ? 2 : 1;
  hidden = n.getInt("hidden_size", 0);
  clip = n.getFloat("clip", 0);
  if (cell == Cell::LSTM && n.getInt("input_forget", 0) != 0)
    return im.failNode(n, ImportFailure::Unsupported, "input_forget = 1 is not supported");
  if (n.attr("activation_alpha") || n.attr("activation_beta"))
    return im.failNode(n, ImportFailure::Unsupported,
                       "activations with parameters (activation_alpha, activation_beta) are "
                       "not supported");

  RankedTensorType xType = typeOf(x);
  if (xType.getRank() != 3)
    return im.failNode(n, ImportFailure::Invalid,
                       "X must be 3-D, got " + describeShape(xType.getShape()));
  if (batchMajor)
    x = transpose(x, {1, 0, 2});
  steps = typeOf(x).getDimSize(0);
  if (steps < 1)
    return im.failNode(n, ImportFailure::Invalid,
                       "X has no time steps (" + describeShape(typeOf(x).getShape()) + ")");
  if (steps > kMaxSteps)
    return im.failNode(n, ImportFailure::Unsupported,
                       "a sequence of " + std::to_string(steps) + " steps is longer than the " +
                           std::to_string(kMaxSteps) + " Kiln unrolls");
  batch = typeOf(x).getDimSize(1);
  inputSize = typeOf(x).getDimSize(2);
  auto expect = [&](Value v, ArrayRef<int64_t> shape, StringRef what) -> LogicalResult {
    if (!v)
      return success();
    if (typeOf(v).getShape() != shape || typeOf(v).getElementType() != element) {
      (void)im.failNode(n, ImportFailure::Invalid,
                        what + " must be " + describeShape(shape) + " of X's type, got " +
                            describeShape(typeOf(v).getShape()));
      return failure();
    }
    return success();
  };
  Value bias = n.input(3), lengths = n.input(4), initialH = n.input(5);
  Value initialC = cell == Cell::LSTM ? n.input(6) : Value();
  Value peepholes = cell == Cell::LSTM ? n.input(7) : Value();
  SmallVector<int64_t> stateShape = batchMajor ? SmallVector<int64_t>{batch, directions, hidden}
                                               : SmallVector<int64_t>{directions, batch, hidden};
  if (hidden < 1)
    return im.failNode(n, ImportFailure::Invalid, "hidden_size must be positive");
  if (failed(expect(w, {directions, gates * hidden, inputSize}, "W")) ||
      failed(expect(r, {directions, gates * hidden, hidden}, "R")) ||
      failed(expect(bias, {directions, 2 * gates * hidden}, "B")) ||
      failed(expect(initialH, stateShape, "initial_h")) ||
      failed(expect(initialC, stateShape, "initial_c")) ||
      failed(expect(peepholes, {directions, 3 * hidden}, "P")))
    return failure();
  if (lengths && (typeOf(lengths).getShape() != ArrayRef<int64_t>{batch} ||
                  !llvm::isa<IntegerType>(typeOf(lengths).getElementType())))
    return im.failNode(n, ImportFailure::Invalid,
                       "sequence_lens must be " + describeShape({batch}) + " integers");

  int64_t perDirection = cell == Cell::LSTM ? 3 : cell == Cell::GRU ? 2 : 1;
  if (const auto *attr = n.attr("activations")) {
    for (const std::string &name : attr->strings())
      activations.push_back(name);
  } else {
    for (int64_t d = 0; d < directions; ++d) {
      if (cell != Cell::RNN)
        activations.push_back("Sigmoid");
      activations.push_back("Tanh");
      if (cell == Cell::LSTM)
        activations.push_back("Tanh");
    }
  }
  if (static_cast<int64_t>(activations.size()) != perDirection * directions)
    return im.failNode(n, ImportFailure::Invalid,
                       "needs " + std::to_string(perDirection * directions) +
                           " activations, got " + std::to_string(activations.size()));
  for (const std::string &name : activations)
    if (!llvm::is_contained({"Sigmoid", "Tanh", "Relu", "Softsign", "Softplus"}, StringRef(name)))
      return im.failNode(n, ImportFailure::Unsupported,
                         "activation '" + name +
                             "' is not supported (Sigmoid, Tanh, Relu, Softsign, Softplus are)");

  if (batchMajor) {
    if (initialH)
      initialH = transpose(initialH, {1, 0, 2});
    if (initialC)
      initialC = transpose(initialC, {1, 0, 2});
  }
  // Per batch entry, as [B, 1] int64, for comparisons with the step.
  Value lengthColumn;
  if (lengths) {
    Type i64 = b.getI64Type();
    if (typeOf(lengths).getElementType() != i64)
      lengths = CastOp::create(b, loc, RankedTensorType::get({batch}, i64), lengths);
    lengthColumn = reshape(lengths, {batch, 1});
  }

  Value zeros = im.constant(loc, DenseElementsAttr::get(tensor({batch, hidden}),
                                                        b.getZeroAttr(element)));
  SmallVector<Value> outputs, finalH, finalC;
  for (int64_t d = 0; d < directions; ++d) {
    bool reverse = direction == "reverse" || d == 1;
    Value wd = reshape(take(w, 0, d, 1), {gates * hidden, inputSize});
    Value rd = transpose(reshape(take(r, 0, d, 1), {gates * hidden, hidden}), {1, 0});
    // The input's contribution for every step at once: [T, B, G*H].
    Value xw = matmul(reshape(x, {steps * batch, inputSize}), transpose(wd, {1, 0}));
    Value recurrentBias;
    if (bias) {
      Value bd = reshape(take(bias, 0, d, 1), {2 * gates * hidden});
      xw = add(xw, take(bd, 0, 0, gates * hidden));
      recurrentBias = take(bd, 0, gates * hidden, gates * hidden);
    }
    xw = reshape(xw, {steps, batch, gates * hidden});
    Value h = initialH ? reshape(take(initialH, 0, d, 1), {batch, hidden}) : zeros;
    Value c = initialC ? reshape(take(initialC, 0, d, 1), {batch, hidden}) : zeros;
    Value pi, po, pf;
    if (peepholes) {
      Value pd = reshape(take(peepholes, 0, d, 1), {3 * hidden});
      pi = take(pd, 0, 0, hidden);
      po = take(pd, 0, hidden, hidden);
      pf = take(pd, 0, 2 * hidden, hidden);
    }
    SmallVector<Value> ys(steps);
    for (int64_t i = 0; i < steps; ++i) {
      int64_t t = reverse ? steps - 1 - i : i;
      Value xt = reshape(take(xw, 0, t, 1), {batch, gates * hidden});
      auto gate = [&](Value all, int64_t g) { return take(all, 1, g * hidden, hidden); };
      Value newH, newC;
      if (cell == Cell::RNN) {
        Value pre = add(xt, matmul(h, rd));
        if (recurrentBias)
          pre = add(pre, recurrentBias);
        newH = activate(clipped(pre), d, 0);
      } else if (cell == Cell::LSTM) {
        Value pre = add(xt, matmul(h, rd));
        if (recurrentBias)
          pre = add(pre, recurrentBias);
        // Gate order i, o, f, c.
        Value iPre = gate(pre, 0), oPre = gate(pre, 1), fPre = gate(pre, 2), cPre = gate(pre, 3);
        if (pi) {
          iPre = add(iPre, mul(pi, c));
          fPre = add(fPre, mul(pf, c));
        }
        Value it = activate(clipped(iPre), d, 0), ft = activate(clipped(fPre), d, 0);
        Value ct = activate(clipped(cPre), d, 1);
        newC = add(mul(ft, c), mul(it, ct));
        if (po)
          oPre = add(oPre, mul(po, newC));
        Value ot = activate(clipped(oPre), d, 0);
        newH = mul(ot, activate(newC, d, 2));
      } else {
        // Gate order z, r, h.
        Value rz = take(rd, 1, 0, 2 * hidden), rh = take(rd, 1, 2 * hidden, hidden);
        Value pre = add(take(xt, 1, 0, 2 * hidden), matmul(h, rz));
        Value rbh;
        if (recurrentBias) {
          pre = add(pre, take(recurrentBias, 0, 0, 2 * hidden));
          rbh = take(recurrentBias, 0, 2 * hidden, hidden);
        }
        Value zt = activate(clipped(gate(pre, 0)), d, 0);
        Value rt = activate(clipped(gate(pre, 1)), d, 0);
        Value candidate;
        if (n.getInt("linear_before_reset", 0) != 0) {
          Value hr = matmul(h, rh);
          if (rbh)
            hr = add(hr, rbh);
          candidate = add(gate(xt, 2), mul(rt, hr));
        } else {
          candidate = add(gate(xt, 2), matmul(mul(rt, h), rh));
          if (rbh)
            candidate = add(candidate, rbh);
        }
        Value ht = activate(clipped(candidate), d, 1);
        // (1 - z) h~ + z h = h~ + z (h - h~).
        newH = add(ht, mul(zt, SubOp::create(b, loc, h, ht)));
      }
      if (lengthColumn) {
        // Steps at or past a sequence's end keep its state and output 0.
        Value live = LessOp::create(b, loc, im.i64Constant(loc, {t}, /*scalar=*/true),
                                    lengthColumn);
        h = WhereOp::create(b, loc, live, newH, h);
        if (newC)
          c = WhereOp::create(b, loc, live, newC, c);
        ys[t] = WhereOp::create(b, loc, live, newH, zeros);
      } else {
        h = newH;
        if (newC)
          c = newC;
        ys[t] = newH;
      }
    }
    SmallVector<Value> stacked;
    for (Value y : ys)
      stacked.push_back(reshape(y, {1, 1, batch, hidden}));
    outputs.push_back(steps == 1 ? stacked.front()
                                 : ConcatOp::create(b, loc, stacked, 0).getResult());
    finalH.push_back(reshape(h, {1, batch, hidden}));
    finalC.push_back(reshape(c, {1, batch, hidden}));
  }
  auto join = [&](SmallVector<Value> &parts, int64_t axis) {
    return parts.size() == 1 ? parts.front() : ConcatOp::create(b, loc, parts, axis).getResult();
  };
  Value y = join(outputs, 1), yh = join(finalH, 0), yc = join(finalC, 0);
  if (batchMajor) {
    y = transpose(y, {2, 0, 1, 3});
    yh = transpose(yh, {1, 0, 2});
    yc = transpose(yc, {1, 0, 2});
  }
  SmallVector<Value> results = {y, yh};
  if (cell == Cell::LSTM)
    results.push_back(yc);
  results.resize(std::min<size_t>(results.size(), n.proto.output_size()));
  return results;
}

template <Cell C>
Results importRecurrent(Importer &im, Node &n) {
  return Recurrence(im, n, C).run();
}

} // namespace

void addRecurrentHandlers(llvm::StringMap<Handler> &table) {
  table["RNN"] = importRecurrent<Cell::RNN>;
  table["GRU"] = importRecurrent<Cell::GRU>;
  table["LSTM"] = importRecurrent<Cell::LSTM>;
}

} // namespace kiln::onnx_import
