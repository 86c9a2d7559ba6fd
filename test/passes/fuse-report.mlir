// RUN: kiln-opt %s --mlir-disable-threading -pass-pipeline='builtin.module(func.func(kiln-decompose,canonicalize,kiln-fuse{report=1}))' -o /dev/null 2>&1 | FileCheck %s
// RUN: kiln-opt %s -pass-pipeline='builtin.module(func.func(kiln-decompose,canonicalize,kiln-fuse{max-ops=2}))' | FileCheck %s --check-prefix=LIMIT

// The report names each fusion's kind, its ops and the ONNX nodes behind them.
// CHECK: kiln-fuse: @mlp: 2 fusions
// CHECK-NEXT: fusion #0 output, 3 ops: matmul, add, relu
// CHECK-NEXT: nodes: fc1, fc1_bias, relu1
// CHECK-NEXT: fusion #1 input, 6 ops: reduce_max, sub, exp, reduce_sum, reciprocal, mul
// CHECK-NEXT: nodes: probs

// Cost rule on kernel size: with max-ops=2 the matmul keeps only its bias
// add, and the softmax is cut into several fusions of at most two ops.
// LIMIT-LABEL: func.func @mlp
// LIMIT: kiln.fusion output
// LIMIT-NEXT: ^bb0
// LIMIT-NEXT: kiln.matmul
// LIMIT-NEXT: kiln.add
// LIMIT-NEXT: kiln.yield
// LIMIT-COUNT-5: kiln.fusion
// LIMIT-NOT: kiln.fusion
func.func @mlp(%x: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %m = kiln.matmul %x, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32> loc("fc1")
  %a = kiln.add %m, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32> loc("fc1_bias")
  %r = kiln.relu %a : tensor<8x32xf32> loc("relu1")
  %s = kiln.softmax %r {axis = 1 : i64} : tensor<8x32xf32> loc("probs")
  return %s : tensor<8x32xf32>
}
