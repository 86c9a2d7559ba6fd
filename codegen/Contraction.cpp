//===- Contraction.cpp - Recognizing Kiln's matmul and convolution generics ===//
#include "codegen/Contraction.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;

namespace kiln {

bool isMultiplyAccumulate(linalg::LinalgOp op) {
  if (op->getNumRegions() != 1 || op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1)
    return false;
  Block &body = op->getRegion(0).front();
  if (body.getOperations().size() != 3)
    return false;
  auto mul = dyn_cast<arith::MulFOp>(&body.front());
  auto add = dyn_cast_or_null<arith::AddFOp>(mul ? mul->getNextNode() : nullptr);
  if (!mul || !add)
    return false;
  Value a = body.getArgument(0), b = body.getArgument(1), c = body.getArgument(2);
  bool mulOk = (mul.getLhs() == a && mul.getRhs() == b) || (mul.getLhs() == b && mul.getRhs() == a);
  bool addOk = (add.getLhs() == c && add.getRhs() == mul) || (add.getLhs() == mul && add.getRhs() == c);
  auto yield = dyn_cast<linalg::YieldOp>(body.getTerminator());
  return mulOk && addOk && yield && yield.getValues().size() == 1 && yield.getValues()[0] == add;
}

std::optional<ConvolutionLoops> matchConvolution(linalg::LinalgOp op, bool withoutPositions) {
  if (!isMultiplyAccumulate(op))
    return std::nullopt;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  int64_t loops = iterators.size();
  int64_t parallel = 0;
  while (parallel < loops && iterators[parallel] == utils::IteratorType::parallel)
    ++parallel;
  if (parallel == 0 || parallel == loops)
    return std::nullopt;
  for (int64_t i = parallel; i < loops; ++i)
    if (iterators[i] != utils::IteratorType::reduction)
      return std::nullopt;

  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  AffineMap imageMap = maps[0], filterMap = maps[1], outputMap = maps[2];
  // The output is indexed by the parallel loops, in order.
  if (outputMap.getNumResults() != parallel)
    return std::nullopt;
  for (auto [i, expr] : llvm::enumerate(outputMap.getResults())) {
    auto dim = dyn_cast<AffineDimExpr>(expr);
    if (!dim || dim.getPosition() != i)
      return std::nullopt;
  }

  SmallVector<bool> inImage(loops, false), inFilter(loops, false);
  bool windowed = false;
  for (AffineExpr expr : imageMap.getResults()) {
    windowed |= !isa<AffineDimExpr>(expr);
    expr.walk([&](AffineExpr sub) {
      if (auto dim = dyn_cast<AffineDimExpr>(sub))
        inImage[dim.getPosition()] = true;
    });
  }
  SmallVector<int64_t> filterLoops;
  for (AffineExpr expr : filterMap.getResults()) {
    auto dim = dyn_cast<AffineDimExpr>(expr);
    if (!dim || inFilter[dim.getPosition()])
      return std::nullopt;
    inFilter[dim.getPosition()] = true;
    filterLoops.push_back(dim.getPosition());
  }

  ConvolutionLoops result;
  int64_t first = parallel;
  while (first > 0 && !inFilter[first - 1] && inImage[first - 1])
    --first;
  int64_t spatialFrom = first;
  if (first > 0 && inFilter[first - 1] && !inImage[first - 1]) {
    // Channel-first (a weight gradient's output in the filter's layout):
    // the loops after the channel that index the image's dimensions before
    // its first window dimension are batch loops, not output positions.
    auto firstWindow = llvm::find_if(imageMap.getResults(), [&](AffineExpr expr) {
      for (int64_t loop = parallel; loop < loops; ++loop)
        if (expr.isFunctionOfDim(loop))
          return true;
      return false;
    });
    auto beforeWindow = [&](int64_t loop) {
      return llvm::none_of(llvm::make_range(firstWindow, imageMap.getResults().end()),
                           [&](AffineExpr expr) { return expr.isFunctionOfDim(loop); });
    };
    while (spatialFrom < parallel && beforeWindow(spatialFrom))
      ++spatialFrom;
  }
  for (int64_t i = spatialFrom; i < parallel; ++i)
    result.spatial.push_back(i);
  if (result.spatial.empty() ? !(withoutPositions && windowed)
                             : (!windowed && result.spatial.size() < 2))
    return std::nullopt;
  if (first > 0 && inFilter[first - 1] && !inImage[first - 1])
    result.channel = --first;
  for (int64_t i = 0; i < first; ++i) {
    if (!inImage[i])
      return std::nullopt;
    result.batch.push_back(i);
  }
  for (int64_t i = first + (result.channel ? 1 : 0); i < spatialFrom; ++i)
    result.batch.push_back(i);

  // The filter reads batch loops, then the channel, then every window loop.
  size_t position = 0;
  while (position < filterLoops.size() && filterLoops[position] < first)
    ++position;
  if (result.channel) {
    if (position == filterLoops.size() || filterLoops[position] != *result.channel)
      return std::nullopt;
    ++position;
  }
  for (; position < filterLoops.size(); ++position) {
    if (filterLoops[position] < parallel)
      return std::nullopt;
    result.window.push_back(filterLoops[position]);
  }
  if (static_cast<int64_t>(result.window.size()) != loops - parallel)
    return std::nullopt;
  return result;
}

bool joinsBatchIntoColumns(linalg::LinalgOp op, const ConvolutionLoops &loops) {
  if (loops.batch.empty() || !loops.channel || loops.window.size() < 2)
    return false;
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  int64_t positions = 1;
  for (int64_t loop : loops.spatial) {
    if (ShapedType::isDynamic(ranges[loop]))
      return false;
    positions *= ranges[loop];
  }
  if (positions >= kMinColumnsPerProduct)
    return false;
  AffineMap filterMap = op.getIndexingMapsArray()[1];
  return llvm::none_of(loops.batch,
                       [&](int64_t loop) { return filterMap.isFunctionOfDim(loop); });
}

} // namespace kiln
