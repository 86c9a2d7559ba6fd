//===- OrderConstants.cpp - constant globals in first-use order -----------===//
//
// One-shot bufferization creates the constants' globals in an order that
// varies from run to run; this puts them, and their names, in the order the
// module first reads them, so that the same model always compiles to the
// same artifact.
//
//===----------------------------------------------------------------------===//
#include "codegen/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"

namespace kiln {
#define GEN_PASS_DEF_KILNORDERCONSTANTSPASS
#include "codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// `name` without a uniquing suffix `_<digits>`, when it has one.
StringRef withoutSuffix(StringRef name) {
  size_t underscore = name.rfind('_');
  if (underscore == StringRef::npos || underscore + 1 == name.size())
    return name;
  StringRef digits = name.drop_front(underscore + 1);
  return llvm::all_of(digits, llvm::isDigit) ? name.take_front(underscore) : name;
}

struct KilnOrderConstantsPass : impl::KilnOrderConstantsPassBase<KilnOrderConstantsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::MapVector<StringRef, memref::GlobalOp> constants;
    for (auto global : module.getOps<memref::GlobalOp>())
      if (global.getConstant() && global.getInitialValue())
        constants.insert({global.getSymName(), global});
    if (constants.empty())
      return;

    // First uses, in the module's order; then the globals nothing reads.
    llvm::SetVector<memref::GlobalOp> order;
    module.walk([&](memref::GetGlobalOp get) {
      auto it = constants.find(get.getName());
      if (it != constants.end())
        order.insert(it->second);
    });
    for (auto &[name, global] : constants)
      order.insert(global);

    // New names in that order, then one walk over the readers (after
    // bufferization only memref.get_global names a constant global).
    SmallVector<memref::GlobalOp> globals(order.begin(), order.end());
    llvm::StringMap<unsigned> seen;
    llvm::StringMap<StringAttr> renamed;
    for (memref::GlobalOp global : globals) {
      std::string base = withoutSuffix(global.getSymName()).str();
      unsigned count = seen[base]++;
      renamed[global.getSymName()] = StringAttr::get(
          &getContext(), count == 0 ? base : base + "_" + std::to_string(count));
    }
    module.walk([&](memref::GetGlobalOp get) {
      auto it = renamed.find(get.getName());
      if (it != renamed.end())
        get.setNameAttr(FlatSymbolRefAttr::get(it->second));
    });
    for (memref::GlobalOp global : globals)
      global.setSymNameAttr(renamed.lookup(global.getSymName()));
    for (memref::GlobalOp global : llvm::reverse(globals))
      global->moveBefore(&module.getBody()->front());
  }
};

} // namespace
} // namespace kiln
