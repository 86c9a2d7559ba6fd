// RUN: kiln-opt %s -split-input-file -kiln-block-per-loop | FileCheck %s

// Each loop nest ends its block with a branch to the ops that followed it,
// and the block before the terminator keeps it.
// CHECK-LABEL: func.func @two_loops
// CHECK:         scf.for
// CHECK:           memref.store
// CHECK:         }
// CHECK-NEXT:    cf.br ^[[B1:.*]]
// CHECK-NEXT:  ^[[B1]]:
// CHECK-NEXT:    memref.copy
// CHECK-NEXT:    scf.for
// CHECK:         }
// CHECK-NEXT:    cf.br ^[[B2:.*]]
// CHECK-NEXT:  ^[[B2]]:
// CHECK-NEXT:    memref.store
// CHECK-NEXT:    return
// CHECK-NOT:   ^
func.func @two_loops(%a: memref<4xf32>, %b: memref<4xf32>, %x: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    memref.store %x, %a[%i] : memref<4xf32>
  }
  memref.copy %a, %b : memref<4xf32> to memref<4xf32>
  scf.for %j = %c0 to %c4 step %c1 {
    memref.store %x, %b[%j] : memref<4xf32>
  }
  memref.store %x, %a[%c0] : memref<4xf32>
  return
}

// -----

// A loop right before the terminator needs no block of its own, nor do the
// loops nested in another loop's body (a loop's body stays one block).
// CHECK-LABEL: func.func @last_and_nested
// CHECK-NOT:   cf.br
// CHECK:         scf.for
// CHECK-NEXT:      scf.for
// CHECK:           scf.for
// CHECK-NOT:   cf.br
// CHECK:         return
func.func @last_and_nested(%a: memref<4x4xf32>, %x: f32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    scf.for %j = %c0 to %c4 step %c1 {
      memref.store %x, %a[%i, %j] : memref<4x4xf32>
    }
    scf.for %j = %c0 to %c4 step %c1 {
      memref.store %x, %a[%j, %i] : memref<4x4xf32>
    }
  }
  return
}

// -----

// Every block of a body that already has several is split, and a block's
// region ops of any kind (here an scf.if) count.
// CHECK-LABEL: func.func @blocks
// CHECK:         scf.if
// CHECK:         }
// CHECK-NEXT:    cf.br ^[[T:.*]]
// CHECK-NEXT:  ^[[T]]:
// CHECK-NEXT:    memref.store
// CHECK-NEXT:    cf.br ^[[NEXT:.*]]
// CHECK-NEXT:  ^[[NEXT]]:
// CHECK-NEXT:    scf.if
// CHECK:         }
// CHECK-NEXT:    cf.br ^[[U:.*]]
// CHECK-NEXT:  ^[[U]]:
// CHECK-NEXT:    memref.store
// CHECK-NEXT:    return
func.func @blocks(%a: memref<4xf32>, %x: f32, %p: i1) {
  %c0 = arith.constant 0 : index
  scf.if %p {
    memref.store %x, %a[%c0] : memref<4xf32>
  }
  memref.store %x, %a[%c0] : memref<4xf32>
  cf.br ^next
^next:
  scf.if %p {
    memref.store %x, %a[%c0] : memref<4xf32>
  }
  memref.store %x, %a[%c0] : memref<4xf32>
  return
}

// -----

// A declaration has no body to split.
// CHECK-LABEL: func.func private @external
func.func private @external(memref<4xf32>)
