// RUN: kiln-opt %s -pass-pipeline='builtin.module(func.func(kiln-blocked-layout{block=4}))' -verify-diagnostics

// A block is one vector of channels: 8 (AVX2) or 16 (AVX-512), nothing else.
// expected-error @+1 {{kiln-blocked-layout: block must be 8 or 16 channels, got 4}}
func.func @bad_block(%x: tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32> {
  return %x : tensor<1x16x4x4xf32>
}
