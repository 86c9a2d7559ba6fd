// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(kiln-train-step{data-parallel=true clip-norm=1.0})' | FileCheck %s

// With data-parallel, the loss and each gradient are summed over the
// replicas and divided by the world size, a run-time value, before the
// clipping norm is taken (each replica then clips the same, averaged,
// gradients) and before the update.
// CHECK-LABEL: func.func @main
// CHECK: %[[N:.*]] = kiln.world_size : tensor<f32>
// CHECK: %[[INV:.*]] = kiln.div %{{.*}}, %[[N]]
// CHECK: %[[SW:.*]] = kiln.all_reduce %{{.*}} : tensor<4x3xf32>
// CHECK: %[[GW:.*]] = kiln.mul %[[SW]], %[[INV]]
// CHECK: %[[SL:.*]] = kiln.all_reduce %{{.*}} : tensor<f32>
// CHECK: %[[LOSS:.*]] = kiln.mul %[[SL]], %[[INV]]
// CHECK: kiln.mul %[[GW]], %[[GW]]
// CHECK: kiln.sqrt
// CHECK: return %[[LOSS]],
func.func @main(%x: tensor<8x4xf32> {kiln.name = "x"}) -> (tensor<8x3xf32> {kiln.name = "y"}) {
  %w = kiln.constant dense<0.5> : tensor<4x3xf32> loc("initializer 'w'")
  %y = kiln.matmul %x, %w : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  return %y : tensor<8x3xf32>
}

// -----

// Each dropout's element indices are offset by the replica's rank times its
// element count (8 x 3 = 24), in the forward pass and in the gradient that
// recomputes its mask.
// CHECK-LABEL: func.func @main
// CHECK: %[[RANK:.*]] = kiln.replica_rank : tensor<i64>
// CHECK: %[[COUNT:.*]] = kiln.constant dense<24> : tensor<i64>
// CHECK: %[[OFFSET:.*]] = kiln.mul %[[RANK]], %[[COUNT]]
// CHECK: kiln.dropout %{{.*}}, %[[STEP:[^ ]*]] offset %[[OFFSET]] {ratio = 5.000000e-01 : f32, seed = 3 : i64}
// CHECK: kiln.dropout %{{.*}}, %[[STEP]] offset %[[OFFSET]] {ratio = 5.000000e-01 : f32, seed = 3 : i64}
func.func @main(%x: tensor<8x4xf32> {kiln.name = "x"}) -> (tensor<8x3xf32> {kiln.name = "y"}) {
  %w = kiln.constant dense<0.5> : tensor<4x3xf32> loc("initializer 'w'")
  %h = kiln.matmul %x, %w : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  %y = kiln.dropout %h {ratio = 0.5 : f32, seed = 3 : i64} : (tensor<8x3xf32>) -> tensor<8x3xf32>
  return %y : tensor<8x3xf32>
}
