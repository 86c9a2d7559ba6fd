// RUN: kiln-opt %s -split-input-file -verify-diagnostics -pass-pipeline='builtin.module(kiln-train-step)' | FileCheck %s

// In a train step batch normalization uses the batch's statistics, and its
// running mean and variance become state, updated with ONNX's momentum (0.9
// keeps 90 %) from the batch mean and the unbiased batch variance (36
// values per channel: factor 36/35). They get no gradient.
// CHECK-LABEL: func.func @main
// CHECK-SAME: %[[X:[^:]*]]: tensor<4x2x3x3xf32> {kiln.name = "x"}
// CHECK-SAME: %[[MEAN:[^:]*]]: tensor<2xf32> {kiln.name = "bn.running_mean", kiln.state = "running_mean"}
// CHECK-SAME: %[[VAR:[^:]*]]: tensor<2xf32> {kiln.name = "bn.running_var", kiln.state = "running_var"}
// CHECK-NOT: kiln.batch_norm
// CHECK: %[[M:.*]] = kiln.reduce_mean %[[X]] {axes = array<i64: 0, 2, 3>} : (tensor<4x2x3x3xf32>) -> tensor<1x2x1x1xf32>
// CHECK: %[[C:.*]] = kiln.sub %[[X]], %[[M]]
// CHECK: %[[V:.*]] = kiln.reduce_mean %{{.*}} {axes = array<i64: 0, 2, 3>}
// CHECK: %[[MF:.*]] = kiln.reshape %[[M]] : tensor<1x2x1x1xf32> -> tensor<2xf32>
// CHECK: %[[KEEP:.*]] = kiln.constant dense<0.899999976> : tensor<f32>
// CHECK: kiln.mul %[[MEAN]], %[[KEEP]]
// CHECK: %[[VF:.*]] = kiln.reshape %[[V]] : tensor<1x2x1x1xf32> -> tensor<2xf32>
// CHECK: kiln.constant dense<0.102857165> : tensor<f32>
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
