// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(kiln-contractions-to-blas{library=openblas},canonicalize,cse)' | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-contractions-to-blas -canonicalize -cse | FileCheck %s --check-prefix=DNNL

// With oneDNN (the default) the same products call dnnl_sgemm: row-major,
// 'N' transposes, 64-bit sizes, and no thread-count call (oneDNN's OpenMP
// calls see that they run inside a kernel's parallel loop).
// DNNL-LABEL: func.func @gemm
// DNNL-NOT: openblas_set_num_threads
// DNNL: call @dnnl_sgemm(%c78_i8, %c78_i8, %c64_i64, %c512_i64, %c784_i64, %cst, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %cst, %{{.*}}, %{{.*}}) : (i8, i8, i64, i64, i64, f32, !llvm.ptr, i64, !llvm.ptr, i64, f32, !llvm.ptr, i64) -> i32
// DNNL-LABEL: func.func @conv_band
// DNNL: memref.alloc() {alignment = 64 : i64} : memref<64x3x3x7x56xf32>
// DNNL: call @dnnl_sgemm(%c78_i8, %c78_i8, %c64_i64, %c392_i64, %c576_i64
// DNNL-LABEL: func.func @gemm_f64
// DNNL-NOT: call


// A matmul tile: one sgemm on the views (row major, no transposes), with
// leading dimensions read from the strides. OpenBLAS is kept to one thread
// since the kernel owns the threads.
// CHECK-LABEL: func.func @gemm
// CHECK: call @openblas_set_num_threads(%c1_i32)
// CHECK-NOT: linalg.generic
// CHECK: call @cblas_sgemm(%c101_i32, %c111_i32, %c111_i32, %c64_i32, %c512_i32, %c784_i32, %cst, %{{.*}}, %c784_i32, %{{.*}}, %c1024_i32, %cst, %{{.*}}, %c512_i32)
// CHECK: func.func private @cblas_sgemm(i32, i32, i32, i32, i32, i32, f32, !llvm.ptr, i32, !llvm.ptr, i32, f32, !llvm.ptr, i32)
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func @gemm(%a: memref<64x784xf32>, %b: memref<784x512xf32, strided<[1024, 1], offset: ?>>, %c: memref<64x512xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<64x784xf32>, memref<784x512xf32, strided<[1024, 1], offset: ?>>) outs(%c : memref<64x512xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A 3x3 convolution tile (a band of 7 output rows, all 64 channels, of a
// 56x56 image): im2col into a [channel, kh, kw, row, column] buffer, then
// one sgemm M=64 (channels) N=7*56 K=64*3*3 whose C is the strided band
// (ldc = the full 56x56 plane).
// im2col copies, per (channel, kh, kw), the image's 7x56 window at
// (channel, kh, kw) into the column buffer's slice.
// CHECK-LABEL: func.func @conv_band
// CHECK: %[[COL:.*]] = memref.alloc() {alignment = 64 : i64} : memref<64x3x3x7x56xf32>
// CHECK: scf.for %[[C:.*]] = %c0 to %c64 step %c1 {
// CHECK-NEXT: scf.for %[[KH:.*]] = %c0 to %c3 step %c1 {
// CHECK-NEXT: scf.for %[[KW:.*]] = %c0 to %c3 step %c1 {
// CHECK-NEXT: %[[WINDOW:.*]] = memref.subview %arg0[%[[C]], %[[KH]], %[[KW]]] [1, 7, 56] [1, 1, 1] : memref<64x9x58xf32> to memref<7x56xf32, strided<[58, 1], offset: ?>>
// CHECK-NEXT: %[[SLICE:.*]] = memref.subview %[[COL]][%[[C]], %[[KH]], %[[KW]], 0, 0] [1, 1, 1, 7, 56] [1, 1, 1, 1, 1] : memref<64x3x3x7x56xf32> to memref<7x56xf32, strided<[56, 1], offset: ?>>
// CHECK-NEXT: memref.copy %[[WINDOW]], %[[SLICE]]
// CHECK: call @cblas_sgemm(%c101_i32, %c111_i32, %c111_i32, %c64_i32, %c392_i32, %c576_i32, %cst, %{{.*}}, %c576_i32, %{{.*}}, %c392_i32, %cst, %{{.*}}, %c3136_i32)
// CHECK: memref.dealloc %[[COL]]
// CHECK-NOT: linalg.generic
#image = affine_map<(f, oh, ow, c, kh, kw) -> (c, oh + kh, ow + kw)>
#filter = affine_map<(f, oh, ow, c, kh, kw) -> (f, c, kh, kw)>
#out = affine_map<(f, oh, ow, c, kh, kw) -> (f, oh, ow)>
func.func @conv_band(%x: memref<64x9x58xf32>, %w: memref<64x64x3x3xf32>, %y: memref<64x7x56xf32, strided<[3136, 56, 1], offset: ?>>) {
  linalg.generic {indexing_maps = [#image, #filter, #out], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %w : memref<64x9x58xf32>, memref<64x64x3x3xf32>) outs(%y : memref<64x7x56xf32, strided<[3136, 56, 1], offset: ?>>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A batch of images with stride 2: one im2col over every image, then an
// sgemm per image inside a loop; the filter has no batch dimension.
// Its windows have a stride of 2 along both spatial dimensions.
// CHECK-LABEL: func.func @conv_images
// CHECK: %[[COL:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2x5x5x14x14xf32>
// CHECK: memref.subview %arg0[%{{.*}}, %{{.*}}, %{{.*}}] [1, 14, 14] [1, 2, 2] : memref<2x32x32xf32> to memref<14x14xf32, strided<[64, 2], offset: ?>>
// CHECK: memref.copy %{{.*}}, %{{.*}} : memref<14x14xf32, strided<[64, 2], offset: ?>> to memref<14x14xf32, strided<[14, 1], offset: ?>>
// CHECK: scf.for %[[N:.*]] = %c0 to %c2 step %c1
// CHECK: memref.extract_strided_metadata %arg2
// CHECK: arith.muli %[[N]]
// CHECK: call @cblas_sgemm(%c101_i32, %c111_i32, %c111_i32, %c6_i32, %c196_i32, %c25_i32, %cst, %{{.*}}, %c25_i32, %{{.*}}, %c196_i32, %cst, %{{.*}}, %c196_i32)
// CHECK: }
// CHECK: memref.dealloc %[[COL]]
#image2 = affine_map<(n, f, oh, ow, kh, kw) -> (n, oh * 2 + kh, ow * 2 + kw)>
#filter2 = affine_map<(n, f, oh, ow, kh, kw) -> (f, kh, kw)>
#out2 = affine_map<(n, f, oh, ow, kh, kw) -> (n, f, oh, ow)>
func.func @conv_images(%x: memref<2x32x32xf32>, %w: memref<6x5x5xf32>, %y: memref<2x6x14x14xf32>) {
  linalg.generic {indexing_maps = [#image2, #filter2, #out2], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %w : memref<2x32x32xf32>, memref<6x5x5xf32>) outs(%y : memref<2x6x14x14xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// An output whose columns are not contiguous cannot be a BLAS matrix: the
// convolution stays a loop nest.
// CHECK-LABEL: func.func @conv_strided_output
// CHECK-NOT: cblas_sgemm
// CHECK: linalg.generic
// CHECK-NOT: cblas_sgemm
#image3 = affine_map<(f, oh, ow, kh, kw) -> (oh + kh, ow + kw)>
#filter3 = affine_map<(f, oh, ow, kh, kw) -> (f, kh, kw)>
#out3 = affine_map<(f, oh, ow, kh, kw) -> (f, oh, ow)>
func.func @conv_strided_output(%x: memref<10x10xf32>, %w: memref<4x3x3xf32>, %y: memref<4x8x8xf32, strided<[128, 16, 2]>>) {
  linalg.generic {indexing_maps = [#image3, #filter3, #out3], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %w : memref<10x10xf32>, memref<4x3x3xf32>) outs(%y : memref<4x8x8xf32, strided<[128, 16, 2]>>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Only f32 goes to sgemm; an f64 matmul stays a loop nest.
// CHECK-LABEL: func.func @gemm_f64
// CHECK-NOT: call
// CHECK: linalg.generic
#a4 = affine_map<(m, n, k) -> (m, k)>
#b4 = affine_map<(m, n, k) -> (k, n)>
#c4 = affine_map<(m, n, k) -> (m, n)>
func.func @gemm_f64(%a: memref<4x8xf64>, %b: memref<8x4xf64>, %c: memref<4x4xf64>) {
  linalg.generic {indexing_maps = [#a4, #b4, #c4], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<4x8xf64>, memref<8x4xf64>) outs(%c : memref<4x4xf64>) {
  ^bb0(%x: f64, %y: f64, %acc: f64):
    %p = arith.mulf %x, %y : f64
    %s = arith.addf %acc, %p : f64
    linalg.yield %s : f64
  }
  return
}

// -----

// An elementwise body of the same size as a multiply-accumulate is left alone.
// CHECK-LABEL: func.func @mean
// CHECK-NOT: call
// CHECK: linalg.generic
#id = affine_map<(i, j) -> (i, j)>
func.func @mean(%a: memref<4x8xf32>, %b: memref<4x8xf32>, %c: memref<4x8xf32>) {
  %half = arith.constant 0.5 : f32
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%a, %b : memref<4x8xf32>, memref<4x8xf32>) outs(%c : memref<4x8xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %s = arith.addf %x, %y : f32
    %m = arith.mulf %s, %half : f32
    linalg.yield %m : f32
  }
  return
}

// -----

// Operands stored transposed (the weight gradient X^T dY, the input
// gradient dY W^T): one call with the transpose flags, leading dimensions
// those of the stored matrices.
// CHECK-LABEL: func.func @gemm_transposed
// CHECK: call @cblas_sgemm(%c101_i32, %c112_i32, %c112_i32, %c784_i32, %c512_i32, %c64_i32, %cst, %{{.*}}, %c784_i32, %{{.*}}, %c64_i32, %cst, %{{.*}}, %c512_i32)
// DNNL-LABEL: func.func @gemm_transposed
// DNNL: call @dnnl_sgemm(%c84_i8, %c84_i8, %c784_i64, %c512_i64, %c64_i64
#at = affine_map<(m, n, k) -> (k, m)>
#bt = affine_map<(m, n, k) -> (n, k)>
#ct = affine_map<(m, n, k) -> (m, n)>
func.func @gemm_transposed(%a: memref<64x784xf32>, %b: memref<512x64xf32>, %c: memref<784x512xf32>) {
  linalg.generic {indexing_maps = [#at, #bt, #ct], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<64x784xf32>, memref<512x64xf32>) outs(%c : memref<784x512xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// The last tile of a dimension that the tile size does not divide is
// smaller, so its size is dynamic: the sgemm takes it at run time instead of
// the product falling back to scalar loops.
// DNNL-LABEL: func.func @gemm_partial_tile
// DNNL: %[[M:.*]] = memref.dim %arg0, %c0
// DNNL: %[[M64:.*]] = arith.index_cast %[[M]] : index to i64
// DNNL: call @dnnl_sgemm(%c78_i8, %c78_i8, %[[M64]], %c512_i64, %c784_i64
// DNNL-NOT: linalg.generic
#a4 = affine_map<(m, n, k) -> (m, k)>
#b4 = affine_map<(m, n, k) -> (k, n)>
#c4 = affine_map<(m, n, k) -> (m, n)>
func.func @gemm_partial_tile(%a: memref<?x784xf32, strided<[784, 1], offset: ?>>, %b: memref<784x512xf32>, %c: memref<?x512xf32, strided<[512, 1], offset: ?>>) {
  linalg.generic {indexing_maps = [#a4, #b4, #c4], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : memref<?x784xf32, strided<[784, 1], offset: ?>>, memref<784x512xf32>) outs(%c : memref<?x512xf32, strided<[512, 1], offset: ?>>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// The last band of output rows of a 17x17 image cut in bands of 3 rows has
// two: im2col into a column buffer with a dynamic row count, and an sgemm
// with N = rows * 17.
// DNNL-LABEL: func.func @conv_partial_band
// DNNL: %[[ROWS:.*]] = memref.dim %arg2, %c1
// DNNL: %[[COL:.*]] = memref.alloc(%[[ROWS]]) {alignment = 64 : i64} : memref<64x3x3x?x17xf32>
// DNNL: memref.copy %{{.*}}, %{{.*}} : memref<?x17xf32, strided<[19, 1], offset: ?>> to memref<?x17xf32, strided<[17, 1], offset: ?>>
// DNNL: %[[N:.*]] = affine.apply #{{.*}}()[%[[ROWS]]]
// DNNL: %[[N64:.*]] = arith.index_cast %[[N]] : index to i64
// DNNL: call @dnnl_sgemm(%c78_i8, %c78_i8, %c64_i64, %[[N64]], %c576_i64
// DNNL: memref.dealloc %[[COL]]
// DNNL-NOT: linalg.generic
#image5 = affine_map<(f, oh, ow, c, kh, kw) -> (c, oh + kh, ow + kw)>
#filter5 = affine_map<(f, oh, ow, c, kh, kw) -> (f, c, kh, kw)>
#out5 = affine_map<(f, oh, ow, c, kh, kw) -> (f, oh, ow)>
func.func @conv_partial_band(%x: memref<64x?x19xf32>, %w: memref<64x64x3x3xf32>, %y: memref<64x?x17xf32, strided<[289, 17, 1], offset: ?>>) {
  linalg.generic {indexing_maps = [#image5, #filter5, #out5], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %w : memref<64x?x19xf32>, memref<64x64x3x3xf32>) outs(%y : memref<64x?x17xf32, strided<[289, 17, 1], offset: ?>>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A depthwise convolution tile (one channel per group, here 16 groups, a 3x3
// window at stride 2 and dilation 2; filters computed at run time) is one
// call of the runtime's kernel with all its groups: (groups, kh, kw, oh, ow,
// sh, sw, dh, dw, image, its channel and row strides, rows and columns, where
// it starts in the padded image (here it is that already), filters, bias
// (none), whether the output starts from it (no: it is added to), clamp
// bounds (none), output, its channel and row strides).
// DNNL-LABEL: func.func @depthwise
// DNNL-NOT: call @dnnl_sgemm
// DNNL-DAG: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// DNNL-DAG: %[[INF:.*]] = arith.constant 0x7F800000 : f32
// DNNL-DAG: %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// DNNL: call @kiln_depthwise_conv2d(%c16_i64, %c3_i64, %c3_i64, %c27_i64, %c27_i64, %c2_i64, %c2_i64, %c2_i64, %c2_i64, %{{.*}}, %c3364_i64, %c58_i64, %c58_i64, %c58_i64, %c0_i64, %c0_i64, %{{.*}}, %[[NULL]], %c0_i64, %[[NINF]], %[[INF]], %{{.*}}, %c729_i64, %c27_i64)
// DNNL-NOT: linalg.generic
// DNNL: func.func private @kiln_depthwise_conv2d(i64, i64, i64, i64, i64, i64, i64, i64, i64, !llvm.ptr, i64, i64, i64, i64, i64, i64, !llvm.ptr, !llvm.ptr, i64, f32, f32, !llvm.ptr, i64, i64)
#ind6 = affine_map<(g, y, x, i, j) -> (g, y * 2 + i * 2, x * 2 + j * 2)>
#wd6 = affine_map<(g, y, x, i, j) -> (g, i, j)>
#outd6 = affine_map<(g, y, x, i, j) -> (g, y, x)>
func.func @depthwise(%band: memref<16x58x58xf32>, %w: memref<16x3x3xf32>, %out: memref<16x27x27xf32>) {
  linalg.generic {indexing_maps = [#ind6, #wd6, #outd6],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%band, %w : memref<16x58x58xf32>, memref<16x3x3xf32>) outs(%out : memref<16x27x27xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Two images: one call per image, each with the tile's groups (a last tile
// with fewer of them: a run-time count) and the image's strides.
// DNNL-LABEL: func.func @depthwise_images
// DNNL: %[[G:.*]] = memref.dim %arg0, %c1
// DNNL: scf.for %{{.*}} = %c0 to %c2 step %c1
// DNNL: %[[G64:.*]] = arith.index_cast %[[G]] : index to i64
// DNNL: call @kiln_depthwise_conv2d(%[[G64]], %c5_i64, %c5_i64, %c7_i64, %c7_i64, %c1_i64, %c1_i64, %c1_i64, %c1_i64, %{{.*}}, %c121_i64, %c11_i64, %c11_i64, %c11_i64, %c0_i64, %c0_i64, %{{.*}}, %{{.*}}, %c0_i64, %{{.*}}, %{{.*}}, %{{.*}}, %c49_i64, %c7_i64)
#ind7 = affine_map<(n, g, y, x, i, j) -> (n, g, y + i, x + j)>
#wd7 = affine_map<(n, g, y, x, i, j) -> (g, i, j)>
#outd7 = affine_map<(n, g, y, x, i, j) -> (n, g, y, x)>
func.func @depthwise_images(%x: memref<2x?x11x11xf32, strided<[2904, 121, 11, 1], offset: ?>>, %w: memref<?x5x5xf32, strided<[25, 5, 1], offset: ?>>, %y: memref<2x?x7x7xf32, strided<[1176, 49, 7, 1], offset: ?>>) {
  linalg.generic {indexing_maps = [#ind7, #wd7, #outd7],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %w : memref<2x?x11x11xf32, strided<[2904, 121, 11, 1], offset: ?>>, memref<?x5x5xf32, strided<[25, 5, 1], offset: ?>>) outs(%y : memref<2x?x7x7xf32, strided<[1176, 49, 7, 1], offset: ?>>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A depthwise convolution along one axis (a text CNN's) is not the kernel's:
// it stays a loop nest, reordered so that the output row is innermost
// (groups, window, columns). An im2col and an sgemm of one row would cost
// more than the arithmetic.
// DNNL-LABEL: func.func @depthwise_1d_loops
// DNNL-NOT: call
// DNNL: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}], iterator_types = ["parallel", "reduction", "parallel"]}
// DNNL-NOT: call
#ind8 = affine_map<(g, x, j) -> (g, x + j)>
#wd8 = affine_map<(g, x, j) -> (g, j)>
#outd8 = affine_map<(g, x, j) -> (g, x)>
func.func @depthwise_1d_loops(%band: memref<16x58xf32>, %w: memref<16x3xf32>, %out: memref<16x56xf32>) {
  linalg.generic {indexing_maps = [#ind8, #wd8, #outd8],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%band, %w : memref<16x58xf32>, memref<16x3xf32>) outs(%out : memref<16x56xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A 1x1 convolution at stride 1 (the window is the input channels alone) on
// a band of 4 contiguous rows reads the image in place as B[channel][position]
// with ldb = the channel stride (28x28 = 784): no column buffer, no copy.
// DNNL-LABEL: func.func @conv1x1_in_place
// DNNL-NOT: memref.alloc
// DNNL-NOT: memref.copy
// DNNL: call @dnnl_sgemm(%c78_i8, %c78_i8, %c64_i64, %c112_i64, %c256_i64, %cst, %{{.*}}, %c256_i64, %{{.*}}, %c784_i64, %cst, %{{.*}}, %c784_i64)
// DNNL-NOT: memref.dealloc
#image7 = affine_map<(f, oh, ow, c) -> (c, oh, ow)>
#filter7 = affine_map<(f, oh, ow, c) -> (f, c)>
#out7 = affine_map<(f, oh, ow, c) -> (f, oh, ow)>
func.func @conv1x1_in_place(%x: memref<256x4x28xf32, strided<[784, 28, 1], offset: ?>>, %w: memref<64x256xf32>, %y: memref<64x4x28xf32, strided<[784, 28, 1], offset: ?>>) {
  linalg.generic {indexing_maps = [#image7, #filter7, #out7], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<256x4x28xf32, strided<[784, 28, 1], offset: ?>>, memref<64x256xf32>) outs(%y : memref<64x4x28xf32, strided<[784, 28, 1], offset: ?>>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A weight-gradient tile: 8 input channels (the batch loop) share the
// filter (the output gradient) and each has only 3x3 positions, so they are
// the columns of one product, M=16 N=8*9 K=16*32*32. Each column's window is
// a row of the im2col buffer (its 32-wide rows are longer than the output's
// 3), read transposed. That buffer would be 72x16384 floats, so the
// reduction goes one image (its outermost loop) at a time, and each image's
// 1024 in two calls of 512 (a transposed B is read in parts of at most
// 800), the second's operands 512 floats further on. The product is added
// into the output, transposed back.
// DNNL-LABEL: func.func @weight_gradient
// DNNL-DAG: %[[COL:.*]] = memref.alloc() {alignment = 64 : i64} : memref<8x3x3x1x32x32xf32>
// DNNL-DAG: %[[PRODUCT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<16x8x3x3xf32>
// DNNL: linalg.fill ins(%{{.*}} : f32) outs(%[[PRODUCT]] : memref<16x8x3x3xf32>)
// DNNL: scf.for %[[N:.*]] = %c0 to %c16 step %c1 {
// DNNL: %[[IMAGE:.*]] = memref.subview %arg0[0, %[[N]], 0, 0] [8, 1, 34, 34]
// DNNL: %[[FILTER:.*]] = memref.subview %arg1[0, %[[N]], 0, 0] [16, 1, 32, 32]
// DNNL: memref.subview %[[IMAGE]][%{{.*}}, 0, %{{.*}}, %{{.*}}] [1, 1, 32, 32] [1, 1, 1, 1]
// DNNL: memref.copy
// DNNL: memref.extract_strided_metadata %[[FILTER]]
// DNNL: call @dnnl_sgemm(%c78_i8, %c84_i8, %c16_i64, %c72_i64, %c512_i64, %cst, %[[A:[^,]*]], %c16384_i64, %[[B:[^,]*]], %c1024_i64, %cst, %[[C:[^,]*]], %c72_i64)
// DNNL: %[[A2:.*]] = llvm.getelementptr %[[A]][512] : (!llvm.ptr) -> !llvm.ptr, f32
// DNNL: %[[B2:.*]] = llvm.getelementptr %[[B]][512] : (!llvm.ptr) -> !llvm.ptr, f32
// DNNL: call @dnnl_sgemm(%c78_i8, %c84_i8, %c16_i64, %c72_i64, %c512_i64, %cst, %[[A2]], %c16384_i64, %[[B2]], %c1024_i64, %cst, %[[C]], %c72_i64)
// DNNL: }
// DNNL: linalg.generic {indexing_maps = [#[[TRANSPOSED:.*]], #{{.*}}], {{.*}}ins(%[[PRODUCT]] : memref<16x8x3x3xf32>) outs(%arg2 :
// DNNL: arith.addf
// DNNL: memref.dealloc %[[COL]]
// DNNL: memref.dealloc %[[PRODUCT]]
#wg_image = affine_map<(c, f, p, q, n, a, b) -> (c, n, p + a, q + b)>
#wg_filter = affine_map<(c, f, p, q, n, a, b) -> (f, n, a, b)>
#wg_out = affine_map<(c, f, p, q, n, a, b) -> (c, f, p, q)>
func.func @weight_gradient(%x: memref<8x16x34x34xf32>, %g: memref<16x16x32x32xf32>, %dw: memref<8x16x3x3xf32, strided<[144, 9, 3, 1], offset: ?>>) {
  linalg.generic {indexing_maps = [#wg_image, #wg_filter, #wg_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %g : memref<8x16x34x34xf32>, memref<16x16x32x32xf32>) outs(%dw : memref<8x16x3x3xf32, strided<[144, 9, 3, 1], offset: ?>>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// The same weight gradient written channel-first, in the filter's layout
// [f, c, p, q]: each output channel's row is the product's row, so the
// sgemm accumulates into the output itself (ldc = its row stride, 144) and
// nothing is transposed back.
// DNNL-LABEL: func.func @channel_first_weight_gradient
// DNNL-SAME: %[[DW:[a-z0-9]+]]: memref<16x8x3x3xf32, strided<[144, 9, 3, 1], offset: ?>>
// DNNL-NOT: memref<16x8x3x3xf32>
// DNNL: scf.for
// DNNL: call @dnnl_sgemm(%c78_i8, %c84_i8, %c16_i64, %c72_i64, %c512_i64, %cst, %{{.*}}, %c16384_i64, %{{.*}}, %c1024_i64, %cst, %{{.*}}, %c144_i64)
// DNNL: call @dnnl_sgemm(%c78_i8, %c84_i8, %c16_i64, %c72_i64, %c512_i64, %cst, %{{.*}}, %c16384_i64, %{{.*}}, %c1024_i64, %cst, %{{.*}}, %c144_i64)
// DNNL: }
// DNNL-NOT: linalg.generic
// DNNL-NOT: arith.addf
#cf_image = affine_map<(f, c, p, q, n, a, b) -> (c, n, p + a, q + b)>
#cf_filter = affine_map<(f, c, p, q, n, a, b) -> (f, n, a, b)>
#cf_out = affine_map<(f, c, p, q, n, a, b) -> (f, c, p, q)>
func.func @channel_first_weight_gradient(%x: memref<8x16x34x34xf32>, %g: memref<16x16x32x32xf32>, %dw: memref<16x8x3x3xf32, strided<[144, 9, 3, 1], offset: ?>>) {
  linalg.generic {indexing_maps = [#cf_image, #cf_filter, #cf_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %g : memref<8x16x34x34xf32>, memref<16x16x32x32xf32>) outs(%dw : memref<16x8x3x3xf32, strided<[144, 9, 3, 1], offset: ?>>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Four 4x4 images by 3x3 filters: 16 positions each, so the images join the
// columns too (M=16 N=4*16 K=8*3*3). The output's rows (4) are longer than
// the filter's (3), so the im2col buffer keeps the usual layout, window by
// positions, and is read as it is; it is small enough to need no chunks.
// DNNL-LABEL: func.func @small_images
// DNNL-DAG: %[[COL:.*]] = memref.alloc() {alignment = 64 : i64} : memref<8x3x3x4x4x4xf32>
// DNNL-DAG: %[[PRODUCT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<16x4x4x4xf32>
// DNNL: memref.subview %arg0[0, %{{.*}}, %{{.*}}, %{{.*}}] [4, 1, 4, 4] [1, 1, 1, 1] : memref<4x8x6x6xf32> to memref<4x4x4xf32, strided<[288, 6, 1], offset: ?>>
// DNNL: call @dnnl_sgemm(%c78_i8, %c78_i8, %c16_i64, %c64_i64, %c72_i64, %cst, %{{.*}}, %c72_i64, %{{.*}}, %c64_i64, %cst, %{{.*}}, %c64_i64)
// DNNL-NOT: dnnl_sgemm
// DNNL: linalg.generic {{.*}}ins(%[[PRODUCT]] : memref<16x4x4x4xf32>) outs(%arg2 : memref<4x16x4x4xf32>)
#si_image = affine_map<(n, f, p, q, c, kh, kw) -> (n, c, p + kh, q + kw)>
#si_filter = affine_map<(n, f, p, q, c, kh, kw) -> (f, c, kh, kw)>
#si_out = affine_map<(n, f, p, q, c, kh, kw) -> (n, f, p, q)>
func.func @small_images(%x: memref<4x8x6x6xf32>, %w: memref<16x8x3x3xf32>, %y: memref<4x16x4x4xf32>) {
  linalg.generic {indexing_maps = [#si_image, #si_filter, #si_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %w : memref<4x8x6x6xf32>, memref<16x8x3x3xf32>) outs(%y : memref<4x16x4x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A dense layer's weights as a non-transposed B whose rows are 4 KiB apart
// (1024 floats): oneDNN would pack them through the same cache sets, so B is
// first copied into rows of 528 floats (512 rounded to a line, plus one line
// since 2 KiB multiples conflict too), freed after the call.
// DNNL-LABEL: func.func @spaced_rows
// DNNL: %[[COPY:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1024x528xf32>
// DNNL: %[[ROWS:.*]] = memref.subview %[[COPY]][0, 0] [1024, 512] [1, 1]
// DNNL: memref.copy %arg1, %[[ROWS]]
// DNNL: memref.extract_strided_metadata %[[ROWS]]
// DNNL: call @dnnl_sgemm(%c78_i8, %c78_i8, %c256_i64, %c512_i64, %c1024_i64, %cst, %{{.*}}, %c1024_i64, %{{.*}}, %c528_i64, %cst, %{{.*}}, %c1024_i64)
// DNNL: memref.dealloc %[[COPY]]
#sr_a = affine_map<(m, n, k) -> (m, k)>
#sr_b = affine_map<(m, n, k) -> (k, n)>
#sr_c = affine_map<(m, n, k) -> (m, n)>
func.func @spaced_rows(%x: memref<256x1024xf32>, %w: memref<1024x512xf32, strided<[1024, 1], offset: ?>>, %y: memref<256x512xf32, strided<[1024, 1], offset: ?>>) {
  linalg.generic {indexing_maps = [#sr_a, #sr_b, #sr_c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<256x1024xf32>, memref<1024x512xf32, strided<[1024, 1], offset: ?>>) outs(%y : memref<256x512xf32, strided<[1024, 1], offset: ?>>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %0 = arith.mulf %p, %q : f32
    %1 = arith.addf %acc, %0 : f32
    linalg.yield %1 : f32
  }
  return
}

// -----

// The same B read by only 8 rows of A (a small batch) is read in place: the
// copy would cost as much as the product. So is one of 256 rows or fewer.
// DNNL-LABEL: func.func @spaced_rows_not_worth_it
// DNNL-NOT: memref.alloc
// DNNL: call @dnnl_sgemm(%c78_i8, %c78_i8, %c8_i64, %c512_i64, %c1024_i64, %cst, %{{.*}}, %c1024_i64, %{{.*}}, %c1024_i64, %cst,
// DNNL-NOT: memref.alloc
// DNNL: call @dnnl_sgemm(%c78_i8, %c78_i8, %c256_i64, %c512_i64, %c256_i64, %cst, %{{.*}}, %c256_i64, %{{.*}}, %c1024_i64, %cst,
#nw_a = affine_map<(m, n, k) -> (m, k)>
#nw_b = affine_map<(m, n, k) -> (k, n)>
#nw_c = affine_map<(m, n, k) -> (m, n)>
func.func @spaced_rows_not_worth_it(%x: memref<8x1024xf32>, %w: memref<1024x512xf32, strided<[1024, 1], offset: ?>>, %y: memref<8x512xf32>,
                                    %x2: memref<256x256xf32>, %w2: memref<256x512xf32, strided<[1024, 1], offset: ?>>, %y2: memref<256x512xf32>) {
  linalg.generic {indexing_maps = [#nw_a, #nw_b, #nw_c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<8x1024xf32>, memref<1024x512xf32, strided<[1024, 1], offset: ?>>) outs(%y : memref<8x512xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %0 = arith.mulf %p, %q : f32
    %1 = arith.addf %acc, %0 : f32
    linalg.yield %1 : f32
  }
  linalg.generic {indexing_maps = [#nw_a, #nw_b, #nw_c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x2, %w2 : memref<256x256xf32>, memref<256x512xf32, strided<[1024, 1], offset: ?>>) outs(%y2 : memref<256x512xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %0 = arith.mulf %p, %q : f32
    %1 = arith.addf %acc, %0 : f32
    linalg.yield %1 : f32
  }
  return
}

// -----

// A transposed A (a weight gradient's X^T over 1024 rows of a batch) with
// rows 4 KiB apart is packed down its stored columns too: it is copied into
// rows of 256 floats (1 KiB apart) for 512 columns of B to reuse.
// DNNL-LABEL: func.func @spaced_rows_transposed_a
// DNNL: %[[COPY:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1024x256xf32>
// DNNL: memref.copy %arg0, %[[COPY]]
// DNNL: call @dnnl_sgemm(%c84_i8, %c78_i8, %c256_i64, %c512_i64, %c1024_i64, %cst, %{{.*}}, %c256_i64, %{{.*}}, %c512_i64, %cst, %{{.*}}, %c512_i64)
// DNNL: memref.dealloc %[[COPY]]
#ta_a = affine_map<(m, n, k) -> (k, m)>
#ta_b = affine_map<(m, n, k) -> (k, n)>
#ta_c = affine_map<(m, n, k) -> (m, n)>
func.func @spaced_rows_transposed_a(%x: memref<1024x256xf32, strided<[1024, 1], offset: ?>>, %g: memref<1024x512xf32>, %dw: memref<256x512xf32>) {
  linalg.generic {indexing_maps = [#ta_a, #ta_b, #ta_c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %g : memref<1024x256xf32, strided<[1024, 1], offset: ?>>, memref<1024x512xf32>) outs(%dw : memref<256x512xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %0 = arith.mulf %p, %q : f32
    %1 = arith.addf %acc, %0 : f32
    linalg.yield %1 : f32
  }
  return
}

// -----

// The weight gradient of a 1x1 convolution at stride 2, its one output
// position folded away: out[c][f] += x[c][n][2h][2w] * g[f][n][h][w]. The
// image is still read through a window, so it is a convolution without
// positions: the 8 input channels are the columns of one product over
// every (image, row, column), M=16 N=8 K=4*7*7, each channel's strided
// window copied into a row first.
// DNNL-LABEL: func.func @no_positions
// DNNL-DAG: %[[COL:.*]] = memref.alloc() {alignment = 64 : i64} : memref<8x4x7x7xf32>
// DNNL-DAG: %[[PRODUCT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<16x8xf32>
// DNNL: memref.subview %arg0[%{{.*}}, 0, 0, 0] [1, 4, 7, 7] [1, 1, 2, 2] : memref<8x4x14x14xf32> to memref<4x7x7xf32, strided<[196, 28, 2], offset: ?>>
// DNNL: memref.copy
// DNNL: call @dnnl_sgemm(%c78_i8, %c84_i8, %c16_i64, %c8_i64, %c196_i64, %cst, %{{.*}}, %c196_i64, %{{.*}}, %c196_i64, %cst, %{{.*}}, %c8_i64)
// DNNL: linalg.generic {{.*}}ins(%[[PRODUCT]] : memref<16x8xf32>) outs(%arg2 : memref<8x16xf32>)
#np_image = affine_map<(c, f, n, h, w) -> (c, n, h * 2, w * 2)>
#np_filter = affine_map<(c, f, n, h, w) -> (f, n, h, w)>
#np_out = affine_map<(c, f, n, h, w) -> (c, f)>
func.func @no_positions(%x: memref<8x4x14x14xf32>, %g: memref<16x4x7x7xf32>, %dw: memref<8x16xf32>) {
  linalg.generic {indexing_maps = [#np_image, #np_filter, #np_out], iterator_types = ["parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%x, %g : memref<8x4x14x14xf32>, memref<16x4x7x7xf32>) outs(%dw : memref<8x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}
