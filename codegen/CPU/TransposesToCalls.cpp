//===- TransposesToCalls.cpp - Tile transposes as calls of kiln_transpose -===//
//
// A linalg.transpose of f32 buffers that, once unit dimensions are dropped
// and dimensions contiguous on both sides are merged, swaps the innermost
// dimension of its input with another (an image reordered between NCHW and
// blocks of channels, a matrix transposed) becomes calls of the runtime's
// kiln_transpose, one per element of the dimensions left, which go to
// loops around it. See the pass's description in Passes.td.
//
//===----------------------------------------------------------------------===//
#include "codegen/CPU/BlasCalls.h"
#include "codegen/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace kiln {
#define GEN_PASS_DEF_KILNTRANSPOSESTOCALLSPASS
#include "codegen/Passes.h.inc"
} // namespace kiln

using namespace mlir;

namespace kiln {
namespace {

constexpr StringLiteral kTranspose = "kiln_transpose";
/// Fewest rows and columns of the swapped dimensions: smaller transposes
/// are left to loops, as the call's 8x8 blocks would leave them to its
/// element-by-element edges anyway.
constexpr int64_t kMinSide = 8;

/// One dimension of a transpose, in the output's order: its size and its
/// strides (in elements) in the input and the output.
struct Dim {
  int64_t size, in, out;
};

/// A transpose as kiln_transpose computes it: out[j][i] = in[i][j] over
/// `rows` x `cols`, rows `inRow` apart in the input and `outRow` in the
/// output, for every element of the `outer` dimensions.
struct Swap {
  int64_t rows, cols, inRow, outRow;
  SmallVector<Dim> outer;
};

std::optional<Swap> matchSwap(linalg::TransposeOp op) {
  auto inType = dyn_cast<MemRefType>(op.getInput().getType());
  auto outType = dyn_cast<MemRefType>(op.getInit().getType());
  if (!inType || !outType || !inType.getElementType().isF32() || !inType.hasStaticShape())
    return std::nullopt;
  SmallVector<int64_t> inStrides, outStrides;
  int64_t offset;
  if (failed(inType.getStridesAndOffset(inStrides, offset)) ||
      failed(outType.getStridesAndOffset(outStrides, offset)) ||
      llvm::any_of(inStrides, ShapedType::isDynamic) ||
      llvm::any_of(outStrides, ShapedType::isDynamic))
    return std::nullopt;
  // The output's dimensions in order, unit ones dropped, each merged into
  // the one before it where both sides hold the pair as one run.
  SmallVector<Dim> dims;
  for (auto [d, source] : llvm::enumerate(op.getPermutation())) {
    Dim dim{outType.getDimSize(d), inStrides[source], outStrides[d]};
    if (dim.size == 1)
      continue;
    if (!dims.empty() && dims.back().in == dim.size * dim.in &&
        dims.back().out == dim.size * dim.out) {
      dims.back() = {dims.back().size * dim.size, dim.in, dim.out};
      continue;
    }
    dims.push_back(dim);
  }
  // The output's innermost dimension is the input's rows (unit stride
  // there); another is the input's columns, at unit stride in the input.
  if (dims.size() < 2 || dims.back().out != 1 || dims.back().in == 1)
    return std::nullopt;
  auto column = llvm::find_if(dims, [](const Dim &dim) { return dim.in == 1; });
  if (column == dims.end())
    return std::nullopt;
  Swap swap{dims.back().size, column->size, dims.back().in, column->out, {}};
  if (swap.rows < kMinSide || swap.cols < kMinSide)
    return std::nullopt;
  for (auto it = dims.begin(); it + 1 != dims.end(); ++it)
    if (it != column)
      swap.outer.push_back(*it);
  return swap;
}

struct TransposesToCallsPass : impl::KilnTransposesToCallsPassBase<TransposesToCallsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<std::pair<linalg::TransposeOp, Swap>> swaps;
    module.walk([&](linalg::TransposeOp op) {
      if (std::optional<Swap> swap = matchSwap(op))
        swaps.emplace_back(op, std::move(*swap));
    });
    if (swaps.empty())
      return;
    MLIRContext *ctx = &getContext();
    Type i64 = IntegerType::get(ctx, 64), ptr = LLVM::LLVMPointerType::get(ctx);
    func::FuncOp callee = blas::declare(module, kTranspose,
                                        FunctionType::get(ctx, {ptr, ptr, i64, i64, i64, i64}, {}));
    for (auto &[op, swap] : swaps) {
      OpBuilder b(op);
      Location loc = op.getLoc();
      auto constant = [&](int64_t value) -> Value {
        return arith::ConstantIntOp::create(b, loc, i64, value);
      };
      Value in = blas::addressOf(b, loc, op.getInput()).first;
      Value out = blas::addressOf(b, loc, op.getInit()).first;
      // Loops over the dimensions left, each moving both pointers on.
      SmallVector<OpFoldResult> extents = llvm::map_to_vector(
          swap.outer, [&](const Dim &dim) -> OpFoldResult { return b.getIndexAttr(dim.size); });
      for (auto [iv, dim] : llvm::zip(blas::loopNest(b, loc, extents), swap.outer)) {
        Value index = arith::IndexCastOp::create(b, loc, i64, iv);
        in =
            blas::advanceFloats(b, loc, in, arith::MulIOp::create(b, loc, index, constant(dim.in)));
        out = blas::advanceFloats(b, loc, out,
                                  arith::MulIOp::create(b, loc, index, constant(dim.out)));
      }
      func::CallOp::create(b, loc, callee,
                           ValueRange{in, out, constant(swap.rows), constant(swap.cols),
                                      constant(swap.inRow), constant(swap.outRow)});
      op.erase();
    }
  }
};

} // namespace
} // namespace kiln
