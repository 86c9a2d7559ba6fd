//===- LibraryMatmul.cpp - Matrix products by the vendor library ----------===//
//
// A fusion built around a matrix product (an output fusion) gives the
// product to the vendor library (cuBLASLt), which runs it near the GPU's
// peak and can apply a bias, an addend and a ReLU to the result before it
// leaves the chip. The fusion's other ops then read the product from memory
// in an ordinary kernel. Operands the library cannot read in place (a
// computed operand, a transpose other than of the last two dimensions) are
// materialized by a kernel first.
//
//===----------------------------------------------------------------------===//
#include "codegen/Contraction.h"
#include "codegen/GPU/Kernels.h"
#include "codegen/GPU/Strided.h"

#include "dialects/kiln_gpu/KilnGpuOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/Verifier.h"

using namespace mlir;

namespace kiln {
namespace {

/// A generic computing out[batch.., m, n] += lhs * rhs with one reduction
/// loop k, the loops ordered batch.., m, n, k.
struct Product {
  linalg::GenericOp op;
  unsigned m, n, k;
  SmallVector<unsigned> batch;
  int64_t batchSize = 1;
  SmallVector<int64_t> ranges;
};

std::optional<Product> matchProduct(linalg::GenericOp op) {
  if (!isMultiplyAccumulate(op) || op.getNumReductionLoops() != 1 || op.getNumLoops() < 3)
    return std::nullopt;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  if (iterators.back() != utils::IteratorType::reduction)
    return std::nullopt;
  Type element = op.getRegion().front().getArguments().back().getType();
  if (!element.isF32() && !element.isF16() && !element.isBF16())
    return std::nullopt;
  Product product{op, op.getNumLoops() - 3, op.getNumLoops() - 2, op.getNumLoops() - 1, {}, 1,
                  op.getStaticLoopRanges()};
  if (ShapedType::isDynamicShape(product.ranges))
    return std::nullopt;
  AffineMap out = op.getIndexingMapsArray().back();
  if (out.getNumResults() != op.getNumLoops() - 1)
    return std::nullopt;
  for (auto [i, expr] : llvm::enumerate(out.getResults())) {
    auto dim = dyn_cast<AffineDimExpr>(expr);
    if (!dim || dim.getPosition() != i)
      return std::nullopt;
  }
  for (unsigned loop = 0; loop < product.m; ++loop) {
    product.batch.push_back(loop);
    product.batchSize *= product.ranges[loop];
  }
  return product;
}

/// `value` as a view of a body tensor that @main has (or can view without a
/// kernel): follows movement ops back from `value`.
struct Source {
  Value body;
  Strided view;
};

std::optional<Source> sourceOf(FusionKernels &state, Value value) {
  if (state.materializeView(value))
    return Source{value, rowMajor(llvm::cast<ShapedType>(value.getType()).getShape())};
  Operation *def = value.getDefiningOp();
  if (!isMovement(def))
    return std::nullopt;
  std::optional<Source> inner = sourceOf(state, def->getOperand(0));
  if (!inner)
    return std::nullopt;
  std::optional<Strided> view = forward(def, inner->view);
  if (!view)
    return std::nullopt;
  return Source{inner->body, *view};
}

/// One matrix operand of the library call: where its matrices are in the
/// storage of `body`.
struct Matrix {
  Value body;
  bool transposed = false;
  int64_t batchStride = 0, rowStride = 0;
  /// `body` is computed by a kernel first (not a view of @main's tensors).
  bool computed = false;
};

/// Strides of the product's loops in `operand`'s storage, read through the
/// operand's indexing map (a loop it does not index has stride 0).
SmallVector<int64_t> loopStrides(AffineMap map, const Strided &view, unsigned loops) {
  SmallVector<int64_t> strides(loops, 0);
  for (auto [j, expr] : llvm::enumerate(map.getResults()))
    if (auto dim = dyn_cast<AffineDimExpr>(expr))
      strides[dim.getPosition()] += view.strides[j];
  return strides;
}

/// The batch stride of `strides` over the batch loops: 0 when they all have
/// stride 0 (one matrix for every batch index), the innermost's when they
/// nest like a row-major array of matrices, nullopt otherwise.
std::optional<int64_t> batchStrideOf(const Product &product, ArrayRef<int64_t> strides) {
  std::optional<int64_t> innermost;
  int64_t span = 0;
  bool any = false, all = true;
  for (unsigned loop : llvm::reverse(product.batch)) {
    if (product.ranges[loop] == 1)
      continue;
    any |= strides[loop] != 0;
    all &= strides[loop] != 0;
    if (strides[loop] == 0)
      continue;
    if (!innermost)
      innermost = strides[loop];
    else if (strides[loop] != span)
      return std::nullopt;
    span = strides[loop] * product.ranges[loop];
  }
  if (!any)
    return 0;
  if (!all)
    return std::nullopt;
  return *innermost;
}

/// The operand as a matrix with rows `rowLoop` and columns `columnLoop`, in
/// the storage `view` describes: one of the two must be contiguous.
std::optional<Matrix> matrixOf(const Product &product, OpOperand *operand, const Strided &view,
                               unsigned rowLoop, unsigned columnLoop) {
  linalg::GenericOp op = product.op;
  SmallVector<int64_t> strides =
      loopStrides(op.getMatchingIndexingMap(operand), view, product.ranges.size());
  std::optional<int64_t> batchStride = batchStrideOf(product, strides);
  if (!batchStride)
    return std::nullopt;
  int64_t rows = product.ranges[rowLoop], columns = product.ranges[columnLoop];
  Matrix matrix;
  matrix.batchStride = *batchStride;
  if (strides[columnLoop] == 1 || columns == 1) {
    matrix.rowStride = rows == 1 ? columns : strides[rowLoop];
    if (matrix.rowStride < columns)
      return std::nullopt;
  } else if (strides[rowLoop] == 1 || rows == 1) {
    matrix.transposed = true;
    matrix.rowStride = columns == 1 ? rows : strides[columnLoop];
    if (matrix.rowStride < rows)
      return std::nullopt;
  } else {
    return std::nullopt;
  }
  return matrix;
}

/// The product's operand as a matrix: a view of a tensor @main has, or else
/// the operand itself, computed by a kernel.
std::optional<Matrix> operandOf(FusionKernels &state, const Product &product, OpOperand *operand,
                                unsigned rowLoop, unsigned columnLoop) {
  if (std::optional<Source> source = sourceOf(state, operand->get()))
    if (std::optional<Matrix> matrix = matrixOf(product, operand, source->view, rowLoop, columnLoop)) {
      matrix->body = source->body;
      return matrix;
    }
  Strided dense = rowMajor(llvm::cast<ShapedType>(operand->get().getType()).getShape());
  std::optional<Matrix> matrix = matrixOf(product, operand, dense, rowLoop, columnLoop);
  if (!matrix)
    return std::nullopt;
  matrix->body = operand->get();
  matrix->computed = true;
  return matrix;
}

/// Whether `value` is all zeros: a splat zero, or a fill of one.
bool isZero(Value value) {
  Attribute attr;
  if (matchPattern(value, m_Constant(&attr))) {
    if (auto splat = llvm::dyn_cast<SplatElementsAttr>(attr))
      attr = splat.getSplatValue<Attribute>();
    if (auto f = llvm::dyn_cast<FloatAttr>(attr))
      return f.getValue().isZero();
    return false;
  }
  auto generic = value.getDefiningOp<linalg::GenericOp>();
  if (!generic || generic.getNumDpsInputs() != 1 ||
      llvm::isa<ShapedType>(generic.getDpsInputOperand(0)->get().getType()))
    return false;
  Block &payload = generic.getRegion().front();
  if (payload.getOperations().size() != 1 ||
      payload.getTerminator()->getOperand(0) != payload.getArgument(0))
    return false;
  return isZero(generic.getDpsInputOperand(0)->get());
}

/// One step of the result's treatment the library applies itself: x * c,
/// x + bias[n], x + addend, addend - x (an SGD update of a weight by its
/// gradient: alpha negated, the weight the addend), relu(x).
enum class Step { Scale, Bias, Addend, SubtractFrom, Relu };

/// The value of `value` when it is a constant scalar or a splat tensor.
std::optional<double> constantScalar(Value value) {
  Attribute attr;
  if (!matchPattern(value, m_Constant(&attr)))
    return std::nullopt;
  if (auto splat = llvm::dyn_cast<SplatElementsAttr>(attr))
    attr = splat.getSplatValue<Attribute>();
  if (auto f = llvm::dyn_cast<FloatAttr>(attr))
    return f.getValueAsDouble();
  return std::nullopt;
}

/// What `generic`, the only user of the product so far (`current`), does to
/// it, if it is an epilogue step; `other` is the bias or addend operand.
std::optional<Step> matchStep(linalg::GenericOp generic, Value current,
                              ArrayRef<int64_t> productRanges, Value &other, double &factor) {
  if (generic.getNumDpsInits() != 1 || generic.getNumReductionLoops() != 0 ||
      !generic.getIndexingMapsArray().back().isIdentity())
    return std::nullopt;
  SmallVector<int64_t> ranges = generic.getStaticLoopRanges();
  if (ArrayRef(ranges) != productRanges)
    return std::nullopt;
  OpOperand *productOperand = nullptr;
  for (OpOperand *input : generic.getDpsInputOperands())
    if (input->get() == current)
      productOperand = input;
  if (!productOperand || !generic.getMatchingIndexingMap(productOperand).isIdentity())
    return std::nullopt;
  Block &payload = generic.getRegion().front();
  Value in = payload.getArgument(productOperand->getOperandNumber());
  Value yielded = payload.getTerminator()->getOperand(0);
  SmallVector<Operation *> ops;
  for (Operation &op : payload.without_terminator())
    ops.push_back(&op);
  auto isZeroScalar = [](Value v) {
    FloatAttr attr;
    return matchPattern(v, m_Constant(&attr)) && attr.getValue().isZero();
  };

  // x * c or x / c, c a constant (in the payload, or a splat operand).
  if (ops.size() == 1 && isa<arith::MulFOp, arith::DivFOp>(ops[0]) && ops[0]->getResult(0) == yielded &&
      ops[0]->getOperand(0) == in) {
    Value scale = ops[0]->getOperand(1);
    std::optional<double> c = constantScalar(scale);
    if (!c)
      if (auto argument = llvm::dyn_cast<BlockArgument>(scale);
          argument && argument.getOwner() == &payload && argument.getArgNumber() < generic.getNumDpsInputs())
        c = constantScalar(generic->getOperand(argument.getArgNumber()));
    if (c && *c != 0) {
      factor = isa<arith::MulFOp>(ops[0]) ? *c : 1.0 / *c;
      return Step::Scale;
    }
  }

  // relu: x < 0 ? 0 : x, or max(x, 0).
  if (generic.getNumDpsInputs() == 1) {
    if (ops.size() == 2) {
      auto compare = dyn_cast<arith::CmpFOp>(ops[0]);
      auto select = dyn_cast<arith::SelectOp>(ops[1]);
      if (compare && select && select.getResult() == yielded &&
          compare.getPredicate() == arith::CmpFPredicate::OLT && compare.getLhs() == in &&
          isZeroScalar(compare.getRhs()) && select.getCondition() == compare.getResult() &&
          isZeroScalar(select.getTrueValue()) && select.getFalseValue() == in)
        return Step::Relu;
    }
    if (ops.size() == 1 && isa<arith::MaximumFOp, arith::MaxNumFOp>(ops[0]) &&
        ops[0]->getResult(0) == yielded &&
        ((ops[0]->getOperand(0) == in && isZeroScalar(ops[0]->getOperand(1))) ||
         (ops[0]->getOperand(1) == in && isZeroScalar(ops[0]->getOperand(0)))))
      return Step::Relu;
    return std::nullopt;
  }

  // x + bias[n], x + addend or addend - x.
  if (generic.getNumDpsInputs() != 2 || ops.size() != 1)
    return std::nullopt;
  auto add = dyn_cast<arith::AddFOp>(ops[0]);
  OpOperand *otherOperand = generic.getDpsInputOperand(productOperand == generic.getDpsInputOperand(0) ? 1 : 0);
  Value otherArg = payload.getArgument(otherOperand->getOperandNumber());
  if (auto sub = dyn_cast<arith::SubFOp>(ops[0]);
      sub && sub.getResult() == yielded && sub.getLhs() == otherArg && sub.getRhs() == in &&
      generic.getMatchingIndexingMap(otherOperand).isIdentity()) {
    other = otherOperand->get();
    return Step::SubtractFrom;
  }
  if (!add || add.getResult() != yielded ||
      !((add.getLhs() == in && add.getRhs() == otherArg) ||
        (add.getRhs() == in && add.getLhs() == otherArg)))
    return std::nullopt;
  other = otherOperand->get();
  AffineMap map = generic.getMatchingIndexingMap(otherOperand);
  if (map.isIdentity())
    return Step::Addend;
  // Indexed by the column loop alone (other dimensions 0): a bias.
  unsigned column = ranges.size() - 1;
  int64_t columns = 0;
  for (AffineExpr expr : map.getResults()) {
    if (auto dim = dyn_cast<AffineDimExpr>(expr)) {
      if (dim.getPosition() != column || columns)
        return std::nullopt;
      columns = ranges[column];
    } else if (auto constant = dyn_cast<AffineConstantExpr>(expr);
               !constant || constant.getValue() != 0) {
      return std::nullopt;
    }
  }
  if (columns == 0)
    return std::nullopt;
  return Step::Bias;
}

/// `value` (a @main tensor) viewed with `shape`: a collapse to one
/// dimension and an expand, both views.
Value reshape(OpBuilder &b, Location loc, Value value, ArrayRef<int64_t> shape) {
  auto type = llvm::cast<RankedTensorType>(value.getType());
  if (type.getShape() == shape)
    return value;
  Value flat = value;
  if (type.getRank() != 1) {
    ReassociationIndices all;
    for (int64_t i = 0; i < type.getRank(); ++i)
      all.push_back(i);
    flat = tensor::CollapseShapeOp::create(b, loc, value, ArrayRef<ReassociationIndices>{all});
  }
  if (shape.size() == 1)
    return flat;
  ReassociationIndices all;
  for (size_t i = 0; i < shape.size(); ++i)
    all.push_back(i);
  return tensor::ExpandShapeOp::create(b, loc, RankedTensorType::get(shape, type.getElementType()),
                                       flat, ArrayRef<ReassociationIndices>{all});
}


/// `op`'s accumulation `init + Σ` as a product with a zero init plus an
/// elementwise add of `init`, when `init` is a tensor computed in the
/// fusion (a broadcast bias): the library then computes Σ, and the add
/// runs with the rest of the epilogue. Returns the op that now computes Σ.
linalg::GenericOp splitInit(FusionKernels &state, linalg::GenericOp op) {
  OpOperand *initOperand = op.getDpsInitOperand(0);
  Value init = initOperand->get();
  if (isZero(init) || state.materializeView(init))
    return op;
  OpBuilder b(op);
  Location loc = op.getLoc();
  auto type = llvm::cast<RankedTensorType>(init.getType());
  Value zero = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(type, b.getZeroAttr(type.getElementType())));
  auto sum = cast<linalg::GenericOp>(b.clone(*op));
  sum.getDpsInitOperand(0)->set(zero);
  unsigned rank = type.getRank();
  AffineMap identity = b.getMultiDimIdentityMap(rank);
  auto add = linalg::GenericOp::create(
      b, loc, type, ValueRange{init, sum->getResult(0)},
      ValueRange{tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType())},
      ArrayRef<AffineMap>{identity, identity, identity},
      SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel),
      [](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        Value total = arith::AddFOp::create(nested, nestedLoc, args[0], args[1]);
        linalg::YieldOp::create(nested, nestedLoc, total);
      });
  op->getResult(0).replaceAllUsesWith(add->getResult(0));
  op->erase();
  return sum;
}

/// The @main tensor of body tensor `body`: a view when it is one, else
/// computed by a loop kernel first.
FailureOr<Value> mainTensor(FusionKernels &state, Value body) {
  if (Value view = state.materializeView(body))
    return view;
  if (failed(emitLoopKernel(state, {body})))
    return failure();
  return state.materialized.lookup(body);
}

/// Output tile of the library's kernels for small products, by which the
/// number of thread blocks a product gets is estimated.
constexpr int64_t kLibraryTile = 64;
/// Products split along k reduce at least kLongK elements into each
/// result, in parts of at least kMinSplitPart.
constexpr int64_t kLongK = 4096;
constexpr int64_t kMinSplitPart = 256;

/// Output tiles of an m x n product, by the estimate above.
int64_t libraryTiles(int64_t m, int64_t n) {
  return llvm::divideCeil(m, kLibraryTile) * llvm::divideCeil(n, kLibraryTile);
}

/// The parts a product's k is split into (1: not split). A product into few
/// output tiles (at most a quarter of the multiprocessors) over a long k
/// (kLongK or more; a convolution's weight gradient: k is batch x pixels,
/// 50,176 into 6 x 25 outputs in LeNet-5) would run on a
/// handful of the chip's multiprocessors; as a batch of partial products
/// over parts of k, about one block per multiprocessor, it fills the chip.
/// The parts evenly divide k. The sum of the partials is in the fusion, in
/// a fixed order: split runs are reproducible bit for bit, unlike the
/// library's own split-K algorithms, which its heuristic chooses by timing
/// only when autotuned.
int64_t splitKParts(const GpuChip &chip, int64_t batch, int64_t m, int64_t n, int64_t k) {
  int64_t tiles = batch * libraryTiles(m, n);
  if (batch != 1 || k < kLongK || 4 * tiles > chip.multiprocessors)
    return 1;
  int64_t parts = std::min<int64_t>(chip.multiprocessors / tiles, k / kMinSplitPart);
  while (parts > 1 && k % parts != 0)
    --parts;
  return parts;
}

/// The library products lhs · rhs (one m x n product) over `parts`
/// consecutive parts of k into partials of `partialShape` ([parts, ...],
/// parts x m x n elements), and a stand-in for them in the body before
/// `at`, which the fusion's kernels read as the library's result.
FailureOr<Value> emitPartialProducts(FusionKernels &state, Operation *at, Matrix lhs, Matrix rhs, int64_t m,
                                     int64_t n, int64_t k, int64_t parts, ArrayRef<int64_t> partialShape) {
  int64_t part = k / parts;
  // Part p of lhs is columns [p * part, (p + 1) * part) of m x k, rows of the
  // stored k x m when transposed; of rhs, rows of k x n, columns of n x k.
  lhs.batchStride = lhs.transposed ? part * lhs.rowStride : part;
  rhs.batchStride = rhs.transposed ? part : part * rhs.rowStride;
  FailureOr<Value> lhsMain = mainTensor(state, lhs.body), rhsMain = mainTensor(state, rhs.body);
  if (failed(lhsMain) || failed(rhsMain))
    return failure();
  Type element = llvm::cast<ShapedType>(lhs.body.getType()).getElementType();
  auto type = RankedTensorType::get(partialShape, element);
  OpBuilder &b = state.main;
  Location loc = state.fusion.getLoc();
  auto matmul = kgpu::MatmulOp::create(
      b, loc, type, *lhsMain, *rhsMain, Value(), Value(), uint64_t(parts), uint64_t(m), uint64_t(n),
      uint64_t(part), lhs.transposed, rhs.transposed, b.getDenseI64ArrayAttr({lhs.batchStride, lhs.rowStride}),
      b.getDenseI64ArrayAttr({rhs.batchStride, rhs.rowStride}), DenseI64ArrayAttr(), DenseI64ArrayAttr(),
      llvm::APFloat(1.0f), kgpu::Epilogue::None, state.allowTf32);
  if (failed(mlir::verify(matmul))) {
    matmul->erase();
    return state.fusion.emitError("kiln-gpu-form-kernels: internal error: an invalid split library call");
  }
  OpBuilder body(at);
  Value partials = tensor::EmptyOp::create(body, loc, partialShape, element);
  state.materialized[partials] = matmul.getResult();
  return partials;
}

/// init + Σ_p partials[p, ...], of init's type: `toPartial` maps init's
/// dimensions (loops 1..rank; loop 0 runs over the parts) to the partials'
/// dimensions after the first.
Value sumPartials(OpBuilder &body, Location loc, Value partials, Value init, ArrayRef<AffineExpr> toPartial) {
  auto type = llvm::cast<RankedTensorType>(init.getType());
  MLIRContext *ctx = body.getContext();
  unsigned rank = type.getRank();
  SmallVector<AffineExpr> partialExprs{getAffineDimExpr(0, ctx)};
  llvm::append_range(partialExprs, toPartial);
  SmallVector<AffineExpr> kept;
  for (unsigned d = 1; d <= rank; ++d)
    kept.push_back(getAffineDimExpr(d, ctx));
  SmallVector<utils::IteratorType> iterators(rank + 1, utils::IteratorType::parallel);
  iterators.front() = utils::IteratorType::reduction;
  auto sum = linalg::GenericOp::create(
      body, loc, type, ValueRange{partials}, ValueRange{init},
      ArrayRef<AffineMap>{AffineMap::get(rank + 1, 0, partialExprs, ctx), AffineMap::get(rank + 1, 0, kept, ctx)},
      iterators, [](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        linalg::YieldOp::create(nested, nestedLoc,
                                ValueRange{arith::AddFOp::create(nested, nestedLoc, args[0], args[1])});
      });
  return sum->getResult(0);
}

/// `op`'s product (batch 1, one m x n matrix) as `parts` library products
/// over consecutive parts of k into partials [parts, op's result shape],
/// then their sum onto `op`'s init in the fusion, which replaces `op`: the
/// fusion's kernels add the partials along with whatever follows the
/// product.
LogicalResult emitSplitProduct(FusionKernels &state, linalg::GenericOp op, Matrix lhs, Matrix rhs,
                               int64_t m, int64_t n, int64_t k, int64_t parts) {
  auto resultType = llvm::cast<RankedTensorType>(op->getResult(0).getType());
  SmallVector<int64_t> partialShape{parts};
  llvm::append_range(partialShape, resultType.getShape());
  FailureOr<Value> partials = emitPartialProducts(state, op, lhs, rhs, m, n, k, parts, partialShape);
  if (failed(partials))
    return failure();
  SmallVector<AffineExpr> same;
  for (unsigned d = 1; d <= resultType.getRank(); ++d)
    same.push_back(getAffineDimExpr(d, op.getContext()));
  OpBuilder body(op);
  op->getResult(0).replaceAllUsesWith(
      sumPartials(body, op.getLoc(), *partials, op.getDpsInitOperand(0)->get(), same));
  op->erase();
  return success();
}

/// The library call for `op`'s product `lhs · rhs` (batch x m x k times
/// batch x k x n), with the epilogue steps that follow `op` in the fusion
/// folded in. With `product` (a matrix product, not a convolution), a bias
/// may be folded, and the result may be written straight into the tensor a
/// chain of movement ops after it ends in.
LogicalResult emitProduct(FusionKernels &state, linalg::GenericOp op, Matrix lhs, Matrix rhs,
                          int64_t batch, int64_t m, int64_t n, int64_t k, const Product *product) {
  if (int64_t parts = splitKParts(state.chip, batch, m, n, k); parts > 1)
    return emitSplitProduct(state, op, lhs, rhs, m, n, k, parts);
  Value init = op.getDpsInitOperand(0)->get();
  Value bias, addend = isZero(init) ? Value() : init;
  bool relu = false;
  double alpha = 1.0;
  Value current = op->getResult(0);
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  ranges.resize(op.getNumParallelLoops());
  while (current.hasOneUse()) {
    auto user = dyn_cast<linalg::GenericOp>(*current.getUsers().begin());
    Value other;
    double factor = 1.0;
    std::optional<Step> step = user ? matchStep(user, current, ranges, other, factor) : std::nullopt;
    if (!step || relu)
      break;
    if (*step == Step::Scale) {
      // alpha scales the product alone: (AB + C) * c is not alpha * AB + C.
      if (bias || addend)
        break;
      alpha *= factor;
    } else if (*step == Step::Bias) {
      if (!product || bias || !state.materializeView(other))
        break;
      bias = other;
    } else if (*step == Step::Addend) {
      if (addend || !state.materializeView(other))
        break;
      addend = other;
    } else if (*step == Step::SubtractFrom) {
      // addend - alpha * AB: alpha negated, beta 1. Only onto the product
      // alone: addend - (AB + bias) would need the bias negated too.
      if (bias || addend || !state.materializeView(other))
        break;
      alpha = -alpha;
      addend = other;
    } else {
      relu = true;
    }
    current = user->getResult(0);
  }

  // Reshapes and permutations after the product: the library writes its
  // matrices where the tensor they lead to keeps those elements.
  Value final = current;
  std::optional<Strided> layout;
  if (product) {
    SmallVector<Operation *> chain;
    Value next = current;
    while (next.hasOneUse() && isMovement(*next.getUsers().begin())) {
      chain.push_back(*next.getUsers().begin());
      next = chain.back()->getResult(0);
    }
    std::optional<Strided> view = rowMajor(llvm::cast<ShapedType>(next.getType()).getShape());
    for (Operation *move : llvm::reverse(chain))
      if (view)
        view = backward(move, *view);
    // The columns must be consecutive and rows not overlap.
    if (!chain.empty() && view && (view->strides[product->n] == 1 || n == 1) &&
        (m == 1 || view->strides[product->m] >= n) && batchStrideOf(*product, view->strides)) {
      final = next;
      layout = view;
    }
  }

  OpBuilder &b = state.main;
  Location loc = state.fusion.getLoc();
  FailureOr<Value> lhsMain = mainTensor(state, lhs.body), rhsMain = mainTensor(state, rhs.body);
  if (failed(lhsMain) || failed(rhsMain))
    return failure();
  FailureOr<Value> addendMain = addend ? mainTensor(state, addend) : FailureOr<Value>(Value());
  if (failed(addendMain))
    return failure();
  // Strides only where they differ from the dense layout the op assumes.
  auto strides = [&](Value storage, int64_t batchStride, int64_t rowStride, int64_t rows,
                     int64_t columns) -> DenseI64ArrayAttr {
    int64_t elements = llvm::cast<ShapedType>(storage.getType()).getNumElements();
    bool dense = rowStride == columns &&
                 ((elements == batch * rows * columns && (batchStride == rows * columns || batch == 1)) ||
                  (elements == rows * columns && batchStride == 0));
    return dense ? DenseI64ArrayAttr() : b.getDenseI64ArrayAttr({batchStride, rowStride});
  };
  DenseI64ArrayAttr lhsStrides = strides(*lhsMain, lhs.batchStride, lhs.rowStride, lhs.transposed ? k : m,
                                         lhs.transposed ? m : k);
  DenseI64ArrayAttr rhsStrides = strides(*rhsMain, rhs.batchStride, rhs.rowStride, rhs.transposed ? n : k,
                                         rhs.transposed ? k : n);
  DenseI64ArrayAttr resultStrides;
  if (layout)
    resultStrides = strides(final, *batchStrideOf(*product, layout->strides),
                            m == 1 ? n : layout->strides[product->m], m, n);
  auto type = llvm::cast<RankedTensorType>(final.getType());
  auto matmul = kgpu::MatmulOp::create(
      b, loc, type, *lhsMain, *rhsMain, bias ? state.materializeView(bias) : Value(), *addendMain,
      uint64_t(batch), uint64_t(m), uint64_t(n), uint64_t(k), lhs.transposed, rhs.transposed, lhsStrides,
      rhsStrides, resultStrides, DenseI64ArrayAttr(), llvm::APFloat(static_cast<float>(alpha)),
      relu ? kgpu::Epilogue::Relu : kgpu::Epilogue::None, state.allowTf32);
  if (failed(mlir::verify(matmul))) {
    matmul->erase();
    return state.fusion.emitError("kiln-gpu-form-kernels: internal error: an invalid library call");
  }
  state.materialized[final] = matmul.getResult();
  return success();
}

/// A convolution as one product per batch element: filter [F, window] times
/// an im2col matrix [window, spatial] that a kernel gathers from the
/// (padded) image.
LogicalResult emitConvolution(FusionKernels &state, linalg::GenericOp conv,
                              const ConvolutionLoops &loops) {
  SmallVector<int64_t> ranges = conv.getStaticLoopRanges();
  auto product = [&](ArrayRef<int64_t> dims) {
    int64_t total = 1;
    for (int64_t d : dims)
      total *= ranges[d];
    return total;
  };
  int64_t batch = product(loops.batch), channels = loops.channel ? ranges[*loops.channel] : 1;
  int64_t window = product(loops.window), spatial = product(loops.spatial);
  // The filter is shared by every image and differs per group: one product
  // per batch element needs either a single image or a single group.
  SmallVector<int64_t> filterBatch;
  for (AffineExpr expr : conv.getIndexingMapsArray()[1].getResults())
    if (auto dim = dyn_cast<AffineDimExpr>(expr);
        dim && llvm::is_contained(loops.batch, dim.getPosition()))
      filterBatch.push_back(dim.getPosition());
  int64_t filterBatchSize = product(filterBatch);
  if (filterBatchSize != 1 && filterBatchSize != batch)
    return success();
  AffineMap imageMap = conv.getIndexingMapsArray()[0];
  if (loops.channel && imageMap.isFunctionOfDim(*loops.channel))
    return success();
  conv = splitInit(state, conv);
  // One filter for every batch index, and products too few and too small
  // to fill the chip over a long window (a weight gradient, batched over
  // input channels: 6 products of 16 x 25 over k = 6,400 in LeNet-5): one
  // product instead, with the batch among its columns, split along k.
  bool fold = filterBatchSize == 1 && batch > 1 && window >= kLongK &&
              4 * batch * libraryTiles(channels, spatial) <= state.chip.multiprocessors;

  // The im2col generic: loops batch.., window.., spatial.. (window..,
  // batch.., spatial.. when folded), reading the image through the
  // convolution's own map.
  SmallVector<int64_t> order(fold ? loops.window : loops.batch);
  llvm::append_range(order, fold ? loops.batch : loops.window);
  llvm::append_range(order, loops.spatial);
  MLIRContext *ctx = conv.getContext();
  SmallVector<AffineExpr> renamed(conv.getNumLoops(), getAffineConstantExpr(0, ctx));
  SmallVector<int64_t> shape;
  for (auto [position, loop] : llvm::enumerate(order)) {
    renamed[loop] = getAffineDimExpr(position, ctx);
    shape.push_back(ranges[loop]);
  }
  AffineMap colMap = imageMap.replaceDimsAndSymbols(renamed, {}, order.size(), 0);
  OpBuilder b(conv);
  Location loc = conv.getLoc();
  Value image = conv.getDpsInputOperand(0)->get();
  Type element = llvm::cast<ShapedType>(image.getType()).getElementType();
  auto columns = linalg::GenericOp::create(
      b, loc, RankedTensorType::get(shape, element), ValueRange{image},
      ValueRange{tensor::EmptyOp::create(b, loc, shape, element)},
      ArrayRef<AffineMap>{colMap, b.getMultiDimIdentityMap(order.size())},
      SmallVector<utils::IteratorType>(order.size(), utils::IteratorType::parallel),
      [](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        linalg::YieldOp::create(nested, nestedLoc, args[0]);
      });

  if (fold) {
    // filter [channels, window] · columns [window, batch x spatial] into
    // partials [parts, channels, batch, spatial], summed and transposed
    // into the convolution's [batch, channels, spatial].
    int64_t columnsN = batch * spatial;
    int64_t parts = std::max<int64_t>(1, splitKParts(state.chip, 1, channels, columnsN, window));
    Matrix lhs{conv.getDpsInputOperand(1)->get(), false, 0, window};
    Matrix rhs{columns->getResult(0), false, 0, columnsN, /*computed=*/true};
    FailureOr<Value> partials = emitPartialProducts(state, conv, lhs, rhs, channels, columnsN, window, parts,
                                                    {parts, channels, batch, spatial});
    if (failed(partials))
      return failure();
    OpBuilder body(conv);
    auto resultType = llvm::cast<RankedTensorType>(conv->getResult(0).getType());
    Value init = reshape(body, loc, conv.getDpsInitOperand(0)->get(), {batch, channels, spatial});
    AffineExpr image = getAffineDimExpr(1, ctx), channel = getAffineDimExpr(2, ctx),
               pixel = getAffineDimExpr(3, ctx);
    Value sum = sumPartials(body, loc, *partials, init, {channel, image, pixel});
    conv->getResult(0).replaceAllUsesWith(reshape(body, loc, sum, resultType.getShape()));
    conv->erase();
    return success();
  }
  Matrix lhs{conv.getDpsInputOperand(1)->get(), false,
             filterBatchSize == batch && batch > 1 ? channels * window : 0, window};
  Matrix rhs{columns->getResult(0), false, window * spatial, spatial, /*computed=*/true};
  return emitProduct(state, conv, lhs, rhs, batch, channels, spatial, window, /*product=*/nullptr);
}

/// The movement ops `fusion` applies in a chain to its one input, when that
/// is all it does.
std::optional<SmallVector<Operation *>> movementChain(FusionOp fusion) {
  if (fusion.getInputs().size() != 1 || fusion->getNumResults() != 1)
    return std::nullopt;
  Value value = fusion.getBody().getArgument(0);
  SmallVector<Operation *> chain;
  for (Operation &op : fusion.getBody().front().without_terminator()) {
    if (isa<tensor::EmptyOp>(op))
      continue;
    if (!isMovement(&op) || op.getOperand(0) != value)
      return std::nullopt;
    chain.push_back(&op);
    value = op.getResult(0);
  }
  if (chain.empty() || fusion.getYield().getValues()[0] != value)
    return std::nullopt;
  return chain;
}

/// The one library product of `fusion`, if it has one.
std::optional<Product> productIn(FusionOp fusion) {
  std::optional<Product> found;
  int count = 0;
  fusion.getBody().walk([&](linalg::GenericOp op) {
    if (isMultiplyAccumulate(op) && op.getNumReductionLoops() > 0) {
      ++count;
      found = matchProduct(op);
    }
  });
  return count == 1 ? found : std::nullopt;
}

/// Whether `consumer`'s product reads every use of its input `position`
/// (the result of `chain`) as a strided matrix of the chain's input.
bool readsInPlace(FusionOp consumer, unsigned position, ArrayRef<Operation *> chain) {
  std::optional<Product> product = productIn(consumer);
  if (!product)
    return false;
  Value argument = consumer.getBody().getArgument(position);
  std::optional<Strided> view =
      rowMajor(llvm::cast<ShapedType>(chain.front()->getOperand(0).getType()).getShape());
  for (Operation *op : chain)
    if (view)
      view = forward(op, *view);
  if (!view || argument.use_empty())
    return false;
  for (OpOperand &use : argument.getUses()) {
    if (use.getOwner() != product->op.getOperation())
      return false;
    bool isLhs = use.getOperandNumber() == 0;
    if (!matrixOf(*product, &use, *view, isLhs ? product->m : product->k,
                  isLhs ? product->k : product->n))
      return false;
  }
  return true;
}

/// Whether `producer`'s product (its result, up to elementwise ops) can be
/// written in place of `chain`'s result.
bool writesInPlace(FusionOp producer, ArrayRef<Operation *> chain) {
  std::optional<Product> product = productIn(producer);
  if (!product || producer->getNumResults() != 1)
    return false;
  SmallVector<int64_t> parallel(ArrayRef(product->ranges).drop_back());
  if (llvm::cast<ShapedType>(producer->getResult(0).getType()).getShape() != ArrayRef(parallel))
    return false;
  std::optional<Strided> view =
      rowMajor(llvm::cast<ShapedType>(chain.back()->getResult(0).getType()).getShape());
  for (Operation *op : llvm::reverse(chain))
    if (view)
      view = backward(op, *view);
  return view && view->strides[product->n] == 1 && view->strides[product->m] >= parallel[product->n] &&
         batchStrideOf(*product, view->strides);
}

/// Moves `mover`'s chain into the front of `consumer`'s body, which then
/// reads the mover's input.
void inlineIntoConsumer(FusionOp mover, FusionOp consumer, unsigned position) {
  Value input = mover.getInputs()[0];
  Block &body = consumer.getBody().front();
  BlockArgument source;
  for (auto [operand, argument] : llvm::zip(consumer.getInputs(), body.getArguments()))
    if (operand == input)
      source = argument;
  if (!source) {
    consumer->insertOperands(consumer->getNumOperands(), input);
    source = body.addArgument(input.getType(), mover.getLoc());
  }
  OpBuilder b = OpBuilder::atBlockBegin(&body);
  IRMapping mapping;
  mapping.map(mover.getBody().getArgument(0), source);
  for (Operation &op : mover.getBody().front().without_terminator())
    b.clone(op, mapping);
  body.getArgument(position).replaceAllUsesWith(mapping.lookup(mover.getYield().getValues()[0]));
  body.eraseArgument(position);
  consumer->eraseOperand(position);
  mover->erase();
}

/// Moves `mover`'s chain to the end of `producer`'s body, which then yields
/// its result.
void appendToProducer(FusionOp producer, FusionOp mover) {
  YieldOp yield = producer.getYield();
  OpBuilder b(yield);
  IRMapping mapping;
  mapping.map(mover.getBody().getArgument(0), yield.getValues()[0]);
  for (Operation &op : mover.getBody().front().without_terminator())
    b.clone(op, mapping);
  Value moved = mapping.lookup(mover.getYield().getValues()[0]);
  yield->setOperand(0, moved);
  b.setInsertionPoint(producer);
  auto merged = FusionOp::create(b, producer.getLoc(), TypeRange{moved.getType()},
                                 producer.getInputs(), producer.getKind());
  merged.getBody().takeBody(producer.getBody());
  mover->getResult(0).replaceAllUsesWith(merged->getResult(0));
  mover->erase();
  producer->erase();
}

} // namespace

void absorbMovementIntoProducts(func::FuncOp func) {
  SmallVector<FusionOp> fusions(func.getOps<FusionOp>());
  for (FusionOp mover : fusions) {
    std::optional<SmallVector<Operation *>> chain = movementChain(mover);
    if (!chain)
      continue;
    Value result = mover->getResult(0);
    if (result.hasOneUse())
      if (auto consumer = dyn_cast<FusionOp>(*result.getUsers().begin())) {
        unsigned position = result.getUses().begin()->getOperandNumber();
        if (readsInPlace(consumer, position, *chain)) {
          inlineIntoConsumer(mover, consumer, position);
          continue;
        }
      }
    Value input = mover.getInputs()[0];
    if (auto producer = input.getDefiningOp<FusionOp>();
        producer && input.hasOneUse() && writesInPlace(producer, *chain))
      appendToProducer(producer, mover);
  }
}

LogicalResult emitLibraryMatmul(FusionKernels &state) {
  SmallVector<linalg::GenericOp> contractions;
  state.fusion.getBody().walk([&](linalg::GenericOp op) {
    if (isMultiplyAccumulate(op) && op.getNumReductionLoops() > 0)
      contractions.push_back(op);
  });
  if (contractions.size() != 1)
    return success();
  linalg::GenericOp op = contractions.front();
  Type element = op.getRegion().front().getArguments().back().getType();
  if (!element.isF32() && !element.isF16() && !element.isBF16())
    return success();
  if (std::optional<ConvolutionLoops> loops = matchConvolution(op))
    return emitConvolution(state, op, *loops);

  std::optional<Product> product = matchProduct(op);
  if (!product)
    return success();
  std::optional<Matrix> lhs =
      operandOf(state, *product, product->op.getDpsInputOperand(0), product->m, product->k);
  std::optional<Matrix> rhs =
      operandOf(state, *product, product->op.getDpsInputOperand(1), product->k, product->n);
  if (!lhs || !rhs)
    return success();
  int64_t batch = product->batchSize, m = product->ranges[product->m],
          n = product->ranges[product->n], k = product->ranges[product->k];
  product->op = splitInit(state, op);
  return emitProduct(state, product->op, *lhs, *rhs, batch, m, n, k, &*product);
}

} // namespace kiln
