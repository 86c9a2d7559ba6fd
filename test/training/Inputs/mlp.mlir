// A two-layer classifier, 4 features -> 8 tanh units -> 3 classes, batch 16,
// with its weights as initializers: the model kilnc --train is tested on.
func.func @main(%x: tensor<16x4xf32> {kiln.name = "x"}) -> (tensor<16x3xf32> {kiln.name = "logits"}) {
  %w1 = kiln.constant dense<[[-0.1762, -0.3492, 0.1509, -0.4276, 0.0359, -0.1343, -0.442, 0.0074], [-0.4625, -0.0664, -0.4301, -0.4093, -0.0755, 0.3269, -0.3762, -0.2768], [0.1274, 0.4477, 0.0771, -0.1033, 0.4763, -0.4534, 0.3585, -0.2104], [-0.3557, -0.3822, -0.1915, 0.3161, -0.3193, 0.0816, 0.1389, -0.1276]]> : tensor<4x8xf32> loc("initializer 'fc1.weight'")
  %b1 = kiln.constant dense<0.0> : tensor<8xf32> loc("initializer 'fc1.bias'")
  %w2 = kiln.constant dense<[[0.0477, -0.4372, -0.4404], [-0.294, 0.1804, -0.0724], [-0.1859, 0.0856, -0.0468], [-0.2002, 0.2944, 0.199], [-0.2559, 0.0744, 0.0252], [0.3751, 0.2294, -0.2121], [0.4802, -0.3819, -0.0819], [0.2571, -0.348, -0.011]]> : tensor<8x3xf32> loc("initializer 'fc2.weight'")
  %b2 = kiln.constant dense<0.0> : tensor<3xf32> loc("initializer 'fc2.bias'")
  %h = kiln.matmul %x, %w1 : (tensor<16x4xf32>, tensor<4x8xf32>) -> tensor<16x8xf32>
  %hb = kiln.add %h, %b1 : (tensor<16x8xf32>, tensor<8xf32>) -> tensor<16x8xf32>
  %a = kiln.tanh %hb : tensor<16x8xf32>
  %o = kiln.gemm %a, %w2, %b2 : (tensor<16x8xf32>, tensor<8x3xf32>, tensor<3xf32>) -> tensor<16x3xf32>
  return %o : tensor<16x3xf32>
}
