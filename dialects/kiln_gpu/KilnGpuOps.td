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
  let summary = "A batched matrix product with bias, addend and activation, by the vendor library";
  let description = [{
    For each batch index `b`, in row-major terms:
    `result[b] = epilogue(lhs[b'] · rhs[b''] + addend[b] + bias)`.

    * `lhs` is `[B', M, K]`, or `[B', K, M]` with `lhs_transposed`;
    * `rhs` is `[B'', K, N]`, or `[B'', N, K]` with `rhs_transposed`;
    * `result` and `addend` are `[B, M, N]`; `bias` is `[N]`, added to every row;
    * `B'` and `B''` are each `B` or 1 (a batch of one is shared by every product);
    * `epilogue` is `none` or `relu`.

    Every operand has the same element type, `f32`, `f16` or `bf16`;
    products accumulate in f32. `allow_tf32` lets f32 products run on TF32
    tensor cores. The CUDA back end calls cuBLASLt.

    ```mlir
    %y = kiln_gpu.matmul %x, %w bias(%b : tensor<1024xf32>) epilogue relu
        : tensor<1x64x784xf32>, tensor<1x784x1024xf32> -> tensor<1x64x1024xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$lhs, AnyRankedTensor:$rhs,
                       Optional<AnyRankedTensor>:$bias,
                       Optional<AnyRankedTensor>:$addend,
                       UnitAttr:$lhs_transposed, UnitAttr:$rhs_transposed,
                       DefaultValuedAttr<KilnGpu_Epilogue, "::kiln::kgpu::Epilogue::None">:$epilogue,
                       UnitAttr:$allow_tf32);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs (`bias` `(` $bias^ `:` type($bias) `)`)?
    (`addend` `(` $addend^ `:` type($addend) `)`)?
    (`epilogue` $epilogue^)? attr-dict `:` type($lhs) `,` type($rhs) `->` type($result)
  }];
  let hasVerifier = 1;
}

#endif // KILN_GPU_OPS_TD
