// RUN: kiln-opt %s -split-input-file -canonicalize | FileCheck %s

// CHECK-LABEL: func @identity_cast
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NOT: kiln.cast
// CHECK: return %[[X]]
func.func @identity_cast(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.cast %x : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func @real_cast_kept
// CHECK: kiln.cast %{{.*}} : tensor<4xf32> -> tensor<4xi32>
func.func @real_cast_kept(%x: tensor<4xf32>) -> tensor<4xi32> {
  %0 = kiln.cast %x : tensor<4xf32> -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// CHECK-LABEL: func @reshape_chain
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[R:.*]] = kiln.reshape %[[X]] : tensor<2x3x4xf32> -> tensor<24xf32>
// CHECK-NEXT: return %[[R]]
func.func @reshape_chain(%x: tensor<2x3x4xf32>) -> tensor<24xf32> {
  %0 = kiln.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %1 = kiln.reshape %0 : tensor<6x4xf32> -> tensor<24xf32>
  return %1 : tensor<24xf32>
}

// -----

// A reshape chain that comes back to the input type disappears.
// CHECK-LABEL: func @reshape_round_trip
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @reshape_round_trip(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = kiln.reshape %x : tensor<2x3xf32> -> tensor<6xf32>
  %1 = kiln.reshape %0 : tensor<6xf32> -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func @reshape_of_constant
// CHECK-NEXT: %[[C:.*]] = kiln.constant dense<{{\[}}[1, 2], [3, 4]]> : tensor<2x2xi64>
// CHECK-NEXT: return %[[C]]
func.func @reshape_of_constant() -> tensor<2x2xi64> {
  %0 = kiln.constant dense<[1, 2, 3, 4]> : tensor<4xi64>
  %1 = kiln.reshape %0 : tensor<4xi64> -> tensor<2x2xi64>
  return %1 : tensor<2x2xi64>
}

// -----

// squeeze, unsqueeze and flatten become reshapes, which then merge.
// CHECK-LABEL: func @shape_sugar_to_reshape
// CHECK-SAME: (%[[X:.*]]: tensor<1x3x1xf32>)
// CHECK-NEXT: %[[R:.*]] = kiln.reshape %[[X]] : tensor<1x3x1xf32> -> tensor<1x3xf32>
// CHECK-NEXT: return %[[R]]
func.func @shape_sugar_to_reshape(%x: tensor<1x3x1xf32>) -> tensor<1x3xf32> {
  %0 = kiln.squeeze %x {axes = array<i64: 0, 2>} : (tensor<1x3x1xf32>) -> tensor<3xf32>
  %1 = kiln.unsqueeze %0 {axes = array<i64: 1>} : (tensor<3xf32>) -> tensor<3x1xf32>
  %2 = kiln.flatten %1 {axis = 0 : i64} : (tensor<3x1xf32>) -> tensor<1x3xf32>
  return %2 : tensor<1x3xf32>
}

// -----

// CHECK-LABEL: func @transpose_pair
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[T:.*]] = kiln.transpose %[[X]] {perm = array<i64: 1, 2, 0>} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
// CHECK-NEXT: return %[[T]]
func.func @transpose_pair(%x: tensor<2x3x4xf32>) -> tensor<3x4x2xf32> {
  %0 = kiln.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %1 = kiln.transpose %0 {perm = array<i64: 2, 1, 0>} : (tensor<4x2x3xf32>) -> tensor<3x2x4xf32>
  %2 = kiln.transpose %1 {perm = array<i64: 0, 2, 1>} : (tensor<3x2x4xf32>) -> tensor<3x4x2xf32>
  return %2 : tensor<3x4x2xf32>
}

// -----

// CHECK-LABEL: func @transpose_inverse
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @transpose_inverse(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = kiln.transpose %x {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %1 = kiln.transpose %0 {perm = array<i64: 1, 0>} : (tensor<3x2xf32>) -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func @trivial_data_movement
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]], %[[X]], %[[X]]
func.func @trivial_data_movement(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
  %0 = kiln.concat %x {axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = kiln.slice %x {start = array<i64: 0, 0>, step = array<i64: 1, 1>} : tensor<2x3xf32> -> tensor<2x3xf32>
  %2 = kiln.expand %x : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0, %1, %2 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
}

// -----

// A reversing slice of the whole tensor is not the identity.
// CHECK-LABEL: func @reversing_slice_kept
// CHECK: kiln.slice
func.func @reversing_slice_kept(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.slice %x {start = array<i64: 3>, step = array<i64: -1>} : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func @expand_splat
// CHECK-NEXT: %[[C:.*]] = kiln.constant dense<5.000000e-01> : tensor<2x3xf32>
// CHECK-NEXT: return %[[C]]
func.func @expand_splat() -> tensor<2x3xf32> {
  %0 = kiln.constant dense<0.5> : tensor<3xf32>
  %1 = kiln.expand %0 : tensor<3xf32> -> tensor<2x3xf32>
  return %1 : tensor<2x3xf32>
}
