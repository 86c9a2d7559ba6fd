//===- KilnGpuOps.td - The host side of Kiln's GPU programs --*- tablegen -*-===//
//
// After kiln-gpu-form-kernels, @main is a straight line of kernel launches
// and library calls on tensors. Keeping tensors (not buffers) at this level
// lets the host program's buffer plan read live ranges straight off SSA
// values, and keeps the program verifiable: every launch names a kernel
// whose parameters match its operands.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_GPU_OPS_TD
#define KILN_GPU_OPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def KilnGpu_Dialect : Dialect {
  let name = "kiln_gpu";
  let cppNamespace = "::kiln::kgpu";
  let summary = "Kernel launches and library calls of a GPU program, on tensors";
  let description = [{
    The `kiln_gpu` dialect is what `@main` holds once `kiln-gpu-form-kernels`
    has turned every `kiln.fusion` into GPU work: launches of kernels
    generated into a `gpu.module`, and matrix products handed to the vendor
    library. Ops take tensors and return new tensors, each of which the host
    program (see docs/cuda-artifact.md) places in device memory; a launch's
    kernel writes every element of its results.
  }];
}

class KilnGpu_Op<string mnemonic, list<Trait> traits = []>
    : Op<KilnGpu_Dialect, mnemonic, traits>;

def KilnGpu_LaunchOp : KilnGpu_Op<"launch",
    [Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Runs one generated GPU kernel over a grid of thread blocks";
  let description = [{
    Launches `kernel`, a `gpu.func` marked `kernel` in a `gpu.module` of the
    enclosing module, with `grid` blocks of `block` threads (x, y, z) and
    `shared` bytes of dynamic shared memory. The kernel's parameters are the
    buffers of the operands, then those of the results, in order; each
    parameter is a statically shaped memref with the element type and the
    element count of its tensor (its shape may differ: a kernel may index a
    reshaped view).

    ```mlir
    %y = kiln_gpu.launch @kiln_kernels::@kiln_k0 grid [16, 1, 1] block [256, 1, 1]
        (%x, %b) : (tensor<4096xf32>, tensor<4096xf32>) -> tensor<4096xf32>
    ```
  }];
  let arguments = (ins SymbolRefAttr:$kernel, DenseI64ArrayAttr:$grid,
                       DenseI64ArrayAttr:$block,
                       DefaultValuedAttr<I64Attr, "0">:$shared,
                       Variadic<AnyRankedTensor>:$inputs);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let assemblyFormat = [{
    $kernel `grid` $grid `block` $block (`shared` $shared^)? `(` $inputs `)`
    attr-dict `:` functional-type($inputs, $results)
  }];
  let hasVerifier = 1;
}

def KilnGpu_Epilogue : I32EnumAttr<"Epilogue",
    "what a library matrix product applies to its result", [
    I32EnumAttrCase<"None", 0, "none">,
    I32EnumAttrCase<"Relu", 1, "relu">]> {
  let cppNamespace = "::kiln::kgpu";
}

def KilnGpu_MatmulOp : KilnGpu_Op<"matmul", [Pure, AttrSizedOperandSegments]> {
  let summary = "A batched matrix product with scale, bias, addend and activation, by the vendor library";
  let description = [{
    For each batch index `b < batch`, in row-major terms:
    `result[b] = epilogue(alpha * lhs[b] · rhs[b] + addend[b] + bias)`,
    where `lhs[b]` is `m×k` (stored `k×m` with `lhs_transposed`), `rhs[b]` is
    `k×n` (stored `n×k` with `rhs_transposed`), `result[b]` and `addend[b]`
    are `m×n`, `bias` has `n` elements added to every row and `epilogue` is
    `none` or `relu`.

    Each matrix operand is a view of its tensor's row-major elements: row `r`
    of matrix `b` starts at element `b * batch_stride + r * row_stride`, its
    columns consecutive. `*_strides = [batch_stride, row_stride]` gives the
    view; without it the matrices are dense, one after the other (and a
    tensor holding a single matrix serves every batch index, batch stride 0).
    Views let the library read the heads of attention out of a `[seq,
    hidden]` tensor, and write them back, with no copy. The result view must
    cover every element of the result exactly once.

    Every operand has the same element type, `f32`, `f16` or `bf16`;
    products accumulate in f32. `allow_tf32` lets f32 products run on TF32
    tensor cores. The CUDA back end calls cuBLASLt.

    ```mlir
    // Q·K^T for 4 heads of 64 columns each, read in place from [128, 256].
    %s = kiln_gpu.matmul %q, %k batch 4 m 128 n 128 k 64
        {lhs_strides = array<i64: 64, 256>, rhs_strides = array<i64: 64, 256>, rhs_transposed,
         alpha = 0.125 : f32}
        : tensor<128x256xf32>, tensor<128x256xf32> -> tensor<4x128x128xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs,
                       Optional<AnyRankedTensor>:$bias,
                       Optional<AnyRankedTensor>:$addend,
                       I64Attr:$batch, I64Attr:$m, I64Attr:$n, I64Attr:$k,
                       UnitAttr:$lhs_transposed, UnitAttr:$rhs_transposed,
                       OptionalAttr<DenseI64ArrayAttr>:$lhs_strides,
                       OptionalAttr<DenseI64ArrayAttr>:$rhs_strides,
                       OptionalAttr<DenseI64ArrayAttr>:$result_strides,
                       OptionalAttr<DenseI64ArrayAttr>:$addend_strides,
                       DefaultValuedAttr<F32Attr, "1.0f">:$alpha,
                       DefaultValuedAttr<KilnGpu_Epilogue, "::kiln::kgpu::Epilogue::None">:$epilogue,
                       UnitAttr:$allow_tf32);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`bias` `(` $bias^ `:` type($bias) `)`)?
    (`addend` `(` $addend^ `:` type($addend) `)`)?
    (`epilogue` $epilogue^)? `batch` $batch `m` $m `n` $n `k` $k
    attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Where the matrices of one operand are: `batches` matrices (1 when one
    /// matrix serves every batch index) of `rows x columns` as stored.
    struct MatrixView {
      int64_t batches, rows, columns, batchStride, rowStride;
    };
    /// The views of the operands and the result, dense unless their
    /// *_strides say otherwise; failure when a dense view does not fit the
    /// tensor.
    ::mlir::FailureOr<MatrixView> getLhsView();
    ::mlir::FailureOr<MatrixView> getRhsView();
    ::mlir::FailureOr<MatrixView> getResultView();
    ::mlir::FailureOr<MatrixView> getAddendView();
  }];
}

#endif // KILN_GPU_OPS_TD
