//===- BucketAllReduce.cpp - all-reduces grouped into overlapping buckets -===//
//
// A data-parallel step sums every gradient over the replicas. One collective
// per tensor would pay a collective's latency per weight; one for all of them
// could start only once the backward pass is over. Buckets are the middle
// way PyTorch DDP and Horovod take at run time, planned here ahead of time:
// the tensors are taken in the order the step computes them, a bucket starts
// as soon as its last tensor exists and is waited for only where one of its
// sums is first read, so that it travels while the rest of the backward pass
// runs.
//
//===----------------------------------------------------------------------===//
#include "dialects/kiln/KilnOps.h"
#include "passes/Passes.h"

namespace kiln {
#define GEN_PASS_DEF_KILNBUCKETALLREDUCEPASS
#include "passes/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// One bucket: its all-reduces, in the order their inputs are computed.
struct Bucket {
  SmallVector<AllReduceOp> members;
  int64_t bytes = 0;
  /// The first op of the block that reads one of the members' sums.
  Operation *firstUse = nullptr;
};

/// Where `value` becomes available: its defining op, or null for a block
/// argument (available from the start).
Operation *producer(Value value) { return value.getDefiningOp(); }

/// Whether `a` comes before `b` in their block; null is the block's start.
bool before(Operation *a, Operation *b) {
  if (!a)
    return b != nullptr;
  return b && a->isBeforeInBlock(b);
}

/// The first op that reads `value`, as seen from `block` (users nested in
/// regions count as their ancestor in the block).
Operation *firstUser(Value value, Block &block) {
  Operation *first = nullptr;
  for (Operation *user : value.getUsers()) {
    Operation *inBlock = block.findAncestorOpInBlock(*user);
    if (inBlock && (!first || inBlock->isBeforeInBlock(first)))
      first = inBlock;
  }
  return first;
}

struct KilnBucketAllReducePass
    : impl::KilnBucketAllReducePassBase<KilnBucketAllReducePass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (firstBucketBytes <= 0 || bucketBytes <= 0) {
      func.emitError() << "kiln-bucket-all-reduce: bucket caps must be positive (first-bucket-bytes="
                       << static_cast<int64_t>(firstBucketBytes)
                       << ", bucket-bytes=" << static_cast<int64_t>(bucketBytes) << ")";
      return signalPassFailure();
    }
    SmallVector<AllReduceOp> ops;
    bool failed = false;
    func.walk([&](AllReduceOp op) {
      auto type = llvm::cast<RankedTensorType>(op.getType());
      if (!type.getElementType().isF32() || !type.hasStaticShape()) {
        op.emitError() << "kiln-bucket-all-reduce: only statically shaped f32 tensors are "
                          "summed over replicas, not "
                       << type;
        failed = true;
      } else if (op->getBlock() != &func.getBody().front()) {
        op.emitError() << "kiln-bucket-all-reduce: an all-reduce inside a region cannot be "
                          "bucketed; it must be in the function's body";
        failed = true;
      }
      ops.push_back(op);
    });
    if (failed)
      return signalPassFailure();
    if (ops.empty())
      return;
    Block &block = func.getBody().front();

    // The order the values to sum are computed in.
    llvm::stable_sort(ops, [](AllReduceOp a, AllReduceOp b) {
      return before(producer(a.getInput()), producer(b.getInput()));
    });

    SmallVector<Bucket> buckets;
    for (AllReduceOp op : ops) {
      auto type = llvm::cast<RankedTensorType>(op.getType());
      int64_t bytes = type.getNumElements() * 4;
      Operation *use = firstUser(op.getOutput(), block);
      int64_t cap = buckets.size() <= 1 ? firstBucketBytes : bucketBytes;
      bool fits = !buckets.empty() && buckets.back().bytes + bytes <= cap &&
                  // Waiting for this input must not delay a sum already needed.
                  (!buckets.back().firstUse ||
                   before(producer(op.getInput()), buckets.back().firstUse));
      if (!fits)
        buckets.emplace_back();
      Bucket &bucket = buckets.back();
      bucket.members.push_back(op);
      bucket.bytes += bytes;
      if (use && (!bucket.firstUse || use->isBeforeInBlock(bucket.firstUse)))
        bucket.firstUse = use;
    }

    OpBuilder b(func.getContext());
    // Buckets start in their order where their uses allow it. (The run time
    // needs only the same order on every replica, which running the same
    // code gives.)
    Operation *previousStart = nullptr;
    for (auto [index, bucket] : llvm::enumerate(buckets)) {
      // Start right after the last input is computed.
      Operation *last = nullptr;
      for (AllReduceOp op : bucket.members)
        if (before(last, producer(op.getInput())))
          last = producer(op.getInput());
      if (before(last, previousStart) &&
          (!bucket.firstUse || previousStart->isBeforeInBlock(bucket.firstUse)))
        last = previousStart;
      if (last)
        b.setInsertionPointAfter(last);
      else
        b.setInsertionPointToStart(&block);
      Location loc = b.getFusedLoc(llvm::map_to_vector(
          bucket.members, [](AllReduceOp op) { return op.getLoc(); }));
      SmallVector<Value> flat;
      int64_t total = 0;
      for (AllReduceOp op : bucket.members) {
        auto type = llvm::cast<RankedTensorType>(op.getType());
        total += type.getNumElements();
        flat.push_back(ReshapeOp::create(
            b, op.getLoc(), RankedTensorType::get({type.getNumElements()}, type.getElementType()),
            op.getInput()));
      }
      auto flatType = RankedTensorType::get({total}, b.getF32Type());
      Value joined = flat.size() == 1 ? flat.front()
                                      : ConcatOp::create(b, loc, flatType, flat, /*axis=*/0).getResult();
      auto start = AllReduceStartOp::create(b, loc, flatType, joined, index);
      previousStart = start;

      // Wait right before the first sum is read (or at the end).
      if (bucket.firstUse)
        b.setInsertionPoint(bucket.firstUse);
      else
        b.setInsertionPoint(block.getTerminator());
      auto wait = AllReduceWaitOp::create(b, loc, flatType, start, index);
      int64_t offset = 0;
      for (AllReduceOp op : bucket.members) {
        auto type = llvm::cast<RankedTensorType>(op.getType());
        int64_t count = type.getNumElements();
        Value part = wait;
        if (bucket.members.size() > 1)
          part = SliceOp::create(b, op.getLoc(), RankedTensorType::get({count}, b.getF32Type()),
                                 wait, b.getDenseI64ArrayAttr({offset}), b.getDenseI64ArrayAttr({1}));
        offset += count;
        op.getOutput().replaceAllUsesWith(ReshapeOp::create(b, op.getLoc(), type, part).getResult());
        op.erase();
      }
    }
  }
};

} // namespace
} // namespace kiln
