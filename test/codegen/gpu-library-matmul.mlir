// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-decompose,kiln-lower-to-linalg),canonicalize,cse,kiln-gpu-form-kernels{chip=sm_90},canonicalize,cse)' | FileCheck %s

// GEMM + bias + ReLU: one cuBLASLt call with both in its epilogue; the
// 2-D operands are viewed as single-batch matrices.
// CHECK-LABEL: func.func @gemm_bias_relu
// CHECK: %[[X:.*]] = tensor.expand_shape %arg0 {{.*}} into tensor<1x64x784xf32>
// CHECK: %[[W:.*]] = tensor.expand_shape %arg1 {{.*}} into tensor<1x784x1024xf32>
// CHECK: %[[P:.*]] = kiln_gpu.matmul %[[X]], %[[W]] bias(%arg2 : tensor<1024xf32>) epilogue relu : tensor<1x64x784xf32>, tensor<1x784x1024xf32> -> tensor<1x64x1024xf32>
// CHECK: %[[R:.*]] = tensor.collapse_shape %[[P]]
// CHECK-NEXT: return %[[R]]
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

// Q·K^T: the transpose of the last two dimensions is the library reading K
// transposed; the scaling that follows is a kernel over the product.
// CHECK-LABEL: func.func @attention_scores
// CHECK: %[[P:.*]] = kiln_gpu.matmul %arg0, %arg1 {rhs_transposed} : tensor<4x128x64xf32>, tensor<4x128x64xf32> -> tensor<4x128x128xf32>
// CHECK: kiln_gpu.launch {{.*}}(%[[P]]) : (tensor<4x128x128xf32>) -> tensor<4x128x128xf32>
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

// A batch of products sharing one weight matrix (batch 1, read by every
// product), with a residual added by the library (beta = 1).
// CHECK-LABEL: func.func @shared_weights
// CHECK: %[[W:.*]] = tensor.expand_shape %arg1 {{.*}} into tensor<1x32x64xf32>
// CHECK: kiln_gpu.matmul %arg0, %[[W]] addend(%arg2 : tensor<8x16x64xf32>) : tensor<8x16x32xf32>, tensor<1x32x64xf32> -> tensor<8x16x64xf32>
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
// CHECK: %[[F:.*]] = tensor.expand_shape {{.*}} into tensor<1x16x72xf32>
// CHECK: %[[C:.*]] = tensor.collapse_shape %[[COL]] {{.*}} into tensor<1x72x256xf32>
// CHECK: %[[P:.*]] = kiln_gpu.matmul %[[F]], %[[C]] : tensor<1x16x72xf32>, tensor<1x72x256xf32> -> tensor<1x16x256xf32>
// CHECK: %[[V:.*]] = tensor.expand_shape %[[P]]
// CHECK: kiln_gpu.launch @kiln_kernels::@[[EPILOGUE:.*]] grid {{.*}}(%arg2, %[[V]])
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
