// RUN: kiln-opt %s -split-input-file -kiln-state-in-place | FileCheck %s

// SGD on a bias: one elementwise op reads the weight and writes its next
// value, element by element, after every other read.
// CHECK-LABEL: module attributes {kiln.in_place_state = array<i64: 3>}
// CHECK: func.func @sgd
// CHECK-NOT: kiln.state_pairs
#id = affine_map<(d0) -> (d0)>
module {
  func.func @sgd(%w: memref<8xf32>, %g: memref<8xf32>, %loss: memref<8xf32>, %w_out: memref<8xf32>)
      attributes {kiln.state_pairs = array<i64: 0, 3>} {
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%w : memref<8xf32>) outs(%loss : memref<8xf32>) {
    ^bb0(%a: f32, %b: f32):
      linalg.yield %a : f32
    }
    linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
        ins(%w, %g : memref<8xf32>, memref<8xf32>) outs(%w_out : memref<8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %d = arith.subf %a, %b : f32
      linalg.yield %d : f32
    }
    return
  }
}

// -----

// A kernel's tiles: the gradient goes to a tile buffer of its own, and the
// update reads and writes the same tile of both buffers.
// CHECK-LABEL: module attributes {kiln.in_place_state = array<i64: 2>}
#map = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @tiles(%w: memref<4x64xf32>, %g: memref<4x64xf32>, %w_out: memref<4x64xf32>)
      attributes {kiln.state_pairs = array<i64: 0, 2>} {
    %cst = arith.constant 0.0 : f32
    scf.forall (%j) = (0) to (64) step (32) {
      %in = memref.subview %w[0, %j] [4, 32] [1, 1] : memref<4x64xf32> to memref<4x32xf32, strided<[64, 1], offset: ?>>
      %tile = memref.alloc() : memref<4x32xf32>
      linalg.fill ins(%cst : f32) outs(%tile : memref<4x32xf32>)
      %out = memref.subview %w_out[0, %j] [4, 32] [1, 1] : memref<4x64xf32> to memref<4x32xf32, strided<[64, 1], offset: ?>>
      linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]}
          ins(%in, %tile : memref<4x32xf32, strided<[64, 1], offset: ?>>, memref<4x32xf32>)
          outs(%out : memref<4x32xf32, strided<[64, 1], offset: ?>>) {
      ^bb0(%a: f32, %b: f32, %c: f32):
        %d = arith.subf %a, %b : f32
        linalg.yield %d : f32
      }
      memref.dealloc %tile : memref<4x32xf32>
    }
    return
  }
}

// -----

// The weight is read again after its update has begun: two buffers.
// CHECK-LABEL: module attributes {kiln.in_place_state = array<i64>}
#id = affine_map<(d0) -> (d0)>
module {
  func.func @read_after(%w: memref<8xf32>, %g: memref<8xf32>, %w_out: memref<8xf32>, %y: memref<8xf32>)
      attributes {kiln.state_pairs = array<i64: 0, 2>} {
    linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
        ins(%w, %g : memref<8xf32>, memref<8xf32>) outs(%w_out : memref<8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %d = arith.subf %a, %b : f32
      linalg.yield %d : f32
    }
    memref.copy %w, %y : memref<8xf32> to memref<8xf32>
    return
  }
}

// -----

// The gradient is computed into the output's tile before the update reads
// the input's: in one buffer it would overwrite the weight.
// CHECK-LABEL: module attributes {kiln.in_place_state = array<i64>}
#map = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @gradient_in_output(%w: memref<4x64xf32>, %w_out: memref<4x64xf32>)
      attributes {kiln.state_pairs = array<i64: 0, 1>} {
    %cst = arith.constant 0.0 : f32
    scf.forall (%j) = (0) to (64) step (32) {
      %in = memref.subview %w[0, %j] [4, 32] [1, 1] : memref<4x64xf32> to memref<4x32xf32, strided<[64, 1], offset: ?>>
      %out = memref.subview %w_out[0, %j] [4, 32] [1, 1] : memref<4x64xf32> to memref<4x32xf32, strided<[64, 1], offset: ?>>
      linalg.fill ins(%cst : f32) outs(%out : memref<4x32xf32, strided<[64, 1], offset: ?>>)
      linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
          ins(%in : memref<4x32xf32, strided<[64, 1], offset: ?>>)
          outs(%out : memref<4x32xf32, strided<[64, 1], offset: ?>>) {
      ^bb0(%a: f32, %c: f32):
        %d = arith.subf %c, %a : f32
        linalg.yield %d : f32
      }
    }
    return
  }
}

// -----

// The update reads the weight's tile at other columns than it writes.
// CHECK-LABEL: module attributes {kiln.in_place_state = array<i64>}
#map = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @other_tile(%w: memref<4x64xf32>, %w_out: memref<4x64xf32>)
      attributes {kiln.state_pairs = array<i64: 0, 1>} {
    %in = memref.subview %w[0, 32] [4, 32] [1, 1] : memref<4x64xf32> to memref<4x32xf32, strided<[64, 1], offset: 32>>
    %out = memref.subview %w_out[0, 0] [4, 32] [1, 1] : memref<4x64xf32> to memref<4x32xf32, strided<[64, 1]>>
    memref.copy %in, %out : memref<4x32xf32, strided<[64, 1], offset: 32>> to memref<4x32xf32, strided<[64, 1]>>
    return
  }
}

// -----

// An op writes the input itself.
// CHECK-LABEL: module attributes {kiln.in_place_state = array<i64>}
module {
  func.func @writes_input(%w: memref<8xf32>, %w_out: memref<8xf32>)
      attributes {kiln.state_pairs = array<i64: 0, 1>} {
    %cst = arith.constant 0.0 : f32
    linalg.fill ins(%cst : f32) outs(%w : memref<8xf32>)
    memref.copy %w, %w_out : memref<8xf32> to memref<8xf32>
    return
  }
}

// -----

// A step with a collective may fail midway; its state keeps two buffers.
// CHECK-LABEL: module attributes {kiln.in_place_state = array<i64>}
#id = affine_map<(d0) -> (d0)>
module {
  func.func private @kiln_all_reduce_wait(i64)
  func.func @collective(%w: memref<8xf32>, %g: memref<8xf32>, %w_out: memref<8xf32>)
      attributes {kiln.state_pairs = array<i64: 0, 2>} {
    %c0 = arith.constant 0 : i64
    func.call @kiln_all_reduce_wait(%c0) : (i64) -> ()
    linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
        ins(%w, %g : memref<8xf32>, memref<8xf32>) outs(%w_out : memref<8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %d = arith.subf %a, %b : f32
      linalg.yield %d : f32
    }
    return
  }
}

// -----

// Without pairs the module is left alone.
// CHECK-LABEL: module {
// CHECK: func.func @inference
module {
  func.func @inference(%x: memref<8xf32>, %y: memref<8xf32>) {
    memref.copy %x, %y : memref<8xf32> to memref<8xf32>
    return
  }
}

// -----

// Two updates in one kernel: the second reads elements the first has
// already written.
// CHECK-LABEL: module attributes {kiln.in_place_state = array<i64>}
#map = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @two_updates(%w: memref<4x64xf32>, %w_out: memref<4x64xf32>)
      attributes {kiln.state_pairs = array<i64: 0, 1>} {
    scf.forall (%j) = (0) to (64) step (32) {
      %in = memref.subview %w[0, %j] [4, 32] [1, 1] : memref<4x64xf32> to memref<4x32xf32, strided<[64, 1], offset: ?>>
      %out = memref.subview %w_out[0, %j] [4, 32] [1, 1] : memref<4x64xf32> to memref<4x32xf32, strided<[64, 1], offset: ?>>
      memref.copy %in, %out : memref<4x32xf32, strided<[64, 1], offset: ?>> to memref<4x32xf32, strided<[64, 1], offset: ?>>
      linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]}
          ins(%in : memref<4x32xf32, strided<[64, 1], offset: ?>>)
          outs(%out : memref<4x32xf32, strided<[64, 1], offset: ?>>) {
      ^bb0(%a: f32, %c: f32):
        %d = arith.addf %a, %a : f32
        linalg.yield %d : f32
      }
    }
    return
  }
}

// -----

// The update's payload loads another element of the weight (a reversed
// copy made beside it): in one buffer that element may be new already.
// CHECK-LABEL: module attributes {kiln.in_place_state = array<i64>}
#id = affine_map<(d0) -> (d0)>
module {
  func.func @payload_load(%w: memref<8xf32>, %g: memref<8xf32>, %w_out: memref<8xf32>, %flip: memref<8xf32>)
      attributes {kiln.state_pairs = array<i64: 0, 2>} {
    %c7 = arith.constant 7 : index
    linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel"]}
        ins(%w, %g : memref<8xf32>, memref<8xf32>) outs(%w_out, %flip : memref<8xf32>, memref<8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32, %d: f32):
      %i = linalg.index 0 : index
      %r = arith.subi %c7, %i : index
      %x = memref.load %w[%r] : memref<8xf32>
      %u = arith.subf %a, %b : f32
      linalg.yield %u, %x : f32, f32
    }
    return
  }
}

// -----

// Every iteration of the kernel updates the same (whole) tile: the second
// would update the weight again.
// CHECK-LABEL: module attributes {kiln.in_place_state = array<i64>}
#map = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @same_tile(%w: memref<4x64xf32>, %g: memref<4x64xf32>, %w_out: memref<4x64xf32>)
      attributes {kiln.state_pairs = array<i64: 0, 2>} {
    scf.forall (%j) = (0) to (64) step (32) {
      %in = memref.subview %w[0, 0] [4, 64] [1, 1] : memref<4x64xf32> to memref<4x64xf32, strided<[64, 1]>>
      %out = memref.subview %w_out[0, 0] [4, 64] [1, 1] : memref<4x64xf32> to memref<4x64xf32, strided<[64, 1]>>
      linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]}
          ins(%in, %g : memref<4x64xf32, strided<[64, 1]>>, memref<4x64xf32>)
          outs(%out : memref<4x64xf32, strided<[64, 1]>>) {
      ^bb0(%a: f32, %b: f32, %c: f32):
        %d = arith.subf %a, %b : f32
        linalg.yield %d : f32
      }
    }
    return
  }
}

// -----

// A transpose of the weight, read after the update, is an alias that is
// not a view.
// CHECK-LABEL: module attributes {kiln.in_place_state = array<i64>}
#id = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func @transposed(%w: memref<4x4xf32>, %g: memref<4x4xf32>, %w_out: memref<4x4xf32>, %y: memref<4x4xf32, strided<[1, 4]>>)
      attributes {kiln.state_pairs = array<i64: 0, 2>} {
    %t = memref.transpose %w (i, j) -> (j, i) : memref<4x4xf32> to memref<4x4xf32, strided<[1, 4]>>
    linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
        ins(%w, %g : memref<4x4xf32>, memref<4x4xf32>) outs(%w_out : memref<4x4xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %d = arith.subf %a, %b : f32
      linalg.yield %d : f32
    }
    memref.copy %t, %y : memref<4x4xf32, strided<[1, 4]>> to memref<4x4xf32, strided<[1, 4]>>
    return
  }
}

// -----

// A runtime call that keeps nothing after it returns (kiln.no_capture)
// takes the weight's address, offset or not, as operands it only reads (a
// blocked convolution's filters): a read where the call stands, before the
// update.
// CHECK-LABEL: module attributes {kiln.in_place_state = array<i64: 2>}
#id = affine_map<(d0) -> (d0)>
module {
  func.func private @kiln_conv2d_blocked(index, index)
  func.func @call_reads_first(%w: memref<8xf32>, %g: memref<8xf32>, %w_out: memref<8xf32>)
      attributes {kiln.state_pairs = array<i64: 0, 2>} {
    %c16 = arith.constant 16 : index
    %p = memref.extract_aligned_pointer_as_index %w : memref<8xf32> -> index
    %q = arith.addi %p, %c16 : index
    call @kiln_conv2d_blocked(%p, %q) {kiln.no_capture, kiln.read_only_operands = array<i64: 0, 1>} : (index, index) -> ()
    linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
        ins(%w, %g : memref<8xf32>, memref<8xf32>) outs(%w_out : memref<8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %d = arith.subf %a, %b : f32
      linalg.yield %d : f32
    }
    return
  }
}

// -----

// The same call after the update would read the updated weight; an
// address that another call may keep hides its reads; and one that a call
// may write through (not among its read-only operands) may change the
// weight before its update reads it.
// CHECK-LABEL: module attributes {kiln.in_place_state = array<i64>}
#id = affine_map<(d0) -> (d0)>
module {
  func.func private @kiln_conv2d_blocked(index)
  func.func @call_reads_after(%w: memref<8xf32>, %g: memref<8xf32>, %w_out: memref<8xf32>,
                              %v: memref<8xf32>, %v_out: memref<8xf32>)
      attributes {kiln.state_pairs = array<i64: 0, 2, 3, 4>} {
    %p = memref.extract_aligned_pointer_as_index %w : memref<8xf32> -> index
    %r = memref.extract_aligned_pointer_as_index %v : memref<8xf32> -> index
    call @kiln_conv2d_blocked(%r) : (index) -> ()
    linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
        ins(%w, %g : memref<8xf32>, memref<8xf32>) outs(%w_out : memref<8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %d = arith.subf %a, %b : f32
      linalg.yield %d : f32
    }
    call @kiln_conv2d_blocked(%p) {kiln.no_capture, kiln.read_only_operands = array<i64: 0>} : (index) -> ()
    memref.copy %v, %v_out : memref<8xf32> to memref<8xf32>
    return
  }
}

// -----

// CHECK-LABEL: module attributes {kiln.in_place_state = array<i64>}
#id = affine_map<(d0) -> (d0)>
module {
  func.func private @kiln_conv2d_blocked(index, index)
  func.func @call_writes(%w: memref<8xf32>, %x: memref<8xf32>, %g: memref<8xf32>, %w_out: memref<8xf32>)
      attributes {kiln.state_pairs = array<i64: 0, 3>} {
    %p = memref.extract_aligned_pointer_as_index %w : memref<8xf32> -> index
    %r = memref.extract_aligned_pointer_as_index %x : memref<8xf32> -> index
    call @kiln_conv2d_blocked(%r, %p) {kiln.no_capture, kiln.read_only_operands = array<i64: 0>} : (index, index) -> ()
    linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
        ins(%w, %g : memref<8xf32>, memref<8xf32>) outs(%w_out : memref<8xf32>) {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %d = arith.subf %a, %b : f32
      linalg.yield %d : f32
    }
    return
  }
}
