// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-decompose,kiln-lower-to-linalg),canonicalize,cse,kiln-gpu-form-kernels{chip=sm_90},canonicalize,cse)' | FileCheck %s

// GEMM + bias + ReLU: one cuBLASLt call with both in its epilogue, on the
// tensors as they are.
// CHECK-LABEL: func.func @gemm_bias_relu
// CHECK-NEXT: %[[P:.*]] = kiln_gpu.matmul %arg0, %arg1 bias(%arg2 : tensor<1024xf32>) epilogue relu batch 1 m 64 n 1024 k 784 : tensor<64x784xf32>, tensor<784x1024xf32> -> tensor<64x1024xf32>
// CHECK-NEXT: return %[[P]]
// CHECK-NOT: gpu.func
func.func @gemm_bias_relu(%x: tensor<64x784xf32>, %w: tensor<784x1024xf32>, %b: tensor<1024xf32>) -> tensor<64x1024xf32> {
  %0 = kiln.fusion output(%x, %w, %b) : (tensor<64x784xf32>, tensor<784x1024xf32>, tensor<1024xf32>) -> tensor<64x1024xf32> {
  ^bb0(%a: tensor<64x784xf32>, %m: tensor<784x1024xf32>, %v: tensor<1024xf32>):
    %p = kiln.matmul %a, %m : (tensor<64x784xf32>, tensor<784x1024xf32>) -> tensor<64x1024xf32>
    %s = kiln.add %p, %v : (tensor<64x1024xf32>, tensor<1024xf32>) -> tensor<64x1024xf32>
    %r = kiln.relu %s : tensor<64x1024xf32>
    kiln.yield %r : tensor<64x1024xf32>
  }
  return %0 : tensor<64x1024xf32>
}

// -----

// Q·K^T / 8: the transpose of the last two dimensions is the library reading K
// transposed, the division its alpha: no kernel.
// CHECK-LABEL: func.func @attention_scores
// CHECK-NEXT: %[[P:.*]] = kiln_gpu.matmul %arg0, %arg1 batch 4 m 128 n 128 k 64 {alpha = 1.250000e-01 : f32, rhs_transposed} : tensor<4x128x64xf32>, tensor<4x128x64xf32> -> tensor<4x128x128xf32>
// CHECK-NEXT: return %[[P]]
func.func @attention_scores(%q: tensor<4x128x64xf32>, %k: tensor<4x128x64xf32>) -> tensor<4x128x128xf32> {
  %0 = kiln.fusion output(%q, %k) : (tensor<4x128x64xf32>, tensor<4x128x64xf32>) -> tensor<4x128x128xf32> {
  ^bb0(%a: tensor<4x128x64xf32>, %b: tensor<4x128x64xf32>):
    %t = kiln.transpose %b {perm = array<i64: 0, 2, 1>} : (tensor<4x128x64xf32>) -> tensor<4x64x128xf32>
    %p = kiln.matmul %a, %t : (tensor<4x128x64xf32>, tensor<4x64x128xf32>) -> tensor<4x128x128xf32>
    %c = kiln.constant dense<0.125> : tensor<f32>
    %s = kiln.mul %p, %c : (tensor<4x128x128xf32>, tensor<f32>) -> tensor<4x128x128xf32>
    kiln.yield %s : tensor<4x128x128xf32>
  }
  return %0 : tensor<4x128x128xf32>
}

// -----

// A batch of products sharing one weight matrix (one matrix serves every
// batch index), with a residual added by the library (beta = 1).
// CHECK-LABEL: func.func @shared_weights
// CHECK-NEXT: kiln_gpu.matmul %arg0, %arg1 addend(%arg2 : tensor<8x16x64xf32>) batch 8 m 16 n 64 k 32 : tensor<8x16x32xf32>, tensor<32x64xf32> -> tensor<8x16x64xf32>
// CHECK-NOT: kiln_gpu.launch
func.func @shared_weights(%x: tensor<8x16x32xf32>, %w: tensor<32x64xf32>, %res: tensor<8x16x64xf32>) -> tensor<8x16x64xf32> {
  %0 = kiln.fusion output(%x, %w, %res) : (tensor<8x16x32xf32>, tensor<32x64xf32>, tensor<8x16x64xf32>) -> tensor<8x16x64xf32> {
  ^bb0(%a: tensor<8x16x32xf32>, %b: tensor<32x64xf32>, %c: tensor<8x16x64xf32>):
    %p = kiln.matmul %a, %b : (tensor<8x16x32xf32>, tensor<32x64xf32>) -> tensor<8x16x64xf32>
    %s = kiln.add %p, %c : (tensor<8x16x64xf32>, tensor<8x16x64xf32>) -> tensor<8x16x64xf32>
    kiln.yield %s : tensor<8x16x64xf32>
  }
  return %0 : tensor<8x16x64xf32>
}

// -----

// A convolution: a kernel gathers the im2col matrix [c*kh*kw, oh*ow] from
// the padded image, the library multiplies the filter [f, c*kh*kw] by it,
// and the bias the convolution accumulates onto is added, with the ReLU, by
// a kernel reading the product.
// CHECK-LABEL: func.func @conv_bias_relu
// CHECK: %[[COL:.*]] = kiln_gpu.launch @kiln_kernels::@[[IM2COL:.*]] grid {{.*}}(%arg0) : (tensor<1x8x16x16xf32>) -> tensor<1x1x8x3x3x16x16xf32>
// CHECK: %[[P:.*]] = kiln_gpu.matmul %{{.*}}, %[[COL]] batch 1 m 16 n 256 k 72 : tensor<1x16x8x3x3xf32>, tensor<1x1x8x3x3x16x16xf32> -> tensor<1x1x16x16x16xf32>
// CHECK: kiln_gpu.launch @kiln_kernels::@[[EPILOGUE:.*]] grid {{.*}}(%arg2, %[[P]])
// CHECK: gpu.func @[[IM2COL]]
// CHECK: scf.if
// CHECK: gpu.func @[[EPILOGUE]]
// CHECK: arith.addf
// CHECK: arith.select
func.func @conv_bias_relu(%x: tensor<1x8x16x16xf32>, %w: tensor<16x8x3x3xf32>, %b: tensor<16xf32>) -> tensor<1x16x16x16xf32> {
  %0 = kiln.fusion output(%x, %w, %b) : (tensor<1x8x16x16xf32>, tensor<16x8x3x3xf32>, tensor<16xf32>) -> tensor<1x16x16x16xf32> {
  ^bb0(%a: tensor<1x8x16x16xf32>, %f: tensor<16x8x3x3xf32>, %v: tensor<16xf32>):
    %c = kiln.conv %a, %f, %v {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x8x16x16xf32>, tensor<16x8x3x3xf32>, tensor<16xf32>) -> tensor<1x16x16x16xf32>
    %r = kiln.relu %c : tensor<1x16x16x16xf32>
    kiln.yield %r : tensor<1x16x16x16xf32>
  }
  return %0 : tensor<1x16x16x16xf32>
}

// -----

// Integer products stay generated: the rows of the result are dot products
// reduced by thread groups.
// CHECK-LABEL: func.func @integer_matmul
// CHECK-NOT: kiln_gpu.matmul
// CHECK: kiln_gpu.launch
// CHECK: gpu.shuffle xor
// CHECK: arith.addi
func.func @integer_matmul(%x: tensor<16x32xi32>, %w: tensor<32x8xi32>) -> tensor<16x8xi32> {
  %0 = kiln.fusion output(%x, %w) : (tensor<16x32xi32>, tensor<32x8xi32>) -> tensor<16x8xi32> {
  ^bb0(%a: tensor<16x32xi32>, %b: tensor<32x8xi32>):
    %p = kiln.matmul %a, %b : (tensor<16x32xi32>, tensor<32x8xi32>) -> tensor<16x8xi32>
    kiln.yield %p : tensor<16x8xi32>
  }
  return %0 : tensor<16x8xi32>
}

// -----

// Attention as an ONNX exporter writes it: Q, K and V reshaped and
// transposed into heads by fusions of their own, the context transposed
// back. The products read the heads where they are in the [128, 256]
// tensors (4 matrices 64 elements apart, rows of 256) and write the context
// back the same way: no kernel copies anything.
// CHECK-LABEL: func.func @heads_in_place
// CHECK-NOT: kiln_gpu.launch
// CHECK: %[[S:.*]] = kiln_gpu.matmul %{{.*}}, %{{.*}} batch 4 m 128 n 128 k 64 {lhs_strides = array<i64: 64, 256>, rhs_strides = array<i64: 64, 256>, rhs_transposed} : tensor<128x4x64xf32>, tensor<128x4x64xf32> -> tensor<4x128x128xf32>
// CHECK: %[[C:.*]] = kiln_gpu.matmul %[[S]], %{{.*}} batch 4 m 128 n 64 k 128 {result_strides = array<i64: 64, 256>, rhs_strides = array<i64: 64, 256>} : tensor<4x128x128xf32>, tensor<128x4x64xf32> -> tensor<128x256xf32>
// CHECK-NOT: kiln_gpu.launch
// CHECK: return %[[C]]
func.func @heads_in_place(%q: tensor<128x256xf32>, %k: tensor<128x256xf32>, %v: tensor<128x256xf32>) -> tensor<128x256xf32> {
  %qh = kiln.fusion loop(%q) : (tensor<128x256xf32>) -> tensor<4x128x64xf32> {
  ^bb0(%a: tensor<128x256xf32>):
    %r = kiln.reshape %a {shape = array<i64: 128, 4, 64>} : tensor<128x256xf32> -> tensor<128x4x64xf32>
    %t = kiln.transpose %r {perm = array<i64: 1, 0, 2>} : (tensor<128x4x64xf32>) -> tensor<4x128x64xf32>
    kiln.yield %t : tensor<4x128x64xf32>
  }
  %kh = kiln.fusion loop(%k) : (tensor<128x256xf32>) -> tensor<4x64x128xf32> {
  ^bb0(%a: tensor<128x256xf32>):
    %r = kiln.reshape %a {shape = array<i64: 128, 4, 64>} : tensor<128x256xf32> -> tensor<128x4x64xf32>
    %t = kiln.transpose %r {perm = array<i64: 1, 2, 0>} : (tensor<128x4x64xf32>) -> tensor<4x64x128xf32>
    kiln.yield %t : tensor<4x64x128xf32>
  }
  %vh = kiln.fusion loop(%v) : (tensor<128x256xf32>) -> tensor<4x128x64xf32> {
  ^bb0(%a: tensor<128x256xf32>):
    %r = kiln.reshape %a {shape = array<i64: 128, 4, 64>} : tensor<128x256xf32> -> tensor<128x4x64xf32>
    %t = kiln.transpose %r {perm = array<i64: 1, 0, 2>} : (tensor<128x4x64xf32>) -> tensor<4x128x64xf32>
    kiln.yield %t : tensor<4x128x64xf32>
  }
  %s = kiln.fusion output(%qh, %kh) : (tensor<4x128x64xf32>, tensor<4x64x128xf32>) -> tensor<4x128x128xf32> {
  ^bb0(%a: tensor<4x128x64xf32>, %b: tensor<4x64x128xf32>):
    %p = kiln.matmul %a, %b : (tensor<4x128x64xf32>, tensor<4x64x128xf32>) -> tensor<4x128x128xf32>
    kiln.yield %p : tensor<4x128x128xf32>
  }
  %c = kiln.fusion output(%s, %vh) : (tensor<4x128x128xf32>, tensor<4x128x64xf32>) -> tensor<4x128x64xf32> {
  ^bb0(%a: tensor<4x128x128xf32>, %b: tensor<4x128x64xf32>):
    %p = kiln.matmul %a, %b : (tensor<4x128x128xf32>, tensor<4x128x64xf32>) -> tensor<4x128x64xf32>
    kiln.yield %p : tensor<4x128x64xf32>
  }
  %o = kiln.fusion loop(%c) : (tensor<4x128x64xf32>) -> tensor<128x256xf32> {
  ^bb0(%a: tensor<4x128x64xf32>):
    %t = kiln.transpose %a {perm = array<i64: 1, 0, 2>} : (tensor<4x128x64xf32>) -> tensor<128x4x64xf32>
    %r = kiln.reshape %t {shape = array<i64: 128, 256>} : tensor<128x4x64xf32> -> tensor<128x256xf32>
    kiln.yield %r : tensor<128x256xf32>
  }
  return %o : tensor<128x256xf32>
}

// -----

// A weight gradient x^T · dy: 16 x 25 outputs (one tile) over k = 50,176.
// One product would run on one multiprocessor; it is 128 products over
// consecutive parts of k (392 rows of x and of dy each: batch strides of
// 392 rows), about one per multiprocessor, and a kernel sums the 128
// partials, in order, with the SGD step's scale that follows.
// CHECK-LABEL: func.func @long_k
// CHECK: %[[P:.*]] = kiln_gpu.matmul %arg0, %arg1 batch 128 m 16 n 25 k 392 {lhs_strides = array<i64: 6272, 16>, lhs_transposed, rhs_strides = array<i64: 9800, 25>} : tensor<50176x16xf32>, tensor<50176x25xf32> -> tensor<128x16x25xf32>
// CHECK: %[[S:.*]] = kiln_gpu.launch @kiln_kernels::@[[K:kiln_k[0-9]+]] {{.*}}(%[[P]]) : (tensor<128x16x25xf32>) -> tensor<16x25xf32>
// CHECK: return %[[S]]
// CHECK: gpu.func @[[K]]
// CHECK: scf.for %{{.*}} = %c0 to %c128 step %c1
// CHECK: arith.addf
// CHECK: arith.mulf
func.func @long_k(%x: tensor<50176x16xf32>, %dy: tensor<50176x25xf32>) -> tensor<16x25xf32> {
  %0 = kiln.fusion output(%x, %dy) : (tensor<50176x16xf32>, tensor<50176x25xf32>) -> tensor<16x25xf32> {
  ^bb0(%a: tensor<50176x16xf32>, %b: tensor<50176x25xf32>):
    %t = kiln.transpose %a {perm = array<i64: 1, 0>} : (tensor<50176x16xf32>) -> tensor<16x50176xf32>
    %p = kiln.matmul %t, %b : (tensor<16x50176xf32>, tensor<50176x25xf32>) -> tensor<16x25xf32>
    %c = kiln.constant dense<0.01> : tensor<f32>
    %s = kiln.mul %p, %c : (tensor<16x25xf32>, tensor<f32>) -> tensor<16x25xf32>
    kiln.yield %s : tensor<16x25xf32>
  }
  return %0 : tensor<16x25xf32>
}

// -----

// A long k into many output tiles already fills the chip: one product.
// CHECK-LABEL: func.func @long_k_wide
// CHECK: kiln_gpu.matmul %arg0, %arg1 batch 1 m 512 n 512 k 8192
func.func @long_k_wide(%x: tensor<512x8192xf32>, %w: tensor<8192x512xf32>) -> tensor<512x512xf32> {
  %0 = kiln.fusion output(%x, %w) : (tensor<512x8192xf32>, tensor<8192x512xf32>) -> tensor<512x512xf32> {
  ^bb0(%a: tensor<512x8192xf32>, %b: tensor<8192x512xf32>):
    %p = kiln.matmul %a, %b : (tensor<512x8192xf32>, tensor<8192x512xf32>) -> tensor<512x512xf32>
    kiln.yield %p : tensor<512x512xf32>
  }
  return %0 : tensor<512x512xf32>
}

// -----

// A convolution's weight gradient: the input [ci, n, h, w] (channels first)
// convolved with the output gradient as filter [co, n, oh, ow]. As products
// it would be 6 (one per input channel) of 16 x 25 over k = 6,400: 6 blocks
// of the GPU. The filter is the same for all 6, so it is one product with
// the channels among its columns, [16, 6400] · [6400, 6 x 25] (im2col in
// window-major order), split in 25 parts of k; a kernel sums the parts into
// the [6, 16, 5, 5] layout.
// CHECK-LABEL: func.func @weight_gradient_conv
// CHECK: %[[COLS:.*]] = kiln_gpu.launch {{.*}}(%arg0) : (tensor<6x64x14x14xf32>) -> tensor<64x10x10x6x1x5x5xf32>
// CHECK: %[[P:.*]] = kiln_gpu.matmul %{{.*}}, %[[COLS]] batch 25 m 16 n 150 k 256 {lhs_strides = array<i64: 256, 6400>, rhs_strides = array<i64: 38400, 150>} : tensor<1x16x64x10x10xf32>, tensor<64x10x10x6x1x5x5xf32> -> tensor<25x16x6x25xf32>
// CHECK: %[[G:.*]] = kiln_gpu.launch {{.*}}(%[[P]]) : (tensor<25x16x6x25xf32>) -> tensor<6x16x5x5xf32>
// CHECK: return %[[G]]
func.func @weight_gradient_conv(%x: tensor<6x64x14x14xf32>, %dy: tensor<16x64x10x10xf32>) -> tensor<6x16x5x5xf32> {
  %0 = kiln.fusion output(%x, %dy) : (tensor<6x64x14x14xf32>, tensor<16x64x10x10xf32>) -> tensor<6x16x5x5xf32> {
  ^bb0(%a: tensor<6x64x14x14xf32>, %f: tensor<16x64x10x10xf32>):
    %c = kiln.conv %a, %f {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<6x64x14x14xf32>, tensor<16x64x10x10xf32>) -> tensor<6x16x5x5xf32>
    kiln.yield %c : tensor<6x16x5x5xf32>
  }
  return %0 : tensor<6x16x5x5xf32>
}

// -----

// An SGD step on a weight, w - 0.01 * (x^T · dy): the library computes it
// whole, alpha -0.01 and w as the addend (beta 1): no kernel.
// CHECK-LABEL: func.func @sgd_update
// CHECK-NEXT: %[[W:.*]] = kiln_gpu.matmul %arg0, %arg1 addend(%arg2 : tensor<400x120xf32>) batch 1 m 400 n 120 k 64 {alpha = -0.00999999977 : f32, lhs_transposed} : tensor<64x400xf32>, tensor<64x120xf32> -> tensor<400x120xf32>
// CHECK-NEXT: return %[[W]]
// CHECK-NOT: gpu.func
func.func @sgd_update(%x: tensor<64x400xf32>, %dy: tensor<64x120xf32>, %w: tensor<400x120xf32>) -> tensor<400x120xf32> {
  %0 = kiln.fusion output(%x, %dy, %w) : (tensor<64x400xf32>, tensor<64x120xf32>, tensor<400x120xf32>) -> tensor<400x120xf32> {
  ^bb0(%a: tensor<64x400xf32>, %b: tensor<64x120xf32>, %v: tensor<400x120xf32>):
    %t = kiln.transpose %a {perm = array<i64: 1, 0>} : (tensor<64x400xf32>) -> tensor<400x64xf32>
    %g = kiln.matmul %t, %b : (tensor<400x64xf32>, tensor<64x120xf32>) -> tensor<400x120xf32>
    %c = kiln.constant dense<0.01> : tensor<f32>
    %s = kiln.mul %g, %c : (tensor<400x120xf32>, tensor<f32>) -> tensor<400x120xf32>
    %u = kiln.sub %v, %s : (tensor<400x120xf32>, tensor<400x120xf32>) -> tensor<400x120xf32>
    kiln.yield %u : tensor<400x120xf32>
  }
  return %0 : tensor<400x120xf32>
}
