//===- Partition.cpp - One function per device, with send/recv ------------===//
//
// Splits a placed function into per-device partitions connected by
// kiln.send/kiln.recv pairs; see KilnPartitionPass in Passes.td.
//
//===----------------------------------------------------------------------===//
#include "dialects/kiln/Device.h"
#include "dialects/kiln/KilnOps.h"
#include "passes/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringSet.h"

#include <numeric>

namespace kiln {
#define GEN_PASS_DEF_KILNPARTITIONPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

namespace {

/// One device's function under construction.
struct Partition {
  DeviceName device;
  std::string deviceText;
  func::FuncOp func;
  IRMapping mapping;
  /// Graph results it computes: (index in the original results, value).
  SmallVector<std::pair<unsigned, Value>> results;
};

struct KilnPartitionPass : kiln::impl::KilnPartitionPassBase<KilnPartitionPass> {
  void runOnOperation() override;

private:
  LogicalResult partition(func::FuncOp func, SymbolTable &symbols);
  /// A tensor name for the result of `producer`, unique in the module.
  std::string tensorName(Value value);

  llvm::StringSet<> usedNames;
};

std::string KilnPartitionPass::tensorName(Value value) {
  Operation *producer = value.getDefiningOp();
  std::string node = nodeName(producer->getLoc());
  if (node.empty())
    node = producer->getName().stripDialect().str();
  std::string base = node + ":" + std::to_string(cast<OpResult>(value).getResultNumber());
  std::string name = base;
  for (int n = 2; !usedNames.insert(name).second; ++n)
    name = base + "#" + std::to_string(n);
  return name;
}

LogicalResult KilnPartitionPass::partition(func::FuncOp func, SymbolTable &symbols) {
  Block &body = func.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());

  // The devices, from the ops' attributes. Constants are copied to their
  // users, so they make no partition of their own: one on a device without
  // other ops goes with the first device.
  llvm::DenseMap<Operation *, unsigned> deviceOf;
  SmallVector<DeviceName> devices;
  SmallVector<std::pair<Operation *, DeviceName>> constants;
  for (Operation &op : body.without_terminator()) {
    auto attr = op.getAttrOfType<StringAttr>(kDeviceAttrName);
    if (!attr)
      return op.emitError() << "kiln-partition: the op has no " << kDeviceAttrName
                            << " (run kiln-place first)";
    std::string error;
    std::optional<DeviceName> device = DeviceName::parse(attr.getValue(), error);
    if (!device)
      return op.emitError() << "kiln-partition: " << error;
    if (!device->isFull())
      return op.emitError() << "kiln-partition: device '" << attr.getValue()
                            << "' is not a full device name (run kiln-place first)";
    if (isa<ConstantOp>(op)) {
      constants.push_back({&op, *device});
      continue;
    }
    auto *it = llvm::find(devices, *device);
    deviceOf[&op] = it - devices.begin();
    if (it == devices.end())
      devices.push_back(*device);
  }
  for (auto &[op, device] : constants) {
    if (devices.empty())
      devices.push_back(device);
    auto *it = llvm::find(devices, device);
    deviceOf[op] = it == devices.end() ? 0 : it - devices.begin();
  }
  SmallVector<Operation *> original;
  for (Operation &op : body.without_terminator())
    original.push_back(&op);
  MLIRContext *context = func.getContext();
  if (devices.size() <= 1) {
    // One device: nothing to split; the function runs there.
    if (!devices.empty())
      func->setAttr(kDeviceAttrName, StringAttr::get(context, devices.front().str()));
    for (Operation &op : body.without_terminator())
      op.removeAttr(kDeviceAttrName);
    return success();
  }

  // Partitions in a stable order: CPUs first, then by index.
  SmallVector<unsigned> order(devices.size());
  std::iota(order.begin(), order.end(), 0);
  llvm::sort(order, [&](unsigned a, unsigned b) { return deviceLess(devices[a], devices[b]); });
  std::vector<Partition> parts(devices.size());
  OpBuilder builder(context);
  builder.setInsertionPointAfter(func);
  for (unsigned index : order) {
    Partition &part = parts[index];
    part.device = devices[index];
    part.deviceText = part.device.str();
    part.func = func::FuncOp::create(builder, func.getLoc(),
                                     (func.getSymName() + "_" + part.device.symbolSuffix()).str(),
                                     FunctionType::get(context, func.getArgumentTypes(), {}));
    symbols.insert(part.func); // renames on a clash
    part.func->setAttr(kDeviceAttrName, StringAttr::get(context, part.deviceText));
    Block *entry = part.func.addEntryBlock();
    for (auto [arg, copy] : llvm::zip(func.getArguments(), entry->getArguments()))
      part.mapping.map(arg, copy);
    builder.setInsertionPointAfter(part.func);
  }

  auto endOf = [](Partition &part) { return &part.func.getBody().front(); };
  // `value` as seen on device `to`: the value itself, a copy of a constant,
  // or a received tensor (sent once, right after its producer).
  auto lookupOn = [&](Value value, unsigned to, Location useLoc) -> Value {
    Partition &dest = parts[to];
    if (Value mapped = dest.mapping.lookupOrNull(value))
      return mapped;
    Operation *producer = value.getDefiningOp();
    if (isa<ConstantOp>(producer)) {
      OpBuilder b = OpBuilder::atBlockEnd(endOf(dest));
      Operation *copy = b.clone(*producer);
      copy->removeAttr(kDeviceAttrName);
      dest.mapping.map(producer->getResults(), copy->getResults());
      return dest.mapping.lookup(value);
    }
    Partition &source = parts[deviceOf.lookup(producer)];
    Value sent = source.mapping.lookup(value);
    auto nameAttr = StringAttr::get(context, tensorName(value));
    auto from = StringAttr::get(context, source.deviceText);
    auto toAttr = StringAttr::get(context, dest.deviceText);
    OpBuilder b(context);
    b.setInsertionPointAfter(sent.getDefiningOp());
    // After earlier sends of the same producer, so they keep result order.
    while (b.getInsertionPoint() != endOf(source)->end() &&
           isa<SendOp>(*b.getInsertionPoint()))
      b.setInsertionPointAfter(&*b.getInsertionPoint());
    SendOp::create(b, value.getLoc(), sent, nameAttr, from, toAttr);
    b.setInsertionPointToEnd(endOf(dest));
    Value recv = RecvOp::create(b, useLoc, value.getType(), nameAttr, from, toAttr);
    dest.mapping.map(value, recv);
    return recv;
  };

  for (Operation &op : body.without_terminator()) {
    if (isa<ConstantOp>(op))
      continue; // copied where used
    unsigned device = deviceOf.lookup(&op);
    Partition &part = parts[device];
    for (Value operand : op.getOperands())
      if (!isa<BlockArgument>(operand))
        (void)lookupOn(operand, device, op.getLoc());
    OpBuilder b = OpBuilder::atBlockEnd(endOf(part));
    Operation *copy = b.clone(op, part.mapping);
    copy->removeAttr(kDeviceAttrName);
  }

  // Graph results: computed by the device of their producer; graph inputs
  // returned as they are stay in the caller.
  SmallVector<Value> direct(ret.getNumOperands());
  for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
    if (isa<BlockArgument>(value)) {
      direct[index] = value;
      continue;
    }
    unsigned device = deviceOf.lookup(value.getDefiningOp());
    parts[device].results.push_back({static_cast<unsigned>(index), lookupOn(value, device,
                                                                            value.getLoc())});
  }

  // The partitions' returns and types.
  for (Partition &part : parts) {
    SmallVector<Value> values;
    for (auto &[index, value] : part.results)
      values.push_back(value);
    OpBuilder b = OpBuilder::atBlockEnd(endOf(part));
    func::ReturnOp::create(b, ret.getLoc(), values);
    part.func.setFunctionType(
        FunctionType::get(context, func.getArgumentTypes(), ValueRange(values).getTypes()));
  }

  // The function calls every partition once.
  SmallVector<Value> results(direct);
  OpBuilder b(ret);
  for (unsigned index : order) {
    Partition &part = parts[index];
    auto call = func::CallOp::create(b, func.getLoc(), part.func, func.getArguments());
    for (auto [slot, result] : llvm::zip(part.results, call.getResults()))
      results[slot.first] = result;
  }
  func::ReturnOp::create(b, ret.getLoc(), results);
  ret.erase();
  for (Operation *op : llvm::reverse(original))
    op->erase();
  return success();
}

void KilnPartitionPass::runOnOperation() {
  ModuleOp module = getOperation();
  SymbolTable symbols(module);
  usedNames.clear();
  SmallVector<func::FuncOp> funcs;
  // Functions of kiln ops not yet on a device (a partitioned function holds
  // only calls).
  for (auto func : module.getOps<func::FuncOp>())
    if (!func.isExternal() && !func->hasAttr(kDeviceAttrName) &&
        llvm::any_of(func.getBody().front(), [](Operation &op) {
          return isa<KilnDialect>(op.getDialect());
        }))
      funcs.push_back(func);
  for (func::FuncOp func : funcs)
    if (failed(partition(func, symbols)))
      return signalPassFailure();
}

} // namespace
