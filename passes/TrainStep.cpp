//===- TrainStep.cpp - Turns a forward function into one train step -------===//
//
// Trainable weights become state arguments, a loss is built on a model
// output, kiln-autodiff's machinery differentiates it, and the optimizer's
// update (with its learning-rate schedule, clipping and moving average) is
// written as elementwise kiln ops on the state. Every new value is a result,
// so the step is a pure function from (state, batch) to (loss, state').
//
//===----------------------------------------------------------------------===//
#include "dialects/kiln/KilnOps.h"
#include "passes/Passes.h"

#include <cmath>

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNTRAINSTEPPASS
#include "passes/Passes.h.inc"

namespace {

/// The initializer named by `loc`, or "" when `loc` names none.
std::string initializerName(Location loc) {
  auto named = llvm::dyn_cast<NameLoc>(loc);
  if (!named)
    return "";
  StringRef name = named.getName().getValue();
  if (!name.starts_with("initializer '") || !name.ends_with("'"))
    return "";
  return name.drop_front(strlen("initializer '")).drop_back().str();
}

RankedTensorType typeOf(Value value) { return llvm::cast<RankedTensorType>(value.getType()); }

/// Builds the step's arithmetic in f32 scalars and tensors.
struct Emitter {
  OpBuilder &b;
  Location loc;

  Value scalar(Type element, double value) {
    auto type = RankedTensorType::get({}, element);
    Attribute attr = llvm::isa<FloatType>(element)
                         ? Attribute(b.getFloatAttr(element, value))
                         : Attribute(b.getIntegerAttr(element, static_cast<int64_t>(value)));
    return ConstantOp::create(b, loc, DenseElementsAttr::get(type, attr));
  }
  Value f32(double value) { return scalar(b.getF32Type(), value); }
  Value add(Value x, Value y) { return AddOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return SubOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return MulOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return DivOp::create(b, loc, x, y); }
  Value min(Value x, Value y) { return MinOp::create(b, loc, x, y); }
  Value max(Value x, Value y) { return MaxOp::create(b, loc, x, y); }
  Value pow(Value x, Value y) { return PowOp::create(b, loc, x, y); }
  Value sqrt(Value x) { return SqrtOp::create(b, loc, x); }
  /// Sum of every element, as a rank-0 tensor.
  Value sumAll(Value x) {
    int64_t rank = typeOf(x).getRank();
    if (rank == 0)
      return x;
    SmallVector<int64_t> axes;
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
    return ReduceSumOp::create(b, loc, x, axes, /*keepdims=*/false);
  }
  /// `x` converted to the element type of `like` (a no-op when they agree).
  Value castLike(Value x, Value like) {
    Type element = typeOf(like).getElementType();
    if (typeOf(x).getElementType() == element)
      return x;
    return CastOp::create(b, loc, RankedTensorType::get(typeOf(x).getShape(), element), x);
  }
};

/// One state tensor of the step: its argument, its new value, its kind.
struct State {
  std::string name, kind;
  Value arg, next;
};

/// The state name of a normalization's running statistic: its initializer's
/// name; exporters merge equal initializers (fresh running statistics are
/// all zeros or ones), so a statistic shared by several normalizations is
/// named after each one's node too.
std::string statisticName(ConstantOp constant, BatchNormOp norm) {
  std::string name = initializerName(constant.getLoc());
  if (llvm::count_if(constant->getUsers(), [](Operation *user) { return isa<BatchNormOp>(user); }) > 1)
    name += "@" + nodeName(norm.getLoc());
  return name;
}

/// Adds @eval beside the step: the forward function with the trained
/// weights and the running statistics of batch normalizations (used as in
/// inference) as arguments, named as the step's state, so that a caller
/// evaluates with the state it holds.
void buildEval(func::FuncOp main) {
  OpBuilder b(main.getContext());
  b.setInsertionPointAfter(main);
  auto eval = llvm::cast<func::FuncOp>(b.clone(*main));
  eval.setSymName("eval");
  for (unsigned i = 0; i < eval.getNumArguments(); ++i)
    if (initializerName(eval.getArgument(i).getLoc()) != "")
      eval.setArgAttr(i, "kiln.state", b.getStringAttr("parameter"));
  Block &body = eval.getBody().front();
  for (BatchNormOp norm : llvm::to_vector(body.getOps<BatchNormOp>()))
    for (auto [operand, kind] : {std::pair{3u, "running_mean"}, std::pair{4u, "running_var"}}) {
      auto constant = norm->getOperand(operand).getDefiningOp<ConstantOp>();
      std::string name = statisticName(constant, norm);
      unsigned index = eval.getNumArguments();
      (void)eval.insertArgument(index, constant.getType(),
                                b.getDictionaryAttr({b.getNamedAttr("kiln.name", b.getStringAttr(name)),
                                                     b.getNamedAttr("kiln.state", b.getStringAttr(kind))}),
                                constant.getLoc());
      norm->setOperand(operand, eval.getArgument(index));
    }
  // Evaluation drops nothing.
  for (DropoutOp dropout : llvm::to_vector(body.getOps<DropoutOp>())) {
    dropout.getOutput().replaceAllUsesWith(dropout.getInput());
    dropout.erase();
  }
  for (ConstantOp constant : llvm::to_vector(body.getOps<ConstantOp>()))
    if (constant->use_empty())
      constant.erase();
}

/// Adds @init: no arguments, the initial value of every state tensor of the
/// step as its results, named as the step's state arguments.
void buildInit(func::FuncOp main, ArrayRef<State> states, const llvm::StringMap<ElementsAttr> &initial) {
  OpBuilder b(main.getContext());
  b.setInsertionPointAfter(main);
  Location loc = main.getLoc();
  auto init = func::FuncOp::create(b, loc, "init", b.getFunctionType({}, {}));
  Block *body = init.addEntryBlock();
  b.setInsertionPointToStart(body);
  SmallVector<Value> values;
  SmallVector<Attribute> attrs;
  for (const State &state : states) {
    auto type = llvm::cast<RankedTensorType>(state.arg.getType());
    // Slots, averages and the step start from zeros or from the weights.
    StringRef source = state.name;
    if (state.kind == "ema")
      source = StringRef(state.name).drop_front(strlen("ema/"));
    ElementsAttr value = initial.lookup(source);
    if (!value || (state.kind != "parameter" && state.kind != "ema" &&
                   state.kind != "running_mean" && state.kind != "running_var"))
      value = DenseElementsAttr::get(type, b.getZeroAttr(type.getElementType()));
    values.push_back(ConstantOp::create(b, loc, value));
    attrs.push_back(b.getDictionaryAttr({b.getNamedAttr("kiln.name", b.getStringAttr(state.name)),
                                         b.getNamedAttr("kiln.state", b.getStringAttr(state.kind))}));
  }
  func::ReturnOp::create(b, loc, values);
  init.setType(b.getFunctionType({}, ValueRange(values).getTypes()));
  init.setAllResultAttrs(attrs);
}

/// Replaces `norm` by a kiln.batch_norm_training, normalization with the
/// batch's statistics (over all but the channels, the variance biased), and
/// adds its running mean and variance (initializers) as state updated with
/// them: running = momentum * running + (1 - momentum) * stat, with the
/// unbiased variance, as PyTorch's BatchNorm in training mode does.
void trainBatchNorm(BatchNormOp norm, func::FuncOp main, SmallVectorImpl<State> &states,
                    llvm::StringMap<ElementsAttr> &initial) {
  OpBuilder b(norm);
  Location loc = norm.getLoc();
  Emitter e{b, loc};
  RankedTensorType type = typeOf(norm.getInput());
  Type element = type.getElementType();
  int64_t count = type.getDimSize(0);
  for (int64_t i = 2; i < type.getRank(); ++i)
    count *= type.getDimSize(i);
  auto training = BatchNormTrainingOp::create(b, loc, norm.getInput(), norm.getScale(),
                                              norm.getBias(), norm.getEpsilonAttr());
  norm.getOutput().replaceAllUsesWith(training.getOutput());

  double momentum = norm.getMomentum().convertToDouble();
  double unbias = count > 1 ? double(count) / double(count - 1) : 1.0;
  auto update = [&](Value stat, Value batch, double factor, const char *kind) {
    auto constant = stat.getDefiningOp<ConstantOp>();
    std::string name = statisticName(constant, norm);
    initial[name] = constant.getValue();
    unsigned index = main.getNumArguments();
    (void)main.insertArgument(
        index, stat.getType(),
        b.getDictionaryAttr(b.getNamedAttr("kiln.name", b.getStringAttr(name))), stat.getLoc());
    Value arg = main.getArgument(index);
    // One op at a time: the order of a call's arguments is the compiler's.
    Value kept = e.mul(arg, e.scalar(element, momentum));
    Value added = e.mul(batch, e.scalar(element, (1 - momentum) * factor));
    Value next = e.add(kept, added);
    states.push_back({name, kind, arg, next});
  };
  update(norm.getMean(), training.getMean(), 1.0, "running_mean");
  update(norm.getVariance(), training.getVariance(), unbias, "running_var");
  Operation *meanInit = norm.getMean().getDefiningOp(), *varInit = norm.getVariance().getDefiningOp();
  norm.erase();
  for (Operation *init : {meanInit, varInit})
    if (init->use_empty())
      init->erase();
}

struct KilnTrainStepPass : impl::KilnTrainStepPassBase<KilnTrainStepPass> {
  using Base::Base;

  LogicalResult checkOptions(func::FuncOp main);
  FailureOr<Value> buildLoss(Emitter &e, func::FuncOp main, Value output, Value labels,
                             StringRef lossOutput);
  Value scheduledRate(Emitter &e, Value stepF32);
  void runOnOperation() override;
};

LogicalResult KilnTrainStepPass::checkOptions(func::FuncOp main) {
  auto fail = [&](const Twine &message) { return main.emitError() << "kiln-train-step: " << message; };
  auto str = [](double value) {
    std::string text;
    llvm::raw_string_ostream(text) << value;
    return text;
  };
  static const char *optimizers[] = {"sgd", "momentum", "nesterov", "adam", "adamw"};
  if (!llvm::is_contained(optimizers, StringRef(optimizer)))
    return fail("unknown optimizer '" + optimizer + "' (sgd, momentum, nesterov, adam, adamw)");
  static const char *schedules[] = {"constant", "exponential", "step", "cosine"};
  if (!llvm::is_contained(schedules, StringRef(schedule)))
    return fail("unknown learning-rate schedule '" + schedule +
                "' (constant, exponential, step, cosine)");
  static const char *losses[] = {"softmax-cross-entropy", "mse", "output"};
  if (!llvm::is_contained(losses, StringRef(lossKind)))
    return fail("unknown loss '" + lossKind + "' (softmax-cross-entropy, mse, output)");
  if (!(learningRate > 0) || !std::isfinite(static_cast<double>(learningRate)))
    return fail("learning-rate must be positive, got " + str(learningRate));
  if (momentum < 0 || momentum >= 1)
    return fail("momentum must be in [0, 1), got " + str(momentum));
  if (beta1 < 0 || beta1 >= 1 || beta2 < 0 || beta2 >= 1)
    return fail("beta1 and beta2 must be in [0, 1), got " + str(beta1) + " and " + str(beta2));
  if (!(epsilon > 0))
    return fail("epsilon must be positive, got " + str(epsilon));
  if (weightDecay < 0 || l2 < 0 || clipNorm < 0)
    return fail("weight-decay, l2 and clip-norm must not be negative");
  if (emaDecay < 0 || emaDecay >= 1)
    return fail("ema-decay must be in [0, 1), got " + str(emaDecay));
  if (schedule != "constant" && schedule != "cosine" && (decaySteps <= 0 || !(decayRate > 0)))
    return fail("the " + schedule + " schedule needs decay-steps > 0 and decay-rate > 0");
  if (schedule == "cosine" && totalSteps <= 0)
    return fail("the cosine schedule needs total-steps > 0");
  if (warmupSteps < 0)
    return fail("warmup-steps must not be negative");
  return success();
}

FailureOr<Value> KilnTrainStepPass::buildLoss(Emitter &e, func::FuncOp main, Value output,
                                              Value labels, StringRef lossOutput) {
  RankedTensorType outType = typeOf(output);
  if (!llvm::isa<FloatType>(outType.getElementType()))
    return main.emitError() << "kiln-train-step: the loss reads output '" << lossOutput
                            << "', which is " << outType << ", not a float tensor";
  if (lossKind == "output") {
    if (outType.getNumElements() != 1)
      return main.emitError() << "kiln-train-step: --loss=output needs output '" << lossOutput
                              << "' to be a scalar loss, got " << outType;
    return output;
  }
  RankedTensorType labelType = typeOf(labels);
  if (lossKind == "mse") {
    // mean((y - labels)^2)
    if (labelType != outType)
      return main.emitError() << "kiln-train-step: mse labels must have the output's type "
                              << outType << ", got " << labelType;
    Value diff = e.sub(output, labels);
    Value sum = e.sumAll(e.mul(diff, diff));
    return e.mul(sum, e.scalar(outType.getElementType(), 1.0 / outType.getNumElements()));
  }
  // Softmax cross-entropy with class indices: logits [N, C], labels [N];
  //   loss = -mean_n log_softmax(logits)[n, labels[n]],
  // the pick written as a product with a one-hot mask.
  if (outType.getRank() != 2)
    return main.emitError() << "kiln-train-step: softmax-cross-entropy reads logits of shape "
                               "[batch, classes]; output '"
                            << lossOutput << "' is " << outType;
  int64_t batch = outType.getDimSize(0), classes = outType.getDimSize(1);
  if (labelType.getRank() != 1 || labelType.getDimSize(0) != batch ||
      !llvm::isa<IntegerType>(labelType.getElementType()) ||
      labelType.getElementType().isInteger(1))
    return main.emitError() << "kiln-train-step: softmax-cross-entropy labels must be integer "
                               "class indices of shape ["
                            << batch << "], got " << labelType;
  OpBuilder &b = e.b;
  Type labelElement = labelType.getElementType();
  SmallVector<APInt> iota;
  for (int64_t c = 0; c < classes; ++c)
    iota.push_back(APInt(labelElement.getIntOrFloatBitWidth(), c));
  Value classIds = ConstantOp::create(
      b, e.loc, DenseElementsAttr::get(RankedTensorType::get({classes}, labelElement), iota));
  Value column = ReshapeOp::create(b, e.loc, RankedTensorType::get({batch, 1}, labelElement),
                                   labels);
  Value hot = EqualOp::create(b, e.loc, column, classIds);
  Value mask = CastOp::create(b, e.loc, RankedTensorType::get({batch, classes}, outType.getElementType()), hot);
  Value logProbs = LogSoftmaxOp::create(b, e.loc, output, static_cast<uint64_t>(1));
  Value picked = e.sumAll(e.mul(logProbs, mask));
  return e.mul(picked, e.scalar(outType.getElementType(), -1.0 / batch));
}

/// The learning rate at `stepF32` (the number of updates made before this
/// one), as a rank-0 f32 tensor.
Value KilnTrainStepPass::scheduledRate(Emitter &e, Value stepF32) {
  Value lr = e.f32(learningRate);
  if (schedule == "exponential" || schedule == "step") {
    // lr * rate^(step / decay_steps), the exponent floored with staircase
    // (TensorFlow's exponential_decay; "step" is the staircase form).
    Value exponent = e.div(stepF32, e.f32(decaySteps));
    if (staircase || schedule == "step")
      exponent = FloorOp::create(e.b, e.loc, exponent);
    lr = e.mul(lr, e.pow(e.f32(decayRate), exponent));
  } else if (schedule == "cosine") {
    // min + (lr - min) (1 + cos(pi min(step, T) / T)) / 2
    Value t = e.div(e.min(stepF32, e.f32(totalSteps)), e.f32(totalSteps));
    Value cosine = CosOp::create(e.b, e.loc, e.mul(t, e.f32(M_PI)));
    Value factor = e.mul(e.add(cosine, e.f32(1.0)), e.f32(0.5));
    lr = e.add(e.f32(minLearningRate), e.mul(e.f32(learningRate - minLearningRate), factor));
  }
  if (warmupSteps > 0) // linear warm-up: lr (step + 1) / warmup for the first steps
    lr = e.mul(lr, e.min(e.f32(1.0), e.div(e.add(stepF32, e.f32(1.0)), e.f32(warmupSteps))));
  return lr;
}

void KilnTrainStepPass::runOnOperation() {
  ModuleOp module = getOperation();
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!main || main.isExternal() || !main.getBody().hasOneBlock()) {
    module.emitError("kiln-train-step: the module needs a function @main of one block");
    return signalPassFailure();
  }
  if (failed(checkOptions(main)))
    return signalPassFailure();
  auto regexFor = [&](const std::string &pattern, const char *option) -> std::optional<llvm::Regex> {
    llvm::Regex regex("^(" + pattern + ")$");
    std::string error;
    if (!regex.isValid(error)) {
      main.emitError() << "kiln-train-step: " << option << ": invalid regular expression '"
                       << pattern << "': " << error;
      return std::nullopt;
    }
    return regex;
  };
  std::optional<llvm::Regex> trainableRegex = regexFor(trainable, "trainable");
  std::optional<llvm::Regex> l2Regex = regexFor(l2Weights, "l2-weights");
  if (!trainableRegex || !l2Regex)
    return signalPassFailure();

  Block &body = main.getBody().front();
  auto ret = llvm::cast<func::ReturnOp>(body.getTerminator());
  MLIRContext *context = &getContext();
  OpBuilder b(context);

  // The output the loss reads.
  int64_t outputIndex = -1;
  std::string lossOutput = outputName;
  for (unsigned i = 0; i < main.getNumResults(); ++i) {
    auto name = main.getResultAttrOfType<StringAttr>(i, "kiln.name");
    std::string resultName = name ? name.str() : "output_" + std::to_string(i);
    if ((lossOutput.empty() && i == 0) || resultName == lossOutput) {
      outputIndex = i;
      lossOutput = resultName;
      break;
    }
  }
  if (outputIndex < 0) {
    main.emitError() << "kiln-train-step: the loss reads output '" << lossOutput
                     << "', which the model does not have";
    return signalPassFailure();
  }

  // Trainable weights: float initializers matching `trainable`, one state
  // argument each, in program order. The importer makes one constant per
  // initializer, shared by its uses, and nothing has folded or merged them
  // yet, so a weight is one initializer.
  SmallVector<State> states;
  // Batch normalization's running statistics are state the step updates,
  // not weights it differentiates.
  SmallVector<BatchNormOp> batchNorms(body.getOps<BatchNormOp>());
  llvm::DenseSet<Operation *> statistics;
  for (BatchNormOp norm : batchNorms)
    for (Value stat : {norm.getMean(), norm.getVariance()}) {
      auto constant = stat.getDefiningOp<ConstantOp>();
      if (!constant || initializerName(constant.getLoc()).empty()) {
        norm.emitError() << "kiln-train-step: batch normalization in a train step needs its "
                            "running mean and variance as initializers";
        return signalPassFailure();
      }
      statistics.insert(constant);
    }
  SmallVector<std::pair<ConstantOp, std::string>> weights;
  for (auto constant : body.getOps<ConstantOp>()) {
    std::string name = initializerName(constant.getLoc());
    // Initializers nothing reads (a Dropout's ratio, consumed at import)
    // are no weights.
    if (!name.empty() && llvm::isa<FloatType>(typeOf(constant).getElementType()) &&
        !constant->use_empty() && !statistics.contains(constant) && trainableRegex->match(name))
      weights.push_back({constant, name});
  }
  if (weights.empty()) {
    main.emitError() << "kiln-train-step: no float initializer matches trainable='" << trainable
                     << "'; nothing to train";
    return signalPassFailure();
  }
  unsigned numInputs = main.getNumArguments();
  auto addArgument = [&](Type type, const std::string &name, Location loc) {
    unsigned index = main.getNumArguments();
    (void)main.insertArgument(index, type, b.getDictionaryAttr(b.getNamedAttr("kiln.name", b.getStringAttr(name))), loc);
    return main.getArgument(index);
  };
  // Initial values of the state, for @init.
  llvm::StringMap<ElementsAttr> initial;
  for (auto &[constant, name] : weights) {
    initial[name] = constant.getValue();
    Value arg = addArgument(constant.getType(), name, constant.getLoc());
    constant.replaceAllUsesWith(arg);
    constant.erase();
    states.push_back({name, "parameter", arg, Value()});
  }
  unsigned numParams = states.size();
  if (entries)
    buildEval(main);
  for (BatchNormOp norm : batchNorms)
    trainBatchNorm(norm, main, states, initial);

  // Labels, unless the model computes its own loss.
  b.setInsertionPoint(ret);
  Location loc = NameLoc::get(b.getStringAttr("loss"), main.getLoc());
  Emitter e{b, loc};
  Value output = ret.getOperand(outputIndex);
  Value labels;
  if (lossKind != "output") {
    for (unsigned i = 0; i < numInputs; ++i)
      if (argumentName(main, i) == labelsName) {
        main.emitError() << "kiln-train-step: the model already has an input named '"
                         << labelsName << "'; name the labels input otherwise (labels=NAME)";
        return signalPassFailure();
      }
    RankedTensorType outType = typeOf(output);
    Type labelType = lossKind == "mse"
                         ? Type(outType)
                         : Type(RankedTensorType::get({outType.getRank() ? outType.getDimSize(0) : 1},
                                                      b.getI64Type()));
    labels = addArgument(labelType, labelsName, main.getLoc());
  }
  // The step counter: updates made so far. Dropouts draw their masks from it,
  // so each step has new ones and a rerun of a step the same.
  Value step = addArgument(RankedTensorType::get({}, b.getI64Type()), "step", main.getLoc());
  for (DropoutOp dropout : body.getOps<DropoutOp>())
    if (!dropout.getCounter())
      dropout.getCounterMutable().assign(step);
  if (dataParallel) {
    // Replica r's rows are rows [r B, (r + 1) B) of the whole batch: offset
    // its dropouts' element indices so that it draws their masks.
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&body);
    Value rank = ReplicaRankOp::create(b, main.getLoc(), RankedTensorType::get({}, b.getI64Type()));
    for (DropoutOp dropout : body.getOps<DropoutOp>())
      if (!dropout.getOffset()) {
        int64_t count = dropout.getType().getNumElements();
        b.setInsertionPoint(dropout);
        Emitter at{b, dropout.getLoc()};
        dropout.getOffsetMutable().assign(at.mul(rank, at.scalar(b.getI64Type(), count)));
      }
  }
  FailureOr<Value> loss = buildLoss(e, main, output, labels, lossOutput);
  if (failed(loss))
    return signalPassFailure();
  Value objective = *loss;
  if (l2 > 0) { // (l2 / 2) sum(w^2) per weight: TensorFlow's l2_loss, PyTorch's weight_decay
    for (unsigned i = 0; i < numParams; ++i)
      if (l2Regex->match(states[i].name)) {
        Value w = states[i].arg;
        Value penalty = e.mul(e.sumAll(e.mul(w, w)), e.scalar(typeOf(w).getElementType(), l2 / 2));
        objective = e.add(objective, e.castLike(penalty, objective));
      }
  }

  SmallVector<Value> params;
  for (unsigned i = 0; i < numParams; ++i)
    params.push_back(states[i].arg);
  FailureOr<SmallVector<Value>> grads = buildGradients(b, objective, params);
  if (failed(grads))
    return signalPassFailure();

  if (dataParallel) {
    // Each replica's loss is the mean over its shard; their mean over the
    // replicas is the mean over the whole batch, and so are the gradients.
    Value inverse = e.div(e.f32(1.0), WorldSizeOp::create(b, loc, RankedTensorType::get({}, b.getF32Type())));
    auto average = [&](Value x) { return e.mul(AllReduceOp::create(b, loc, x), e.castLike(inverse, x)); };
    for (Value &g : *grads)
      g = average(g);
    objective = average(objective);
  }

  Value stepF32 = CastOp::create(b, loc, RankedTensorType::get({}, b.getF32Type()), step);
  Value lr = scheduledRate(e, stepF32);

  if (clipNorm > 0) {
    // g *= clip / max(|g|, clip), |g| the norm of all gradients together.
    Value squares = e.f32(0.0);
    for (Value g : *grads)
      squares = e.add(squares, e.castLike(e.sumAll(e.mul(g, g)), squares));
    Value norm = e.sqrt(squares);
    Value scale = e.div(e.f32(clipNorm), e.max(norm, e.f32(clipNorm)));
    for (Value &g : *grads)
      g = e.mul(g, e.castLike(scale, g));
  }

  Value t = e.add(stepF32, e.f32(1.0)); // Adam's 1-based step
  for (unsigned i = 0; i < numParams; ++i) {
    Value w = states[i].arg, g = (*grads)[i];
    Type element = typeOf(w).getElementType();
    auto c = [&](double v) { return e.scalar(element, v); };
    Value rate = e.castLike(lr, w);
    auto slot = [&](const char *kind) {
      Value arg = addArgument(w.getType(), std::string(kind) + "/" + states[i].name, w.getLoc());
      states.push_back({std::string(kind) + "/" + states[i].name, kind, arg, Value()});
      return states.size() - 1;
    };
    Value next;
    if (optimizer == "sgd") {
      next = e.sub(w, e.mul(rate, g));
    } else if (optimizer == "momentum" || optimizer == "nesterov") {
      // v = mu v + g; w -= lr v, or lr (g + mu v) for Nesterov (PyTorch's form).
      size_t v = slot("momentum");
      Value velocity = e.add(e.mul(c(momentum), states[v].arg), g);
      states[v].next = velocity;
      Value direction = optimizer == "nesterov" ? e.add(g, e.mul(c(momentum), velocity)) : velocity;
      next = e.sub(w, e.mul(rate, direction));
    } else { // adam, adamw
      // m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
      // w -= lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps),
      // after w *= 1 - lr wd for AdamW (decoupled decay).
      size_t m = slot("adam_m"), v = slot("adam_v");
      Value mNext = e.add(e.mul(c(beta1), states[m].arg), e.mul(c(1 - beta1), g));
      Value vNext = e.add(e.mul(c(beta2), states[v].arg), e.mul(c(1 - beta2), e.mul(g, g)));
      states[m].next = mNext;
      states[v].next = vNext;
      Value correct1 = e.castLike(e.sub(e.f32(1.0), e.pow(e.f32(beta1), t)), w);
      Value correct2 = e.castLike(e.sub(e.f32(1.0), e.pow(e.f32(beta2), t)), w);
      Value denom = e.add(e.sqrt(e.div(vNext, correct2)), c(epsilon));
      Value base = w;
      if (optimizer == "adamw" && weightDecay > 0)
        base = e.mul(w, e.sub(c(1.0), e.mul(rate, c(weightDecay))));
      next = e.sub(base, e.mul(rate, e.div(e.div(mNext, correct1), denom)));
    }
    states[i].next = next;
  }
  if (emaDecay > 0) {
    // TensorFlow's ExponentialMovingAverage with num_updates = step:
    // d = min(decay, (1 + step) / (10 + step)); avg -= (1 - d) (avg - w').
    Value d = e.min(e.f32(emaDecay),
                    e.div(e.add(stepF32, e.f32(1.0)), e.add(stepF32, e.f32(10.0))));
    Value keep = e.sub(e.f32(1.0), d);
    for (unsigned i = 0; i < numParams; ++i) {
      Value w = states[i].arg;
      std::string name = "ema/" + states[i].name;
      Value arg = addArgument(w.getType(), name, w.getLoc());
      Value avg = e.sub(arg, e.mul(e.castLike(keep, w), e.sub(arg, states[i].next)));
      states.push_back({name, "ema", arg, avg});
    }
  }
  states.push_back({"step", "step", step, e.add(step, e.scalar(b.getI64Type(), 1))});

  // Results: the loss (the objective, regularization included), the learning
  // rate of this update, the model's outputs, the gradients when asked for,
  // then each state's next value under the state's name. With --loss=output
  // the output that is the loss is not repeated.
  auto named = [&](StringRef name) {
    return b.getDictionaryAttr(b.getNamedAttr("kiln.name", b.getStringAttr(name)));
  };
  SmallVector<Value> results{e.castLike(objective, e.f32(0)), lr};
  SmallVector<Attribute> resultAttrs{named("loss"), named("learning_rate")};
  for (unsigned i = 0; i < ret.getNumOperands(); ++i) {
    if (lossKind == "output" && static_cast<int64_t>(i) == outputIndex)
      continue;
    auto name = main.getResultAttrOfType<StringAttr>(i, "kiln.name");
    if (name && (name.getValue() == "loss" || name.getValue() == "learning_rate")) {
      main.emitError() << "kiln-train-step: the model has an output named '" << name.getValue()
                       << "', which the step's " << name.getValue() << " output would shadow"
                       << (name.getValue() == "loss"
                               ? "; train with --loss=output if it is the loss"
                               : "; rename it in the model");
      return signalPassFailure();
    }
    results.push_back(ret.getOperand(i));
    resultAttrs.push_back(main.getResultAttrDict(i) ? Attribute(main.getResultAttrDict(i))
                                                    : Attribute(b.getDictionaryAttr({})));
  }
  if (gradientOutputs) {
    for (unsigned i = 0; i < numParams; ++i) {
      results.push_back((*grads)[i]);
      resultAttrs.push_back(named("gradient/" + states[i].name));
    }
  }
  for (State &state : states) {
    results.push_back(state.next);
    resultAttrs.push_back(b.getDictionaryAttr(
        {b.getNamedAttr("kiln.name", b.getStringAttr(state.name)),
         b.getNamedAttr("kiln.state", b.getStringAttr(state.kind))}));
    main.setArgAttr(llvm::cast<BlockArgument>(state.arg).getArgNumber(), "kiln.state",
                    b.getStringAttr(state.kind));
  }
  ret->setOperands(results);
  main.setType(b.getFunctionType(main.getArgumentTypes(), ValueRange(results).getTypes()));
  main.setAllResultAttrs(resultAttrs);
  if (entries)
    buildInit(main, states, initial);
}

} // namespace
} // namespace kiln
