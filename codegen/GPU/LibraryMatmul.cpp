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

#include "dialects/kiln_gpu/KilnGpuOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Matchers.h"

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

/// How the product reads one operand: the body tensor, whether its last two
/// dimensions are swapped relative to [rows, columns], and whether it has
/// the batch dimensions (else one matrix serves every batch).
struct Operand {
  Value body;
  bool transposed = false;
  bool batched = false;
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

/// Reads an operand's indexing map: [batch or 0]..., then `rows` and
/// `columns` in either order.
std::optional<Operand> matchOperand(const Product &product, OpOperand *operand, unsigned rows,
                                    unsigned columns) {
  linalg::GenericOp op = product.op;
  AffineMap map = op.getMatchingIndexingMap(operand);
  ArrayRef<AffineExpr> results = map.getResults();
  if (results.size() < 2)
    return std::nullopt;
  auto dimOf = [](AffineExpr expr) -> std::optional<unsigned> {
    if (auto dim = dyn_cast<AffineDimExpr>(expr))
      return dim.getPosition();
    return std::nullopt;
  };
  std::optional<unsigned> last = dimOf(results.back()), before = dimOf(results.drop_back().back());
  Operand result{operand->get()};
  if (before == rows && last == columns)
    result.transposed = false;
  else if (before == columns && last == rows)
    result.transposed = true;
  else
    return std::nullopt;
  // Batch dimensions in loop order; a loop the operand lacks must have
  // range 1, or every batch loop of range > 1 must be missing (a shared
  // matrix).
  SmallVector<unsigned> present;
  for (AffineExpr expr : results.drop_back(2)) {
    if (std::optional<unsigned> dim = dimOf(expr)) {
      if (!llvm::is_contained(product.batch, *dim) || (!present.empty() && *dim <= present.back()))
        return std::nullopt;
      present.push_back(*dim);
    } else if (auto constant = dyn_cast<AffineConstantExpr>(expr); !constant ||
                                                                   constant.getValue() != 0) {
      return std::nullopt;
    }
  }
  int64_t covered = 1;
  for (unsigned dim : present)
    covered *= product.ranges[dim];
  if (covered != product.batchSize && covered != 1)
    return std::nullopt;
  result.batched = covered == product.batchSize && product.batchSize > 1;
  return result;
}

/// The source of `value` when it is a copy with its last two dimensions
/// swapped (a transpose kernel the library does instead by reading the
/// matrix transposed).
Value swappedSource(Value value) {
  auto generic = value.getDefiningOp<linalg::GenericOp>();
  if (!generic || generic.getNumDpsInputs() != 1 || generic.getNumReductionLoops() != 0)
    return {};
  Block &payload = generic.getRegion().front();
  if (payload.getOperations().size() != 1 ||
      payload.getTerminator()->getOperand(0) != payload.getArgument(0))
    return {};
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  if (!maps[1].isIdentity() || !maps[0].isPermutation())
    return {};
  unsigned rank = maps[0].getNumResults();
  for (unsigned i = 0; i < rank; ++i) {
    unsigned expected = i + 2 < rank ? i : (i == rank - 2 ? rank - 1 : rank - 2);
    if (maps[0].getDimPosition(i) != expected)
      return {};
  }
  return generic.getDpsInputOperand(0)->get();
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

/// One step of the result's treatment the library applies itself.
enum class Step { Bias, Addend, Relu };

/// What `generic`, the only user of the product so far (`current`), does to
/// it, if it is an epilogue step; `other` is the bias or addend operand.
std::optional<Step> matchStep(linalg::GenericOp generic, Value current,
                              ArrayRef<int64_t> productRanges, Value &other) {
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

  // x + bias[n] or x + addend.
  if (generic.getNumDpsInputs() != 2 || ops.size() != 1)
    return std::nullopt;
  auto add = dyn_cast<arith::AddFOp>(ops[0]);
  OpOperand *otherOperand = generic.getDpsInputOperand(productOperand == generic.getDpsInputOperand(0) ? 1 : 0);
  Value otherArg = payload.getArgument(otherOperand->getOperandNumber());
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

/// The library call for `op`'s product `lhs · rhs` (lhs [B', M, K], rhs
/// [B'', K, N], transposed as they say), with the epilogue steps that follow
/// `op` in the fusion folded in; `allowBias` when the result's last
/// dimension is the product's columns.
LogicalResult emitProduct(FusionKernels &state, linalg::GenericOp op, Operand lhs, Operand rhs,
                          int64_t batch, int64_t m, int64_t n, int64_t k, bool allowBias) {
  Value init = op.getDpsInitOperand(0)->get();
  Value bias, addend = isZero(init) ? Value() : init;
  bool relu = false;
  Value current = op->getResult(0);
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  ranges.resize(op.getNumParallelLoops());
  while (current.hasOneUse()) {
    auto user = dyn_cast<linalg::GenericOp>(*current.getUsers().begin());
    Value other;
    std::optional<Step> step = user ? matchStep(user, current, ranges, other) : std::nullopt;
    if (!step || relu || (*step == Step::Bias && (!allowBias || bias || !state.materializeView(other))) ||
        (*step == Step::Addend && (addend || !state.materializeView(other))))
      break;
    if (*step == Step::Bias)
      bias = other;
    else if (*step == Step::Addend)
      addend = other;
    else
      relu = true;
    current = user->getResult(0);
  }

  FailureOr<Value> lhsMain = mainTensor(state, lhs.body), rhsMain = mainTensor(state, rhs.body);
  if (failed(lhsMain) || failed(rhsMain))
    return failure();
  FailureOr<Value> addendMain = addend ? mainTensor(state, addend) : FailureOr<Value>(Value());
  if (failed(addendMain))
    return failure();

  OpBuilder &b = state.main;
  Location loc = state.fusion.getLoc();
  Value lhs3 = reshape(b, loc, *lhsMain,
                       {lhs.batched ? batch : 1, lhs.transposed ? k : m, lhs.transposed ? m : k});
  Value rhs3 = reshape(b, loc, *rhsMain,
                       {rhs.batched ? batch : 1, rhs.transposed ? n : k, rhs.transposed ? k : n});
  Value bias1 = bias ? reshape(b, loc, state.materializeView(bias), {n}) : Value();
  Value addend3 = *addendMain ? reshape(b, loc, *addendMain, {batch, m, n}) : Value();
  auto type = llvm::cast<RankedTensorType>(current.getType());
  auto matmul = kgpu::MatmulOp::create(
      b, loc, RankedTensorType::get({batch, m, n}, type.getElementType()), lhs3, rhs3, bias1,
      addend3, lhs.transposed, rhs.transposed,
      relu ? kgpu::Epilogue::Relu : kgpu::Epilogue::None, state.allowTf32);
  state.materialized[current] = reshape(b, loc, matmul.getResult(), type.getShape());
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

  // The im2col generic: loops batch.., window.., spatial.., reading the
  // image through the convolution's own map.
  SmallVector<int64_t> order(loops.batch);
  llvm::append_range(order, loops.window);
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

  Operand lhs{conv.getDpsInputOperand(1)->get(), false, filterBatchSize == batch && batch > 1};
  Operand rhs{columns->getResult(0), false, batch > 1};
  return emitProduct(state, conv, lhs, rhs, batch, channels, spatial, window,
                     /*allowBias=*/false);
}

} // namespace

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
  std::optional<Operand> lhs =
      matchOperand(*product, product->op.getDpsInputOperand(0), product->m, product->k);
  std::optional<Operand> rhs =
      matchOperand(*product, product->op.getDpsInputOperand(1), product->k, product->n);
  if (!lhs || !rhs)
    return success();
  for (Operand *operand : {&*lhs, &*rhs})
    if (Value source = swappedSource(operand->body)) {
      operand->body = source;
      operand->transposed = !operand->transposed;
    }
  int64_t batch = product->batchSize, m = product->ranges[product->m],
          n = product->ranges[product->n], k = product->ranges[product->k];
  op = splitInit(state, op);
  return emitProduct(state, op, *lhs, *rhs, batch, m, n, k, /*allowBias=*/true);
}

} // namespace kiln
