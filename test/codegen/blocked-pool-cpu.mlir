// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(one-shot-bufferize{bufferize-function-boundaries=1 function-boundary-type-conversion=identity-layout-map},canonicalize)' | FileCheck %s

// A pool of a blocked image becomes one call of the runtime on its buffers'
// addresses: the call site's state (a zeroed global of its own), the sizes
// (n, blocks, ih, iw, oh, ow, kh, kw), strides, dilations and pads (top,
// left, bottom, right), the channels per block, the input, a fresh output buffer and the kind (0:
// max, 1: average counting the pads, 2: average over the input alone). The
// call is marked as keeping no buffer after it returns, and as only reading
// its input (operand 18).
// CHECK-DAG: memref.global "private" @kiln_kernel_site : memref<1xi64> = dense<0> {alignment = 8 : i64}
// CHECK-DAG: memref.global "private" @kiln_kernel_site_0 : memref<1xi64> = dense<0> {alignment = 8 : i64}
// CHECK-LABEL: func.func @pools
// CHECK-SAME: (%[[X:.*]]: memref<2x3x9x9x16xf32>)
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : i64
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : i64
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : i64
// CHECK-DAG: %[[C3:.*]] = arith.constant 3 : i64
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : i64
// CHECK-DAG: %[[C5:.*]] = arith.constant 5 : i64
// CHECK-DAG: %[[C9:.*]] = arith.constant 9 : i64
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : i64
// CHECK: %[[MAX:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2x3x4x4x16xf32>
// CHECK: %[[SITE1:.*]] = memref.get_global @kiln_kernel_site : memref<1xi64>
// CHECK: %[[S1:.*]] = memref.extract_aligned_pointer_as_index %[[SITE1]]
// CHECK: %[[IN1:.*]] = memref.extract_aligned_pointer_as_index %[[X]]
// CHECK: %[[OUT1:.*]] = memref.extract_aligned_pointer_as_index %[[MAX]]
// CHECK: call @kiln_pool2d_blocked(%[[S1]], %[[C2]], %[[C3]], %[[C9]], %[[C9]], %[[C4]], %[[C4]], %[[C3]], %[[C3]], %[[C2]], %[[C2]], %[[C1]], %[[C1]], %[[C0]], %[[C0]], %[[C0]], %[[C0]], %[[C16]], %[[IN1]], %[[OUT1]], %[[C0]]) {kiln.no_capture, kiln.read_only_operands = array<i64: 18>}
// CHECK: %[[AVG:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2x3x5x5x16xf32>
// CHECK: %[[SITE2:.*]] = memref.get_global @kiln_kernel_site_0 : memref<1xi64>
// CHECK: call @kiln_pool2d_blocked(%{{.*}}, %[[C2]], %[[C3]], %[[C9]], %[[C9]], %[[C5]], %[[C5]], %[[C2]], %[[C2]], %[[C2]], %[[C2]], %[[C1]], %[[C1]], %[[C0]], %[[C0]], %[[C1]], %[[C1]], %[[C16]], %{{.*}}, %{{.*}}, %[[C2]]) {kiln.no_capture, kiln.read_only_operands = array<i64: 18>}
// CHECK: return %[[MAX]], %[[AVG]]
// CHECK: func.func private @kiln_pool2d_blocked(index, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, index, index, i64)
func.func @pools(%x: tensor<2x3x9x9x16xf32>) -> (tensor<2x3x4x4x16xf32>, tensor<2x3x5x5x16xf32>) {
  %0 = kiln.max_pool %x {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<2x3x9x9x16xf32>) -> tensor<2x3x4x4x16xf32>
  %1 = kiln.average_pool %x {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x3x9x9x16xf32>) -> tensor<2x3x5x5x16xf32>
  return %0, %1 : tensor<2x3x4x4x16xf32>, tensor<2x3x5x5x16xf32>
}

// -----

// Counting the pads is kind 1. A view whose elements are dense (here the
// middle blocks of one image) is read where it is, by the address of its
// first element: the buffer's plus its offset, (1 * 4 + 1) * 8 * 8 * 16
// floats.
// CHECK-LABEL: func.func @counting_pads_of_a_dense_view
// CHECK-SAME: (%[[X:[^:]*]]: memref<2x4x8x8x16xf32>
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i64
// CHECK-DAG: %[[OFFSET:.*]] = arith.constant 20480 : index
// CHECK-NOT: memref.copy
// CHECK: %[[VIEW:.*]] = memref.subview %[[X]][1, 1, 0, 0, 0]
// CHECK: %[[BASE:.*]] = memref.extract_aligned_pointer_as_index %[[VIEW]]
// CHECK: %[[IN:.*]] = arith.addi %[[BASE]], %[[OFFSET]] : index
// CHECK: call @kiln_pool2d_blocked({{.*}}, %[[IN]], %{{.*}}, %[[ONE]]) {kiln.no_capture, kiln.read_only_operands = array<i64: 18>}
func.func @counting_pads_of_a_dense_view(%x: tensor<2x4x8x8x16xf32>) -> tensor<1x2x8x8x16xf32> {
  %s = tensor.extract_slice %x[1, 1, 0, 0, 0] [1, 2, 8, 8, 16] [1, 1, 1, 1, 1] : tensor<2x4x8x8x16xf32> to tensor<1x2x8x8x16xf32>
  %0 = kiln.average_pool %s {count_include_pad = true, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x2x8x8x16xf32>) -> tensor<1x2x8x8x16xf32>
  return %0 : tensor<1x2x8x8x16xf32>
}

// -----

// A view whose elements are not dense (the middle blocks of two images) is
// copied into a dense buffer first, since the runtime reads dense images.
// CHECK-LABEL: func.func @pool_of_a_strided_view
// CHECK: %[[VIEW:.*]] = memref.subview
// CHECK: %[[DENSE:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2x2x8x8x16xf32>
// CHECK: memref.copy %[[VIEW]], %[[DENSE]]
// CHECK: %[[IN:.*]] = memref.extract_aligned_pointer_as_index %[[DENSE]]
// CHECK: call @kiln_pool2d_blocked({{.*}}, %[[IN]], %{{.*}}) {kiln.no_capture, kiln.read_only_operands = array<i64: 18>}
func.func @pool_of_a_strided_view(%x: tensor<2x4x8x8x16xf32>) -> tensor<2x2x8x8x16xf32> {
  %s = tensor.extract_slice %x[0, 1, 0, 0, 0] [2, 2, 8, 8, 16] [1, 1, 1, 1, 1] : tensor<2x4x8x8x16xf32> to tensor<2x2x8x8x16xf32>
  %0 = kiln.max_pool %s {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x2x8x8x16xf32>) -> tensor<2x2x8x8x16xf32>
  return %0 : tensor<2x2x8x8x16xf32>
}

// -----

// An image in blocks of 8 channels (AVX2's vectors) passes 8.
// CHECK-LABEL: func.func @blocks_of_8
// CHECK-DAG: %[[C8:.*]] = arith.constant 8 : i64
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<1x5x3x3x8xf32>
// CHECK: call @kiln_pool2d_blocked({{.*}}, %[[C8]], %{{.*}}, %{{.*}}, %{{.*}}) {kiln.no_capture, kiln.read_only_operands = array<i64: 18>}
func.func @blocks_of_8(%x: tensor<1x5x7x7x8xf32>) -> tensor<1x5x3x3x8xf32> {
  %0 = kiln.max_pool %x {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x5x7x7x8xf32>) -> tensor<1x5x3x3x8xf32>
  return %0 : tensor<1x5x3x3x8xf32>
}
