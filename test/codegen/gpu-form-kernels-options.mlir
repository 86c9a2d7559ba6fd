// RUN: kiln-opt %s -split-input-file -verify-diagnostics -pass-pipeline='builtin.module(kiln-gpu-form-kernels{chip=sm_42})'

// expected-error @+1 {{kiln-gpu-form-kernels: unknown chip 'sm_42' (known: sm_75, sm_80, sm_86, sm_87, sm_89, sm_90, sm_100, sm_120)}}
module {
}
