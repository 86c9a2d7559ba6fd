//===- Passes.h - Kiln graph passes ----------------------------*- C++ -*-===//
#ifndef KILN_PASSES_PASSES_H
#define KILN_PASSES_PASSES_H

#include "dialects/kiln/Device.h"

#include "llvm/Support/Regex.h"

#include <memory>

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

namespace kiln {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// Patterns that rewrite composite kiln ops (softmax, layer norm, gemm, ...)
/// into simpler kiln ops, and that compute f16/bf16 in f32.
void populateDecompositionPatterns(mlir::RewritePatternSet &patterns);

/// Default for kiln-fold-constants' max-elements, also used by the importer.
constexpr int64_t kDefaultFoldMaxElements = 1 << 20;

/// When every operand of the kiln op `op` is a constant, computes its results
/// and materializes them as kiln.constant ops at `builder`'s insertion point.
/// Fails (creating nothing) for ops it cannot evaluate and when the results
/// hold more than `maxElements` elements. `op` itself is left in place.
mlir::FailureOr<llvm::SmallVector<mlir::Value>>
foldToConstants(mlir::OpBuilder &builder, mlir::Operation *op, int64_t maxElements);

/// Reverse-mode differentiation: builds, at `builder`'s insertion point (in
/// the block that computes `loss`, after every op the loss depends on), the
/// gradient of `loss` (a float tensor of one element) with respect to each
/// of `wrt`, from the ops' GradientOpInterface rules. Values the loss does
/// not depend on get zeros. Fails, with an error naming the op and its graph
/// node, where an op on the way has no rule.
mlir::FailureOr<llvm::SmallVector<mlir::Value>>
buildGradients(mlir::OpBuilder &builder, mlir::Value loss, llvm::ArrayRef<mlir::Value> wrt);

/// The `kiln.name` of `func`'s argument `index`, or "input_<index>".
std::string argumentName(mlir::func::FuncOp func, unsigned index);

/// A placement rule, NODE_REGEX=DEVICE: ops whose whole node name matches
/// the (extended POSIX) regular expression go on the device.
struct PlacementRule {
  std::string text, pattern;
  DeviceName device;
  /// `pattern` anchored at both ends, compiled once.
  std::shared_ptr<llvm::Regex> regex;

  bool matches(llvm::StringRef node) const;
};

/// Parses NODE_REGEX=DEVICE; on error, sets `error` to a sentence quoting it.
mlir::FailureOr<PlacementRule> parsePlacementRule(llvm::StringRef spec, std::string &error);

/// Whether `to` uses a value computed by `from`, directly or through other
/// ops of their block (only ops after `from` are searched).
bool dependsOn(mlir::Operation *to, mlir::Operation *from);

/// The ONNX node (or initializer, or graph input) name behind `loc`; "" when
/// it names none.
std::string nodeName(mlir::Location loc);

} // namespace kiln

#endif // KILN_PASSES_PASSES_H
