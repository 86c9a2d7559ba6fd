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
// CHECK: kiln_gpu.matmul %{{.*}}, %{{.*}} bias(%{{.*}} : tensor<32xf32>) addend(%{{.*}} : tensor<4x8x32xf32>) epilogue relu {allow_tf32, rhs_transposed} : tensor<1x8x16xf32>, tensor<4x32x16xf32> -> tensor<4x8x32xf32>
// CHECK: kiln_gpu.matmul %{{.*}}, %{{.*}} {lhs_transposed} : tensor<1x16x8xbf16>, tensor<1x16x32xbf16> -> tensor<1x8x32xbf16>
func.func @matmul(%a: tensor<1x8x16xf32>, %b: tensor<4x32x16xf32>, %bias: tensor<32xf32>,
                  %c: tensor<4x8x32xf32>, %x: tensor<1x16x8xbf16>, %y: tensor<1x16x32xbf16>)
    -> (tensor<4x8x32xf32>, tensor<1x8x32xbf16>) {
  %0 = kiln_gpu.matmul %a, %b bias(%bias : tensor<32xf32>) addend(%c : tensor<4x8x32xf32>)
      epilogue relu {rhs_transposed, allow_tf32}
      : tensor<1x8x16xf32>, tensor<4x32x16xf32> -> tensor<4x8x32xf32>
  %1 = kiln_gpu.matmul %x, %y {lhs_transposed} : tensor<1x16x8xbf16>, tensor<1x16x32xbf16> -> tensor<1x8x32xbf16>
  return %0, %1 : tensor<4x8x32xf32>, tensor<1x8x32xbf16>
}
