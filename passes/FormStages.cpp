//===- FormStages.cpp - Partitions cut into stages at their receives ------===//
//
// See KilnFormStagesPass in Passes.td.
//
//===----------------------------------------------------------------------===//
#include "dialects/kiln/Device.h"
#include "dialects/kiln/KilnOps.h"
#include "passes/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SetVector.h"

#include <map>
#include <tuple>

namespace kiln {
#define GEN_PASS_DEF_KILNFORMSTAGESPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// The ops of one partition at one depth.
struct Stage {
  unsigned partition;
  int64_t depth;
  SmallVector<Operation *> ops;
  /// Values it takes, in order of first use, and values it returns.
  llvm::SetVector<Value> inputs, outputs;
  func::FuncOp func;
  func::CallOp call;
};

struct KilnFormStagesPass : kiln::impl::KilnFormStagesPassBase<KilnFormStagesPass> {
  void runOnOperation() override;

private:
  LogicalResult formStages(func::FuncOp parent, SmallVector<func::CallOp> calls,
                           SymbolTable &symbols);
};

using TransferKey = std::tuple<std::string, std::string, std::string>;

TransferKey keyOf(SendOp send) {
  return {send.getTensorName().str(), send.getSendDevice().str(), send.getRecvDevice().str()};
}
TransferKey keyOf(RecvOp recv) {
  return {recv.getTensorName().str(), recv.getSendDevice().str(), recv.getRecvDevice().str()};
}

LogicalResult KilnFormStagesPass::formStages(func::FuncOp parent, SmallVector<func::CallOp> calls,
                                             SymbolTable &symbols) {
  MLIRContext *context = parent.getContext();
  SmallVector<func::FuncOp> parts;
  for (func::CallOp call : calls)
    parts.push_back(symbols.lookup<func::FuncOp>(call.getCallee()));

  // Match every receive with its send.
  std::map<TransferKey, SendOp> sends;
  for (func::FuncOp part : parts)
    for (auto send : part.getBody().getOps<SendOp>())
      if (!sends.emplace(keyOf(send), send).second)
        return send.emitError() << "kiln-form-stages: tensor '" << send.getTensorName()
                                << "' is sent twice to the same device";
  llvm::DenseMap<Operation *, SendOp> sendOf;
  for (func::FuncOp part : parts)
    for (auto recv : part.getBody().getOps<RecvOp>()) {
      auto it = sends.find(keyOf(recv));
      if (it == sends.end())
        return recv.emitError() << "kiln-form-stages: no partition sends tensor '"
                                << recv.getTensorName() << "' from '" << recv.getSendDevice()
                                << "'";
      sendOf[recv] = it->second;
    }

  // Depths: transfers on the longest path from the inputs, to a fixed point
  // (each round settles at least one more transfer of an acyclic graph).
  llvm::DenseMap<Value, int64_t> depth;
  auto depthOf = [&](Value value) { return depth.lookup(value); };
  int64_t rounds = 0, limit = 2;
  for (func::FuncOp part : parts)
    limit += std::distance(part.getBody().front().begin(), part.getBody().front().end());
  for (bool changed = true; changed; ++rounds) {
    if (rounds > limit)
      return parent.emitError() << "kiln-form-stages: the partitions' transfers form a cycle";
    changed = false;
    for (func::FuncOp part : parts)
      for (Operation &op : part.getBody().front().without_terminator()) {
        int64_t d = 0;
        if (auto recv = dyn_cast<RecvOp>(op))
          d = depthOf(sendOf[recv].getValue()) + 1;
        else
          for (Value operand : op.getOperands())
            d = std::max(d, depthOf(operand));
        for (Value result : op.getResults())
          if (depthOf(result) != d) {
            depth[result] = d;
            changed = true;
          }
      }
  }

  // Stages: the partition's ops (not sends, receives or constants, which
  // are copied where used) grouped by depth; a constant returned as a graph
  // result is computed by a stage.
  std::map<std::pair<int64_t, unsigned>, Stage> stages; // (depth, partition): @main's order
  llvm::DenseMap<Value, Stage *> home;
  for (auto [index, part] : llvm::enumerate(parts)) {
    Block &block = part.getBody().front();
    Operation *ret = block.getTerminator();
    for (Operation &op : block.without_terminator()) {
      if (isa<SendOp, RecvOp>(op))
        continue;
      if (isa<ConstantOp>(op) && !llvm::is_contained(op.getUsers(), ret))
        continue;
      int64_t d = op.getNumResults() ? depthOf(op.getResult(0)) : 0;
      for (Value operand : op.getOperands())
        d = std::max(d, depthOf(operand));
      Stage &stage = stages[{d, static_cast<unsigned>(index)}];
      stage.partition = index;
      stage.depth = d;
      stage.ops.push_back(&op);
      for (Value result : op.getResults())
        home[result] = &stage;
    }
  }

  // What each stage takes and returns. A received tensor is the sent value,
  // returned by its producer's stage.
  auto sourceOf = [&](Value value) -> Value {
    if (auto recv = value.getDefiningOp<RecvOp>())
      return sendOf[recv].getValue();
    return value;
  };
  // Calls `fn(value)` for each value `op` (or an op inside it) uses from
  // outside it.
  auto forEachUse = [](Operation *op, llvm::function_ref<void(Value)> fn) {
    op->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        if (!op->isAncestor(operand.getParentRegion()->getParentOp()))
          fn(operand);
    });
  };
  for (auto &[key, stage] : stages)
    for (Operation *op : stage.ops)
      forEachUse(op, [&](Value operand) {
        if (operand.getDefiningOp<ConstantOp>())
          return; // copied into the stage
        Value source = sourceOf(operand);
        Stage *from = home.lookup(source);
        if (from == &stage)
          return;
        stage.inputs.insert(source);
        if (from)
          from->outputs.insert(source);
      });
  for (auto [index, part] : llvm::enumerate(parts))
    for (Value value : part.getBody().front().getTerminator()->getOperands())
      if (Stage *from = home.lookup(value))
        from->outputs.insert(value);

  // Stage functions, in @main's order.
  OpBuilder builder(context);
  builder.setInsertionPointAfter(parent);
  for (auto &[key, stage] : stages) {
    func::FuncOp part = parts[stage.partition];
    SmallVector<Type> inputTypes, outputTypes;
    for (Value value : stage.inputs)
      inputTypes.push_back(value.getType());
    for (Value value : stage.outputs)
      outputTypes.push_back(value.getType());
    stage.func = func::FuncOp::create(
        builder, part.getLoc(), (part.getSymName() + "_s" + std::to_string(stage.depth)).str(),
        FunctionType::get(context, inputTypes, outputTypes));
    symbols.insert(stage.func);
    builder.setInsertionPointAfter(stage.func);
    stage.func->setAttr(kDeviceAttrName, part->getAttr(kDeviceAttrName));
    Block *entry = stage.func.addEntryBlock();
    IRMapping mapping;
    for (auto [value, arg] : llvm::zip(stage.inputs, entry->getArguments()))
      mapping.map(value, arg);
    OpBuilder b = OpBuilder::atBlockEnd(entry);
    for (Operation *op : stage.ops)
      forEachUse(op, [&](Value operand) {
        if (mapping.contains(operand))
          return;
        if (operand.getDefiningOp<RecvOp>())
          mapping.map(operand, mapping.lookup(sourceOf(operand)));
        else if (auto constant = operand.getDefiningOp<ConstantOp>())
          b.clone(*constant, mapping);
      });
    for (Operation *op : stage.ops)
      b.clone(*op, mapping);
    SmallVector<Value> returned;
    for (Value value : stage.outputs)
      returned.push_back(mapping.lookup(value));
    func::ReturnOp::create(b, part.getLoc(), returned);
  }

  // @main: the stage calls. A partition's argument is the value its call
  // passed; a stage result replaces the value it returns.
  llvm::DenseMap<Value, Value> inMain;
  for (auto [call, part] : llvm::zip(calls, parts))
    for (auto [arg, operand] : llvm::zip(part.getArguments(), call.getOperands()))
      inMain[arg] = operand;
  OpBuilder b(calls.front());
  for (auto &[key, stage] : stages) {
    SmallVector<Value> operands;
    for (Value value : stage.inputs)
      operands.push_back(inMain.lookup(value));
    stage.call = func::CallOp::create(b, stage.func.getLoc(), stage.func, operands);
    stage.call->setAttr(kDeviceAttrName, stage.func->getAttr(kDeviceAttrName));
    for (auto [value, result] : llvm::zip(stage.outputs, stage.call.getResults()))
      inMain[value] = result;
  }
  for (auto [call, part] : llvm::zip(calls, parts)) {
    Operation *ret = part.getBody().front().getTerminator();
    for (auto [result, value] : llvm::zip(call.getResults(), ret->getOperands()))
      result.replaceAllUsesWith(inMain.lookup(value));
    call.erase();
  }
  for (func::FuncOp part : parts)
    if (SymbolTable::symbolKnownUseEmpty(part, getOperation()))
      symbols.erase(part);
  return success();
}

void KilnFormStagesPass::runOnOperation() {
  ModuleOp module = getOperation();
  SymbolTable symbols(module);
  // A partitioned function calls functions placed on devices, and nothing else.
  SmallVector<std::pair<func::FuncOp, SmallVector<func::CallOp>>> work;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (func.isExternal() || func->hasAttr(kDeviceAttrName))
      continue;
    SmallVector<func::CallOp> calls;
    bool partitioned = true;
    for (Operation &op : func.getBody().front().without_terminator()) {
      auto call = dyn_cast<func::CallOp>(op);
      auto callee = call ? symbols.lookup<func::FuncOp>(call.getCallee()) : nullptr;
      if (!callee || !callee->hasAttr(kDeviceAttrName) || call->hasAttr(kDeviceAttrName)) {
        partitioned = false;
        break;
      }
      calls.push_back(call);
    }
    if (partitioned && !calls.empty())
      work.push_back({func, calls});
  }
  for (auto &[func, calls] : work)
    if (failed(formStages(func, calls, symbols)))
      return signalPassFailure();
}

} // namespace
