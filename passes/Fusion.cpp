//===- Fusion.cpp - The kiln-fuse pass: XLA-style op fusion ---------------===//
//
// Groups kiln ops into kiln.fusion ops. The pass visits ops from the end of
// the function; an op not yet in a group roots a new group, which pulls in
// its producers while the fusion rules and the cost rule (see Passes.td)
// allow. Because a producer joins only when every user of its result is in
// the group (or is duplicated into it), each group is convex and can be
// placed at its root. Sibling groups that read a common input are then
// merged into multi-output fusions, and every group is materialized as a
// kiln.fusion whose body is a copy of its members.
//
//===----------------------------------------------------------------------===//
#include "dialects/kiln/KilnOps.h"
#include "passes/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/raw_ostream.h"


namespace kiln {
#define GEN_PASS_DEF_KILNFUSEPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {

bool dependsOn(Operation *to, Operation *from) {
  SmallVector<Operation *> worklist = {to};
  llvm::SmallPtrSet<Operation *, 32> seen;
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    if (op == from)
      return true;
    if (!seen.insert(op).second || op->getBlock() != from->getBlock() || op->isBeforeInBlock(from))
      continue;
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp())
        worklist.push_back(def);
  }
  return false;
}

namespace {

/// What an op contributes to a kernel.
enum class OpClass { Elementwise, Movement, Reduction, Contraction, Opaque };

OpClass classify(Operation *op) {
  if (op->hasTrait<OpTrait::Elementwise>() ||
      isa<AddOp, SubOp, MulOp, DivOp, PowOp, MaxOp, MinOp, PReluOp, ModOp, AndOp, OrOp,
          XorOp, ShiftLeftOp, ShiftRightOp, EqualOp, LessOp, LessEqualOp, GreaterOp, GreaterEqualOp, WhereOp, DropoutOp>(op))
    return OpClass::Elementwise;
  if (isa<ReshapeOp, SqueezeOp, UnsqueezeOp, FlattenOp, TransposeOp, ExpandOp>(op))
    return OpClass::Movement;
  if (isa<ReduceSumOp, ReduceMaxOp, ReduceMinOp, ReduceProdOp, ReduceSumSquareOp,
          ReduceL1Op>(op))
    return OpClass::Reduction;
  if (isa<MatMulOp, ConvOp>(op))
    return OpClass::Contraction;
  return OpClass::Opaque;
}

/// Whether `op` transposes only the last two dimensions of its input.
bool isTransposeOfLastTwo(Operation *op) {
  auto transpose = dyn_cast<TransposeOp>(op);
  return transpose && swapsLastTwo(transpose.getPerm());
}

/// Elementwise ops cheap enough to compute twice rather than store: no
/// transcendental function, division, power or remainder.
bool isCheap(Operation *op) {
  return isa<AbsOp, NegOp, SignOp, ReluOp, FloorOp, CeilOp, RoundOp, NotOp, LeakyReluOp,
             HardSigmoidOp, ThresholdedReluOp, IsNaNOp, IsInfOp, AddOp, SubOp, MulOp,
             MaxOp, MinOp, PReluOp, AndOp, OrOp, XorOp, ShiftLeftOp, ShiftRightOp, EqualOp,
             LessOp, LessEqualOp,
             GreaterOp, GreaterEqualOp, WhereOp, CastOp, ReshapeOp, SqueezeOp,
             UnsqueezeOp, FlattenOp, TransposeOp, ExpandOp>(op);
}

/// Views: the same elements under another shape.
bool isView(Operation *op) { return isa<ReshapeOp, SqueezeOp, UnsqueezeOp, FlattenOp>(op); }

/// Whether `op`'s result is compared as floats, through views and
/// transposes (a max-pool's gradient finds each window's maximum by
/// comparing the pooled input with the pooled result; a ReLU's gradient
/// tests its input against zero). Such a value must have the same bits in
/// every kernel that reads it, and a copy computed in another kernel need
/// not: one may contract a multiply and an add into an FMA where the other
/// rounds twice, and an element one ulp from the maximum or from zero then
/// takes the other branch.
bool feedsFloatComparison(Operation *op) {
  SmallVector<Value> worklist(op->getResults());
  llvm::SmallPtrSet<Operation *, 8> seen;
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    for (Operation *user : value.getUsers()) {
      if (!seen.insert(user).second)
        continue;
      if (isa<EqualOp, LessOp, LessEqualOp, GreaterOp, GreaterEqualOp>(user) &&
          isa<FloatType>(getElementTypeOrSelf(user->getOperand(0).getType())))
        return true;
      if (isView(user) || isa<TransposeOp>(user))
        llvm::append_range(worklist, user->getResults());
    }
  }
  return false;
}

/// How many of `op`'s operands have as many elements as its result: the
/// tensors of its own size that a copy of it reads.
int64_t fullSizeOperands(Operation *op) {
  auto result = dyn_cast<ShapedType>(op->getResult(0).getType());
  if (!result || !result.hasStaticShape())
    return 0;
  int64_t elements = result.getNumElements();
  return llvm::count_if(op->getOperands(), [&](Value operand) {
    auto type = dyn_cast<ShapedType>(operand.getType());
    return type && type.hasStaticShape() && type.getNumElements() == elements;
  });
}

/// Whether copying `op` into a fusion makes it read one more tensor of the
/// copy's full size: `op` joins two or more of them (a residual sum), where
/// a chain of unary ops and broadcasts (a normalization's x - mean, times
/// 1 / stddev, times a scale) reads one.
bool joinsTensors(Operation *op) { return fullSizeOperands(op) >= 2; }

/// Whether a copy of the cheap `op` in another fusion would leave one of its
/// operands of its own size, computed by an expensive elementwise op that
/// only `op` reads, to be stored for both copies. SiLU's x * sigmoid(x) read
/// by two fusions (a squeeze-and-excitation's mean and scale) would store
/// the sigmoid and read it and x in each: two passes over the image more
/// than storing the product, into which the sigmoid then fuses.
bool copyStoresExpensiveOperand(Operation *op) {
  int64_t elements = cast<ShapedType>(op->getResult(0).getType()).getNumElements();
  return llvm::any_of(op->getOperands(), [&](Value operand) {
    Operation *def = operand.getDefiningOp();
    auto type = dyn_cast<ShapedType>(operand.getType());
    return def && isa<KilnDialect>(def->getDialect()) && def->getNumResults() == 1 &&
           classify(def) == OpClass::Elementwise && !isCheap(def) && operand.hasOneUse() &&
           type && type.hasStaticShape() && type.getNumElements() == elements;
  });
}

/// Joins of full-size tensors (joinsTensors) a fusion copies in, one after
/// another along a chain of producers, at most. A chain of sums that each
/// feed several fusions (a pre-LN transformer's residual stream, a running
/// sum of every earlier layer's output) would otherwise be computed whole
/// again in each of its consumers, reading every earlier layer's output
/// each time; other cheap chains are copied whole.
constexpr int kMaxDuplicatedJoins = 2;

ArrayRef<int64_t> shapeOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getShape();
}

int64_t elementsOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getNumElements();
}

/// A reduction's input shape and the shape of its result with kept
/// dimensions: the two shapes an input fusion's ops may produce.
struct RowShape {
  SmallVector<int64_t> rows, kept;

  /// Whether `op`'s result runs over the rows or the kept shape.
  bool fits(Operation *op) const {
    ArrayRef<int64_t> shape = shapeOf(op->getResult(0));
    return shape == ArrayRef<int64_t>(rows) || shape == ArrayRef<int64_t>(kept);
  }
};

std::optional<RowShape> rowShapeOf(Operation *reduction) {
  auto keepdims = reduction->getAttrOfType<BoolAttr>("keepdims");
  if (!keepdims || !keepdims.getValue())
    return std::nullopt;
  RowShape shape;
  shape.rows.assign(shapeOf(reduction->getOperand(0)).begin(),
                    shapeOf(reduction->getOperand(0)).end());
  shape.kept.assign(shapeOf(reduction->getResult(0)).begin(),
                    shapeOf(reduction->getResult(0)).end());
  return shape;
}

/// A group of ops on its way to becoming one kiln.fusion.
struct Group {
  llvm::SetVector<Operation *> members;
  bool hasContraction = false;
  std::optional<RowShape> rowShape; // set once a keepdims reduction joins
  bool hasReduction = false;
  bool opaque = false;

  FusionKind kind() const {
    if (opaque)
      return FusionKind::Single;
    if (hasContraction)
      return FusionKind::Output;
    if (hasReduction)
      return FusionKind::Input;
    return FusionKind::Loop;
  }
};

enum class Decision {
  Fuse,
  FuseAsRows, // fuse, and the group becomes an input fusion over the consumer's rows
  Duplicate,
  Refuse
};

/// Whether `op` computes its value from a keepdims reduction from `rows.rows`
/// to `rows.kept`, through at most a few elementwise ops of the kept shape.
bool derivesFromReduction(Operation *op, const RowShape &rows) {
  constexpr int kMaxDepth = 8;
  SmallVector<std::pair<Operation *, int>> worklist = {{op, 0}};
  while (!worklist.empty()) {
    auto [current, depth] = worklist.pop_back_val();
    if (!current || depth > kMaxDepth || current->getNumResults() != 1)
      continue;
    if (classify(current) == OpClass::Reduction) {
      std::optional<RowShape> shape = rowShapeOf(current);
      if (shape && shape->rows == rows.rows && shape->kept == rows.kept)
        return true;
      continue;
    }
    if (classify(current) != OpClass::Elementwise ||
        shapeOf(current->getResult(0)) != ArrayRef<int64_t>(rows.kept))
      continue;
    for (Value operand : current->getOperands())
      worklist.push_back({operand.getDefiningOp(), depth + 1});
  }
  return false;
}

/// The ops after `tail` in its block that, with `tail`, form a DAG whose
/// only value read outside it is that of its last op: each op reads a value
/// of the DAG, and every value of the DAG but the last is read only within
/// it. GELU's x * (1 + erf(x / sqrt(2))) / 2 reads x twice, so it is such a
/// DAG after x, where a chain of single-use ops stops at x. Empty when no
/// such DAG of at most `budget` ops, each accepted by `joins`, follows.
/// A value read twice within the DAG must be cheap (isCheap) or the product
/// itself: the kernel's loop fusion computes each of its readers' values
/// in one loop only by computing it again for each.
template <typename Joins>
SmallVector<Operation *> elementwiseDagAfter(Operation *tail, int64_t budget, Joins joins) {
  constexpr int kMaxOpsScanned = 32;
  auto readTwiceOk = [](Operation *op) {
    return op->hasOneUse() || classify(op) == OpClass::Contraction || isCheap(op);
  };
  if (!readTwiceOk(tail))
    return {};
  llvm::SmallPtrSet<Operation *, 8> dag = {tail};
  SmallVector<Operation *> ops;
  // Values of the DAG still read by an op not yet in it.
  int64_t open = std::distance(tail->getUsers().begin(), tail->getUsers().end());
  int scanned = 0;
  for (Operation *op = tail->getNextNode(); op && scanned < kMaxOpsScanned;
       op = op->getNextNode(), ++scanned) {
    int64_t reads = llvm::count_if(
        op->getOperands(), [&](Value operand) { return dag.contains(operand.getDefiningOp()); });
    if (reads == 0)
      continue;
    if (!joins(op) || static_cast<int64_t>(ops.size()) >= budget || op->getNumResults() != 1)
      return {};
    dag.insert(op);
    ops.push_back(op);
    open -= reads;
    if (open == 0) {
      if (op->getResult(0).use_empty())
        return {};
      return ops; // every read of the DAG so far is inside it: `op` closes it
    }
    if (!readTwiceOk(op))
      return {};
    open += std::distance(op->getUsers().begin(), op->getUsers().end());
  }
  return {};
}

Operation *lastMember(const Group &group) {
  Operation *last = group.members.front();
  for (Operation *member : group.members)
    if (last->isBeforeInBlock(member))
      last = member;
  return last;
}

struct KilnFusePass : impl::KilnFusePassBase<KilnFusePass> {
  using KilnFusePassBase::KilnFusePassBase;

  void runOnOperation() override;

private:
  bool isFusible(Operation *op) const {
    return op && isa<KilnDialect>(op->getDialect()) &&
           !isa<ConstantOp, FusionOp, YieldOp>(op) && op->getNumResults() == 1 &&
           // Collectives, blocked convolutions and pools of blocked images
           // are calls into the runtime, not kernels.
           !isa<AllReduceOp, AllReduceStartOp, AllReduceWaitOp, WorldSizeOp, ReplicaRankOp,
                BlockedConvOp>(op) &&
           !isBlockedPool(op);
  }

  bool isClonedConstant(Value value) const {
    auto constant = value.getDefiningOp<ConstantOp>();
    if (!constant)
      return false;
    auto elements = dyn_cast<ElementsAttr>(constant.getValue());
    return elements && (elements.isSplat() || elements.getNumElements() <=
                                                  maxClonedConstantElements);
  }

  /// Whether `op`'s result is stored for a matrix product or convolution
  /// whatever the group being grown does (an output fusion takes in no
  /// producers), and a copy would read a tensor of that size again (`op` has
  /// an operand of its own size). Such an op is not copied: a layer norm's
  /// input gradient, read by the next product and by a bias gradient's sum,
  /// is then read by the sum, where a copy would read the normalized input
  /// and the cotangent again; and a softmax's probabilities, read by P V and
  /// by the softmax's gradient, do not take the exponentials into the
  /// gradient's kernel and split the forward softmax around them.
  bool storedForProduct(Operation *op) const {
    if (fullSizeOperands(op) == 0)
      return false;
    return llvm::any_of(op->getUsers(), [&](Operation *user) {
      Group *owner = groupOf.lookup(user);
      return owner && owner->hasContraction;
    });
  }

  /// Whether `op`'s result is stored for a kernel that takes in no
  /// producers (a call into the runtime such as a blocked convolution, an
  /// opaque op) and `group` reads what that kernel
  /// computes. The group then runs after the store, so a copy of `op` that
  /// reads a tensor of its size again saves nothing and costs a read; nor
  /// can the copy merge back with the original as siblings, since the group
  /// depends on it. A residual sum that the next block's blocked convolution
  /// reads (ConvNeXt's) is so read by the next residual sum, not computed
  /// again there from the earlier sums and the blocks' outputs.
  bool storedAndReadBack(Operation *op, const Group &group) const {
    if (fullSizeOperands(op) == 0)
      return false;
    Operation *root = lastMember(group);
    return llvm::any_of(op->getUsers(), [&](Operation *user) {
      return !group.members.contains(user) &&
             (!isFusible(user) || classify(user) == OpClass::Opaque) && dependsOn(root, user);
    });
  }

  Decision decide(Operation *producer, Operation *consumer, const Group &group) const;
  void growGroup(Group &group);
  void formOutputGroups(ArrayRef<Operation *> ops,
                        SmallVectorImpl<std::unique_ptr<Group>> &groups);
  void mergeSiblings(SmallVectorImpl<std::unique_ptr<Group>> &groups);
  FusionOp materialize(Group &group);
  void printReport(ArrayRef<FusionOp> fusions);

  DenseMap<Operation *, Group *> groupOf;
};

Decision KilnFusePass::decide(Operation *producer, Operation *consumer,
                              const Group &group) const {
  OpClass cls = classify(producer);
  if (cls == OpClass::Opaque || group.opaque)
    return Decision::Refuse;
  if (static_cast<int64_t>(group.members.size()) >= maxOps)
    return Decision::Refuse;
  bool usersInGroup = llvm::all_of(producer->getUsers(), [&](Operation *user) {
    return group.members.contains(user);
  });
  // An output fusion is a contraction and its epilogue: nothing else joins.
  // A reduction that drops its dimensions has no rows to share.
  if (group.hasContraction || (group.hasReduction && !group.rowShape))
    return Decision::Refuse;

  switch (cls) {
  case OpClass::Reduction: {
    if (!usersInGroup)
      return Decision::Refuse; // never computed twice
    std::optional<RowShape> rows = rowShapeOf(producer);
    if (!rows)
      return Decision::Refuse;
    if (group.rowShape)
      return rows->rows == group.rowShape->rows && rows->kept == group.rowShape->kept
                 ? Decision::Fuse
                 : Decision::Refuse;
    // The group's ops must all run over the reduction's rows or its kept
    // shape, so that one loop over the kept dimensions computes them all.
    bool fits = llvm::all_of(group.members,
                             [&](Operation *member) { return rows->fits(member); });
    return fits ? Decision::Fuse : Decision::Refuse;
  }
  case OpClass::Elementwise:
  case OpClass::Movement: {
    if (group.rowShape && !group.rowShape->fits(producer))
      return Decision::Refuse;
    // Cost rule: an expensive producer whose result the consumer broadcasts
    // would be recomputed once per broadcast element. Inside an input fusion
    // a per-row value is computed once per row, so that case is allowed.
    bool broadcast = elementsOf(producer->getResult(0)) < elementsOf(consumer->getResult(0));
    if (broadcast && !isCheap(producer)) {
      if (group.rowShape) {
        if (shapeOf(producer->getResult(0)) != ArrayRef<int64_t>(group.rowShape->kept))
          return Decision::Refuse;
      } else {
        // A per-row value (computed from a reduction over the consumer's
        // rows) makes this an input fusion whose rows are the consumer's.
        RowShape rows = {llvm::to_vector(shapeOf(consumer->getResult(0))),
                         llvm::to_vector(shapeOf(producer->getResult(0)))};
        if (!derivesFromReduction(producer, rows) || !usersInGroup ||
            !llvm::all_of(group.members, [&](Operation *m) { return rows.fits(m); }))
          return Decision::Refuse;
        return Decision::FuseAsRows;
      }
    }
    if (usersInGroup)
      return Decision::Fuse;
    return isCheap(producer) && !feedsFloatComparison(producer) &&
                   !copyStoresExpensiveOperand(producer) && !storedForProduct(producer) &&
                   !storedAndReadBack(producer, group)
               ? Decision::Duplicate
               : Decision::Refuse;
  }
  case OpClass::Contraction: // already in its output fusion (formOutputGroups)
  case OpClass::Opaque:
    break;
  }
  return Decision::Refuse;
}

void KilnFusePass::growGroup(Group &group) {
  // First only producers whose every user is already in the group, to a
  // fixed point (a producer's last user may join late); then cheap producers
  // with users elsewhere are duplicated in, at most kMaxDuplicatedJoins
  // joins along a chain.
  DenseMap<Operation *, int> joinsOf; // copies: joins copied up to and including them
  for (bool allowDuplicates : {false, true}) {
    bool changed = true;
    while (changed) {
      changed = false;
      SmallVector<Operation *> consumers(group.members.begin(), group.members.end());
      for (Operation *consumer : consumers) {
        for (OpOperand &operand : consumer->getOpOperands()) {
          Operation *producer = operand.get().getDefiningOp();
          if (!isFusible(producer) || groupOf.count(producer))
            continue;
          Decision decision = decide(producer, consumer, group);
          int joins = decision == Decision::Duplicate
                          ? joinsOf.lookup(consumer) + (joinsTensors(producer) ? 1 : 0)
                          : 0;
          if (decision == Decision::Refuse ||
              (decision == Decision::Duplicate &&
               (!allowDuplicates || joins > kMaxDuplicatedJoins)))
            continue;
          changed = true;
          if (decision == Decision::Duplicate) {
            // The copy feeds only this consumer; the original keeps its
            // other users.
            OpBuilder builder(producer);
            Operation *copy = builder.clone(*producer);
            operand.set(copy->getResult(0));
            group.members.insert(copy);
            groupOf[copy] = &group;
            joinsOf[copy] = joins;
            continue;
          }
          if (decision == Decision::FuseAsRows)
            group.rowShape = RowShape{llvm::to_vector(shapeOf(consumer->getResult(0))),
                                      llvm::to_vector(shapeOf(producer->getResult(0)))};
          if (classify(producer) == OpClass::Reduction) {
            group.hasReduction = true;
            if (!group.rowShape)
              group.rowShape = rowShapeOf(producer);
          }
          group.members.insert(producer);
          groupOf[producer] = &group;
        }
      }
    }
  }
}

/// Output fusions are formed first, so that a matmul keeps its epilogue
/// (the elementwise ops over its result: a chain of single-user ones, and
/// DAGs that close in one value) even when a
/// later reduction fusion could also have taken those ops.
void KilnFusePass::formOutputGroups(ArrayRef<Operation *> ops,
                                    SmallVectorImpl<std::unique_ptr<Group>> &groups) {
  for (Operation *op : ops) {
    if (classify(op) != OpClass::Contraction || groupOf.count(op))
      continue;
    auto group = std::make_unique<Group>();
    group->hasContraction = true;
    group->members.insert(op);
    groupOf[op] = group.get();
    // A transpose of the last two dimensions of a matrix product's operand
    // joins its output fusion (copied if it has other users): the CPU
    // lowering reads it in place through a transposed map and the GPU's
    // library calls take it as a strided view, so the backward pass's
    // X^T dY and dY W^T copy nothing.
    if (isa<MatMulOp>(op))
      for (OpOperand &operand : op->getOpOperands()) {
        Operation *producer = operand.get().getDefiningOp();
        if (!producer || !isFusible(producer) || groupOf.count(producer) ||
            !isTransposeOfLastTwo(producer))
          continue;
        if (!producer->getResult(0).hasOneUse()) {
          OpBuilder builder(producer);
          producer = builder.clone(*producer);
          operand.set(producer->getResult(0));
        }
        group->members.insert(producer);
        groupOf[producer] = group.get();
      }
    Operation *tail = op;
    // A weight gradient's transpose back to the filter's layout, which the
    // CPU lowering folds into the convolution (channelFirstTranspose).
    if (auto conv = dyn_cast<ConvOp>(op); conv && channelFirstConvolutions)
      if (TransposeOp transpose = channelFirstTranspose(conv);
          transpose && isFusible(transpose) && !groupOf.count(transpose)) {
        group->members.insert(transpose);
        groupOf[transpose] = group.get();
        tail = transpose;
      }
    ArrayRef<int64_t> shape = shapeOf(tail->getResult(0));
    SmallVector<Operation *> epilogue;
    auto joinsEpilogue = [&](Operation *user) {
      return isFusible(user) && !groupOf.count(user) && classify(user) == OpClass::Elementwise &&
             shapeOf(user->getResult(0)) == shape;
    };
    while (static_cast<int64_t>(group->members.size()) < maxOps) {
      SmallVector<Operation *> next;
      if (tail->getResult(0).hasOneUse()) {
        Operation *user = *tail->getResult(0).getUsers().begin();
        if (joinsEpilogue(user))
          next.push_back(user);
      } else {
        next = elementwiseDagAfter(tail, maxOps - group->members.size(), joinsEpilogue);
      }
      if (next.empty())
        break;
      for (Operation *user : next) {
        group->members.insert(user);
        groupOf[user] = group.get();
        epilogue.push_back(user);
      }
      tail = next.back();
    }
    // Masks that only the epilogue reads, computed by a cheap op from
    // tensors outside the fusion (a ReLU gradient's y > 0 for the selection
    // after dY W^T): the epilogue reads y instead of a mask that a kernel of
    // its own would have written. Only masks: arithmetic moved into the
    // epilogue would round differently there (a multiply and an add
    // contracted into an FMA), and an optimizer step would then drift from
    // the formula that frameworks evaluate one operation at a time.
    for (Operation *member : epilogue)
      for (Value operand : member->getOperands()) {
        Operation *producer = operand.getDefiningOp();
        if (static_cast<int64_t>(group->members.size()) >= maxOps)
          break;
        if (!isFusible(producer) || groupOf.count(producer) ||
            classify(producer) != OpClass::Elementwise || !isCheap(producer) ||
            !getElementTypeOrSelf(producer->getResult(0).getType()).isInteger(1) ||
            shapeOf(producer->getResult(0)) != shape ||
            !llvm::all_of(producer->getUsers(),
                          [&](Operation *user) { return group->members.contains(user); }) ||
            llvm::any_of(producer->getOperands(), [&](Value input) {
              return group->members.contains(input.getDefiningOp());
            }))
          continue;
        group->members.insert(producer);
        groupOf[producer] = group.get();
      }
    groups.push_back(std::move(group));
  }
}

void KilnFusePass::mergeSiblings(SmallVectorImpl<std::unique_ptr<Group>> &groups) {
  auto inputsOf = [&](const Group &group) {
    llvm::SetVector<Value> inputs;
    for (Operation *member : group.members)
      for (Value operand : member->getOperands())
        if (!group.members.contains(operand.getDefiningOp()) && !isClonedConstant(operand))
          inputs.insert(operand);
    return inputs;
  };
  auto iterationShape = [](const Group &group) -> ArrayRef<int64_t> {
    if (group.rowShape)
      return group.rowShape->rows;
    return shapeOf(lastMember(group)->getResult(0));
  };
  for (size_t i = 0; i < groups.size(); ++i) {
    Group &first = *groups[i];
    if (first.members.empty() || first.opaque || first.hasContraction ||
        (first.hasReduction && !first.rowShape))
      continue;
    for (size_t j = i + 1; j < groups.size(); ++j) {
      Group &second = *groups[j];
      if (second.members.empty() || second.opaque || second.hasContraction ||
          (second.hasReduction && !second.rowShape))
        continue;
      if (static_cast<int64_t>(first.members.size() + second.members.size()) > maxOps)
        continue;
      if (iterationShape(first) != iterationShape(second))
        continue;
      if (first.rowShape && second.rowShape &&
          first.rowShape->kept != second.rowShape->kept)
        continue;
      llvm::SetVector<Value> firstInputs = inputsOf(first);
      if (llvm::none_of(inputsOf(second),
                        [&](Value input) { return firstInputs.contains(input); }))
        continue;
      // The merged fusion sits at the later root; the earlier group's
      // results must not be needed before it, and neither may feed the other.
      Operation *a = lastMember(first), *b = lastMember(second);
      if (b->isBeforeInBlock(a))
        std::swap(a, b);
      if (dependsOn(b, a))
        continue;
      Group &earlier = a == lastMember(first) ? first : second;
      bool usersAfter = llvm::all_of(earlier.members, [&](Operation *member) {
        return llvm::all_of(member->getUsers(), [&](Operation *user) {
          return earlier.members.contains(user) || b->isBeforeInBlock(user);
        });
      });
      if (!usersAfter)
        continue;
      for (Operation *member : second.members) {
        first.members.insert(member);
        groupOf[member] = &first;
      }
      if (!first.rowShape)
        first.rowShape = second.rowShape;
      first.hasReduction |= second.hasReduction;
      second.members.clear();
    }
  }
}

FusionOp KilnFusePass::materialize(Group &group) {
  SmallVector<Operation *> members(group.members.begin(), group.members.end());
  llvm::sort(members, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  auto inGroup = [&](Operation *op) { return group.members.contains(op); };

  llvm::SetVector<Value> inputs, constants;
  SmallVector<Value> outputs;
  SmallVector<Location> locations;
  for (Operation *member : members) {
    locations.push_back(member->getLoc());
    for (Value operand : member->getOperands()) {
      if (inGroup(operand.getDefiningOp()))
        continue;
      if (isClonedConstant(operand))
        constants.insert(operand);
      else
        inputs.insert(operand);
    }
    for (Value result : member->getResults())
      if (llvm::any_of(result.getUsers(), [&](Operation *user) { return !inGroup(user); }))
        outputs.push_back(result);
  }

  OpBuilder builder(members.back());
  MLIRContext *ctx = &getContext();
  auto fusion = FusionOp::create(builder, FusedLoc::get(ctx, locations),
                                 ValueRange(outputs).getTypes(), inputs.getArrayRef(),
                                 group.kind());
  Block &body = fusion.getBody().front();
  IRMapping mapping;
  mapping.map(inputs.getArrayRef(), body.getArguments());
  builder.setInsertionPointToStart(&body);
  for (Value constant : constants)
    builder.clone(*constant.getDefiningOp(), mapping);
  for (Operation *member : members)
    builder.clone(*member, mapping);
  SmallVector<Value> yielded;
  for (Value output : outputs)
    yielded.push_back(mapping.lookup(output));
  YieldOp::create(builder, fusion.getLoc(), yielded);

  for (auto [output, result] : llvm::zip(outputs, fusion.getResults()))
    output.replaceUsesWithIf(result, [&](OpOperand &use) { return !inGroup(use.getOwner()); });
  for (Operation *member : llvm::reverse(members))
    member->erase();
  for (Value constant : constants)
    if (constant.use_empty())
      constant.getDefiningOp()->erase();
  return fusion;
}

/// The ONNX node names behind `loc`, in order, without repeats.
void collectNodeNames(Location loc, llvm::SetVector<StringRef> &names) {
  if (auto fused = dyn_cast<FusedLoc>(loc)) {
    for (Location inner : fused.getLocations())
      collectNodeNames(inner, names);
  } else if (auto named = dyn_cast<NameLoc>(loc)) {
    names.insert(named.getName().getValue());
  }
}

void KilnFusePass::printReport(ArrayRef<FusionOp> fusions) {
  llvm::raw_ostream &os = llvm::errs();
  func::FuncOp func = getOperation();
  os << "kiln-fuse: @" << func.getSymName() << ": " << fusions.size() << " fusion"
     << (fusions.size() == 1 ? "" : "s") << "\n";
  for (auto [index, fusionRef] : llvm::enumerate(fusions)) {
    FusionOp fusion = fusionRef;
    SmallVector<Operation *> ops;
    for (Operation &op : fusion.getBody().front().without_terminator())
      if (!isa<ConstantOp>(op))
        ops.push_back(&op);
    os << "  fusion #" << index << " " << stringifyFusionKind(fusion.getKind());
    if (fusion.getNumResults() > 1)
      os << ", multi-output (" << fusion.getNumResults() << " results)";
    os << ", " << ops.size() << " op" << (ops.size() == 1 ? "" : "s") << ": ";
    llvm::interleaveComma(ops, os, [&](Operation *op) {
      os << op->getName().stripDialect();
    });
    llvm::SetVector<StringRef> names;
    collectNodeNames(fusion.getLoc(), names);
    os << "\n    nodes: ";
    if (names.empty())
      os << "(none recorded)";
    llvm::interleaveComma(names, os);
    os << "\n";
  }
}

void KilnFusePass::runOnOperation() {
  func::FuncOp func = getOperation();
  if (func.isExternal())
    return;
  groupOf.clear();
  Block &block = func.getBody().front();
  SmallVector<Operation *> ops;
  for (Operation &op : block)
    if (isFusible(&op))
      ops.push_back(&op);

  SmallVector<std::unique_ptr<Group>> groups;
  formOutputGroups(ops, groups);
  for (Operation *op : llvm::reverse(ops)) {
    if (groupOf.count(op))
      continue;
    if (op->use_empty()) { // every user was given its own copy
      op->erase();
      continue;
    }
    auto group = std::make_unique<Group>();
    group->members.insert(op);
    groupOf[op] = group.get();
    switch (classify(op)) {
    case OpClass::Opaque:
      group->opaque = true;
      break;
    case OpClass::Reduction:
      group->hasReduction = true;
      group->rowShape = rowShapeOf(op);
      break;
    default:
      break;
    }
    growGroup(*group);
    groups.push_back(std::move(group));
  }
  // Present groups in program order (of their last ops).
  llvm::stable_sort(groups, [](const std::unique_ptr<Group> &a, const std::unique_ptr<Group> &b) {
    return lastMember(*a)->isBeforeInBlock(lastMember(*b));
  });
  mergeSiblings(groups);

  SmallVector<FusionOp> fusions;
  for (std::unique_ptr<Group> &group : groups)
    if (!group->members.empty())
      fusions.push_back(materialize(*group));
  llvm::sort(fusions, [](FusionOp a, FusionOp b) {
    return a->isBeforeInBlock(b.getOperation());
  });
  if (report)
    printReport(fusions);
}

} // namespace
} // namespace kiln
