// RUN: kiln-opt %s -split-input-file -kiln-fold-constants -canonicalize | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-fold-constants=max-elements=4 -canonicalize | FileCheck %s --check-prefix=LIMIT

// The shape arithmetic of an exported model collapses to one constant, which
// canonicalization then folds into the reshape's type.
// CHECK-LABEL: func @shape_subgraph
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[C:.*]] = kiln.constant dense<[2, 12]> : tensor<2xi64>
// CHECK-NEXT: %[[R:.*]] = kiln.reshape %[[X]] : tensor<2x3x4xf32> -> tensor<2x12xf32>
// CHECK-NEXT: return %[[R]], %[[C]]
func.func @shape_subgraph(%x: tensor<2x3x4xf32>) -> (tensor<2x12xf32>, tensor<2xi64>) {
  %shape = kiln.constant dense<[2, 3, 4]> : tensor<3xi64>
  %i0 = kiln.constant dense<0> : tensor<1xi64>
  %i12 = kiln.constant dense<[1, 2]> : tensor<2xi64>
  %d0 = kiln.gather %shape, %i0 {axis = 0 : i64} : (tensor<3xi64>, tensor<1xi64>) -> tensor<1xi64>
  %rest = kiln.gather %shape, %i12 {axis = 0 : i64} : (tensor<3xi64>, tensor<2xi64>) -> tensor<2xi64>
  %prod = kiln.reduce_prod %rest {axes = array<i64: 0>} : (tensor<2xi64>) -> tensor<1xi64>
  %one = kiln.constant dense<1> : tensor<1xi64>
  %d1 = kiln.mul %prod, %one : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %zero = kiln.constant dense<0> : tensor<1xi64>
  %d1b = kiln.add %d1, %zero : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %new = kiln.concat %d0, %d1b {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %y = kiln.reshape %x : tensor<2x3x4xf32> -> tensor<2x12xf32>
  return %y, %new : tensor<2x12xf32>, tensor<2xi64>
}

// -----

// CHECK-LABEL: func @data_movement
// CHECK-DAG: kiln.constant dense<{{\[}}[1, 4], [2, 5], [3, 6]]> : tensor<3x2xi32>
// CHECK-DAG: kiln.constant dense<[6, 4]> : tensor<2xi32>
// CHECK-DAG: kiln.constant dense<{{\[}}[1, 2, 3], [1, 2, 3]]> : tensor<2x3xi32>
// CHECK-NOT: kiln.transpose
// CHECK-NOT: kiln.slice
// CHECK-NOT: kiln.expand
func.func @data_movement() -> (tensor<3x2xi32>, tensor<2xi32>, tensor<2x3xi32>) {
  %c = kiln.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %t = kiln.transpose %c {perm = array<i64: 1, 0>} : (tensor<2x3xi32>) -> tensor<3x2xi32>
  %flat = kiln.reshape %c : tensor<2x3xi32> -> tensor<6xi32>
  %s = kiln.slice %flat {start = array<i64: 5>, step = array<i64: -2>} : tensor<6xi32> -> tensor<2xi32>
  %row = kiln.constant dense<[1, 2, 3]> : tensor<3xi32>
  %e = kiln.expand %row : tensor<3xi32> -> tensor<2x3xi32>
  return %t, %s, %e : tensor<3x2xi32>, tensor<2xi32>, tensor<2x3xi32>
}

// -----

// Float math runs in double and rounds once to the result type.
// CHECK-LABEL: func @float_math
// CHECK-DAG: kiln.constant dense<[1.000000e+00, 2.71828175]> : tensor<2xf32>
// CHECK-DAG: kiln.constant dense<[1.500000e+00, 2.500000e+00]> : tensor<2xf16>
// CHECK-DAG: kiln.constant dense<[true, false]> : tensor<2xi1>
// CHECK-NOT: kiln.exp
// CHECK-NOT: kiln.less
func.func @float_math() -> (tensor<2xf32>, tensor<2xf16>, tensor<2xi1>) {
  %x = kiln.constant dense<[0.0, 1.0]> : tensor<2xf32>
  %e = kiln.exp %x : tensor<2xf32>
  %h = kiln.constant dense<[1.0, 2.0]> : tensor<2xf16>
  %half = kiln.constant dense<0.5> : tensor<f16>
  %s = kiln.add %h, %half : (tensor<2xf16>, tensor<f16>) -> tensor<2xf16>
  %nan = kiln.constant dense<[1.0, 0x7FC00000]> : tensor<2xf32>
  %lt = kiln.less %x, %nan : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>
  return %e, %s, %lt : tensor<2xf32>, tensor<2xf16>, tensor<2xi1>
}

// -----

// Casts: float to int truncates toward zero; to bool, non-zero is true.
// CHECK-LABEL: func @casts
// CHECK-DAG: kiln.constant dense<[-1, 2]> : tensor<2xi64>
// CHECK-DAG: kiln.constant dense<true> : tensor<2xi1>
// CHECK-DAG: kiln.constant dense<[-1.500000e+00, 2.750000e+00]> : tensor<2xbf16>
func.func @casts() -> (tensor<2xi64>, tensor<2xi1>, tensor<2xbf16>) {
  %x = kiln.constant dense<[-1.5, 2.75]> : tensor<2xf32>
  %i = kiln.cast %x : tensor<2xf32> -> tensor<2xi64>
  %b = kiln.cast %x : tensor<2xf32> -> tensor<2xi1>
  %h = kiln.cast %x : tensor<2xf32> -> tensor<2xbf16>
  return %i, %b, %h : tensor<2xi64>, tensor<2xi1>, tensor<2xbf16>
}

// -----

// Integer arithmetic wraps at the result width; division truncates.
// CHECK-LABEL: func @integers
// CHECK-DAG: kiln.constant dense<[-128, -3]> : tensor<2xi8>
// CHECK-DAG: kiln.constant dense<[-3, 3]> : tensor<2xi32>
func.func @integers() -> (tensor<2xi8>, tensor<2xi32>) {
  %a = kiln.constant dense<[127, -4]> : tensor<2xi8>
  %one = kiln.constant dense<1> : tensor<i8>
  %w = kiln.add %a, %one : (tensor<2xi8>, tensor<i8>) -> tensor<2xi8>
  %n = kiln.constant dense<[-7, 7]> : tensor<2xi32>
  %d = kiln.constant dense<2> : tensor<i32>
  %q = kiln.div %n, %d : (tensor<2xi32>, tensor<i32>) -> tensor<2xi32>
  return %w, %q : tensor<2xi8>, tensor<2xi32>
}

// -----

// Mod: the remainder takes the divisor's sign, or with fmod the dividend's
// (for floats too); a zero divisor is left for run time.
// CHECK-LABEL: func @modulo
// CHECK-DAG: kiln.constant dense<[-3, 3, 1, -1]> : tensor<4xi64>
// CHECK-DAG: kiln.constant dense<[2, -2, 1, -1]> : tensor<4xi64>
// CHECK-DAG: kiln.constant dense<[1.500000e+00, -1.500000e+00]> : tensor<2xf32>
// CHECK: kiln.mod
// CHECK-NOT: kiln.mod
func.func @modulo() -> (tensor<4xi64>, tensor<4xi64>, tensor<2xf32>, tensor<2xi64>) {
  %n = kiln.constant dense<[7, -7, 7, -7]> : tensor<4xi64>
  %d = kiln.constant dense<[-5, 5, 3, -3]> : tensor<4xi64>
  %py = kiln.mod %n, %d : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %c = kiln.mod %n, %d {fmod = true} : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %x = kiln.constant dense<[5.5, -5.5]> : tensor<2xf32>
  %four = kiln.constant dense<4.0> : tensor<f32>
  %f = kiln.mod %x, %four {fmod = true} : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  %one = kiln.constant dense<[1, 1]> : tensor<2xi64>
  %zero = kiln.constant dense<[2, 0]> : tensor<2xi64>
  %z = kiln.mod %one, %zero : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  return %py, %c, %f, %z : tensor<4xi64>, tensor<4xi64>, tensor<2xf32>, tensor<2xi64>
}

// -----

// With is_unsigned, integers fold as unsigned: 200 (-56 signed) / 3 = 66,
// max(250, 5) = 250, 250 < 5 is false; unsigned division by zero is left
// for run time. Casts zero-extend and convert as unsigned.
// CHECK-LABEL: func @unsigned
// CHECK-DAG: kiln.constant dense<[66, 0]> : tensor<2xi8>
// CHECK-DAG: kiln.constant dense<[-6, 5]> : tensor<2xi8>
// CHECK-DAG: kiln.constant dense<[false, true]> : tensor<2xi1>
// CHECK-DAG: kiln.constant dense<[2.000000e+02, 5.000000e+00]> : tensor<2xf32>
// CHECK-DAG: kiln.constant dense<[200, 5]> : tensor<2xi32>
// CHECK-DAG: kiln.constant dense<[-56, 3]> : tensor<2xi8>
// CHECK: kiln.div {{.*}} {is_unsigned}
func.func @unsigned() -> (tensor<2xi8>, tensor<2xi8>, tensor<2xi1>, tensor<2xf32>, tensor<2xi32>, tensor<2xi8>, tensor<2xi8>) {
  %a = kiln.constant dense<[-56, 0]> : tensor<2xi8>
  %b = kiln.constant dense<[3, 7]> : tensor<2xi8>
  %c = kiln.constant dense<[-6, 3]> : tensor<2xi8>
  %d = kiln.constant dense<[5, 5]> : tensor<2xi8>
  %div = kiln.div %a, %b {is_unsigned} : (tensor<2xi8>, tensor<2xi8>) -> tensor<2xi8>
  %max = kiln.max %c, %d {is_unsigned} : (tensor<2xi8>, tensor<2xi8>) -> tensor<2xi8>
  %lt = kiln.less %c, %d {is_unsigned} : (tensor<2xi8>, tensor<2xi8>) -> tensor<2xi1>
  %e = kiln.constant dense<[-56, 5]> : tensor<2xi8>
  %f = kiln.cast %e {unsigned_input} : tensor<2xi8> -> tensor<2xf32>
  %w = kiln.cast %e {unsigned_input} : tensor<2xi8> -> tensor<2xi32>
  %g = kiln.constant dense<[200.0, 3.0]> : tensor<2xf32>
  %u = kiln.cast %g {unsigned_output} : tensor<2xf32> -> tensor<2xi8>
  %zero = kiln.constant dense<[0, 1]> : tensor<2xi8>
  %left = kiln.div %a, %zero {is_unsigned} : (tensor<2xi8>, tensor<2xi8>) -> tensor<2xi8>
  return %div, %max, %lt, %f, %w, %u, %left : tensor<2xi8>, tensor<2xi8>, tensor<2xi1>, tensor<2xf32>, tensor<2xi32>, tensor<2xi8>, tensor<2xi8>
}

// -----

// An integer division by zero is left for run time, as are ops with a
// non-constant operand.
// CHECK-LABEL: func @not_folded
// CHECK: kiln.div
// CHECK: kiln.add
func.func @not_folded(%x: tensor<2xi32>) -> (tensor<2xi32>, tensor<2xi32>) {
  %n = kiln.constant dense<[1, 2]> : tensor<2xi32>
  %z = kiln.constant dense<[1, 0]> : tensor<2xi32>
  %q = kiln.div %n, %z : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  %s = kiln.add %n, %x : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32>
  return %q, %s : tensor<2xi32>, tensor<2xi32>
}

// -----

// The cost rule: results larger than max-elements stay computed at run time.
// CHECK-LABEL: func @cost_rule
// CHECK: kiln.constant dense<{{\[}}[1.000000e+00, 4.000000e+00], [2.000000e+00, 5.000000e+00], [3.000000e+00, 6.000000e+00]]> : tensor<3x2xf32>
// CHECK-NOT: kiln.transpose
// LIMIT-LABEL: func @cost_rule
// LIMIT: kiln.transpose
func.func @cost_rule() -> tensor<3x2xf32> {
  %c = kiln.constant dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>
  %t = kiln.transpose %c {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %t : tensor<3x2xf32>
}

// -----

// Where, gather with negative indices, concat along an inner axis.
// CHECK-LABEL: func @select_and_gather
// CHECK-DAG: kiln.constant dense<[1.000000e+01, 2.000000e+00]> : tensor<2xf32>
// CHECK-DAG: kiln.constant dense<{{\[}}[3, 1], [6, 4]]> : tensor<2x2xi64>
// CHECK-DAG: kiln.constant dense<{{\[}}[1, 2, 3, 9], [4, 5, 6, 9]]> : tensor<2x4xi64>
func.func @select_and_gather() -> (tensor<2xf32>, tensor<2x2xi64>, tensor<2x4xi64>) {
  %c = kiln.constant dense<[true, false]> : tensor<2xi1>
  %a = kiln.constant dense<10.0> : tensor<f32>
  %b = kiln.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %w = kiln.where %c, %a, %b : (tensor<2xi1>, tensor<f32>, tensor<2xf32>) -> tensor<2xf32>
  %m = kiln.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>
  %i = kiln.constant dense<[-1, 0]> : tensor<2xi64>
  %g = kiln.gather %m, %i {axis = 1 : i64} : (tensor<2x3xi64>, tensor<2xi64>) -> tensor<2x2xi64>
  %nine = kiln.constant dense<9> : tensor<2x1xi64>
  %j = kiln.concat %m, %nine {axis = 1 : i64} : (tensor<2x3xi64>, tensor<2x1xi64>) -> tensor<2x4xi64>
  return %w, %g, %j : tensor<2xf32>, tensor<2x2xi64>, tensor<2x4xi64>
}

// -----

// CHECK-LABEL: func @reductions
// CHECK-DAG: kiln.constant dense<[4.000000e+00, 6.000000e+00]> : tensor<2xf32>
// CHECK-DAG: kiln.constant dense<{{\[}}[3], [4]]> : tensor<2x1xi64>
// CHECK-NOT: kiln.reduce
func.func @reductions() -> (tensor<2xf32>, tensor<2x1xi64>) {
  %f = kiln.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %s = kiln.reduce_sum %f {axes = array<i64: 0>, keepdims = false} : (tensor<2x2xf32>) -> tensor<2xf32>
  %i = kiln.constant dense<[[1, 3], [4, 2]]> : tensor<2x2xi64>
  %m = kiln.reduce_max %i {axes = array<i64: 1>} : (tensor<2x2xi64>) -> tensor<2x1xi64>
  return %s, %m : tensor<2xf32>, tensor<2x1xi64>
}

// -----

// A result with no elements is a constant whatever its operands; a matrix
// product over an empty dimension is zero; reductions over no element give
// their identities (the lowest value for max, the highest for min).
// CHECK-LABEL: func @empty
// CHECK-DAG: %[[NOTHING:.*]] = kiln.constant dense<> : tensor<2x0xf32>
// CHECK-DAG: %[[ZEROS:.*]] = kiln.constant dense<0.000000e+00> : tensor<2x2xf32>
// CHECK-DAG: %[[LOWEST:.*]] = kiln.constant dense<0xFF800000> : tensor<2xf32>
// CHECK-DAG: %[[HIGHEST:.*]] = kiln.constant dense<2147483647> : tensor<2xi32>
// CHECK-DAG: %[[ONES:.*]] = kiln.constant dense<1> : tensor<2xi32>
// CHECK: return %[[NOTHING]], %[[ZEROS]], %[[LOWEST]], %[[HIGHEST]], %[[ONES]]
// LIMIT-LABEL: func @empty
// LIMIT-NOT: kiln.slice
// LIMIT-NOT: kiln.matmul
func.func @empty(%x: tensor<2x3xf32>, %i: tensor<2x3xi32>)
    -> (tensor<2x0xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<2xi32>, tensor<2xi32>) {
  %none = kiln.slice %x {start = array<i64: 0, 3>, step = array<i64: 1, 1>} : tensor<2x3xf32> -> tensor<2x0xf32>
  %t = kiln.transpose %none {perm = array<i64: 1, 0>} : (tensor<2x0xf32>) -> tensor<0x2xf32>
  %product = kiln.matmul %none, %t : (tensor<2x0xf32>, tensor<0x2xf32>) -> tensor<2x2xf32>
  %max = kiln.reduce_max %none {axes = array<i64: 1>, keepdims = false} : (tensor<2x0xf32>) -> tensor<2xf32>
  %ints = kiln.slice %i {start = array<i64: 0, 3>, step = array<i64: 1, 1>} : tensor<2x3xi32> -> tensor<2x0xi32>
  %min = kiln.reduce_min %ints {axes = array<i64: 1>, keepdims = false} : (tensor<2x0xi32>) -> tensor<2xi32>
  %prod = kiln.reduce_prod %ints {axes = array<i64: 1>, keepdims = false} : (tensor<2x0xi32>) -> tensor<2xi32>
  return %none, %product, %max, %min, %prod : tensor<2x0xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<2xi32>, tensor<2xi32>
}
