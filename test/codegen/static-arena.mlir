// RUN: kiln-opt %s -split-input-file -kiln-static-arena | FileCheck %s

// The arena becomes a private global of its size and alignment, one per
// function; other allocations stay.
// CHECK: memref.global "private" @__kiln_arena_main : memref<4096xi8> = uninitialized {alignment = 64 : i64}
// CHECK-LABEL: func.func @main
// CHECK: %[[ARENA:.*]] = memref.get_global @__kiln_arena_main : memref<4096xi8>
// CHECK: memref.view %[[ARENA]]
// CHECK: memref.alloc() : memref<4xf32>
// CHECK-NOT: kiln.arena
func.func @main(%out: memref<16xf32>) {
  %arena = memref.alloc() {alignment = 64 : i64, kiln.arena} : memref<4096xi8>
  %c0 = arith.constant 0 : index
  %v = memref.view %arena[%c0][] : memref<4096xi8> to memref<16xf32>
  memref.copy %v, %out : memref<16xf32> to memref<16xf32>
  %scratch = memref.alloc() : memref<4xf32>
  return
}

// -----

// Two functions, two arenas; a name taken already is not reused.
// CHECK: memref.global "private" @__kiln_arena_eval_0 : memref<128xi8> = uninitialized {alignment = 64 : i64}
// CHECK-LABEL: func.func @eval
// CHECK: memref.get_global @__kiln_arena_eval_0 : memref<128xi8>
// CHECK: memref.global "private" @__kiln_arena_init : memref<64xi8>
// CHECK-LABEL: func.func @init
// CHECK: memref.get_global @__kiln_arena_init : memref<64xi8>
func.func @__kiln_arena_eval() {
  return
}
func.func @eval() {
  %arena = memref.alloc() {alignment = 64 : i64, kiln.arena} : memref<128xi8>
  return
}
func.func @init() {
  %arena = memref.alloc() {alignment = 64 : i64, kiln.arena} : memref<64xi8>
  return
}
