// RUN: kiln-opt %s -split-input-file -verify-diagnostics -pass-pipeline='builtin.module(kiln-train-step)' | FileCheck %s

// In a train step batch normalization uses the batch's statistics
// (kiln.batch_norm_training, whose gradient is its closed form), and its
// running mean and variance become state, updated with ONNX's momentum (0.9
// keeps 90 %) from the batch mean and the unbiased batch variance (36
// values per channel: factor 36/35). They get no gradient. The gradient:
// two sums per channel of the cotangent, the second times the normalized
// input (x - m) / sqrt(v + eps), then dx = r scale (dy - sum / 36 -
// x^ sum2 / 36).
// CHECK-LABEL: func.func @main
// CHECK-SAME: %[[X:[^:]*]]: tensor<4x2x3x3xf32> {kiln.name = "x"}
// CHECK-SAME: %[[SCALE:[^:]*]]: tensor<2xf32> {kiln.name = "bn.weight", kiln.state = "parameter"}
// CHECK-SAME: %[[MEAN:[^:]*]]: tensor<2xf32> {kiln.name = "bn.running_mean", kiln.state = "running_mean"}
// CHECK-SAME: %[[VAR:[^:]*]]: tensor<2xf32> {kiln.name = "bn.running_var", kiln.state = "running_var"}
// CHECK-NOT: kiln.batch_norm %
// CHECK: %[[Y:.*]], %[[M:.*]], %[[V:.*]] = kiln.batch_norm_training %[[X]], %[[SCALE]], %{{.*}} : (tensor<4x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<4x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>)
// CHECK: %[[KEEP:.*]] = kiln.constant dense<0.899999976> : tensor<f32>
// CHECK: kiln.mul %[[MEAN]], %[[KEEP]]
// CHECK: %[[NEW:.*]] = kiln.constant dense<0.100000024> : tensor<f32>
// CHECK: kiln.mul %[[M]], %[[NEW]]
// CHECK: kiln.mul %[[VAR]], %{{.*}}
// CHECK: %[[UNBIASED:.*]] = kiln.constant dense<0.102857165> : tensor<f32>
// CHECK: kiln.mul %[[V]], %[[UNBIASED]]
// CHECK: kiln.reduce_mean %[[Y]]
// CHECK: %[[G:.*]] = kiln.mul %{{.*}}, %{{.*}} : (tensor<4x2x3x3xf32>, tensor<f32>) -> tensor<4x2x3x3xf32>
// CHECK: %[[VC:.*]] = kiln.reshape %[[V]] : tensor<2xf32> -> tensor<1x2x1x1xf32>
// CHECK: %[[R:.*]] = kiln.reciprocal
// CHECK: %[[MC:.*]] = kiln.reshape %[[M]] : tensor<2xf32> -> tensor<1x2x1x1xf32>
// CHECK: %[[C:.*]] = kiln.sub %[[X]], %[[MC]]
// CHECK: %[[XHAT:.*]] = kiln.mul %[[C]], %[[R]]
// CHECK: %[[SUM:.*]] = kiln.reduce_sum %[[G]] {axes = array<i64: 0, 2, 3>} : (tensor<4x2x3x3xf32>) -> tensor<1x2x1x1xf32>
// CHECK: %[[GX:.*]] = kiln.mul %[[G]], %[[XHAT]]
// CHECK: %[[SUM2:.*]] = kiln.reduce_sum %[[GX]] {axes = array<i64: 0, 2, 3>} : (tensor<4x2x3x3xf32>) -> tensor<1x2x1x1xf32>
// CHECK: %[[N:.*]] = kiln.constant dense<0.027777{{[0-9]*}}> : tensor<f32>
// CHECK: return
func.func @main(%x: tensor<4x2x3x3xf32> {kiln.name = "x"}) -> (tensor<4x2xf32> {kiln.name = "logits"}) {
  %s = kiln.constant dense<[1.0, 0.5]> : tensor<2xf32> loc("initializer 'bn.weight'")
  %b = kiln.constant dense<[0.0, 0.1]> : tensor<2xf32> loc("initializer 'bn.bias'")
  %m = kiln.constant dense<0.0> : tensor<2xf32> loc("initializer 'bn.running_mean'")
  %v = kiln.constant dense<1.0> : tensor<2xf32> loc("initializer 'bn.running_var'")
  %y = kiln.batch_norm %x, %s, %b, %m, %v {epsilon = 1.0e-05 : f32} : (tensor<4x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<4x2x3x3xf32>
  %r = kiln.reduce_mean %y {axes = array<i64: 2, 3>, keepdims = false} : (tensor<4x2x3x3xf32>) -> tensor<4x2xf32>
  return %r : tensor<4x2xf32>
}

// -----

// Running statistics must be initializers: a graph input cannot be state.
func.func @main(%x: tensor<4x2x3x3xf32> {kiln.name = "x"}, %m: tensor<2xf32> {kiln.name = "m"}) -> (tensor<4x2xf32> {kiln.name = "logits"}) {
  %s = kiln.constant dense<[1.0, 0.5]> : tensor<2xf32> loc("initializer 'bn.weight'")
  %b = kiln.constant dense<[0.0, 0.1]> : tensor<2xf32> loc("initializer 'bn.bias'")
  %v = kiln.constant dense<1.0> : tensor<2xf32> loc("initializer 'bn.running_var'")
  // expected-error @+1 {{kiln-train-step: batch normalization in a train step needs its running mean and variance as initializers}}
  %y = kiln.batch_norm %x, %s, %b, %m, %v {epsilon = 1.0e-05 : f32} : (tensor<4x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<4x2x3x3xf32>
  %r = kiln.reduce_mean %y {axes = array<i64: 2, 3>, keepdims = false} : (tensor<4x2x3x3xf32>) -> tensor<4x2xf32>
  return %r : tensor<4x2xf32>
}
