// RUN: kiln-opt %s -split-input-file -kiln-hoist-invariant-loads | FileCheck %s

// A row's mean, read at one address in every iteration, leaves the loop:
// the loop writes only the output, a buffer of its own.
// CHECK-LABEL: func.func @row_statistic
// CHECK: %[[M:.*]] = memref.load %arg1[%{{.*}}] : memref<4xf32>
// CHECK-NEXT: scf.for
// CHECK-NOT: memref.load %arg1
// CHECK: arith.subf %{{.*}}, %[[M]]
func.func @row_statistic(%x: memref<4x256xf32>, %mean: memref<4xf32>, %out: memref<4x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c256 = arith.constant 256 : index
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %j = %c0 to %c256 step %c1 {
      %v = memref.load %x[%i, %j] : memref<4x256xf32>
      %m = memref.load %mean[%i] : memref<4xf32>
      %d = arith.subf %v, %m : f32
      memref.store %d, %out[%i, %j] : memref<4x256xf32>
    }
  }
  return
}

// -----

// Loads of a buffer the loop writes stay.
// CHECK-LABEL: func.func @written_buffer
// CHECK: scf.for
// CHECK: memref.load %arg0[%{{.*}}, %c0]
// CHECK: memref.store
func.func @written_buffer(%x: memref<4x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  scf.for %j = %c1 to %c256 step %c1 {
    %first = memref.load %x[%c0, %c0] : memref<4x256xf32>
    memref.store %first, %x[%c0, %j] : memref<4x256xf32>
  }
  return
}

// -----

// Two planned ranges of the arena: disjoint ranges are distinct buffers, a
// range over the written one is not.
// CHECK-LABEL: func.func @arena_ranges
// CHECK: %[[S:.*]] = memref.load %[[STATS:.*]][%{{.*}}] : memref<4xf32>
// CHECK-NEXT: scf.for
// CHECK: memref.load %[[OVER:.*]][%{{.*}}] : memref<4xf32>
// CHECK: arith.addf %{{.*}}, %[[S]]
func.func @arena_ranges(%arena: memref<8192xi8>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %c4096 = arith.constant 4096 : index
  %c8 = arith.constant 8 : index
  %rows = memref.view %arena[%c0][] : memref<8192xi8> to memref<1024xf32>
  %stats = memref.view %arena[%c4096][] : memref<8192xi8> to memref<4xf32>
  %over = memref.view %arena[%c8][] : memref<8192xi8> to memref<4xf32>
  scf.for %j = %c0 to %c256 step %c1 {
    %s = memref.load %stats[%c0] : memref<4xf32>
    %o = memref.load %over[%c0] : memref<4xf32>
    %a = arith.addf %o, %s : f32
    memref.store %a, %rows[%j] : memref<1024xf32>
  }
  return
}

// -----

// A sum kept in memory at one address becomes a loop-carried value, loaded
// before the loop and stored after it.
// CHECK-LABEL: func.func @accumulator
// CHECK: %[[INIT:.*]] = memref.load %arg1[%c0] : memref<1xf32>
// CHECK: %[[SUM:.*]] = scf.for %{{.*}} = %c0 to %c256 step %c1 iter_args(%[[ACC:.*]] = %[[INIT]]) -> (f32)
// CHECK: %[[V:.*]] = memref.load %arg0[%{{.*}}]
// CHECK: %[[NEXT:.*]] = arith.addf %[[ACC]], %[[V]]
// CHECK-NOT: memref.store
// CHECK: scf.yield %[[NEXT]]
// CHECK: memref.store %[[SUM]], %arg1[%c0] : memref<1xf32>
func.func @accumulator(%x: memref<256xf32>, %sum: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  scf.for %j = %c0 to %c256 step %c1 {
    %v = memref.load %x[%j] : memref<256xf32>
    %acc = memref.load %sum[%c0] : memref<1xf32>
    %next = arith.addf %acc, %v : f32
    memref.store %next, %sum[%c0] : memref<1xf32>
  }
  return
}

// -----

// Left alone: a loop that may not run (its load would be new), and a loop
// with a call, whose writes are unknown.
// CHECK-LABEL: func.func @left_alone
// CHECK: scf.for
// CHECK-NEXT: memref.load %arg1
// CHECK: scf.for
// CHECK-NEXT: memref.load %arg1
func.func private @opaque(memref<256xf32>)
func.func @left_alone(%x: memref<256xf32>, %mean: memref<1xf32>, %out: memref<256xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  scf.for %j = %c0 to %n step %c1 {
    %m = memref.load %mean[%c0] : memref<1xf32>
    memref.store %m, %out[%j] : memref<256xf32>
  }
  scf.for %j = %c0 to %c256 step %c1 {
    %m = memref.load %mean[%c0] : memref<1xf32>
    memref.store %m, %out[%j] : memref<256xf32>
    func.call @opaque(%x) : (memref<256xf32>) -> ()
  }
  return
}
