//===- OnnxLosses.cpp - ONNX's loss functions in kiln ops ------------------===//
//
// SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss, written with
// one-hot masks, products and sums, so that both run through the ordinary
// back ends and have gradients from the ops' own rules: a model exported
// with its loss trains with `kilnc --train --loss=output`.
//
//===----------------------------------------------------------------------===//
#include "compiler/Importer.h"

namespace kiln::onnx_import {
namespace {

/// loss[n, d...] = -logProbs[n, labels[n, d...], d...] * w, with w the
/// class's weight (1 without weights) and 0 where the label is ignore_index,
/// then reduced as `reduction` says: none, sum, or mean (the sum divided by
/// the sum of w, which is the count of labels kept when there are no
/// weights).
Results negativeLogLikelihood(Importer &im, Node &n, Value logProbs, Value labels,
                              Value weights) {
  OpBuilder &b = im.builder;
  Location loc = n.loc;
  RankedTensorType type = typeOf(logProbs), labelType = typeOf(labels);
  Type element = type.getElementType(), labelElement = labelType.getElementType();
  int64_t rank = type.getRank();
  if (rank < 2)
    return im.failNode(n, ImportFailure::Invalid,
                       "the input must be [N, C] or [N, C, d1, ...], got " +
                           describeShape(type.getShape()));
  int64_t classes = type.getDimSize(1);
  SmallVector<int64_t> expectedLabels(type.getShape());
  expectedLabels.erase(expectedLabels.begin() + 1);
  if (!llvm::isa<IntegerType>(labelElement) || labelType.getShape() != ArrayRef(expectedLabels))
    return im.failNode(n, ImportFailure::Invalid,
                       "the labels must be integer class indices of shape " +
                           describeShape(expectedLabels) + ", got " +
                           describeShape(labelType.getShape()));
  if (weights && (typeOf(weights).getShape() != ArrayRef<int64_t>{classes} ||
                  typeOf(weights).getElementType() != element))
    return im.failNode(n, ImportFailure::Invalid,
                       "the weights must have one element per class, " + std::to_string(classes));
  std::string reduction = n.getString("reduction", "mean");
  if (reduction != "mean" && reduction != "sum" && reduction != "none")
    return im.failNode(n, ImportFailure::Invalid,
                       "unknown reduction '" + reduction + "' (mean, sum, none)");

  // The one-hot mask [N, C, d...] of the labels.
  SmallVector<int64_t> classShape(rank, 1);
  classShape[1] = classes;
  SmallVector<APInt> ids;
  for (int64_t c = 0; c < classes; ++c)
    ids.push_back(APInt(labelElement.getIntOrFloatBitWidth(), c));
  Value classIds =
      im.constant(loc, DenseElementsAttr::get(RankedTensorType::get(classShape, labelElement), ids));
  Value column = UnsqueezeOp::create(b, loc, labels, ArrayRef<int64_t>{1});
  Value mask = CastOp::create(b, loc, RankedTensorType::get(type.getShape(), element),
                              EqualOp::create(b, loc, column, classIds));
  Value picked = ReduceSumOp::create(b, loc, MulOp::create(b, loc, logProbs, mask),
                                     ArrayRef<int64_t>{1}, /*keepdims=*/false);
  Value weight; // per label, [N, d...]; null: all ones
  if (weights) {
    Value perClass = ReshapeOp::create(b, loc, RankedTensorType::get(classShape, element), weights);
    weight = ReduceSumOp::create(b, loc, MulOp::create(b, loc, mask, perClass),
                                 ArrayRef<int64_t>{1}, /*keepdims=*/false);
  }
  if (const auto *ignore = n.attr("ignore_index")) {
    Value ignored = EqualOp::create(b, loc, labels, im.intSplat(loc, labelElement, ignore->i()));
    Value kept = CastOp::create(b, loc, RankedTensorType::get(labelType.getShape(), element),
                                NotOp::create(b, loc, ignored));
    weight = weight ? Value(MulOp::create(b, loc, weight, kept)) : kept;
  }
  Value loss = NegOp::create(b, loc, picked);
  if (weight)
    loss = MulOp::create(b, loc, loss, weight);
  if (reduction == "none")
    return one(loss);

  SmallVector<int64_t> all;
  for (int64_t i = 0; i < rank - 1; ++i)
    all.push_back(i);
  Value total = ReduceSumOp::create(b, loc, loss, all, /*keepdims=*/false);
  if (reduction == "sum")
    return one(total);
  Value count = weight ? Value(ReduceSumOp::create(b, loc, weight, all, /*keepdims=*/false))
                       : im.splat(loc, element, labelType.getNumElements());
  return one(DivOp::create(b, loc, total, count));
}

Results importNegativeLogLikelihoodLoss(Importer &im, Node &n) {
  return negativeLogLikelihood(im, n, n.input(0), n.input(1), n.input(2));
}

// log_prob = log_softmax(scores, axis 1), then the NLL of it; the second
// output, when asked for, is log_prob.
Results importSoftmaxCrossEntropyLoss(Importer &im, Node &n) {
  Value scores = n.input(0);
  if (typeOf(scores).getRank() < 2)
    return im.failNode(n, ImportFailure::Invalid,
                       "the scores must be [N, C] or [N, C, d1, ...], got " +
                           describeShape(typeOf(scores).getShape()));
  Value logProbs = LogSoftmaxOp::create(im.builder, n.loc, scores, static_cast<uint64_t>(1));
  Results loss = negativeLogLikelihood(im, n, logProbs, n.input(1), n.input(2));
  if (failed(loss))
    return failure();
  if (n.proto.output_size() > 1)
    loss->push_back(logProbs);
  return loss;
}

} // namespace

void addLossHandlers(llvm::StringMap<Handler> &table) {
  table["NegativeLogLikelihoodLoss"] = importNegativeLogLikelihoodLoss;
  table["SoftmaxCrossEntropyLoss"] = importSoftmaxCrossEntropyLoss;
}

} // namespace kiln::onnx_import
