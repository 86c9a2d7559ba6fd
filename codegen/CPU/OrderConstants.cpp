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
#include "mlir/IR/SymbolTable.h"

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

    // Rename through temporary names, so that no new name meets an old one.
    SmallVector<memref::GlobalOp> globals(order.begin(), order.end());
    SmallVector<std::string> bases;
    MLIRContext *ctx = &getContext();
    auto rename = [&](memref::GlobalOp global, const std::string &name) {
      if (failed(SymbolTable::replaceAllSymbolUses(global, StringAttr::get(ctx, name), module))) {
        global.emitError("kiln-order-constants: cannot rename the uses of this global");
        return false;
      }
      global.setSymName(name);
      return true;
    };
    for (auto [index, global] : llvm::enumerate(globals)) {
      bases.push_back(withoutSuffix(global.getSymName()).str());
      if (!rename(global, "__kiln_order_constants_" + std::to_string(index)))
        return signalPassFailure();
    }
    llvm::StringMap<unsigned> seen;
    for (auto [global, base] : llvm::zip_equal(globals, bases)) {
      unsigned count = seen[base]++;
      if (!rename(global, count == 0 ? base : base + "_" + std::to_string(count)))
        return signalPassFailure();
    }
    for (memref::GlobalOp global : llvm::reverse(globals))
      global->moveBefore(&module.getBody()->front());
  }
};

} // namespace
} // namespace kiln
