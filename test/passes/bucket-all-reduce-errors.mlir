// RUN: kiln-opt %s -split-input-file -verify-diagnostics -pass-pipeline='builtin.module(func.func(kiln-bucket-all-reduce))'

func.func @half(%g: tensor<4xf16>) -> tensor<4xf16> {
  // expected-error @+1 {{kiln-bucket-all-reduce: only statically shaped f32 tensors are summed over replicas, not 'tensor<4xf16>'}}
  %s = kiln.all_reduce %g : tensor<4xf16>
  return %s : tensor<4xf16>
}

// -----

func.func @nested(%g: tensor<4xf32>) -> tensor<4xf32> {
  %r = kiln.fusion loop(%g) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%x: tensor<4xf32>):
    // expected-error @+1 {{kiln-bucket-all-reduce: an all-reduce inside a region cannot be bucketed; it must be in the function's body}}
    %s = kiln.all_reduce %x : tensor<4xf32>
    kiln.yield %s : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}
