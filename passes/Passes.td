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

def KilnDecomposePass : Pass<"kiln-decompose", "mlir::func::FuncOp"> {
  let summary = "Rewrites composite kiln ops into elementwise ops and plain reductions";
  let description = [{
    Softmax and log-softmax become a max reduction, a subtraction, an
    exponential, a sum and a division; layer and batch normalization (a
    train step's `kiln.batch_norm_training`, once differentiated, too)
    become reductions and broadcasts; Gemm becomes transposes, a matmul and an
    epilogue of scaling and bias; mean, L2, log-sum and log-sum-exp
    reductions become sums and elementwise math; squeeze, unsqueeze and
    flatten become reshapes. Arithmetic on f16 and bf16 is computed in f32
    and rounded once. Fusion then sees only the primitive ops, so a softmax
    written by an exporter as five ONNX nodes and one written as a Softmax
    node fuse the same way.

    Before:
    ```mlir
    %y = kiln.softmax %x {axis = 1 : i64} : tensor<2x8xf32>
    ```
    After:
    ```mlir
    %m = kiln.reduce_max %x {axes = [1], keepdims = true} : (tensor<2x8xf32>) -> tensor<2x1xf32>
    %s = kiln.sub %x, %m : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
    %e = kiln.exp %s : tensor<2x8xf32>
    %t = kiln.reduce_sum %e {axes = [1], keepdims = true} : (tensor<2x8xf32>) -> tensor<2x1xf32>
    %y = kiln.div %e, %t : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
    ```
  }];
}

def KilnBlockedLayoutPass : Pass<"kiln-blocked-layout", "mlir::func::FuncOp"> {
  let summary = "Keeps images in blocks of channels between convolutions";
  let description = [{
    Rewrites each convolution by constant filters (or by computed ones
    where Winograd pays, see below) whose input and output
    channels fill blocks of `block` channels (one group, or depthwise) into
    a `kiln.blocked_conv`, which takes and gives its image as
    `N x C/B x H x W x B`, `B = block`: one vector of channels per pixel,
    16 on AVX-512 (oneDNN's `nChw16c`) and 8 on AVX2 (`nChw8c`); kilnc
    picks the target's. Channels that are not a multiple of the block (24
    or 40 in blocks of 16, 20 in blocks of 8) qualify when zeros padding the last block add at most half again the
    work. In blocks of 8, a SiLU (`x * sigmoid(x)`, whose sigmoid and
    product are the convolution's only users) or a HardSwish after the
    convolution becomes its `activation`; then a Relu, or a Clip's max and
    min by constants, that is the only user becomes its clamp.

    A convolution is rewritten only where the layout pays for its
    reorders: its input has a blocked form already, or its result reaches,
    directly or through elementwise ops, another convolution that can take
    it blocked, or its window is taller than it is wide (a 7x1: the NCHW
    kernels' bands of rows would each read its extra rows again), or its
    window is larger than 1x1 at a stride (the NCHW kernels' tiles of
    output channels would each reorder the whole image), or, in blocks of
    8, it is at stride 1, of one group, undilated and of at least 16 input
    channels, and either a 3x3 (Kiln's Winograd kernel takes it, 2.8-3.1x
    faster than the NCHW kernels' direct one at 51x51 outputs) or of at
    least 2^23 multiply-adds (on Zen 1 the NCHW kernels, sgemm over bands of
    rows read in place for a 1x1 and a direct kernel for larger windows,
    ran 1.1-3.1x slower than oneDNN's blocked primitive and both reorders on
    such 1x1 and 5x5 convolutions). Any other one
    alone between NCHW images stays as it is. A convolution of an image
    with fewer channels than a block (an RGB stem), one group, is always
    rewritten: it reads the NCHW image as it is, and the NCHW kernels would
    compute it as a product only `C x kh x kw` deep (147 for ResNet's 7x7
    stem), slower than oneDNN's kernel and a reorder of its result.

    Filters that are not constants (a train step's weights, or their
    transpose for the input's gradient) are transformed again on every
    call. A convolution by them is rewritten when it is a 3x3 at stride 1,
    undilated, of one group and at least 16 input channels, with at least
    16 output tiles of 4x4 over the batch, for the runtime's Winograd
    kernel, whose outputs fill at least half their positions, in blocks of
    8, or in blocks of 16 where its channels and filters fill them and
    there are at least 64 tiles (on Zen 1, reorders included, 1.3-1.6x
    faster than im2col and sgemm on 16 tiles of 4x4 and on 32 of 7x7
    images, level on 16 of those, 1.3x slower on 8; on Zen 4 in blocks of
    16, about 5 % off a ResNet-18 step, but slower than im2col and sgemm
    on its 32 tiles of 7x7 images, 256->256: 2.5-2.7 ms a call against
    2.3-2.6); any other
    stays as it is. In blocks of 16 such a convolution alone between NCHW
    images stays there, as one by constant filters does.

    Elementwise ops whose operands are such images, per-channel vectors
    (`1 x C x 1 x 1`, or `N x C x 1 x 1`: a squeeze-and-excitation scale)
    or scalars run on the blocked images too, and so do sums, means,
    maxima and minima over the rows and columns (global pools), max and
    average pools of an image whose blocked form exists, and concatenations
    along the channels of images whose blocked forms all exist and fill
    whole blocks, so a network's chain of convolutions, activations, pools,
    branches, residual sums and squeeze-and-excitation blocks keeps the
    layout from one convolution to the next. A convolution's result
    reaching another convolution through pools and concatenations counts as
    reaching it. Last, a residual sum whose operand is a blocked convolution's
    unclamped result, with no activation and read by nothing else, becomes
    that convolution's `addend`, and the sum's activation (in blocks of 8;
    a SiLU where the channels fill whole blocks: on padded ones the
    sigmoid stays on the NCHW view) and its Relu or Clip its clamp. The reorders (a reshape and a transpose) come
    in only where an image enters that chain from an op that needs NCHW
    (a reduction over channels, a reshape, a concatenation with a padded
    part) or leaves it
    for one, each at most once per image.

    The CPU code generator makes each `kiln.blocked_conv` one call of the
    runtime (oneDNN's convolution primitives with the filters packed once,
    threads of their own); kilnc runs this pass for CPU code, inference and
    train steps.

    Before (where `%r` goes on to another convolution):
    ```mlir
    %y = kiln.conv %x, %w, %b {...} : (tensor<1x32x28x28xf32>, tensor<64x32x3x3xf32>, tensor<64xf32>) -> tensor<1x64x28x28xf32>
    %r = kiln.relu %y : tensor<1x64x28x28xf32>
    ```
    After:
    ```mlir
    %e = kiln.reshape %x : tensor<1x32x28x28xf32> -> tensor<1x2x16x28x28xf32>
    %t = kiln.transpose %e {perm = array<i64: 0, 1, 3, 4, 2>} : (tensor<1x2x16x28x28xf32>) -> tensor<1x2x28x28x16xf32>
    %c = kiln.blocked_conv %t, %w, %b {..., clamp_min = 0.0 : f32} : (...) -> tensor<1x4x28x28x16xf32>
    %u = kiln.transpose %c {perm = array<i64: 0, 1, 4, 2, 3>} : (tensor<1x4x28x28x16xf32>) -> tensor<1x4x16x28x28xf32>
    %r = kiln.reshape %u : tensor<1x4x16x28x28xf32> -> tensor<1x64x28x28xf32>
    ```
  }];
  let options = [
    Option<"everywhere", "everywhere", "bool", /*default=*/"false",
           "Rewrite every convolution that can run on blocked images, even one "
           "alone between NCHW images (to test the blocked kernels on any graph)">,
    Option<"block", "block", "int64_t", /*default=*/"16",
           "Channels per block: 16 (AVX-512's vectors) or 8 (AVX2's)">
  ];
}

def KilnFusePass : Pass<"kiln-fuse", "mlir::func::FuncOp"> {
  let summary = "Groups kiln ops into kiln.fusion ops, each compiled as one kernel";
  let description = [{
    Forms XLA-style fusions, visiting ops from the function's results
    backwards; each op not yet in a fusion roots a new one, which then
    absorbs producers while the rules below allow:

    * **loop fusion**: elementwise ops (with NumPy broadcasting), casts,
      broadcasts (`expand`), reshapes and transposes fuse into any consumer;
    * **input fusion**: a reduction fuses into a consumer fusion whose ops
      iterate over the reduction's input shape and reduce the same axes with
      `keepdims`, so a softmax or a layer normalization, with the
      elementwise ops that feed and use its reductions, is one fusion
      (one loop over rows);
    * **output (epilogue) fusion**: a matmul or convolution fuses into a
      consumer fusion made only of elementwise ops over its result's shape
      (bias, activation, residual add); the epilogue runs on each tile of
      the result. It follows ops that read the product's value once, and
      takes in a DAG that reads it more than once when the DAG's other
      values are read only within it and it ends in one value (GELU's
      `x * (1 + erf(x / sqrt(2))) / 2` after the bias; a DAG whose `x` is
      also saved for a gradient stays outside). With `channel-first-convolutions`, a transpose that swaps
      a convolution's batch and channel dimensions (a weight gradient's way
      back to the filter's layout) joins its output fusion too, and the
      epilogue continues over the transposed shape: the CPU lowering writes
      such a convolution channel-first (kiln-lower-to-linalg
      `fold-transposes`), so the optimizer update runs on each tile of the
      gradient;
    * **multi-output (sibling) fusion**: two independent loop or input
      fusions over the same shape that read a common input merge into one
      fusion with several results, so the input is read once.

    Ops of other kinds (pooling, gather, concatenation, ...) become `single`
    fusions of their own. Small constants (at most `max-cloned-constant-elements`
    elements) are copied into each fusion that uses them, so the kernel sees
    their values.

    Cost rule. A producer joins a fusion only if every user of its result is
    in that fusion, so nothing is computed twice, except that a *cheap*
    elementwise producer (no transcendental function, division or power)
    with users elsewhere is duplicated into the fusion, with two bounds: a
    chain of such copies joins at most two pairs of full-size tensors (a
    pre-LN transformer's residual stream, a running sum of every layer's
    output, would otherwise be recomputed whole in each layer norm), and a
    value compared as floats (a max-pool gradient's argmax, a ReLU
    gradient's test against zero) is never copied (a copy in another
    kernel may round differently and take the other branch). An *expensive*
    elementwise producer is never fused into a consumer that broadcasts it
    (it would be recomputed once per broadcast element: `exp` of a row
    vector added to a matrix stays outside). Reductions and contractions are
    never duplicated. Nor is a producer that reads a tensor of its own size
    copied when its result is stored anyway: for a matrix product or
    convolution, or for a kernel that takes in no producers (an opaque op,
    a call into the runtime such as a blocked convolution) whose result the
    consumer reads. The copy would read more than the stored result
    (ConvNeXt's residual sum, read by the next block's blocked convolution
    and by the next residual sum). A fusion stops growing at `max-ops` ops, bounding
    kernel size.

    With `report`, prints each fusion to stderr: its kind, member ops and
    the ONNX nodes they came from (the ops' locations).

    Before:
    ```mlir
    %m = kiln.matmul %x, %w : (tensor<64x784xf32>, tensor<784x1024xf32>) -> tensor<64x1024xf32>
    %b = kiln.add %m, %bias : (tensor<64x1024xf32>, tensor<1024xf32>) -> tensor<64x1024xf32>
    %r = kiln.relu %b : tensor<64x1024xf32>
    ```
    After:
    ```mlir
    %r = kiln.fusion output (%x, %w, %bias) : (...) -> tensor<64x1024xf32> {
    ^bb0(%a: tensor<64x784xf32>, %c: tensor<784x1024xf32>, %d: tensor<1024xf32>):
      %m = kiln.matmul %a, %c : ...
      %b = kiln.add %m, %d : ...
      %r = kiln.relu %b : tensor<64x1024xf32>
      kiln.yield %r : tensor<64x1024xf32>
    }
    ```
  }];
  let options = [
    Option<"maxOps", "max-ops", "int64_t", /*default=*/"64",
           "Most kiln ops one fusion may hold (bounds kernel size)">,
    Option<"maxClonedConstantElements", "max-cloned-constant-elements", "int64_t",
           /*default=*/"16",
           "Constants with at most this many elements are copied into fusions">,
    Option<"report", "report", "bool", /*default=*/"false",
           "Print every fusion with its member ops and ONNX node names to stderr">,
    Option<"channelFirstConvolutions", "channel-first-convolutions", "bool",
           /*default=*/"false",
           "Put a transpose that swaps a convolution's batch and channel dimensions "
           "into the convolution's output fusion (for a lowering that writes the "
           "convolution channel-first)">
  ];
}

def KilnPlacePass : Pass<"kiln-place", "mlir::func::FuncOp"> {
  let summary = "Places every kiln op on a device";
  let description = [{
    Gives every op of the function a `kiln.device` attribute holding a full
    device name (`/job:localhost/replica:0/task:0/device:CPU:0`), in three
    steps, as TensorFlow's placer does:

    1. **Explicit placement**: a `kiln.device` the op already carries (an
       importer fills it from the model), else the first `place` rule whose
       regular expression matches the op's whole node name (its location).
       Partial names are completed: the local task, device index 0, and the
       type of `default-device` when none is named.
    2. **Soft placement**: an op placed on a device type the artifact has no
       code for (GPU without a `cuda` target) is an error naming the op and
       the device; with `allow-soft-placement` it moves to `default-device`
       (or CPU:0) with a warning naming both.
    3. **Cost model** for the ops left: constants go with their first user;
       other ops go with the input that carries the most bytes (ties: the
       first operand), except that a *tiny shape op* (integer result of at
       most 16 elements) whose inputs live on a GPU goes to the CPU of
       `default-device`; ops whose operands are all graph inputs or
       constants go to `default-device`.

    Devices of other tasks (`/job:worker/task:1/...`) are refused: an
    artifact runs in one process.

    With `log`, prints one line per ONNX node to stderr in TensorFlow's
    `log_device_placement` format: `add: /job:localhost/replica:0/task:0/device:CPU:0`.

    ```mlir
    // kiln-place{place=fc2=/cpu:1}
    %h = kiln.relu %x : tensor<4xf32> loc("fc1")
    %y = kiln.neg %h : tensor<4xf32> loc("fc2")
    // becomes
    %h = kiln.relu %x {kiln.device = "/job:localhost/replica:0/task:0/device:CPU:0"} ...
    %y = kiln.neg %h {kiln.device = "/job:localhost/replica:0/task:0/device:CPU:1"} ...
    ```
  }];
  let options = [
    ListOption<"rules", "place", "std::string",
               "Placement rules NODE_REGEX=DEVICE; the first whose regex matches the "
               "node name wins">,
    Option<"defaultDevice", "default-device", "std::string", /*default=*/"\"/cpu:0\"",
           "Device of ops no rule or input decides">,
    ListOption<"deviceTypes", "device-types", "std::string",
               "Device types the artifact has code for (CPU, GPU); default: CPU">,
    Option<"allowSoftPlacement", "allow-soft-placement", "bool", /*default=*/"false",
           "Move ops placed on a device type without code instead of failing">,
    Option<"log", "log", "bool", /*default=*/"false",
           "Print each node's device to stderr (log_device_placement)">
  ];
}

def KilnPartitionPass : Pass<"kiln-partition", "mlir::ModuleOp"> {
  let summary = "Splits a placed @main into one function per device";
  let description = [{
    For a `@main` whose ops carry `kiln.device` (from `kiln-place`), creates
    one function per device, `@main_cpu0`, `@main_cpu1`, `@main_gpu0`, ...
    (CPUs first, then by index), each holding that device's ops in their
    original order and tagged with its `kiln.device`. Every partition takes
    all graph inputs and returns the graph outputs it computes.

    A tensor computed on one device and used on another becomes one
    `kiln.send` right after its producer and one `kiln.recv` before its first
    use in the consumer: one transfer per tensor per destination device, not
    per use. Constants are copied into every partition that uses them
    instead of being sent.

    `@main` then calls every partition once (the calls are independent and
    may run concurrently) and returns their results. A function placed on a
    single device only gets that device as its `kiln.device` attribute.

    ```mlir
    func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
      %0 = call @main_cpu1(%x) : (tensor<4xf32>) -> tensor<4xf32>
      %1 = call @main_cpu0(%x) : (tensor<4xf32>) -> ()
      return %0 : tensor<4xf32>
    }
    func.func @main_cpu0(%x: tensor<4xf32>) attributes {kiln.device = ".../device:CPU:0"} {
      %h = kiln.relu %x : tensor<4xf32>
      kiln.send %h {tensor_name = "fc1:0", ...} : tensor<4xf32>
      return
    }
    func.func @main_cpu1(%x: tensor<4xf32>) -> tensor<4xf32>
        attributes {kiln.device = ".../device:CPU:1"} {
      %h = kiln.recv {tensor_name = "fc1:0", ...} : tensor<4xf32>
      %y = kiln.neg %h : tensor<4xf32>
      return %y : tensor<4xf32>
    }
    ```
  }];
}

def KilnFormStagesPass : Pass<"kiln-form-stages", "mlir::ModuleOp"> {
  let summary = "Cuts partitions at their receives into stages compiled on their own";
  let description = [{
    Turns the partitioned module of `kiln-partition` into stages that a
    back end compiles like any single-device function. An op's *depth* is the
    number of transfers on its longest path from the graph inputs; the ops
    of one partition with the same depth form one stage function
    (`@main_cpu1_s1`), whose arguments are the graph inputs, the values of
    its partition's earlier stages and the tensors it receives, and whose
    results are what later stages, other devices and the graph outputs use.
    Sends and receives disappear: `@main` becomes a data-flow program of
    stage calls, each tagged with its `kiln.device`, and a value that one
    device's stage returns and another device's stage takes is a transfer.

    Stages of one device run in `@main`'s order; a stage waits only for the
    stages whose results it takes, and those come before it in `@main`, so
    the runtime cannot deadlock whatever the devices' relative speed.
  }];
}

def KilnAutodiffPass : Pass<"kiln-autodiff", "mlir::func::FuncOp"> {
  let summary = "Appends the gradients of a function's loss result to its results";
  let description = [{
    Reverse-mode differentiation on the `kiln` dialect. The result numbered
    `loss` must be a float tensor of one element; for every float argument
    whose `kiln.name` matches `wrt`, the pass builds the gradient of the loss
    with respect to it and returns it as a new result named `grad_<name>`.

    Each op between the arguments and the loss supplies its vector-Jacobian
    product through `GradientOpInterface` (rules in
    `dialects/kiln/Gradients/`, one file per op family). Ops are visited in
    reverse program order, so a value's cotangent is complete (summed over
    all its uses) before its producer reads it. An op that the loss depends
    on through a differentiated value and that has no rule is an error
    naming it and its graph node. Integer and boolean values carry no
    gradient; an argument the loss does not depend on gets zeros.

    The gradient IR is ordinary forward IR, placed, fused and lowered like
    any other. `kiln-train-step` uses the same machinery to build a whole
    train step; this pass exposes it for tests and gradient checks.

    Before:
    ```mlir
    func.func @main(%x: tensor<4xf32> {kiln.name = "x"}) -> tensor<f32> {
      %e = kiln.exp %x : tensor<4xf32>
      %s = kiln.reduce_sum %e {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
      return %s : tensor<f32>
    }
    ```
    After:
    ```mlir
    func.func @main(%x: tensor<4xf32> {kiln.name = "x"})
        -> (tensor<f32>, tensor<4xf32> {kiln.name = "grad_x"}) {
      %e = kiln.exp %x : tensor<4xf32>
      %s = kiln.reduce_sum %e ...
      %one = kiln.constant dense<1.0> : tensor<f32>
      %g = kiln.expand (reshape of %one) ... : tensor<4xf32>
      %dx = kiln.mul %g, %e : ...
      return %s, %dx : tensor<f32>, tensor<4xf32>
    }
    ```
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"main\"",
           "The function to differentiate">,
    Option<"loss", "loss", "int64_t", /*default=*/"0",
           "Index of the result that is the loss">,
    Option<"wrt", "wrt", "std::string", /*default=*/"\".*\"",
           "Extended regular expression matched against the whole kiln.name "
           "of the arguments to differentiate with respect to">
  ];
}

def KilnTrainStepPass : Pass<"kiln-train-step", "mlir::ModuleOp"> {
  let summary = "Turns a forward @main into one train step: loss, gradients, optimizer update";
  let description = [{
    Runs on the imported graph, before canonicalization (so that every
    weight is still its own initializer constant). It

    1. turns each float initializer whose name matches `trainable` into a
       state argument named after it (`kiln.state = "parameter"`);
    2. builds the loss on the output named `loss-output` (default: the first):
       `softmax-cross-entropy` of logits `[N, C]` against an i64 input
       `labels` of class indices `[N]`, averaged over the batch; `mse`
       against float labels shaped like the output; or `output`, when the
       model computes its own scalar loss (ONNX SoftmaxCrossEntropyLoss);
       plus `l2 / 2 * sum(w^2)` for the weights matching `l2-weights`;
    3. differentiates it (the machinery of `kiln-autodiff`), each batch
       normalization as a `kiln.batch_norm_training` (the batch's
       statistics, its gradient in closed form) whose running mean and
       variance become state;
    4. clips the gradients by their global norm when `clip-norm > 0`;
    5. updates the weights with `optimizer` at the learning rate of
       `lr-schedule` evaluated at the `step` state (updates made so far):
       `sgd` (w -= lr g), `momentum` and `nesterov` (PyTorch's form,
       v = mu v + g), `adam` and `adamw` (decoupled weight decay);
    6. with `ema-decay > 0`, keeps TensorFlow's exponential moving average
       of every weight (`ema/<name>`).

    The function becomes `(inputs, weights, labels, step, slots) -> (loss,
    learning_rate, outputs, weights', slots', step + 1)`, with each weight's
    gradient (`gradient/<name>`) after the outputs when `gradient-outputs` is
    set (for gradient histograms); each state argument and its new
    value carry the same `kiln.name` and a `kiln.state` kind (`parameter`,
    `momentum`, `adam_m`, `adam_v`, `ema`, `step`, `running_mean`,
    `running_var`), which is how callers pair them from one step to the next.

    With `entries` (the default) the module also gets `@eval`, the forward
    function taking the trained weights (and batch normalizations' running
    statistics) as arguments under their state names, and `@init`, which
    returns the initial value of every state tensor: the initializers, zeros
    for optimizer slots and the step, the weights again for moving averages.

    Before:
    ```mlir
    func.func @main(%x: tensor<8x4xf32> {kiln.name = "x"}) -> (tensor<8x3xf32> {kiln.name = "y"}) {
      %w = kiln.constant dense<...> : tensor<4x3xf32> loc("initializer 'w'")
      %y = kiln.matmul %x, %w : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
      return %y : tensor<8x3xf32>
    }
    ```
    After (`optimizer=sgd`):
    ```mlir
    func.func @main(%x: tensor<8x4xf32> {kiln.name = "x"},
                    %w: tensor<4x3xf32> {kiln.name = "w", kiln.state = "parameter"},
                    %labels: tensor<8xi64> {kiln.name = "labels"},
                    %step: tensor<i64> {kiln.name = "step", kiln.state = "step"})
        -> (tensor<f32> {kiln.name = "loss"}, tensor<f32> {kiln.name = "learning_rate"},
            tensor<8x3xf32> {kiln.name = "y"},
            tensor<4x3xf32> {kiln.name = "w", kiln.state = "parameter"},
            tensor<i64> {kiln.name = "step", kiln.state = "step"})
    ```
    With `data-parallel`, every replica runs this step on its own shard of
    the batch: the loss and each gradient are summed over the replicas
    (`kiln.all_reduce`) and divided by their number (`kiln.world_size`, a
    run-time value, so one artifact runs on any number of replicas) before
    clipping and the update, which makes N replicas of batch B one step of
    batch N * B. `kiln-bucket-all-reduce` then groups the sums into buckets.

    Errors name the option or the output: an unknown optimizer, schedule or
    loss, a hyperparameter out of range, an output that does not exist or
    has the wrong shape for the loss, labels of the wrong type, an op on the
    way from a weight to the loss with no gradient rule.
  }];
  let options = [
    Option<"trainable", "trainable", "std::string", /*default=*/"\".*\"",
           "Extended regular expression over initializer names: the weights to train">,
    Option<"lossKind", "loss", "std::string", /*default=*/"\"softmax-cross-entropy\"",
           "softmax-cross-entropy, mse, or output (the output is the loss)">,
    Option<"outputName", "loss-output", "std::string", /*default=*/"\"\"",
           "The model output the loss reads (default: the first)">,
    Option<"labelsName", "labels", "std::string", /*default=*/"\"labels\"",
           "Name of the labels input the step gains">,
    Option<"optimizer", "optimizer", "std::string", /*default=*/"\"sgd\"",
           "sgd, momentum, nesterov, adam or adamw">,
    Option<"learningRate", "learning-rate", "double", /*default=*/"0.01",
           "Base learning rate">,
    Option<"momentum", "momentum", "double", /*default=*/"0.9",
           "Momentum coefficient (momentum, nesterov)">,
    Option<"beta1", "beta1", "double", /*default=*/"0.9", "Adam's first-moment decay">,
    Option<"beta2", "beta2", "double", /*default=*/"0.999", "Adam's second-moment decay">,
    Option<"epsilon", "epsilon", "double", /*default=*/"1e-8", "Adam's epsilon">,
    Option<"weightDecay", "weight-decay", "double", /*default=*/"0.01",
           "AdamW's decoupled weight decay">,
    Option<"schedule", "lr-schedule", "std::string", /*default=*/"\"constant\"",
           "Learning-rate schedule: constant, exponential, step or cosine">,
    Option<"decayRate", "decay-rate", "double", /*default=*/"0.95",
           "exponential and step: factor per decay-steps updates">,
    Option<"decaySteps", "decay-steps", "int64_t", /*default=*/"1000",
           "exponential and step: updates per factor of decay-rate">,
    Option<"staircase", "staircase", "bool", /*default=*/"false",
           "exponential: decay in whole periods of decay-steps">,
    Option<"totalSteps", "total-steps", "int64_t", /*default=*/"0",
           "cosine: updates over which the rate falls to min-learning-rate">,
    Option<"minLearningRate", "min-learning-rate", "double", /*default=*/"0.0",
           "cosine: the final learning rate">,
    Option<"warmupSteps", "warmup-steps", "int64_t", /*default=*/"0",
           "Linear warm-up over this many first updates (0: none)">,
    Option<"l2", "l2", "double", /*default=*/"0.0",
           "L2 regularization: adds l2 / 2 * sum(w^2) to the loss">,
    Option<"l2Weights", "l2-weights", "std::string", /*default=*/"\".*\"",
           "Extended regular expression: the trained weights l2 applies to">,
    Option<"clipNorm", "clip-norm", "double", /*default=*/"0.0",
           "Clip gradients to this global norm (0: no clipping)">,
    Option<"emaDecay", "ema-decay", "double", /*default=*/"0.0",
           "Keep an exponential moving average of the weights (0: none)">,
    Option<"gradientOutputs", "gradient-outputs", "bool", /*default=*/"false",
           "Also return each weight's gradient (after clipping) as gradient/<name>">,
    Option<"dataParallel", "data-parallel", "bool", /*default=*/"false",
           "Sum the loss and each gradient over the replicas (kiln.all_reduce) and "
           "divide by the world size, known at run time, before clipping and the update">,
    Option<"entries", "entries", "bool", /*default=*/"true",
           "Also build @eval (the forward function on the state) and @init (the "
           "initial state)">
  ];
}

def KilnBucketAllReducePass : Pass<"kiln-bucket-all-reduce", "mlir::func::FuncOp"> {
  let summary = "Groups a data-parallel step's all-reduces into buckets that overlap the backward pass";
  let description = [{
    Replaces the `kiln.all_reduce` ops of a function with buckets: the
    tensors, in the order their values are computed (the backward pass
    yields the last layer's gradients first), are flattened and joined into
    one f32 buffer per bucket, `kiln.all_reduce_start` is placed right after
    the bucket's last tensor is computed and `kiln.all_reduce_wait` right
    before the first use of any of its sums, and each sum is sliced back out.
    Communication of one bucket thus overlaps everything computed between its
    start and its wait: the rest of the backward pass, for all but the last
    bucket.

    The first bucket is capped at `first-bucket-bytes` so that it starts
    early; the others at `bucket-bytes` (PyTorch DDP's defaults: 1 MiB and
    25 MiB). A tensor larger than the cap is a bucket of its own. A bucket
    also closes where adding the next tensor would make it wait for a value
    that one of its sums is already needed for.

    Before:
    ```mlir
    %s1 = kiln.all_reduce %g1 : tensor<10xf32>
    %s2 = kiln.all_reduce %g2 : tensor<4x10xf32>
    ```
    After (one bucket):
    ```mlir
    %f1 = kiln.reshape %g1 : tensor<10xf32> -> tensor<10xf32>
    %f2 = kiln.reshape %g2 : tensor<4x10xf32> -> tensor<40xf32>
    %b = kiln.concat %f1, %f2 {axis = 0 : i64} : (tensor<10xf32>, tensor<40xf32>) -> tensor<50xf32>
    %t = kiln.all_reduce_start %b {bucket = 0 : i64} : tensor<50xf32>
    ...
    %r = kiln.all_reduce_wait %t {bucket = 0 : i64} : tensor<50xf32>
    %s1 = kiln.slice %r {start = array<i64: 0>, step = array<i64: 1>} : tensor<50xf32> -> tensor<10xf32>
    ```
    Only f32 tensors are bucketed; an all-reduce of another type is an
    error naming it.
  }];
  let options = [
    Option<"firstBucketBytes", "first-bucket-bytes", "int64_t", /*default=*/"1 << 20",
           "Cap on the first bucket, in bytes">,
    Option<"bucketBytes", "bucket-bytes", "int64_t", /*default=*/"25 << 20",
           "Cap on every later bucket, in bytes">
  ];
}

#endif // KILN_PASSES_TD
