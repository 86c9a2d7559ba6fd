// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-decompose,kiln-lower-to-linalg),canonicalize,cse,kiln-gpu-form-kernels{chip=sm_90},canonicalize,cse)' | FileCheck %s

// Softmax over rows of 1024: a warp per row, 8 rows per block. Each thread
// reads its 8 chunks of 4 once (8 vector loads), reduces the maximum, then
// the sum of exponentials, each across the warp with xor shuffles, and
// stores the normalized chunks from the values it still holds: every
// exponential is computed once.
// CHECK-LABEL: func.func @softmax
// CHECK: kiln_gpu.launch @kiln_kernels::@[[K:.*]] grid [32, 1, 1] block [256, 1, 1]
// CHECK: gpu.func @[[K]](%[[X:.*]]: memref<256x1024xf32> {{.*}}, %[[Y:.*]]: memref<256x1024xf32>
// CHECK: %[[LANE:.*]] = arith.remui %{{.*}}, %c32
// CHECK-COUNT-8: vector.load %[[X]]
// CHECK-NOT: vector.load
// CHECK: gpu.shuffle xor %{{.*}}, %c16_i32, %c32_i32 : f32
// CHECK-NEXT: arith.maximumf
// CHECK: gpu.shuffle xor %{{.*}}, %c1_i32, %c32_i32 : f32
// CHECK-NEXT: arith.maximumf
// CHECK-COUNT-32: math.exp
// CHECK-NOT: math.exp
// CHECK: gpu.shuffle xor %{{.*}}, %c16_i32, %c32_i32 : f32
// CHECK-NEXT: arith.addf
// CHECK-NOT: vector.load
// CHECK-COUNT-8: vector.store {{.*}}, %[[Y]]
func.func @softmax(%x: tensor<256x1024xf32>) -> tensor<256x1024xf32> {
  %0 = kiln.fusion input(%x) : (tensor<256x1024xf32>) -> tensor<256x1024xf32> {
  ^bb0(%a: tensor<256x1024xf32>):
    %m = kiln.reduce_max %a {axes = array<i64: 1>} : (tensor<256x1024xf32>) -> tensor<256x1xf32>
    %s = kiln.sub %a, %m : (tensor<256x1024xf32>, tensor<256x1xf32>) -> tensor<256x1024xf32>
    %e = kiln.exp %s : tensor<256x1024xf32>
    %t = kiln.reduce_sum %e {axes = array<i64: 1>} : (tensor<256x1024xf32>) -> tensor<256x1xf32>
    %d = kiln.div %e, %t : (tensor<256x1024xf32>, tensor<256x1xf32>) -> tensor<256x1024xf32>
    kiln.yield %d : tensor<256x1024xf32>
  }
  return %0 : tensor<256x1024xf32>
}

// -----

// Layer normalization over rows of 4096: a block of 256 per row, 4 chunks
// per thread. The two sums cross warps through shared memory, one buffer
// per reduction, after a barrier; gamma and beta are read along the row.
// CHECK-LABEL: func.func @layernorm
// CHECK: kiln_gpu.launch @kiln_kernels::@[[K:.*]] grid [64, 1, 1] block [256, 1, 1]
// CHECK: gpu.func @[[K]]({{.*}}) workgroup(%[[MEAN:.*]] : memref<32xf32, #gpu.address_space<workgroup>>, %[[VAR:.*]] : memref<32xf32, #gpu.address_space<workgroup>>) kernel
// CHECK-COUNT-4: vector.load %arg0
// CHECK: gpu.shuffle xor
// CHECK: memref.store %{{.*}}, %[[MEAN]]
// CHECK: gpu.barrier
// CHECK-COUNT-8: memref.load %[[MEAN]]
// CHECK: memref.store %{{.*}}, %[[VAR]]
// CHECK: gpu.barrier
// CHECK-COUNT-8: memref.load %[[VAR]]
// CHECK: math.sqrt
// CHECK: vector.load %arg1
// CHECK: vector.load %arg2
// CHECK: vector.store
func.func @layernorm(%x: tensor<64x4096xf32>, %g: tensor<4096xf32>, %b: tensor<4096xf32>) -> tensor<64x4096xf32> {
  %0 = kiln.fusion input(%x, %g, %b) : (tensor<64x4096xf32>, tensor<4096xf32>, tensor<4096xf32>) -> tensor<64x4096xf32> {
  ^bb0(%a: tensor<64x4096xf32>, %gamma: tensor<4096xf32>, %beta: tensor<4096xf32>):
    %mean = kiln.reduce_mean %a {axes = array<i64: 1>} : (tensor<64x4096xf32>) -> tensor<64x1xf32>
    %d = kiln.sub %a, %mean : (tensor<64x4096xf32>, tensor<64x1xf32>) -> tensor<64x4096xf32>
    %sq = kiln.mul %d, %d : (tensor<64x4096xf32>, tensor<64x4096xf32>) -> tensor<64x4096xf32>
    %var = kiln.reduce_mean %sq {axes = array<i64: 1>} : (tensor<64x4096xf32>) -> tensor<64x1xf32>
    %eps = kiln.constant dense<1.0e-5> : tensor<f32>
    %ve = kiln.add %var, %eps : (tensor<64x1xf32>, tensor<f32>) -> tensor<64x1xf32>
    %sd = kiln.sqrt %ve : tensor<64x1xf32>
    %n = kiln.div %d, %sd : (tensor<64x4096xf32>, tensor<64x1xf32>) -> tensor<64x4096xf32>
    %s = kiln.mul %n, %gamma : (tensor<64x4096xf32>, tensor<4096xf32>) -> tensor<64x4096xf32>
    %y = kiln.add %s, %beta : (tensor<64x4096xf32>, tensor<4096xf32>) -> tensor<64x4096xf32>
    kiln.yield %y : tensor<64x4096xf32>
  }
  return %0 : tensor<64x4096xf32>
}

// -----

// Short rows: 10 columns in chunks of 2 need 5 threads, so a group of 8
// lanes takes each row and a block 32 rows; the lanes past the row's end
// count the identity, the groups past the last row store nothing, and the
// row's sum is stored by its first lane.
// CHECK-LABEL: func.func @short_rows
// CHECK: kiln_gpu.launch {{.*}} grid [4, 1, 1] block [256, 1, 1]
// CHECK: %[[LANE:.*]] = arith.remui %{{.*}}, %c8
// CHECK: %[[ROW:.*]] = arith.addi
// CHECK: %[[INROW:.*]] = arith.cmpi ult, %[[ROW]], %c100
// CHECK: %[[CLAMPED:.*]] = arith.minui %[[ROW]], %c99
// CHECK: %[[VALID:.*]] = arith.cmpi ult, %[[LANE]], %c5
// CHECK: vector.load %{{.*}}[%[[CLAMPED]], %{{.*}}] {alignment = 8 : i64} : memref<100x10xf32>, vector<2xf32>
// CHECK: arith.select %[[VALID]]
// CHECK: gpu.shuffle xor %{{.*}}, %c4_i32, %c32_i32
// CHECK: gpu.shuffle xor %{{.*}}, %c2_i32, %c32_i32
// CHECK: gpu.shuffle xor %{{.*}}, %c1_i32, %c32_i32
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[LANE]], %c0
// CHECK: %[[STORE:.*]] = arith.andi %[[FIRST]], %[[INROW]]
// CHECK: scf.if %[[STORE]]
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[CLAMPED]], %c0] : memref<100x1xf32>
func.func @short_rows(%x: tensor<100x10xf32>) -> tensor<100x1xf32> {
  %0 = kiln.fusion input(%x) : (tensor<100x10xf32>) -> tensor<100x1xf32> {
  ^bb0(%a: tensor<100x10xf32>):
    %s = kiln.reduce_sum %a {axes = array<i64: 1>} : (tensor<100x10xf32>) -> tensor<100x1xf32>
    kiln.yield %s : tensor<100x1xf32>
  }
  return %0 : tensor<100x1xf32>
}

// -----

// A softmax over a middle axis reduces a column of each (row, column)
// pair: not a row kernel. Each thread computes its elements with loops
// over the reduced axis.
// CHECK-LABEL: func.func @middle_axis
// CHECK: gpu.func
// CHECK-NOT: gpu.shuffle
// CHECK: scf.for
func.func @middle_axis(%x: tensor<3x4x5xf32>) -> tensor<3x4x5xf32> {
  %0 = kiln.fusion input(%x) : (tensor<3x4x5xf32>) -> tensor<3x4x5xf32> {
  ^bb0(%a: tensor<3x4x5xf32>):
    %m = kiln.reduce_max %a {axes = array<i64: 1>} : (tensor<3x4x5xf32>) -> tensor<3x1x5xf32>
    %s = kiln.sub %a, %m : (tensor<3x4x5xf32>, tensor<3x1x5xf32>) -> tensor<3x4x5xf32>
    %e = kiln.exp %s : tensor<3x4x5xf32>
    kiln.yield %e : tensor<3x4x5xf32>
  }
  return %0 : tensor<3x4x5xf32>
}
