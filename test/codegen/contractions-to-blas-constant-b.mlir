// RUN: kiln-opt %s -split-input-file -kiln-contractions-to-blas=constant-b=1 -canonicalize -cse | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-contractions-to-blas=constant-b=0 -canonicalize -cse | FileCheck %s --check-prefix=OFF

// Two tiles of constant weights: each call site gets its own zeroed 8-byte
// slot (renamed apart) and calls kiln_matmul_constant_b with the sizes and the
// leading dimensions of A, B (the weights' row stride, 1024) and C.
// CHECK-DAG: memref.global "private" @[[SITE0:kiln_matmul_site[_0-9]*]] : memref<1xi64> = dense<0> {alignment = 8 : i64}
// CHECK-DAG: memref.global "private" @[[SITE1:kiln_matmul_site[_0-9]*]] : memref<1xi64> = dense<0> {alignment = 8 : i64}
// CHECK-LABEL: func.func @weights
// CHECK-NOT: dnnl_sgemm
// CHECK: memref.get_global @[[SITE1]]
// CHECK: call @kiln_matmul_constant_b(%{{.*}}, %c64_i64, %c512_i64, %c784_i64, %{{.*}}, %c784_i64, %{{.*}}, %c1024_i64, %{{.*}}, %c512_i64)
// CHECK: memref.get_global @[[SITE0]]
// CHECK: call @kiln_matmul_constant_b(%{{.*}}, %c64_i64, %c512_i64, %c784_i64, %{{.*}}, %c784_i64, %{{.*}}, %c1024_i64, %{{.*}}, %c512_i64)
// CHECK: func.func private @kiln_matmul_constant_b(!llvm.ptr, i64, i64, i64, !llvm.ptr, i64, !llvm.ptr, i64, !llvm.ptr, i64)
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
