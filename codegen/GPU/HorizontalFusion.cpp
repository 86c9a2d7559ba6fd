//===- HorizontalFusion.cpp - One kernel for a step's last loop fusions ---===//
//
// A train step ends with one elementwise update per parameter (and per
// optimizer slot), each a loop fusion whose results are only returned. On a
// GPU each would be a launch of its own, a few microseconds apiece however
// small the parameter; merged into one fusion they are one loop kernel with
// a segment per shape. The fusions are independent (nothing but the return
// reads them), so the merged fusion can sit right before the return.
//
//===----------------------------------------------------------------------===//
#include "codegen/GPU/Kernels.h"

#include "llvm/ADT/SetVector.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;

namespace kiln {

/// Kernel parameters (buffers, one pointer each) a merged fusion may have:
/// well within the 4 KB of launch arguments every CUDA driver takes.
constexpr unsigned kMaxMergedBuffers = 384;

/// Whether `fusion` is a loop fusion that only `func`'s return reads.
static bool isReturnedLoop(FusionOp fusion) {
  return fusion.getKind() == FusionKind::Loop && fusion->getNumResults() > 0 &&
         llvm::all_of(fusion->getUsers(), [](Operation *user) { return isa<func::ReturnOp>(user); });
}

/// Replaces `group` by one loop fusion before `at`, reading the union of
/// their inputs and yielding all their results.
static void merge(ArrayRef<FusionOp> group, Operation *at) {
  llvm::SetVector<Value> inputs;
  SmallVector<Type> types;
  SmallVector<Location> locations;
  for (FusionOp fusion : group) {
    inputs.insert(fusion.getInputs().begin(), fusion.getInputs().end());
    llvm::append_range(types, fusion.getResultTypes());
    locations.push_back(fusion.getLoc());
  }
  OpBuilder builder(at);
  auto merged = FusionOp::create(builder, FusedLoc::get(at->getContext(), locations), types,
                                 inputs.getArrayRef(), FusionKind::Loop);
  Block &body = merged.getBody().front();
  builder.setInsertionPointToStart(&body);
  SmallVector<Value> yielded;
  for (FusionOp fusion : group) {
    IRMapping mapping;
    for (auto [input, argument] : llvm::zip(fusion.getInputs(), fusion.getBody().getArguments()))
      mapping.map(argument, body.getArgument(llvm::find(inputs, input) - inputs.begin()));
    for (Operation &op : fusion.getBody().front().without_terminator())
      builder.clone(op, mapping);
    for (Value value : fusion.getYield().getValues())
      yielded.push_back(mapping.lookupOrDefault(value));
  }
  YieldOp::create(builder, merged.getLoc(), yielded);
  unsigned next = 0;
  for (FusionOp fusion : group) {
    for (Value result : fusion->getResults())
      result.replaceAllUsesWith(merged->getResult(next++));
    fusion->erase();
  }
}

void mergeReturnedLoopFusions(func::FuncOp func) {
  auto returns = llvm::to_vector(func.getOps<func::ReturnOp>());
  if (returns.size() != 1)
    return;
  SmallVector<FusionOp> candidates;
  for (FusionOp fusion : func.getOps<FusionOp>())
    if (isReturnedLoop(fusion))
      candidates.push_back(fusion);
  // Groups in program order, each within the launch-argument budget.
  SmallVector<FusionOp> group;
  unsigned buffers = 0;
  auto flush = [&] {
    if (group.size() > 1)
      merge(group, returns.front());
    group.clear();
    buffers = 0;
  };
  for (FusionOp fusion : candidates) {
    unsigned own = fusion.getInputs().size() + fusion->getNumResults();
    if (!group.empty() && buffers + own > kMaxMergedBuffers)
      flush();
    group.push_back(fusion);
    buffers += own;
  }
  flush();
}

} // namespace kiln
