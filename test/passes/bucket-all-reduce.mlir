// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-bucket-all-reduce{first-bucket-bytes=64 bucket-bytes=200}))' | FileCheck %s

// Tensors are bucketed in the order they are computed (g2 before g1), the
// first bucket capped at 64 bytes and the next at 200. Each bucket starts
// right after its last tensor is computed and is waited for right before
// the first use of one of its sums; the sums are sliced back out.
// CHECK-LABEL: func.func @order_and_caps
// CHECK: %[[G2:.*]] = kiln.neg %arg1 : tensor<4xf32>
// CHECK-NEXT: %[[F2:.*]] = kiln.reshape %[[G2]] : tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT: %[[T0:.*]] = kiln.all_reduce_start %[[F2]] {bucket = 0 : i64} : tensor<4xf32>
// CHECK-NEXT: %[[G1:.*]] = kiln.neg %arg0 : tensor<4x5xf32>
// CHECK-NEXT: %[[G3:.*]] = kiln.neg %arg2 : tensor<10xf32>
// CHECK-NEXT: %[[F1:.*]] = kiln.reshape %[[G1]] : tensor<4x5xf32> -> tensor<20xf32>
// CHECK-NEXT: %[[F3:.*]] = kiln.reshape %[[G3]] : tensor<10xf32> -> tensor<10xf32>
// CHECK-NEXT: %[[B1:.*]] = kiln.concat %[[F1]], %[[F3]] {axis = 0 : i64} : (tensor<20xf32>, tensor<10xf32>) -> tensor<30xf32>
// CHECK-NEXT: %[[T1:.*]] = kiln.all_reduce_start %[[B1]] {bucket = 1 : i64} : tensor<30xf32>
// CHECK-NEXT: %[[BUSY:.*]] = kiln.exp %arg0
// CHECK-NEXT: %[[R0:.*]] = kiln.all_reduce_wait %[[T0]] {bucket = 0 : i64} : tensor<4xf32>
// CHECK-NEXT: %[[S2:.*]] = kiln.reshape %[[R0]] : tensor<4xf32> -> tensor<4xf32>
// CHECK-NEXT: kiln.add %[[S2]], %arg1
// CHECK-NEXT: %[[R1:.*]] = kiln.all_reduce_wait %[[T1]] {bucket = 1 : i64} : tensor<30xf32>
// CHECK-NEXT: %[[P1:.*]] = kiln.slice %[[R1]] {start = array<i64: 0>, step = array<i64: 1>} : tensor<30xf32> -> tensor<20xf32>
// CHECK-NEXT: %[[S1:.*]] = kiln.reshape %[[P1]] : tensor<20xf32> -> tensor<4x5xf32>
// CHECK-NEXT: %[[P3:.*]] = kiln.slice %[[R1]] {start = array<i64: 20>, step = array<i64: 1>} : tensor<30xf32> -> tensor<10xf32>
// CHECK-NEXT: %[[S3:.*]] = kiln.reshape %[[P3]] : tensor<10xf32> -> tensor<10xf32>
// CHECK-NOT: kiln.all_reduce %
// CHECK: return
func.func @order_and_caps(%w1: tensor<4x5xf32>, %w2: tensor<4xf32>, %w3: tensor<10xf32>)
    -> (tensor<4x5xf32>, tensor<4xf32>, tensor<10xf32>, tensor<4x5xf32>) {
  %g2 = kiln.neg %w2 : tensor<4xf32>
  %g1 = kiln.neg %w1 : tensor<4x5xf32>
  %g3 = kiln.neg %w3 : tensor<10xf32>
  %busy = kiln.exp %w1 : tensor<4x5xf32>
  %s1 = kiln.all_reduce %g1 : tensor<4x5xf32>
  %s2 = kiln.all_reduce %g2 : tensor<4xf32>
  %s3 = kiln.all_reduce %g3 : tensor<10xf32>
  %u2 = kiln.add %s2, %w2 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %u1 = kiln.add %s1, %w1 : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xf32>
  %u3 = kiln.add %s3, %w3 : (tensor<10xf32>, tensor<10xf32>) -> tensor<10xf32>
  return %u1, %u2, %u3, %busy : tensor<4x5xf32>, tensor<4xf32>, tensor<10xf32>, tensor<4x5xf32>
}

// -----

// A tensor larger than the cap is a bucket of its own.
// CHECK-LABEL: func.func @oversized
// CHECK: kiln.all_reduce_start %{{.*}} {bucket = 0 : i64} : tensor<100xf32>
// CHECK: kiln.all_reduce_start %{{.*}} {bucket = 1 : i64} : tensor<2xf32>
// CHECK-NOT: kiln.all_reduce_start
func.func @oversized(%a: tensor<100xf32>, %b: tensor<2xf32>) -> (tensor<100xf32>, tensor<2xf32>) {
  %s = kiln.all_reduce %a : tensor<100xf32>
  %t = kiln.all_reduce %b : tensor<2xf32>
  return %s, %t : tensor<100xf32>, tensor<2xf32>
}

// -----

// A bucket closes where the next tensor depends on one of its sums: %g
// needs the sum of %a, so it cannot travel with it.
// CHECK-LABEL: func.func @dependent
// CHECK: %[[T0:.*]] = kiln.all_reduce_start %{{.*}} {bucket = 0 : i64} : tensor<2xf32>
// CHECK-NEXT: %[[R0:.*]] = kiln.all_reduce_wait %[[T0]] {bucket = 0 : i64}
// CHECK: %[[G:.*]] = kiln.neg
// CHECK: kiln.all_reduce_start %{{.*}} {bucket = 1 : i64} : tensor<2xf32>
func.func @dependent(%a: tensor<2xf32>) -> tensor<2xf32> {
  %s = kiln.all_reduce %a : tensor<2xf32>
  %g = kiln.neg %s : tensor<2xf32>
  %t = kiln.all_reduce %g : tensor<2xf32>
  return %t : tensor<2xf32>
}

// -----

// A scalar (the loss) is a one-element piece of a bucket.
// CHECK-LABEL: func.func @scalar
// CHECK: %[[F:.*]] = kiln.reshape %arg0 : tensor<f32> -> tensor<1xf32>
// CHECK: kiln.concat %[[F]], %{{.*}} {axis = 0 : i64} : (tensor<1xf32>, tensor<3xf32>) -> tensor<4xf32>
// CHECK: kiln.slice %{{.*}} {start = array<i64: 0>, step = array<i64: 1>} : tensor<4xf32> -> tensor<1xf32>
// CHECK: kiln.reshape %{{.*}} : tensor<1xf32> -> tensor<f32>
func.func @scalar(%loss: tensor<f32>, %g: tensor<3xf32>) -> (tensor<f32>, tensor<3xf32>) {
  %s = kiln.all_reduce %loss : tensor<f32>
  %t = kiln.all_reduce %g : tensor<3xf32>
  return %s, %t : tensor<f32>, tensor<3xf32>
}
