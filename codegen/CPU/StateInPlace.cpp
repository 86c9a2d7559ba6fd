//===- StateInPlace.cpp - Train-step state updated in its own buffer ------===//
//
// See KilnStateInPlacePass in Passes.td.
//
//===----------------------------------------------------------------------===//
#include "codegen/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/SetVector.h"

namespace kiln {
#define GEN_PASS_DEF_KILNSTATEINPLACEPASS
#include "codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

constexpr StringLiteral kPairsAttr = "kiln.state_pairs";
constexpr StringLiteral kInPlaceAttr = "kiln.in_place_state";
constexpr StringLiteral kCollectivePrefix = "kiln_all_reduce";

/// `root` and every view of it, transitively.
llvm::SmallPtrSet<Value, 16> viewsOf(Value root) {
  llvm::SmallPtrSet<Value, 16> views;
  SmallVector<Value> work{root};
  views.insert(root);
  while (!work.empty()) {
    Value value = work.pop_back_val();
    for (Operation *user : value.getUsers()) {
      auto view = dyn_cast<ViewLikeOpInterface>(user);
      if (!view || view.getViewSource() != value)
        continue;
      for (Value result : user->getResults())
        if (views.insert(result).second)
          work.push_back(result);
    }
  }
  return views;
}

/// Whether `use` is an operand that a call marked kiln.no_capture only
/// reads (kiln.read_only_operands): the runtime calls that read a buffer
/// while they run (a blocked convolution's filters) and keep nothing after
/// they return.
bool isReadOfCall(OpOperand &use) {
  Operation *user = use.getOwner();
  auto reads = user->getAttrOfType<DenseI64ArrayAttr>(kReadOnlyOperandsAttr);
  return isa<func::CallOp>(user) && user->hasAttr(kNoCaptureCallAttr) && reads &&
         llvm::is_contained(reads.asArrayRef(), use.getOperandNumber());
}

/// Adds to `views` the addresses taken of them that reach only reads of
/// calls, directly or offset by additions, and those offset addresses: each
/// call that takes one touches the buffer where it stands, as an op that
/// takes a view does (and, like a view, does not write it).
void addCallAddresses(llvm::SmallPtrSet<Value, 16> &views) {
  SmallVector<Value> extracts;
  for (Value view : views)
    for (Operation *user : view.getUsers())
      if (auto extract = dyn_cast<memref::ExtractAlignedPointerAsIndexOp>(user))
        extracts.push_back(extract.getResult());
  for (Value extract : extracts) {
    // The address and its offsets, each reached once.
    llvm::SetVector<Value> addresses;
    addresses.insert(extract);
    bool onlyReads = true;
    for (size_t i = 0; i < addresses.size() && onlyReads; ++i)
      for (OpOperand &use : addresses[i].getUses()) {
        if (auto add = dyn_cast<arith::AddIOp>(use.getOwner()))
          addresses.insert(add.getResult());
        else if (!isReadOfCall(use))
          onlyReads = false;
      }
    if (onlyReads)
      views.insert(addresses.begin(), addresses.end());
  }
}

/// Whether `input` and `output` are the same view of the pair's two buffers:
/// the buffers themselves, or subviews with the same offsets, sizes and
/// strides of such views.
bool sameView(Value input, Value output, Value inputRoot, Value outputRoot) {
  if (input == inputRoot || output == outputRoot)
    return input == inputRoot && output == outputRoot;
  auto in = input.getDefiningOp<memref::SubViewOp>();
  auto out = output.getDefiningOp<memref::SubViewOp>();
  if (!in || !out || in.getType() != out.getType())
    return false;
  auto same = [](ArrayRef<OpFoldResult> a, ArrayRef<OpFoldResult> b) {
    return llvm::equal(a, b, [](OpFoldResult x, OpFoldResult y) { return x == y; });
  };
  return same(in.getMixedOffsets(), out.getMixedOffsets()) &&
         same(in.getMixedSizes(), out.getMixedSizes()) &&
         same(in.getMixedStrides(), out.getMixedStrides()) &&
         sameView(in.getSource(), out.getSource(), inputRoot, outputRoot);
}

/// The buffers and views of one state pair.
struct Pair {
  Value input, output;
  llvm::SmallPtrSet<Value, 16> inputViews, outputViews;

  bool touchesInput(Operation *op) const { return touches(op, inputViews); }
  bool touchesOutput(Operation *op) const { return touches(op, outputViews); }

  /// Whether `op` takes one of `views` as an operand.
  static bool uses(Operation *op, const llvm::SmallPtrSet<Value, 16> &views) {
    return llvm::any_of(op->getOperands(), [&](Value v) { return views.contains(v); });
  }
  /// ... or an op nested in it does.
  static bool touches(Operation *op, const llvm::SmallPtrSet<Value, 16> &views) {
    return op
        ->walk([&](Operation *nested) {
          return uses(nested, views) ? WalkResult::interrupt() : WalkResult::advance();
        })
        .wasInterrupted();
  }

  /// Whether `op` (nested ops included) may write the input: as a linalg
  /// op's destination, a copy's target, a store, or any op with a write
  /// effect that takes a view of it. Views and calls (whose outputs are
  /// buffers of their own) only read.
  bool writesInput(Operation *op) const {
    return op
        ->walk([&](Operation *nested) {
          if (isa<ViewLikeOpInterface, func::CallOp>(nested))
            return WalkResult::advance();
          for (OpOperand &operand : nested->getOpOperands()) {
            if (!inputViews.contains(operand.get()))
              continue;
            bool writes = false;
            if (auto linalgOp = dyn_cast<linalg::LinalgOp>(nested))
              writes = linalgOp.isDpsInit(&operand);
            else if (auto copy = dyn_cast<memref::CopyOp>(nested))
              writes = copy.getTarget() == operand.get();
            else if (auto effects = dyn_cast<MemoryEffectOpInterface>(nested)) {
              SmallVector<MemoryEffects::EffectInstance> instances;
              effects.getEffectsOnValue(operand.get(), instances);
              writes = llvm::any_of(instances, [](const MemoryEffects::EffectInstance &effect) {
                return isa<MemoryEffects::Write>(effect.getEffect());
              });
            } else
              writes = true;
            if (writes)
              return WalkResult::interrupt();
          }
          return WalkResult::advance();
        })
        .wasInterrupted();
  }

  /// Whether `op` reads an element of the input and writes the same element
  /// of the output, through the same view, and touches neither otherwise.
  bool isElementwiseUpdate(Operation *op) const {
    if (auto copy = dyn_cast<memref::CopyOp>(op))
      return sameView(copy.getSource(), copy.getTarget(), input, output);
    auto generic = dyn_cast<linalg::GenericOp>(op);
    if (!generic || !generic.hasPureBufferSemantics() ||
        generic.getNumParallelLoops() != generic.getNumLoops())
      return false;
    // The one destination that is a view of the output (an optimizer's
    // kernel may write several state tensors at once).
    OpOperand *init = nullptr;
    for (OpOperand &operand : generic.getDpsInitsMutable()) {
      if (!outputViews.contains(operand.get()))
        continue;
      if (init || !generic.getMatchingIndexingMap(&operand).isIdentity())
        return false;
      init = &operand;
    }
    if (!init)
      return false;
    // The payload reads elements through its block arguments alone (not a
    // load of some other element of either buffer).
    if (generic.getRegion()
            .walk([&](Operation *nested) {
              return usesEither(nested) ? WalkResult::interrupt() : WalkResult::advance();
            })
            .wasInterrupted())
      return false;
    for (OpOperand *operand : generic.getDpsInputOperands()) {
      if (outputViews.contains(operand->get()))
        return false;
      if (inputViews.contains(operand->get()) &&
          (!generic.getMatchingIndexingMap(operand).isIdentity() ||
           !sameView(operand->get(), init->get(), input, output)))
        return false;
    }
    return true;
  }

  /// Whether `op` takes a view of either buffer as an operand.
  bool usesEither(Operation *op) const { return uses(op, inputViews) || uses(op, outputViews); }

  /// Whether the first op that touches the output (a kernel, or one op)
  /// touches either buffer only through one elementwise update: a kernel's
  /// (scf.forall's) body holds that update directly, on a tile whose offsets
  /// follow the iteration, so that each element is updated once, and every
  /// other op in it that takes a view of either buffer is a view. (A second
  /// update could read an element that the first has already written.)
  bool updatesElementwise(Operation *op) const {
    if (op->getNumRegions() == 0 || isa<linalg::GenericOp>(op))
      return isElementwiseUpdate(op);
    auto kernel = dyn_cast<scf::ForallOp>(op);
    if (!kernel)
      return false;
    int updates = 0;
    bool other = op->walk<WalkOrder::PreOrder>([&](Operation *nested) {
                     if (nested == op || isa<ViewLikeOpInterface>(nested) || !usesEither(nested))
                       return WalkResult::advance();
                     if (nested->getParentOp() != op || !isElementwiseUpdate(nested) ||
                         !followsIteration(kernel, updatedView(nested)))
                       return WalkResult::interrupt();
                     ++updates;
                     return WalkResult::skip();
                   }).wasInterrupted();
    return !other && updates == 1;
  }

  /// The view of the output that the update `op` writes.
  Value updatedView(Operation *op) const {
    if (auto copy = dyn_cast<memref::CopyOp>(op))
      return copy.getTarget();
    for (Value init : cast<linalg::GenericOp>(op).getDpsInits())
      if (outputViews.contains(init))
        return init;
    return Value();
  }

  /// Whether `view` is a subview of `kernel`'s own tile: some offset is an
  /// induction variable of the kernel or computed in its body.
  static bool followsIteration(scf::ForallOp kernel, Value view) {
    auto subview = view ? view.getDefiningOp<memref::SubViewOp>() : nullptr;
    return subview && llvm::any_of(subview.getOffsets(), [&](Value offset) {
             return kernel.getRegion().isAncestor(offset.getParentRegion());
           });
  }
};

/// Whether the pair may share one buffer (see the pass description).
bool mayShareBuffer(func::FuncOp func, Pair &pair) {
  pair.inputViews = viewsOf(pair.input);
  pair.outputViews = viewsOf(pair.output);
  addCallAddresses(pair.inputViews);
  addCallAddresses(pair.outputViews);
  // An alias that is not a view (a transpose, a select of buffers, a
  // pointer other than those that calls only read) would hide later reads.
  bool hidden = func.walk([&](Operation *op) {
                      if (isa<ViewLikeOpInterface>(op) || !pair.usesEither(op) ||
                          llvm::any_of(op->getResults(), [&](Value result) {
                            return pair.inputViews.contains(result) ||
                                   pair.outputViews.contains(result);
                          }))
                        return WalkResult::advance();
                      bool aliases = isa<memref::ExtractAlignedPointerAsIndexOp>(op) ||
                                     llvm::any_of(op->getResultTypes(), [](Type type) {
                                       return isa<BaseMemRefType, LLVM::LLVMPointerType>(type);
                                     });
                      return aliases ? WalkResult::interrupt() : WalkResult::advance();
                    })
                    .wasInterrupted();
  if (hidden)
    return false;
  bool written = false;
  for (Operation &op : func.getBody().front()) {
    if (isa<ViewLikeOpInterface>(op))
      continue;
    if (pair.writesInput(&op))
      return false;
    bool input = pair.touchesInput(&op);
    if (written) {
      if (input)
        return false;
      continue;
    }
    if (!pair.touchesOutput(&op))
      continue;
    written = true;
    if (input && !pair.updatesElementwise(&op))
      return false;
  }
  return true;
}

bool callsCollective(func::FuncOp func) {
  return func
      .walk([](func::CallOp call) {
        return call.getCallee().starts_with(kCollectivePrefix) ? WalkResult::interrupt()
                                                               : WalkResult::advance();
      })
      .wasInterrupted();
}

struct KilnStateInPlacePass : impl::KilnStateInPlacePassBase<KilnStateInPlacePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<int64_t> inPlace;
    bool any = false;
    for (auto func : module.getOps<func::FuncOp>()) {
      auto pairs = func->getAttrOfType<DenseI64ArrayAttr>(kPairsAttr);
      if (!func->hasAttr(kPairsAttr))
        continue;
      if (any) {
        func.emitError() << "kiln-state-in-place: more than one function has '" << kPairsAttr
                         << "'";
        return signalPassFailure();
      }
      any = true;
      if (!pairs || pairs.size() % 2 != 0) {
        func.emitError() << "kiln-state-in-place: '" << kPairsAttr
                         << "' must be an array of input and output argument numbers, in pairs";
        return signalPassFailure();
      }
      func->removeAttr(kPairsAttr);
      if (func.isExternal())
        continue;
      bool collective = callsCollective(func);
      int64_t arguments = func.getNumArguments();
      Block &body = func.getBody().front();
      for (int64_t i = 0; i < pairs.size(); i += 2) {
        int64_t in = pairs[i], out = pairs[i + 1];
        if (in < 0 || out < 0 || in >= arguments || out >= arguments || in == out) {
          func.emitError() << "kiln-state-in-place: state pair (" << in << ", " << out
                           << ") names no two arguments of the " << arguments << " it has";
          return signalPassFailure();
        }
        Value input = body.getArgument(in), output = body.getArgument(out);
        if (input.getType() != output.getType() || !isa<MemRefType>(input.getType())) {
          func.emitError() << "kiln-state-in-place: state pair (" << in << ", " << out
                           << ") joins buffers of different types, " << input.getType() << " and "
                           << output.getType();
          return signalPassFailure();
        }
        Pair pair{input, output, {}, {}};
        if (!collective && mayShareBuffer(func, pair))
          inPlace.push_back(out);
      }
    }
    if (any)
      module->setAttr(kInPlaceAttr, DenseI64ArrayAttr::get(&getContext(), inPlace));
  }
};

} // namespace
} // namespace kiln
