// RUN: kiln-opt %s -split-input-file -kiln-empty-buffers | FileCheck %s

// A public function's buffers with no elements become memref<0xT>, which
// the bare-pointer convention passes; copies of no element are erased.
// CHECK-LABEL: func.func @entry
// CHECK-SAME: (%{{.*}}: memref<0xf32>, %[[X:.*]]: memref<4xf32>, %{{.*}}: memref<0xi64>, %[[Y:.*]]: memref<4xf32>)
// CHECK-NOT: memref.copy {{.*}} memref<2x0xi64>
// CHECK: memref.copy %[[X]], %[[Y]]
// CHECK-NEXT: return
func.func @entry(%e: memref<3x0x5xf32>, %x: memref<4xf32>, %out: memref<2x0xi64>,
                 %y: memref<4xf32>) {
  %nothing = memref.alloc() : memref<2x0xi64>
  memref.copy %nothing, %out : memref<2x0xi64> to memref<2x0xi64>
  memref.copy %x, %y : memref<4xf32> to memref<4xf32>
  return
}

// -----

// What still reads an empty argument reads a zero-byte buffer of its old
// type.
// CHECK-LABEL: func.func @still_used
// CHECK-SAME: (%{{.*}}: memref<0xf32>, %[[OUT:.*]]: memref<index>)
// CHECK-NEXT: %[[STAND:.*]] = memref.alloca() : memref<3x0x5xf32>
// CHECK-NEXT: %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT: %[[DIM:.*]] = memref.dim %[[STAND]], %[[C1]]
func.func @still_used(%e: memref<3x0x5xf32>, %out: memref<index>) {
  %c1 = arith.constant 1 : index
  %d = memref.dim %e, %c1 : memref<3x0x5xf32>
  memref.store %d, %out[] : memref<index>
  return
}

// -----

// A private function keeps its signature (its callers are not rewritten);
// a rank-1 empty buffer is already passed as a bare pointer.
// CHECK-LABEL: func.func private @helper
// CHECK-SAME: memref<3x0x5xf32>
// CHECK-LABEL: func.func @rank_one
// CHECK-SAME: memref<0xf32>
func.func private @helper(%e: memref<3x0x5xf32>) {
  return
}
func.func @rank_one(%e: memref<0xf32>) {
  return
}
