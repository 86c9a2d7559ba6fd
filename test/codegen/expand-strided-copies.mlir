// RUN: kiln-opt %s -split-input-file -kiln-expand-strided-copies | FileCheck %s

// CHECK-LABEL: func @into_strided_view
// CHECK-SAME: (%[[A:.*]]: memref<2x2xf32>, %[[B:.*]]: memref<2x4xf32>)
// CHECK: %[[V:.*]] = memref.subview %[[B]][0, 2] [2, 2] [1, 1]
// CHECK-NOT: memref.copy
// CHECK: linalg.copy ins(%[[A]] : memref<2x2xf32>) outs(%[[V]] : memref<2x2xf32, strided<[4, 1], offset: 2>>)
func.func @into_strided_view(%a: memref<2x2xf32>, %b: memref<2x4xf32>) {
  %v = memref.subview %b[0, 2] [2, 2] [1, 1] : memref<2x4xf32> to memref<2x2xf32, strided<[4, 1], offset: 2>>
  memref.copy %a, %v : memref<2x2xf32> to memref<2x2xf32, strided<[4, 1], offset: 2>>
  return
}

// -----

// CHECK-LABEL: func @from_strided_view
// CHECK: linalg.copy ins(%{{.*}} : memref<4xf32, strided<[2]>>) outs(%{{.*}} : memref<4xf32>)
func.func @from_strided_view(%a: memref<8xf32>, %b: memref<4xf32>) {
  %v = memref.subview %a[0] [4] [2] : memref<8xf32> to memref<4xf32, strided<[2]>>
  memref.copy %v, %b : memref<4xf32, strided<[2]>> to memref<4xf32>
  return
}

// -----

// Contiguous copies, with or without an offset, stay memcpy-able.
// CHECK-LABEL: func @contiguous_copies_kept
// CHECK: memref.copy %{{.*}}, %{{.*}} : memref<4xf32> to memref<4xf32>
// CHECK: memref.copy %{{.*}}, %{{.*}} : memref<4xf32> to memref<4xf32, strided<[1], offset: 4>>
// CHECK-NOT: linalg.copy
func.func @contiguous_copies_kept(%a: memref<4xf32>, %b: memref<4xf32>, %c: memref<8xf32>) {
  memref.copy %a, %b : memref<4xf32> to memref<4xf32>
  %v = memref.subview %c[4] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: 4>>
  memref.copy %a, %v : memref<4xf32> to memref<4xf32, strided<[1], offset: 4>>
  return
}
