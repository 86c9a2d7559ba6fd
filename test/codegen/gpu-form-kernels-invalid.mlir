// RUN: kiln-opt %s -split-input-file -verify-diagnostics -pass-pipeline='builtin.module(kiln-gpu-form-kernels)'

// GPU code is formed from fusions only.
func.func @outside_fusion(%x: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  // expected-error @+1 {{kiln-gpu-form-kernels: 'linalg.generic' is outside every kiln.fusion; GPU code is formed from fusions (kiln-fuse)}}
  %0 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    linalg.yield %in : f32
  } -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// An op with no elemental form names itself.
func.func @no_elemental_form(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.fusion loop(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    // expected-error @+1 {{kiln-gpu-form-kernels: no GPU code for 'tensor.generate'}}
    %g = tensor.generate {
    ^bb0(%i: index):
      %c = arith.constant 1.0 : f32
      tensor.yield %c : f32
    } : tensor<4xf32>
    kiln.yield %g : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

// Slices with sizes known only at run time have no static kernel shape.
func.func @dynamic_slice(%x: tensor<8xf32>, %i: index) -> tensor<4xf32> {
  %0 = kiln.fusion loop(%x) : (tensor<8xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<8xf32>):
    %c = arith.constant 2 : index
    // expected-error @+1 {{kiln-gpu-form-kernels: dynamic slices are not supported}}
    %s = tensor.extract_slice %a[%c] [4] [1] : tensor<8xf32> to tensor<4xf32>
    %e = tensor.empty() : tensor<4xf32>
    %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
        ins(%s : tensor<4xf32>) outs(%e : tensor<4xf32>) {
    ^bb0(%in: f32, %out: f32):
      %n = arith.negf %in : f32
      linalg.yield %n : f32
    } -> tensor<4xf32>
    kiln.yield %r : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}
