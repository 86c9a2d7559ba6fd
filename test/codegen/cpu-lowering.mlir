// RUN: kiln-opt %s -split-input-file -kiln-lower-to-linalg -kiln-cpu-lowering | FileCheck %s

// Results become out-parameters and every memref is a bare pointer; no
// memref descriptors, allocations or runtime-library calls remain.
// CHECK-LABEL: llvm.func @relu
// CHECK-SAME: (%[[IN:.*]]: !llvm.ptr, %[[OUT:.*]]: !llvm.ptr)
// CHECK-NOT: malloc
// CHECK: llvm.load %{{.*}} : !llvm.ptr -> f32
// CHECK: llvm.fcmp "olt"
// CHECK: llvm.select
// CHECK: llvm.store %{{.*}}, %{{.*}} : f32, !llvm.ptr
// CHECK: llvm.return
func.func @relu(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.relu %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Writing into a strided window becomes loops, not a call to memrefCopy.
// CHECK-LABEL: llvm.func @concat
// CHECK-SAME: (%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr)
// CHECK-NOT: memrefCopy
// CHECK: llvm.return
// CHECK-NOT: llvm.func @memrefCopy
func.func @concat(%x: tensor<2x3xf32>, %y: tensor<2x1xf32>) -> tensor<2x4xf32> {
  %0 = kiln.concat %x, %y {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// erf on f32 is a polynomial (vectorizable); functions with neither an
// approximation nor an LLVM intrinsic are libm calls.
// CHECK-LABEL: llvm.func @erf
// CHECK-NOT: llvm.call @erff
// CHECK: llvm.intr.fma
// CHECK-LABEL: llvm.func @acosh
// CHECK: llvm.call @acoshf(%{{.*}}) : (f32) -> f32
func.func @erf(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.erf %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func @acosh(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.acosh %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// bf16 values are widened to f32 with integer bit operations (no bf16
// arithmetic is left for the back end) and rounded back once.
// CHECK-LABEL: llvm.func @bf16_add
// CHECK: llvm.bitcast %{{.*}} : bf16 to i16
// CHECK-NOT: llvm.fadd %{{.*}} : bf16
// CHECK: llvm.fadd %{{.*}}, %{{.*}} : f32
// CHECK-NOT: llvm.fadd %{{.*}} : bf16
// CHECK: llvm.return
func.func @bf16_add(%x: tensor<4xbf16>) -> tensor<4xbf16> {
  %0 = kiln.add %x, %x : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>
  return %0 : tensor<4xbf16>
}

// -----

// A column sum over a reshaped tensor indexes the collapsed columns as one
// linear offset, not split by division into the source's [4, 16] pair, so
// that LLVM can vectorize across the columns.
// CHECK-LABEL: llvm.func @column_sum_of_reshape
// CHECK-NOT: llvm.sdiv
// CHECK-NOT: llvm.srem
// CHECK: llvm.fadd
// CHECK-NOT: llvm.sdiv
// CHECK-NOT: llvm.srem
// CHECK: llvm.return
func.func @column_sum_of_reshape(%x: tensor<8x4x16xf32>) -> tensor<1x64xf32> {
  %r = kiln.reshape %x : tensor<8x4x16xf32> -> tensor<8x64xf32>
  %s = kiln.reduce_sum %r {axes = array<i64: 0>} : (tensor<8x64xf32>) -> tensor<1x64xf32>
  return %s : tensor<1x64xf32>
}
