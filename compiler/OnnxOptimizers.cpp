//===- OnnxOptimizers.cpp - ONNX's training-domain optimizer ops ----------===//
//
// Adagrad, Adam and Momentum of the domain 'ai.onnx.preview.training': one
// update step of any number of tensors, written in elementwise kiln ops so
// they fuse into the train step around them. Each takes the learning rate
// R and the step count T (scalars), then the tensors, their gradients and
// their optimizer state, each group listed in full before the next, and
// returns the new tensors, then the new state, in the same grouping.
//
//===----------------------------------------------------------------------===//
#include "compiler/Importer.h"

namespace kiln::onnx_import {
namespace {

/// Shared by the three: the operands split into `groups` lists of n tensors
/// after R and T, with checks naming what is wrong.
struct Step {
  Importer &im;
  Node &n;
  OpBuilder &b;
  Location loc;
  Type element;
  Value rate, count; // R in the tensors' type, T as that type too
  Value positive;    // T > 0
  int64_t tensors = 0;

  Step(Importer &im, Node &n) : im(im), n(n), b(im.builder), loc(n.loc) {}

  LogicalResult init(int64_t groups) {
    size_t operands = n.inputs.size();
    if (operands < 2 + static_cast<size_t>(groups) || (operands - 2) % groups != 0 ||
        n.proto.output_size() != static_cast<int>(operands - 2) / groups * (groups - 1)) {
      (void)im.failNode(n, ImportFailure::Invalid,
                        "needs R, T and " + std::to_string(groups) +
                            " equal groups of tensors, and one output per tensor and state");
      return failure();
    }
    if (llvm::is_contained(n.inputs, Value())) {
      (void)im.failNode(n, ImportFailure::Invalid, "every operand must be given (none is optional)");
      return failure();
    }
    tensors = (operands - 2) / groups;
    Value r = n.input(0), t = n.input(1);
    element = typeOf(n.input(2)).getElementType();
    if (!r || !t || typeOf(r).getNumElements() != 1 || typeOf(t).getNumElements() != 1 ||
        !llvm::isa<FloatType>(element) || !llvm::isa<IntegerType>(typeOf(t).getElementType())) {
      (void)im.failNode(n, ImportFailure::Invalid,
                        "R must be a float scalar, T an integer scalar, and the tensors floats");
      return failure();
    }
    rate = scalarOf(r, element);
    Type counter = typeOf(t).getElementType();
    Value step = scalarOf(t, counter);
    positive = GreaterOp::create(b, loc, step, im.splat(loc, counter, 0));
    count = scalarOf(t, element);
    for (int64_t i = 0; i < tensors; ++i)
      for (int64_t g = 1; g < groups; ++g)
        if (typeOf(operand(g, i)) != typeOf(operand(0, i))) {
          (void)im.failNode(n, ImportFailure::Invalid,
                            "operand " + std::to_string(2 + g * tensors + i) +
                                " must have the type of the tensor it belongs to");
          return failure();
        }
    return success();
  }
  /// The one element of `v` as a rank-0 tensor of `type`.
  Value scalarOf(Value v, Type type) {
    if (typeOf(v).getRank() != 0)
      v = ReshapeOp::create(b, loc, RankedTensorType::get({}, typeOf(v).getElementType()), v);
    if (typeOf(v).getElementType() != type)
      v = CastOp::create(b, loc, RankedTensorType::get({}, type), v);
    return v;
  }
  /// Tensor i of group g.
  Value operand(int64_t g, int64_t i) { return n.input(2 + g * tensors + i); }
  Value c(double v) { return im.splat(loc, element, v); }
  Value add(Value x, Value y) { return AddOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return SubOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return MulOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return DivOp::create(b, loc, x, y); }
  Value where(Value p, Value x, Value y) { return WhereOp::create(b, loc, p, x, y); }
  /// norm_coefficient * X + G.
  Value regularized(int64_t i) {
    float norm = n.getFloat("norm_coefficient", 0.0f);
    return norm == 0.0f ? operand(1, i) : add(mul(c(norm), operand(0, i)), operand(1, i));
  }
};

// r = R / (1 + T decay); g = norm X + G; H' = H + g²; X' = X - r g / (sqrt(H') + eps).
Results importAdagrad(Importer &im, Node &n) {
  Step s(im, n);
  if (failed(s.init(3)))
    return failure();
  Value r = s.div(s.rate, s.add(s.c(1), s.mul(s.count, s.c(n.getFloat("decay_factor", 0.0f)))));
  SmallVector<Value> xs, hs;
  for (int64_t i = 0; i < s.tensors; ++i) {
    Value g = s.regularized(i);
    Value h = s.add(s.operand(2, i), s.mul(g, g));
    Value adaptive = s.add(SqrtOp::create(s.b, s.loc, h), s.c(n.getFloat("epsilon", 1e-6f)));
    xs.push_back(s.sub(s.operand(0, i), s.div(s.mul(r, g), adaptive)));
    hs.push_back(h);
  }
  xs.append(hs);
  return xs;
}

// g = norm X + G; V' = alpha V + (T > 0 ? beta : 1) g; X' = X - R V'
// (standard) or X - R (g + alpha V') (nesterov).
Results importMomentum(Importer &im, Node &n) {
  Step s(im, n);
  if (failed(s.init(3)))
    return failure();
  std::string mode = n.getString("mode", "standard");
  if (mode != "standard" && mode != "nesterov")
    return im.failNode(n, ImportFailure::Invalid,
                       "unknown mode '" + mode + "' (standard, nesterov)");
  Value alpha = s.c(n.getFloat("alpha", 0.0f));
  Value beta = s.where(s.positive, s.c(n.getFloat("beta", 0.0f)), s.c(1));
  SmallVector<Value> xs, vs;
  for (int64_t i = 0; i < s.tensors; ++i) {
    Value g = s.regularized(i);
    Value v = s.add(s.mul(alpha, s.operand(2, i)), s.mul(beta, g));
    Value direction = mode == "standard" ? v : s.add(g, s.mul(alpha, v));
    xs.push_back(s.sub(s.operand(0, i), s.mul(s.rate, direction)));
    vs.push_back(v);
  }
  xs.append(vs);
  return xs;
}

// g = norm X + G; V' = alpha V + (1 - alpha) g; H' = beta H + (1 - beta) g²;
// r = T > 0 ? R sqrt(1 - beta^T) / (1 - alpha^T) : R;
// X' = (1 - norm_post) (X - r V' / (sqrt(H') + eps)).
Results importAdam(Importer &im, Node &n) {
  Step s(im, n);
  if (failed(s.init(4)))
    return failure();
  double alpha = n.getFloat("alpha", 0.9f), beta = n.getFloat("beta", 0.999f);
  Value alphaT = PowOp::create(s.b, s.loc, s.c(alpha), s.count);
  Value betaT = PowOp::create(s.b, s.loc, s.c(beta), s.count);
  Value corrected = s.div(s.mul(s.rate, SqrtOp::create(s.b, s.loc, s.sub(s.c(1), betaT))),
                          s.sub(s.c(1), alphaT));
  Value r = s.where(s.positive, corrected, s.rate);
  Value keep = s.c(1.0 - n.getFloat("norm_coefficient_post", 0.0f));
  SmallVector<Value> xs, vs, hs;
  for (int64_t i = 0; i < s.tensors; ++i) {
    Value g = s.regularized(i);
    Value v = s.add(s.mul(s.c(alpha), s.operand(2, i)), s.mul(s.c(1 - alpha), g));
    Value h = s.add(s.mul(s.c(beta), s.operand(3, i)), s.mul(s.c(1 - beta), s.mul(g, g)));
    Value root = s.add(SqrtOp::create(s.b, s.loc, h), s.c(n.getFloat("epsilon", 1e-6f)));
    xs.push_back(s.mul(keep, s.sub(s.operand(0, i), s.mul(r, s.div(v, root)))));
    vs.push_back(v);
    hs.push_back(h);
  }
  xs.append(vs);
  xs.append(hs);
  return xs;
}

} // namespace

void addTrainingDomainHandlers(llvm::StringMap<Handler> &table) {
  table["Adagrad"] = importAdagrad;
  table["Adam"] = importAdam;
  table["Momentum"] = importMomentum;
}

} // namespace kiln::onnx_import
