// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-plan-buffers))' | FileCheck %s

// Two buffers that are never live at the same time share offset 0; the arena
// is as large as the larger one.
// CHECK-LABEL: func @disjoint_live_ranges
// CHECK-SAME: attributes {kiln.intermediate_buffers = 2 : i64, kiln.peak_intermediate_bytes = 64 : i64, kiln.unplanned_buffers = 0 : i64}
// CHECK: %[[ARENA:.*]] = memref.alloc() {alignment = 64 : i64, kiln.arena} : memref<64xi8>
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK-NOT: memref.alloc
// CHECK: %[[A:.*]] = memref.view %[[ARENA]][%[[C0]]][] : memref<64xi8> to memref<16xf32>
// CHECK: linalg.copy ins(%{{.*}} : memref<16xf32>) outs(%[[A]] : memref<16xf32>)
// CHECK: linalg.copy ins(%[[A]] : memref<16xf32>)
// CHECK: %[[B:.*]] = memref.view %[[ARENA]][%[[C0]]][] : memref<64xi8> to memref<8xf32>
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[B]] : memref<8xf32>)
// CHECK-NOT: memref.alloc
func.func @disjoint_live_ranges(%in: memref<16xf32>, %out: memref<16xf32>, %out2: memref<8xf32>) {
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc() {alignment = 64 : i64} : memref<16xf32>
  linalg.copy ins(%in : memref<16xf32>) outs(%a : memref<16xf32>)
  linalg.copy ins(%a : memref<16xf32>) outs(%out : memref<16xf32>)
  %b = memref.alloc() {alignment = 64 : i64} : memref<8xf32>
  linalg.fill ins(%zero : f32) outs(%b : memref<8xf32>)
  linalg.copy ins(%b : memref<8xf32>) outs(%out2 : memref<8xf32>)
  return
}

// -----

// Buffers live at the same time get distinct 64-byte-aligned offsets, the
// largest first: 40 bytes at 0, 24 bytes at 64.
// CHECK-LABEL: func @overlapping_live_ranges
// CHECK-SAME: attributes {kiln.intermediate_buffers = 2 : i64, kiln.peak_intermediate_bytes = 88 : i64, kiln.unplanned_buffers = 0 : i64}
// CHECK-DAG: %[[ARENA:.*]] = memref.alloc() {alignment = 64 : i64, kiln.arena} : memref<88xi8>
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : index
// CHECK: memref.view %[[ARENA]][%[[C64]]][] : memref<88xi8> to memref<6xf32>
// CHECK: memref.view %[[ARENA]][%[[C0]]][] : memref<88xi8> to memref<10xf32>
// CHECK-NOT: memref.alloc
func.func @overlapping_live_ranges(%out: memref<6xf32>, %out2: memref<10xf32>) {
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc() : memref<6xf32>
  linalg.fill ins(%zero : f32) outs(%a : memref<6xf32>)
  %b = memref.alloc() : memref<10xf32>
  linalg.fill ins(%zero : f32) outs(%b : memref<10xf32>)
  linalg.copy ins(%a : memref<6xf32>) outs(%out : memref<6xf32>)
  linalg.copy ins(%b : memref<10xf32>) outs(%out2 : memref<10xf32>)
  return
}

// -----

// A buffer stays live while a view of it is used: %a's last direct use is
// the fill, but its collapse_shape is read after %b is allocated.
// CHECK-LABEL: func @collapse_shape_extends_live_range
// CHECK-SAME: kiln.peak_intermediate_bytes = 128 : i64
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : index
// CHECK: %[[A:.*]] = memref.view %{{.*}}[%[[C0]]][] : memref<128xi8> to memref<4x4xf32>
// CHECK: memref.collapse_shape %[[A]]
// CHECK: memref.view %{{.*}}[%[[C64]]][] : memref<128xi8> to memref<16xf32>
func.func @collapse_shape_extends_live_range(%out: memref<16xf32>, %out2: memref<16xf32>) {
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc() : memref<4x4xf32>
  linalg.fill ins(%zero : f32) outs(%a : memref<4x4xf32>)
  %flat = memref.collapse_shape %a [[0, 1]] : memref<4x4xf32> into memref<16xf32>
  %b = memref.alloc() : memref<16xf32>
  linalg.fill ins(%zero : f32) outs(%b : memref<16xf32>)
  linalg.copy ins(%flat : memref<16xf32>) outs(%out : memref<16xf32>)
  linalg.copy ins(%b : memref<16xf32>) outs(%out2 : memref<16xf32>)
  return
}

// -----

// Views of views are followed too: a subview of the collapsed buffer.
// CHECK-LABEL: func @subview_of_view_extends_live_range
// CHECK-SAME: kiln.peak_intermediate_bytes = 128 : i64
// CHECK: memref.view %{{.*}} : memref<128xi8> to memref<4x4xf32>
// CHECK: memref.view %{{.*}} : memref<128xi8> to memref<16xf32>
func.func @subview_of_view_extends_live_range(%out: memref<8xf32>, %out2: memref<16xf32>) {
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc() : memref<4x4xf32>
  linalg.fill ins(%zero : f32) outs(%a : memref<4x4xf32>)
  %flat = memref.collapse_shape %a [[0, 1]] : memref<4x4xf32> into memref<16xf32>
  %half = memref.subview %flat[8] [8] [1] : memref<16xf32> to memref<8xf32, strided<[1], offset: 8>>
  %b = memref.alloc() : memref<16xf32>
  linalg.fill ins(%zero : f32) outs(%b : memref<16xf32>)
  linalg.copy ins(%half : memref<8xf32, strided<[1], offset: 8>>) outs(%out : memref<8xf32>)
  linalg.copy ins(%b : memref<16xf32>) outs(%out2 : memref<16xf32>)
  return
}

// -----

// A use nested in a loop counts at the loop: %a is read in the scf.for after
// %b is allocated, so the two cannot share memory.
// CHECK-LABEL: func @use_in_loop_extends_live_range
// CHECK-SAME: kiln.peak_intermediate_bytes = 128 : i64
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : index
// CHECK: %[[A:.*]] = memref.view %{{.*}}[%[[C0]]][] : memref<128xi8> to memref<16xf32>
// CHECK: memref.view %{{.*}}[%[[C64]]][] : memref<128xi8> to memref<16xf32>
// CHECK: scf.for
// CHECK: memref.load %[[A]]
func.func @use_in_loop_extends_live_range(%out: memref<16xf32>, %out2: memref<16xf32>) {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %a = memref.alloc() : memref<16xf32>
  linalg.fill ins(%zero : f32) outs(%a : memref<16xf32>)
  %b = memref.alloc() : memref<16xf32>
  linalg.fill ins(%zero : f32) outs(%b : memref<16xf32>)
  scf.for %i = %c0 to %c16 step %c1 {
    %v = memref.load %a[%i] : memref<16xf32>
    memref.store %v, %out[%i] : memref<16xf32>
  }
  linalg.copy ins(%b : memref<16xf32>) outs(%out2 : memref<16xf32>)
  return
}

// -----

// Allocations nested in a region are left alone and not counted.
// CHECK-LABEL: func @alloc_in_loop_untouched
// CHECK-SAME: attributes {kiln.intermediate_buffers = 0 : i64, kiln.peak_intermediate_bytes = 0 : i64, kiln.unplanned_buffers = 0 : i64}
// CHECK-NOT: memref.view
// CHECK: scf.for
// CHECK: memref.alloc() : memref<16xf32>
func.func @alloc_in_loop_untouched(%out: memref<16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %i = %c0 to %c4 step %c1 {
    %a = memref.alloc() : memref<16xf32>
    linalg.copy ins(%out : memref<16xf32>) outs(%a : memref<16xf32>)
    linalg.copy ins(%a : memref<16xf32>) outs(%out : memref<16xf32>)
    memref.dealloc %a : memref<16xf32>
  }
  return
}

// -----

// A returned buffer keeps its own allocation; so does one passed to a call,
// stored into memory, carried through loop iterations or freed. The one
// buffer that does not escape is planned.
// CHECK-LABEL: func @escaping_buffers_not_planned
// CHECK-SAME: attributes {kiln.intermediate_buffers = 1 : i64, kiln.peak_intermediate_bytes = 64 : i64, kiln.unplanned_buffers = 5 : i64}
// CHECK: %[[ARENA:.*]] = memref.alloc() {alignment = 64 : i64, kiln.arena} : memref<64xi8>
// CHECK: %[[RET:.*]] = memref.alloc() : memref<16xf32>
// CHECK: %[[CALLED:.*]] = memref.alloc() : memref<16xf32>
// CHECK: call @consume(%[[CALLED]])
// CHECK: %[[STORED:.*]] = memref.alloc() : memref<16xf32>
// CHECK: memref.store %[[STORED]]
// CHECK: %[[CARRIED:.*]] = memref.alloc() : memref<16xf32>
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[CARRIED]])
// CHECK: %[[FREED:.*]] = memref.alloc() : memref<16xf32>
// CHECK: memref.dealloc %[[FREED]]
// CHECK: memref.view %[[ARENA]]
// CHECK: return %[[RET]]
func.func private @consume(memref<16xf32>)
func.func @escaping_buffers_not_planned(%box: memref<memref<16xf32>>) -> memref<16xf32> {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %ret = memref.alloc() : memref<16xf32>
  linalg.fill ins(%zero : f32) outs(%ret : memref<16xf32>)
  %called = memref.alloc() : memref<16xf32>
  call @consume(%called) : (memref<16xf32>) -> ()
  %stored = memref.alloc() : memref<16xf32>
  memref.store %stored, %box[] : memref<memref<16xf32>>
  %carried = memref.alloc() : memref<16xf32>
  %r = scf.for %i = %c0 to %c1 step %c1 iter_args(%it = %carried) -> (memref<16xf32>) {
    scf.yield %it : memref<16xf32>
  }
  %freed = memref.alloc() : memref<16xf32>
  memref.dealloc %freed : memref<16xf32>
  %planned = memref.alloc() : memref<16xf32>
  linalg.fill ins(%zero : f32) outs(%planned : memref<16xf32>)
  return %ret : memref<16xf32>
}

// -----

// Dynamically shaped allocations keep their own allocation and are not
// reported; statically shaped ones the arena cannot hold are.
// CHECK-LABEL: func @unplannable_allocs
// CHECK-SAME: attributes {kiln.intermediate_buffers = 0 : i64, kiln.peak_intermediate_bytes = 0 : i64, kiln.unplanned_buffers = 4 : i64}
// CHECK-NOT: memref.view
// CHECK: memref.alloc(%{{.*}}) : memref<?xf32>
// CHECK: memref.alloc() {alignment = 128 : i64} : memref<16xf32>
// CHECK: memref.alloc() : memref<4xcomplex<f32>>
// CHECK: memref.alloc() : memref<16xf32, 1>
// CHECK: memref.alloc() : memref<4x4xf32, strided<[8, 1]>>
// CHECK-NOT: memref.view
func.func @unplannable_allocs(%n: index) {
  %dynamic = memref.alloc(%n) : memref<?xf32>
  %overaligned = memref.alloc() {alignment = 128 : i64} : memref<16xf32>
  %complex = memref.alloc() : memref<4xcomplex<f32>>
  %other_space = memref.alloc() : memref<16xf32, 1>
  %strided = memref.alloc() : memref<4x4xf32, strided<[8, 1]>>
  return
}

// -----

// Element sizes follow finalize-memref-to-llvm: i1 takes a byte, index the
// data layout's 64 bits; a 0-d buffer holds one element. The three live
// ranges overlap pairwise.
// CHECK-LABEL: func @element_sizes
// CHECK-SAME: kiln.peak_intermediate_bytes = 196 : i64
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : index
// CHECK-DAG: %[[C192:.*]] = arith.constant 192 : index
// CHECK: memref.view %{{.*}}[%[[C0]]][] : memref<196xi8> to memref<100xi1>
// CHECK: memref.view %{{.*}}[%[[C128]]][] : memref<196xi8> to memref<3xindex>
// CHECK: memref.view %{{.*}}[%[[C192]]][] : memref<196xi8> to memref<f32>
func.func @element_sizes(%i: index) {
  %true = arith.constant true
  %zero = arith.constant 0.0 : f32
  %bits = memref.alloc() : memref<100xi1>
  %indices = memref.alloc() : memref<3xindex>
  %scalar = memref.alloc() : memref<f32>
  memref.store %zero, %scalar[] : memref<f32>
  memref.store %i, %indices[%i] : memref<3xindex>
  memref.store %true, %bits[%i] : memref<100xi1>
  return
}

// -----

// In-place reuse: each elementwise generic is the last use of its input and
// the first use of an output of the same byte size, so the chain of three
// buffers shares one 64-byte slot although f32 and i32 alternate.
#id = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func @in_place_chain
// CHECK-SAME: attributes {kiln.intermediate_buffers = 3 : i64, kiln.peak_intermediate_bytes = 64 : i64, kiln.unplanned_buffers = 0 : i64}
// CHECK: %[[ARENA:.*]] = memref.alloc() {alignment = 64 : i64, kiln.arena} : memref<64xi8>
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[A:.*]] = memref.view %[[ARENA]][%[[C0]]][] : memref<64xi8> to memref<16xf32>
// CHECK: %[[B:.*]] = memref.view %[[ARENA]][%[[C0]]][] : memref<64xi8> to memref<16xi32>
// CHECK: linalg.generic {{.*}} ins(%[[A]] : memref<16xf32>) outs(%[[B]] : memref<16xi32>)
// CHECK: %[[C:.*]] = memref.view %[[ARENA]][%[[C0]]][] : memref<64xi8> to memref<16xf32>
// CHECK: linalg.generic {{.*}} ins(%[[B]] : memref<16xi32>) outs(%[[C]] : memref<16xf32>)
func.func @in_place_chain(%in: memref<16xf32>, %out: memref<16xf32>) {
  %a = memref.alloc() : memref<16xf32>
  linalg.copy ins(%in : memref<16xf32>) outs(%a : memref<16xf32>)
  %b = memref.alloc() : memref<16xi32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : memref<16xf32>) outs(%b : memref<16xi32>) {
  ^bb0(%x: f32, %y: i32):
    %r = arith.fptosi %x : f32 to i32
    linalg.yield %r : i32
  }
  %c = memref.alloc() : memref<16xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%b : memref<16xi32>) outs(%c : memref<16xf32>) {
  ^bb0(%x: i32, %y: f32):
    %r = arith.sitofp %x : i32 to f32
    linalg.yield %r : f32
  }
  linalg.copy ins(%c : memref<16xf32>) outs(%out : memref<16xf32>)
  return
}

// -----

// No in-place reuse when the input is read again later, when the sizes
// differ, or when the generic is not purely elementwise.
#id = affine_map<(d0) -> (d0)>
#rev = affine_map<(d0) -> (15 - d0)>
// CHECK-LABEL: func @no_in_place_reuse
// CHECK-SAME: attributes {kiln.intermediate_buffers = 4 : i64, kiln.peak_intermediate_bytes = 128 : i64, kiln.unplanned_buffers = 0 : i64}
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : index
// CHECK: %[[A:.*]] = memref.view %{{.*}}[%[[C0]]][] : memref<128xi8> to memref<16xf32>
// CHECK: %[[B:.*]] = memref.view %{{.*}}[%[[C64]]][] : memref<128xi8> to memref<16xf32>
// CHECK: %[[C:.*]] = memref.view %{{.*}}[%[[C0]]][] : memref<128xi8> to memref<16xf16>
// CHECK: %[[D:.*]] = memref.view %{{.*}}[%[[C64]]][] : memref<128xi8> to memref<16xf16>
func.func @no_in_place_reuse(%in: memref<16xf32>, %out: memref<16xf32>, %out2: memref<16xf16>) {
  %a = memref.alloc() : memref<16xf32>
  linalg.copy ins(%in : memref<16xf32>) outs(%a : memref<16xf32>)
  // %a is read again by the copy below.
  %b = memref.alloc() : memref<16xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%a : memref<16xf32>) outs(%b : memref<16xf32>) {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  }
  linalg.copy ins(%a : memref<16xf32>) outs(%out : memref<16xf32>)
  // 64 bytes in, 32 bytes out.
  %c = memref.alloc() : memref<16xf16>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%b : memref<16xf32>) outs(%c : memref<16xf16>) {
  ^bb0(%x: f32, %y: f16):
    %r = arith.truncf %x : f32 to f16
    linalg.yield %r : f16
  }
  // Element i of the output is written over element 15 - i of the input.
  %d = memref.alloc() : memref<16xf16>
  linalg.generic {indexing_maps = [#rev, #id], iterator_types = ["parallel"]}
      ins(%c : memref<16xf16>) outs(%d : memref<16xf16>) {
  ^bb0(%x: f16, %y: f16):
    linalg.yield %x : f16
  }
  linalg.copy ins(%d : memref<16xf16>) outs(%out2 : memref<16xf16>)
  return
}

// -----

// No in-place reuse when the generic also reads the input at other elements:
// element (i, j) of the result would overwrite element (i, j) of %a before
// the iteration that reads it as (j, i) of the transpose.
#id2 = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func @no_in_place_over_transposed_read
// CHECK-SAME: kiln.peak_intermediate_bytes = 128 : i64
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : index
// CHECK: %[[A:.*]] = memref.view %{{.*}}[%[[C0]]][] : memref<128xi8> to memref<4x4xf32>
// CHECK: %[[T:.*]] = memref.transpose %[[A]]
// CHECK: %[[B:.*]] = memref.view %{{.*}}[%[[C64]]][] : memref<128xi8> to memref<4x4xf32>
// CHECK: linalg.generic {{.*}} ins(%[[A]], %[[T]] : {{.*}}) outs(%[[B]] : memref<4x4xf32>)
func.func @no_in_place_over_transposed_read(%in: memref<4x4xf32>, %out: memref<4x4xf32>) {
  %a = memref.alloc() : memref<4x4xf32>
  linalg.copy ins(%in : memref<4x4xf32>) outs(%a : memref<4x4xf32>)
  %t = memref.transpose %a (i, j) -> (j, i) : memref<4x4xf32> to memref<4x4xf32, strided<[1, 4]>>
  %b = memref.alloc() : memref<4x4xf32>
  linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%a, %t : memref<4x4xf32>, memref<4x4xf32, strided<[1, 4]>>) outs(%b : memref<4x4xf32>) {
  ^bb0(%x: f32, %y: f32, %z: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  }
  linalg.copy ins(%b : memref<4x4xf32>) outs(%out : memref<4x4xf32>)
  return
}

// -----

// In-place reuse also holds when the input is a reshape of the dying buffer.
#id = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func @in_place_through_reshape
// CHECK-SAME: attributes {kiln.intermediate_buffers = 2 : i64, kiln.peak_intermediate_bytes = 64 : i64, kiln.unplanned_buffers = 0 : i64}
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[A:.*]] = memref.view %{{.*}}[%[[C0]]][] : memref<64xi8> to memref<4x4xf32>
// CHECK: %[[FLAT:.*]] = memref.collapse_shape %[[A]]
// CHECK: %[[B:.*]] = memref.view %{{.*}}[%[[C0]]][] : memref<64xi8> to memref<16xf32>
// CHECK: linalg.generic {{.*}} ins(%[[FLAT]] : memref<16xf32>) outs(%[[B]] : memref<16xf32>)
func.func @in_place_through_reshape(%in: memref<4x4xf32>, %out: memref<16xf32>) {
  %a = memref.alloc() : memref<4x4xf32>
  linalg.copy ins(%in : memref<4x4xf32>) outs(%a : memref<4x4xf32>)
  %flat = memref.collapse_shape %a [[0, 1]] : memref<4x4xf32> into memref<16xf32>
  %b = memref.alloc() : memref<16xf32>
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%flat : memref<16xf32>) outs(%b : memref<16xf32>) {
  ^bb0(%x: f32, %y: f32):
    %e = math.exp %x : f32
    linalg.yield %e : f32
  }
  linalg.copy ins(%b : memref<16xf32>) outs(%out : memref<16xf32>)
  return
}

// -----

// A buffer used outside the entry block is not planned.
// CHECK-LABEL: func @used_in_another_block
// CHECK-SAME: attributes {kiln.intermediate_buffers = 0 : i64, kiln.peak_intermediate_bytes = 0 : i64, kiln.unplanned_buffers = 1 : i64}
// CHECK: memref.alloc() : memref<16xf32>
// CHECK-NOT: memref.view
func.func @used_in_another_block(%out: memref<16xf32>) {
  %a = memref.alloc() : memref<16xf32>
  cf.br ^bb1
^bb1:
  linalg.copy ins(%a : memref<16xf32>) outs(%out : memref<16xf32>)
  return
}

// -----

// Without allocations the function is unchanged but for the attributes.
// CHECK-LABEL: func @no_allocs
// CHECK-SAME: attributes {kiln.intermediate_buffers = 0 : i64, kiln.peak_intermediate_bytes = 0 : i64, kiln.unplanned_buffers = 0 : i64}
// CHECK-NEXT: linalg.copy
// CHECK-NEXT: return
func.func @no_allocs(%in: memref<16xf32>, %out: memref<16xf32>) {
  linalg.copy ins(%in : memref<16xf32>) outs(%out : memref<16xf32>)
  return
}
