// RUN: kiln-opt %s -pass-pipeline='builtin.module(kiln-contractions-to-blas{library=mkl})' -verify-diagnostics

// expected-error @below {{kiln-contractions-to-blas: unknown library 'mkl' (expected 'onednn' or 'openblas')}}
module {
  func.func @empty() {
    return
  }
}
