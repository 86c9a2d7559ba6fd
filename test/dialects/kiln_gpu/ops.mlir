// RUN: kiln-opt %s -split-input-file | kiln-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @launch
// CHECK: kiln_gpu.launch @kernels::@k grid [2, 1, 1] block [128, 1, 1] shared 64(%{{.*}}, %{{.*}}) : (tensor<256xf32>, tensor<16x16xf32>) -> tensor<256xf32>
module attributes {gpu.container_module} {
  func.func @launch(%a: tensor<256xf32>, %b: tensor<16x16xf32>) -> tensor<256xf32> {
    %0 = kiln_gpu.launch @kernels::@k grid [2, 1, 1] block [128, 1, 1] shared 64 (%a, %b)
        : (tensor<256xf32>, tensor<16x16xf32>) -> tensor<256xf32>
    return %0 : tensor<256xf32>
  }
  gpu.module @kernels {
    // A parameter may view its tensor with another shape of the same size.
    gpu.func @k(%a: memref<256xf32>, %b: memref<256xf32>, %c: memref<16x16xf32>) kernel {
      gpu.return
    }
  }
}

// -----

// CHECK-LABEL: func.func @matmul
// CHECK: kiln_gpu.matmul %{{.*}}, %{{.*}} bias(%{{.*}} : tensor<32xf32>) addend(%{{.*}} : tensor<4x8x32xf32>) epilogue relu batch 4 m 8 n 32 k 16 {allow_tf32, rhs_transposed} : tensor<8x16xf32>, tensor<4x32x16xf32> -> tensor<4x8x32xf32>
// CHECK: kiln_gpu.matmul %{{.*}}, %{{.*}} batch 1 m 8 n 32 k 16 {lhs_transposed} : tensor<16x8xbf16>, tensor<16x32xbf16> -> tensor<8x32xbf16>
func.func @matmul(%a: tensor<8x16xf32>, %b: tensor<4x32x16xf32>, %bias: tensor<32xf32>,
                  %c: tensor<4x8x32xf32>, %x: tensor<16x8xbf16>, %y: tensor<16x32xbf16>)
    -> (tensor<4x8x32xf32>, tensor<8x32xbf16>) {
  // One lhs matrix for every batch index, a batch of transposed rhs matrices.
  %0 = kiln_gpu.matmul %a, %b bias(%bias : tensor<32xf32>) addend(%c : tensor<4x8x32xf32>)
      epilogue relu batch 4 m 8 n 32 k 16 {rhs_transposed, allow_tf32}
      : tensor<8x16xf32>, tensor<4x32x16xf32> -> tensor<4x8x32xf32>
  %1 = kiln_gpu.matmul %x, %y batch 1 m 8 n 32 k 16 {lhs_transposed} : tensor<16x8xbf16>, tensor<16x32xbf16> -> tensor<8x32xbf16>
  return %0, %1 : tensor<4x8x32xf32>, tensor<8x32xbf16>
}

// -----

// Attention's heads read and written in place: 4 heads of 64 columns in a
// [128, 256] tensor are 4 matrices 64 elements apart with rows of 256.
// CHECK-LABEL: func.func @heads
// CHECK: kiln_gpu.matmul %{{.*}}, %{{.*}} batch 4 m 128 n 128 k 64 {alpha = 1.250000e-01 : f32, lhs_strides = array<i64: 64, 256>, rhs_strides = array<i64: 64, 256>, rhs_transposed} : tensor<128x256xf32>, tensor<128x256xf32> -> tensor<4x128x128xf32>
// CHECK: kiln_gpu.matmul %{{.*}}, %{{.*}} batch 4 m 128 n 64 k 128 {result_strides = array<i64: 64, 256>, rhs_strides = array<i64: 64, 256>} : tensor<4x128x128xf32>, tensor<128x256xf32> -> tensor<128x256xf32>
func.func @heads(%q: tensor<128x256xf32>, %k: tensor<128x256xf32>, %v: tensor<128x256xf32>) -> tensor<128x256xf32> {
  %s = kiln_gpu.matmul %q, %k batch 4 m 128 n 128 k 64
      {lhs_strides = array<i64: 64, 256>, rhs_strides = array<i64: 64, 256>, rhs_transposed, alpha = 0.125 : f32}
      : tensor<128x256xf32>, tensor<128x256xf32> -> tensor<4x128x128xf32>
  %c = kiln_gpu.matmul %s, %v batch 4 m 128 n 64 k 128
      {rhs_strides = array<i64: 64, 256>, result_strides = array<i64: 64, 256>}
      : tensor<4x128x128xf32>, tensor<128x256xf32> -> tensor<128x256xf32>
  return %c : tensor<128x256xf32>
}
