// RUN: kiln-opt %s -split-input-file -kiln-contractions-to-blas=constant-b=1 -canonicalize -cse | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-contractions-to-blas=constant-b=0 -canonicalize -cse | FileCheck %s --check-prefix=OFF

// Two tiles of constant weights: each call site gets its own zeroed 8-byte
// slot (renamed apart) and calls kiln_matmul_constant_b with whether B is
// transposed (0), the sizes and the leading dimensions of A, B (the weights'
// row stride, 1024) and C, and 1: C holds what the product adds onto.
// CHECK-DAG: memref.global "private" @[[SITE0:kiln_kernel_site[_0-9]*]] : memref<1xi64> = dense<0> {alignment = 8 : i64}
// CHECK-DAG: memref.global "private" @[[SITE1:kiln_kernel_site[_0-9]*]] : memref<1xi64> = dense<0> {alignment = 8 : i64}
// CHECK-LABEL: func.func @weights
// CHECK-NOT: dnnl_sgemm
// CHECK: memref.get_global @[[SITE1]]
// CHECK: call @kiln_matmul_constant_b(%{{.*}}, %c0_i64, %c64_i64, %c512_i64, %c784_i64, %{{.*}}, %c784_i64, %{{.*}}, %c1024_i64, %{{.*}}, %c512_i64, %c1_i64)
// CHECK: memref.get_global @[[SITE0]]
// CHECK: call @kiln_matmul_constant_b(%{{.*}}, %c0_i64, %c64_i64, %c512_i64, %c784_i64, %{{.*}}, %c784_i64, %{{.*}}, %c1024_i64, %{{.*}}, %c512_i64, %c1_i64)
// CHECK: func.func private @kiln_matmul_constant_b(!llvm.ptr, i64, i64, i64, i64, !llvm.ptr, i64, !llvm.ptr, i64, !llvm.ptr, i64, i64)
// OFF-LABEL: func.func @weights
// OFF-NOT: kiln_matmul_constant_b
// OFF-COUNT-2: call @dnnl_sgemm
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
memref.global "private" constant @w : memref<784x1024xf32> = dense<1.0>
func.func @weights(%a: memref<64x784xf32>, %c0: memref<64x512xf32>, %c1: memref<64x512xf32>) {
  %w = memref.get_global @w : memref<784x1024xf32>
  %left = memref.subview %w[0, 0] [784, 512] [1, 1] : memref<784x1024xf32> to memref<784x512xf32, strided<[1024, 1]>>
  %right = memref.subview %w[0, 512] [784, 512] [1, 1] : memref<784x1024xf32> to memref<784x512xf32, strided<[1024, 1], offset: 512>>
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %left : memref<64x784xf32>, memref<784x512xf32, strided<[1024, 1]>>) outs(%c0 : memref<64x512xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %right : memref<64x784xf32>, memref<784x512xf32, strided<[1024, 1], offset: 512>>) outs(%c1 : memref<64x512xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Weights stored transposed (Gemm with transB = 1, n x k) are packed too:
// the flag is 1 and ldb is the stored row's length, k.
// CHECK-LABEL: func.func @transposed_weights
// CHECK-NOT: dnnl_sgemm
// CHECK: call @kiln_matmul_constant_b(%{{.*}}, %c1_i64, %c8_i64, %c1000_i64, %c2048_i64, %{{.*}}, %c2048_i64, %{{.*}}, %c2048_i64, %{{.*}}, %c1000_i64, %c1_i64)
#at = affine_map<(m, n, k) -> (m, k)>
#bt = affine_map<(m, n, k) -> (n, k)>
#ct = affine_map<(m, n, k) -> (m, n)>
memref.global "private" constant @fc : memref<1000x2048xf32> = dense<0.5>
func.func @transposed_weights(%a: memref<8x2048xf32>, %c: memref<8x1000xf32>) {
  %w = memref.get_global @fc : memref<1000x2048xf32>
  linalg.generic {indexing_maps = [#at, #bt, #ct], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %w : memref<8x2048xf32>, memref<1000x2048xf32>) outs(%c : memref<8x1000xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A product onto a zero fill (a layer without bias): the call writes C
// rather than adding onto it (0), and the fill goes.
// CHECK-LABEL: func.func @onto_zeros
// CHECK-NOT: linalg.fill
// CHECK: call @kiln_matmul_constant_b(%{{.*}}, %c0_i64, %c128_i64, %c300_i64, %c768_i64, %{{.*}}, %c768_i64, %{{.*}}, %c300_i64, %{{.*}}, %c300_i64, %c0_i64)
// CHECK-NOT: linalg.fill
#az = affine_map<(m, n, k) -> (m, k)>
#bz = affine_map<(m, n, k) -> (k, n)>
#cz = affine_map<(m, n, k) -> (m, n)>
memref.global "private" constant @head : memref<768x300xf32> = dense<0.5>
func.func @onto_zeros(%a: memref<128x768xf32>, %c: memref<128x300xf32>) {
  %zero = arith.constant 0.0 : f32
  %w = memref.get_global @head : memref<768x300xf32>
  linalg.fill ins(%zero : f32) outs(%c : memref<128x300xf32>)
  linalg.generic {indexing_maps = [#az, #bz, #cz], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %w : memref<128x768xf32>, memref<768x300xf32>) outs(%c : memref<128x300xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// B computed at run time (an argument), or a mutable global: dnnl_sgemm.
// CHECK-LABEL: func.func @not_constant
// CHECK-NOT: kiln_matmul_constant_b
// CHECK-COUNT-2: call @dnnl_sgemm
// CHECK-NOT: kiln_matmul_constant_b
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
memref.global "private" @state : memref<32x16xf32> = dense<0.0>
func.func @not_constant(%a: memref<8x32xf32>, %b: memref<32x16xf32>, %c: memref<8x16xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<8x32xf32>, memref<32x16xf32>) outs(%c : memref<8x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  %s = memref.get_global @state : memref<32x16xf32>
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %s : memref<8x32xf32>, memref<32x16xf32>) outs(%c : memref<8x16xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s2 = arith.addf %acc, %p : f32
    linalg.yield %s2 : f32
  }
  return
}

// -----

// A 3x3 convolution at stride 1 by constant filters, 32 channels in and out,
// on a band of 4 output rows (1.8 M multiply-adds): one call to
// kiln_conv2d_constant_w with the shape (c, ih, iw, f, kh, kw, oh, ow),
// strides and dilations (1), the band with its channel and row strides, the
// filters, and the output with its strides (a band of a 32x48x48 image).
// CHECK-DAG: memref.global "private" @[[SITE:kiln_kernel_site[_0-9]*]] : memref<1xi64> = dense<0> {alignment = 8 : i64}
// CHECK-LABEL: func.func @winograd
// CHECK-NOT: call @dnnl_sgemm
// CHECK: memref.get_global @[[SITE]]
// CHECK: call @kiln_conv2d_constant_w(%{{.*}}, %c32_i64, %c6_i64, %c50_i64, %c32_i64, %c3_i64, %c3_i64, %c4_i64, %c48_i64, %c1_i64, %c1_i64, %c1_i64, %c1_i64, %{{.*}}, %c300_i64, %c50_i64, %{{.*}}, %{{.*}}, %c2304_i64, %c48_i64)
// CHECK-NOT: call @dnnl_sgemm
// OFF-LABEL: func.func @winograd
// OFF-NOT: kiln_conv2d_constant_w
// OFF: call @dnnl_sgemm
#in = affine_map<(f, y, x, c, i, j) -> (c, y + i, x + j)>
#w = affine_map<(f, y, x, c, i, j) -> (f, c, i, j)>
#out = affine_map<(f, y, x, c, i, j) -> (f, y, x)>
memref.global "private" constant @filters : memref<32x32x3x3xf32> = dense<0.5>
func.func @winograd(%band: memref<32x6x50xf32>, %image: memref<32x48x48xf32>, %row: index) {
  %w = memref.get_global @filters : memref<32x32x3x3xf32>
  %out = memref.subview %image[0, %row, 0] [32, 4, 48] [1, 1, 1] : memref<32x48x48xf32> to memref<32x4x48xf32, strided<[2304, 48, 1], offset: ?>>
  linalg.generic {indexing_maps = [#in, #w, #out],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%band, %w : memref<32x6x50xf32>, memref<32x32x3x3xf32>) outs(%out : memref<32x4x48xf32, strided<[2304, 48, 1], offset: ?>>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Other windows of several taps by constant filters get oneDNN's direct
// convolution through the same call: 5x5 at stride 1 (kh = kw = 5) and 3x3
// at stride 2 (sh = sw = 2), each with its band's shape and strides.
// CHECK-LABEL: func.func @direct
// CHECK-NOT: call @dnnl_sgemm
// CHECK: call @kiln_conv2d_constant_w(%{{.*}}, %c32_i64, %c12_i64, %c52_i64, %c32_i64, %c5_i64, %c5_i64, %c8_i64, %c48_i64, %c1_i64, %c1_i64, %c1_i64, %c1_i64, %{{.*}}, %c624_i64, %c52_i64, %{{.*}}, %{{.*}}, %c384_i64, %c48_i64)
// CHECK: call @kiln_conv2d_constant_w(%{{.*}}, %c32_i64, %c17_i64, %c97_i64, %c32_i64, %c3_i64, %c3_i64, %c8_i64, %c48_i64, %c2_i64, %c2_i64, %c1_i64, %c1_i64, %{{.*}}, %c1649_i64, %c97_i64, %{{.*}}, %{{.*}}, %c384_i64, %c48_i64)
// CHECK-NOT: call @dnnl_sgemm
#in3 = affine_map<(f, y, x, c, i, j) -> (c, y + i, x + j)>
#in3s2 = affine_map<(f, y, x, c, i, j) -> (c, y * 2 + i, x * 2 + j)>
#w = affine_map<(f, y, x, c, i, j) -> (f, c, i, j)>
#out = affine_map<(f, y, x, c, i, j) -> (f, y, x)>
memref.global "private" constant @five : memref<32x32x5x5xf32> = dense<0.5>
memref.global "private" constant @filters : memref<32x32x3x3xf32> = dense<0.5>
func.func @direct(%band: memref<32x12x52xf32>, %out: memref<32x8x48xf32>,
                  %band2: memref<32x17x97xf32>) {
  %w5 = memref.get_global @five : memref<32x32x5x5xf32>
  linalg.generic {indexing_maps = [#in3, #w, #out],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%band, %w5 : memref<32x12x52xf32>, memref<32x32x5x5xf32>) outs(%out : memref<32x8x48xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  %w3 = memref.get_global @filters : memref<32x32x3x3xf32>
  linalg.generic {indexing_maps = [#in3s2, #w, #out],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%band2, %w3 : memref<32x17x97xf32>, memref<32x32x3x3xf32>) outs(%out : memref<32x8x48xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A window one tap wide or tall (Inception's 7x1 and 1x7) has lost that
// loop to unit-dimension folding, and its filters that dimension: the call
// gets kh = 7, kw = 1 (and kh = 1, kw = 7) with the same dense filters.
// CHECK-LABEL: func.func @one_dimensional_windows
// CHECK-NOT: call @dnnl_sgemm
// CHECK: call @kiln_conv2d_constant_w(%{{.*}}, %c32_i64, %c14_i64, %c48_i64, %c32_i64, %c7_i64, %c1_i64, %c8_i64, %c48_i64, %c1_i64, %c1_i64, %c1_i64, %c1_i64,
// CHECK: call @kiln_conv2d_constant_w(%{{.*}}, %c32_i64, %c8_i64, %c54_i64, %c32_i64, %c1_i64, %c7_i64, %c8_i64, %c48_i64, %c1_i64, %c1_i64, %c1_i64, %c1_i64,
// CHECK-NOT: call @dnnl_sgemm
#rows = affine_map<(f, y, x, c, i) -> (c, y + i, x)>
#columns = affine_map<(f, y, x, c, j) -> (c, y, x + j)>
#w1 = affine_map<(f, y, x, c, i) -> (f, c, i)>
#out1 = affine_map<(f, y, x, c, i) -> (f, y, x)>
memref.global "private" constant @seven : memref<32x32x7xf32> = dense<0.5>
func.func @one_dimensional_windows(%tall: memref<32x14x48xf32>, %wide: memref<32x8x54xf32>,
                                   %out: memref<32x8x48xf32>) {
  %w = memref.get_global @seven : memref<32x32x7xf32>
  linalg.generic {indexing_maps = [#rows, #w1, #out1],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%tall, %w : memref<32x14x48xf32>, memref<32x32x7xf32>) outs(%out : memref<32x8x48xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#columns, #w1, #out1],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%wide, %w : memref<32x8x54xf32>, memref<32x32x7xf32>) outs(%out : memref<32x8x48xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A 1x1 convolution tile by constant filters with at most 64 positions (a
// 7x7 stage: 49) is the transposed product with the filters packed:
// kiln_matmul_constant_a(slot, filters, positions, channels, image, its
// channel stride, filters, their row stride, output, its channel stride).
// So is one at stride 2, from its column buffer (49 positions, dense).
// With 196 positions it stays one sgemm.
// CHECK-LABEL: func.func @pointwise
// CHECK: call @kiln_matmul_constant_a(%{{.*}}, %c64_i64, %c49_i64, %c128_i64, %{{.*}}, %c49_i64, %{{.*}}, %c128_i64, %{{.*}}, %c49_i64)
// CHECK: call @dnnl_sgemm
// CHECK: memref.copy
// CHECK: call @kiln_matmul_constant_a(%{{.*}}, %c64_i64, %c49_i64, %c128_i64, %{{.*}}, %c49_i64, %{{.*}}, %c128_i64, %{{.*}}, %c49_i64)
// CHECK-NOT: call @dnnl_sgemm
// OFF-LABEL: func.func @pointwise
// OFF-NOT: kiln_matmul_constant_a
#pin = affine_map<(f, y, x, c) -> (c, y, x)>
#pw = affine_map<(f, y, x, c) -> (f, c)>
#pout = affine_map<(f, y, x, c) -> (f, y, x)>
memref.global "private" constant @pointwise_filters : memref<64x128xf32> = dense<0.5>
func.func @pointwise(%x: memref<128x7x7xf32>, %y: memref<64x7x7xf32>,
                     %x14: memref<128x14x14xf32>, %y14: memref<64x14x14xf32>,
                     %x13: memref<128x13x13xf32>) {
  %w = memref.get_global @pointwise_filters : memref<64x128xf32>
  linalg.generic {indexing_maps = [#pin, #pw, #pout],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<128x7x7xf32>, memref<64x128xf32>) outs(%y : memref<64x7x7xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#pin, #pw, #pout],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x14, %w : memref<128x14x14xf32>, memref<64x128xf32>) outs(%y14 : memref<64x14x14xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(f, y, x, c) -> (c, y * 2, x * 2)>, #pw, #pout],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x13, %w : memref<128x13x13xf32>, memref<64x128xf32>) outs(%y : memref<64x7x7xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Convolutions the blocked layout does not take stay on im2col and sgemm:
// 16 channels (too narrow to pay), a 1x1 window (the image is the matrix
// already), filters computed at run time.
// CHECK-LABEL: func.func @not_blocked
// CHECK-NOT: kiln_conv2d_constant_w
// CHECK-COUNT-3: call @dnnl_sgemm
// CHECK-NOT: kiln_conv2d_constant_w
#in3 = affine_map<(f, y, x, c, i, j) -> (c, y + i, x + j)>
#w = affine_map<(f, y, x, c, i, j) -> (f, c, i, j)>
#out = affine_map<(f, y, x, c, i, j) -> (f, y, x)>
memref.global "private" constant @narrow : memref<16x16x3x3xf32> = dense<0.5>
memref.global "private" constant @pointwise : memref<32x32x1x1xf32> = dense<0.5>
func.func @not_blocked(%band16: memref<16x18x98xf32>, %out16: memref<16x16x96xf32>,
                       %image: memref<32x8x48xf32>, %out: memref<32x8x48xf32>,
                       %filters: memref<32x32x3x3xf32>, %band3: memref<32x10x50xf32>) {
  %w16 = memref.get_global @narrow : memref<16x16x3x3xf32>
  linalg.generic {indexing_maps = [#in3, #w, #out],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%band16, %w16 : memref<16x18x98xf32>, memref<16x16x3x3xf32>) outs(%out16 : memref<16x16x96xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  %w1 = memref.get_global @pointwise : memref<32x32x1x1xf32>
  linalg.generic {indexing_maps = [#in3, #w, #out],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%image, %w1 : memref<32x8x48xf32>, memref<32x32x1x1xf32>) outs(%out : memref<32x8x48xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#in3, #w, #out],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%band3, %filters : memref<32x10x50xf32>, memref<32x32x3x3xf32>) outs(%out : memref<32x8x48xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// The last, shorter band of rows of a Winograd convolution calls the same
// kernel with its row count and input height read at run time (the site
// keeps one primitive per shape it meets).
// CHECK-LABEL: func.func @winograd_partial_band
// CHECK-DAG: %[[IH:.*]] = memref.dim %arg0, %c1
// CHECK-DAG: %[[OH:.*]] = affine.min
// CHECK-DAG: %[[IH64:.*]] = arith.index_cast %[[IH]] : index to i64
// CHECK-DAG: %[[OH64:.*]] = arith.index_cast %[[OH]] : index to i64
// CHECK: call @kiln_conv2d_constant_w(%{{.*}}, %c32_i64, %[[IH64]], %c50_i64, %c32_i64, %c3_i64, %c3_i64, %[[OH64]], %c48_i64,
#in4 = affine_map<(f, y, x, c, i, j) -> (c, y + i, x + j)>
#w4 = affine_map<(f, y, x, c, i, j) -> (f, c, i, j)>
#out4 = affine_map<(f, y, x, c, i, j) -> (f, y, x)>
memref.global "private" constant @filters4 : memref<32x32x3x3xf32> = dense<0.5>
func.func @winograd_partial_band(%band: memref<32x?x50xf32>, %image: memref<32x47x48xf32>, %row: index) {
  %w = memref.get_global @filters4 : memref<32x32x3x3xf32>
  %rows = affine.min affine_map<(r) -> (-r + 47, 4)>(%row)
  %out = memref.subview %image[0, %row, 0] [32, %rows, 48] [1, 1, 1] : memref<32x47x48xf32> to memref<32x?x48xf32, strided<[2256, 48, 1], offset: ?>>
  linalg.generic {indexing_maps = [#in4, #w4, #out4],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%band, %w : memref<32x?x50xf32>, memref<32x32x3x3xf32>) outs(%out : memref<32x?x48xf32, strided<[2256, 48, 1], offset: ?>>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A depthwise tile (16 of the 48 channels of a 14x14 image, each its own
// group) by constant filters is no oneDNN site either: the runtime's
// depthwise kernel takes it, 16 groups in one call, no site slot.
// CHECK-LABEL: func.func @depthwise
// CHECK-NOT: call @dnnl_sgemm
// CHECK-NOT: call @kiln_conv2d_constant_w
// CHECK: call @kiln_depthwise_conv2d(%c16_i64, %c3_i64, %c3_i64, %c14_i64, %c14_i64, %c1_i64, %c1_i64, %c1_i64, %c1_i64, %{{.*}}, %c256_i64, %c16_i64, %c16_i64, %c16_i64, %c0_i64, %c0_i64, %{{.*}}, %{{.*}}, %c0_i64, %{{.*}}, %{{.*}}, %{{.*}}, %c196_i64, %c14_i64)
// CHECK-NOT: call @dnnl_sgemm
#ind = affine_map<(g, y, x, i, j) -> (g, y + i, x + j)>
#wd = affine_map<(g, y, x, i, j) -> (g, i, j)>
#outd = affine_map<(g, y, x, i, j) -> (g, y, x)>
memref.global "private" constant @dw : memref<16x3x3xf32> = dense<0.5>
func.func @depthwise(%band: memref<16x16x16xf32>, %out: memref<16x14x14xf32, strided<[196, 14, 1], offset: ?>>) {
  %w = memref.get_global @dw : memref<16x3x3xf32>
  linalg.generic {indexing_maps = [#ind, #wd, #outd],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%band, %w : memref<16x16x16xf32>, memref<16x3x3xf32>) outs(%out : memref<16x14x14xf32, strided<[196, 14, 1], offset: ?>>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}
