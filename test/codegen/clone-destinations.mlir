// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-clone-destinations))' | FileCheck %s

// A zero fill of an empty tensor shared by two matmul kernels (CSE merged
// them): the second kernel gets a fill of an empty of its own, the first
// keeps the original.
// CHECK-LABEL: func.func @shared_fill
// CHECK: %[[E0:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK: %[[F0:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E0]] : tensor<4x8xf32>)
// CHECK: %[[A:.*]] = linalg.matmul ins(%arg0, %arg1 : tensor<4x8xf32>, tensor<8x8xf32>) outs(%[[F0]] : tensor<4x8xf32>)
// CHECK: %[[E1:.*]] = tensor.empty() : tensor<4x8xf32>
// CHECK: %[[F1:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E1]] : tensor<4x8xf32>)
// CHECK: linalg.matmul ins(%[[A]], %arg1 : tensor<4x8xf32>, tensor<8x8xf32>) outs(%[[F1]] : tensor<4x8xf32>)
func.func @shared_fill(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %a = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %b = linalg.matmul ins(%a, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %b : tensor<4x8xf32>
}

// -----

// An empty tensor used as the destination of three elementwise kernels:
// two clones, each right before its user.
// CHECK-LABEL: func.func @shared_empty
// CHECK-COUNT-3: tensor.empty() : tensor<16xf32>
// CHECK-NOT: tensor.empty
#id = affine_map<(d0) -> (d0)>
func.func @shared_empty(%x: tensor<16xf32>) -> tensor<16xf32> {
  %e = tensor.empty() : tensor<16xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %in : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%a : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.mulf %in, %in : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  %c = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%b : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.subf %in, %in : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  return %c : tensor<16xf32>
}

// -----

// A fill of a value computed at run time, and an empty tensor with a single
// use, are left alone.
// CHECK-LABEL: func.func @left_alone
// CHECK-COUNT-1: tensor.empty
// CHECK-NOT: tensor.empty
func.func @left_alone(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %v: f32) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %f = linalg.fill ins(%v : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %a = linalg.matmul ins(%x, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  %b = linalg.matmul ins(%a, %w : tensor<4x8xf32>, tensor<8x8xf32>) outs(%f : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %b : tensor<4x8xf32>
}

// -----

// A value returned twice: the second result is a copy into a tensor of its
// own; a returned argument is left to bufferization.
// CHECK-LABEL: func.func @repeated_result
// CHECK: %[[A:.*]] = linalg.generic
// CHECK: %[[E:.*]] = tensor.empty() : tensor<16xf32>
// CHECK: %[[C:.*]] = linalg.copy ins(%[[A]] : tensor<16xf32>) outs(%[[E]] : tensor<16xf32>)
// CHECK: return %[[A]], %[[C]], %arg0
#id = affine_map<(d0) -> (d0)>
func.func @repeated_result(%x: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %e = tensor.empty() : tensor<16xf32>
  %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]} ins(%x : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%in: f32, %out: f32):
    %s = arith.addf %in, %in : f32
    linalg.yield %s : f32
  } -> tensor<16xf32>
  return %a, %a, %x : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}

// -----

// A tile's destination sliced out of a whole-result empty (or a fill of
// one) becomes an empty of the tile's size: each tile would otherwise
// allocate the whole result (here 1 MiB). A rank-reducing slice, and a
// slice of a whole result under 512 KiB, are left alone.
// CHECK-LABEL: func.func @sliced_destinations
// CHECK: scf.forall (%[[I:.*]]) = (0) to (1024) step (256)
// CHECK: %[[E:.*]] = tensor.empty() : tensor<256x256xf32>
// CHECK: linalg.generic {{.*}} outs(%[[E]] : tensor<256x256xf32>)
// CHECK: %[[Z:.*]] = tensor.empty() : tensor<256x256xf32>
// CHECK: %[[F:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[Z]] : tensor<256x256xf32>)
// CHECK: linalg.generic {{.*}} outs(%[[F]] : tensor<256x256xf32>)
// CHECK: %[[W:.*]] = tensor.empty() : tensor<1024x256xf32>
// CHECK: tensor.extract_slice %[[W]][%[[I]], 0] [1, 256] [1, 1] : tensor<1024x256xf32> to tensor<256xf32>
// CHECK: %[[V:.*]] = tensor.empty() : tensor<1024x64xf32>
// CHECK: tensor.extract_slice %[[V]][%[[I]], 0] [256, 64] [1, 1] : tensor<1024x64xf32> to tensor<256x64xf32>
// CHECK: scf.forall.in_parallel
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0) -> (d0)>
func.func @sliced_destinations(%x: tensor<1024x256xf32>) -> (tensor<1024x256xf32>, tensor<1024x256xf32>, tensor<256xf32>, tensor<1024x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<1024x256xf32>
  %init2 = tensor.empty() : tensor<1024x64xf32>
  %r:4 = scf.forall (%i) = (0) to (1024) step (256) shared_outs(%o = %init, %p = %init, %q = %init, %u = %init2) -> (tensor<1024x256xf32>, tensor<1024x256xf32>, tensor<1024x256xf32>, tensor<1024x64xf32>) {
    %in = tensor.extract_slice %x[%i, 0] [256, 256] [1, 1] : tensor<1024x256xf32> to tensor<256x256xf32>
    %e = tensor.empty() : tensor<1024x256xf32>
    %s = tensor.extract_slice %e[%i, 0] [256, 256] [1, 1] : tensor<1024x256xf32> to tensor<256x256xf32>
    %a = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%in : tensor<256x256xf32>) outs(%s : tensor<256x256xf32>) {
    ^bb0(%v: f32, %w: f32):
      %t = arith.addf %v, %v : f32
      linalg.yield %t : f32
    } -> tensor<256x256xf32>
    %e2 = tensor.empty() : tensor<1024x256xf32>
    %f = linalg.fill ins(%zero : f32) outs(%e2 : tensor<1024x256xf32>) -> tensor<1024x256xf32>
    %s2 = tensor.extract_slice %f[%i, 0] [256, 256] [1, 1] : tensor<1024x256xf32> to tensor<256x256xf32>
    %b = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]} ins(%in : tensor<256x256xf32>) outs(%s2 : tensor<256x256xf32>) {
    ^bb0(%v: f32, %w: f32):
      %t = arith.addf %v, %w : f32
      linalg.yield %t : f32
    } -> tensor<256x256xf32>
    %e3 = tensor.empty() : tensor<1024x256xf32>
    %s3 = tensor.extract_slice %e3[%i, 0] [1, 256] [1, 1] : tensor<1024x256xf32> to tensor<256xf32>
    %c = linalg.generic {indexing_maps = [#row, #row], iterator_types = ["parallel"]} ins(%s3 : tensor<256xf32>) outs(%s3 : tensor<256xf32>) {
    ^bb0(%v: f32, %w: f32):
      linalg.yield %v : f32
    } -> tensor<256xf32>
    %e4 = tensor.empty() : tensor<1024x64xf32>
    %s4 = tensor.extract_slice %e4[%i, 0] [256, 64] [1, 1] : tensor<1024x64xf32> to tensor<256x64xf32>
    %d = linalg.fill ins(%zero : f32) outs(%s4 : tensor<256x64xf32>) -> tensor<256x64xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %a into %o[%i, 0] [256, 256] [1, 1] : tensor<256x256xf32> into tensor<1024x256xf32>
      tensor.parallel_insert_slice %b into %p[%i, 0] [256, 256] [1, 1] : tensor<256x256xf32> into tensor<1024x256xf32>
      tensor.parallel_insert_slice %c into %q[%i, 0] [1, 256] [1, 1] : tensor<256xf32> into tensor<1024x256xf32>
      tensor.parallel_insert_slice %d into %u[%i, 0] [256, 64] [1, 1] : tensor<256x64xf32> into tensor<1024x64xf32>
    }
  }
  %last = tensor.extract_slice %r#2[0, 0] [1, 256] [1, 1] : tensor<1024x256xf32> to tensor<256xf32>
  return %r#0, %r#1, %last, %r#3 : tensor<1024x256xf32>, tensor<1024x256xf32>, tensor<256xf32>, tensor<1024x64xf32>
}
