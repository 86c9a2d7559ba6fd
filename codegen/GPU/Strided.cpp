//===- Strided.cpp - Tensors as strided views of row-major storage --------===//
#include "codegen/GPU/Strided.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

namespace kiln {

Strided rowMajor(ArrayRef<int64_t> shape) {
  Strided view{SmallVector<int64_t>(shape), SmallVector<int64_t>(shape.size())};
  int64_t stride = 1;
  for (int64_t i = static_cast<int64_t>(shape.size()) - 1; i >= 0; --i) {
    view.strides[i] = stride;
    stride *= shape[i];
  }
  return view;
}

/// Splits dimension i of `view` into the sizes `groups[i]` name in `shape`.
static Strided split(const Strided &view, ArrayRef<ReassociationIndices> groups, ArrayRef<int64_t> shape) {
  Strided result{SmallVector<int64_t>(shape), SmallVector<int64_t>(shape.size())};
  for (auto [i, group] : llvm::enumerate(groups)) {
    int64_t stride = view.strides[i];
    for (int64_t d : llvm::reverse(group)) {
      result.strides[d] = stride;
      stride *= shape[d];
    }
  }
  return result;
}

/// Merges each group of `view`'s dimensions into one, when the group is
/// contiguous (every non-unit dimension a whole number of the next one's
/// spans); nullopt otherwise.
static std::optional<Strided> merge(const Strided &view, ArrayRef<ReassociationIndices> groups) {
  Strided result;
  for (const ReassociationIndices &group : groups) {
    int64_t size = 1, stride = 1;
    std::optional<int64_t> inner;
    for (int64_t d : llvm::reverse(group)) {
      size *= view.shape[d];
      if (view.shape[d] == 1)
        continue;
      if (inner && view.strides[d] != view.strides[*inner] * view.shape[*inner])
        return std::nullopt;
      if (!inner)
        stride = view.strides[d];
      inner = d;
    }
    result.shape.push_back(size);
    result.strides.push_back(stride);
  }
  return result;
}

/// The permutation a copy generic applies (result dimension p[j] is input
/// dimension j), when `op` only moves its one input.
static std::optional<SmallVector<unsigned>> copyPermutation(Operation *op) {
  auto generic = dyn_cast_or_null<linalg::GenericOp>(op);
  if (!generic || generic.getNumDpsInputs() != 1 || generic.getNumDpsInits() != 1 ||
      generic.getNumReductionLoops() != 0)
    return std::nullopt;
  Block &payload = generic.getRegion().front();
  if (payload.getOperations().size() != 1 ||
      payload.getTerminator()->getOperand(0) != payload.getArgument(0))
    return std::nullopt;
  SmallVector<AffineMap> maps = generic.getIndexingMapsArray();
  if (!maps[1].isIdentity() || !maps[0].isPermutation())
    return std::nullopt;
  SmallVector<unsigned> permutation;
  for (unsigned j = 0; j < maps[0].getNumResults(); ++j)
    permutation.push_back(maps[0].getDimPosition(j));
  return permutation;
}

/// Whether `op` only moves elements: a reshape or a permutation copy.
bool isMovement(Operation *op) {
  return isa_and_nonnull<tensor::ExpandShapeOp, tensor::CollapseShapeOp>(op) ||
         copyPermutation(op).has_value();
}

/// The view of `op`'s result, given the view of its (first) operand.
std::optional<Strided> forward(Operation *op, const Strided &operand) {
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op))
    return split(operand, expand.getReassociationIndices(), expand.getResultType().getShape());
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op))
    return merge(operand, collapse.getReassociationIndices());
  std::optional<SmallVector<unsigned>> permutation = copyPermutation(op);
  if (!permutation)
    return std::nullopt;
  Strided result{SmallVector<int64_t>(operand.shape.size()), SmallVector<int64_t>(operand.shape.size())};
  for (auto [j, p] : llvm::enumerate(*permutation)) {
    result.shape[p] = operand.shape[j];
    result.strides[p] = operand.strides[j];
  }
  return result;
}

/// The view of `op`'s operand, given the view of its result.
std::optional<Strided> backward(Operation *op, const Strided &result) {
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op))
    return merge(result, expand.getReassociationIndices());
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op))
    return split(result, collapse.getReassociationIndices(), collapse.getSrcType().getShape());
  std::optional<SmallVector<unsigned>> permutation = copyPermutation(op);
  if (!permutation)
    return std::nullopt;
  Strided operand{SmallVector<int64_t>(result.shape.size()), SmallVector<int64_t>(result.shape.size())};
  for (auto [j, p] : llvm::enumerate(*permutation)) {
    operand.shape[j] = result.shape[p];
    operand.strides[j] = result.strides[p];
  }
  return operand;
}

} // namespace kiln
