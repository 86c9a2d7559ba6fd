// RUN: kiln-opt %s -verify-diagnostics -pass-pipeline='builtin.module(func.func(kiln-autodiff{wrt=(x}))'

// expected-error @+1 {{wrt: invalid regular expression '(x': parentheses not balanced}}
func.func @main(%x: tensor<4xf32> {kiln.name = "x"}) -> tensor<f32> {
  %s = kiln.reduce_sum %x {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}
