//===- Passes.td - Kiln graph passes -------------------------*- tablegen -*-===//
#ifndef KILN_PASSES_TD
#define KILN_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnFoldConstantsPass : Pass<"kiln-fold-constants", "mlir::func::FuncOp"> {
  let summary = "Evaluates kiln ops whose operands are all constants";
  let description = [{
    Replaces every `kiln` op whose operands are all `kiln.constant` by the
    constants it computes, in program order, so whole constant subgraphs
    collapse: the shape arithmetic of exported models (Shape, Gather, Concat,
    Unsqueeze feeding a Reshape), casts and transposes of weights, and
    elementwise math on constants.

    Evaluated ops: data movement of any element type (reshape and its
    squeeze/unsqueeze/flatten forms, transpose, slice, concat, gather,
    expand); elementwise unary math, binary arithmetic, comparisons, logic,
    `where`, `cast` and the sum, product, max and min reductions on
    f16/bf16/f32/f64, the signless integers and i1.
    Floats are computed in double precision and rounded once to the result
    type; integer arithmetic wraps at the result width. An integer division
    by zero is left for run time.

    Cost rule: a fold whose results have more than `max-elements` elements
    in total is skipped, since it would store a large tensor in the artifact
    that the program can compute from smaller ones (an `expand` of a splat is
    still folded by the op's own folder, as a splat costs nothing).

    Before:
    ```mlir
    %s = kiln.constant dense<[2, 3]> : tensor<2xi64>
    %i = kiln.constant dense<[1, 0]> : tensor<2xi64>
    %p = kiln.gather %s, %i {axis = 0 : i64} : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
    ```
    After:
    ```mlir
    %p = kiln.constant dense<[3, 2]> : tensor<2xi64>
    ```
    The ONNX importer applies the same evaluation node by node, so operands
    that must be known at compile time may come from constant subgraphs.
  }];
  let options = [
    Option<"maxElements", "max-elements", "int64_t", /*default=*/"1 << 20",
           "Largest total number of result elements a fold may create">
  ];
}

#endif // KILN_PASSES_TD
