// RUN: kiln-opt %s -split-input-file -verify-diagnostics -pass-pipeline='builtin.module(func.func(kiln-autodiff))'

// An op with no gradient rule on the way from an argument to the loss is
// named, with its graph node.
func.func @main(%x: tensor<2x4xf32> {kiln.name = "x"}) -> tensor<f32> {
  // expected-error @+1 {{'kiln.reduce_prod' has no gradient rule, and the loss depends on it through a value being differentiated}}
  %m = kiln.reduce_prod %x {axes = array<i64: 1>, keepdims = false} : (tensor<2x4xf32>) -> tensor<2xf32>
  %s = kiln.reduce_sum %m {axes = array<i64: 0>, keepdims = false} : (tensor<2xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// The loss must be one float element.
func.func @main(%x: tensor<4xf32> {kiln.name = "x"}) -> tensor<4xf32> {
  // expected-error @+1 {{the loss must be a float tensor of one element, got 'tensor<4xf32>'}}
  %e = kiln.exp %x : tensor<4xf32>
  return %e : tensor<4xf32>
}

// -----

// expected-error @+1 {{the loss is result #0, and @main has 0 results}}
func.func @main(%x: tensor<4xf32> {kiln.name = "x"}) {
  return
}

// -----

// A train step's batch statistics feed the running averages, not the loss.
func.func @main(%x: tensor<2x3x4xf32> {kiln.name = "x"}, %g: tensor<3xf32> {kiln.name = "g"}) -> tensor<f32> {
  // expected-error @+1 {{'kiln.batch_norm_training' op has no gradient rule for its mean and variance results; only the normalized output may feed the loss}}
  %y, %m, %v = kiln.batch_norm_training %x, %g, %g : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>)
  %s = kiln.reduce_sum %v {axes = array<i64: 0>, keepdims = false} : (tensor<3xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// Layer normalization's statistics are results a loss may not read.
func.func @main(%x: tensor<2x4xf32> {kiln.name = "x"}, %g: tensor<4xf32> {kiln.name = "g"}) -> tensor<f32> {
  // expected-error @+1 {{'kiln.layer_norm' op has no gradient rule for its mean and inv_std_dev results; only the normalized output may feed the loss}}
  %y, %m, %r = kiln.layer_norm %x, %g {axis = 1 : i64} : (tensor<2x4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x1xf32>, tensor<2x1xf32>)
  %s = kiln.reduce_sum %m {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x1xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// Average pooling in ceil mode has no rule yet (its last windows' divisors).
func.func @main(%x: tensor<1x1x5x5xf32> {kiln.name = "x"}) -> tensor<f32> {
  // expected-error @+1 {{'kiln.average_pool' op has no gradient rule for overlapping, padded, dilated or ceil-mode windows yet; only windows that tile the input (stride = kernel)}}
  %p = kiln.average_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = true} : (tensor<1x1x5x5xf32>) -> tensor<1x1x3x3xf32>
  %s = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<1x1x3x3xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A dilated convolution padded wider than its dilated filter reaches
// outputs that read no input at all; its input gradient has no rule.
func.func @main(%x: tensor<1x1x6x6xf32> {kiln.name = "x"}, %w: tensor<1x1x2x2xf32> {kiln.name = "w"}) -> tensor<f32> {
  // expected-error @+1 {{'kiln.conv' op has no gradient rule for padding wider than the dilated kernel}}
  %y = kiln.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 3, 3, 3, 3>, dilations = array<i64: 2, 2>} : (tensor<1x1x6x6xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x10x10xf32>
  %s = kiln.reduce_sum %y {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<1x1x10x10xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A pool of a blocked image (kiln-blocked-layout's, for inference) has no
// gradient rule.
func.func @main(%x: tensor<1x1x4x4x16xf32> {kiln.name = "x"}) -> tensor<f32> {
  // expected-error @+1 {{'kiln.max_pool' op has no gradient rule on blocked images}}
  %p = kiln.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x4x4x16xf32>) -> tensor<1x1x2x2x16xf32>
  %s = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2, 3, 4>, keepdims = false} : (tensor<1x1x2x2x16xf32>) -> tensor<f32>
  return %s : tensor<f32>
}
