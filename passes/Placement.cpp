//===- Placement.cpp - Places kiln ops on devices -------------------------===//
//
// Explicit placement (attributes, then --place rules), soft placement, and a
// small cost model for the rest; see KilnPlacePass in Passes.td.
//
//===----------------------------------------------------------------------===//
#include "dialects/kiln/Device.h"
#include "dialects/kiln/KilnOps.h"
#include "passes/Passes.h"

#include "llvm/Support/Regex.h"

#include <set>

namespace kiln {
#define GEN_PASS_DEF_KILNPLACEPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;
using namespace kiln;

std::string kiln::nodeName(Location loc) {
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    for (Location inner : fused.getLocations())
      if (std::string name = nodeName(inner); !name.empty())
        return name;
    return "";
  }
  auto named = dyn_cast<NameLoc>(loc);
  if (!named)
    return "";
  StringRef name = named.getName().getValue();
  // Initializers and graph inputs are named by what they are.
  for (StringRef prefix : {"initializer '", "input '"})
    if (name.starts_with(prefix) && name.ends_with("'"))
      return name.drop_front(prefix.size()).drop_back().str();
  return name.str();
}

FailureOr<PlacementRule> kiln::parsePlacementRule(StringRef spec, std::string &error) {
  auto [pattern, device] = spec.rsplit('=');
  if (!spec.contains('=') || pattern.empty()) {
    error = "placement rule '" + spec.str() + "' is not NODE_REGEX=DEVICE";
    return failure();
  }
  PlacementRule rule;
  rule.text = spec.str();
  rule.pattern = pattern.str();
  std::string regexError;
  rule.regex = std::make_shared<llvm::Regex>("^(" + rule.pattern + ")$");
  if (!rule.regex->isValid(regexError)) {
    error = "placement rule '" + spec.str() + "': bad regular expression: " + regexError;
    return failure();
  }
  std::string deviceError;
  std::optional<DeviceName> name = DeviceName::parse(device, deviceError);
  if (!name) {
    error = "placement rule '" + spec.str() + "': " + deviceError;
    return failure();
  }
  rule.device = *name;
  return rule;
}

bool PlacementRule::matches(StringRef node) const {
  return regex->match(node);
}

namespace {

/// Bytes of a tensor value (0 when not statically shaped).
int64_t tensorBytes(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || !type.hasStaticShape())
    return 0;
  return type.getNumElements() * std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
}

/// A shape computation: integer results of at most 16 elements in all.
bool isTinyShapeOp(Operation *op) {
  int64_t elements = 0;
  for (Type type : op->getResultTypes()) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor || !tensor.hasStaticShape() || !isa<IntegerType>(tensor.getElementType()))
      return false;
    elements += tensor.getNumElements();
  }
  return op->getNumResults() > 0 && elements <= 16;
}

struct KilnPlacePass : kiln::impl::KilnPlacePassBase<KilnPlacePass> {
  using KilnPlacePassBase::KilnPlacePassBase;

  void runOnOperation() override;

private:
  /// Checks that `device` is local and has code; returns the device the op
  /// runs on (moved by soft placement), or failure after an error.
  FailureOr<DeviceName> admit(Operation *op, const DeviceName &device, StringRef source);

  bool hasCode(DeviceType type) const { return llvm::is_contained(types, type); }

  SmallVector<DeviceType> types;
  DeviceName fallback;
};

FailureOr<DeviceName> KilnPlacePass::admit(Operation *op, const DeviceName &device,
                                           StringRef source) {
  if (!device.isLocal()) {
    op->emitError() << "placed on '" << device.str() << "' (" << source
                    << "), a device of another task; an artifact runs in one process, "
                       "/job:localhost/replica:0/task:0";
    return failure();
  }
  DeviceName full = device.completed(*fallback.type);
  if (hasCode(*full.type))
    return full;
  std::string available;
  for (DeviceType type : types)
    available += (available.empty() ? "" : ", ") + stringifyDeviceType(type).str();
  if (!allowSoftPlacement) {
    op->emitError() << "'" << op->getName() << "' is placed on '" << full.str() << "' ("
                    << source << ") but the artifact has no " << stringifyDeviceType(*full.type)
                    << " code (it is compiled for " << available << "); add a target for it, "
                    << "or allow soft placement to move the op";
    return failure();
  }
  op->emitWarning() << "'" << op->getName() << "' has no kernel on '" << full.str() << "' ("
                    << source << "); soft placement moves it to '" << fallback.str() << "'";
  return fallback;
}

void KilnPlacePass::runOnOperation() {
  func::FuncOp func = getOperation();
  if (func.isExternal())
    return;
  MLIRContext *context = &getContext();

  types.clear();
  for (const std::string &name : deviceTypes) {
    std::string upper = StringRef(name).upper();
    if (upper == "CPU" || upper == "GPU") {
      types.push_back(upper == "CPU" ? DeviceType::CPU : DeviceType::GPU);
      continue;
    }
    func.emitError() << "kiln-place: unknown device type '" << name << "' (CPU, GPU)";
    return signalPassFailure();
  }
  if (types.empty())
    types.push_back(DeviceType::CPU);

  std::string error;
  std::optional<DeviceName> defaultName = DeviceName::parse(defaultDevice, error);
  if (!defaultName) {
    func.emitError() << "kiln-place: default device: " << error;
    return signalPassFailure();
  }
  if (!defaultName->isLocal()) {
    func.emitError() << "kiln-place: default device '" << defaultDevice
                     << "' is a device of another task; an artifact runs in one process";
    return signalPassFailure();
  }
  fallback = defaultName->completed(DeviceType::CPU);
  if (!hasCode(*fallback.type)) {
    if (!allowSoftPlacement) {
      func.emitError() << "kiln-place: default device '" << fallback.str() << "' has no "
                       << stringifyDeviceType(*fallback.type) << " code in this artifact";
      return signalPassFailure();
    }
    fallback = DeviceName::local(types.front(), 0);
  }
  // The CPU that keeps tiny shape computations off GPUs, when the artifact
  // has CPU code.
  std::optional<DeviceName> hostCpu;
  if (hasCode(DeviceType::CPU))
    hostCpu = *fallback.type == DeviceType::CPU ? fallback : DeviceName::local(DeviceType::CPU, 0);

  SmallVector<PlacementRule> parsedRules;
  for (const std::string &spec : rules) {
    FailureOr<PlacementRule> rule = parsePlacementRule(spec, error);
    if (failed(rule)) {
      func.emitError() << "kiln-place: " << error;
      return signalPassFailure();
    }
    parsedRules.push_back(*rule);
  }

  Block &body = func.getBody().front();
  llvm::DenseMap<Operation *, DeviceName> placed;
  bool failedAny = false;

  // 1-2. Explicit placement, then soft placement.
  for (Operation &op : body.without_terminator()) {
    std::optional<DeviceName> wanted;
    std::string source;
    if (auto attr = op.getAttrOfType<StringAttr>(kDeviceAttrName)) {
      wanted = DeviceName::parse(attr.getValue(), error);
      if (!wanted) {
        op.emitError() << error;
        failedAny = true;
        continue;
      }
      source = "its " + kDeviceAttrName.str() + " attribute";
    } else if (!parsedRules.empty()) {
      std::string node = nodeName(op.getLoc());
      for (const PlacementRule &rule : parsedRules)
        if (rule.matches(node)) {
          wanted = rule.device;
          source = "rule '" + rule.text + "'";
          break;
        }
    }
    if (!wanted)
      continue;
    FailureOr<DeviceName> device = admit(&op, *wanted, source);
    if (failed(device)) {
      failedAny = true;
      continue;
    }
    placed[&op] = *device;
  }
  if (failedAny)
    return signalPassFailure();

  // 3. The cost model, in program order so producers come first.
  for (Operation &op : body.without_terminator()) {
    if (placed.count(&op) || isa<ConstantOp>(op))
      continue;
    std::optional<DeviceName> best;
    int64_t bestBytes = -1;
    for (Value operand : op.getOperands()) {
      Operation *producer = operand.getDefiningOp();
      auto it = producer ? placed.find(producer) : placed.end();
      if (it == placed.end())
        continue;
      int64_t bytes = tensorBytes(operand);
      if (bytes > bestBytes) {
        best = it->second;
        bestBytes = bytes;
      }
    }
    DeviceName device = best ? *best : fallback;
    if (best && *best->type == DeviceType::GPU && hostCpu && isTinyShapeOp(&op))
      device = *hostCpu;
    placed[&op] = device;
  }
  // Constants go with their first user; unused ones with the default.
  for (Operation &op : body.without_terminator()) {
    if (placed.count(&op))
      continue;
    DeviceName device = fallback;
    Operation *first = nullptr;
    for (Operation *user : op.getUsers()) {
      Operation *top = body.findAncestorOpInBlock(*user);
      if (top && placed.count(top) && (!first || top->isBeforeInBlock(first)))
        first = top;
    }
    if (first)
      device = placed[first];
    placed[&op] = device;
  }

  std::vector<std::pair<std::string, std::string>> lines;
  std::set<std::pair<std::string, std::string>> seen;
  for (Operation &op : body.without_terminator()) {
    std::string text = placed[&op].str();
    op.setAttr(kDeviceAttrName, StringAttr::get(context, text));
    if (log) {
      std::string node = nodeName(op.getLoc());
      std::pair<std::string, std::string> line(
          node.empty() ? op.getName().getStringRef().str() : node, text);
      if (seen.insert(line).second)
        lines.push_back(line);
    }
  }
  for (const auto &[node, device] : lines)
    llvm::errs() << node << ": " << device << "\n";
}

} // namespace
