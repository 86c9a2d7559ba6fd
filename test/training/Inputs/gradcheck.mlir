// Gradient checks: every gradient rule against central differences in f64.
// GradientCheckTest differentiates each case with kiln-autodiff (with respect
// to the arguments whose names start with "x"), compiles it with kilnc, and
// compares each gradient element with (f(x + h) - f(x - h)) / 2h. "c" is a
// fixed cotangent, so the check sees every output element. Inputs are
// uniform in [-1, 1], or in the "range" a case gives.

// case: neg
func.func @main(%x: tensor<2x3xf64> {kiln.name = "x"}, %c: tensor<2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.neg %x : tensor<2x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: abs
func.func @main(%x: tensor<2x3xf64> {kiln.name = "x"}, %c: tensor<2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.abs %x : tensor<2x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: exp
func.func @main(%x: tensor<2x3xf64> {kiln.name = "x"}, %c: tensor<2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.exp %x : tensor<2x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: log
// range: 0.5 2
func.func @main(%x: tensor<2x3xf64> {kiln.name = "x"}, %c: tensor<2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.log %x : tensor<2x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: sqrt
// range: 0.5 2
func.func @main(%x: tensor<2x3xf64> {kiln.name = "x"}, %c: tensor<2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.sqrt %x : tensor<2x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: reciprocal
// range: 0.5 2
func.func @main(%x: tensor<2x3xf64> {kiln.name = "x"}, %c: tensor<2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.reciprocal %x : tensor<2x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: tanh
func.func @main(%x: tensor<2x3xf64> {kiln.name = "x"}, %c: tensor<2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.tanh %x : tensor<2x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: sigmoid
func.func @main(%x: tensor<2x3xf64> {kiln.name = "x"}, %c: tensor<2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.sigmoid %x : tensor<2x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: relu
func.func @main(%x: tensor<2x3xf64> {kiln.name = "x"}, %c: tensor<2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.relu %x : tensor<2x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: erf
func.func @main(%x: tensor<2x3xf64> {kiln.name = "x"}, %c: tensor<2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.erf %x : tensor<2x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: sin
func.func @main(%x: tensor<2x3xf64> {kiln.name = "x"}, %c: tensor<2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.sin %x : tensor<2x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: cos
func.func @main(%x: tensor<2x3xf64> {kiln.name = "x"}, %c: tensor<2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.cos %x : tensor<2x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: softplus
func.func @main(%x: tensor<2x3xf64> {kiln.name = "x"}, %c: tensor<2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.softplus %x : tensor<2x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: softsign
func.func @main(%x: tensor<2x3xf64> {kiln.name = "x"}, %c: tensor<2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.softsign %x : tensor<2x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: add_broadcast
func.func @main(%x: tensor<2x3xf64> {kiln.name = "x"}, %x2: tensor<3xf64> {kiln.name = "x2"}, %c: tensor<2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.add %x, %x2 : (tensor<2x3xf64>, tensor<3xf64>) -> tensor<2x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: add_broadcast_columns
func.func @main(%x: tensor<2x1xf64> {kiln.name = "x"}, %x2: tensor<2x3xf64> {kiln.name = "x2"}, %c: tensor<2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.add %x, %x2 : (tensor<2x1xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: sub_broadcast
func.func @main(%x: tensor<2x3xf64> {kiln.name = "x"}, %x2: tensor<3xf64> {kiln.name = "x2"}, %c: tensor<2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.sub %x, %x2 : (tensor<2x3xf64>, tensor<3xf64>) -> tensor<2x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: sub_broadcast_columns
func.func @main(%x: tensor<2x1xf64> {kiln.name = "x"}, %x2: tensor<2x3xf64> {kiln.name = "x2"}, %c: tensor<2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.sub %x, %x2 : (tensor<2x1xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: mul_broadcast
func.func @main(%x: tensor<2x3xf64> {kiln.name = "x"}, %x2: tensor<3xf64> {kiln.name = "x2"}, %c: tensor<2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.mul %x, %x2 : (tensor<2x3xf64>, tensor<3xf64>) -> tensor<2x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: mul_broadcast_columns
func.func @main(%x: tensor<2x1xf64> {kiln.name = "x"}, %x2: tensor<2x3xf64> {kiln.name = "x2"}, %c: tensor<2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.mul %x, %x2 : (tensor<2x1xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: div_broadcast
// range: 0.5 2
func.func @main(%x: tensor<2x3xf64> {kiln.name = "x"}, %x2: tensor<3xf64> {kiln.name = "x2"}, %c: tensor<2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.div %x, %x2 : (tensor<2x3xf64>, tensor<3xf64>) -> tensor<2x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: div_broadcast_columns
// range: 0.5 2
func.func @main(%x: tensor<2x1xf64> {kiln.name = "x"}, %x2: tensor<2x3xf64> {kiln.name = "x2"}, %c: tensor<2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.div %x, %x2 : (tensor<2x1xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: pow_broadcast
// range: 0.5 2
func.func @main(%x: tensor<2x3xf64> {kiln.name = "x"}, %x2: tensor<3xf64> {kiln.name = "x2"}, %c: tensor<2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.pow %x, %x2 : (tensor<2x3xf64>, tensor<3xf64>) -> tensor<2x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: pow_broadcast_columns
// range: 0.5 2
func.func @main(%x: tensor<2x1xf64> {kiln.name = "x"}, %x2: tensor<2x3xf64> {kiln.name = "x2"}, %c: tensor<2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.pow %x, %x2 : (tensor<2x1xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: max_broadcast
func.func @main(%x: tensor<2x3xf64> {kiln.name = "x"}, %x2: tensor<3xf64> {kiln.name = "x2"}, %c: tensor<2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.max %x, %x2 : (tensor<2x3xf64>, tensor<3xf64>) -> tensor<2x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: max_broadcast_columns
func.func @main(%x: tensor<2x1xf64> {kiln.name = "x"}, %x2: tensor<2x3xf64> {kiln.name = "x2"}, %c: tensor<2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.max %x, %x2 : (tensor<2x1xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: min_broadcast
func.func @main(%x: tensor<2x3xf64> {kiln.name = "x"}, %x2: tensor<3xf64> {kiln.name = "x2"}, %c: tensor<2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.min %x, %x2 : (tensor<2x3xf64>, tensor<3xf64>) -> tensor<2x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: min_broadcast_columns
func.func @main(%x: tensor<2x1xf64> {kiln.name = "x"}, %x2: tensor<2x3xf64> {kiln.name = "x2"}, %c: tensor<2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.min %x, %x2 : (tensor<2x1xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: mul_same_operand
// a value used twice: its cotangents are summed
func.func @main(%x: tensor<2x3xf64> {kiln.name = "x"}, %c: tensor<2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.mul %x, %x : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: where
func.func @main(%x: tensor<2x3xf64> {kiln.name = "x"}, %x2: tensor<3xf64> {kiln.name = "x2"}, %c: tensor<2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %z = kiln.constant dense<0.0> : tensor<f64>
  %m = kiln.greater %x, %z : (tensor<2x3xf64>, tensor<f64>) -> tensor<2x3xi1>
  %y = kiln.where %m, %x, %x2 : (tensor<2x3xi1>, tensor<2x3xf64>, tensor<3xf64>) -> tensor<2x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: cast_f32_round_trip
// f32 in the middle: checked to f32 accuracy
// step: 1e-3
// tolerance: 1e-3
// range: 0.5 1
func.func @main(%x: tensor<2x3xf64> {kiln.name = "x"}, %c: tensor<2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %h = kiln.cast %x : tensor<2x3xf64> -> tensor<2x3xf32>
  %s = kiln.mul %h, %h : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %y = kiln.cast %s : tensor<2x3xf32> -> tensor<2x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: matmul
func.func @main(%x: tensor<2x4xf64> {kiln.name = "x"}, %x2: tensor<4x3xf64> {kiln.name = "x2"}, %c: tensor<2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.matmul %x, %x2 : (tensor<2x4xf64>, tensor<4x3xf64>) -> tensor<2x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: matmul_batch_broadcast
func.func @main(%x: tensor<2x2x4xf64> {kiln.name = "x"}, %x2: tensor<4x3xf64> {kiln.name = "x2"}, %c: tensor<2x2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.matmul %x, %x2 : (tensor<2x2x4xf64>, tensor<4x3xf64>) -> tensor<2x2x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x2x3xf64>, tensor<2x2x3xf64>) -> tensor<2x2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: matmul_vector_matrix
func.func @main(%x: tensor<4xf64> {kiln.name = "x"}, %x2: tensor<4x3xf64> {kiln.name = "x2"}, %c: tensor<3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.matmul %x, %x2 : (tensor<4xf64>, tensor<4x3xf64>) -> tensor<3xf64>
  %p = kiln.mul %y, %c : (tensor<3xf64>, tensor<3xf64>) -> tensor<3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0>, keepdims = false} : (tensor<3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: matmul_matrix_vector
func.func @main(%x: tensor<2x4xf64> {kiln.name = "x"}, %x2: tensor<4xf64> {kiln.name = "x2"}, %c: tensor<2xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.matmul %x, %x2 : (tensor<2x4xf64>, tensor<4xf64>) -> tensor<2xf64>
  %p = kiln.mul %y, %c : (tensor<2xf64>, tensor<2xf64>) -> tensor<2xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0>, keepdims = false} : (tensor<2xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: gemm_ta0_tb0
func.func @main(%x: tensor<2x4xf64> {kiln.name = "x"}, %x2: tensor<4x3xf64> {kiln.name = "x2"}, %x3: tensor<3xf64> {kiln.name = "x3"}, %c: tensor<2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.gemm %x, %x2, %x3 {alpha = 0.5 : f32, beta = 2.0 : f32, trans_a = false, trans_b = false} : (tensor<2x4xf64>, tensor<4x3xf64>, tensor<3xf64>) -> tensor<2x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: gemm_ta0_tb1
func.func @main(%x: tensor<2x4xf64> {kiln.name = "x"}, %x2: tensor<3x4xf64> {kiln.name = "x2"}, %x3: tensor<3xf64> {kiln.name = "x3"}, %c: tensor<2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.gemm %x, %x2, %x3 {alpha = 0.5 : f32, beta = 2.0 : f32, trans_a = false, trans_b = true} : (tensor<2x4xf64>, tensor<3x4xf64>, tensor<3xf64>) -> tensor<2x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: gemm_ta1_tb0
func.func @main(%x: tensor<4x2xf64> {kiln.name = "x"}, %x2: tensor<4x3xf64> {kiln.name = "x2"}, %x3: tensor<3xf64> {kiln.name = "x3"}, %c: tensor<2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.gemm %x, %x2, %x3 {alpha = 0.5 : f32, beta = 2.0 : f32, trans_a = true, trans_b = false} : (tensor<4x2xf64>, tensor<4x3xf64>, tensor<3xf64>) -> tensor<2x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: gemm_ta1_tb1
func.func @main(%x: tensor<4x2xf64> {kiln.name = "x"}, %x2: tensor<3x4xf64> {kiln.name = "x2"}, %x3: tensor<3xf64> {kiln.name = "x3"}, %c: tensor<2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.gemm %x, %x2, %x3 {alpha = 0.5 : f32, beta = 2.0 : f32, trans_a = true, trans_b = true} : (tensor<4x2xf64>, tensor<3x4xf64>, tensor<3xf64>) -> tensor<2x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: reduce_sum
func.func @main(%x: tensor<2x3x4xf64> {kiln.name = "x"}, %c: tensor<2x4xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.reduce_sum %x {axes = array<i64: 1>, keepdims = false} : (tensor<2x3x4xf64>) -> tensor<2x4xf64>
  %p = kiln.mul %y, %c : (tensor<2x4xf64>, tensor<2x4xf64>) -> tensor<2x4xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x4xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: reduce_sum_keepdims
func.func @main(%x: tensor<2x3x4xf64> {kiln.name = "x"}, %c: tensor<1x3x1xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.reduce_sum %x {axes = array<i64: 0, 2>, keepdims = true} : (tensor<2x3x4xf64>) -> tensor<1x3x1xf64>
  %p = kiln.mul %y, %c : (tensor<1x3x1xf64>, tensor<1x3x1xf64>) -> tensor<1x3x1xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<1x3x1xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: reduce_mean
func.func @main(%x: tensor<2x3x4xf64> {kiln.name = "x"}, %c: tensor<2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.reduce_mean %x {axes = array<i64: 2>, keepdims = false} : (tensor<2x3x4xf64>) -> tensor<2x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: softmax
func.func @main(%x: tensor<2x4xf64> {kiln.name = "x"}, %c: tensor<2x4xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.softmax %x {axis = 1 : i64} : tensor<2x4xf64>
  %p = kiln.mul %y, %c : (tensor<2x4xf64>, tensor<2x4xf64>) -> tensor<2x4xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x4xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: softmax_axis0
func.func @main(%x: tensor<3x2xf64> {kiln.name = "x"}, %c: tensor<3x2xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.softmax %x {axis = 0 : i64} : tensor<3x2xf64>
  %p = kiln.mul %y, %c : (tensor<3x2xf64>, tensor<3x2xf64>) -> tensor<3x2xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<3x2xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: log_softmax
func.func @main(%x: tensor<2x4xf64> {kiln.name = "x"}, %c: tensor<2x4xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.log_softmax %x {axis = 1 : i64} : tensor<2x4xf64>
  %p = kiln.mul %y, %c : (tensor<2x4xf64>, tensor<2x4xf64>) -> tensor<2x4xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x4xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: layer_norm
func.func @main(%x: tensor<2x2x4xf64> {kiln.name = "x"}, %x2: tensor<4xf64> {kiln.name = "x2"}, %x3: tensor<4xf64> {kiln.name = "x3"}, %c: tensor<2x2x4xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y, %m, %r = kiln.layer_norm %x, %x2, %x3 {axis = 2 : i64, epsilon = 1.0e-05 : f32} : (tensor<2x2x4xf64>, tensor<4xf64>, tensor<4xf64>) -> (tensor<2x2x4xf64>, tensor<2x2x1xf64>, tensor<2x2x1xf64>)
  %p = kiln.mul %y, %c : (tensor<2x2x4xf64>, tensor<2x2x4xf64>) -> tensor<2x2x4xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x2x4xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: layer_norm_two_axes
func.func @main(%x: tensor<2x2x3xf64> {kiln.name = "x"}, %x2: tensor<2x3xf64> {kiln.name = "x2"}, %c: tensor<2x2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y, %m, %r = kiln.layer_norm %x, %x2 {axis = 1 : i64, epsilon = 1.0e-05 : f32} : (tensor<2x2x3xf64>, tensor<2x3xf64>) -> (tensor<2x2x3xf64>, tensor<2x1x1xf64>, tensor<2x1x1xf64>)
  %p = kiln.mul %y, %c : (tensor<2x2x3xf64>, tensor<2x2x3xf64>) -> tensor<2x2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: batch_norm_training
func.func @main(%x: tensor<3x2x2x3xf64> {kiln.name = "x"}, %x2: tensor<2xf64> {kiln.name = "x2"}, %x3: tensor<2xf64> {kiln.name = "x3"}, %c: tensor<3x2x2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y, %m, %v = kiln.batch_norm_training %x, %x2, %x3 {epsilon = 1.0e-05 : f32} : (tensor<3x2x2x3xf64>, tensor<2xf64>, tensor<2xf64>) -> (tensor<3x2x2x3xf64>, tensor<2xf64>, tensor<2xf64>)
  %p = kiln.mul %y, %c : (tensor<3x2x2x3xf64>, tensor<3x2x2x3xf64>) -> tensor<3x2x2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<3x2x2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: reshape
func.func @main(%x: tensor<2x3x2xf64> {kiln.name = "x"}, %c: tensor<3x4xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.reshape %x : tensor<2x3x2xf64> -> tensor<3x4xf64>
  %z = kiln.mul %y, %y : (tensor<3x4xf64>, tensor<3x4xf64>) -> tensor<3x4xf64>
  %p = kiln.mul %z, %c : (tensor<3x4xf64>, tensor<3x4xf64>) -> tensor<3x4xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<3x4xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: flatten
func.func @main(%x: tensor<2x3x2xf64> {kiln.name = "x"}, %c: tensor<2x6xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.flatten %x {axis = 1 : i64} : (tensor<2x3x2xf64>) -> tensor<2x6xf64>
  %z = kiln.exp %y : tensor<2x6xf64>
  %p = kiln.mul %z, %c : (tensor<2x6xf64>, tensor<2x6xf64>) -> tensor<2x6xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x6xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: squeeze
func.func @main(%x: tensor<2x1x3xf64> {kiln.name = "x"}, %c: tensor<2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.squeeze %x {axes = array<i64: 1>} : (tensor<2x1x3xf64>) -> tensor<2x3xf64>
  %z = kiln.exp %y : tensor<2x3xf64>
  %p = kiln.mul %z, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: unsqueeze
func.func @main(%x: tensor<2x3xf64> {kiln.name = "x"}, %c: tensor<1x2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.unsqueeze %x {axes = array<i64: 0>} : (tensor<2x3xf64>) -> tensor<1x2x3xf64>
  %z = kiln.exp %y : tensor<1x2x3xf64>
  %p = kiln.mul %z, %c : (tensor<1x2x3xf64>, tensor<1x2x3xf64>) -> tensor<1x2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<1x2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: transpose
func.func @main(%x: tensor<2x3x4xf64> {kiln.name = "x"}, %c: tensor<4x2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf64>) -> tensor<4x2x3xf64>
  %z = kiln.exp %y : tensor<4x2x3xf64>
  %p = kiln.mul %z, %c : (tensor<4x2x3xf64>, tensor<4x2x3xf64>) -> tensor<4x2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<4x2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: expand
func.func @main(%x: tensor<3x1xf64> {kiln.name = "x"}, %c: tensor<2x3x4xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.expand %x : tensor<3x1xf64> -> tensor<2x3x4xf64>
  %z = kiln.exp %y : tensor<2x3x4xf64>
  %p = kiln.mul %z, %c : (tensor<2x3x4xf64>, tensor<2x3x4xf64>) -> tensor<2x3x4xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x3x4xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: concat
func.func @main(%x: tensor<2x2xf64> {kiln.name = "x"}, %x2: tensor<2x3xf64> {kiln.name = "x2"}, %c: tensor<2x5xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.concat %x, %x2 {axis = 1 : i64} : (tensor<2x2xf64>, tensor<2x3xf64>) -> tensor<2x5xf64>
  %z = kiln.exp %y : tensor<2x5xf64>
  %p = kiln.mul %z, %c : (tensor<2x5xf64>, tensor<2x5xf64>) -> tensor<2x5xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x5xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: slice
func.func @main(%x: tensor<4x5xf64> {kiln.name = "x"}, %c: tensor<2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.slice %x {start = array<i64: 1, 1>, step = array<i64: 1, 1>} : tensor<4x5xf64> -> tensor<2x3xf64>
  %z = kiln.exp %y : tensor<2x3xf64>
  %p = kiln.mul %z, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: slice_reversed
func.func @main(%x: tensor<4x5xf64> {kiln.name = "x"}, %c: tensor<2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.slice %x {start = array<i64: 2, 4>, step = array<i64: 1, -1>} : tensor<4x5xf64> -> tensor<2x3xf64>
  %z = kiln.exp %y : tensor<2x3xf64>
  %p = kiln.mul %z, %c : (tensor<2x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: mlp
// a small network: cotangents flow through several ops and a shared value
func.func @main(%x: tensor<4x3xf64> {kiln.name = "x"}, %xw1: tensor<3x5xf64> {kiln.name = "xw1"}, %xb1: tensor<5xf64> {kiln.name = "xb1"}, %xw2: tensor<5x2xf64> {kiln.name = "xw2"}, %c: tensor<4x2xf64> {kiln.name = "c"}) -> tensor<f64> {
  %h = kiln.matmul %x, %xw1 : (tensor<4x3xf64>, tensor<3x5xf64>) -> tensor<4x5xf64>
  %hb = kiln.add %h, %xb1 : (tensor<4x5xf64>, tensor<5xf64>) -> tensor<4x5xf64>
  %a = kiln.tanh %hb : tensor<4x5xf64>
  %o = kiln.matmul %a, %xw2 : (tensor<4x5xf64>, tensor<5x2xf64>) -> tensor<4x2xf64>
  %y = kiln.log_softmax %o {axis = 1 : i64} : tensor<4x2xf64>
  %p = kiln.mul %y, %c : (tensor<4x2xf64>, tensor<4x2xf64>) -> tensor<4x2xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x2xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: conv
func.func @main(%x: tensor<2x2x5x5xf64> {kiln.name = "x"}, %x2: tensor<3x2x3x3xf64> {kiln.name = "x2"}, %x3: tensor<3xf64> {kiln.name = "x3"}, %c: tensor<2x3x5x5xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.conv %x, %x2, %x3 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x2x5x5xf64>, tensor<3x2x3x3xf64>, tensor<3xf64>) -> tensor<2x3x5x5xf64>
  %p = kiln.mul %y, %c : (tensor<2x3x5x5xf64>, tensor<2x3x5x5xf64>) -> tensor<2x3x5x5xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<2x3x5x5xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: conv_filter_outweighs_activations
// A filter over four times the activations: the input gradient correlates
// the flipped cotangent with the unflipped filter and flips the result
// back, its asymmetric pads trading ends.
func.func @main(%x: tensor<1x8x2x3xf64> {kiln.name = "x"}, %x2: tensor<6x8x3x3xf64> {kiln.name = "x2"}, %c: tensor<1x6x2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.conv %x, %x2 {strides = array<i64: 1, 1>, pads = array<i64: 1, 0, 1, 2>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x2x3xf64>, tensor<6x8x3x3xf64>) -> tensor<1x6x2x3xf64>
  %p = kiln.mul %y, %c : (tensor<1x6x2x3xf64>, tensor<1x6x2x3xf64>) -> tensor<1x6x2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<1x6x2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: conv_filter_outweighs_dilated_grouped
func.func @main(%x: tensor<1x8x2x2xf64> {kiln.name = "x"}, %x2: tensor<16x4x3x3xf64> {kiln.name = "x2"}, %c: tensor<1x16x2x2xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.conv %x, %x2 {strides = array<i64: 1, 1>, pads = array<i64: 2, 2, 2, 2>, dilations = array<i64: 2, 2>, group = 2 : i64} : (tensor<1x8x2x2xf64>, tensor<16x4x3x3xf64>) -> tensor<1x16x2x2xf64>
  %p = kiln.mul %y, %c : (tensor<1x16x2x2xf64>, tensor<1x16x2x2xf64>) -> tensor<1x16x2x2xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<1x16x2x2xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: conv_stride2_asymmetric_pads
func.func @main(%x: tensor<1x2x5x5xf64> {kiln.name = "x"}, %x2: tensor<2x2x3x3xf64> {kiln.name = "x2"}, %x3: tensor<2xf64> {kiln.name = "x3"}, %c: tensor<1x2x3x2xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.conv %x, %x2, %x3 {strides = array<i64: 2, 2>, pads = array<i64: 1, 0, 1, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x5x5xf64>, tensor<2x2x3x3xf64>, tensor<2xf64>) -> tensor<1x2x3x2xf64>
  %p = kiln.mul %y, %c : (tensor<1x2x3x2xf64>, tensor<1x2x3x2xf64>) -> tensor<1x2x3x2xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<1x2x3x2xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: conv_stride2_uncovered_rows
func.func @main(%x: tensor<1x1x6x6xf64> {kiln.name = "x"}, %x2: tensor<1x1x3x3xf64> {kiln.name = "x2"}, %c: tensor<1x1x2x2xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.conv %x, %x2 {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x6x6xf64>, tensor<1x1x3x3xf64>) -> tensor<1x1x2x2xf64>
  %p = kiln.mul %y, %c : (tensor<1x1x2x2xf64>, tensor<1x1x2x2xf64>) -> tensor<1x1x2x2xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<1x1x2x2xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: conv_stride2_groups2
func.func @main(%x: tensor<1x4x7x7xf64> {kiln.name = "x"}, %x2: tensor<4x2x3x3xf64> {kiln.name = "x2"}, %x3: tensor<4xf64> {kiln.name = "x3"}, %c: tensor<1x4x4x4xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.conv %x, %x2, %x3 {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x4x7x7xf64>, tensor<4x2x3x3xf64>, tensor<4xf64>) -> tensor<1x4x4x4xf64>
  %p = kiln.mul %y, %c : (tensor<1x4x4x4xf64>, tensor<1x4x4x4xf64>) -> tensor<1x4x4x4xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<1x4x4x4xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: conv_1x1_stride2
func.func @main(%x: tensor<1x3x5x5xf64> {kiln.name = "x"}, %x2: tensor<2x3x1x1xf64> {kiln.name = "x2"}, %x3: tensor<2xf64> {kiln.name = "x3"}, %c: tensor<1x2x3x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.conv %x, %x2, %x3 {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x5x5xf64>, tensor<2x3x1x1xf64>, tensor<2xf64>) -> tensor<1x2x3x3xf64>
  %p = kiln.mul %y, %c : (tensor<1x2x3x3xf64>, tensor<1x2x3x3xf64>) -> tensor<1x2x3x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<1x2x3x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: conv_1x1_stride2_even
func.func @main(%x: tensor<2x3x6x6xf64> {kiln.name = "x"}, %x2: tensor<2x3x1x1xf64> {kiln.name = "x2"}, %c: tensor<2x2x3x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.conv %x, %x2 {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x3x6x6xf64>, tensor<2x3x1x1xf64>) -> tensor<2x2x3x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x2x3x3xf64>, tensor<2x2x3x3xf64>) -> tensor<2x2x3x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<2x2x3x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: conv_windows_miss_input
func.func @main(%x: tensor<1x2x1x3xf64> {kiln.name = "x"}, %x2: tensor<2x2x1x1xf64> {kiln.name = "x2"}, %x3: tensor<2xf64> {kiln.name = "x3"}, %c: tensor<1x2x1x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.conv %x, %x2, %x3 {strides = array<i64: 3, 1>, pads = array<i64: 2, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x1x3xf64>, tensor<2x2x1x1xf64>, tensor<2xf64>) -> tensor<1x2x1x3xf64>
  %p = kiln.mul %y, %c : (tensor<1x2x1x3xf64>, tensor<1x2x1x3xf64>) -> tensor<1x2x1x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<1x2x1x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: conv_stride3
func.func @main(%x: tensor<1x2x8x8xf64> {kiln.name = "x"}, %x2: tensor<2x2x3x3xf64> {kiln.name = "x2"}, %c: tensor<1x2x3x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.conv %x, %x2 {strides = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x8x8xf64>, tensor<2x2x3x3xf64>) -> tensor<1x2x3x3xf64>
  %p = kiln.mul %y, %c : (tensor<1x2x3x3xf64>, tensor<1x2x3x3xf64>) -> tensor<1x2x3x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<1x2x3x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: conv_stride2x1
func.func @main(%x: tensor<1x2x6x5xf64> {kiln.name = "x"}, %x2: tensor<2x2x3x3xf64> {kiln.name = "x2"}, %x3: tensor<2xf64> {kiln.name = "x3"}, %c: tensor<1x2x3x5xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.conv %x, %x2, %x3 {strides = array<i64: 2, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x6x5xf64>, tensor<2x2x3x3xf64>, tensor<2xf64>) -> tensor<1x2x3x5xf64>
  %p = kiln.mul %y, %c : (tensor<1x2x3x5xf64>, tensor<1x2x3x5xf64>) -> tensor<1x2x3x5xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<1x2x3x5xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: conv_7x7_stride2_pad3
func.func @main(%x: tensor<2x1x9x9xf64> {kiln.name = "x"}, %x2: tensor<2x1x7x7xf64> {kiln.name = "x2"}, %c: tensor<2x2x5x5xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.conv %x, %x2 {strides = array<i64: 2, 2>, pads = array<i64: 3, 3, 3, 3>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x1x9x9xf64>, tensor<2x1x7x7xf64>) -> tensor<2x2x5x5xf64>
  %p = kiln.mul %y, %c : (tensor<2x2x5x5xf64>, tensor<2x2x5x5xf64>) -> tensor<2x2x5x5xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<2x2x5x5xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: conv_stride2_pads_wider_than_kernel
func.func @main(%x: tensor<1x1x4x4xf64> {kiln.name = "x"}, %x2: tensor<1x1x2x2xf64> {kiln.name = "x2"}, %c: tensor<1x1x5x5xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.conv %x, %x2 {strides = array<i64: 2, 2>, pads = array<i64: 3, 3, 3, 3>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x1x4x4xf64>, tensor<1x1x2x2xf64>) -> tensor<1x1x5x5xf64>
  %p = kiln.mul %y, %c : (tensor<1x1x5x5xf64>, tensor<1x1x5x5xf64>) -> tensor<1x1x5x5xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<1x1x5x5xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: conv_1x1_pads_wider_than_kernel
func.func @main(%x: tensor<1x2x4x4xf64> {kiln.name = "x"}, %x2: tensor<2x2x1x1xf64> {kiln.name = "x2"}, %c: tensor<1x2x6x5xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.conv %x, %x2 {strides = array<i64: 1, 1>, pads = array<i64: 1, 0, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x2x4x4xf64>, tensor<2x2x1x1xf64>) -> tensor<1x2x6x5xf64>
  %p = kiln.mul %y, %c : (tensor<1x2x6x5xf64>, tensor<1x2x6x5xf64>) -> tensor<1x2x6x5xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<1x2x6x5xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: conv_dilation2
func.func @main(%x: tensor<1x2x6x6xf64> {kiln.name = "x"}, %x2: tensor<2x2x2x2xf64> {kiln.name = "x2"}, %x3: tensor<2xf64> {kiln.name = "x3"}, %c: tensor<1x2x4x4xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.conv %x, %x2, %x3 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 2>, group = 1 : i64} : (tensor<1x2x6x6xf64>, tensor<2x2x2x2xf64>, tensor<2xf64>) -> tensor<1x2x4x4xf64>
  %p = kiln.mul %y, %c : (tensor<1x2x4x4xf64>, tensor<1x2x4x4xf64>) -> tensor<1x2x4x4xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<1x2x4x4xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: conv_groups2
func.func @main(%x: tensor<1x4x4x4xf64> {kiln.name = "x"}, %x2: tensor<4x2x3x3xf64> {kiln.name = "x2"}, %x3: tensor<4xf64> {kiln.name = "x3"}, %c: tensor<1x4x4x4xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.conv %x, %x2, %x3 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x4x4x4xf64>, tensor<4x2x3x3xf64>, tensor<4xf64>) -> tensor<1x4x4x4xf64>
  %p = kiln.mul %y, %c : (tensor<1x4x4x4xf64>, tensor<1x4x4x4xf64>) -> tensor<1x4x4x4xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<1x4x4x4xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: conv_depthwise
func.func @main(%x: tensor<1x3x4x4xf64> {kiln.name = "x"}, %x2: tensor<3x1x3x3xf64> {kiln.name = "x2"}, %c: tensor<1x3x2x2xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.conv %x, %x2 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 3 : i64} : (tensor<1x3x4x4xf64>, tensor<3x1x3x3xf64>) -> tensor<1x3x2x2xf64>
  %p = kiln.mul %y, %c : (tensor<1x3x2x2xf64>, tensor<1x3x2x2xf64>) -> tensor<1x3x2x2xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<1x3x2x2xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: conv_5x5_lenet
func.func @main(%x: tensor<2x1x8x8xf64> {kiln.name = "x"}, %x2: tensor<2x1x5x5xf64> {kiln.name = "x2"}, %x3: tensor<2xf64> {kiln.name = "x3"}, %c: tensor<2x2x8x8xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.conv %x, %x2, %x3 {strides = array<i64: 1, 1>, pads = array<i64: 2, 2, 2, 2>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x1x8x8xf64>, tensor<2x1x5x5xf64>, tensor<2xf64>) -> tensor<2x2x8x8xf64>
  %p = kiln.mul %y, %c : (tensor<2x2x8x8xf64>, tensor<2x2x8x8xf64>) -> tensor<2x2x8x8xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<2x2x8x8xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: max_pool_2x2
func.func @main(%x: tensor<2x2x4x5xf64> {kiln.name = "x"}, %c: tensor<2x2x2x2xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x2x4x5xf64>) -> tensor<2x2x2x2xf64>
  %p = kiln.mul %y, %c : (tensor<2x2x2x2xf64>, tensor<2x2x2x2xf64>) -> tensor<2x2x2x2xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<2x2x2x2xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: max_pool_2x2_ceil
func.func @main(%x: tensor<2x2x5x5xf64> {kiln.name = "x"}, %c: tensor<2x2x3x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = true} : (tensor<2x2x5x5xf64>) -> tensor<2x2x3x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x2x3x3xf64>, tensor<2x2x3x3xf64>) -> tensor<2x2x3x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<2x2x3x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: max_pool_3x3_stride2_pad1_ceil
func.func @main(%x: tensor<1x2x6x6xf64> {kiln.name = "x"}, %c: tensor<1x2x4x4xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode = true} : (tensor<1x2x6x6xf64>) -> tensor<1x2x4x4xf64>
  %p = kiln.mul %y, %c : (tensor<1x2x4x4xf64>, tensor<1x2x4x4xf64>) -> tensor<1x2x4x4xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<1x2x4x4xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: max_pool_global
func.func @main(%x: tensor<1x2x3x3xf64> {kiln.name = "x"}, %c: tensor<1x2x1x1xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x2x3x3xf64>) -> tensor<1x2x1x1xf64>
  %p = kiln.mul %y, %c : (tensor<1x2x1x1xf64>, tensor<1x2x1x1xf64>) -> tensor<1x2x1x1xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<1x2x1x1xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: average_pool_2x2
func.func @main(%x: tensor<1x2x4x4xf64> {kiln.name = "x"}, %c: tensor<1x2x2x2xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.average_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x2x4x4xf64>) -> tensor<1x2x2x2xf64>
  %p = kiln.mul %y, %c : (tensor<1x2x2x2xf64>, tensor<1x2x2x2xf64>) -> tensor<1x2x2x2xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<1x2x2x2xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: max_pool_3x3_stride2_pad1
func.func @main(%x: tensor<1x2x7x7xf64> {kiln.name = "x"}, %c: tensor<1x2x4x4xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x2x7x7xf64>) -> tensor<1x2x4x4xf64>
  %p = kiln.mul %y, %c : (tensor<1x2x4x4xf64>, tensor<1x2x4x4xf64>) -> tensor<1x2x4x4xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<1x2x4x4xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: max_pool_3x3_overlapping
func.func @main(%x: tensor<1x1x5x5xf64> {kiln.name = "x"}, %c: tensor<1x1x3x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.max_pool %x {kernel_shape = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x1x5x5xf64>) -> tensor<1x1x3x3xf64>
  %p = kiln.mul %y, %c : (tensor<1x1x3x3xf64>, tensor<1x1x3x3xf64>) -> tensor<1x1x3x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<1x1x3x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: max_pool_2x2_padded_end
func.func @main(%x: tensor<1x1x5x5xf64> {kiln.name = "x"}, %c: tensor<1x1x3x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x1x5x5xf64>) -> tensor<1x1x3x3xf64>
  %p = kiln.mul %y, %c : (tensor<1x1x3x3xf64>, tensor<1x1x3x3xf64>) -> tensor<1x1x3x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<1x1x3x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: max_pool_dilated
func.func @main(%x: tensor<1x1x6x6xf64> {kiln.name = "x"}, %c: tensor<1x1x4x4xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.max_pool %x {kernel_shape = array<i64: 2, 2>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 2>} : (tensor<1x1x6x6xf64>) -> tensor<1x1x4x4xf64>
  %p = kiln.mul %y, %c : (tensor<1x1x4x4xf64>, tensor<1x1x4x4xf64>) -> tensor<1x1x4x4xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<1x1x4x4xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: gather_embedding
// Repeated and negative indices: each row's gradient sums its picks.
func.func @main(%x: tensor<5x3xf64> {kiln.name = "x"}, %c: tensor<2x3x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %ids = kiln.constant dense<[[0, 4, 0], [-1, 2, 2]]> : tensor<2x3xi64>
  %y = kiln.gather %x, %ids {axis = 0 : i64} : (tensor<5x3xf64>, tensor<2x3xi64>) -> tensor<2x3x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x3x3xf64>, tensor<2x3x3xf64>) -> tensor<2x3x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x3x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: gather_middle_axis
func.func @main(%x: tensor<2x4x3xf64> {kiln.name = "x"}, %c: tensor<2x2x3xf64> {kiln.name = "c"}) -> tensor<f64> {
  %ids = kiln.constant dense<[3, 1]> : tensor<2xi32>
  %y = kiln.gather %x, %ids {axis = 1 : i64} : (tensor<2x4x3xf64>, tensor<2xi32>) -> tensor<2x2x3xf64>
  %p = kiln.mul %y, %c : (tensor<2x2x3xf64>, tensor<2x2x3xf64>) -> tensor<2x2x3xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x2x3xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: dropout
// Linear in x once the mask is drawn: the gradient is the same dropout of c.
func.func @main(%x: tensor<4x5xf64> {kiln.name = "x"}, %c: tensor<4x5xf64> {kiln.name = "c"}) -> tensor<f64> {
  %step = kiln.constant dense<3> : tensor<i64>
  %y = kiln.dropout %x, %step {ratio = 0.4 : f32, seed = 5 : i64} : (tensor<4x5xf64>, tensor<i64>) -> tensor<4x5xf64>
  %p = kiln.mul %y, %c : (tensor<4x5xf64>, tensor<4x5xf64>) -> tensor<4x5xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<4x5xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: reduce_max
func.func @main(%x: tensor<2x3x4xf64> {kiln.name = "x"}, %c: tensor<2x4xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.reduce_max %x {axes = array<i64: 1>, keepdims = false} : (tensor<2x3x4xf64>) -> tensor<2x4xf64>
  %p = kiln.mul %y, %c : (tensor<2x4xf64>, tensor<2x4xf64>) -> tensor<2x4xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x4xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: reduce_min_keepdims
func.func @main(%x: tensor<3x4xf64> {kiln.name = "x"}, %c: tensor<1x4xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.reduce_min %x {axes = array<i64: 0>, keepdims = true} : (tensor<3x4xf64>) -> tensor<1x4xf64>
  %p = kiln.mul %y, %c : (tensor<1x4xf64>, tensor<1x4xf64>) -> tensor<1x4xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<1x4xf64>) -> tensor<f64>
  return %l : tensor<f64>
}

// -----

// case: slice_strided
func.func @main(%x: tensor<7x5xf64> {kiln.name = "x"}, %c: tensor<3x2xf64> {kiln.name = "c"}) -> tensor<f64> {
  %y = kiln.slice %x {start = array<i64: 1, 4>, step = array<i64: 2, -3>} : tensor<7x5xf64> -> tensor<3x2xf64>
  %z = kiln.exp %y : tensor<3x2xf64>
  %p = kiln.mul %z, %c : (tensor<3x2xf64>, tensor<3x2xf64>) -> tensor<3x2xf64>
  %l = kiln.reduce_sum %p {axes = array<i64: 0, 1>, keepdims = false} : (tensor<3x2xf64>) -> tensor<f64>
  return %l : tensor<f64>
}
