// RUN: kiln-opt %s -verify-diagnostics -pass-pipeline='builtin.module(func.func(kiln-bucket-all-reduce{bucket-bytes=0}))'

// expected-error @+1 {{kiln-bucket-all-reduce: bucket caps must be positive (first-bucket-bytes=1048576, bucket-bytes=0)}}
func.func @caps(%g: tensor<4xf32>) -> tensor<4xf32> {
  %s = kiln.all_reduce %g : tensor<4xf32>
  return %s : tensor<4xf32>
}
