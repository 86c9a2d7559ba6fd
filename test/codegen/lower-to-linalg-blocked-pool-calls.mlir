// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-lower-to-linalg{blocked-pool-calls=true}))' | FileCheck %s

// Pools of blocked images outside fusions stay kiln ops, for bufferization
// to make runtime calls of; the pool of an NCHW image becomes loops.
// CHECK-LABEL: func @outside_fusions
// CHECK: kiln.max_pool %{{.*}} : (tensor<1x2x5x5x16xf32>) -> tensor<1x2x3x3x16xf32>
// CHECK: kiln.average_pool %{{.*}} {count_include_pad = true, {{.*}}} : (tensor<1x2x5x5x16xf32>) -> tensor<1x2x3x3x16xf32>
// CHECK-NOT: kiln.max_pool
// CHECK: linalg.generic
// CHECK: arith.maximumf
func.func @outside_fusions(%x: tensor<1x2x5x5x16xf32>, %y: tensor<1x3x5x5xf32>) -> (tensor<1x2x3x3x16xf32>, tensor<1x2x3x3x16xf32>, tensor<1x3x3x3xf32>) {
  %0 = kiln.max_pool %x {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x2x5x5x16xf32>) -> tensor<1x2x3x3x16xf32>
  %1 = kiln.average_pool %x {count_include_pad = true, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x2x5x5x16xf32>) -> tensor<1x2x3x3x16xf32>
  %2 = kiln.max_pool %y {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x3x5x5xf32>) -> tensor<1x3x3x3xf32>
  return %0, %1, %2 : tensor<1x2x3x3x16xf32>, tensor<1x2x3x3x16xf32>, tensor<1x3x3x3xf32>
}

// -----

// Inside a fusion (kiln-fuse puts none there) a blocked pool is lowered to
// loops like any other op of the fusion.
// CHECK-LABEL: func @inside_a_fusion
// CHECK: kiln.fusion single
// CHECK-NOT: kiln.max_pool
// CHECK: arith.maximumf
func.func @inside_a_fusion(%x: tensor<1x2x5x5x16xf32>) -> tensor<1x2x3x3x16xf32> {
  %0 = kiln.fusion single(%x) : (tensor<1x2x5x5x16xf32>) -> tensor<1x2x3x3x16xf32> {
  ^bb0(%arg0: tensor<1x2x5x5x16xf32>):
    %1 = kiln.max_pool %arg0 {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x2x5x5x16xf32>) -> tensor<1x2x3x3x16xf32>
    kiln.yield %1 : tensor<1x2x3x3x16xf32>
  }
  return %0 : tensor<1x2x3x3x16xf32>
}
