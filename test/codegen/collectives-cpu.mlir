// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(one-shot-bufferize{bufferize-function-boundaries=1 function-boundary-type-conversion=identity-layout-map})' | FileCheck %s

// A bucket's start and wait become calls of the runtime hooks on the
// bucket's buffer, which the sum shares: no copy between them, and the
// code after the wait reads the buffer the start was given. The world size
// is a call too.
// CHECK-LABEL: func.func private @kiln_world_size() -> f32
// CHECK-LABEL: func.func private @kiln_all_reduce_wait(i64, index, i64)
// CHECK-LABEL: func.func private @kiln_all_reduce_start(i64, index, i64)
// CHECK-LABEL: func.func @bucket
// CHECK-SAME: (%[[IN:.*]]: memref<6xf32>, %[[OUT:.*]]: memref<6xf32>)
// CHECK: %[[BUF:.*]] = memref.alloc() {{.*}}: memref<6xf32>
// CHECK: linalg.generic {{.*}} ins(%[[IN]] : memref<6xf32>) outs(%[[BUF]] : memref<6xf32>)
// CHECK: %[[P0:.*]] = memref.extract_aligned_pointer_as_index %[[BUF]]
// CHECK: call @kiln_all_reduce_start(%c3_i64, %[[P0]], %c6_i64)
// CHECK-NOT: memref.copy %[[BUF]]
// CHECK: %[[P1:.*]] = memref.extract_aligned_pointer_as_index %[[BUF]]
// CHECK: call @kiln_all_reduce_wait(%c3_i64{{.*}}, %[[P1]], %c6_i64{{.*}})
// CHECK: %[[N:.*]] = call @kiln_world_size() : () -> f32
// CHECK: linalg.generic {{.*}} ins(%[[BUF]] : memref<6xf32>) outs(%[[OUT]] : memref<6xf32>)
#map = affine_map<(d0) -> (d0)>
func.func @bucket(%x: tensor<6xf32>, %out: tensor<6xf32>) -> tensor<6xf32> {
  %empty = tensor.empty() : tensor<6xf32>
  %g = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%x : tensor<6xf32>) outs(%empty : tensor<6xf32>) {
  ^bb0(%a: f32, %b: f32):
    %n = arith.negf %a : f32
    linalg.yield %n : f32
  } -> tensor<6xf32>
  %t = kiln.all_reduce_start %g {bucket = 3 : i64} : tensor<6xf32>
  %r = kiln.all_reduce_wait %t {bucket = 3 : i64} : tensor<6xf32>
  %size = kiln.world_size : tensor<f32>
  %s = tensor.extract %size[] : tensor<f32>
  %y = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%r : tensor<6xf32>) outs(%out : tensor<6xf32>) {
  ^bb0(%a: f32, %b: f32):
    %d = arith.divf %a, %s : f32
    linalg.yield %d : f32
  } -> tensor<6xf32>
  return %y : tensor<6xf32>
}

// -----

// The replica's rank is a call too.
// CHECK-LABEL: func.func private @kiln_replica_rank() -> i64
// CHECK-LABEL: func.func @rank
// CHECK: %[[R:.*]] = call @kiln_replica_rank() : () -> i64
// CHECK: memref.store %[[R]], %{{.*}}[] : memref<i64>
func.func @rank() -> tensor<i64> {
  %r = kiln.replica_rank : tensor<i64>
  return %r : tensor<i64>
}
