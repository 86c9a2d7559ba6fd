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
    exponential, a sum and a division; layer and batch normalization become
    reductions and broadcasts; Gemm becomes transposes, a matmul and an
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
      the result;
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
    with users elsewhere is duplicated into the fusion. An *expensive*
    elementwise producer is never fused into a consumer that broadcasts it
    (it would be recomputed once per broadcast element: `exp` of a row
    vector added to a matrix stays outside). Reductions and contractions are
    never duplicated. A fusion stops growing at `max-ops` ops, bounding
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
           "Print every fusion with its member ops and ONNX node names to stderr">
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

#endif // KILN_PASSES_TD
