// RUN: kiln-opt %s -split-input-file -kiln-prefetch-next-tile | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-prefetch-next-tile=max-tile-bytes=1024 | FileCheck %s --check-prefix=SMALL

// A softmax-like kernel: one row (4 KiB) per iteration, a reduction loop and
// an elementwise loop over the row. The elementwise loop is strip-mined by
// 64 elements (four cache lines), each strip first prefetching its lines of
// the next row (the same row on the last iteration).
// CHECK-LABEL: func.func @rows
// CHECK-SAME: (%[[IN:.*]]: memref<4096x1024xf32>, %[[OUT:.*]]: memref<4096x1024xf32>)
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C1024:.*]] = arith.constant 1024 : index
// CHECK-DAG: %[[C4096:.*]] = arith.constant 4096 : index
// CHECK: scf.parallel (%[[ROW:.*]]) =
// CHECK: %[[X:.*]] = memref.subview %[[IN]][%[[ROW]], 0]
// The reduction loop is left alone.
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[C1024]] step %[[C1]] {
// CHECK-NOT: memref.prefetch
// CHECK: memref.store %{{.*}}, %{{.*}}[%{{.*}}] : memref<1xf32>
// CHECK: }
// CHECK: %[[PLUS:.*]] = arith.addi %[[ROW]], %[[C1]] : index
// CHECK: %[[IN_RANGE:.*]] = arith.cmpi slt, %[[PLUS]], %[[C4096]] : index
// CHECK: %[[NEXT:.*]] = arith.select %[[IN_RANGE]], %[[PLUS]], %[[ROW]] : index
// CHECK: %[[X_NEXT:.*]] = memref.subview %[[IN]][%[[NEXT]], 0] [1, 1024] [1, 1]
// CHECK: %[[C64:.*]] = arith.constant 64 : index
// CHECK: scf.for %[[J0:.*]] = %{{.*}} to %[[C1024]] step %[[C64]] {
// CHECK:   memref.prefetch %[[X_NEXT]][%{{.*}}, %[[J0]]], read, locality<3>, data
// CHECK:   %[[L1:.*]] = arith.addi %[[J0]], %{{.*}} : index
// CHECK:   memref.prefetch %[[X_NEXT]][%{{.*}}, %[[L1]]], read, locality<3>, data
// CHECK:   %[[L2:.*]] = arith.addi %[[J0]], %{{.*}} : index
// CHECK:   memref.prefetch %[[X_NEXT]][%{{.*}}, %[[L2]]], read, locality<3>, data
// CHECK:   %[[C48:.*]] = arith.constant 48 : index
// CHECK:   %[[L3:.*]] = arith.addi %[[J0]], %[[C48]] : index
// CHECK:   memref.prefetch %[[X_NEXT]][%{{.*}}, %[[L3]]], read, locality<3>, data
// CHECK-NOT: memref.prefetch
// CHECK:   %[[END:.*]] = arith.addi %[[J0]], %[[C64]] : index
// CHECK:   scf.for %[[J:.*]] = %[[J0]] to %[[END]] step %[[C1]] {
// CHECK:     memref.load %[[X]][%{{.*}}, %[[J]]]
// CHECK:     math.exp
// CHECK:     memref.store
// With at most 1 KiB a tile, the 4 KiB rows are too large (the next test's
// 1 KiB rows are not).
// SMALL-LABEL: func.func @rows
// SMALL-NOT: memref.prefetch
// SMALL-LABEL: func.func @costliest
// SMALL: memref.prefetch
func.func @rows(%in: memref<4096x1024xf32>, %out: memref<4096x1024xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c1024 = arith.constant 1024 : index
  %c4096 = arith.constant 4096 : index
  scf.parallel (%row) = (%c0) to (%c4096) step (%c1) {
    %x = memref.subview %in[%row, 0] [1, 1024] [1, 1] : memref<4096x1024xf32> to memref<1x1024xf32, strided<[1024, 1], offset: ?>>
    %y = memref.subview %out[%row, 0] [1, 1024] [1, 1] : memref<4096x1024xf32> to memref<1x1024xf32, strided<[1024, 1], offset: ?>>
    %max = memref.alloca() : memref<1xf32>
    scf.for %j = %c0 to %c1024 step %c1 {
      %v = memref.load %x[%c0, %j] : memref<1x1024xf32, strided<[1024, 1], offset: ?>>
      %m = memref.load %max[%c0] : memref<1xf32>
      %n = arith.maximumf %m, %v : f32
      memref.store %n, %max[%c0] : memref<1xf32>
    }
    scf.for %j = %c0 to %c1024 step %c1 {
      %v = memref.load %x[%c0, %j] : memref<1x1024xf32, strided<[1024, 1], offset: ?>>
      %m = memref.load %max[%c0] : memref<1xf32>
      %d = arith.subf %v, %m : f32
      %e = math.exp %d : f32
      memref.store %e, %y[%c0, %j] : memref<1x1024xf32, strided<[1024, 1], offset: ?>>
    }
    scf.reduce
  }
  return
}

// -----

// Of two elementwise loops, the one with more operations is strip-mined.
// CHECK-LABEL: func.func @costliest
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NOT: memref.prefetch
// CHECK: arith.negf
// CHECK: }
// CHECK: memref.prefetch
// CHECK: scf.for
// CHECK: math.exp
// CHECK: math.log
func.func @costliest(%in: memref<64x256xf32>, %out: memref<64x256xf32>, %out2: memref<64x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %c64 = arith.constant 64 : index
  scf.parallel (%row) = (%c0) to (%c64) step (%c1) {
    %x = memref.subview %in[%row, 0] [1, 256] [1, 1] : memref<64x256xf32> to memref<256xf32, strided<[1], offset: ?>>
    %y = memref.subview %out[%row, 0] [1, 256] [1, 1] : memref<64x256xf32> to memref<256xf32, strided<[1], offset: ?>>
    %z = memref.subview %out2[%row, 0] [1, 256] [1, 1] : memref<64x256xf32> to memref<256xf32, strided<[1], offset: ?>>
    scf.for %j = %c0 to %c256 step %c1 {
      %v = memref.load %x[%j] : memref<256xf32, strided<[1], offset: ?>>
      %n = arith.negf %v : f32
      memref.store %n, %y[%j] : memref<256xf32, strided<[1], offset: ?>>
    }
    scf.for %j = %c0 to %c256 step %c1 {
      %v = memref.load %x[%j] : memref<256xf32, strided<[1], offset: ?>>
      %e = math.exp %v : f32
      %l = math.log %e : f32
      memref.store %l, %z[%j] : memref<256xf32, strided<[1], offset: ?>>
    }
    scf.reduce
  }
  return
}

// -----

// Nothing to prefetch: the loop reads only per-tile scratch (an alloca), or
// a buffer the kernel does not tile, or its trip count is not a multiple of
// a cache line.
// CHECK-LABEL: func.func @not_tiles
// CHECK-NOT: memref.prefetch
func.func @not_tiles(%in: memref<1024xf32>, %out: memref<64x1024xf32>, %odd: memref<64x1000xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c1000 = arith.constant 1000 : index
  %c1024 = arith.constant 1024 : index
  scf.parallel (%row) = (%c0) to (%c64) step (%c1) {
    %scratch = memref.alloca() : memref<1024xf32>
    %y = memref.subview %out[%row, 0] [1, 1024] [1, 1] : memref<64x1024xf32> to memref<1024xf32, strided<[1], offset: ?>>
    %o = memref.subview %odd[%row, 0] [1, 1000] [1, 1] : memref<64x1000xf32> to memref<1000xf32, strided<[1], offset: ?>>
    scf.for %j = %c0 to %c1024 step %c1 {
      %v = memref.load %scratch[%j] : memref<1024xf32>
      %w = memref.load %in[%j] : memref<1024xf32>
      %s = arith.addf %v, %w : f32
      memref.store %s, %y[%j] : memref<1024xf32, strided<[1], offset: ?>>
    }
    scf.for %j = %c0 to %c1000 step %c1 {
      %v = memref.load %o[%j] : memref<1000xf32, strided<[1], offset: ?>>
      %e = math.exp %v : f32
      memref.store %e, %o[%j] : memref<1000xf32, strided<[1], offset: ?>>
    }
    scf.reduce
  }
  return
}

// -----

// A loop that carries a value, or stores to the same element on every
// iteration (a reduction), is not strip-mined.
// CHECK-LABEL: func.func @reductions
// CHECK-NOT: memref.prefetch
func.func @reductions(%in: memref<64x1024xf32>, %out: memref<64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c1024 = arith.constant 1024 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%row) = (%c0) to (%c64) step (%c1) {
    %x = memref.subview %in[%row, 0] [1, 1024] [1, 1] : memref<64x1024xf32> to memref<1024xf32, strided<[1], offset: ?>>
    %y = memref.subview %out[%row] [1] [1] : memref<64xf32> to memref<1xf32, strided<[1], offset: ?>>
    %sum = scf.for %j = %c0 to %c1024 step %c1 iter_args(%acc = %zero) -> f32 {
      %v = memref.load %x[%j] : memref<1024xf32, strided<[1], offset: ?>>
      %s = arith.addf %acc, %v : f32
      scf.yield %s : f32
    }
    scf.for %j = %c0 to %c1024 step %c1 {
      %v = memref.load %x[%j] : memref<1024xf32, strided<[1], offset: ?>>
      %a = memref.load %y[%c0] : memref<1xf32, strided<[1], offset: ?>>
      %s = arith.addf %a, %v : f32
      memref.store %s, %y[%c0] : memref<1xf32, strided<[1], offset: ?>>
    }
    scf.reduce
  }
  return
}
