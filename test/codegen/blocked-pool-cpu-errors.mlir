// RUN: kiln-opt %s -split-input-file -verify-diagnostics -pass-pipeline='builtin.module(one-shot-bufferize{bufferize-function-boundaries=1 function-boundary-type-conversion=identity-layout-map})'

// Only pools of blocked images become runtime calls; kiln-lower-to-linalg
// lowers every other pool before bufferization.
func.func @nchw_pool(%x: tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32> {
  // expected-error @+2 {{failed to bufferize op}}
  // expected-error @+1 {{'kiln.max_pool' op reached bufferization without a blocked f32 image to pool (kiln-lower-to-linalg lowers the others)}}
  %0 = kiln.max_pool %x {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  return %0 : tensor<1x3x4x4xf32>
}
