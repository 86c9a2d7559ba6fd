// RUN: kiln-opt %s -split-input-file -kiln-results-in-place | FileCheck %s

// A returned expand_shape of an allocation: the result's shape is allocated
// and the kernels write through its collapse.
// CHECK-LABEL: func.func @expanded
// CHECK: %[[R:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x4x8xf32>
// CHECK: %[[A:.*]] = memref.collapse_shape %[[R]] {{\[\[}}0, 1], [2]] : memref<1x4x8xf32> into memref<4x8xf32>
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[A]] : memref<4x8xf32>)
// CHECK-NOT: memref.expand_shape
// CHECK: return %[[R]] : memref<1x4x8xf32>
func.func @expanded(%cst: f32) -> memref<1x4x8xf32> {
  %a = memref.alloc() {alignment = 64 : i64} : memref<4x8xf32>
  linalg.fill ins(%cst : f32) outs(%a : memref<4x8xf32>)
  %r = memref.expand_shape %a [[0, 1], [2]] output_shape [1, 4, 8] : memref<4x8xf32> into memref<1x4x8xf32>
  return %r : memref<1x4x8xf32>
}

// -----

// A returned collapse_shape: the intermediate becomes an expand_shape of
// the result.
// CHECK-LABEL: func.func @collapsed
// CHECK: %[[R:.*]] = memref.alloc() : memref<32xf32>
// CHECK: %[[A:.*]] = memref.expand_shape %[[R]] {{\[\[}}0, 1]] output_shape [4, 8] : memref<32xf32> into memref<4x8xf32>
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[A]] : memref<4x8xf32>)
// CHECK: return %[[R]] : memref<32xf32>
func.func @collapsed(%cst: f32) -> memref<32xf32> {
  %a = memref.alloc() : memref<4x8xf32>
  linalg.fill ins(%cst : f32) outs(%a : memref<4x8xf32>)
  %r = memref.collapse_shape %a [[0, 1]] : memref<4x8xf32> into memref<32xf32>
  return %r : memref<32xf32>
}

// -----

// An allocation returned itself and reshaped keeps its buffers: each result
// is its own out-parameter.
// CHECK-LABEL: func.func @returned_twice
// CHECK: %[[A:.*]] = memref.alloc() : memref<4x8xf32>
// CHECK: %[[R:.*]] = memref.expand_shape %[[A]]
// CHECK: return %[[A]], %[[R]]
func.func @returned_twice(%cst: f32) -> (memref<4x8xf32>, memref<1x4x8xf32>) {
  %a = memref.alloc() : memref<4x8xf32>
  linalg.fill ins(%cst : f32) outs(%a : memref<4x8xf32>)
  %r = memref.expand_shape %a [[0, 1], [2]] output_shape [1, 4, 8] : memref<4x8xf32> into memref<1x4x8xf32>
  return %a, %r : memref<4x8xf32>, memref<1x4x8xf32>
}

// -----

// Two reshapes of one allocation returned: both kept.
// CHECK-LABEL: func.func @reshaped_twice
// CHECK: %[[A:.*]] = memref.alloc() : memref<4x8xf32>
// CHECK: memref.expand_shape %[[A]]
// CHECK: memref.collapse_shape %[[A]]
func.func @reshaped_twice(%cst: f32) -> (memref<1x4x8xf32>, memref<32xf32>) {
  %a = memref.alloc() : memref<4x8xf32>
  linalg.fill ins(%cst : f32) outs(%a : memref<4x8xf32>)
  %r = memref.expand_shape %a [[0, 1], [2]] output_shape [1, 4, 8] : memref<4x8xf32> into memref<1x4x8xf32>
  %s = memref.collapse_shape %a [[0, 1]] : memref<4x8xf32> into memref<32xf32>
  return %r, %s : memref<1x4x8xf32>, memref<32xf32>
}

// -----

// A reshaped argument (an input returned as an output), a dynamic
// allocation and a plain allocation are left alone.
// CHECK-LABEL: func.func @left_alone
// CHECK: %[[R:.*]] = memref.expand_shape %arg0
// CHECK: %[[D:.*]] = memref.alloc(%arg2) : memref<?x8xf32>
// CHECK: %[[E:.*]] = memref.expand_shape %[[D]]
// CHECK: %[[P:.*]] = memref.alloc() : memref<4x8xf32>
// CHECK: return %[[R]], %[[E]], %[[P]]
func.func @left_alone(%arg0: memref<4x8xf32>, %cst: f32, %n: index) -> (memref<1x4x8xf32>, memref<1x?x8xf32>, memref<4x8xf32>) {
  %r = memref.expand_shape %arg0 [[0, 1], [2]] output_shape [1, 4, 8] : memref<4x8xf32> into memref<1x4x8xf32>
  %d = memref.alloc(%n) : memref<?x8xf32>
  linalg.fill ins(%cst : f32) outs(%d : memref<?x8xf32>)
  %e = memref.expand_shape %d [[0, 1], [2]] output_shape [1, %n, 8] : memref<?x8xf32> into memref<1x?x8xf32>
  %p = memref.alloc() : memref<4x8xf32>
  linalg.fill ins(%cst : f32) outs(%p : memref<4x8xf32>)
  return %r, %e, %p : memref<1x4x8xf32>, memref<1x?x8xf32>, memref<4x8xf32>
}
