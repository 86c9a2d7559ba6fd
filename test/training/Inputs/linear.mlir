// A linear model y = x w, whose mean-squared-error gradient has a closed
// form: the optimizer and schedule tests check each update against it.
func.func @main(%x: tensor<4x3xf32> {kiln.name = "x"}) -> (tensor<4x2xf32> {kiln.name = "y"}) {
  %w = kiln.constant dense<[[-0.9216, 0.3364], [0.5291, 0.1461], [0.751, -0.3725]]> : tensor<3x2xf32> loc("initializer 'w'")
  %y = kiln.matmul %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  return %y : tensor<4x2xf32>
}
