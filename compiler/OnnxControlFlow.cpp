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

/// Unrolls a scan of `steps` steps over `body`: the states start as
/// `carried` and become the final ones; `scanned` gets each scan output's
/// per-step values, in step order.
LogicalResult unrollScan(Importer &im, Node &n, const onnx::GraphProto &body,
                         SmallVector<Value> &carried, ArrayRef<Value> scanInputs,
                         ArrayRef<int64_t> axes, ArrayRef<int64_t> directions, int64_t steps,
                         SmallVector<SmallVector<Value>> &scanned) {
  if (steps > kMaxUnrolled) {
    (void)im.failNode(n, ImportFailure::Unsupported,
                      "a scan of " + std::to_string(steps) + " steps is longer than the " +
                          std::to_string(kMaxUnrolled) + " Kiln unrolls");
    return failure();
  }
  size_t states = carried.size();
  for (int64_t t = 0; t < steps; ++t) {
    SmallVector<Value> inputs(carried);
    for (auto [j, x] : llvm::enumerate(scanInputs))
      inputs.push_back(sliceAt(im.builder, n.loc, x, axes[j], directions[j] ? steps - 1 - t : t));
    FailureOr<SmallVector<Value>> outputs = importBody(im, n, body, inputs);
    if (failed(outputs))
      return failure();
    if (outputs->size() < states) {
      (void)im.failNode(n, ImportFailure::Invalid, "the body returns fewer values than states");
      return failure();
    }
    carried.assign(outputs->begin(), outputs->begin() + states);
    scanned.resize(outputs->size() - states);
    for (size_t k = 0; k < scanned.size(); ++k)
      scanned[k].push_back((*outputs)[states + k]);
  }
  return success();
}

// Scan: N states, then M scan inputs sliced along their axes; the body
// returns the N next states and K scan outputs, stacked. Before opset 9
// every input has a leading batch dimension (scanned along dimension 1),
// each batch entry scanned on its own, and an optional sequence_lens
// first, which must then be known and full.
Results importScan(Importer &im, Node &n) {
  const auto *body = n.attr("body");
  bool batched = n.opset < 9;
  ArrayRef<Value> operands(n.inputs);
  SmallVector<int64_t> lengths; // before opset 9: per batch entry, or empty
  if (batched && !operands.empty()) {
    if (operands.front()) {
      FailureOr<SmallVector<int64_t>> given = im.constantInts(n, 0, "sequence_lens");
      if (failed(given))
        return failure();
      lengths = *given;
    }
    operands = operands.drop_front();
  }
  int64_t scans = n.getInt("num_scan_inputs", 0);
  int64_t states = static_cast<int64_t>(operands.size()) - scans;
  if (!body || !body->has_g() || scans < 1 || states < 0 || llvm::is_contained(operands, Value()))
    return im.failNode(n, ImportFailure::Invalid,
                       "needs a body graph, num_scan_inputs >= 1 and every input");
  auto perInput = [&](StringRef name, int64_t count) {
    SmallVector<int64_t> values = n.getInts(name).value_or(SmallVector<int64_t>(count, 0));
    values.resize(count, 0);
    return values;
  };
  SmallVector<int64_t> inputAxes = batched ? SmallVector<int64_t>(scans, 0)
                                           : perInput("scan_input_axes", scans);
  SmallVector<int64_t> inputDirections =
      perInput(batched ? "directions" : "scan_input_directions", scans);
  int64_t batch = 1;
  if (batched) {
    batch = typeOf(operands.front()).getRank() > 0 ? typeOf(operands.front()).getDimSize(0) : -1;
    for (auto [i, v] : llvm::enumerate(operands))
      if (typeOf(v).getRank() < (static_cast<int64_t>(i) < states ? 1 : 2) ||
          typeOf(v).getDimSize(0) != batch)
        return im.failNode(n, ImportFailure::Invalid,
                           "before opset 9, every input has the batch dimension first (and scan "
                           "inputs a sequence dimension after it)");
  }
  OpBuilder &b = im.builder;
  // Per batch entry (one, from opset 9), the states and scan inputs.
  SmallVector<SmallVector<Value>> finals;
  SmallVector<SmallVector<SmallVector<Value>>> allScanned;
  for (int64_t e = 0; e < batch; ++e) {
    auto entry = [&](Value v) { return batched ? sliceAt(b, n.loc, v, 0, e) : v; };
    SmallVector<Value> carried, scanInputs;
    for (int64_t i = 0; i < states; ++i)
      carried.push_back(entry(operands[i]));
    int64_t steps = -1;
    for (int64_t j = 0; j < scans; ++j) {
      Value x = entry(operands[states + j]);
      int64_t rank = typeOf(x).getRank();
      int64_t &axis = inputAxes[j];
      if (axis < 0)
        axis += rank;
      if (axis < 0 || axis >= rank)
        return im.failNode(n, ImportFailure::Invalid, "scan_input_axes out of range");
      if (steps >= 0 && typeOf(x).getDimSize(axis) != steps)
        return im.failNode(n, ImportFailure::Invalid, "the scan inputs have different lengths");
      steps = typeOf(x).getDimSize(axis);
      scanInputs.push_back(x);
    }
    if (!lengths.empty() && (static_cast<int64_t>(lengths.size()) != batch || lengths[e] != steps))
      return im.failNode(n, ImportFailure::Unsupported,
                         "sequence_lens other than the full length of every sequence are not "
                         "supported");
    SmallVector<SmallVector<Value>> scanned;
    if (failed(unrollScan(im, n, body->g(), carried, scanInputs, inputAxes, inputDirections,
                          steps, scanned)))
      return failure();
    finals.push_back(carried);
    allScanned.push_back(scanned);
  }
  int64_t outputs = allScanned.front().size();
  SmallVector<int64_t> outputAxes = batched ? SmallVector<int64_t>(outputs, 0)
                                            : perInput("scan_output_axes", outputs);
  SmallVector<int64_t> outputDirections =
      batched ? SmallVector<int64_t>(outputs, 0) : perInput("scan_output_directions", outputs);
  SmallVector<Value> results;
  for (int64_t i = 0; i < states; ++i) {
    SmallVector<Value> perEntry;
    for (auto &entry : finals)
      perEntry.push_back(entry[i]);
    results.push_back(batched ? stack(b, n.loc, perEntry, 0) : perEntry.front());
  }
  for (int64_t k = 0; k < outputs; ++k) {
    SmallVector<Value> perEntry;
    for (auto &scanned : allScanned) {
      SmallVector<Value> values = scanned[k];
      if (outputDirections[k])
        std::reverse(values.begin(), values.end());
      int64_t rank = typeOf(values.front()).getRank() + 1, axis = outputAxes[k];
      if (axis < 0)
        axis += rank;
      if (axis < 0 || axis >= rank)
        return im.failNode(n, ImportFailure::Invalid, "scan_output_axes out of range");
      perEntry.push_back(stack(b, n.loc, values, axis));
    }
    results.push_back(batched ? stack(b, n.loc, perEntry, 0) : perEntry.front());
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
