// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-lower-to-linalg{fold-transposes=true}),canonicalize)' | FileCheck %s
// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-lower-to-linalg),canonicalize)' | FileCheck %s --check-prefix=COPY

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
