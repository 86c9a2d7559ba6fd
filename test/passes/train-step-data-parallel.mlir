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
