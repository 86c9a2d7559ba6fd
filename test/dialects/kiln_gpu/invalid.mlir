// RUN: kiln-opt %s -split-input-file -verify-diagnostics

module attributes {gpu.container_module} {
  func.func @grid_not_three(%a: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{grid must be three positive sizes (x, y, z)}}
    %0 = kiln_gpu.launch @kernels::@k grid [1, 1] block [4, 1, 1] (%a) : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

func.func @block_zero(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{block must be three positive sizes (x, y, z)}}
  %0 = kiln_gpu.launch @kernels::@k grid [1, 1, 1] block [0, 1, 1] (%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @block_too_large(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{blocks of 2048 threads exceed the 1024 a GPU runs}}
  %0 = kiln_gpu.launch @kernels::@k grid [1, 1, 1] block [1024, 2, 1] (%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @negative_shared(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{shared memory size must not be negative}}
  %0 = kiln_gpu.launch @kernels::@k grid [1, 1, 1] block [4, 1, 1] shared -1 (%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @no_results(%a: tensor<4xf32>) {
  // expected-error @+1 {{must have at least one result for its kernel to write}}
  kiln_gpu.launch @kernels::@k grid [1, 1, 1] block [4, 1, 1] (%a) : (tensor<4xf32>) -> ()
  return
}

// -----

module attributes {gpu.container_module} {
  func.func @not_a_kernel_symbol(%a: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{kernel @kernels::@missing is not a gpu.func}}
    %0 = kiln_gpu.launch @kernels::@missing grid [1, 1, 1] block [4, 1, 1] (%a) : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
  gpu.module @kernels {
  }
}

// -----

module attributes {gpu.container_module} {
  func.func @not_marked_kernel(%a: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{kernel @kernels::@f is not marked 'kernel'}}
    %0 = kiln_gpu.launch @kernels::@f grid [1, 1, 1] block [4, 1, 1] (%a) : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
  gpu.module @kernels {
    gpu.func @f(%a: memref<4xf32>, %b: memref<4xf32>) {
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  func.func @parameter_count(%a: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{kernel @kernels::@k takes 1 buffers, but the launch passes 2}}
    %0 = kiln_gpu.launch @kernels::@k grid [1, 1, 1] block [4, 1, 1] (%a) : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
  gpu.module @kernels {
    gpu.func @k(%a: memref<4xf32>) kernel {
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  func.func @parameter_type(%a: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{kernel parameter 1 has type 'memref<5xf32>', which does not hold a 'tensor<4xf32>'}}
    %0 = kiln_gpu.launch @kernels::@k grid [1, 1, 1] block [4, 1, 1] (%a) : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
  gpu.module @kernels {
    gpu.func @k(%a: memref<4xf32>, %b: memref<5xf32>) kernel {
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  func.func @lowered_kernel(%a: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{kernel @kernels::@k must take 2 pointers}}
    %0 = kiln_gpu.launch @kernels::@k grid [1, 1, 1] block [4, 1, 1] (%a) : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
  gpu.module @kernels {
    llvm.func @k(%a: !llvm.ptr) {
      llvm.return
    }
  }
}

// -----

func.func @matmul_integer(%a: tensor<8x16xi32>, %b: tensor<16x4xi32>) -> tensor<8x4xi32> {
  // expected-error @+1 {{element type must be f32, f16 or bf16, got 'i32'}}
  %0 = kiln_gpu.matmul %a, %b batch 1 m 8 n 4 k 16 : tensor<8x16xi32>, tensor<16x4xi32> -> tensor<8x4xi32>
  return %0 : tensor<8x4xi32>
}

// -----

func.func @matmul_mixed(%a: tensor<8x16xf16>, %b: tensor<16x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{operands must all have the result's element type 'f32'}}
  %0 = kiln_gpu.matmul %a, %b batch 1 m 8 n 4 k 16 : tensor<8x16xf16>, tensor<16x4xf32> -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

func.func @matmul_dynamic(%a: tensor<?x16xf32>, %b: tensor<16x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{shapes must be static}}
  %0 = kiln_gpu.matmul %a, %b batch 1 m 8 n 4 k 16 : tensor<?x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

func.func @matmul_sizes(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{batch, m, n and k must be positive}}
  %0 = kiln_gpu.matmul %a, %b batch 0 m 8 n 4 k 16 : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

func.func @matmul_not_dense(%a: tensor<8x17xf32>, %b: tensor<16x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{lhs 'tensor<8x17xf32>' does not hold 1 dense matrices of its shape; give lhs_strides}}
  %0 = kiln_gpu.matmul %a, %b batch 1 m 8 n 4 k 16 : tensor<8x17xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

func.func @matmul_bad_strides(%a: tensor<8x17xf32>, %b: tensor<16x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{lhs_strides must be [batch stride >= 0, row stride >= the row's length]}}
  %0 = kiln_gpu.matmul %a, %b batch 1 m 8 n 4 k 16 {lhs_strides = array<i64: 0, 8>} : tensor<8x17xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

func.func @matmul_view_outside(%a: tensor<128x256xf32>, %b: tensor<4x64x128xf32>) -> tensor<4x128x128xf32> {
  // expected-error @+1 {{lhs view reaches element 32959 of a 'tensor<128x256xf32>'}}
  %0 = kiln_gpu.matmul %a, %b batch 4 m 128 n 128 k 64 {lhs_strides = array<i64: 128, 256>}
      : tensor<128x256xf32>, tensor<4x64x128xf32> -> tensor<4x128x128xf32>
  return %0 : tensor<4x128x128xf32>
}

// -----

func.func @matmul_result_overlaps(%a: tensor<4x128x64xf32>, %b: tensor<4x64x64xf32>) -> tensor<128x256xf32> {
  // expected-error @+1 {{the result view must cover each of the result's 32768 elements once}}
  %0 = kiln_gpu.matmul %a, %b batch 4 m 128 n 64 k 64 {result_strides = array<i64: 32, 256>}
      : tensor<4x128x64xf32>, tensor<4x64x64xf32> -> tensor<128x256xf32>
  return %0 : tensor<128x256xf32>
}

// -----

func.func @matmul_shared_addend(%a: tensor<4x8x16xf32>, %b: tensor<16x4xf32>, %c: tensor<8x4xf32>) -> tensor<4x8x4xf32> {
  // expected-error @+1 {{addend must have a matrix for every batch index}}
  %0 = kiln_gpu.matmul %a, %b addend(%c : tensor<8x4xf32>) batch 4 m 8 n 4 k 16
      : tensor<4x8x16xf32>, tensor<16x4xf32> -> tensor<4x8x4xf32>
  return %0 : tensor<4x8x4xf32>
}

// -----

func.func @matmul_bias(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>, %bias: tensor<8xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{bias must have 4 elements, got 'tensor<8xf32>'}}
  %0 = kiln_gpu.matmul %a, %b bias(%bias : tensor<8xf32>) batch 1 m 8 n 4 k 16 : tensor<8x16xf32>, tensor<16x4xf32> -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
