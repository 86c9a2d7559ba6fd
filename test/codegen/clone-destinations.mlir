// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-clone-destinations))' | FileCheck %s

// A zero fill of an empty tensor shared by two matmul kernels (CSE merged
// them): the second kernel gets a fill of an empty of its own, the first
// keeps the original.
// CHECK-LABEL: func.func @shared_fill
// CHECK: %[[E0:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK: %[[F0:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E0]] : tensor<4x8xf32>)
// CHECK: %[[A:.*]] = linalg.matmul ins(%arg0, %arg1 : tensor<4x8xf32>, tensor<8x8xf32>) outs(%[[F0]] : tensor<4x8xf32>)
// CHECK: %[[E1:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK: %[[F1:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E1]] : tensor<4x8xf32>)
// CHECK: linalg.matmul ins(%[[A]], %arg1 : tensor<4x8xf32>, tensor<8x8xf32>) outs(%[[F1]] : tensor<4x8xf32>)
func.func @shared_fill(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %a = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %b = linalg.matmul ins(%a, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %b : tensor<4x8xf32>
}

// -----

// An empty tensor used as the destination of three elementwise kernels:
// two clones, each right before its user.
// CHECK-LABEL: func.func @shared_empty
// CHECK-COUNT-3: tensor.empty() : tensor<16xf32>
// CHECK-NOT: tensor.empty
#id = affine_map<(d0) -> (d0)>
func.func @shared_empty(%x: tensor<16xf32>) -> tensor<16xf32> {
  %e = tensor.empty() : tensor<16xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %in : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%a : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.mulf %in, %in : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  %c = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%b : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.subf %in, %in : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  return %c : tensor<16xf32>
}

// -----

// A fill of a value computed at run time, and an empty tensor with a single
// use, are left alone.
// CHECK-LABEL: func.func @left_alone
// CHECK-COUNT-1: tensor.empty
// CHECK-NOT: tensor.empty
func.func @left_alone(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %v: f32) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%v : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %a = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %b = linalg.matmul ins(%a, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %b : tensor<4x8xf32>
}

// -----

// A value returned twice: the second result is a copy into a tensor of its
// own; a returned argument is left to bufferization.
// CHECK-LABEL: func.func @repeated_result
// CHECK: %[[A:.*]] = linalg.generic
// CHECK: %[[E:.*]] = tensor.empty() : tensor<16xf32>
// CHECK: %[[C:.*]] = linalg.copy ins(%[[A]] : tensor<16xf32>) outs(%[[E]] : tensor<16xf32>)
// CHECK: return %[[A]], %[[C]], %arg0
#id = affine_map<(d0) -> (d0)>
func.func @repeated_result(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %e = tensor.empty() : tensor<16xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %in : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  return %a, %a, %x : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}
