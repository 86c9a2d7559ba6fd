//===- OnnxControlFlow.cpp - ONNX's If, Loop and Scan ----------------------===//
//
// If with a condition known at compile time imports the branch it takes,
// inline. With a condition known only at run time, both branches are
// imported and each output selects between them (kiln.where): branches are
// side-effect free, so this is If's meaning whenever they agree on their
// outputs' types; otherwise the condition must be frozen.
//
// Loop and Scan are unrolled: their trip counts must be known at compile
// time (a Loop's condition, too, after each iteration), and the body is
// imported once per iteration, at most kMaxUnrolled times.
//
//===----------------------------------------------------------------------===//
#include "compiler/Importer.h"

#include "mlir/IR/Matchers.h"

namespace kiln::onnx_import {
namespace {

/// Imports the nodes of `graph` (which see every value of the enclosing
/// graph) and returns its outputs.
FailureOr<SmallVector<Value>> importBranch(Importer &im, Node &n, const onnx::GraphProto &graph) {
  for (auto [index, node] : llvm::enumerate(graph.node()))
    if (failed(im.importNode(node, index)))
      return failure();
  SmallVector<Value> outputs;
  for (const auto &output : graph.output()) {
    auto it = im.values.find(output.name());
    if (it == im.values.end()) {
      (void)im.failNode(n, ImportFailure::Invalid,
                        "branch '" + graph.name() + "' output '" + output.name() +
                            "' is not produced by any node");
      return failure();
    }
    outputs.push_back(it->second);
  }
  return outputs;
}

constexpr int64_t kMaxUnrolled = 4096;

/// Imports `body` once with its inputs bound to `inputs` and returns its
/// outputs.
FailureOr<SmallVector<Value>> importBody(Importer &im, Node &n, const onnx::GraphProto &body,
                                         ArrayRef<Value> inputs) {
  if (body.input_size() != static_cast<int>(inputs.size())) {
    (void)im.failNode(n, ImportFailure::Invalid,
                      "the body takes " + std::to_string(body.input_size()) +
                          " inputs, but the node gives it " + std::to_string(inputs.size()));
    return failure();
  }
  for (auto [i, input] : llvm::enumerate(body.input())) {
    Value v = inputs[i];
    // Declared shapes are checked as ops use them; ranks of scalars vs
    // one-element tensors are adjusted here.
    const auto &declared = input.type().tensor_type();
    if (declared.has_shape() && declared.shape().dim_size() != typeOf(v).getRank() &&
        typeOf(v).getNumElements() == 1) {
      SmallVector<int64_t> shape(declared.shape().dim_size(), 1);
      v = ReshapeOp::create(im.builder, n.loc,
                            RankedTensorType::get(shape, typeOf(v).getElementType()), v);
    }
    im.values[input.name()] = v;
  }
  return importBranch(im, n, body);
}

/// `parts` (each of one shape) stacked along a new dimension `axis`.
Value stack(OpBuilder &b, Location loc, ArrayRef<Value> parts, int64_t axis) {
  SmallVector<Value> expanded;
  for (Value part : parts)
    expanded.push_back(UnsqueezeOp::create(b, loc, part, ArrayRef<int64_t>{axis}));
  return expanded.size() == 1 ? expanded.front()
                              : ConcatOp::create(b, loc, expanded, axis).getResult();
}

/// Element `index` of `x` along `axis`, that dimension dropped.
Value sliceAt(OpBuilder &b, Location loc, Value x, int64_t axis, int64_t index) {
  RankedTensorType type = typeOf(x);
  SmallVector<int64_t> shape(type.getShape()), start(type.getRank(), 0), step(type.getRank(), 1);
  shape[axis] = 1;
  start[axis] = index;
  Value slice = SliceOp::create(b, loc, RankedTensorType::get(shape, type.getElementType()), x,
                                start, step);
  shape.erase(shape.begin() + axis);
  return ReshapeOp::create(b, loc, RankedTensorType::get(shape, type.getElementType()), slice);
}

// Scan (opset 9 on): N states, then M scan inputs sliced along their axes;
// the body returns the N next states and K scan outputs, stacked.
Results importScan(Importer &im, Node &n) {
  if (n.opset < 9)
    return im.failNode(n, ImportFailure::Unsupported,
                       "Scan before opset 9 (with a batch dimension) is not supported");
  const auto *body = n.attr("body");
  int64_t scans = n.getInt("num_scan_inputs", 0);
  int64_t states = static_cast<int64_t>(n.inputs.size()) - scans;
  if (!body || !body->has_g() || scans < 1 || states < 0 ||
      llvm::is_contained(n.inputs, Value()))
    return im.failNode(n, ImportFailure::Invalid,
                       "needs a body graph, num_scan_inputs >= 1 and every input");
  auto perInput = [&](StringRef name, int64_t count) {
    SmallVector<int64_t> values = n.getInts(name).value_or(SmallVector<int64_t>(count, 0));
    values.resize(count, 0);
    return values;
  };
  SmallVector<int64_t> inputAxes = perInput("scan_input_axes", scans),
                       inputDirections = perInput("scan_input_directions", scans);
  int64_t steps = -1;
  for (int64_t j = 0; j < scans; ++j) {
    Value x = n.inputs[states + j];
    int64_t rank = typeOf(x).getRank();
    int64_t &axis = inputAxes[j];
    if (axis < 0)
      axis += rank;
    if (axis < 0 || axis >= rank)
      return im.failNode(n, ImportFailure::Invalid, "scan_input_axes out of range");
    int64_t length = typeOf(x).getDimSize(axis);
    if (steps >= 0 && length != steps)
      return im.failNode(n, ImportFailure::Invalid, "the scan inputs have different lengths");
    steps = length;
  }
  if (steps > kMaxUnrolled)
    return im.failNode(n, ImportFailure::Unsupported,
                       "a scan of " + std::to_string(steps) + " steps is longer than the " +
                           std::to_string(kMaxUnrolled) + " Kiln unrolls");
  SmallVector<Value> carried(n.inputs.begin(), n.inputs.begin() + states);
  SmallVector<SmallVector<Value>> scanned;
  for (int64_t t = 0; t < steps; ++t) {
    SmallVector<Value> inputs(carried);
    for (int64_t j = 0; j < scans; ++j)
      inputs.push_back(sliceAt(im.builder, n.loc, n.inputs[states + j], inputAxes[j],
                               inputDirections[j] ? steps - 1 - t : t));
    FailureOr<SmallVector<Value>> outputs = importBody(im, n, body->g(), inputs);
    if (failed(outputs))
      return failure();
    if (static_cast<int64_t>(outputs->size()) < states)
      return im.failNode(n, ImportFailure::Invalid, "the body returns fewer values than states");
    carried.assign(outputs->begin(), outputs->begin() + states);
    scanned.resize(outputs->size() - states);
    for (size_t k = 0; k < scanned.size(); ++k)
      scanned[k].push_back((*outputs)[states + k]);
  }
  SmallVector<int64_t> outputAxes = perInput("scan_output_axes", scanned.size()),
                       outputDirections = perInput("scan_output_directions", scanned.size());
  SmallVector<Value> results(carried);
  for (auto [k, values] : llvm::enumerate(scanned)) {
    if (outputDirections[k])
      std::reverse(values.begin(), values.end());
    int64_t rank = typeOf(values.front()).getRank() + 1, axis = outputAxes[k];
    if (axis < 0)
      axis += rank;
    if (axis < 0 || axis >= rank)
      return im.failNode(n, ImportFailure::Invalid, "scan_output_axes out of range");
    results.push_back(stack(im.builder, n.loc, values, axis));
  }
  return results;
}

// Loop: M (trip count) and cond, then the loop-carried values; the body
// takes the iteration number, the condition and the carried values, and
// returns the condition, the carried values and scan outputs (stacked).
Results importLoop(Importer &im, Node &n) {
  const auto *body = n.attr("body");
  if (!body || !body->has_g())
    return im.failNode(n, ImportFailure::Invalid, "needs a body graph");
  int64_t trips = kMaxUnrolled + 1;
  if (n.input(0)) {
    FailureOr<double> m = im.constantScalar(n, 0, "M");
    if (failed(m))
      return failure();
    trips = static_cast<int64_t>(std::max(0.0, std::min(*m, double(kMaxUnrolled + 1))));
  }
  auto truth = [&](Value v) -> std::optional<bool> {
    DenseElementsAttr known;
    if (!matchPattern(v, m_Constant(&known)) || known.getNumElements() != 1)
      return std::nullopt;
    return known.getElementType().isInteger(1) ? *known.getValues<bool>().begin()
                                               : !(*known.getValues<APInt>().begin()).isZero();
  };
  Value condition = n.input(1);
  if (condition && !truth(condition)) {
    FailureOr<double> given = im.constantScalar(n, 1, "cond");
    if (failed(given))
      return failure();
  }
  bool running = !condition || *truth(condition);
  SmallVector<Value> carried(n.inputs.begin() + std::min<size_t>(2, n.inputs.size()),
                             n.inputs.end());
  if (llvm::is_contained(carried, Value()))
    return im.failNode(n, ImportFailure::Invalid, "a loop-carried value is absent");
  OpBuilder &b = im.builder;
  SmallVector<SmallVector<Value>> scanned;
  int64_t iteration = 0;
  for (; running && iteration < trips; ++iteration) {
    if (iteration == kMaxUnrolled)
      return im.failNode(n, ImportFailure::Unsupported,
                         "the loop runs more than the " + std::to_string(kMaxUnrolled) +
                             " iterations Kiln unrolls");
    SmallVector<Value> inputs = {im.i64Constant(n.loc, {iteration}, /*scalar=*/true),
                                 im.constant(n.loc, DenseElementsAttr::get(
                                                        RankedTensorType::get({}, b.getI1Type()),
                                                        true))};
    inputs.append(carried);
    FailureOr<SmallVector<Value>> outputs = importBody(im, n, body->g(), inputs);
    if (failed(outputs))
      return failure();
    size_t count = carried.size();
    if (outputs->size() < 1 + count)
      return im.failNode(n, ImportFailure::Invalid,
                         "the body returns fewer values than the condition and carried values");
    std::optional<bool> next = truth(outputs->front());
    if (!next)
      return im.failNode(n, ImportFailure::Unsupported,
                         "the loop's condition is computed at run time; Kiln unrolls loops whose "
                         "iterations are known at compile time");
    running = *next;
    carried.assign(outputs->begin() + 1, outputs->begin() + 1 + count);
    scanned.resize(outputs->size() - 1 - count);
    for (size_t k = 0; k < scanned.size(); ++k)
      scanned[k].push_back((*outputs)[1 + count + k]);
  }
  SmallVector<Value> results(carried);
  for (auto &values : scanned) {
    if (values.empty())
      return im.failNode(n, ImportFailure::Unsupported,
                         "the loop runs no iteration, so its scan outputs have no elements");
    results.push_back(stack(b, n.loc, values, 0));
  }
  if (iteration == 0 && n.proto.output_size() > static_cast<int>(carried.size()))
    return im.failNode(n, ImportFailure::Unsupported,
                       "the loop runs no iteration, so its scan outputs have no elements");
  return results;
}

Results importIf(Importer &im, Node &n) {
  const auto *thenAttr = n.attr("then_branch"), *elseAttr = n.attr("else_branch");
  Value condition = n.input(0);
  if (!thenAttr || !elseAttr || !thenAttr->has_g() || !elseAttr->has_g() || !condition ||
      typeOf(condition).getNumElements() != 1)
    return im.failNode(n, ImportFailure::Invalid,
                       "needs a one-element condition and then_branch and else_branch graphs");
  DenseElementsAttr known;
  if (matchPattern(condition, m_Constant(&known))) {
    bool taken = known.getElementType().isInteger(1)
                     ? *known.getValues<bool>().begin()
                     : !(*known.getValues<APInt>().begin()).isZero();
    return importBranch(im, n, taken ? thenAttr->g() : elseAttr->g());
  }
  FailureOr<SmallVector<Value>> thenValues = importBranch(im, n, thenAttr->g());
  if (failed(thenValues))
    return failure();
  FailureOr<SmallVector<Value>> elseValues = importBranch(im, n, elseAttr->g());
  if (failed(elseValues))
    return failure();
  if (thenValues->size() != elseValues->size())
    return im.failNode(n, ImportFailure::Invalid, "the branches have different output counts");
  OpBuilder &b = im.builder;
  Value flag = condition;
  if (!typeOf(flag).getElementType().isInteger(1))
    flag = CastOp::create(b, n.loc, RankedTensorType::get(typeOf(flag).getShape(), b.getI1Type()),
                          flag);
  flag = ReshapeOp::create(b, n.loc, RankedTensorType::get({}, b.getI1Type()), flag);
  SmallVector<Value> results;
  for (auto [i, pair] : llvm::enumerate(llvm::zip(*thenValues, *elseValues))) {
    auto [then, otherwise] = pair;
    if (then.getType() != otherwise.getType()) {
      SmallVector<std::string> sources = im.graphInputsBehind(condition);
      std::string hint;
      for (const std::string &name : sources)
        hint += " --freeze-input " + name + "=FILE.pb";
      return im.failNode(n, sources.empty() ? ImportFailure::Unsupported
                                            : ImportFailure::NeedsConstant,
                         "output " + std::to_string(i) + " has different types in the two "
                         "branches, so the condition must be known at compile time" +
                             (sources.empty() ? std::string()
                                              : "; bind it with" + hint));
    }
    results.push_back(WhereOp::create(b, n.loc, flag, then, otherwise));
  }
  return results;
}

} // namespace

void addControlFlowHandlers(llvm::StringMap<Handler> &table) {
  table["If"] = importIf;
  table["Loop"] = importLoop;
  table["Scan"] = importScan;
}

} // namespace kiln::onnx_import
