// RUN: kiln-opt %s -split-input-file -kiln-state-in-place -verify-diagnostics

// expected-error @+1 {{kiln-state-in-place: 'kiln.state_pairs' must be an array of input and output argument numbers, in pairs}}
func.func @odd(%w: memref<8xf32>, %w_out: memref<8xf32>) attributes {kiln.state_pairs = array<i64: 0>} {
  return
}

// -----

// expected-error @+1 {{kiln-state-in-place: 'kiln.state_pairs' must be an array of input and output argument numbers, in pairs}}
func.func @not_an_array(%w: memref<8xf32>, %w_out: memref<8xf32>) attributes {kiln.state_pairs = "0, 1"} {
  return
}

// -----

// expected-error @+1 {{kiln-state-in-place: state pair (0, 2) names no two arguments of the 2 it has}}
func.func @out_of_range(%w: memref<8xf32>, %w_out: memref<8xf32>) attributes {kiln.state_pairs = array<i64: 0, 2>} {
  return
}

// -----

// expected-error @+1 {{kiln-state-in-place: state pair (0, 1) joins buffers of different types, 'memref<8xf32>' and 'memref<4xf32>'}}
func.func @types(%w: memref<8xf32>, %w_out: memref<4xf32>) attributes {kiln.state_pairs = array<i64: 0, 1>} {
  return
}

// -----

func.func @first(%w: memref<8xf32>, %w_out: memref<8xf32>) attributes {kiln.state_pairs = array<i64: 0, 1>} {
  return
}
// expected-error @+1 {{kiln-state-in-place: more than one function has 'kiln.state_pairs'}}
func.func @second(%w: memref<8xf32>, %w_out: memref<8xf32>) attributes {kiln.state_pairs = array<i64: 0, 1>} {
  return
}
