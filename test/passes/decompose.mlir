// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-decompose))' | FileCheck %s

// A train step's batch normalization: the mean and the biased variance of
// the centred input over every dimension but the channels (8 elements
// each), then (x - m) / sqrt(v + eps) * scale + bias; the statistics come
// out one element per channel.
// CHECK-LABEL: func.func @batch_norm_training
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>, %[[S:.*]]: tensor<3xf32>, %[[B:.*]]: tensor<3xf32>)
// CHECK-DAG: %[[EPS:.*]] = kiln.constant dense<1.000000e-03> : tensor<f32>
// CHECK-DAG: %[[N:.*]] = kiln.constant dense<8.000000e+00> : tensor<f32>
// CHECK: %[[SUM:.*]] = kiln.reduce_sum %[[X]] {axes = array<i64: 0, 2>} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
// CHECK: %[[M:.*]] = kiln.div %[[SUM]], %[[N]]
// CHECK: %[[C:.*]] = kiln.sub %[[X]], %[[M]]
// CHECK: %[[SQ:.*]] = kiln.mul %[[C]], %[[C]]
// CHECK: %[[SQSUM:.*]] = kiln.reduce_sum %[[SQ]] {axes = array<i64: 0, 2>}
// CHECK: %[[V:.*]] = kiln.div %[[SQSUM]], %[[N]]
// CHECK: %[[VE:.*]] = kiln.add %[[V]], %[[EPS]]
// CHECK: %[[SD:.*]] = kiln.sqrt %[[VE]]
// CHECK: %[[R:.*]] = kiln.reciprocal %[[SD]]
// CHECK: %[[XHAT:.*]] = kiln.mul %[[C]], %[[R]]
// CHECK: %[[SC:.*]] = kiln.reshape %[[S]] : tensor<3xf32> -> tensor<1x3x1xf32>
// CHECK: %[[SCALED:.*]] = kiln.mul %[[XHAT]], %[[SC]]
// CHECK: %[[BC:.*]] = kiln.reshape %[[B]] : tensor<3xf32> -> tensor<1x3x1xf32>
// CHECK: %[[Y:.*]] = kiln.add %[[SCALED]], %[[BC]]
// CHECK: %[[MF:.*]] = kiln.reshape %[[M]] : tensor<1x3x1xf32> -> tensor<3xf32>
// CHECK: %[[VF:.*]] = kiln.reshape %[[V]] : tensor<1x3x1xf32> -> tensor<3xf32>
// CHECK: return %[[Y]], %[[MF]], %[[VF]]
func.func @batch_norm_training(%x: tensor<2x3x4xf32>, %s: tensor<3xf32>, %b: tensor<3xf32>) -> (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>) {
  %y, %m, %v = kiln.batch_norm_training %x, %s, %b {epsilon = 1.0e-3 : f32} : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>)
  return %y, %m, %v : tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// Inference: one scale per channel, scale / sqrt(var + eps), applied to
// x - mean, then the bias; the per-channel values broadcast as C x 1.
// CHECK-LABEL: func.func @batch_norm
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>, %[[C:.*]]: tensor<3xf32>)
// CHECK: %[[EPS:.*]] = kiln.constant dense<1.000000e-03> : tensor<f32>
// CHECK: %[[VE:.*]] = kiln.add %[[C]], %[[EPS]]
// CHECK: %[[SD:.*]] = kiln.sqrt %[[VE]]
// CHECK: %[[F:.*]] = kiln.div %[[C]], %[[SD]]
// CHECK: %[[MC:.*]] = kiln.reshape %[[C]] : tensor<3xf32> -> tensor<3x1xf32>
// CHECK: %[[D:.*]] = kiln.sub %[[X]], %[[MC]]
// CHECK: %[[FC:.*]] = kiln.reshape %[[F]] : tensor<3xf32> -> tensor<3x1xf32>
// CHECK: %[[P:.*]] = kiln.mul %[[D]], %[[FC]]
// CHECK: %[[BC:.*]] = kiln.reshape %[[C]] : tensor<3xf32> -> tensor<3x1xf32>
// CHECK: %[[Y:.*]] = kiln.add %[[P]], %[[BC]]
// CHECK: return %[[Y]]
func.func @batch_norm(%x: tensor<2x3x4xf32>, %c: tensor<3xf32>) -> tensor<2x3x4xf32> {
  %y = kiln.batch_norm %x, %c, %c, %c, %c {epsilon = 1.0e-3 : f32} : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>
  return %y : tensor<2x3x4xf32>
}
