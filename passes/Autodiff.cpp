//===- Autodiff.cpp - Reverse-mode differentiation of kiln functions ------===//
//
// Walks the ops between the differentiated values and the loss in reverse
// order, asks each for its vector-Jacobian product through
// GradientOpInterface, and sums the cotangents of values used more than once.
// The result is ordinary kiln IR appended to the function.
//
//===----------------------------------------------------------------------===//
#include "dialects/kiln/KilnOps.h"
#include "passes/Passes.h"

using namespace mlir;

namespace kiln {
#define GEN_PASS_DEF_KILNAUTODIFFPASS
#include "passes/Passes.h.inc"

static bool isFloatTensor(Value value) {
  auto type = llvm::dyn_cast<RankedTensorType>(value.getType());
  return type && llvm::isa<FloatType>(type.getElementType());
}

FailureOr<SmallVector<Value>> buildGradients(OpBuilder &builder, Value loss,
                                             ArrayRef<Value> wrt) {
  Location lossLoc = loss.getLoc();
  auto lossType = llvm::dyn_cast<RankedTensorType>(loss.getType());
  if (!lossType || !llvm::isa<FloatType>(lossType.getElementType()) ||
      lossType.getNumElements() != 1)
    return emitError(lossLoc) << "the loss must be a float tensor of one element, got "
                              << loss.getType();
  Block *block = builder.getInsertionBlock();

  // Values that depend on `wrt`, in program order.
  llvm::DenseSet<Value> active;
  for (Value value : wrt)
    if (isFloatTensor(value))
      active.insert(value);
  for (Operation &op : block->without_terminator())
    if (llvm::any_of(op.getOperands(), [&](Value v) { return active.contains(v); }))
      for (Value result : op.getResults())
        if (isFloatTensor(result))
          active.insert(result);

  llvm::DenseMap<Value, Value> grads;
  auto accumulate = [&](Value value, Value grad) {
    auto [it, inserted] = grads.try_emplace(value, grad);
    if (!inserted)
      it->second = AddOp::create(builder, grad.getLoc(), it->second, grad);
  };
  if (active.contains(loss)) {
    auto ones = DenseElementsAttr::get(lossType, builder.getFloatAttr(lossType.getElementType(), 1.0));
    accumulate(loss, ConstantOp::create(builder, lossLoc, ones));
  }

  // Ops are visited after every user of their results (the block is in
  // program order), so each cotangent is complete when it is read.
  SmallVector<Operation *> ops;
  for (Operation &op : block->without_terminator())
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops)) {
    SmallVector<Value> resultGrads;
    bool any = false;
    for (Value result : op->getResults()) {
      Value grad = grads.lookup(result);
      any |= static_cast<bool>(grad);
      resultGrads.push_back(grad);
    }
    if (!any || llvm::none_of(op->getOperands(), [&](Value v) { return active.contains(v); }))
      continue;
    auto rule = llvm::dyn_cast<GradientOpInterface>(op);
    if (!rule)
      return op->emitError() << "'" << op->getName()
                             << "' has no gradient rule, and the loss depends on it through a "
                                "value being differentiated";
    OpBuilder::InsertionGuard guard(builder);
    SmallVector<Value> operandGrads;
    if (failed(rule.buildGradients(builder, resultGrads, operandGrads)))
      return failure();
    if (operandGrads.size() != op->getNumOperands())
      return op->emitOpError("gradient rule returned ")
             << operandGrads.size() << " gradients for " << op->getNumOperands() << " operands";
    for (auto [operand, grad] : llvm::zip_equal(op->getOperands(), operandGrads))
      if (grad && active.contains(operand)) {
        if (grad.getType() != operand.getType())
          return op->emitOpError("gradient rule built a gradient of type ")
                 << grad.getType() << " for an operand of type " << operand.getType();
        accumulate(operand, grad);
      }
  }

  SmallVector<Value> result;
  for (Value value : wrt) {
    Value grad = grads.lookup(value);
    if (!grad) { // the loss does not depend on it
      auto type = llvm::cast<RankedTensorType>(value.getType());
      grad = ConstantOp::create(builder, value.getLoc(),
                                DenseElementsAttr::get(type, builder.getZeroAttr(type.getElementType())));
    }
    result.push_back(grad);
  }
  return result;
}

std::string argumentName(func::FuncOp func, unsigned index) {
  if (auto name = func.getArgAttrOfType<StringAttr>(index, "kiln.name"))
    return name.str();
  return "input_" + std::to_string(index);
}

namespace {

struct KilnAutodiffPass : impl::KilnAutodiffPassBase<KilnAutodiffPass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || func.getSymName() != function)
      return;
    if (!func.getBody().hasOneBlock()) {
      func.emitError("kiln-autodiff differentiates functions of one block");
      return signalPassFailure();
    }
    auto ret = llvm::cast<func::ReturnOp>(func.getBody().front().getTerminator());
    if (loss < 0 || loss >= static_cast<int64_t>(ret.getNumOperands())) {
      func.emitError() << "the loss is result #" << static_cast<int64_t>(loss) << ", and @" << func.getSymName()
                       << " has " << ret.getNumOperands() << " results";
      return signalPassFailure();
    }
    llvm::Regex regex("^(" + wrt + ")$");
    std::string error;
    if (!regex.isValid(error)) {
      func.emitError() << "wrt: invalid regular expression '" << wrt << "': " << error;
      return signalPassFailure();
    }
    SmallVector<Value> values;
    SmallVector<std::string> names;
    for (BlockArgument arg : func.getArguments()) {
      std::string name = argumentName(func, arg.getArgNumber());
      if (isFloatTensor(arg) && regex.match(name)) {
        values.push_back(arg);
        names.push_back(name);
      }
    }
    OpBuilder builder(ret);
    FailureOr<SmallVector<Value>> grads = buildGradients(builder, ret.getOperand(loss), values);
    if (failed(grads))
      return signalPassFailure();
    unsigned first = ret.getNumOperands();
    ret->insertOperands(first, *grads);
    SmallVector<Type> resultTypes(func.getResultTypes());
    for (Value grad : *grads)
      resultTypes.push_back(grad.getType());
    func.setType(builder.getFunctionType(func.getArgumentTypes(), resultTypes));
    for (auto [i, name] : llvm::enumerate(names))
      func.setResultAttr(first + i, "kiln.name", builder.getStringAttr("grad_" + name));
  }
};

} // namespace
} // namespace kiln
