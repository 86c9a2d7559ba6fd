//===- GradientInterface.td - Reverse-mode rules of kiln ops -*- tablegen -*-===//
//
// The op interface through which `kiln-autodiff` asks an op for its
// vector-Jacobian product. Ops declare it in KilnOps.td; their rules are
// written in dialects/kiln/Gradients/, one file per op family.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_GRADIENT_INTERFACE_TD
#define KILN_GRADIENT_INTERFACE_TD

include "mlir/IR/OpBase.td"

def Kiln_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let cppNamespace = "::kiln";
  let description = [{
    An op with a gradient rule: given the gradients of the loss with respect
    to its results (the cotangents), it builds, with ordinary `kiln` ops, the
    gradients with respect to its operands. The built IR is ordinary forward
    IR: it is decomposed, fused and lowered like any other, so no back end
    knows that a graph is a backward pass.

    A rule may be asked for any operand's gradient; it sets an entry of
    `operandGrads` to a null value where an operand has none (integer
    indices, shapes, booleans). Operand gradients always have the operand's
    type: a rule sums a broadcast cotangent back to the operand's shape.
  }];
  let methods = [
    InterfaceMethod<[{
        Builds the gradients of the op's operands at `builder`'s insertion
        point. `resultGrads` has one entry per result, null for a result the
        loss does not depend on (treated as zeros). `operandGrads` receives
        one entry per operand.
      }],
      "::llvm::LogicalResult", "buildGradients",
      (ins "::mlir::OpBuilder &":$builder, "::mlir::ValueRange":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
  ];
}

#endif // KILN_GRADIENT_INTERFACE_TD
