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

    A `kiln.gather` carrying `kiln.index_check = ID` (kilnc sets it on CPU
    code unless `--no-index-checks`) also tests each index and records one
    outside `[-size, size)` in the `kiln_index_check` global (see
    codegen/Passes.h) for the runtime to report; without it, indices are
    only clamped.

    With `fold-transposes`, a matmul operand computed by a transpose of its
    last two dimensions is read in place through a transposed indexing map,
    so `X^T W` (the weight gradient of a dense layer) copies nothing; the CPU
    pipeline sets it, as its BLAS calls take transposed operands. A
    convolution whose only user swaps its batch and channel dimensions (a
    weight gradient on its way back to the filter's layout) is computed
    channel-first instead, its loops ordered (group, channel, batch, ...),
    and stands for the transpose; kiln-contractions-to-blas then writes each
    output channel's row of the product straight into it.

    With `stack-rows`, a matmul of a stack of matrices of fewer than 64 rows
    by one matrix (a pointwise layer on a channels-last image: ConvNeXt's
    `[1, 7, 7, 768] x [768, 3072]`) is one product of all the stack's rows,
    its left operand collapsed to a matrix and its result expanded back; the
    CPU pipeline sets it, as its kernels would otherwise take the stack one
    matrix per tile, each tile streaming the whole right operand for a few
    rows.

    With `blocked-pool-calls`, a max or average pool of a blocked image
    (`N x C/16 x H x W x 16`) outside a fusion (kiln-fuse leaves such pools
    out) stays a kiln op, which bufferization makes a call of the runtime's
    `kiln_pool2d_blocked` (oneDNN's pooling on the blocked image as it is);
    the CPU pipeline sets it. Without it, such a pool becomes loops like any
    other: the padded image, then the window's sum or maximum with the 16
    lanes innermost.
  }];
  let options = [
    Option<"foldTransposes", "fold-transposes", "bool", /*default=*/"false",
           "Read matmul operands that transpose their last two dimensions through "
           "transposed indexing maps, and compute convolutions whose results are "
           "transposed batch for channel channel-first, instead of copying">,
    Option<"stackRows", "stack-rows", "bool", /*default=*/"false",
           "Lower a matmul of a stack of matrices of few rows by one matrix as "
           "one product of all the stack's rows">,
    Option<"blockedPoolCalls", "blocked-pool-calls", "bool", /*default=*/"false",
           "Leave pools of blocked images outside fusions as kiln ops, for "
           "bufferization to make calls of the runtime's kiln_pool2d_blocked">
  ];
  let dependentDialects = [
    "mlir::arith::ArithDialect", "mlir::linalg::LinalgDialect",
    "mlir::math::MathDialect", "mlir::memref::MemRefDialect",
    "mlir::scf::SCFDialect", "mlir::tensor::TensorDialect"
  ];
}

def KilnConcatInPlacePass : Pass<"kiln-concat-in-place", "mlir::func::FuncOp"> {
  let summary = "Builds concatenations that extend one another in one tensor, so each copies only its own parts";
  let description = [{
    A densely connected network (DenseNet) concatenates, before each of its
    layers, the block's input and every feature map computed so far: layer
    k's concatenation holds layer k-1's parts and one more. Built one by one,
    the k-th copies all k+1 parts again, so a block of n layers copies
    O(n^2) channels (DenseNet-121: 593 copies of about 40 MB in all, 11 % of
    its run at batch 1).

    This pass finds such chains among the concatenations that
    `kiln-lower-to-linalg` writes (the parts inserted one after another
    along one axis into a `tensor.empty` they fill) and builds each chain in
    one tensor of its last, longest concatenation's type. A concatenation
    whose first parts are those of an earlier one inserts only the parts it
    adds, into the earlier one's tensor; the shorter concatenations become
    views (`tensor.extract_slice`) of that tensor's leading part. A block of
    n layers then copies each part once.

    A concatenation extends the longest earlier one it starts with whose
    every reader (through views, in any kernel) comes before it starts
    inserting its own parts, so that bufferization writes the shared tensor
    in place rather than copying it; at most one concatenation extends each.

    Before:
    ```mlir
    %e1 = tensor.empty() : tensor<1x32x8x8xf32>
    %a1 = tensor.insert_slice %x into %e1[0, 0, 0, 0] [1, 16, 8, 8] [1, 1, 1, 1]
    %c1 = tensor.insert_slice %f into %a1[0, 16, 0, 0] [1, 16, 8, 8] [1, 1, 1, 1]
    %g = linalg.generic ... ins(%c1 ...)     // computes %h from %c1
    %e2 = tensor.empty() : tensor<1x48x8x8xf32>
    %a2 = tensor.insert_slice %x into %e2[0, 0, 0, 0] [1, 16, 8, 8] [1, 1, 1, 1]
    %b2 = tensor.insert_slice %f into %a2[0, 16, 0, 0] [1, 16, 8, 8] [1, 1, 1, 1]
    %c2 = tensor.insert_slice %h into %b2[0, 32, 0, 0] [1, 16, 8, 8] [1, 1, 1, 1]
    ```
    After:
    ```mlir
    %e = tensor.empty() : tensor<1x48x8x8xf32>
    %a = tensor.insert_slice %x into %e[0, 0, 0, 0] [1, 16, 8, 8] [1, 1, 1, 1]
    %b = tensor.insert_slice %f into %a[0, 16, 0, 0] [1, 16, 8, 8] [1, 1, 1, 1]
    %c1 = tensor.extract_slice %b[0, 0, 0, 0] [1, 32, 8, 8] [1, 1, 1, 1]
    %g = linalg.generic ... ins(%c1 ...)
    %c2 = tensor.insert_slice %h into %b[0, 32, 0, 0] [1, 16, 8, 8] [1, 1, 1, 1]
    ```

    Runs on the functions' top-level ops after `kiln-form-kernels`, before
    bufferization. Concatenations that no other extends are left as they
    are.
  }];
  let dependentDialects = ["mlir::tensor::TensorDialect"];
}

def KilnEpilogueInPlacePass
    : Pass<"kiln-epilogue-in-place", "mlir::func::FuncOp"> {
  let summary = "Writes a product's tile where its epilogue's result goes, and runs the epilogue in place";
  let description = [{
    An output fusion's tile is a matrix product or convolution (a linalg op
    with a reduction loop) followed by an elementwise epilogue (bias,
    activation, residual add) that reads the product at each element of its
    result. Tiling leaves the product a destination of its own, so each tile
    allocated a buffer for the product, zeroed it and read it back: a tile of
    197 x 576 floats (ViT-S's QKV projection) went through `malloc`, whose
    large blocks are mapped afresh each time, and its page faults cost the
    product 15 %.

    This pass gives the product the epilogue's destination and makes the
    epilogue read the product through its output operand, so that
    bufferization writes the product into the result's tile and the epilogue
    updates it in place. It applies to an epilogue that does not read its
    destination, when the product (a matrix product: every operand read at
    a projected permutation of its loops) has one result, which nothing else
    uses and the epilogue reads at the output's own index. Left alone are
    windowed convolutions, whose BLAS, direct and depthwise lowerings find
    their epilogues (a clamp, an optimizer's step) by the product's own
    tile, and an epilogue that reads a function argument at its output's
    index: an optimizer's update of a weight after its gradient, which
    kiln-contractions-to-blas folds into the product's call (SGD) or
    kiln-state-in-place writes into the weight's own buffer.

    Before:
    ```mlir
    %e = tensor.empty() : tensor<197x576xf32>
    %z = linalg.fill ins(%zero : f32) outs(%e : tensor<197x576xf32>) -> tensor<197x576xf32>
    %p = linalg.generic {...} ins(%a, %w : ...) outs(%z : tensor<197x576xf32>) {...}
    %r = linalg.generic {...} ins(%p, %bias : tensor<197x576xf32>, tensor<576xf32>)
        outs(%tile : tensor<197x576xf32>) {
    ^bb0(%x: f32, %b: f32, %out: f32): ... }
    ```
    After:
    ```mlir
    %z = linalg.fill ins(%zero : f32) outs(%tile : tensor<197x576xf32>) -> tensor<197x576xf32>
    %p = linalg.generic {...} ins(%a, %w : ...) outs(%z : tensor<197x576xf32>) {...}
    %r = linalg.generic {...} ins(%bias : tensor<576xf32>) outs(%p : tensor<197x576xf32>) {
    ^bb0(%b: f32, %x: f32): ... }
    ```
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect", "mlir::tensor::TensorDialect"];
}

def KilnCloneDestinationsPass
    : Pass<"kiln-clone-destinations", "mlir::func::FuncOp"> {
  let summary = "Gives every kernel and function result its own destination before bufferization";
  let description = [{
    CSE merges the identical `tensor.empty` and `linalg.fill` ops that the
    kernels of a graph write their results into, so a graph of n kernels of
    one shape reaches bufferization with one destination shared by all of
    them. One-shot bufferization then checks each in-place write against
    every other use of that destination (time quadratic in the graph: a
    chain of 2000 nodes spent 10 s there) and must copy the shared zero
    fill for all writers but one. This pass clones such a destination (a
    `tensor.empty`, or a `linalg.fill` of a constant into one) once per
    user, right before it, so each kernel writes into its own.

    Before:
    ```mlir
    %e = tensor.empty() : tensor<32x64xf32>
    %z = linalg.fill ins(%cst : f32) outs(%e : tensor<32x64xf32>) -> tensor<32x64xf32>
    %a = linalg.generic ... outs(%z : tensor<32x64xf32>)
    %b = linalg.generic ... outs(%z : tensor<32x64xf32>)
    ```
    After: `%b` writes into a fill of a `tensor.empty` of its own.

    A tile's destination sliced out of a whole-result `tensor.empty` (or a
    fill of one) of 512 KiB or more that nothing else uses becomes a
    `tensor.empty` of the tile's size, so each tile of a loop allocates its
    tile, not the whole result.

    Function results get buffers of their own in the same way: a value
    returned twice (a graph listing one tensor as two outputs, or an output
    and an `Identity` of it) is copied into a new tensor for its second
    result, since each result becomes its own out-parameter.
  }];
  let dependentDialects = ["mlir::linalg::LinalgDialect", "mlir::tensor::TensorDialect"];
}

def KilnBlockedConvInPlacePass
    : Pass<"kiln-blocked-conv-in-place", "mlir::func::FuncOp"> {
  let summary = "Lets a blocked convolution write its result straight into the concatenation it is part of";
  let description = [{
    An Inception module, a SqueezeNet Fire module or a DenseNet layer
    concatenates the results of convolutions along channels. Lowered as it
    is, each convolution writes a buffer of its own that the concatenation
    then copies into its slot (SqueezeNet at batch 8: 7.8 ms of copies in a
    42 ms run).

    This pass gives such a `kiln.blocked_conv` its slot as its `dest`: where
    the convolution's result is inserted (`tensor.insert_slice`, unit
    strides) into a larger tensor and read by nothing before that, it moves
    the convolution down to the insertion and slices the slot out of the
    tensor inserted into. One-shot bufferization then writes the result in
    place, and the insertion copies nothing. A batch-1 slot is one dense
    image. The images of a larger batch lie a slot apart, which oneDNN's
    convolutions cannot write: the runtime convolves them one by one where
    each output sums few products, and otherwise convolves the batch into a
    buffer of its own and copies each image into its slot.

    Before:
    ```mlir
    %c = kiln.blocked_conv %x, %w, %b : (...) -> tensor<1x4x54x54x16xf32>
    %r = tensor.insert_slice %c into %t[0, 4, 0, 0, 0] [1, 4, 54, 54, 16] [1, 1, 1, 1, 1]
        : tensor<1x4x54x54x16xf32> into tensor<1x8x54x54x16xf32>
    ```
    After:
    ```mlir
    %s = tensor.extract_slice %t[0, 4, 0, 0, 0] [1, 4, 54, 54, 16] [1, 1, 1, 1, 1]
        : tensor<1x8x54x54x16xf32> to tensor<1x4x54x54x16xf32>
    %c = kiln.blocked_conv %x, %w, %b into %s : (...) -> tensor<1x4x54x54x16xf32>
    %r = tensor.insert_slice %c into %t[0, 4, 0, 0, 0] [1, 4, 54, 54, 16] [1, 1, 1, 1, 1]
    ```

    Runs on the functions' top-level ops after `kiln-clone-destinations`
    (which would otherwise give the slice and the insertion tensors of
    their own), before bufferization. A convolution with an addend is left
    as it is: its result is written over the addend.
  }];
  let dependentDialects = ["mlir::tensor::TensorDialect"];
}

def KilnResultsInPlacePass : Pass<"kiln-results-in-place", "mlir::func::FuncOp"> {
  let summary = "Allocates a reshaped result in its own shape, so it is written in place";
  let description = [{
    Kernels compute in their own shapes: a batch-1 convolution's output is
    `[channels, rows, columns]`, and the function returns an
    `expand_shape` of that buffer to `[1, channels, rows, columns]`.
    `buffer-results-to-out-params{hoist-static-allocs}` writes a result in
    place only when it is an allocation itself; a reshaped one is computed
    into an intermediate and copied into the caller's buffer at the end, a
    serial copy of the whole output (a one-node 56x56 depthwise
    convolution spent a sixth of its time there).

    This pass, run before it, turns a returned `expand_shape` or
    `collapse_shape` of a static allocation into an allocation of the
    result's shape, of which the intermediate becomes the inverse reshape:
    the kernels then write into the caller's buffer through that view. An
    allocation returned more than once (itself and reshaped, or reshaped
    twice) keeps its buffers, since each result needs its own.

    Before:
    ```mlir
    %a = memref.alloc() : memref<64x28x28xf32>
    ... kernels write %a ...
    %r = memref.expand_shape %a [[0, 1], [2], [3]] output_shape [1, 64, 28, 28]
        : memref<64x28x28xf32> into memref<1x64x28x28xf32>
    return %r : memref<1x64x28x28xf32>
    ```
    After:
    ```mlir
    %r = memref.alloc() : memref<1x64x28x28xf32>
    %a = memref.collapse_shape %r [[0, 1], [2], [3]]
        : memref<1x64x28x28xf32> into memref<64x28x28xf32>
    ... kernels write %a ...
    return %r : memref<1x64x28x28xf32>
    ```
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
}

def KilnStateInPlacePass : Pass<"kiln-state-in-place", "mlir::ModuleOp"> {
  let summary = "Finds the train-step state that may be updated in its own buffer";
  let description = [{
    A train step reads each state tensor (a weight, an optimizer slot, the
    step counter) as an input and writes its next value as an output. With
    the state resident in the runtime, the output may share the input's
    buffer, which saves a buffer per state tensor and the copy of every
    weight that starts its update (`out = w; out -= lr * A^T B` in one
    sgemm), but only if the step reads no element of the input after the
    output's element has been written.

    This pass proves that on buffers, for each pair the driver lists in
    `kiln.state_pairs` on a function (`[input, output, ...]`, argument
    numbers after `buffer-results-to-out-params`). A pair qualifies when,
    in the function's top-level order:
    - no op writes the input (through any view of it);
    - no op after the first that touches the output touches the input;
    - in that op every access to either buffer is one elementwise
      `linalg.generic` (or `memref.copy`) that reads the input and writes
      the output through the same view, and whose payload loads from
      neither: the same element is read, then written, in one iteration;
    - in a kernel (`scf.forall`) that update sits directly in the body, on
      a tile whose offsets follow the iteration (the tiles are disjoint);
    - no op makes an alias of either buffer that is not a view (a
      transpose, a pointer), which could hide a later read; an address of
      one (`memref.extract_aligned_pointer_as_index`, perhaps offset by
      `arith.addi`) that only calls marked `kiln.no_capture` take (a
      blocked convolution reading a weight as its filters) counts as
      those calls touching the buffer where they stand.

    A function that calls a collective (`kiln_all_reduce_*`) qualifies for
    nothing: a step that fails midway must leave its state as it was. The
    proven outputs' argument numbers go to the module attribute
    `kiln.in_place_state` (empty when none), which the driver writes into
    the manifest; `kiln.state_pairs` is removed.
  }];
}

def KilnCollapseContiguousLoopsPass
    : Pass<"kiln-collapse-contiguous-loops", "mlir::func::FuncOp"> {
  let summary = "Runs loops over dimensions that are contiguous in memory as one loop";
  let description = [{
    A kernel tile's elementwise ops, copies and transposes loop over every
    dimension of their buffers, and the innermost dimension is often short:
    7 pixels of a 7x7 image, the 3x3 taps of a filter. LLVM fully unrolls
    such a loop and then vectorizes the loop around it, whose accesses are
    far apart: gathers and scatters, which are slower than scalar code on
    current x86 cores. Where adjacent parallel loops walk one contiguous run
    of every buffer that reads them (the outer dimension's stride the inner
    one's extent times its stride), this pass collapses them into one loop
    with `linalg::collapseOpIterationDims`, so that the innermost loop is
    long and contiguous. The collapsed operands are `memref.reinterpret_cast`s
    of their buffers rather than `memref.collapse_shape`s, whose loads would
    later be folded into loads at delinearized indices (a division per
    access). `linalg.transpose` is generalized first. Left alone: reduction
    loops (joined, their sums would add in another order, and results are
    kept bitwise the same), windows (indices that are sums of loops), and
    bodies that read `linalg.index`.

    Before:
    ```mlir
    linalg.generic {indexing_maps = [#id3, #id3], iterator_types = [parallel x 3]}
        ins(%a : memref<8x7x7xf32, strided<[49, 7, 1], offset: ?>>)
        outs(%b : memref<8x7x7xf32>) { ... }
    ```
    After:
    ```mlir
    %ca = memref.reinterpret_cast %base to offset: [%offset], sizes: [392], strides: [1]
        : memref<f32> to memref<392xf32, strided<[1], offset: ?>>
    %cb = memref.reinterpret_cast %bbase to offset: [0], sizes: [392], strides: [1]
        : memref<f32> to memref<392xf32>
    linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
        ins(%ca : ...) outs(%cb : memref<392xf32>) { ... }
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::linalg::LinalgDialect",
                           "mlir::memref::MemRefDialect"];
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
    scf.for %i = %c0 to %c2 step %c1 {
      %from = memref.subview %a[%i, 0] [1, 2] [1, 1] : memref<2x2xf32> to memref<2xf32, strided<[1], offset: ?>>
      %to = memref.subview %view[%i, 0] [1, 2] [1, 1] : ... to memref<2xf32, strided<[1], offset: ?>>
      memref.copy %from, %to : memref<2xf32, strided<[1], offset: ?>> to memref<2xf32, strided<[1], offset: ?>>
    }
    ```
    Rows contiguous on both sides are copied by memcpy's like this (LLVM
    expands short ones inline into vector moves; loops over short rows stay
    scalar when LLVM cannot tell that the buffers do not overlap). Copies
    with strided rows become `linalg.copy`, plain loops later:
    ```mlir
    linalg.copy ins(%a : memref<4xf32, strided<[2]>>) outs(%b : memref<4xf32>)
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::linalg::LinalgDialect",
                           "mlir::scf::SCFDialect"];
}

def KilnTransposesToCallsPass
    : Pass<"kiln-transposes-to-calls", "mlir::ModuleOp"> {
  let summary = "Computes transposes of two dimensions by the runtime's kiln_transpose";
  let description = [{
    A `linalg.transpose` of f32 buffers of static shapes and strides is
    read as the output's dimensions with their strides on both sides: unit
    dimensions are dropped, and a dimension is merged into the one before
    it where both buffers hold the pair as one run. When the output's
    innermost dimension is strided in the input (the input's rows) and
    another dimension is the input's innermost at unit stride (its
    columns), each of at least 8, the transpose becomes calls of
    `kiln_transpose(in, out, rows, cols, inRow, outRow)`
    (runtime/kernels/Transpose.c, in the kernel archive the artifact
    links), `out[j * outRow + i] = in[i * inRow + j]`, one per element of
    the dimensions left, over which `scf.for` loops move both pointers.
    It is a module pass because it declares `kiln_transpose` in the
    module. The kernel moves 8x8 blocks through AVX registers where the CPU has
    them; generated loops went element by element, the input's column
    innermost: ResNet-18's reorders of 28x28 images to and from blocks of
    16 channels took 0.13-0.27 ms for 1.6 MB.

    Transposes that move runs of several elements (a filter's 3x3 taps)
    or whose swapped dimensions are shorter than 8 stay loops.

    Before:
    ```mlir
    linalg.transpose ins(%a : memref<1x16x28x28xf32, strided<[50176, 784, 28, 1], offset: ?>>)
                     outs(%b : memref<1x28x28x16xf32>) permutation = [0, 2, 3, 1]
    ```
    After:
    ```mlir
    func.call @kiln_transpose(%pa, %pb, %c16_i64, %c784_i64, %c784_i64, %c16_i64)
        : (!llvm.ptr, !llvm.ptr, i64, i64, i64, i64) -> ()
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::func::FuncDialect",
                           "mlir::LLVM::LLVMDialect", "mlir::scf::SCFDialect"];
}

def KilnEmptyBuffersPass : Pass<"kiln-empty-buffers", "mlir::func::FuncOp"> {
  let summary = "Passes a public function's zero-element buffers as memref<0xT>";
  let description = [{
    A graph input or output with no elements (a dimension of size 0) keeps
    its place in the artifact's signature, but nothing reads or writes it.
    Its buffer cannot be a bare pointer as it is typed, though: a memref
    whose zero dimension is not the outermost has dynamic strides in front
    of it, and `convert-func-to-llvm` would pass it as a descriptor. This
    pass erases the copies that move no element and retypes each such
    argument of a public function to a rank-1 `memref<0xT>`; what still
    uses it gets a zero-byte `memref.alloca` of the old type instead.

    Before:
    ```mlir
    func.func @main(%x: memref<3x0x5xf32>, %y: memref<3x0x5xf32>) {
      memref.copy %x, %y : memref<3x0x5xf32> to memref<3x0x5xf32>
      return
    }
    ```
    After:
    ```mlir
    func.func @main(%x: memref<0xf32>, %y: memref<0xf32>) {
      return
    }
    ```
  }];
}

def KilnFormKernelsPass : Pass<"kiln-form-kernels", "mlir::func::FuncOp"> {
  let summary = "Turns each kiln.fusion of linalg ops into one tiled, parallel kernel";
  let description = [{
    Runs after `kiln-lower-to-linalg`, when fusion bodies hold linalg ops on
    tensors. For each `kiln.fusion`:

    1. elementwise producers are fused into their consumers when both run
       over the same iteration space (a producer that a consumer broadcasts is
       not, since it would be recomputed per broadcast element);
    2. roots of a multi-output fusion that run over the same loops and do
       not read each other (batch normalization's two gradient sums per
       channel, elementwise results side by side) become one generic with
       a result each, so that one loop reads their inputs once;
    3. the op producing the fusion's result (the root) is tiled along its
       outer parallel dimensions into an `scf.forall`, and every other op of
       the fusion is fused into the tile, computing just the slice the tile
       needs: one loop nest over rows for softmax and layer normalization,
       one loop over result tiles for a matmul and its epilogue. Dimensions
       reduced anywhere in an input fusion are never tiled. Kernels with fewer
       than `min-parallel-elements` result elements are left untiled (serial),
       except where that small result is much work: a convolution of at
       least 16384 multiply-adds (a small depthwise layer, a weight
       gradient), and sums of at least 65536 elements into the root's shape
       (batch normalization's per-channel statistics, summed over batch and
       space), which take one channel per tile, and sums over rows into
       columns of at least `min-parallel-elements` in all (a bias's or a
       layer norm's gradient: every reduction of the fusion sums its
       leading loops), which, with the elementwise results beside them,
       take one block of columns per thread, and sums of rows of at least
       as many (a layer norm's statistics), which take their rows.
       Matmul results are split into about `threads` tiles along the batch,
       rows or columns, whichever is larger, all of one size (a multiple of
       16 where one divides the dimension, else up to four times `threads`
       equal tiles, else the other matrix dimension is split, else none): a
       partial tile would have a dynamic shape, which no BLAS call takes. Convolution tiles keep every
       output channel (they become im2col + sgemm): runs of images (or
       groups) when there are at least `threads` of them, one per thread
       unless a run's im2col data would exceed 512 KiB, then equal runs in
       a multiple of `threads`; else bands of output rows, four per thread,
       with at most 512 KiB of im2col data per band (or, for constant filters
       that run in oneDNN's blocked layout, of input and output rows, in
       whole 4-row Winograd tiles under a 3x3 window at stride 1), or
       tiles of output channels where those read less memory than the
       bands (bands the threads cannot share evenly counted as the bands
       they take the time of). A weight gradient's tile (its input
       channels the columns of one product, a column per filter tap) holds
       enough channels for 128 columns where the threads still get a tile
       each (8 channels of a 3x3 filter, 72 columns, ran at 77 GFLOP/s a
       core on Zen 4; 16, 144 columns, at 106);
    4. the body is inlined in place of the fusion.

    The `scf.forall` loops become OpenMP parallel loops in the CPU pipeline.
  }];
  let options = [
    Option<"threads", "threads", "int64_t", /*default=*/"0",
           "Threads to split contractions for (0: this machine's cores)">,
    Option<"minParallelElements", "min-parallel-elements", "int64_t",
           /*default=*/"16384",
           "Smallest kernel result, in elements, worth running on several threads">,
    Option<"innerElements", "inner-elements", "int64_t", /*default=*/"1024",
           "Trailing elements left untiled for each tile's vectorized inner loops">,
    Option<"directConvolutions", "direct-convolutions", "bool", /*default=*/"false",
           "Convolutions by constant filters of any channel count are tiled as "
           "kiln-contractions-to-blas hands them to kiln_conv2d_constant_w with the "
           "same option">
  ];
  let dependentDialects = ["mlir::scf::SCFDialect", "mlir::linalg::LinalgDialect",
                           "mlir::tensor::TensorDialect"];
}

def KilnInlineAllocaScopesPass
    : Pass<"kiln-inline-alloca-scopes", "mlir::func::FuncOp"> {
  let summary = "Inlines memref.alloca_scope bodies, bracketed by stacksave/stackrestore when they allocate";
  let description = [{
    `convert-scf-to-openmp` wraps each parallel loop body in a
    `memref.alloca_scope`, which must keep a single block; lowering the loops
    inside it to branches would break that. So each scope's body is inlined
    into its parent block here, while it is still one block. A scope that
    holds a `memref.alloca` (a kernel tile's small scratch buffers, which
    `promote-buffers-to-stack` put on the stack) is bracketed by
    `llvm.intr.stacksave` and `llvm.intr.stackrestore`, so every iteration
    releases what it allocated; a scope with no allocas needs neither.

    Before:
    ```mlir
    memref.alloca_scope {
      %row = memref.alloca() : memref<1xf32>
      scf.for %i = %c0 to %c4 step %c1 { ... }
    }
    ```
    After:
    ```mlir
    %sp = llvm.intr.stacksave : !llvm.ptr
    %row = memref.alloca() : memref<1xf32>
    scf.for %i = %c0 to %c4 step %c1 { ... }
    llvm.intr.stackrestore %sp : !llvm.ptr
    ```
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

def KilnBlockPerLoopPass : Pass<"kiln-block-per-loop", "mlir::func::FuncOp"> {
  let summary = "Ends a block of the function body after each op with regions (a loop nest)";
  let description = [{
    `convert-scf-to-cf` lowers a loop by splitting its block after it, which
    moves every op that follows into a new block: once per top-level loop
    nest, a model function of n kernels took time in n^2 there (83 s of a
    10,000-node chain's 117 s of lowering). Splitting the body once, from
    the last loop back to the first, so that each region-holding op is
    followed only by a branch, makes every later split move one op.

    The blocks form a chain, each the only predecessor of the next, so every
    value still dominates its uses and no block arguments are needed; LLVM
    merges the chain back while it optimizes.

    Before:
    ```mlir
    scf.for %i = %c0 to %c4 step %c1 { ... }
    memref.copy %a, %b : memref<4xf32> to memref<4xf32>
    scf.for %j = %c0 to %c4 step %c1 { ... }
    return
    ```
    After:
    ```mlir
      scf.for %i = %c0 to %c4 step %c1 { ... }
      cf.br ^bb1
    ^bb1:
      memref.copy %a, %b : memref<4xf32> to memref<4xf32>
      scf.for %j = %c0 to %c4 step %c1 { ... }
      cf.br ^bb2
    ^bb2:
      return
    ```
  }];
  let dependentDialects = ["mlir::cf::ControlFlowDialect"];
}

def KilnPrefetchNextTilePass
    : Pass<"kiln-prefetch-next-tile", "mlir::func::FuncOp"> {
  let summary = "Has each CPU kernel fetch its next tile's inputs while it computes the current one";
  let description = [{
    A kernel's parallel loop (`scf.parallel`, later an OpenMP loop with a
    static schedule) gives each thread consecutive tiles. A row tile is often
    one 4 KiB page, and the hardware prefetchers stop at page boundaries, so
    each tile would begin with a run of cache misses (on softmax over
    4096x1024, a third of the kernel's time). This pass picks, in each
    kernel, the elementwise innermost loop with the most operations that
    reads a tile of a kernel operand, and strip-mines it: every strip of four
    cache lines first prefetches (into L1, for reading) the same lines of the
    next tile of each operand it reads, then runs its iterations.

    Preconditions, checked per loop (otherwise the kernel is left alone):
    the loop runs from 0 to a constant multiple of a strip (or of a line) in
    steps of 1 and carries no values; each store indexes its innermost
    dimension with the loop (a reduction's loop would be reduced across
    vector lanes once per strip); the prefetched view is built inside the
    kernel, from its induction variable, by side-effect-free ops over a
    buffer from outside it, is contiguous in its innermost dimension and
    holds at most `max-tile-bytes` (a larger tile would evict itself from L1
    before use). At most four views per loop are prefetched. The next tile of
    the last iteration is the tile itself.

    Before:
    ```mlir
    scf.parallel (%row) = (%c0) to (%c4096) step (%c1) {
      %x = memref.subview %in[%row, 0] [1, 1024] [1, 1] : ...
      scf.for %j = %c0 to %c1024 step %c1 {
        %v = memref.load %x[%c0, %j] : ...
        ...
      }
    }
    ```
    After:
    ```mlir
    scf.parallel (%row) = (%c0) to (%c4096) step (%c1) {
      %x = memref.subview %in[%row, 0] [1, 1024] [1, 1] : ...
      %next = ... %row + 1, or %row on the last row
      %x_next = memref.subview %in[%next, 0] [1, 1024] [1, 1] : ...
      scf.for %j0 = %c0 to %c1024 step %c64 {
        memref.prefetch %x_next[%c0, %j0], read, locality<3>, data : ...
        ... three more, 16 elements apart
        scf.for %j = %j0 to %j0 + 64 step %c1 {
          %v = memref.load %x[%c0, %j] : ...
          ...
        }
      }
    }
    ```
  }];
  let options = [
    Option<"maxTileBytes", "max-tile-bytes", "int64_t", /*default=*/"16384",
           "Largest tile (of one view, in bytes) whose successor is prefetched">
  ];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect"];
}

def KilnProfileKernelsPass : Pass<"kiln-profile-kernels", "mlir::ModuleOp"> {
  let summary = "Times each kernel of the CPU code (kilnc --profile)";
  let description = [{
    Brackets every kernel at the top level of a public function with two
    reads of `CLOCK_MONOTONIC` (`clock_gettime`) and adds the nanoseconds
    between them, and one call, to the kernel's counters in the module's
    `kiln_kernel_profile` global: `memref<(2 x kernels)xi64>`, zero at
    load, time at `2 * id` and calls at `2 * id + 1`. Ids run over the
    public functions in order. A kernel is a top-level op that computes:
    a parallel loop over tiles (`scf.forall`, `scf.parallel`), a loop nest
    or `linalg` op left serial, a `memref.copy` or a `func.call`; views,
    allocations and constants are not timed. The module's
    `kiln.kernel_profile` attribute lists the kernels in id order as
    `[function, kind, ONNX nodes]`, the kind being `parallel`, `serial`,
    `copy` or `call` and the nodes those named by the locations of the ops
    it holds (three at most, then how many more). kilnc writes that list
    into the artifact's manifest and `kiln-run --profile` prints the
    counters against it. Runs after bufferization and before the parallel
    loops are lowered, while kernels are still the functions' top-level ops.

    Before:
    ```mlir
    func.func @main(%x: memref<64xf32>, %y: memref<64xf32>) {
      scf.forall (%i) in (2) { ... }
      return
    }
    ```
    After:
    ```mlir
    memref.global @kiln_kernel_profile : memref<2xi64> = dense<0>
    func.func private @clock_gettime(i32, memref<2xi64>) -> i32
    func.func @main(%x: memref<64xf32>, %y: memref<64xf32>) {
      %ts = memref.alloca() : memref<2xi64>
      ... call @clock_gettime(%c1_i32, %ts), start = s * 1e9 + ns
      scf.forall (%i) in (2) { ... }
      ... call @clock_gettime(%c1_i32, %ts), add now - start and 1
      return
    }
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::func::FuncDialect",
                           "mlir::memref::MemRefDialect"];
}

def KilnHoistInvariantLoadsPass
    : Pass<"kiln-hoist-invariant-loads", "mlir::func::FuncOp"> {
  let summary = "Moves loads of one address out of the loops that read it in every iteration";
  let description = [{
    A loop over a row reads the row's statistics (a layer norm's mean and
    reciprocal deviation, a softmax's maximum, a per-channel scale) at the
    same address in every iteration. LLVM hoists such a load only when it
    can prove that no store of the loop writes that address, and it cannot
    tell two views of the static arena, or a result passed in by the
    caller, apart; its vectorizer then leaves the loop scalar ("unknown
    data dependence").

    Kiln can: a buffer is a function argument (no two overlap), a global,
    an allocation, or a planned byte range of the arena (`memref.view` at a
    constant offset), which overlaps another buffer live at the same kernel
    only where an elementwise kernel reuses an input in place, and then at
    the same range. This pass moves a `memref.load` whose memref and indices
    are defined outside its `scf.for` in front of the loop when the loop
    runs at least once (constant bounds) and nothing it writes may overlap
    the loaded buffer. A loop with a write it cannot place (a call, an op
    without memory effects declared) is left alone. Loops are visited
    innermost first, so a load can leave a whole nest.

    Before:

    ```mlir
    scf.for %j = %c0 to %c256 step %c1 {
      %x = memref.load %row[%c0, %j] : memref<1x256xf32, strided<[256, 1], offset: ?>>
      %m = memref.load %mean[%c0] : memref<1xf32, strided<[1], offset: ?>>
      %d = arith.subf %x, %m : f32
      memref.store %d, %out[%c0, %j] : memref<1x256xf32, strided<[256, 1], offset: ?>>
    }
    ```

    After:

    ```mlir
    %m = memref.load %mean[%c0] : memref<1xf32, strided<[1], offset: ?>>
    scf.for %j = %c0 to %c256 step %c1 {
      %x = memref.load %row[%c0, %j] : memref<1x256xf32, strided<[256, 1], offset: ?>>
      %d = arith.subf %x, %m : f32
      memref.store %d, %out[%c0, %j] : memref<1x256xf32, strided<[256, 1], offset: ?>>
    }
    ```
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
}

def KilnVectorizableMathPass
    : Pass<"kiln-vectorizable-math", "mlir::func::FuncOp"> {
  let summary = "Makes kernels' inner loops vectorizable: polynomial math, reassociable sums";
  let description = [{
    LLVM vectorizes a loop only when every operation in it has a vector form.
    This pass removes the two obstacles Kiln's kernels meet:

    * `expm1`, `log`, `log1p`, `log2` and `tanh` on f32 would be calls
      into libm; they become MLIR's polynomial approximations (Cephes-style,
      within a few ulp), plain arithmetic that vectorizes. `exp` on f32
      becomes Kiln's shorter form: `2^floor(x/ln2)` added to the exponent
      bits of a degree-6 polynomial of the remainder (at most 1.5 ulp on 2M
      points against libm, where MLIR's reached 5; 0 below ln(FLT_MIN), +inf
      above ln(FLT_MAX), NaN kept; about 17 vector instructions instead of
      25). With `ldexp` (kilnc sets it for CPUs with AVX-512) the result is
      scaled by `llvm.ldexp`, one `vscalefps` that over- and underflows
      correctly by itself (subnormal results too): k rounded to nearest, a
      degree-5 polynomial (at most 2.2 ulp), 13 vector instructions.
      `erf` on f32 becomes Kiln's rational approximation `x * P(x^2) /
      Q(x^2)` on [-4, 4] and +-1 beyond 3.95 (at most 6 ulp, mean under 1
      ulp, measured against libm on 2M points; about 20 vector instructions,
      less than half of MLIR's three-interval form; GELU 35 % faster);
      `powf` by a constant 2, 3 or 4 becomes multiplications (`x * x * x`,
      within an ulp or two of libm's scalar `powf`; GPT-2's GELU cubes);
    * floating-point additions, multiplications, maxima and minima get the
      `reassoc` and `contract` fast-math flags, so a sum along a row may be
      computed in vector lanes and multiply-adds fuse into FMA. Results may
      differ from sequential order in the last bits, as in every
      vectorizing ML compiler. NaN and infinity semantics are kept;
    * f32/f64 `maximumf` and `minimumf` become `llvm.intr.maximum` and
      `llvm.intr.minimum` (same NaN semantics): `arith-expand` would turn
      them into compare-and-select chains, which LLVM does not recognize as
      max reductions.

    Before:
    ```mlir
    %e = math.exp %x : f32
    %s = arith.addf %acc, %e : f32
    ```
    After:
    ```mlir
    // ... a polynomial in arith ops ...
    %s = arith.addf %acc, %e fastmath<reassoc,contract> : f32
    ```
  }];
  let options = [
    Option<"ldexp", "ldexp", "bool", /*default=*/"false",
           "Scale exp's result with llvm.ldexp: for targets where that is one vector "
           "instruction (x86 with AVX-512); elsewhere it would be a libm call">
  ];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::LLVM::LLVMDialect",
                           "mlir::math::MathDialect", "mlir::vector::VectorDialect"];
}

def KilnContractionsToBlasPass
    : Pass<"kiln-contractions-to-blas", "mlir::ModuleOp"> {
  let summary = "Calls a tuned BLAS sgemm for f32 matrix products and convolutions on buffers";
  let description = [{
    Replaces each `linalg.generic` that computes `C += A x B` on f32 buffers
    (loops `batch..., m, n, k`; A indexed `[batch..., m, k]`, B
    `[batch..., k, n]`, either possibly without the batch dimensions) by a
    call to an sgemm per batch element, with leading dimensions taken from
    the buffers' strides, so tiles of larger matrices (the subviews a
    kernel's parallel loop hands each thread) are multiplied in place.
    Operands whose innermost stride is not 1 keep the generated loops.

    `library` picks the sgemm: `onednn` (default) calls oneDNN's
    `dnnl_sgemm` (Debian's `libdnnl`), `openblas` calls `cblas_sgemm`
    (`libopenblas0`); the artifact links the one it calls. Kiln owns the
    threads: kernels split matmuls into per-thread tiles, and each call runs
    on its tile's thread. oneDNN's OpenMP calls are served by the LLVM
    OpenMP runtime that the kernels use (it comes first in the artifact's
    libraries), so oneDNN sees it runs inside a parallel region and stays on
    one thread; for OpenBLAS the function first sets one thread
    (`openblas_set_num_threads(1)`). On bench/'s graphs oneDNN was 7-35 %
    faster.

    A direct convolution (Kiln's lowering: `out[batch.., f, oh, ow] +=
    image[batch.., c, oh * s + kh * d, ow * s + kw * d] * filter[.., f, c,
    kh, kw]`, with dimensions of size one possibly folded away) becomes an
    im2col copy into a fresh `[batch.., c, kh, kw, oh, ow]` buffer (a
    `linalg.generic`, later vectorized loops) and one `cblas_sgemm` per batch
    element: `out[f, oh * ow] += filter[f, c * kh * kw] x col[c * kh * kw, oh
    * ow]`. This needs the filter's window and the output's spatial
    dimensions to be dense; otherwise the convolution keeps its loops.
    Batch elements with few positions each (a weight gradient: one per
    input channel, a position per filter tap) are the columns of one
    product instead, summed back into the output; a channel-first output
    `out[f, batch.., kh, kw]` (the weight gradient in the filter's layout)
    is that product itself and is accumulated in place. Where its im2col
    buffer holds each column's window as a row (read transposed), a
    reduction deeper than 800 is split into calls of at most 800 that
    accumulate (oneDNN's sgemm with B transposed ran 15-30 % slower past
    that depth on Zen 4; at N it does not). When such a tile is
    followed by an optimizer's `w - lr * g` into the step's output, the
    output starts as `w` and the products add `-lr` times the gradient, as
    for a dense layer's weight gradient.

    Kiln owns the threads: kernels split matmuls into per-thread tiles, so
    the function first sets the library to one thread
    (`openblas_set_num_threads(1)`); OpenBLAS (Debian's `libopenblas0`) is
    then linked into the artifact.

    Before:
    ```mlir
    linalg.generic {indexing_maps = [(m, n, k) -> (m, k), (m, n, k) -> (k, n), (m, n, k) -> (m, n)], ...}
        ins(%a, %b : memref<64x784xf32>, memref<784x1024xf32>) outs(%c : memref<64x1024xf32>)
    ```
    After:
    ```mlir
    func.call @dnnl_sgemm(%n, %n, %c64, %c1024, %c784, %one,
                          %pa, %c784, %pb, %c1024, %one, %pc, %c1024) : (...) -> i32
    ```
    An unknown `library` is an error.

    With `constant-b`, a product without batch dimensions whose B is a
    constant global (a layer's weights, or a tile of them) calls
    `kiln_matmul_constant_b` instead (runtime/kernels/PackedMatmul.c, an
    archive kilnc links into the artifact): a oneDNN matmul primitive per
    call site, B reordered once per tile into the primitive's blocked layout
    on the first run rather than repacked by every `dnnl_sgemm` call
    (MLP layers of batch 64: 15 % faster). Each call site gets a private,
    zeroed 8-byte global for its state:
    ```mlir
    memref.global "private" @kiln_kernel_site : memref<1xi64> = dense<0>
    func.call @kiln_matmul_constant_b(%site, %c64, %c1024, %c784, %pa, %c784_i64,
                                      %pb, %c1024_i64, %pc, %c1024_i64) : (...) -> ()
    ```
    Also with `constant-b`, a 3x3 convolution at stride 1 by constant filters
    with at least 32 input and output channels, in whole blocks of 16, and
    at least 2^20 multiply-adds per image (or band of rows) calls
    `kiln_conv2d_constant_w` (runtime/kernels/PackedConvolution.c) instead of
    im2col and sgemm: oneDNN's Winograd F(4x4, 3x3) in its blocked layout,
    filters transformed once, the band reordered in and the result added back
    into the output, which holds the bias (a ResNet 64-channel block: 1.6x).
    Its arguments: the site, the shape (c, ih, iw, f, kh, kw, oh, ow), the
    strides and dilations, the input and its channel and row strides, the
    filters, the output and its channel and row strides.

    A depthwise convolution tile (one channel per group, a 2-D window, any
    strides and dilations; filters constant or not) calls
    `kiln_depthwise_conv2d` (runtime/kernels/DepthwiseConvolution.c, in the
    same archive) once per image with all the tile's groups: vectorized
    along the output rows (a strided row split into planes of every s-th
    column first, narrow rows read as one run over the padded width), with
    the widest vectors the running CPU has. Its arguments: groups, kh, kw,
    oh, ow, the strides and dilations, the input and its channel and row
    strides, rows and columns, the row and column at which it starts in the
    padded image the window reads, the filters (dense, [groups][kh][kw]),
    the bias (or null), whether the output starts from the bias (else the
    kernel adds to it), clamp bounds (-inf and inf for none), the output
    and its channel and row strides.

    The call takes over the tile's neighbours that it can do one channel at
    a time while the channel is in cache, each only when the result stays
    the same: the image's copy into a zero-filled buffer (padding), the op
    that starts the output from the bias or zero, and, when the output is a
    scratch buffer of the tile's own, an epilogue that clamps it into the
    destination (`arith.maximumf` then `arith.minimumf` by constants: ReLU,
    ReLU6). One 3x3 layer of 144 channels at 28x28, one thread: 0.104 ms
    (0.67x ONNX Runtime) before, 0.076 ms after.
  }];
  let options = [
    Option<"library", "library", "std::string", /*default=*/"\"onednn\"",
           "The sgemm to call: 'onednn' (dnnl_sgemm) or 'openblas' (cblas_sgemm)">,
    Option<"constantB", "constant-b", "bool", /*default=*/"false",
           "Products and 3x3 convolutions by constant weights call "
           "kiln_matmul_constant_b and kiln_conv2d_constant_w (oneDNN, weights "
           "packed once); needs library=onednn and kilnc's kernel archive">,
    Option<"directConvolutions", "direct-convolutions", "bool", /*default=*/"false",
           "Convolutions by constant filters of any channel count (an RGB stem's 3) "
           "call kiln_conv2d_constant_w too, for its direct kernel on targets with AVX2 "
           "and FMA but not AVX-512; needs constant-b">
  ];
  let dependentDialects = ["mlir::affine::AffineDialect", "mlir::func::FuncDialect",
                           "mlir::LLVM::LLVMDialect", "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect"];
}

def KilnOrderConstantsPass : Pass<"kiln-order-constants", "mlir::ModuleOp"> {
  let summary = "Orders and names constant globals by their first use, so builds are reproducible";
  let description = [{
    One-shot bufferization creates a `memref.global` for each constant
    tensor, in an order that follows its internal order of functions, which
    is not stable from one run to the next: the same model compiled twice
    gave artifacts with their constants laid out differently, and globals of
    the same type could swap their uniquing suffixes.

    This pass moves the module's constant globals to its start in the order
    of their first `memref.get_global` (functions in module order, operations
    in order; unused ones last, in their present order), and renames each to
    its name without a uniquing suffix, suffixed `_1`, `_2`, ... in that
    order when several share it.

    Before:
    ```mlir
    memref.global "private" constant @__constant_4xf32_0 : memref<4xf32> = dense<2.0>
    memref.global "private" constant @__constant_4xf32 : memref<4xf32> = dense<1.0>
    func.func @main() {
      %a = memref.get_global @__constant_4xf32 : memref<4xf32>
      %b = memref.get_global @__constant_4xf32_0 : memref<4xf32>
    ```
    After:
    ```mlir
    memref.global "private" constant @__constant_4xf32 : memref<4xf32> = dense<1.0>
    memref.global "private" constant @__constant_4xf32_1 : memref<4xf32> = dense<2.0>
    func.func @main() {
      %a = memref.get_global @__constant_4xf32 : memref<4xf32>
      %b = memref.get_global @__constant_4xf32_1 : memref<4xf32>
    ```
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect"];
}

def KilnStaticArenaPass : Pass<"kiln-static-arena", "mlir::ModuleOp"> {
  let summary = "Makes each function's buffer arena a static global, allocated once";
  let description = [{
    Replaces every `memref.alloc` marked `kiln.arena` (the arena of
    `kiln-plan-buffers`) with a `memref.get_global` of a private,
    uninitialized, 64-byte-aligned `memref.global` of the same size, one per
    function (`__kiln_arena_<function>`).

    An arena allocated per call is a fresh mapping for any sizable model:
    every run then faults in and zeroes its pages again, a quarter of a
    LeNet train step's time on two cores. A static arena is mapped once and
    stays resident between runs, as an inference server's arena does. It
    makes the function non-reentrant, which the runtime already assumes:
    calls on one artifact are serialized, and each entry function has its
    own arena.

    A byte arena's global is longer than the arena by a tail of pages (as
    many bytes as the arena, in whole pages, at most 1 MiB), which the
    function's first call faults in, one store of zero per page, guarded by
    a flag global (`<arena>_tail_ready`). Nothing is kept in the tail: it is
    there for prefetches past the arena's last buffer. oneDNN's AVX2 sgemm
    prefetches about 16 rows of B past the product's last; where those
    addresses were never touched, each prefetch is a failed page walk, and
    ResNet-50's 1x1 convolutions on the arena's last image ran 2.5x slower
    on a Zen 1 core (3.7 against 2.0 ms each).

    Runs after `kiln-plan-buffers` and before `buffer-deallocation-pipeline`,
    which leaves globals alone.

    Before:
    ```mlir
    %arena = memref.alloc() {alignment = 64 : i64, kiln.arena} : memref<4096xi8>
    ```
    After:
    ```mlir
    memref.global "private" @__kiln_arena_main : memref<8192xi8> = uninitialized {alignment = 64 : i64}
    memref.global "private" @__kiln_arena_main_tail_ready : memref<1xi8> = dense<0>
    ...
    %whole = memref.get_global @__kiln_arena_main : memref<8192xi8>
    %ready = memref.get_global @__kiln_arena_main_tail_ready : memref<1xi8>
    scf.if %first_call {
      scf.for %page = %c4096 to %c8192 step %c4096 {
        memref.store %c0_i8, %whole[%page] : memref<8192xi8>
      }
      memref.store %c1_i8, %ready[%c0] : memref<1xi8>
    }
    %arena = memref.view %whole[%c0][] : memref<8192xi8> to memref<4096xi8>
    ```
  }];
  let dependentDialects = ["mlir::arith::ArithDialect", "mlir::memref::MemRefDialect",
                           "mlir::scf::SCFDialect"];
}

def KilnPlanBuffersPass : Pass<"kiln-plan-buffers", "mlir::func::FuncOp"> {
  let summary = "Places a function's intermediate buffers in one arena by liveness";
  let description = [{
    Replaces the function's statically shaped intermediate allocations with
    views of one 64-byte-aligned arena, so that buffers never live at the same
    time share memory and the function makes one allocation instead of one
    per buffer.

    Preconditions: runs after bufferization and `buffer-results-to-out-params`
    and before `buffer-deallocation-pipeline`, so the function holds
    `memref.alloc`s but no `memref.dealloc`s; the deallocation pipeline then
    frees the arena like any other allocation.

    1. Candidates are the `memref.alloc`s in the entry block with a static
       shape, the identity layout, the default memory space, an integer,
       float or index element type and an alignment of at most 64 bytes. A
       buffer takes its element count times its element's storage size, as
       `finalize-memref-to-llvm` allocates it (`i1` takes one byte). Allocs
       nested in loops and other regions are left alone.
    2. A buffer is live, in positions of the entry block's ops, from its alloc
       to the last op that uses it or a view of it (the results of
       `ViewLikeOpInterface` ops such as `memref.subview`, `collapse_shape`,
       `expand_shape`, `reinterpret_cast`, `cast` and `view`, and of
       `memref.transpose`, followed transitively). A use nested in a region
       (an `scf.for` body) counts at the op in the entry block that holds it.
       An op the pass does not know counts as a use. A buffer that escapes
       is not planned: one returned or yielded by a terminator, passed to a
       call, stored into memory, freed, forwarded into a region (`scf.for`
       iteration arguments), turned into an address or into a value of a
       non-scalar type, or used outside the entry block.
    3. Offsets are assigned greedily by size, as in TFLite's arena planner:
       largest buffer first, each at the lowest 64-byte-aligned offset that
       does not overlap a placed buffer whose live range intersects its own.
       The arena is as large as the highest end offset.

       In-place reuse: when the first op to use a buffer `B` is a
       `linalg.generic` with identity indexing maps and only parallel
       iterators that writes `B` (as its only occurrence among the operands)
       and reads a buffer `A` (directly or through `collapse_shape` /
       `expand_shape`) whose last use it is, and `A` and `B` have the same
       byte size, then `B` takes `A`'s exact offset: each iteration reads an
       element of `A` before writing the element of `B` at the same address,
       and no other iteration reads it. So the generic must neither write `A`
       (through any view) nor read it through another view (a subview or
       transpose would read elements other iterations overwrite). The two
       live ranges are treated as touching, not overlapping; a chain of such
       buffers shares one slot, and each buffer gives its slot to at most
       one other.
    4. The arena is allocated at the start of the entry block (only when a
       buffer was planned), marked `kiln.arena` for `kiln-static-arena`, and
       every planned alloc becomes a `memref.view` of it at a constant byte
       offset.

    The function gets three attributes, which kilnc reports:
    `kiln.peak_intermediate_bytes` (the arena's size, 0 when nothing was
    planned), `kiln.intermediate_buffers` (planned buffers) and
    `kiln.unplanned_buffers` (static entry-block allocs left as they were).

    Before:
    ```mlir
    func.func @f(%in: memref<16xf32>, %out: memref<16xf32>) {
      %a = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
      linalg.exp ins(%in : memref<16xf32>) outs(%a : memref<16xf32>)
      %b = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
      linalg.abs ins(%a : memref<16xf32>) outs(%b : memref<16xf32>)
      linalg.exp ins(%b : memref<16xf32>) outs(%out : memref<16xf32>)
      return
    }
    ```
    After (`%a` and `%b` are both live at `linalg.abs`):
    ```mlir
    func.func @f(%in: memref<16xf32>, %out: memref<16xf32>)
        attributes {kiln.intermediate_buffers = 2 : i64,
                    kiln.peak_intermediate_bytes = 128 : i64,
                    kiln.unplanned_buffers = 0 : i64} {
      %arena = memref.alloc() {alignment = 64 : i64} : memref<128xi8>
      %c0 = arith.constant 0 : index
      %c64 = arith.constant 64 : index
      %a = memref.view %arena[%c0][] : memref<128xi8> to memref<16xf32>
      linalg.exp ins(%in : memref<16xf32>) outs(%a : memref<16xf32>)
      %b = memref.view %arena[%c64][] : memref<128xi8> to memref<16xf32>
      linalg.abs ins(%a : memref<16xf32>) outs(%b : memref<16xf32>)
      linalg.exp ins(%b : memref<16xf32>) outs(%out : memref<16xf32>)
      return
    }
    ```
  }];
  let dependentDialects = ["mlir::memref::MemRefDialect", "mlir::arith::ArithDialect"];
}


//===----------------------------------------------------------------------===//
// GPU
//===----------------------------------------------------------------------===//

def KilnGpuFormKernelsPass : Pass<"kiln-gpu-form-kernels", "mlir::ModuleOp"> {
  let summary = "Turns each kiln.fusion of linalg ops into GPU kernels and their launches";
  let description = [{
    Runs after `kiln-lower-to-linalg`, when `@main` holds `kiln.fusion` ops
    whose bodies are linalg ops on tensors. Each fusion becomes one kernel
    (a `gpu.func` in `gpu.module @kiln_kernels`) and a `kiln_gpu.launch` in
    `@main`, so that `@main` ends up a straight line of launches, constants
    and reshapes on tensors, which the host program's buffer plan reads.

    Every kernel computes its results element by element (see
    `codegen/GPU/Elemental.h`): an element of a linalg result is its payload
    applied to its operands' elements at the indices its indexing maps give;
    reshapes, slices, pads and concatenations only change which element is
    read; reductions that are not computed cooperatively run as loops in the
    thread that needs them. The schedule decides which elements each thread
    computes:

    * loop kernels (the default): each thread computes `lanes` consecutive elements of the
      result (4 for 32-bit types when the innermost dimension allows it, so
      contiguous operands move as 128-bit vector loads and the result as
      128-bit stores), in a grid-stride loop over the result; blocks of
      256 threads, at most `max-blocks-per-sm` blocks per multiprocessor of
      the target. When each thread has at least 4 groups to do, a trip
      around the loop takes 4 of them one grid apart and stores them after
      computing all four, so their loads are in flight together. Results of
      one fusion with the same shape share a loop (sibling fusion); results
      of other shapes share the kernel side by side, each shape with a range
      of the grid's blocks and a loop of its own.
    * row kernels, for fusions whose reductions all reduce the trailing
      dimensions (columns) of one iteration space and combine with an
      associative operation (sum, product, max, min, and, or, xor; f32 or
      i32), and whose results are whole rows or one value per row: softmax,
      layer normalization, row sums. A power-of-two group of threads owns
      each row: a few lanes of a warp for short rows (several rows per
      block of 256), a warp for rows of up to 1024 32-bit values, a block
      of up to 1024 threads (about 4 chunks each) beyond. Each thread reads
      chunks of 4 consecutive elements, t, t + T, ...; for each reduction in
      turn it combines its chunks, the group combines with `gpu.shuffle xor`
      and, across warps, through one shared-memory buffer per reduction
      after a barrier, so every thread holds the row's value; the results
      are then computed and stored. With at most 8 chunks per thread the
      chunks are unrolled and what the thread computed from its row stays
      in registers between phases (each input read once, each exponential
      computed once); longer rows loop over their chunks in every phase.
      Lanes past a row's end count the identity, and groups past the last
      row redo the last row without storing (every lane of a warp takes part
      in its shuffles). A reduction's own init (a fill or a tensor) is
      combined with the row's value at the end.
    * two-step reductions, where one kernel would leave most of the GPU
      idle: a result that reduces into fewer than 8,192 values at least
      32 elements each (a bias's gradient: one sum over batch and pixels
      per channel, or over the rows of a matrix per column), which a loop
      kernel would give a thread per value, or into fewer than 64 values at
      least 65,536 each (a whole weight's sum of squares), which a row
      kernel would give a block per value. Its outer reduced loops become
      parallel loops of partial results (until there are at least 2,048
      partials, or one more would leave fewer than 16 elements to each);
      where no whole loop can (one long loop of rows), the outermost reduced
      loop is cut in two, its outer part parallel (up to 16,384 partials,
      each a sum of at least 4), and the operands read it through a view
      with that dimension in two. The partials are computed first by a row
      kernel where the remaining reduced loops trail, else a loop kernel; a
      second reduction with the same combiner sums them into the
      reduction's own init, and is split again while it sums at least 256
      partials into each value.

    * library products (`library-gemm`, on by default): a fusion with one
      matrix product (loops batch.., m, n, k) or convolution of f32, f16 or
      bf16 gets a `kiln_gpu.matmul` (cuBLASLt). Operands are viewed as
      [batch, rows, columns]; an operand that is a transpose of its last
      two dimensions is read transposed instead of copied; an operand
      computed in the fusion is materialized by a loop kernel first. Along
      the chain of single-use elementwise ops after the product, a scale, a
      bias along the columns, an addend of the result's shape (a residual),
      a subtraction from a tensor of the result's shape (an SGD step on a
      weight: alpha negated, the weight the addend) and a ReLU fold into the
      library's epilogue; whatever follows is a loop
      kernel reading the product. A product that accumulates onto a tensor
      computed in the fusion (a convolution's broadcast bias) is split into
      a product from zero and an elementwise add in that kernel. A
      convolution becomes an im2col kernel ([batch.., window.., spatial..],
      the image read through the convolution's own indexing map, padding
      included) and one product per image (or per group): filter
      [f, window] times columns [window, spatial]; when there are both
      several images and several groups, it stays a direct kernel. When the
      filter is the same for every batch element and the products would be
      too few and small to fill the chip over a long window (a weight
      gradient, one product per input channel), it is one product instead,
      the im2col matrix [window, batch x spatial] holding the batch among its
      columns, and a kernel transposes the result. Integer products stay
      generated. A single product into at most a quarter of the
      multiprocessors' worth of 64 x 64 output tiles over a k of at least
      4,096 (a convolution's weight gradient: 6 x 25 outputs over
      k = 50,176) is split along k (split-K): a batch of products over
      parts of at least 256 of k, about one per multiprocessor (128 of 392
      there), into partials that a loop kernel sums in a fixed order, with
      the epilogue (so split runs stay reproducible bit for bit).
    In every kernel, a division by a constant is a multiplication by its
    rounded reciprocal (within one ulp of the division, as in XLA): a
    correctly rounded division costs about ten instructions on a GPU.

    Loop fusions whose results only the function's return reads (a train
    step's update of each parameter and optimizer slot) are merged first
    into one loop fusion before the return (horizontal fusion), so the
    updates are one kernel rather than a launch per parameter; a merged
    kernel takes at most 384 buffers, within every driver's 4 KB of launch
    arguments.

    Fusion results that are reshapes of a fusion input, or constants, become
    reshapes and constants in `@main`: no kernel copies them. Constant
    tensors inside a fusion move to `@main` and reach the kernel as
    parameters. Named linalg ops are generalized first.

    Before:
    ```mlir
    %y = kiln.fusion loop(%x) : (tensor<1024xf32>) -> tensor<1024xf32> {
    ^bb0(%a: tensor<1024xf32>):
      %e = tensor.empty() : tensor<1024xf32>
      %r = linalg.generic {...} ins(%a : tensor<1024xf32>) outs(%e : tensor<1024xf32>) {
      ^bb0(%in: f32, %out: f32):
        %m = arith.maximumf %in, %zero : f32
        linalg.yield %m : f32
      } -> tensor<1024xf32>
      kiln.yield %r : tensor<1024xf32>
    }
    ```
    After:
    ```mlir
    %y = kiln_gpu.launch @kiln_kernels::@kiln_k0 grid [1, 1, 1] block [256, 1, 1]
        (%x) : (tensor<1024xf32>) -> tensor<1024xf32>
    gpu.module @kiln_kernels {
      gpu.func @kiln_k0(%in: memref<1024xf32>, %out: memref<1024xf32>) kernel {
        // for each of this thread's groups of 4: vector load, 4 maxima, vector store
      }
    }
    ```
    An op with no elemental form is an error at its location (its ONNX node).
  }];
  let options = [
    Option<"chip", "chip", "std::string", /*default=*/"\"sm_90\"",
           "The GPU the kernels are shaped for (sm_80, sm_90, ...): multiprocessor count, limits">,
    Option<"maxBlocksPerSM", "max-blocks-per-sm", "int64_t", /*default=*/"8",
           "Grid-stride loop kernels launch at most this many blocks per multiprocessor">,
    Option<"libraryGemm", "library-gemm", "bool", /*default=*/"true",
           "Compute matrix products and convolutions with the vendor library (cuBLASLt); "
           "off: generated kernels only">,
    Option<"allowTf32", "allow-tf32", "bool", /*default=*/"false",
           "Let f32 library matrix products use TF32 tensor cores (about 10 bits of "
           "mantissa in the products)">
  ];
  let dependentDialects = [
    "mlir::arith::ArithDialect", "mlir::gpu::GPUDialect", "mlir::memref::MemRefDialect",
    "mlir::scf::SCFDialect", "mlir::vector::VectorDialect", "kiln::kgpu::KilnGpuDialect"
  ];
}

#endif // KILN_CODEGEN_PASSES_TD
