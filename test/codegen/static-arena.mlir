// RUN: kiln-opt %s -split-input-file -kiln-static-arena | FileCheck %s

// The arena becomes a private global of its alignment, one per function,
// a tail of pages longer (here one page); the first call stores a zero into
// each page of the tail and sets the flag. Other allocations stay.
// CHECK: memref.global "private" @__kiln_arena_main : memref<8192xi8> = uninitialized {alignment = 64 : i64}
// CHECK: memref.global "private" @__kiln_arena_main_tail_ready : memref<1xi8> = dense<0>
// CHECK-LABEL: func.func @main
// CHECK-DAG: %[[WHOLE:.*]] = memref.get_global @__kiln_arena_main : memref<8192xi8>
// CHECK-DAG: %[[FLAG:.*]] = memref.get_global @__kiln_arena_main_tail_ready : memref<1xi8>
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : i8
// CHECK: %[[READY:.*]] = memref.load %[[FLAG]]
// CHECK: %[[COLD:.*]] = arith.cmpi eq, %[[READY]], %[[ZERO]] : i8
// CHECK: scf.if %[[COLD]] {
// CHECK-DAG: %[[BEGIN:.*]] = arith.constant 4096 : index
// CHECK-DAG: %[[END:.*]] = arith.constant 8192 : index
// CHECK: scf.for %[[PAGE:.*]] = %[[BEGIN]] to %[[END]] step
// CHECK-NEXT: memref.store %[[ZERO]], %[[WHOLE]][%[[PAGE]]] : memref<8192xi8>
// CHECK: memref.store %{{.*}}, %[[FLAG]]
// CHECK: }
// CHECK: %[[ARENA:.*]] = memref.view %[[WHOLE]][%{{.*}}][] : memref<8192xi8> to memref<4096xi8>
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

// Two functions, two arenas; a name taken already is not reused. A small
// arena's tail is one page.
// CHECK: memref.global "private" @__kiln_arena_eval_0 : memref<4224xi8> = uninitialized {alignment = 64 : i64}
// CHECK: memref.global "private" @__kiln_arena_eval_0_tail_ready : memref<1xi8>
// CHECK-LABEL: func.func @eval
// CHECK: memref.get_global @__kiln_arena_eval_0 : memref<4224xi8>
// CHECK: memref.view %{{.*}} : memref<4224xi8> to memref<128xi8>
// CHECK: memref.global "private" @__kiln_arena_init : memref<4160xi8>
// CHECK-LABEL: func.func @init
// CHECK: memref.get_global @__kiln_arena_init : memref<4160xi8>
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

// -----

// A large arena's tail stops at 1 MiB; an arena that is not of bytes keeps
// its type and gets no tail.
// CHECK: memref.global "private" @__kiln_arena_big : memref<5242880xi8>
// CHECK-LABEL: func.func @big
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step
// CHECK: memref.view %{{.*}} : memref<5242880xi8> to memref<4194304xi8>
// CHECK: memref.global "private" @__kiln_arena_floats : memref<16xf32> = uninitialized
// CHECK-NOT: tail_ready
// CHECK-LABEL: func.func @floats
// CHECK-NEXT: memref.get_global @__kiln_arena_floats : memref<16xf32>
// CHECK-NOT: scf.if
// CHECK: return
func.func @big() {
  %arena = memref.alloc() {alignment = 64 : i64, kiln.arena} : memref<4194304xi8>
  return
}
func.func @floats() {
  %arena = memref.alloc() {kiln.arena} : memref<16xf32>
  return
}
