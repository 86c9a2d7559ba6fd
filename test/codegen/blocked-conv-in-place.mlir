// RUN: kiln-opt %s -split-input-file -kiln-blocked-conv-in-place | FileCheck %s

// A Fire module at batch 2: each expand convolution writes its slot of the
// concatenation. The second is moved below the first insertion, whose
// result it is sliced from.
// CHECK-LABEL: func @fire
// CHECK-SAME: (%[[X:[^:]*]]: tensor<2x1x6x6x16xf32>
// CHECK: %[[E:.*]] = tensor.empty() : tensor<2x4x6x6x16xf32>
// CHECK: %[[S1:.*]] = tensor.extract_slice %[[E]][0, 0, 0, 0, 0] [2, 2, 6, 6, 16] [1, 1, 1, 1, 1] : tensor<2x4x6x6x16xf32> to tensor<2x2x6x6x16xf32>
// CHECK: %[[C1:.*]] = kiln.blocked_conv %[[X]], %{{.*}} into %[[S1]]
// CHECK: %[[I1:.*]] = tensor.insert_slice %[[C1]] into %[[E]][0, 0, 0, 0, 0] [2, 2, 6, 6, 16]
// CHECK: %[[S2:.*]] = tensor.extract_slice %[[I1]][0, 2, 0, 0, 0] [2, 2, 6, 6, 16] [1, 1, 1, 1, 1]
// CHECK: %[[C2:.*]] = kiln.blocked_conv %[[X]], %{{.*}} into %[[S2]]
// CHECK: %[[I2:.*]] = tensor.insert_slice %[[C2]] into %[[I1]][0, 2, 0, 0, 0] [2, 2, 6, 6, 16]
// CHECK: return %[[I2]]
func.func @fire(%x: tensor<2x1x6x6x16xf32>, %w1: tensor<32x16x1x1xf32>, %w3: tensor<32x16x3x3xf32>) -> tensor<2x4x6x6x16xf32> {
  %0 = kiln.blocked_conv %x, %w1 {clamp_min = 0.0 : f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<2x1x6x6x16xf32>, tensor<32x16x1x1xf32>) -> tensor<2x2x6x6x16xf32>
  %1 = kiln.blocked_conv %x, %w3 {clamp_min = 0.0 : f32, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x1x6x6x16xf32>, tensor<32x16x3x3xf32>) -> tensor<2x2x6x6x16xf32>
  %e = tensor.empty() : tensor<2x4x6x6x16xf32>
  %2 = tensor.insert_slice %0 into %e[0, 0, 0, 0, 0] [2, 2, 6, 6, 16] [1, 1, 1, 1, 1] : tensor<2x2x6x6x16xf32> into tensor<2x4x6x6x16xf32>
  %3 = tensor.insert_slice %1 into %2[0, 2, 0, 0, 0] [2, 2, 6, 6, 16] [1, 1, 1, 1, 1] : tensor<2x2x6x6x16xf32> into tensor<2x4x6x6x16xf32>
  return %3 : tensor<2x4x6x6x16xf32>
}

// -----

// At batch 1 the result is inserted through a reshape that drops the
// batch: the insertion takes the result as it is, so that it and the
// slot have one type, and the reshape goes.
// CHECK-LABEL: func @batch_one
// CHECK-NOT: tensor.collapse_shape
// CHECK: %[[S:.*]] = tensor.extract_slice %{{.*}}[0, 2, 0, 0, 0] [1, 2, 6, 6, 16] [1, 1, 1, 1, 1] : tensor<1x4x6x6x16xf32> to tensor<1x2x6x6x16xf32>
// CHECK: %[[C:.*]] = kiln.blocked_conv %{{.*}}, %{{.*}} into %[[S]]
// CHECK: tensor.insert_slice %[[C]] into %{{.*}}[0, 2, 0, 0, 0] [1, 2, 6, 6, 16] [1, 1, 1, 1, 1] : tensor<1x2x6x6x16xf32> into tensor<1x4x6x6x16xf32>
// CHECK-NOT: tensor.collapse_shape
func.func @batch_one(%x: tensor<1x1x6x6x16xf32>, %w: tensor<32x16x1x1xf32>, %t: tensor<1x4x6x6x16xf32>) -> tensor<1x4x6x6x16xf32> {
  %0 = kiln.blocked_conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x6x6x16xf32>, tensor<32x16x1x1xf32>) -> tensor<1x2x6x6x16xf32>
  %c = tensor.collapse_shape %0 [[0, 1], [2], [3], [4]] : tensor<1x2x6x6x16xf32> into tensor<2x6x6x16xf32>
  %1 = tensor.insert_slice %c into %t[0, 2, 0, 0, 0] [1, 2, 6, 6, 16] [1, 1, 1, 1, 1] : tensor<2x6x6x16xf32> into tensor<1x4x6x6x16xf32>
  return %1 : tensor<1x4x6x6x16xf32>
}

// -----

// Readers after the insertion do not matter (they read the slot); the
// first of two insertions is the one written in place.
// CHECK-LABEL: func @read_after
// CHECK: %[[C:.*]] = kiln.blocked_conv %{{.*}}, %{{.*}} into %{{.*}}
// CHECK: tensor.insert_slice %[[C]] into %arg2[0, 0, 0, 0, 0]
// CHECK: kiln.relu %[[C]]
// CHECK: tensor.insert_slice %[[C]] into %arg2[0, 2, 0, 0, 0]
func.func @read_after(%x: tensor<1x1x6x6x16xf32>, %w: tensor<32x16x1x1xf32>, %t: tensor<1x4x6x6x16xf32>) -> (tensor<1x4x6x6x16xf32>, tensor<1x2x6x6x16xf32>, tensor<1x4x6x6x16xf32>) {
  %0 = kiln.blocked_conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x6x6x16xf32>, tensor<32x16x1x1xf32>) -> tensor<1x2x6x6x16xf32>
  %1 = tensor.insert_slice %0 into %t[0, 0, 0, 0, 0] [1, 2, 6, 6, 16] [1, 1, 1, 1, 1] : tensor<1x2x6x6x16xf32> into tensor<1x4x6x6x16xf32>
  %2 = kiln.relu %0 : tensor<1x2x6x6x16xf32>
  %3 = tensor.insert_slice %0 into %t[0, 2, 0, 0, 0] [1, 2, 6, 6, 16] [1, 1, 1, 1, 1] : tensor<1x2x6x6x16xf32> into tensor<1x4x6x6x16xf32>
  return %1, %2, %3 : tensor<1x4x6x6x16xf32>, tensor<1x2x6x6x16xf32>, tensor<1x4x6x6x16xf32>
}

// -----

// Left as they are: a result read before its insertion, a convolution with
// an addend, an insertion with strides, a result that is inserted into
// rather than inserted.
// CHECK-LABEL: func @left_alone
// CHECK-NOT: {{kiln.blocked_conv.* into }}
// CHECK-NOT: tensor.extract_slice
func.func @left_alone(%x: tensor<1x1x6x6x16xf32>, %w: tensor<32x16x1x1xf32>, %r: tensor<1x2x6x6x16xf32>, %t: tensor<1x4x6x6x16xf32>, %u: tensor<1x1x6x6x16xf32>) -> (tensor<1x2x6x6x16xf32>, tensor<1x4x6x6x16xf32>, tensor<1x4x6x6x16xf32>, tensor<1x4x6x6x16xf32>, tensor<1x2x6x6x16xf32>) {
  %0 = kiln.blocked_conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x6x6x16xf32>, tensor<32x16x1x1xf32>) -> tensor<1x2x6x6x16xf32>
  %1 = kiln.relu %0 : tensor<1x2x6x6x16xf32>
  %2 = tensor.insert_slice %0 into %t[0, 0, 0, 0, 0] [1, 2, 6, 6, 16] [1, 1, 1, 1, 1] : tensor<1x2x6x6x16xf32> into tensor<1x4x6x6x16xf32>
  %3 = kiln.blocked_conv %x, %w add %r {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x6x6x16xf32>, tensor<32x16x1x1xf32>, tensor<1x2x6x6x16xf32>) -> tensor<1x2x6x6x16xf32>
  %4 = tensor.insert_slice %3 into %t[0, 2, 0, 0, 0] [1, 2, 6, 6, 16] [1, 1, 1, 1, 1] : tensor<1x2x6x6x16xf32> into tensor<1x4x6x6x16xf32>
  %5 = kiln.blocked_conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x6x6x16xf32>, tensor<32x16x1x1xf32>) -> tensor<1x2x6x6x16xf32>
  %6 = tensor.insert_slice %5 into %t[0, 0, 0, 0, 0] [1, 2, 6, 6, 16] [1, 2, 1, 1, 1] : tensor<1x2x6x6x16xf32> into tensor<1x4x6x6x16xf32>
  %7 = kiln.blocked_conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x6x6x16xf32>, tensor<32x16x1x1xf32>) -> tensor<1x2x6x6x16xf32>
  %8 = tensor.insert_slice %u into %7[0, 1, 0, 0, 0] [1, 1, 6, 6, 16] [1, 1, 1, 1, 1] : tensor<1x1x6x6x16xf32> into tensor<1x2x6x6x16xf32>
  return %1, %2, %4, %6, %8 : tensor<1x2x6x6x16xf32>, tensor<1x4x6x6x16xf32>, tensor<1x4x6x6x16xf32>, tensor<1x4x6x6x16xf32>, tensor<1x2x6x6x16xf32>
}
