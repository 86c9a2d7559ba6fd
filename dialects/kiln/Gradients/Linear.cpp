//===- Linear.cpp - Gradient rules of matrix products ---------------------===//
//
// For Y = A B: dA = dY B^T and dB = A^T dY, with batch dimensions that were
// broadcast summed back. Gemm's rules are Gemms again, so the backward pass
// keeps its transpositions as flags rather than as copies.
//
//===----------------------------------------------------------------------===//
#include "dialects/kiln/Gradients/GradientUtils.h"

using namespace mlir;
using namespace kiln::grad;

namespace kiln {

/// `value` with a unit dimension inserted at `axis` when it has rank 1.
static Value promoteVector(OpBuilder &b, Location loc, Value value, int64_t axis) {
  RankedTensorType type = typeOf(value);
  if (type.getRank() != 1)
    return value;
  SmallVector<int64_t> shape(type.getShape());
  shape.insert(shape.begin() + axis, 1);
  return ReshapeOp::create(b, loc, RankedTensorType::get(shape, type.getElementType()), value);
}

// numpy.matmul: 1-D operands are matrices with a unit dimension, which the
// cotangent is reshaped to have as well.
LogicalResult MatMulOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value lhs = promoteVector(b, loc, getLhs(), 0);
  Value rhs = promoteVector(b, loc, getRhs(), 1);
  // The product's type with the unit dimensions kept (built only to infer it).
  auto product = MatMulOp::create(b, loc, lhs, rhs);
  RankedTensorType productType = product.getType();
  product.erase();
  Value g = reshapeTo(b, loc, resultGrads[0], productType);
  // Operands of rank 2 and more; batch dimensions broadcast.
  Value lhsGrad = MatMulOp::create(b, loc, g, transposeLastTwo(b, loc, rhs));
  lhsGrad = unbroadcast(b, loc, lhsGrad, typeOf(lhs));
  Value rhsGrad;
  RankedTensorType lhsType = typeOf(lhs), rhsType = typeOf(rhs);
  if (rhsType.getRank() == 2 && lhsType.getRank() > 2 && lhsType.hasStaticShape()) {
    // A matrix shared by every batch (a linear layer's weight): the batch
    // rows join the product's rows, so dB = A^T dY is one product of
    // [K, B*M] by [B*M, N] that sums over the batch as it goes, instead of a
    // batch of products summed afterwards.
    int64_t k = lhsType.getShape().back();
    int64_t rows = lhsType.getNumElements() / k;
    auto flat = [&](Value value, int64_t cols) {
      return reshapeTo(b, loc, value,
                       RankedTensorType::get({rows, cols}, lhsType.getElementType()));
    };
    Value lhsRowsT = transposeLastTwo(b, loc, flat(lhs, k));
    rhsGrad = MatMulOp::create(b, loc, lhsRowsT, flat(g, rhsType.getShape().back()));
  } else {
    rhsGrad = MatMulOp::create(b, loc, transposeLastTwo(b, loc, lhs), g);
    rhsGrad = unbroadcast(b, loc, rhsGrad, rhsType);
  }
  operandGrads.push_back(reshapeTo(b, loc, lhsGrad, typeOf(getLhs())));
  operandGrads.push_back(reshapeTo(b, loc, rhsGrad, typeOf(getRhs())));
  return success();
}

// Y = alpha A' B' + beta C, with A' = trans_a ? A^T : A and B' likewise:
//   dA' = alpha dY B'^T, dB' = alpha A'^T dY, dC = beta dY (summed to C).
// Each is one Gemm over the forward operands with the flags adjusted.
LogicalResult GemmOp::buildGradients(OpBuilder &b, ValueRange resultGrads,
                                     SmallVectorImpl<Value> &operandGrads) {
  Location loc = getLoc();
  Value g = resultGrads[0];
  FloatAttr alpha = getAlphaAttr();
  FloatAttr one = b.getF32FloatAttr(1.0f);
  bool transA = getTransA(), transB = getTransB();
  auto gemm = [&](Value x, Value y, bool tx, bool ty) -> Value {
    return GemmOp::create(b, loc, x, y, Value(), alpha, one, b.getBoolAttr(tx),
                          b.getBoolAttr(ty));
  };
  // dA = alpha dY B'^T, or its transpose alpha B' dY^T.
  operandGrads.push_back(transA ? gemm(getB(), g, transB, true) : gemm(g, getB(), false, !transB));
  // dB = alpha A'^T dY, or its transpose alpha dY^T A'.
  operandGrads.push_back(transB ? gemm(g, getA(), true, transA) : gemm(getA(), g, !transA, false));
  if (Value c = getC()) {
    Value cGrad = unbroadcast(b, loc, g, typeOf(c));
    if (getBeta().convertToDouble() != 1.0)
      cGrad = MulOp::create(b, loc, cGrad,
                            scalar(b, loc, elementOf(c), getBeta().convertToDouble()));
    operandGrads.push_back(cGrad);
  }
  return success();
}

} // namespace kiln
