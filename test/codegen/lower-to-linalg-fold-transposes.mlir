// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-lower-to-linalg{fold-transposes=true}),canonicalize)' | FileCheck %s
// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-lower-to-linalg),canonicalize)' | FileCheck %s --check-prefix=COPY
// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-lower-to-linalg{fold-transposes=true stack-rows=true}),canonicalize)' | FileCheck %s --check-prefix=STACK

// X^T dY: the matmul reads X through a transposed map; nothing is copied.
// CHECK-DAG: #[[XT:.*]] = affine_map<(d0, d1, d2) -> (d2, d0)>
// CHECK-DAG: #[[DY:.*]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// CHECK-LABEL: func.func @weight_gradient
// CHECK-SAME: (%[[X:.*]]: tensor<8x4xf32>, %[[G:.*]]: tensor<8x3xf32>)
// CHECK-NOT: linalg.transpose
// CHECK: linalg.generic {indexing_maps = [#[[XT]], #[[DY]], #{{.*}}]{{.*}} ins(%[[X]], %[[G]] : tensor<8x4xf32>, tensor<8x3xf32>)
// Without the option the transpose is a copy.
// COPY-LABEL: func.func @weight_gradient
// COPY: linalg.transpose
func.func @weight_gradient(%x: tensor<8x4xf32>, %g: tensor<8x3xf32>) -> tensor<4x3xf32> {
  %xt = kiln.transpose %x {perm = array<i64: 1, 0>} : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %dw = kiln.matmul %xt, %g : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  return %dw : tensor<4x3xf32>
}

// -----

// Batched: the right operand's last two dimensions swapped, batch kept.
// CHECK-DAG: #[[BT:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// CHECK-LABEL: func.func @batched_rhs
// CHECK-NOT: linalg.transpose
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[BT]], #{{.*}}]
func.func @batched_rhs(%a: tensor<2x5x6xf32>, %b: tensor<2x7x6xf32>) -> tensor<2x5x7xf32> {
  %bt = kiln.transpose %b {perm = array<i64: 0, 2, 1>} : (tensor<2x7x6xf32>) -> tensor<2x6x7xf32>
  %y = kiln.matmul %a, %bt : (tensor<2x5x6xf32>, tensor<2x6x7xf32>) -> tensor<2x5x7xf32>
  return %y : tensor<2x5x7xf32>
}

// -----

// Other permutations are not a matrix transposition: they stay copies.
// CHECK-LABEL: func.func @other_permutation
// CHECK: linalg.transpose
func.func @other_permutation(%a: tensor<2x5x6xf32>, %b: tensor<6x2x7xf32>) -> tensor<2x5x7xf32> {
  %bt = kiln.transpose %b {perm = array<i64: 1, 0, 2>} : (tensor<6x2x7xf32>) -> tensor<2x6x7xf32>
  %y = kiln.matmul %a, %bt : (tensor<2x5x6xf32>, tensor<2x6x7xf32>) -> tensor<2x5x7xf32>
  return %y : tensor<2x5x7xf32>
}

// -----

// A weight gradient's transpose back to the filter's layout: the
// convolution runs over (g, f, n, oh, ow | c, kh, kw) and writes
// [g, f, n, oh, ow] itself, collapsed to the transpose's [f, n, oh, ow].
// CHECK-DAG: #[[IMAGE:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d2, d0, d5, d3 + d6, d4 + d7)>
// CHECK-DAG: #[[FILTER:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, d6, d7)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d2, d3, d4)>
// CHECK-LABEL: func.func @channel_first_convolution
// CHECK-NOT: linalg.transpose
// CHECK: linalg.generic {indexing_maps = [#[[IMAGE]], #[[FILTER]], #[[OUT]]]{{.*}} outs(%{{.*}} : tensor<1x16x4x3x3xf32>)
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0, 1], [2], [3], [4]] : tensor<1x16x4x3x3xf32> into tensor<16x4x3x3xf32>
// COPY-LABEL: func.func @channel_first_convolution
// COPY: linalg.transpose
func.func @channel_first_convolution(%xt: tensor<4x8x6x6xf32>, %gt: tensor<16x8x4x4xf32>) -> tensor<16x4x3x3xf32> {
  %g = kiln.conv %xt, %gt {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<4x8x6x6xf32>, tensor<16x8x4x4xf32>) -> tensor<4x16x3x3xf32>
  %dw = kiln.transpose %g {perm = array<i64: 1, 0, 2, 3>} : (tensor<4x16x3x3xf32>) -> tensor<16x4x3x3xf32>
  return %dw : tensor<16x4x3x3xf32>
}

// -----

// Grouped, or with another user of the result: the transpose stays a copy.
// CHECK-LABEL: func.func @not_channel_first
// CHECK: linalg.transpose
// CHECK: linalg.transpose
func.func @not_channel_first(%x: tensor<4x8x6x6xf32>, %w: tensor<16x4x4x4xf32>, %v: tensor<16x8x4x4xf32>) -> (tensor<16x4x3x3xf32>, tensor<16x4x3x3xf32>, tensor<4x16x3x3xf32>) {
  %g = kiln.conv %x, %w {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<4x8x6x6xf32>, tensor<16x4x4x4xf32>) -> tensor<4x16x3x3xf32>
  %t = kiln.transpose %g {perm = array<i64: 1, 0, 2, 3>} : (tensor<4x16x3x3xf32>) -> tensor<16x4x3x3xf32>
  %h = kiln.conv %x, %v {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<4x8x6x6xf32>, tensor<16x8x4x4xf32>) -> tensor<4x16x3x3xf32>
  %u = kiln.transpose %h {perm = array<i64: 1, 0, 2, 3>} : (tensor<4x16x3x3xf32>) -> tensor<16x4x3x3xf32>
  return %t, %u, %h : tensor<16x4x3x3xf32>, tensor<16x4x3x3xf32>, tensor<4x16x3x3xf32>
}

// -----

// The CPU's options together: a stack of 7-row matrices times a transposed
// matrix (a Linear layer's W^T) is one product of 49 rows that reads W
// through a transposed map; a stack read through a transpose of its own
// last two dimensions keeps its batch loop.
// STACK-DAG: #[[WT:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// STACK-LABEL: func.func @stacked_transposed_rhs
// STACK-SAME: (%[[X:.*]]: tensor<1x7x7x6xf32>, %[[W:.*]]: tensor<5x6xf32>)
// STACK: %[[ROWS:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1, 2], [3]] : tensor<1x7x7x6xf32> into tensor<49x6xf32>
// STACK-NOT: linalg.transpose
// STACK: linalg.generic {indexing_maps = [#{{.*}}, #[[WT]], #{{.*}}]{{.*}} ins(%[[ROWS]], %[[W]] : tensor<49x6xf32>, tensor<5x6xf32>)
// STACK: tensor.expand_shape {{.*}} into tensor<1x7x7x5xf32>
// STACK-LABEL: func.func @stacked_transposed_lhs
// STACK-NOT: tensor.collapse_shape
// STACK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]
func.func @stacked_transposed_rhs(%x: tensor<1x7x7x6xf32>, %w: tensor<5x6xf32>) -> tensor<1x7x7x5xf32> {
  %wt = kiln.transpose %w {perm = array<i64: 1, 0>} : (tensor<5x6xf32>) -> tensor<6x5xf32>
  %y = kiln.matmul %x, %wt : (tensor<1x7x7x6xf32>, tensor<6x5xf32>) -> tensor<1x7x7x5xf32>
  return %y : tensor<1x7x7x5xf32>
}
func.func @stacked_transposed_lhs(%x: tensor<3x6x7xf32>, %w: tensor<6x5xf32>) -> tensor<3x7x5xf32> {
  %xt = kiln.transpose %x {perm = array<i64: 0, 2, 1>} : (tensor<3x6x7xf32>) -> tensor<3x7x6xf32>
  %y = kiln.matmul %xt, %w : (tensor<3x7x6xf32>, tensor<6x5xf32>) -> tensor<3x7x5xf32>
  return %y : tensor<3x7x5xf32>
}
