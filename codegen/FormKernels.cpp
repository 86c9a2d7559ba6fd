//===- FormKernels.cpp - One tiled, parallel kernel per kiln.fusion -------===//
//
// By the time this pass runs, each kiln.fusion holds linalg ops on tensors.
// Elementwise producers are merged into their consumers, the fusion's root
// is tiled into an scf.forall over its outer parallel dimensions with every
// other op fused into the tile, and the body is inlined where the fusion was.
//
//===----------------------------------------------------------------------===//
#include "codegen/Contraction.h"
#include "codegen/Passes.h"
#include "dialects/kiln/KilnOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Interfaces/TilingInterface.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/Support/MathExtras.h"

#include <numeric>
#include <thread>

namespace kiln {
#define GEN_PASS_DEF_KILNFORMKERNELSPASS
#include "codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

/// Matmul tiles are rounded up to this many rows or columns, a multiple of
/// every vector width the CPU back end targets.
constexpr int64_t kMatmulTileMultiple = 16;

/// Loop and input fusions keep at least this many tiles per thread, so the
/// static schedule stays balanced.
constexpr int64_t kTilesPerThread = 4;

/// Fewest columns of a product whose columns are a convolution tile's batch
/// elements (joinsBatchIntoColumns: a weight gradient's input channels, a
/// column per filter tap). oneDNN's sgemm reads this product's B transposed
/// and ran at 77 GFLOP/s a core with 72 columns (8 channels of a 3x3
/// filter), 106 with 144, on Zen 4.
constexpr int64_t kMinJoinedColumns = 128;

/// A convolution tile's im2col buffer (window x output positions) is kept
/// under this size, so that it is still in L2 when sgemm packs it (measured
/// on the ResNet block of bench/: 512 KiB beat 256 KiB and 1 MiB).
constexpr int64_t kIm2colBytes = 1 << 19;
/// f32 elements in a 64-byte cache line.
constexpr int64_t kLineElements = 16;
/// Largest im2col buffer (a whole image's) of a convolution whose tiles
/// split the output channels rather than bands of rows.
constexpr int64_t kMaxChannelTileIm2colBytes = 8 << 20;
/// Multiply-adds (iterations of a kernel's whole loop nest) above which a
/// kernel with a small result is still split over threads.
constexpr int64_t kMinParallelWork = 1 << 22;
/// Multiply-adds above which a matrix product with a small result (one row
/// at batch-1 inference) is still split over threads, by columns: each
/// multiply-add of a product of few rows reads a weight of its own, so it
/// runs at the pace the weights stream in, which two cores double (K 2048,
/// N 1000, one row, weights in L3: 0.21 ms on one Zen 3 core, 0.08 on two).
constexpr int64_t kMinParallelProduct = 1 << 18;
/// Multiply-adds above which a convolution with a small result is split
/// over threads: a depthwise layer of 64 channels at 7x7 (28 K) ran 20 %
/// faster on two threads than on one.
constexpr int64_t kMinParallelConvolution = 1 << 14;
/// Elements read by per-channel sums (batch normalization's statistics)
/// above which they are split over threads by channel.
constexpr int64_t kMinParallelReduction = 1 << 16;

/// Whether computing one element of `op` costs more than reading it back
/// from a buffer: a transcendental function or a division.
bool isExpensive(linalg::LinalgOp op) {
  return op->getRegion(0)
      .walk([](Operation *inner) {
        return isa<math::MathDialect>(inner->getDialect()) || isa<arith::DivFOp>(inner)
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

/// Producer-into-consumer elementwise fusion, only when the producer's
/// iteration space is the consumer's: a producer the consumer broadcasts
/// stays separate and is fused per tile instead, computed once per row.
/// An expensive producer with several consumers (softmax's exponential,
/// read by the row sum and by the normalization) also stays separate, so
/// each tile computes it once into a buffer instead of once per consumer.
bool sameIterationSpace(OpOperand *fused) {
  auto producer = fused->get().getDefiningOp<linalg::LinalgOp>();
  auto consumer = dyn_cast<linalg::LinalgOp>(fused->getOwner());
  if (!producer || !consumer)
    return false;
  if (!fused->get().hasOneUse() && isExpensive(producer))
    return false;
  return consumer.getMatchingIndexingMap(fused).isPermutation() &&
         producer.getStaticLoopRanges().size() == consumer.getStaticLoopRanges().size();
}

/// The op computing `value`, looking through reshapes.
Operation *rootOf(Value value) { return throughReshapes(value).getDefiningOp(); }

/// Whether `types` are one or more ranked tensors of one shape (the results
/// of a root, merged siblings included).
bool haveOneShape(TypeRange types) {
  auto first = types.empty() ? RankedTensorType() : dyn_cast<RankedTensorType>(types.front());
  return first && llvm::all_of(types, [&](Type type) {
           auto tensor = dyn_cast<RankedTensorType>(type);
           return tensor && tensor.getShape() == first.getShape();
         });
}

/// The users of `earlier`'s results before `later`, which must move after
/// it for the two to merge at `later`: reshapes (unit dimensions folded
/// back in) whose own users all come after `later`. Fails if another op
/// uses them first.
FailureOr<SmallVector<Operation *>> usersToMove(Operation *earlier, Operation *later) {
  SmallVector<Operation *> moved;
  for (Operation *user : earlier->getUsers()) {
    if (later->isBeforeInBlock(user))
      continue;
    if (!isa<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(user) ||
        user->getBlock() != later->getBlock() ||
        !llvm::all_of(user->getUsers(),
                      [&](Operation *next) { return later->isBeforeInBlock(next); }))
      return failure();
    moved.push_back(user);
  }
  return moved;
}

/// Whether generics `earlier` and `later` (in that order in one block) can
/// become one generic at `later`: the same loops, static, neither reading
/// the other's results, and no use of `earlier` before `later` but reshapes
/// that can move after it.
bool siblingsMerge(linalg::GenericOp earlier, linalg::GenericOp later) {
  SmallVector<int64_t> ranges = earlier.getStaticLoopRanges();
  return !ShapedType::isDynamicShape(ranges) && ranges == later.getStaticLoopRanges() &&
         earlier.getIteratorTypesArray() == later.getIteratorTypesArray() &&
         earlier.hasPureTensorSemantics() && later.hasPureTensorSemantics() &&
         !dependsOn(later, earlier) && succeeded(usersToMove(earlier, later));
}

/// One generic computing both `earlier`'s and `later`'s results, at
/// `later`: the inputs of both (each distinct input and map once), the
/// outputs of both, and the two bodies one after the other.
linalg::GenericOp mergeSiblings(linalg::GenericOp earlier, linalg::GenericOp later) {
  SmallVector<Value> inputs, inits;
  SmallVector<AffineMap> inputMaps, initMaps;
  // Each generic's block arguments as positions among the merged inputs,
  // then among the merged inits.
  SmallVector<SmallVector<int64_t>> inputSlots(2), initSlots(2);
  linalg::GenericOp parts[2] = {earlier, later};
  for (auto [part, generic] : llvm::enumerate(parts)) {
    for (OpOperand *input : generic.getDpsInputOperands()) {
      AffineMap map = generic.getMatchingIndexingMap(input);
      int64_t slot = 0;
      while (slot < static_cast<int64_t>(inputs.size()) &&
             (inputs[slot] != input->get() || inputMaps[slot] != map))
        ++slot;
      if (slot == static_cast<int64_t>(inputs.size())) {
        inputs.push_back(input->get());
        inputMaps.push_back(map);
      }
      inputSlots[part].push_back(slot);
    }
    for (OpOperand &init : generic.getDpsInitsMutable()) {
      initSlots[part].push_back(inits.size());
      inits.push_back(init.get());
      initMaps.push_back(generic.getMatchingIndexingMap(&init));
    }
  }
  SmallVector<AffineMap> maps(inputMaps);
  llvm::append_range(maps, initMaps);
  SmallVector<Type> resultTypes(earlier->getResultTypes());
  llvm::append_range(resultTypes, later->getResultTypes());

  OpBuilder b(later);
  auto merged = linalg::GenericOp::create(
      b, FusedLoc::get(b.getContext(), {earlier.getLoc(), later.getLoc()}), resultTypes, inputs,
      inits, maps, earlier.getIteratorTypesArray(),
      [&](OpBuilder &nested, Location loc, ValueRange args) {
        SmallVector<Value> yielded;
        for (auto [part, generic] : llvm::enumerate(parts)) {
          IRMapping mapping;
          Block *body = generic.getBody();
          int64_t ins = inputSlots[part].size();
          for (auto [i, slot] : llvm::enumerate(inputSlots[part]))
            mapping.map(body->getArgument(i), args[slot]);
          for (auto [i, slot] : llvm::enumerate(initSlots[part]))
            mapping.map(body->getArgument(ins + i), args[inputs.size() + slot]);
          for (Operation &op : body->without_terminator())
            nested.clone(op, mapping);
          for (Value value : body->getTerminator()->getOperands())
            yielded.push_back(mapping.lookupOrDefault(value));
        }
        linalg::YieldOp::create(nested, loc, yielded);
      });
  // Held in a variable: the loop would outlive a temporary's vector.
  SmallVector<Operation *> moved = *usersToMove(earlier, later);
  for (Operation *user : moved)
    user->moveAfter(merged);
  unsigned first = earlier->getNumResults();
  earlier->replaceAllUsesWith(merged->getResults().take_front(first));
  later->replaceAllUsesWith(merged->getResults().drop_front(first));
  earlier->erase();
  later->erase();
  return merged;
}

struct KilnFormKernelsPass : impl::KilnFormKernelsPassBase<KilnFormKernelsPass> {
  using KilnFormKernelsPassBase::KilnFormKernelsPassBase;

  void runOnOperation() override {
    SmallVector<FusionOp> fusions;
    getOperation().walk([&](FusionOp fusion) { fusions.push_back(fusion); });
    FrozenRewritePatternSet patterns = buildPatterns();
    for (FusionOp fusion : fusions)
      if (failed(formKernel(fusion, patterns)))
        return signalPassFailure();
  }

private:
  linalg::ControlDropUnitDims dropUnitDims;

  FrozenRewritePatternSet buildPatterns() {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    // Unit dimensions (kept reduction dims, batch 1) are dropped so that
    // every operand is reached through a projected permutation, the form
    // tiling and fusion need.
    linalg::populateFoldUnitExtentDimsPatterns(patterns, dropUnitDims);
    linalg::populateFoldUnitExtentDimsCanonicalizationPatterns(patterns, dropUnitDims);
    linalg::populateElementwiseOpsFusionPatterns(patterns, sameIterationSpace);
    linalg::populateFoldReshapeOpsByCollapsingPatterns(
        patterns, [](OpOperand *fused) {
          auto consumer = dyn_cast<linalg::LinalgOp>(fused->getOwner());
          return consumer && consumer.getNumReductionLoops() == 0;
        });
    linalg::GenericOp::getCanonicalizationPatterns(patterns, ctx);
    linalg::FillOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::EmptyOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::ExpandShapeOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::CollapseShapeOp::getCanonicalizationPatterns(patterns, ctx);
    return FrozenRewritePatternSet(std::move(patterns));
  }

  int64_t threadCount() const {
    if (threads > 0)
      return threads;
    return std::max<int64_t>(1, std::thread::hardware_concurrency());
  }

  /// Leading loops of an input fusion's root that no reduction in the body
  /// reduces (the importer's input fusions reduce trailing dimensions).
  int64_t rowLoops(FusionOp fusion, linalg::LinalgOp root) const {
    int64_t rows = root.getNumLoops();
    fusion.getBody().walk([&](linalg::LinalgOp op) {
      SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
      for (auto [i, iterator] : llvm::enumerate(iterators))
        if (iterator == utils::IteratorType::reduction) {
          rows = std::min<int64_t>(rows, i);
          break;
        }
    });
    return rows;
  }

  /// Whether every reduction in an input fusion yields the root's shape,
  /// reads at least kMinParallelReduction elements and reduces its
  /// innermost loop, and the root is one of them or elementwise after them
  /// (a batch normalization's statistics: per-channel sums over batch and
  /// space, perhaps then a division). Tiles of the root's parallel loops then
  /// cut only the reductions' kept loops.
  static bool reducesToRoot(FusionOp fusion, linalg::LinalgOp root) {
    if (!haveOneShape(root->getResultTypes()))
      return false;
    auto rootType = dyn_cast<RankedTensorType>(root->getResult(0).getType());
    bool any = false, all = true;
    // Ops of the body itself: another result's tiles (a sum that could not
    // share the root's loop because it reads the root) are already in a
    // loop of their own.
    for (auto op : fusion.getBody().front().getOps<linalg::LinalgOp>()) {
      if (op.getNumReductionLoops() == 0)
        continue;
      any = true;
      SmallVector<int64_t> ranges = op.getStaticLoopRanges();
      auto type = haveOneShape(op->getResultTypes())
                      ? dyn_cast<RankedTensorType>(op->getResult(0).getType())
                      : RankedTensorType();
      // The innermost loop reduced, so that a tile's sum runs along memory
      // (a sum over rows into columns is left to vectorize across them).
      all &= type && rootType && type.getShape() == rootType.getShape() &&
             !ShapedType::isDynamicShape(ranges) &&
             llvm::product_of(ranges) >= kMinParallelReduction &&
             op.getIteratorTypesArray().back() == utils::IteratorType::reduction;
    }
    return any && all;
  }

  /// For an input fusion whose every reduction sums leading loops into the
  /// trailing ones (a bias's or a layer norm's scale gradient: columns
  /// summed over rows), the root's first loop that none reduces, when that
  /// and all later loops of the root are parallel. Its rows cannot be
  /// tiled, but its columns can, each tile summing its columns over every
  /// row.
  static std::optional<int64_t> columnLoop(FusionOp fusion, linalg::LinalgOp root) {
    if (fusion.getKind() != FusionKind::Input)
      return std::nullopt;
    std::optional<int64_t> reduced;
    bool uniform = true;
    int64_t loops = root.getNumLoops();
    fusion.getBody().walk([&](linalg::LinalgOp op) {
      if (op.getNumReductionLoops() == 0)
        return;
      SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
      auto kept = llvm::find(iterators, utils::IteratorType::parallel);
      int64_t leading = kept - iterators.begin();
      uniform &= static_cast<int64_t>(iterators.size()) == loops && leading > 0 &&
                 std::all_of(kept, iterators.end(), [](utils::IteratorType iterator) {
                   return iterator == utils::IteratorType::parallel;
                 }) &&
                 (!reduced || *reduced == leading);
      reduced = leading;
    });
    if (!reduced || !uniform || *reduced >= loops)
      return std::nullopt;
    SmallVector<utils::IteratorType> iterators = root.getIteratorTypesArray();
    if (!std::all_of(iterators.begin() + *reduced, iterators.end(), [](utils::IteratorType iterator) {
          return iterator == utils::IteratorType::parallel;
        }))
      return std::nullopt;
    return *reduced;
  }

  /// A convolution tile that kiln-convolutions-to-blas will hand to oneDNN
  /// in its blocked layout (convolvesInBlockedLayout).
  struct BlockedConvolution {
    /// Input channels per group, and window positions per channel.
    int64_t channels, taps;
    /// Input and output elements of one output row's band: every input
    /// channel's padded row and every filter's output row.
    int64_t rowElements;
    /// A 3x3 window at stride 1 and no dilation: Winograd's F(4x4, 3x3).
    bool winograd;
  };

  /// `conv` (matched as `loops`, one batch loop per image and group) as a
  /// blocked-layout convolution, or nullopt: its filters must be a constant
  /// operand of the fusion and its channels fill oneDNN's blocks.
  /// kiln-convolutions-to-blas also wants 2^20 multiply-adds per tile, which
  /// any band that an im2col buffer of 512 KiB would cut has (at least 32
  /// filters by 128 Ki im2col elements).
  std::optional<BlockedConvolution>
  blockedConvolution(FusionOp fusion, linalg::LinalgOp conv, const ConvolutionLoops &loops) const {
    if (!loops.channel || loops.window.empty() || loops.spatial.size() != 2)
      return std::nullopt;
    auto argument = dyn_cast<BlockArgument>(throughReshapes(conv.getDpsInputs()[1]));
    if (!argument || argument.getOwner()->getParentOp() != fusion ||
        !matchPattern(fusion->getOperand(argument.getArgNumber()), m_Constant()))
      return std::nullopt;
    SmallVector<int64_t> ranges = conv.getStaticLoopRanges();
    // The window loops in the filter's order: input channels, then taps.
    int64_t channels = ranges[loops.window.front()], taps = 1;
    for (int64_t loop : ArrayRef(loops.window).drop_front())
      taps *= ranges[loop];
    int64_t filters = ranges[*loops.channel];
    auto image = dyn_cast<RankedTensorType>(conv.getDpsInputs()[0].getType());
    if (!convolvesInBlockedLayout(channels, filters, taps, directConvolutions) || !image ||
        !image.hasStaticShape())
      return std::nullopt;
    // Stride and dilation 1: each spatial index of the image is an output
    // loop plus a window loop.
    AffineMap imageMap = conv.getMatchingIndexingMap(&conv->getOpOperand(0));
    bool unitSteps = llvm::all_of(imageMap.getResults().take_back(2), [](AffineExpr expr) {
      auto sum = dyn_cast<AffineBinaryOpExpr>(expr);
      return sum && sum.getKind() == AffineExprKind::Add && isa<AffineDimExpr>(sum.getLHS()) &&
             isa<AffineDimExpr>(sum.getRHS());
    });
    bool threeByThree = loops.window.size() == 3 && ranges[loops.window[1]] == 3 &&
                        ranges[loops.window[2]] == 3;
    return BlockedConvolution{
        channels, taps,
        channels * image.getShape().back() + filters * ranges[loops.spatial.back()],
        unitSteps && threeByThree};
  }

  /// Convolutions run per tile as im2col + sgemm (kiln-contractions-to-blas)
  /// or through oneDNN (blockedConvolution), so their tiles keep every
  /// output channel: one batch element (image, group) per tile, and when
  /// there are fewer of those than threads, bands of output rows, few enough
  /// rows for the im2col buffer (or oneDNN's input and output bands) to stay
  /// in L2.
  /// The root is the convolution or an elementwise epilogue over its output.
  std::optional<SmallVector<int64_t>> convolutionTileSizes(FusionOp fusion,
                                                           linalg::LinalgOp root) const {
    linalg::LinalgOp conv;
    std::optional<ConvolutionLoops> loops;
    fusion.getBody().walk([&](linalg::LinalgOp op) {
      if (!loops && (loops = matchConvolution(op, /*withoutPositions=*/true)))
        conv = op;
    });
    if (!loops)
      return std::nullopt;
    SmallVector<int64_t> convRanges = conv.getStaticLoopRanges();
    SmallVector<int64_t> ranges = root.getStaticLoopRanges();
    int64_t outputRank = conv.getNumParallelLoops();
    if (root != conv && (root.getNumReductionLoops() != 0 ||
                         ArrayRef(ranges) != ArrayRef(convRanges).take_front(outputRank)))
      return std::nullopt;

    SmallVector<int64_t> sizes(ranges.size(), 0);
    int64_t batch = 1;
    for (int64_t loop : loops->batch) {
      sizes[loop] = 1;
      batch *= ranges[loop];
    }
    int64_t spatialElements = 1, window = 1;
    for (int64_t loop : loops->spatial)
      spatialElements *= ranges[loop];
    for (int64_t loop : loops->window)
      window *= convRanges[loop];
    if (!loops->batch.empty() && batch >= threadCount()) {
      int64_t inner = loops->batch.back();
      int64_t outer = batch / ranges[inner];
      int64_t innerTiles = llvm::divideCeil(threadCount(), outer);
      // Too few runs to share evenly (the stem's weight gradient: three
      // input channels on two threads left one thread two thirds of the
      // work, 10 % more time than split evenly): the output channels (the
      // product's rows) are split too, in parts that are whole multiples of
      // kMatmulTileMultiple (oneDNN's channel blocks), until the tiles share.
      auto balance = [&]() {
        int64_t tiles = llvm::divideCeil(ranges[inner], sizes[inner]) * outer;
        if (!loops->channel || tiles % threadCount() == 0 ||
            tiles >= kTilesPerThread * threadCount())
          return;
        int64_t channels = ranges[*loops->channel];
        int64_t parts = threadCount() / std::gcd(tiles, threadCount());
        if (channels % (parts * kMatmulTileMultiple) == 0)
          sizes[*loops->channel] = channels / parts;
      };
      if (joinsBatchIntoColumns(conv, *loops)) {
        // The tile's batch elements are the columns of one product (the
        // lowering bounds its im2col buffer by splitting the reduction):
        // enough of them for kMinJoinedColumns columns, more while
        // kTilesPerThread tiles per thread remain, and at most one run
        // per thread. Runs that divide the batch evenly are preferred, and
        // rounded up rather than down when rounding down would leave too
        // few columns.
        int64_t fewest = llvm::divideCeil(kMinJoinedColumns, spatialElements);
        int64_t wanted = std::max<int64_t>(
            fewest, ranges[inner] / llvm::divideCeil(kTilesPerThread * threadCount(), outer));
        int64_t perThread = llvm::divideCeil(ranges[inner], innerTiles);
        sizes[inner] = evenTileSize(ranges[inner], std::min(wanted, perThread));
        for (int64_t size = fewest; sizes[inner] < fewest && size <= perThread; ++size)
          if (ranges[inner] % size == 0)
            sizes[inner] = size;
        // A few batch elements that the threads cannot share evenly (an RGB
        // stem's weight gradient: three input channels) stay together as
        // the columns of one product, whose rows (output channels) the
        // threads split: the stem of ResNet-18 ran 5.3 ms in six tiles of
        // 32 rows by 49 columns, 4.2 ms in two of 32 by 147.
        int64_t channels = ranges[*loops->channel];
        if (outer == 1 && ranges[inner] < kTilesPerThread * threadCount() &&
            ranges[inner] % threadCount() != 0 &&
            channels % (threadCount() * kMatmulTileMultiple) == 0) {
          sizes[inner] = ranges[inner];
          sizes[*loops->channel] = channels / threadCount();
          return sizes;
        }
        balance();
        return sizes;
      }
      // Many batch elements (images, or a depthwise convolution's channels):
      // one run of them per thread (each call has a fixed cost), as long as
      // the tile's im2col buffer stays in L2, and then runs of equal size in
      // a multiple of the threads, so that no thread is left with a last,
      // lone tile (960 channels by 297 were four tiles, the last of 69: one
      // thread did 594 channels while the other did 366).
      // A depthwise convolution (no output-channel loop, a window of the
      // image's rows and columns only) has no im2col buffer: its runs are
      // bounded by the input and output planes they hold (runs of 6
      // channels at 28x28 under a 5x5 window were too few to fill the
      // kernel's blocks of 16).
      int64_t perElement = window * spatialElements;
      auto image = dyn_cast<RankedTensorType>(conv.getDpsInputs()[0].getType());
      if (!loops->channel && loops->window.size() <= 2 && image && image.hasStaticShape())
        perElement = image.getNumElements() / batch + spatialElements;
      int64_t fitting = kIm2colBytes / (sizeof(float) * perElement);
      int64_t size =
          std::clamp<int64_t>(ranges[inner] / innerTiles, 1, std::max<int64_t>(fitting, 1));
      sizes[inner] = size;
      // Runs that divide the range first: a partial last run has a dynamic
      // size, and then the kernel cannot take over its tile's padding (96
      // channels in runs of 5 padded the whole image in a pass of its own,
      // 2x slower than runs of 4).
      for (int64_t divisor = size; 2 * divisor >= size; --divisor)
        if (ranges[inner] % divisor == 0 && ranges[inner] / divisor * outer % threadCount() == 0) {
          sizes[inner] = divisor;
          return sizes;
        }
      int64_t fewest = llvm::alignTo(llvm::divideCeil(ranges[inner], size) * outer, threadCount());
      for (int64_t wanted = fewest; wanted <= fewest + 4 * threadCount();
           wanted += threadCount()) {
        int64_t equal = llvm::divideCeil(ranges[inner], llvm::divideCeil(wanted, outer));
        if (llvm::divideCeil(ranges[inner], equal) * outer % threadCount() == 0) {
          sizes[inner] = equal;
          break;
        }
      }
      balance();
      return sizes;
    }
    if (loops->spatial.empty())
      return std::nullopt;
    int64_t rowLoop = loops->spatial.front();
    int64_t rowElements = spatialElements / ranges[rowLoop];
    int64_t bands = llvm::divideCeil(kTilesPerThread * threadCount(), batch);
    int64_t rows = llvm::divideCeil(ranges[rowLoop], bands);
    std::optional<BlockedConvolution> blocked = blockedConvolution(fusion, conv, *loops);
    // A band's im2col buffer stays in L2; a convolution through oneDNN's
    // blocked layout has none, and its input and output bands do instead
    // (bounded by the im2col buffer, 3x3 256->256 at 56x56 ran in bands of
    // one row, 6x slower than in bands of four).
    int64_t rowBytes = sizeof(float) * (blocked ? blocked->rowElements : window * rowElements);
    int64_t fitting = std::max<int64_t>(1, kIm2colBytes / rowBytes);
    rows = std::min(rows, fitting);
    int64_t step = blocked && blocked->winograd ? kWinogradTileRows : 1;
    if (step > 1)
      rows = std::min(ranges[rowLoop], std::max(step, rows / step * step));
    // Every band multiplies by all the filters, while a tile of output
    // channels needs the whole image's im2col: whichever reads less memory
    // wins. The channels are split on small images with many filters
    // (ResNet's 7x7 and 14x14 stages: bands of one or two rows ran 3x
    // slower; a 512->1000 1x1 classifier), rows on large images with few.
    // The im2col size serves for oneDNN's convolutions too, which make no
    // im2col copy: with the image's own size, ResNet's 3x3 64->64 at 56x56
    // went to tiles of 32 filters, 1.6x slower. Bands that the threads do
    // not share evenly cost as many as would: 7 bands on 2 threads take the
    // time of 8 (ResNet-50's 28x28 stage; its output channels split in two
    // instead).
    if (loops->channel) {
      int64_t channels = ranges[*loops->channel];
      int64_t filterBytes = sizeof(float) * channels * window;
      int64_t colBytes = sizeof(float) * window * spatialElements;
      int64_t bandCount = llvm::divideCeil(ranges[rowLoop], rows);
      int64_t channelTiles = llvm::divideCeil(threadCount(), batch);
      int64_t bandRounds = llvm::divideCeil(bandCount * batch, threadCount());
      int64_t size = matmulTileSize(channels, channelTiles);
      bool staysBlocked =
          !blocked || (size && convolvesInBlockedLayout(blocked->channels, size, blocked->taps,
                                                        directConvolutions));
      if (colBytes <= kMaxChannelTileIm2colBytes && size && staysBlocked &&
          (filterBytes + channelTiles * colBytes) * bandCount * batch <
              (bandCount * filterBytes + colBytes) * bandRounds * threadCount()) {
        sizes[*loops->channel] = size;
        return sizes;
      }
    }
    if (batch == 1)
      rows = balancedBandRows(ranges[rowLoop], rows, std::max(rows, fitting), step);
    if (rows < ranges[rowLoop])
      sizes[rowLoop] = rows;
    return sizes;
  }

  /// The height of the bands of `range` output rows shared by the threads
  /// (each taking a run of whole bands, OpenMP's static schedule): `rows`,
  /// unless another height from rows / 2 to `most` (a multiple of `step`)
  /// leaves the busiest thread fewer rows; then the tallest such height.
  /// Bands of 6 of 43 rows gave two threads 24 and 19 (7x1 128->128 ran
  /// 1.2x slower than at 47 rows: 24 and 23); bands of 11 give 22 and 21.
  int64_t balancedBandRows(int64_t range, int64_t rows, int64_t most, int64_t step) const {
    auto busiest = [&](int64_t height) {
      return llvm::divideCeil(llvm::divideCeil(range, height), threadCount()) * height;
    };
    int64_t best = rows;
    for (int64_t height = std::max(step, rows / 2 / step * step); height <= std::min(most, range);
         height += step)
      if (busiest(height) < busiest(best) ||
          (busiest(height) == busiest(best) && busiest(best) < busiest(rows) && height > best))
        best = height;
    return best;
  }

  /// `size`, lowered to a divisor of `range` when one lies within half of
  /// it, so that every tile has the same static size.
  static int64_t evenTileSize(int64_t range, int64_t size) {
    size = std::clamp<int64_t>(size, 1, range);
    for (int64_t divisor = size; 2 * divisor >= size; --divisor)
      if (range % divisor == 0)
        return divisor;
    return size;
  }

  /// The size of `tiles` tiles of a matmul dimension of `range`, rounded up
  /// to a multiple of kMatmulTileMultiple when that keeps the last, partial
  /// tile at least half full, else equal tiles; 0 (untiled) for a dimension
  /// too small to split. A partial last tile has a dynamic size, which the
  /// BLAS call takes at run time.
  static int64_t matmulTileSize(int64_t range, int64_t tiles) {
    int64_t even = llvm::divideCeil(range, tiles);
    int64_t aligned = llvm::alignTo(even, kMatmulTileMultiple);
    if (aligned < range && range - (llvm::divideCeil(range, aligned) - 1) * aligned >= aligned / 2)
      return aligned;
    return even < range ? even : 0;
  }

  /// Whether an op of the fusion indexes an operand with a negative
  /// coefficient (a reversed slice, such as a convolution gradient's flipped
  /// filter). Tiling computes such an operand's tile as if the index grew
  /// with the loop and would read the wrong window, so those fusions stay
  /// whole.
  static bool readsBackwards(FusionOp fusion) {
    bool backwards = false;
    fusion.getBody().walk([&](linalg::LinalgOp op) {
      for (AffineMap map : op.getIndexingMapsArray())
        for (AffineExpr expr : map.getResults())
          expr.walk([&](AffineExpr sub) {
            if (auto mul = dyn_cast<AffineBinaryOpExpr>(sub);
                mul && mul.getKind() == AffineExprKind::Mul)
              if (auto constant = dyn_cast<AffineConstantExpr>(mul.getRHS());
                  constant && constant.getValue() < 0)
                backwards = true;
          });
    });
    return backwards;
  }

  /// Tile sizes for the root, all zero when it should stay untiled.
  SmallVector<int64_t> tileSizes(FusionOp fusion, linalg::LinalgOp root) const {
    SmallVector<int64_t> ranges = root.getStaticLoopRanges();
    SmallVector<utils::IteratorType> iterators = root.getIteratorTypesArray();
    SmallVector<int64_t> sizes(ranges.size(), 0);
    if (ShapedType::isDynamicShape(ranges) || readsBackwards(fusion))
      return sizes;
    int64_t resultElements = 1, work = 1;
    for (auto [range, iterator] : llvm::zip(ranges, iterators)) {
      if (iterator == utils::IteratorType::parallel)
        resultElements *= range;
      work *= range;
    }
    // A small result can still be much work: the weight gradient of a
    // convolution is a few thousand elements, each a sum over the batch; a
    // batch normalization's statistics, sums per channel over batch and
    // space, a few hundred.
    bool perChannelSums = fusion.getKind() == FusionKind::Input && reducesToRoot(fusion, root);
    std::optional<int64_t> columns = columnLoop(fusion, root);
    int64_t columnTile = columns ? matmulTileSize(ranges[*columns], threadCount()) : 0;
    bool columnSums = columnTile != 0 && work >= minParallelElements;
    // Sums of rows (a layer norm's statistics, a softmax's denominators)
    // split by rows.
    bool rowSums = fusion.getKind() == FusionKind::Input && root.getNumReductionLoops() != 0 &&
                   rowLoops(fusion, root) > 0 && resultElements >= threadCount() &&
                   work >= minParallelElements;
    bool small = resultElements < minParallelElements &&
                 !(perChannelSums && resultElements >= threadCount()) && !columnSums && !rowSums;
    if (small && work < kMinParallelConvolution)
      return sizes;
    std::optional<SmallVector<int64_t>> convolution = convolutionTileSizes(fusion, root);
    bool product = fusion.getKind() == FusionKind::Output && work >= kMinParallelProduct &&
                   resultElements >= threadCount() * kMatmulTileMultiple;
    if (small && work < kMinParallelWork && !convolution && !product)
      return sizes;
    if (convolution)
      return *convolution;

    SmallVector<int64_t> parallel;
    for (auto [i, iterator] : llvm::enumerate(iterators))
      if (iterator == utils::IteratorType::parallel)
        parallel.push_back(i);

    if (fusion.getKind() == FusionKind::Output) {
      // A matmul or its epilogue: one tile per batch element when there are
      // enough of them, else the larger of the two matrix dimensions split
      // into one part per thread (the matmul is fused into each tile).
      int64_t tiles = threadCount();
      size_t matrixLoops = std::min<size_t>(2, parallel.size());
      ArrayRef<int64_t> batch = ArrayRef(parallel).drop_back(matrixLoops);
      int64_t batchElements = 1;
      for (int64_t i : batch)
        batchElements *= ranges[i];
      if (!batch.empty() && batchElements >= tiles) {
        for (int64_t i : batch)
          sizes[i] = 1;
        return sizes;
      }
      // The larger matrix dimension.
      SmallVector<int64_t> matrix(llvm::ArrayRef<int64_t>(parallel).take_back(matrixLoops));
      llvm::stable_sort(matrix, [&](int64_t a, int64_t b) { return ranges[a] > ranges[b]; });
      for (int64_t i : matrix)
        if ((sizes[i] = matmulTileSize(ranges[i], tiles)) != 0)
          break;
      return sizes;
    }

    // Loop and input fusions: tile the leading parallel loops by one,
    // leaving trailing loops whole for vectorized inner loops, and never
    // cutting a dimension that a reduction in the fusion reduces.
    if (perChannelSums) {
      // A tile per channel: the sums run whole inside it.
      for (auto [i, iterator] : llvm::enumerate(iterators))
        if (iterator == utils::IteratorType::parallel)
          sizes[i] = 1;
      return sizes;
    }
    int64_t rows = fusion.getKind() == FusionKind::Input ? rowLoops(fusion, root)
                                                          : root.getNumLoops();
    if (rows == 0 && columnTile) {
      // Sums over the rows: tiles of columns, one per thread.
      sizes[*columns] = columnTile;
      return sizes;
    }
    int64_t inner = 1;
    for (int64_t i = rows; i < static_cast<int64_t>(ranges.size()); ++i)
      inner *= ranges[i];
    int64_t tiled = std::min<int64_t>(rows, ranges.size());
    int64_t tiles = 1;
    for (int64_t i = 0; i < tiled; ++i)
      tiles *= ranges[i];
    // Grow the inner part while enough tiles remain to balance the threads.
    while (tiled > 0 && inner < innerElements &&
           tiles / ranges[tiled - 1] >= kTilesPerThread * threadCount()) {
      --tiled;
      inner *= ranges[tiled];
      tiles /= ranges[tiled];
    }
    for (int64_t i = 0; i < tiled; ++i)
      if (iterators[i] == utils::IteratorType::parallel)
        sizes[i] = 1;
    if (fusion.getKind() == FusionKind::Loop)
      keepContiguousLoopsWhole(root, ranges, iterators, sizes);
    return sizes;
  }

  /// A tile that takes one index of a short loop along which an input is
  /// contiguous reads a whole cache line of that input for each element it
  /// uses. A blocked image's transpose back to NCHW, tiled by block and lane,
  /// read `[block, :, :, lane]` in each of 16 tiles over the same block: a
  /// 64-channel image at 224x224 (blocks of 3.2 MB) took 4.2 ms, 12x the time
  /// of one at 112x112, whose blocks stayed in L2. Such a loop, tiled by
  /// one, stays whole, and the next parallel loop left whole is tiled by one
  /// in its place.
  static void keepContiguousLoopsWhole(linalg::LinalgOp root, ArrayRef<int64_t> ranges,
                                       ArrayRef<utils::IteratorType> iterators,
                                       SmallVectorImpl<int64_t> &sizes) {
    for (OpOperand *input : root.getDpsInputOperands()) {
      AffineMap map = root.getMatchingIndexingMap(input);
      if (map.getNumResults() == 0)
        continue;
      auto last = dyn_cast<AffineDimExpr>(map.getResults().back());
      if (!last)
        continue;
      int64_t loop = last.getPosition();
      if (sizes[loop] != 1 || ranges[loop] > kLineElements)
        continue;
      for (int64_t next = loop + 1; next < static_cast<int64_t>(sizes.size()); ++next)
        if (sizes[next] == 0 && ranges[next] > 1 &&
            iterators[next] == utils::IteratorType::parallel) {
          sizes[loop] = 0;
          sizes[next] = 1;
          break;
        }
    }
  }

  LogicalResult tileRoot(FusionOp fusion, Value result) {
    auto root = dyn_cast_or_null<linalg::LinalgOp>(rootOf(result));
    if (!root || !haveOneShape(root->getResultTypes()))
      return success();
    return tileOp(fusion, root);
  }

  /// Ops a root's tiles could not take in, because a reshape stands between
  /// them and the root (a pooling gradient's transposed window, read
  /// through a collapse_shape): each still in use is tiled on its own, the
  /// last first, instead of running whole on one thread before the root's
  /// loop.
  LogicalResult tileLeftovers(FusionOp fusion) {
    llvm::SmallPtrSet<Operation *, 8> seen;
    for (;;) {
      linalg::LinalgOp next;
      for (Operation &op : llvm::reverse(fusion.getBody().front())) {
        auto linalgOp = dyn_cast<linalg::LinalgOp>(&op);
        if (linalgOp && linalgOp->getNumResults() == 1 && !op.use_empty() &&
            seen.insert(&op).second) {
          next = linalgOp;
          break;
        }
      }
      if (!next)
        return success();
      if (failed(tileOp(fusion, next)))
        return failure();
    }
  }

  LogicalResult tileOp(FusionOp fusion, linalg::LinalgOp root) {
    SmallVector<int64_t> sizes = tileSizes(fusion, root);
    if (llvm::all_of(sizes, [](int64_t size) { return size == 0; }))
      return success();

    IRRewriter rewriter(&getContext());
    rewriter.setInsertionPoint(root);
    scf::SCFTilingOptions tiling;
    tiling.setTileSizes(getAsIndexOpFoldResult(&getContext(), sizes));
    tiling.setLoopType(scf::SCFTilingOptions::LoopType::ForallOp);
    scf::SCFTileAndFuseOptions options;
    options.setTilingOptions(tiling);
    FailureOr<scf::SCFTileAndFuseResult> tiled = scf::tileConsumerAndFuseProducersUsingSCF(
        rewriter, cast<TilingInterface>(root.getOperation()), options);
    if (failed(tiled))
      return root->emitError("kiln-form-kernels: cannot tile this fusion's root");
    for (OpResult original : root->getResults())
      if (Value replacement = tiled->replacements.lookup(original))
        rewriter.replaceAllUsesWith(original, replacement);
    return success();
  }

  /// The roots of a multi-output fusion that run over the same loops
  /// (a batch normalization's gradient: three sums per channel over the
  /// same batch and space) merged into one generic with a result per root,
  /// so that each tile reads the inputs once for all of them instead of
  /// each root's loop reading them from memory again.
  static void mergeSiblingRoots(FusionOp fusion) {
    SmallVector<linalg::GenericOp> roots;
    for (Value value : fusion.getYield().getValues())
      if (auto generic = dyn_cast_or_null<linalg::GenericOp>(rootOf(value));
          generic && !llvm::is_contained(roots, generic))
        roots.push_back(generic);
    llvm::sort(roots, [](linalg::GenericOp a, linalg::GenericOp b) {
      return a->isBeforeInBlock(b);
    });
    for (size_t i = 0; i < roots.size(); ++i)
      for (size_t j = i + 1; j < roots.size(); ++j)
        if (roots[i] && roots[j] && siblingsMerge(roots[i], roots[j])) {
          roots[j] = mergeSiblings(roots[i], roots[j]);
          roots[i] = nullptr;
          break;
        }
  }

  LogicalResult formKernel(FusionOp fusion, const FrozenRewritePatternSet &patterns) {
    Region &body = fusion.getBody();
    (void)applyPatternsGreedily(body, patterns);
    mergeSiblingRoots(fusion);
    // Tile each result's root, the last one first, so earlier roots fused
    // into a later tile are not tiled twice. The yielded values are read
    // afresh each time: tiling a root may fuse an earlier result's producer
    // into its loop and replace that result by the loop's.
    for (unsigned i = fusion.getYield().getValues().size(); i-- > 0;)
      if (failed(tileRoot(fusion, fusion.getYield().getValues()[i])))
        return failure();
    if (failed(tileLeftovers(fusion)))
      return failure();

    // Dead ops left behind by fusion (producers now computed in tiles).
    IRRewriter rewriter(&getContext());
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body.front())))
      if (!op.hasTrait<OpTrait::IsTerminator>() && op.use_empty() && isMemoryEffectFree(&op))
        rewriter.eraseOp(&op);

    // Inline the body where the fusion was.
    Block &block = body.front();
    YieldOp yield = fusion.getYield();
    SmallVector<Value> yielded(yield.getValues());
    // A result that folded to one of the body's arguments (x * 1) is the
    // fusion's input; the argument itself goes away with the block.
    for (Value &value : yielded)
      if (auto arg = dyn_cast<BlockArgument>(value); arg && arg.getOwner() == &block)
        value = fusion.getInputs()[arg.getArgNumber()];
    rewriter.eraseOp(yield);
    rewriter.inlineBlockBefore(&block, fusion, fusion.getInputs());
    rewriter.replaceOp(fusion, yielded);
    return success();
  }
};

} // namespace
} // namespace kiln
