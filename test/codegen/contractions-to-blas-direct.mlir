// RUN: kiln-opt %s -split-input-file -kiln-contractions-to-blas="constant-b=1 direct-convolutions=1" -canonicalize -cse | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-contractions-to-blas=constant-b=1 -canonicalize -cse | FileCheck %s --check-prefix=BLOCKED

// For a target whose kiln_conv2d_constant_w runs Kiln's direct kernel on
// plain images (AVX2 and FMA without AVX-512), an RGB stem's convolution by
// constant filters calls it too, whatever its channel count: here 3 input
// channels, a 3x3 window at stride 2, 32 filters (MobileNetV2's stem, a
// band of 4 output rows). Without the option, channels that fill no block
// of 16 take im2col and sgemm.
// CHECK-LABEL: func.func @rgb_stem
// CHECK-NOT: call @dnnl_sgemm
// CHECK: call @kiln_conv2d_constant_w(%{{.*}}, %c1_i64, %c3_i64, %c25_i64, %c225_i64, %c32_i64, %c3_i64, %c3_i64, %c12_i64, %c112_i64, %c2_i64, %c2_i64, %c1_i64, %c1_i64, %{{.*}}, %c5625_i64, %c225_i64, %{{.*}}, %{{.*}}, %c1344_i64, %c112_i64)
// BLOCKED-LABEL: func.func @rgb_stem
// BLOCKED-NOT: kiln_conv2d_constant_w
// BLOCKED: call @dnnl_sgemm
#in = affine_map<(f, y, x, c, i, j) -> (c, y * 2 + i, x * 2 + j)>
#w = affine_map<(f, y, x, c, i, j) -> (f, c, i, j)>
#out = affine_map<(f, y, x, c, i, j) -> (f, y, x)>
memref.global "private" constant @stem : memref<32x3x3x3xf32> = dense<0.5>
func.func @rgb_stem(%band: memref<3x25x225xf32>, %out: memref<32x12x112xf32>) {
  %w = memref.get_global @stem : memref<32x3x3x3xf32>
  linalg.generic {indexing_maps = [#in, #w, #out],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%band, %w : memref<3x25x225xf32>, memref<32x3x3x3xf32>) outs(%out : memref<32x12x112xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Fewer than 16 filters (LeNet's 6) keep im2col and sgemm either way.
// CHECK-LABEL: func.func @few_filters
// CHECK-NOT: kiln_conv2d_constant_w
// CHECK: call @dnnl_sgemm
#in = affine_map<(f, y, x, c, i, j) -> (c, y + i, x + j)>
#w = affine_map<(f, y, x, c, i, j) -> (f, c, i, j)>
#out = affine_map<(f, y, x, c, i, j) -> (f, y, x)>
memref.global "private" constant @lenet : memref<6x1x5x5xf32> = dense<0.5>
func.func @few_filters(%band: memref<1x32x32xf32>, %out: memref<6x28x28xf32>) {
  %w = memref.get_global @lenet : memref<6x1x5x5xf32>
  linalg.generic {indexing_maps = [#in, #w, #out],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%band, %w : memref<1x32x32xf32>, memref<6x1x5x5xf32>) outs(%out : memref<6x28x28xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  return
}
