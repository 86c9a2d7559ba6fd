//===- ConvolutionsToBlas.cpp - Convolution tiles as BLAS and kernel calls ===//
//
// The convolution half of kiln-contractions-to-blas: each convolution tile
// becomes a call of the runtime's depthwise kernel, a oneDNN convolution
// primitive for constant filters, a loop nest that vectorizes along output
// rows, or im2col copies of its input windows and sgemm calls, one per
// batch element or one for all of them (their positions as columns).
//
//===----------------------------------------------------------------------===//
#include "codegen/CPU/BlasCalls.h"
#include "codegen/CPU/ConvolutionNeighbours.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

#include <limits>

using namespace mlir;

namespace kiln::blas {
namespace {

/// runtime/kernels/PackedConvolution.c: a 2-D convolution of one image, by
/// Winograd's F(4x4, 3x3) for 3x3 filters at stride 1.
constexpr StringLiteral kConvolution = "kiln_conv2d_constant_w";
/// runtime/kernels/PackedMatmul.c: a product by constant filters with few
/// columns (output positions), as the transposed product with the filters
/// packed once.
constexpr StringLiteral kConstantA = "kiln_matmul_constant_a";
/// Most columns of a convolution tile's product for kConstantA: at 49 (a
/// 7x7 stage) it ran 1.3x faster than dnnl_sgemm, at 169 and more level or
/// slower (the transpose back then costs what the packing saves).
constexpr int64_t kMaxConstantAColumns = 64;
/// runtime/kernels/DepthwiseConvolution.c: a depthwise 2-D convolution tile.
constexpr StringLiteral kDepthwise = "kiln_depthwise_conv2d";
/// Largest window (multiply-adds per output) of a single-channel convolution
/// (depthwise: one per group) computed by loops rather than im2col and an
/// sgemm of one row, which would spend more on the call and the copy than on
/// the arithmetic (a 3x3 depthwise layer of MobileNetV2 ran 3 to 6 times
/// slower that way than as loops vectorized along the output row).
constexpr int64_t kMaxLoopWindow = 64;
/// Largest im2col buffer of a convolution whose batch elements are columns
/// of one product (joinsBatchIntoColumns): the reduction is split into
/// chunks of its outermost loop to stay within it, as per-tile im2col
/// buffers stay within L2.
constexpr int64_t kJoinedIm2colBytes = 1 << 19;
/// Deepest reduction of one sgemm call whose B is read transposed (a joined
/// product's im2col buffer holding each column's window as a row): deeper
/// calls are split into calls of at most this many, accumulating. oneDNN's
/// sgemm with a transposed B ran 15-30 % slower at depths past about 800 on
/// Zen 4 (64 x 144 x 784: 106 GFLOP/s a core; x 1568: 85; x 3136: 78),
/// while at N (not transposed) it kept 117 at any depth.
constexpr int64_t kMaxTransposedDepth = 800;
/// Smallest convolution call (multiply-adds) worth a oneDNN primitive: below
/// it, its fixed cost per call (three primitives, four memory objects, about
/// 1 us) outweighs what it saves over im2col and sgemm.
constexpr int64_t kMinPrimitiveConvolution = 1 << 20;

/// `expr` as a sum of loop dimensions times constants, into `coefficients`.
bool linearInDims(AffineExpr expr, llvm::SmallDenseMap<unsigned, int64_t> &coefficients) {
  if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
    coefficients[dim.getPosition()] += 1;
    return true;
  }
  auto binary = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!binary)
    return false;
  if (expr.getKind() == AffineExprKind::Add)
    return linearInDims(binary.getLHS(), coefficients) &&
           linearInDims(binary.getRHS(), coefficients);
  auto dim = dyn_cast<AffineDimExpr>(binary.getLHS());
  auto factor = dyn_cast<AffineConstantExpr>(binary.getRHS());
  if (expr.getKind() != AffineExprKind::Mul || !dim || !factor)
    return false;
  coefficients[dim.getPosition()] += factor.getValue();
  return true;
}

/// The stride and dilation of an image index `spatial * stride + window *
/// dilation`.
std::optional<std::pair<int64_t, int64_t>> strideAndDilation(AffineExpr expr, int64_t spatial,
                                                              int64_t window) {
  llvm::SmallDenseMap<unsigned, int64_t> coefficients;
  if (!linearInDims(expr, coefficients) || coefficients.size() != 2 ||
      coefficients.lookup(spatial) < 1 || coefficients.lookup(window) < 1)
    return std::nullopt;
  return std::make_pair(coefficients.lookup(spatial), coefficients.lookup(window));
}

/// Rewrites convolution tiles for one pass run.
class ConvolutionRewriter {
public:
  ConvolutionRewriter(CallSites &sites, bool primitives, bool direct)
      : sites(sites), primitives(primitives), direct(direct) {}

  /// An operand's indices at one batch element: the batch loops' induction
  /// variables `batchIvs` where `map` reads a loop of `batchLoops`, `zero`
  /// elsewhere.
  static SmallVector<Value> batchIndices(AffineMap map, ArrayRef<int64_t> batchLoops,
                                         ArrayRef<Value> batchIvs, Value zero) {
    SmallVector<Value> indices;
    for (AffineExpr expr : map.getResults()) {
      auto dim = dyn_cast<AffineDimExpr>(expr);
      const int64_t *batch = dim ? llvm::find(batchLoops, dim.getPosition()) : batchLoops.end();
      indices.push_back(batch == batchLoops.end() ? zero
                                                  : batchIvs[batch - batchLoops.begin()]);
    }
    return indices;
  }

  /// A convolution tile becomes an im2col copy of its image into a
  /// [batch..., window..., spatial...] buffer (a linalg.generic, lowered to
  /// vectorizable loops later) and one sgemm per batch index:
  /// output[channel, spatial] += filter[channel, window] * col[window, spatial].
  void rewrite(linalg::GenericOp op, const ConvolutionLoops &loops, func::FuncOp sgemm) {
    if (callDepthwise(op, loops))
      return;
    if (primitives && callConvolution(op, loops))
      return;
    if (loopsVectorizeBetter(op, loops))
      return;
    if (joinBatch(op, loops, sgemm))
      return;
    OpBuilder b(op);
    Location loc = op.getLoc();
    MLIRContext *ctx = b.getContext();
    SmallVector<OpFoldResult> sizes = loopSizes(b, loc, op);
    Value image = op.getDpsInputs()[0], filter = op.getDpsInputs()[1], output = op.getDpsInits()[0];

    // A convolution whose window is the input channels alone (1x1 at stride
    // 1) reads a tile's image in place as B[channel][position] when the
    // positions are contiguous: the im2col copy would be the image itself.
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    ArrayRef<AffineExpr> imageExprs = maps[0].getResults();
    size_t matrixDims = 1 + loops.spatial.size();
    bool inPlace = loops.window.size() == 1 && imageExprs.size() >= matrixDims &&
                   isDim(imageExprs.take_back(matrixDims)[0], loops.window[0]) &&
                   llvm::all_of(llvm::enumerate(loops.spatial), [&](auto spatial) {
                     return isDim(imageExprs.take_back(loops.spatial.size())[spatial.index()],
                                  spatial.value());
                   }) &&
                   isDenseTrailing(image, loops.spatial.size());

    // The column buffer's loops: batch, window, spatial. A band of output
    // rows that is the last, partial tile has a dynamic row count.
    SmallVector<int64_t> colLoops(loops.batch);
    llvm::append_range(colLoops, loops.window);
    llvm::append_range(colLoops, loops.spatial);
    SmallVector<OpFoldResult> colSizes;
    SmallVector<AffineExpr> renumber(sizes.size(), getAffineConstantExpr(0, ctx));
    for (auto [position, loop] : llvm::enumerate(colLoops)) {
      colSizes.push_back(sizes[loop]);
      renumber[loop] = getAffineDimExpr(position, ctx);
    }
    AffineMap imageMap = op.getIndexingMapsArray()[0].replaceDimsAndSymbols(
        renumber, {}, colLoops.size(), 0);
    Value col;
    if (!inPlace) {
      col = allocF32(b, loc, colSizes);
      copyIm2col(b, loc, image, imageMap, colSizes, loops.batch.size() + loops.window.size(), col);
    }

    OpFoldResult m = loops.channel ? sizes[*loops.channel] : b.getIndexAttr(1);
    OpFoldResult n = product(b, loc, llvm::map_to_vector(loops.spatial, [&](int64_t loop) {
                               return sizes[loop];
                             }));
    OpFoldResult k = product(b, loc, llvm::map_to_vector(loops.window, [&](int64_t loop) {
                               return sizes[loop];
                             }));
    {
      OpBuilder::InsertionGuard guard(b);
      SmallVector<Value> batchIvs = loopNest(
          b, loc, llvm::map_to_vector(loops.batch, [&](int64_t loop) { return sizes[loop]; }));
      Value zero = arith::ConstantIndexOp::create(b, loc, 0);
      auto indicesOf = [&](AffineMap map) {
        return batchIndices(map, loops.batch, batchIvs, zero);
      };
      auto i32 = [&](OpFoldResult value) { return asInteger(b, loc, b.getI32Type(), value); };
      auto [pa, filterStrides] = addressOf(b, loc, filter, indicesOf(maps[1]));
      auto [pc, outputStrides] = addressOf(b, loc, output, indicesOf(maps[2]));
      Value pb, ldb = i32(n);
      if (inPlace) {
        auto [imageAddress, imageStrides] = addressOf(b, loc, image, indicesOf(maps[0]));
        pb = imageAddress;
        ldb = asInteger(b, loc, b.getI32Type(), imageStrides[imageExprs.size() - matrixDims]);
      } else {
        SmallVector<Value> colIndices(batchIvs);
        colIndices.resize(colLoops.size(), zero);
        pb = addressOf(b, loc, col, colIndices).first;
      }
      // Leading dimensions: the channel's strides; a single row's is its width.
      auto leadingDim = [&](AffineMap map, ArrayRef<Value> strides, OpFoldResult width) {
        if (!loops.channel || isConstantIntValue(m, 1))
          return i32(width);
        unsigned position = *map.getResultPosition(getAffineDimExpr(*loops.channel, ctx));
        return asInteger(b, loc, b.getI32Type(), strides[position]);
      };
      Value lda = leadingDim(maps[1], filterStrides, k);
      Value ldc = leadingDim(maps[2], outputStrides, n);
      std::optional<int64_t> positions = getConstantIntValue(n);
      if (primitives && positions && *positions <= kMaxConstantAColumns &&
          isConstantBuffer(filter)) {
        // A tile with few positions (a 7x7 stage) by constant filters:
        // (slot, m, n, k, b, ldb, a, lda, c, ldc).
        func::FuncOp callee = sites.declareKernel(kConstantA, 10, {0, 4, 6, 8});
        Type i64 = b.getI64Type();
        auto wide = [&](Value v) { return arith::ExtSIOp::create(b, loc, i64, v).getResult(); };
        func::CallOp::create(b, loc, callee,
                             ValueRange{sites.slot(b, loc), asInteger(b, loc, i64, m),
                                        asInteger(b, loc, i64, n), asInteger(b, loc, i64, k), pb,
                                        wide(ldb), pa, wide(lda), pc, wide(ldc)});
      } else {
        callSgemm(b, loc, sgemm, m, n, k, false, pa, lda, false, pb, ldb, pc, ldc);
      }
    }
    if (col)
      memref::DeallocOp::create(b, loc, col);
    op->erase();
  }

  /// A new f32 buffer of `sizes`, 64-byte aligned.
  static Value allocF32(OpBuilder &b, Location loc, ArrayRef<OpFoldResult> sizes) {
    SmallVector<int64_t> shape;
    SmallVector<Value> dynamicSizes;
    dispatchIndexOpFoldResults(sizes, dynamicSizes, shape);
    return memref::AllocOp::create(b, loc, MemRefType::get(shape, b.getF32Type()), dynamicSizes,
                                   b.getI64IntegerAttr(64));
  }

  /// Fills the im2col buffer `col` of `colSizes` from `image` read through
  /// `imageMap` (whose dimensions are col's): by strided copies of the
  /// trailing `colSizes` dimensions after the first `outerDims` where the map
  /// allows (copyWindows), else by a linalg.generic.
  static void copyIm2col(OpBuilder &b, Location loc, Value image, AffineMap imageMap,
                         ArrayRef<OpFoldResult> colSizes, unsigned outerDims, Value col) {
    if (copyWindows(b, loc, image, imageMap, colSizes, outerDims, col))
      return;
    linalg::GenericOp::create(
        b, loc, ValueRange{image}, ValueRange{col},
        SmallVector<AffineMap>{imageMap, b.getMultiDimIdentityMap(colSizes.size())},
        SmallVector<utils::IteratorType>(colSizes.size(), utils::IteratorType::parallel),
        [](OpBuilder &nb, Location nloc, ValueRange args) {
          linalg::YieldOp::create(nb, nloc, args[0]);
        });
  }

  /// `buffer[..., offset : offset + size, ...]` along dimension `dim`.
  static Value sliceAlong(OpBuilder &b, Location loc, Value buffer, unsigned dim, Value offset,
                          int64_t size) {
    int64_t rank = cast<MemRefType>(buffer.getType()).getRank();
    SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)), strides(rank, b.getIndexAttr(1));
    SmallVector<OpFoldResult> sizes = memref::getMixedSizes(b, loc, buffer);
    offsets[dim] = offset;
    sizes[dim] = b.getIndexAttr(size);
    return memref::SubViewOp::create(b, loc, buffer, offsets, sizes, strides);
  }

  /// A convolution tile whose batch elements share the filter and have few
  /// output positions each (joinsBatchIntoColumns: a weight gradient, one
  /// batch element per input channel and a position per filter tap) as one
  /// product whose columns are every (batch element, position) pair:
  ///   product[channel][batch, spatial] +=
  ///       filter[channel][window] * col[window][batch, spatial],
  /// summed over chunks of the outermost window loop (a weight gradient's
  /// images) that keep `col` within kJoinedIm2colBytes, then added into the
  /// output. `col` holds each column's window as a row (read transposed)
  /// when the window's rows are longer than the output's, so that im2col
  /// copies long runs. A channel-first output [channel, batch..., spatial...]
  /// (matchConvolution) is laid out as the product and is accumulated in
  /// place, and a following SGD update of the weights (matchUpdateEpilogue)
  /// is folded into the products. Returns false, changing nothing, for any
  /// other convolution.
  static bool joinBatch(linalg::GenericOp op, const ConvolutionLoops &loops, func::FuncOp sgemm) {
    if (!joinsBatchIntoColumns(op, loops))
      return false;
    Value image = op.getDpsInputs()[0], filter = op.getDpsInputs()[1], output = op.getDpsInits()[0];
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    // The tile's batch elements (a partial tile's bounded by the tile size):
    // the output is indexed by the parallel loops in order.
    int64_t batchElements = 1, positions = 1, innerWindow = 1;
    for (int64_t loop : loops.batch) {
      int64_t extent = ShapedType::isDynamic(ranges[loop])
                           ? upperBound(ValueBoundsConstraintSet::Variable(output, loop))
                           : ranges[loop];
      if (ShapedType::isDynamic(extent))
        return false;
      batchElements *= extent;
    }
    for (int64_t loop : loops.spatial)
      positions *= ranges[loop];
    for (int64_t loop : loops.window)
      if (ShapedType::isDynamic(ranges[loop]))
        return false;
    for (int64_t loop : ArrayRef(loops.window).drop_front())
      innerWindow *= ranges[loop];
    if (batchElements == 1)
      return false;

    // Chunks of the outermost window loop, when the image reads it as a
    // dimension of its own (images, input channels): the largest that
    // divides it and keeps the im2col buffer within bounds.
    int64_t outer = loops.window.front(), chunk = ranges[outer];
    std::optional<unsigned> imageDim;
    for (auto [position, expr] : llvm::enumerate(maps[0].getResults()))
      if (isDim(expr, outer))
        imageDim = position;
    if (imageDim && llvm::count_if(maps[0].getResults(), [&](AffineExpr expr) {
                      return expr.isFunctionOfDim(outer);
                    }) == 1) {
      int64_t fitting = std::max<int64_t>(
          1, kJoinedIm2colBytes /
                 static_cast<int64_t>(sizeof(float) * batchElements * positions * innerWindow));
      chunk = std::min(chunk, fitting);
      while (ranges[outer] % chunk)
        --chunk;
    }

    OpBuilder b(op);
    Location loc = op.getLoc();
    MLIRContext *ctx = b.getContext();
    SmallVector<OpFoldResult> sizes = loopSizes(b, loc, op);
    bool windowRows = loops.spatial.empty() ||
                      ranges[loops.window.back()] >= ranges[loops.spatial.back()];
    SmallVector<int64_t> columnLoops(loops.batch), colLoops;
    llvm::append_range(columnLoops, loops.spatial);
    if (!windowRows)
      llvm::append_range(colLoops, loops.window);
    llvm::append_range(colLoops, columnLoops);
    if (windowRows)
      llvm::append_range(colLoops, loops.window);
    SmallVector<OpFoldResult> colSizes;
    SmallVector<AffineExpr> renumber(sizes.size(), getAffineConstantExpr(0, ctx));
    for (auto [position, loop] : llvm::enumerate(colLoops)) {
      colSizes.push_back(loop == outer ? b.getIndexAttr(chunk) : sizes[loop]);
      renumber[loop] = getAffineDimExpr(position, ctx);
    }
    AffineMap imageMap = maps[0].replaceDimsAndSymbols(renumber, {}, colLoops.size(), 0);
    auto sizesOf = [&](ArrayRef<int64_t> loopList) {
      return llvm::map_to_vector(loopList, [&](int64_t loop) { return sizes[loop]; });
    };
    SmallVector<int64_t> productLoops{*loops.channel};
    llvm::append_range(productLoops, columnLoops);
    // A channel-first output (a weight gradient in the filter's layout) is
    // the product itself when its columns are dense: the product
    // accumulates into it.
    unsigned outputRank = maps[2].getNumResults();
    bool direct = llvm::equal(productLoops, llvm::seq<int64_t>(0, outputRank)) &&
                  isDenseTrailing(output, outputRank - 1);
    // When an optimizer's update of the weights follows in the tile, the
    // products add -lr times the gradient onto the weights instead (no
    // zeroed tile, no pass reading it back). The update's output view may
    // be made after the convolution: the calls go where the update was.
    std::optional<UpdateEpilogue> update;
    if (direct)
      update = matchUpdateEpilogue(op, output);
    if (update && !isDenseTrailing(update->out, outputRank - 1))
      update.reset();
    Value alpha;
    if (update) {
      b.setInsertionPoint(update->op);
      alpha = update->begin(b, loc);
    }
    Value col = allocF32(b, loc, colSizes);
    Value result = update ? update->out : output;
    if (!direct) {
      result = allocF32(b, loc, sizesOf(productLoops));
      Value zero = arith::ConstantFloatOp::create(b, loc, b.getF32Type(), APFloat(0.0f));
      linalg::FillOp::create(b, loc, zero, result);
    }

    OpFoldResult m = sizes[*loops.channel];
    OpFoldResult n = product(b, loc, sizesOf(columnLoops));
    OpFoldResult k = product(b, loc, ArrayRef(colSizes).take_back(loops.window.size()));
    if (!windowRows)
      k = product(b, loc, ArrayRef(colSizes).take_front(loops.window.size()));
    auto i32 = [&](OpFoldResult value) { return asInteger(b, loc, b.getI32Type(), value); };
    unsigned filterOuter = *maps[1].getResultPosition(getAffineDimExpr(outer, ctx));
    unsigned filterChannel = *maps[1].getResultPosition(getAffineDimExpr(*loops.channel, ctx));
    auto multiplyChunk = [&](Value offset) {
      Value chunkImage = image, chunkFilter = filter;
      if (offset) {
        chunkImage = sliceAlong(b, loc, image, *imageDim, offset, chunk);
        chunkFilter = sliceAlong(b, loc, filter, filterOuter, offset, chunk);
      }
      copyIm2col(b, loc, chunkImage, imageMap, colSizes,
                 windowRows ? columnLoops.size() : loops.window.size(), col);
      auto [pa, filterStrides] = addressOf(b, loc, chunkFilter);
      Value lda = isConstantIntValue(m, 1)
                      ? i32(k)
                      : asInteger(b, loc, b.getI32Type(), filterStrides[filterChannel]);
      auto [pc, resultStrides] = addressOf(b, loc, result);
      Value ldc = direct ? asInteger(b, loc, b.getI32Type(), resultStrides.front()) : i32(n);
      Value pcol = addressOf(b, loc, col).first;
      std::optional<int64_t> depth = getConstantIntValue(k);
      if (!windowRows || !depth) {
        callSgemm(b, loc, sgemm, m, n, k, false, pa, lda, windowRows, pcol, i32(windowRows ? k : n),
                  pc, ldc, alpha);
        return;
      }
      // B transposed: `filter` and `col` both hold the reduction
      // contiguously in their rows, so a part of it is a pointer offset
      // into each.
      int64_t parts = llvm::divideCeil(*depth, kMaxTransposedDepth);
      int64_t part = llvm::divideCeil(*depth, parts);
      Value ldcol = i32(k);
      for (int64_t begin = 0; begin < *depth; begin += part) {
        auto at = [&](Value pointer) -> Value {
          if (begin == 0)
            return pointer;
          return advanceFloats(b, loc, pointer,
                               arith::ConstantIntOp::create(b, loc, b.getI64Type(), begin));
        };
        Value partA = at(pa);
        Value partCol = at(pcol);
        callSgemm(b, loc, sgemm, m, n, b.getIndexAttr(std::min(part, *depth - begin)), false, partA,
                  lda, true, partCol, ldcol, pc, ldc, alpha);
      }
    };
    if (chunk < ranges[outer]) {
      OpBuilder::InsertionGuard guard(b);
      auto loop = scf::ForOp::create(b, loc, arith::ConstantIndexOp::create(b, loc, 0),
                                     arith::ConstantIndexOp::create(b, loc, ranges[outer]),
                                     arith::ConstantIndexOp::create(b, loc, chunk));
      b.setInsertionPointToStart(loop.getBody());
      multiplyChunk(loop.getInductionVar());
    } else {
      multiplyChunk(Value());
    }

    if (!direct) {
      // output[batch..., channel, spatial...] += result[channel, batch..., spatial...].
      SmallVector<AffineExpr> resultExprs = llvm::map_to_vector(
          productLoops, [&](int64_t loop) { return getAffineDimExpr(loop, ctx); });
      linalg::GenericOp::create(
          b, loc, ValueRange{result}, ValueRange{output},
          SmallVector<AffineMap>{AffineMap::get(outputRank, 0, resultExprs, ctx),
                                 b.getMultiDimIdentityMap(outputRank)},
          SmallVector<utils::IteratorType>(outputRank, utils::IteratorType::parallel),
          [](OpBuilder &nb, Location nloc, ValueRange args) {
            linalg::YieldOp::create(
                nb, nloc, ValueRange{arith::AddFOp::create(nb, nloc, args[1], args[0])});
          });
    }
    memref::DeallocOp::create(b, loc, col);
    if (!direct)
      memref::DeallocOp::create(b, loc, result);
    op->erase();
    if (update)
      update->erase();
    return true;
  }

  /// A single-channel convolution with a small window (depthwise) stays a
  /// loop nest, reordered so that the output row is the innermost loop
  /// (batch..., rows, window..., columns): each weight is loaded once per
  /// row and the row's multiply-adds vectorize. Returns false, changing
  /// nothing, for any other convolution.
  static bool loopsVectorizeBetter(linalg::GenericOp op, const ConvolutionLoops &loops) {
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    if (loops.channel && ranges[*loops.channel] != 1)
      return false;
    int64_t window = 1;
    for (int64_t loop : loops.window)
      window *= ranges[loop];
    if (ShapedType::isDynamic(window) || window > kMaxLoopWindow || loops.spatial.empty())
      return false;
    SmallVector<unsigned> order(loops.batch.begin(), loops.batch.end());
    if (loops.channel)
      order.push_back(*loops.channel);
    llvm::append_range(order, ArrayRef(loops.spatial).drop_back());
    llvm::append_range(order, loops.window);
    order.push_back(loops.spatial.back());
    if (order.size() != ranges.size())
      return false;
    IRRewriter rewriter(op.getContext());
    rewriter.setInsertionPoint(op);
    return succeeded(linalg::interchangeGenericOp(rewriter, op, order));
  }

  /// The im2col copy as one `memref.copy` per (batch..., window...) index of
  /// the image's strided view under that window into the column buffer's
  /// [spatial...] slice, when every image index is a sum of batch and window
  /// terms plus at most one spatial loop times its stride, spatial loops in
  /// order. kiln-expand-strided-copies turns each into row copies, memcpy's
  /// at stride 1: short rows (LeNet's 10 and 28) copied by loops stayed
  /// scalar, LLVM unsure that the buffers do not overlap. Returns false,
  /// creating nothing, for any other image map.
  static bool copyWindows(OpBuilder &b, Location loc, Value image, AffineMap imageMap,
                          ArrayRef<OpFoldResult> colSizes, unsigned outerDims, Value col) {
    MLIRContext *ctx = b.getContext();
    unsigned rank = colSizes.size(), nextSpatial = outerDims;
    SmallVector<AffineExpr> offsets;
    SmallVector<OpFoldResult> sizes;
    SmallVector<int64_t> strides;
    for (AffineExpr expr : imageMap.getResults()) {
      llvm::SmallDenseMap<unsigned, int64_t> coefficients;
      if (!linearInDims(expr, coefficients))
        return false;
      AffineExpr offset = getAffineConstantExpr(0, ctx);
      OpFoldResult size = b.getIndexAttr(1);
      int64_t stride = 1;
      for (unsigned dim = 0; dim < rank; ++dim) {
        int64_t coefficient = coefficients.lookup(dim);
        if (coefficient == 0)
          continue;
        if (dim < outerDims) {
          offset = offset + getAffineDimExpr(dim, ctx) * coefficient;
          continue;
        }
        if (dim != nextSpatial || !isConstantIntValue(size, 1))
          return false;
        size = colSizes[dim];
        stride = coefficient;
        ++nextSpatial;
      }
      offsets.push_back(offset);
      sizes.push_back(size);
      strides.push_back(stride);
    }
    if (nextSpatial != rank)
      return false;

    OpBuilder::InsertionGuard guard(b);
    SmallVector<Value> ivs = loopNest(b, loc, colSizes.take_front(outerDims));
    SmallVector<OpFoldResult> imageOffsets;
    for (AffineExpr offset : offsets)
      imageOffsets.push_back(
          affine::makeComposedFoldedAffineApply(b, loc, AffineMap::get(outerDims, 0, offset),
                                                getAsOpFoldResult(ValueRange(ivs))));
    ArrayRef<OpFoldResult> spatialSizes = colSizes.drop_front(outerDims);
    SmallVector<int64_t> spatialShape;
    SmallVector<Value> dynamic;
    dispatchIndexOpFoldResults(spatialSizes, dynamic, spatialShape);
    auto imageType = cast<MemRefType>(image.getType());
    SmallVector<OpFoldResult> imageStrides = getAsIndexOpFoldResult(ctx, strides);
    auto windowType = memref::SubViewOp::inferRankReducedResultType(
        spatialShape, imageType, imageOffsets, sizes, imageStrides);
    Value window = memref::SubViewOp::create(b, loc, cast<MemRefType>(windowType), image,
                                             imageOffsets, sizes, imageStrides);
    SmallVector<OpFoldResult> colOffsets = getAsOpFoldResult(ValueRange(ivs));
    colOffsets.append(spatialSizes.size(), b.getIndexAttr(0));
    SmallVector<OpFoldResult> sliceSizes(outerDims, b.getIndexAttr(1));
    llvm::append_range(sliceSizes, spatialSizes);
    SmallVector<OpFoldResult> unit(rank, b.getIndexAttr(1));
    auto colType = cast<MemRefType>(col.getType());
    auto sliceType = memref::SubViewOp::inferRankReducedResultType(spatialShape, colType,
                                                                   colOffsets, sliceSizes, unit);
    Value slice = memref::SubViewOp::create(b, loc, cast<MemRefType>(sliceType), col, colOffsets,
                                            sliceSizes, unit);
    memref::CopyOp::create(b, loc, window, slice);
    return true;
  }

  /// A 2-D convolution tile in NCHW whose window is whole: either dense
  /// (an output-channel loop `f` and an input-channel loop `c`, whole in the
  /// tile) or depthwise (one channel per group: `f` = `c` is the innermost
  /// batch loop, a tile holding any number of groups). The output's rows may
  /// be a band, the last one shorter. A dense window one tap tall or wide
  /// (7x1, 1x7) has lost that loop to unit-dimension folding.
  struct ConvolutionTile {
    bool depthwise;
    /// Loops: output and input channel, output rows and columns.
    int64_t f, c, oh, ow;
    /// The window's extent.
    int64_t kh, kw;
    /// (stride, dilation) of the rows and the columns.
    std::pair<int64_t, int64_t> vertical, horizontal;
  };

  /// The stride of an image index `spatial * stride` that no window loop
  /// reads (a window one tap wide), as (stride, 1).
  static std::optional<std::pair<int64_t, int64_t>> strideAlone(AffineExpr expr, int64_t spatial) {
    llvm::SmallDenseMap<unsigned, int64_t> coefficients;
    if (!linearInDims(expr, coefficients) || coefficients.size() != 1 ||
        coefficients.lookup(spatial) < 1)
      return std::nullopt;
    return std::make_pair(coefficients.lookup(spatial), int64_t(1));
  }

  static std::optional<ConvolutionTile> matchConvolutionTile(linalg::GenericOp op,
                                                             const ConvolutionLoops &loops) {
    if (loops.spatial.size() != 2)
      return std::nullopt;
    Value image = op.getDpsInputs()[0], filter = op.getDpsInputs()[1], output = op.getDpsInits()[0];
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    ArrayRef<AffineExpr> imageExprs = maps[0].getResults(), filterExprs = maps[1].getResults(),
                         outputExprs = maps[2].getResults();
    ConvolutionTile tile;
    tile.oh = loops.spatial[0], tile.ow = loops.spatial[1];
    // Depthwise: no channel loop or input-channel loop; the innermost batch
    // loop is the group (channel) of image, filter and output.
    tile.depthwise = !loops.channel && loops.window.size() == 2 && !loops.batch.empty();
    if (!tile.depthwise &&
        (!loops.channel || loops.window.size() < 2 || loops.window.size() > 3))
      return std::nullopt;
    tile.f = tile.depthwise ? loops.batch.back() : *loops.channel;
    tile.c = tile.depthwise ? tile.f : loops.window[0];
    // The window's loops, in the filter's order: rows (the image's row index
    // reads them), then columns.
    ArrayRef<int64_t> window = ArrayRef(loops.window).drop_front(tile.depthwise ? 0 : 1);
    AffineExpr rowExpr = imageExprs.end()[-2], columnExpr = imageExprs.back();
    std::optional<int64_t> rowWindow, columnWindow;
    for (int64_t loop : window) {
      if (!rowWindow && !columnWindow && rowExpr.isFunctionOfDim(loop))
        rowWindow = loop;
      else if (!columnWindow && columnExpr.isFunctionOfDim(loop))
        columnWindow = loop;
      else
        return std::nullopt;
    }
    size_t filterRank = (tile.depthwise ? 1 : 2) + window.size();
    if (imageExprs.size() < 3 || filterExprs.size() < filterRank || outputExprs.size() < 3 ||
        !isDim(imageExprs.take_back(3)[0], tile.c) ||
        !isDim(filterExprs.take_back(filterRank)[0], tile.f) ||
        (!tile.depthwise && !isDim(filterExprs.take_back(filterRank)[1], tile.c)) ||
        !llvm::all_of(llvm::zip(filterExprs.take_back(window.size()), window),
                      [](auto pair) { return isDim(std::get<0>(pair), std::get<1>(pair)); }) ||
        !isDim(outputExprs.take_back(3)[0], tile.f) ||
        !isDim(outputExprs.take_back(2)[0], tile.oh) || !isDim(outputExprs.back(), tile.ow))
      return std::nullopt;
    tile.kh = rowWindow ? ranges[*rowWindow] : 1;
    tile.kw = columnWindow ? ranges[*columnWindow] : 1;
    if (ShapedType::isDynamic(tile.kh) || ShapedType::isDynamic(tile.kw) ||
        (!tile.depthwise &&
         (ShapedType::isDynamic(ranges[tile.f]) || ShapedType::isDynamic(ranges[tile.c]))))
      return std::nullopt;
    auto vertical = rowWindow ? strideAndDilation(rowExpr, tile.oh, *rowWindow)
                              : strideAlone(rowExpr, tile.oh);
    auto horizontal = columnWindow ? strideAndDilation(columnExpr, tile.ow, *columnWindow)
                                   : strideAlone(columnExpr, tile.ow);
    if (!vertical || !horizontal)
      return std::nullopt;
    tile.vertical = *vertical, tile.horizontal = *horizontal;
    SmallVector<int64_t> imageStrides, filterStrides, outputStrides;
    int64_t offset;
    int64_t filterChannelStride = (tile.depthwise ? 1 : ranges[tile.c]) * tile.kh * tile.kw;
    if (failed(cast<MemRefType>(image.getType()).getStridesAndOffset(imageStrides, offset)) ||
        failed(cast<MemRefType>(filter.getType()).getStridesAndOffset(filterStrides, offset)) ||
        failed(cast<MemRefType>(output.getType()).getStridesAndOffset(outputStrides, offset)) ||
        imageStrides.back() != 1 || outputStrides.back() != 1 ||
        filterStrides.end()[-static_cast<int64_t>(filterRank)] != filterChannelStride)
      return std::nullopt;
    return tile;
  }

  /// Where a convolution call's operands are, inside the loop nest over
  /// the batch loops it does not take (a depthwise call takes its groups).
  struct ConvolutionCall {
    SmallVector<OpFoldResult> sizes;
    Value image, filter, output;
    SmallVector<Value> imageStrides, outputStrides;
  };

  /// Opens that loop nest at `b` (left inside it) and takes the addresses,
  /// of `image` and `output` in place of the op's own where given (buffers
  /// its maps index alike).
  static ConvolutionCall openConvolutionCall(OpBuilder &b, Location loc, linalg::GenericOp op,
                                             const ConvolutionLoops &loops,
                                             const ConvolutionTile &tile, Value image = {},
                                             Value output = {}) {
    ConvolutionCall call;
    call.sizes = loopSizes(b, loc, op);
    ArrayRef<int64_t> looped = ArrayRef(loops.batch).drop_back(tile.depthwise ? 1 : 0);
    SmallVector<Value> batchIvs = loopNest(
        b, loc, llvm::map_to_vector(looped, [&](int64_t loop) { return call.sizes[loop]; }));
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    auto indicesOf = [&](AffineMap map) { return batchIndices(map, looped, batchIvs, zero); };
    std::tie(call.image, call.imageStrides) =
        addressOf(b, loc, image ? image : op.getDpsInputs()[0], indicesOf(maps[0]));
    call.filter = addressOf(b, loc, op.getDpsInputs()[1], indicesOf(maps[1])).first;
    std::tie(call.output, call.outputStrides) =
        addressOf(b, loc, output ? output : op.getDpsInits()[0], indicesOf(maps[2]));
    return call;
  }

  /// A depthwise convolution tile by kiln_depthwise_conv2d
  /// (runtime/kernels/DepthwiseConvolution.c), all its groups in one call:
  /// vectorized along the output rows at any width and stride, where the
  /// generated loops stayed scalar for rows shorter than a vector and
  /// oneDNN's kernels reorder the image to channels-innermost and back on
  /// every call. The call also takes over the ops around the tile that it
  /// can do one channel at a time while the channel is in cache
  /// (ConvolutionNeighbours.h): the padded copy of the image, the output's
  /// start from the bias, and a clamp (ReLU, ReLU6) into the destination.
  /// Returns false, changing nothing, for any other convolution.
  bool callDepthwise(linalg::GenericOp op, const ConvolutionLoops &loops) {
    std::optional<ConvolutionTile> tile = matchConvolutionTile(op, loops);
    if (!tile || !tile->depthwise)
      return false;
    MLIRContext *ctx = op.getContext();
    std::optional<PaddedCopy> padded = matchPaddedCopy(op);
    unsigned groupDim = *op.getIndexingMapsArray()[2].getResultPosition(
        getAffineDimExpr(tile->f, ctx));
    std::optional<OutputStart> start = matchOutputStart(op, groupDim);
    std::optional<ClampEpilogue> clamp =
        start ? matchClampEpilogue(op, start->op) : std::nullopt;

    // After the epilogue, whose destination may be a view taken after the
    // convolution.
    OpBuilder b(clamp ? clamp->op.getOperation() : op.getOperation());
    Location loc = op.getLoc();
    Type i64 = b.getI64Type(), f32 = b.getF32Type(), ptr = LLVM::LLVMPointerType::get(ctx);
    // (groups, kh, kw, oh, ow, sh, sw, dh, dw, in, inC, inH, ih, iw, padTop,
    // padLeft, w, bias, init, lo, hi, out, outF, outH)
    SmallVector<Type> types(24, i64);
    for (unsigned i : {9, 16, 17, 21})
      types[i] = ptr;
    types[19] = types[20] = f32;
    func::FuncOp callee = declare(op->getParentOfType<ModuleOp>(), kDepthwise,
                                  FunctionType::get(ctx, types, {}));
    Value image = padded ? padded->source : op.getDpsInputs()[0];
    ConvolutionCall call = openConvolutionCall(b, loc, op, loops, *tile, image,
                                               clamp ? clamp->destination : Value());
    auto wide = [&](OpFoldResult v) { return asInteger(b, loc, i64, v); };
    auto constant = [&](int64_t v) { return wide(b.getIndexAttr(v)); };
    auto real = [&](float v) {
      return arith::ConstantFloatOp::create(b, loc, b.getF32Type(), APFloat(v)).getResult();
    };
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    int64_t imageRank = cast<MemRefType>(image.getType()).getRank();
    Value bias = start && start->bias ? addressOf(b, loc, start->bias).first
                                      : LLVM::ZeroOp::create(b, loc, ptr).getResult();
    float infinity = std::numeric_limits<float>::infinity();
    func::CallOp::create(
        b, loc, callee,
        ValueRange{wide(call.sizes[tile->f]), constant(tile->kh), constant(tile->kw),
                   wide(call.sizes[tile->oh]),
                   wide(call.sizes[tile->ow]), constant(tile->vertical.first),
                   constant(tile->horizontal.first), constant(tile->vertical.second),
                   constant(tile->horizontal.second), call.image,
                   wide(call.imageStrides.end()[-3]), wide(call.imageStrides.end()[-2]),
                   wide(memref::getMixedSize(b, loc, image, imageRank - 2)),
                   wide(memref::getMixedSize(b, loc, image, imageRank - 1)),
                   constant(padded ? padded->top : 0), constant(padded ? padded->left : 0),
                   call.filter, bias, constant(start ? 1 : 0),
                   real(clamp ? clamp->lo : -infinity), real(clamp ? clamp->hi : infinity),
                   call.output, wide(call.outputStrides.end()[-3]),
                   wide(call.outputStrides.end()[-2])});
    Value output = op.getDpsInits()[0];
    op->erase();
    if (start)
      start->op->erase();
    if (clamp) {
      clamp->op->erase();
      eraseIfUnused(output);
    }
    if (padded) {
      for (Operation *absorbed : llvm::reverse(padded->ops))
        absorbed->erase();
      eraseIfUnused(padded->buffer);
    }
    return true;
  }

  /// A convolution by constant filters with a window of several taps,
  /// wide and large enough for oneDNN's blocked layout, through oneDNN per
  /// batch element (kiln_conv2d_constant_w): Winograd for 3x3 at stride 1,
  /// a direct convolution otherwise. im2col loses to the direct kernel on
  /// larger windows and strided ones, whose column buffer holds K = C x KH x
  /// KW rows: kept within L2, a tile then has few columns for sgemm to pack
  /// its filters for (5x5 48->64 and 3x3 stride 2 with 512 channels at 7x7
  /// ran 1.2x and 1.4x faster direct, one-node models on two threads).
  /// Returns false, changing nothing, for any other convolution.
  bool callConvolution(linalg::GenericOp op, const ConvolutionLoops &loops) {
    std::optional<ConvolutionTile> tile = matchConvolutionTile(op, loops);
    if (!tile || tile->depthwise || !isConstantBuffer(op.getDpsInputs()[1]))
      return false;
    SmallVector<int64_t> ranges = op.getStaticLoopRanges();
    int64_t f = tile->f, c = tile->c, kh = tile->kh, kw = tile->kw;
    if (!convolvesInBlockedLayout(ranges[c], ranges[f], kh * kw, direct))
      return false;
    // The work of the largest tile decides, a partial tile's row count
    // being bounded by the tile size.
    Value image = op.getDpsInputs()[0], output = op.getDpsInits()[0];
    auto outputType = cast<MemRefType>(output.getType());
    int64_t outputRank = outputType.getRank();
    auto extent = [&](int64_t dim) {
      return outputType.isDynamicDim(dim)
                 ? upperBound(ValueBoundsConstraintSet::Variable(output, dim))
                 : outputType.getDimSize(dim);
    };
    int64_t rows = extent(outputRank - 2), columns = extent(outputRank - 1);
    if (ShapedType::isDynamic(rows) || ShapedType::isDynamic(columns) ||
        ranges[f] * rows * columns * ranges[c] * kh * kw <
            kMinPrimitiveConvolution)
      return false;

    OpBuilder b(op);
    Location loc = op.getLoc();
    Type i64 = b.getI64Type();
    // (slot, groups, c, ih, iw, f, kh, kw, oh, ow, sh, sw, dh, dw, in, inC, inH, w, out, outF,
    // outH)
    func::FuncOp callee = sites.declareKernel(kConvolution, 21, {0, 14, 17, 18});
    Value slot = sites.slot(b, loc);
    ConvolutionCall call = openConvolutionCall(b, loc, op, loops, *tile);
    auto wide = [&](OpFoldResult v) { return asInteger(b, loc, i64, v); };
    auto constant = [&](int64_t v) { return wide(b.getIndexAttr(v)); };
    int64_t imageRank = cast<MemRefType>(image.getType()).getRank();
    func::CallOp::create(
        b, loc, callee,
        ValueRange{slot, constant(1), constant(ranges[c]),
                   wide(memref::getMixedSize(b, loc, image, imageRank - 2)),
                   wide(memref::getMixedSize(b, loc, image, imageRank - 1)), constant(ranges[f]),
                   constant(kh), constant(kw), wide(call.sizes[tile->oh]),
                   wide(call.sizes[tile->ow]), constant(tile->vertical.first),
                   constant(tile->horizontal.first), constant(tile->vertical.second),
                   constant(tile->horizontal.second),
                   call.image, wide(call.imageStrides.end()[-3]),
                   wide(call.imageStrides.end()[-2]), call.filter, call.output,
                   wide(call.outputStrides.end()[-3]), wide(call.outputStrides.end()[-2])});
    op->erase();
    return true;
  }

  /// matchConvolution, on buffers whose window (filter) and spatial (output)
  /// dimensions are dense and trailing, as BLAS matrices need.
  static std::optional<ConvolutionLoops> matchBufferConvolution(linalg::GenericOp op) {
    if (!isF32Buffers(op))
      return std::nullopt;
    std::optional<ConvolutionLoops> loops = matchConvolution(op, /*withoutPositions=*/true);
    if (!loops)
      return std::nullopt;
    if (!isDenseTrailing(op.getDpsInputs()[1], loops->window.size()) ||
        !isDenseTrailing(op.getDpsInits()[0], loops->spatial.size()))
      return std::nullopt;
    return loops;
  }

private:
  CallSites &sites;
  /// Whether constant-filter convolutions may call oneDNN primitives.
  bool primitives;
  /// Whether those of any channel count do (convolvesInBlockedLayout).
  bool direct;
};

} // namespace

std::optional<ConvolutionLoops> matchBufferConvolution(linalg::GenericOp op) {
  return ConvolutionRewriter::matchBufferConvolution(op);
}

void rewriteConvolution(linalg::GenericOp op, const ConvolutionLoops &loops, func::FuncOp sgemm,
                        CallSites &sites, bool primitives, bool direct) {
  ConvolutionRewriter(sites, primitives, direct).rewrite(op, loops, sgemm);
}

} // namespace kiln::blas
