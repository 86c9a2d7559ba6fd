//===- Passes.td - Kiln code generation passes --------------*- tablegen -*-===//
#ifndef KILN_CODEGEN_PASSES_TD
#define KILN_CODEGEN_PASSES_TD

include "mlir/Pass/PassBase.td"

def KilnLowerToLinalgPass : Pass<"kiln-lower-to-linalg", "mlir::func::FuncOp"> {
  let summary = "Lowers kiln ops to linalg, tensor, arith and math on tensors";
  let description = [{
    Rewrites every `kiln` op into destination-passing `linalg.generic` ops
    (plus `tensor` reshapes, pads and slices), the form that Kiln's CPU and GPU
    back ends tile, vectorize and bufferize. Composite ops are first
    decomposed into simpler kiln ops: softmax into a max reduction, an
    exponential and a sum; Gemm into transposes, a matmul and an epilogue;
    layer and batch normalization into reductions and broadcasts. f16 and
    bf16 arithmetic is computed in f32 and rounded once.
    Integer division and remainder define what ONNX leaves undefined and
    x86 would trap on: `x / 0 = x % 0 = 0`, `x / -1 = -x` (wrapping) and
    `x % -1 = 0`.

    Precondition: all tensors are statically shaped (the importer ensures it).

    Before:
    ```mlir
    %y = kiln.relu %x : tensor<4xf32>
    ```
    After:
    ```mlir
    %e = tensor.empty() : tensor<4xf32>
    %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %zero = arith.constant 0.0 : f32
      %neg = arith.cmpf olt, %in, %zero : f32
      %r = arith.select %neg, %zero, %in : f32
      linalg.yield %r : f32
    } -> tensor<4xf32>
    ```
    An op with no lowering is reported at its location (the ONNX node).
  }];
  let dependentDialects = [
    "mlir::arith::ArithDialect", "mlir::linalg::LinalgDialect",
    "mlir::math::MathDialect", "mlir::tensor::TensorDialect"
  ];
}

def KilnExpandStridedCopiesPass
    : Pass<"kiln-expand-strided-copies", "mlir::func::FuncOp"> {
  let summary = "Rewrites copies between strided buffers into linalg.copy";
  let description = [{
    Bufferization copies into and out of subviews (concatenation, padding,
    slices) with `memref.copy`. A copy between two contiguous buffers becomes
    a `memcpy`, but a copy involving a strided view would lower to a call
    into MLIR's C runner library, which a self-contained artifact cannot
    depend on. This pass rewrites exactly those copies into `linalg.copy`,
    which later becomes plain loops; contiguous copies are left alone.

    Before:
    ```mlir
    memref.copy %a, %view : memref<2x2xf32> to memref<2x2xf32, strided<[4, 1]>>
    ```
    After:
    ```mlir
    linalg.copy ins(%a : memref<2x2xf32>) outs(%view : memref<2x2xf32, strided<[4, 1]>>)
    ```
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect"];
}

#endif // KILN_CODEGEN_PASSES_TD
