// RUN: kiln-opt %s -split-input-file -kiln-contractions-to-blas -canonicalize -cse | FileCheck %s

// A product onto a zero fill calls the library with beta = 0 (C is not
// read) and no fill.
// CHECK-LABEL: func.func @zero_fill
// CHECK-NOT:     linalg.fill
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:         call @dnnl_sgemm(%{{.*}}, %{{.*}}, %c64_i64, %c512_i64, %c256_i64, %[[ONE]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[ZERO]], %{{.*}}, %{{.*}})
// CHECK-NOT:     linalg.fill
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func @zero_fill(%a: memref<64x256xf32>, %b: memref<256x512xf32>, %c: memref<64x512xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%c : memref<64x512xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<64x256xf32>, memref<256x512xf32>) outs(%c : memref<64x512xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Anything else before the product (here a fill of one, and a store
// between a zero fill and the product) keeps beta = 1.
// CHECK-LABEL: func.func @not_zero
// CHECK:         linalg.fill
// CHECK:         call @dnnl_sgemm(%{{.*}}, %{{.*}}, %c64_i64, %c512_i64, %c256_i64, %[[ONE:.*]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[ONE]],
// CHECK:         linalg.fill
// CHECK:         memref.store
// CHECK:         call @dnnl_sgemm(%{{.*}}, %{{.*}}, %c64_i64, %c512_i64, %c256_i64, %[[ONE]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[ONE]],
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func @not_zero(%a: memref<64x256xf32>, %b: memref<256x512xf32>, %c: memref<64x512xf32>, %d: memref<64x512xf32>) {
  %one = arith.constant 1.0 : f32
  %zero = arith.constant 0.0 : f32
  %i = arith.constant 0 : index
  linalg.fill ins(%one : f32) outs(%c : memref<64x512xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<64x256xf32>, memref<256x512xf32>) outs(%c : memref<64x512xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.fill ins(%zero : f32) outs(%d : memref<64x512xf32>)
  memref.store %one, %d[%i, %i] : memref<64x512xf32>
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<64x256xf32>, memref<256x512xf32>) outs(%d : memref<64x512xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A weight gradient tile (A^T B) updated by SGD into the step's output:
// the output starts as the weights and one sgemm adds -lr A^T B to it; the
// tile buffer, its fill and the update loop are gone. The copy is skipped
// where the output is the weights' own buffer (kiln-state-in-place).
// CHECK-LABEL: func.func @sgd_update
// CHECK-SAME:    (%[[X:.*]]: memref<256x784xf32>, %[[DY:.*]]: memref<256x512xf32>, %[[W:.*]]: memref<784x1024xf32>, %[[OUT:.*]]: memref<784x1024xf32>)
// CHECK-NOT:     memref.alloc
// CHECK-NOT:     linalg.fill
// CHECK-DAG:     %[[WT:.*]] = memref.subview %[[W]][0, 512] [784, 512] [1, 1]
// CHECK-DAG:     %[[OT:.*]] = memref.subview %[[OUT]][0, 512] [784, 512] [1, 1]
// CHECK-DAG:     %[[ALPHA:.*]] = arith.constant -0.00999999977 : f32
// CHECK-DAG:     %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG:     %[[WB:.*]], %{{.*}}, %{{.*}}:2, %{{.*}}:2 = memref.extract_strided_metadata %[[WT]] :
// CHECK-DAG:     %[[WP:.*]] = memref.extract_aligned_pointer_as_index %[[WB]] :
// CHECK-DAG:     %[[OB:.*]], %{{.*}}, %{{.*}}:2, %{{.*}}:2 = memref.extract_strided_metadata %[[OT]] :
// CHECK-DAG:     %[[OP:.*]] = memref.extract_aligned_pointer_as_index %[[OB]] :
// The tiles' offsets are equal constants: the pointers decide.
// CHECK:         %[[DISTINCT:.*]] = arith.cmpi ne, %[[WP]], %[[OP]] : index
// CHECK:         scf.if %[[DISTINCT]] {
// CHECK-NEXT:      memref.copy %[[WT]], %[[OT]]
// CHECK-NEXT:    }
// CHECK:         call @dnnl_sgemm(%c84_i8, %c78_i8, %c784_i64, %c512_i64, %c256_i64, %[[ALPHA]], %{{.*}}, %c784_i64, %{{.*}}, %c512_i64, %[[ONE]], %{{.*}}, %c1024_i64)
// CHECK-NOT:     linalg.generic
// CHECK-NOT:     memref.dealloc
#at = affine_map<(m, n, k) -> (k, m)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @sgd_update(%x: memref<256x784xf32>, %dy: memref<256x512xf32>, %w: memref<784x1024xf32>, %out: memref<784x1024xf32>) {
  %zero = arith.constant 0.0 : f32
  %lr = arith.constant 0.01 : f32
  %grad = memref.alloc() {alignment = 64 : i64} : memref<784x512xf32>
  linalg.fill ins(%zero : f32) outs(%grad : memref<784x512xf32>)
  linalg.generic {indexing_maps = [#at, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %dy : memref<256x784xf32>, memref<256x512xf32>) outs(%grad : memref<784x512xf32>) {
  ^bb0(%u: f32, %v: f32, %acc: f32):
    %p = arith.mulf %u, %v : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  %wt = memref.subview %w[0, 512] [784, 512] [1, 1] : memref<784x1024xf32> to memref<784x512xf32, strided<[1024, 1], offset: 512>>
  %ot = memref.subview %out[0, 512] [784, 512] [1, 1] : memref<784x1024xf32> to memref<784x512xf32, strided<[1024, 1], offset: 512>>
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%wt, %grad : memref<784x512xf32, strided<[1024, 1], offset: 512>>, memref<784x512xf32>)
      outs(%ot : memref<784x512xf32, strided<[1024, 1], offset: 512>>) {
  ^bb0(%wv: f32, %g: f32, %o: f32):
    %step = arith.mulf %g, %lr : f32
    %new = arith.subf %wv, %step : f32
    linalg.yield %new : f32
  }
  memref.dealloc %grad : memref<784x512xf32>
  return
}

// -----

// A channel-first convolution weight gradient (a tile of 4 of 8 input
// channels, 3x3 taps) updated by SGD: the output starts as the weights and
// one sgemm (M=16 N=4*9 K=2*8*8) adds -lr times the gradient onto it, with
// the output's row stride (72); no tile buffer, fill or update loop is left.
// CHECK-LABEL: func.func @conv_sgd_update
// CHECK-SAME:    (%[[X:.*]]: memref<4x2x10x10xf32>, %[[G:.*]]: memref<16x2x8x8xf32>, %[[W:.*]]: memref<16x8x3x3xf32>, %[[OUT:.*]]: memref<16x8x3x3xf32>)
// CHECK-DAG:     %[[WT:.*]] = memref.subview %[[W]][0, 4, 0, 0] [16, 4, 3, 3] [1, 1, 1, 1]
// CHECK-DAG:     %[[OT:.*]] = memref.subview %[[OUT]][0, 4, 0, 0] [16, 4, 3, 3] [1, 1, 1, 1]
// CHECK-DAG:     %[[ALPHA:.*]] = arith.constant -0.00999999977 : f32
// CHECK-NOT:     linalg.fill
// CHECK:         memref.copy %[[WT]], %[[OT]]
// CHECK:         call @dnnl_sgemm({{.*}}, %c16_i64, %c36_i64, %c128_i64, %[[ALPHA]], {{.*}}, %c72_i64)
// CHECK-NOT:     linalg.generic
// CHECK-NOT:     memref<16x4x3x3xf32>
#cu_image = affine_map<(f, c, p, q, n, a, b) -> (c, n, p + a, q + b)>
#cu_filter = affine_map<(f, c, p, q, n, a, b) -> (f, n, a, b)>
#cu_out = affine_map<(f, c, p, q, n, a, b) -> (f, c, p, q)>
#cu_id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
func.func @conv_sgd_update(%x: memref<4x2x10x10xf32>, %g: memref<16x2x8x8xf32>, %w: memref<16x8x3x3xf32>, %out: memref<16x8x3x3xf32>) {
  %zero = arith.constant 0.0 : f32
  %lr = arith.constant 0.01 : f32
  %grad = memref.alloc() {alignment = 64 : i64} : memref<16x4x3x3xf32>
  linalg.fill ins(%zero : f32) outs(%grad : memref<16x4x3x3xf32>)
  linalg.generic {indexing_maps = [#cu_image, #cu_filter, #cu_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %g : memref<4x2x10x10xf32>, memref<16x2x8x8xf32>) outs(%grad : memref<16x4x3x3xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  %wt = memref.subview %w[0, 4, 0, 0] [16, 4, 3, 3] [1, 1, 1, 1] : memref<16x8x3x3xf32> to memref<16x4x3x3xf32, strided<[72, 9, 3, 1], offset: 36>>
  %ot = memref.subview %out[0, 4, 0, 0] [16, 4, 3, 3] [1, 1, 1, 1] : memref<16x8x3x3xf32> to memref<16x4x3x3xf32, strided<[72, 9, 3, 1], offset: 36>>
  linalg.generic {indexing_maps = [#cu_id, #cu_id, #cu_id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%wt, %grad : memref<16x4x3x3xf32, strided<[72, 9, 3, 1], offset: 36>>, memref<16x4x3x3xf32>)
      outs(%ot : memref<16x4x3x3xf32, strided<[72, 9, 3, 1], offset: 36>>) {
  ^bb0(%wv: f32, %gv: f32, %o: f32):
    %step = arith.mulf %gv, %lr : f32
    %new = arith.subf %wv, %step : f32
    linalg.yield %new : f32
  }
  memref.dealloc %grad : memref<16x4x3x3xf32>
  return
}

// -----

// A learning rate read from a rank-0 buffer (a schedule) is loaded once,
// and `w + (lr * g)` keeps its sign.
// CHECK-LABEL: func.func @scheduled_rate
// CHECK:         memref.copy %arg2, %arg3
// CHECK:         %[[LR:.*]] = memref.load %arg4[] : memref<f32>
// CHECK:         call @dnnl_sgemm(%c78_i8, %c78_i8, %c64_i64, %c32_i64, %c16_i64, %[[LR]],
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#scalar = affine_map<(d0, d1) -> ()>
func.func @scheduled_rate(%a: memref<64x16xf32>, %b: memref<16x32xf32>, %w: memref<64x32xf32>, %out: memref<64x32xf32>, %lr: memref<f32>) {
  %zero = arith.constant 0.0 : f32
  %grad = memref.alloc() {alignment = 64 : i64} : memref<64x32xf32>
  linalg.fill ins(%zero : f32) outs(%grad : memref<64x32xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<64x16xf32>, memref<16x32xf32>) outs(%grad : memref<64x32xf32>) {
  ^bb0(%u: f32, %v: f32, %acc: f32):
    %p = arith.mulf %u, %v : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#scalar, #id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%lr, %grad, %w : memref<f32>, memref<64x32xf32>, memref<64x32xf32>) outs(%out : memref<64x32xf32>) {
  ^bb0(%r: f32, %g: f32, %wv: f32, %o: f32):
    %step = arith.mulf %r, %g : f32
    %new = arith.addf %step, %wv : f32
    linalg.yield %new : f32
  }
  memref.dealloc %grad : memref<64x32xf32>
  return
}

// -----

// Not updates: the gradient is also read elsewhere, the output is not a
// caller's buffer, and the update is not of the form w - lr g. Each keeps
// its tile buffer and loop (the product still skips reading the zeros).
// CHECK-LABEL: func.func @not_updates
// CHECK-NOT:     memref.copy
// CHECK-COUNT-3: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK-NOT:     memref.copy
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @not_updates(%a: memref<64x16xf32>, %b: memref<16x32xf32>, %w: memref<64x32xf32>, %out: memref<64x32xf32>, %other: memref<64x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %lr = arith.constant 0.01 : f32
  %i = arith.constant 0 : index
  // The gradient is stored elsewhere too.
  %g1 = memref.alloc() : memref<64x32xf32>
  linalg.fill ins(%zero : f32) outs(%g1 : memref<64x32xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<64x16xf32>, memref<16x32xf32>) outs(%g1 : memref<64x32xf32>) {
  ^bb0(%u: f32, %v: f32, %acc: f32):
    %p = arith.mulf %u, %v : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%w, %g1 : memref<64x32xf32>, memref<64x32xf32>) outs(%out : memref<64x32xf32>) {
  ^bb0(%wv: f32, %g: f32, %o: f32):
    %step = arith.mulf %g, %lr : f32
    %new = arith.subf %wv, %step : f32
    linalg.yield %new : f32
  }
  %g1v = memref.load %g1[%i, %i] : memref<64x32xf32>
  memref.store %g1v, %other[%i, %i] : memref<64x32xf32>
  memref.dealloc %g1 : memref<64x32xf32>
  // The output is a scratch buffer of the function's own.
  %scratch = memref.alloc() : memref<64x32xf32>
  %g2 = memref.alloc() : memref<64x32xf32>
  linalg.fill ins(%zero : f32) outs(%g2 : memref<64x32xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<64x16xf32>, memref<16x32xf32>) outs(%g2 : memref<64x32xf32>) {
  ^bb0(%u: f32, %v: f32, %acc: f32):
    %p = arith.mulf %u, %v : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%w, %g2 : memref<64x32xf32>, memref<64x32xf32>) outs(%scratch : memref<64x32xf32>) {
  ^bb0(%wv: f32, %g: f32, %o: f32):
    %step = arith.mulf %g, %lr : f32
    %new = arith.subf %wv, %step : f32
    linalg.yield %new : f32
  }
  %sv = memref.load %scratch[%i, %i] : memref<64x32xf32>
  memref.store %sv, %other[%i, %i] : memref<64x32xf32>
  memref.dealloc %g2 : memref<64x32xf32>
  memref.dealloc %scratch : memref<64x32xf32>
  // w * g is not an update.
  %g3 = memref.alloc() : memref<64x32xf32>
  linalg.fill ins(%zero : f32) outs(%g3 : memref<64x32xf32>)
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<64x16xf32>, memref<16x32xf32>) outs(%g3 : memref<64x32xf32>) {
  ^bb0(%u: f32, %v: f32, %acc: f32):
    %p = arith.mulf %u, %v : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%w, %g3 : memref<64x32xf32>, memref<64x32xf32>) outs(%out : memref<64x32xf32>) {
  ^bb0(%wv: f32, %g: f32, %o: f32):
    %new = arith.mulf %wv, %g : f32
    linalg.yield %new : f32
  }
  memref.dealloc %g3 : memref<64x32xf32>
  return
}
