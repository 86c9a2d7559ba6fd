// RUN: kiln-opt %s -split-input-file -kiln-expand-strided-copies | FileCheck %s

// Rows contiguous on both sides: one row copy (a memcpy later) per row.
// CHECK-LABEL: func @into_strided_view
// CHECK-SAME: (%[[A:.*]]: memref<2x2xf32>, %[[B:.*]]: memref<2x4xf32>)
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK: %[[V:.*]] = memref.subview %[[B]][0, 2] [2, 2] [1, 1]
// CHECK: scf.for %[[I:.*]] = %[[C0]] to %[[C2]] step %[[C1]] {
// CHECK:   %[[FROM:.*]] = memref.subview %[[A]][%[[I]], 0] [1, 2] [1, 1] : memref<2x2xf32> to memref<2xf32, strided<[1], offset: ?>>
// CHECK:   %[[TO:.*]] = memref.subview %[[V]][%[[I]], 0] [1, 2] [1, 1] : memref<2x2xf32, strided<[4, 1], offset: 2>> to memref<2xf32, strided<[1], offset: ?>>
// CHECK:   memref.copy %[[FROM]], %[[TO]] : memref<2xf32, strided<[1], offset: ?>> to memref<2xf32, strided<[1], offset: ?>>
// CHECK: }
// CHECK-NOT: linalg.copy
func.func @into_strided_view(%a: memref<2x2xf32>, %b: memref<2x4xf32>) {
  %v = memref.subview %b[0, 2] [2, 2] [1, 1] : memref<2x4xf32> to memref<2x2xf32, strided<[4, 1], offset: 2>>
  memref.copy %a, %v : memref<2x2xf32> to memref<2x2xf32, strided<[4, 1], offset: 2>>
  return
}

// -----

// Three dimensions (a padded band of channels): a loop nest over the outer two.
// CHECK-LABEL: func @rows_of_a_band
// CHECK: scf.for
// CHECK:   scf.for
// CHECK:     memref.copy %{{.*}}, %{{.*}} : memref<28xf32, strided<[1], offset: ?>> to memref<28xf32, strided<[1], offset: ?>>
// CHECK-NOT: linalg.copy
func.func @rows_of_a_band(%a: memref<6x28x28xf32>, %b: memref<6x32x32xf32>) {
  %v = memref.subview %b[0, 2, 2] [6, 28, 28] [1, 1, 1] : memref<6x32x32xf32> to memref<6x28x28xf32, strided<[1024, 32, 1], offset: 66>>
  memref.copy %a, %v : memref<6x28x28xf32> to memref<6x28x28xf32, strided<[1024, 32, 1], offset: 66>>
  return
}

// -----

// Rows with a stride: linalg.copy.
// CHECK-LABEL: func @strided_rows
// CHECK-NOT: memref.copy
// CHECK: linalg.copy ins(%{{.*}} : memref<2x4xf32, strided<[8, 2]>>) outs(%{{.*}} : memref<2x4xf32>)
func.func @strided_rows(%a: memref<2x8xf32>, %b: memref<2x4xf32>) {
  %v = memref.subview %a[0, 0] [2, 4] [1, 2] : memref<2x8xf32> to memref<2x4xf32, strided<[8, 2]>>
  memref.copy %v, %b : memref<2x4xf32, strided<[8, 2]>> to memref<2x4xf32>
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

// -----

// A band of rows whose count is dynamic (the last tile): the loop runs to
// the band's size, read at run time.
// CHECK-LABEL: func @dynamic_band
// CHECK: %[[ROWS:.*]] = memref.dim %arg0, %c0
// CHECK: scf.for %{{.*}} = %c0 to %[[ROWS]] step %c1
// CHECK:   memref.copy %{{.*}}, %{{.*}} : memref<17xf32, strided<[1], offset: ?>> to memref<17xf32, strided<[1], offset: ?>>
// CHECK-NOT: linalg.copy
func.func @dynamic_band(%a: memref<?x17xf32, strided<[19, 1], offset: ?>>, %b: memref<?x17xf32, strided<[17, 1], offset: ?>>) {
  memref.copy %a, %b : memref<?x17xf32, strided<[19, 1], offset: ?>> to memref<?x17xf32, strided<[17, 1], offset: ?>>
  return
}
