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

func.func @matmul_rank(%a: tensor<8x16xf32>, %b: tensor<1x16x4xf32>) -> tensor<1x8x4xf32> {
  // expected-error @+1 {{operands and result must be rank 3 ([batch, rows, columns])}}
  %0 = kiln_gpu.matmul %a, %b : tensor<8x16xf32>, tensor<1x16x4xf32> -> tensor<1x8x4xf32>
  return %0 : tensor<1x8x4xf32>
}

// -----

func.func @matmul_integer(%a: tensor<1x8x16xi32>, %b: tensor<1x16x4xi32>) -> tensor<1x8x4xi32> {
  // expected-error @+1 {{element type must be f32, f16 or bf16, got 'i32'}}
  %0 = kiln_gpu.matmul %a, %b : tensor<1x8x16xi32>, tensor<1x16x4xi32> -> tensor<1x8x4xi32>
  return %0 : tensor<1x8x4xi32>
}

// -----

func.func @matmul_mixed(%a: tensor<1x8x16xf16>, %b: tensor<1x16x4xf32>) -> tensor<1x8x4xf32> {
  // expected-error @+1 {{operands must all have the result's element type 'f32'}}
  %0 = kiln_gpu.matmul %a, %b : tensor<1x8x16xf16>, tensor<1x16x4xf32> -> tensor<1x8x4xf32>
  return %0 : tensor<1x8x4xf32>
}

// -----

func.func @matmul_dynamic(%a: tensor<1x?x16xf32>, %b: tensor<1x16x4xf32>) -> tensor<1x8x4xf32> {
  // expected-error @+1 {{shapes must be static}}
  %0 = kiln_gpu.matmul %a, %b : tensor<1x?x16xf32>, tensor<1x16x4xf32> -> tensor<1x8x4xf32>
  return %0 : tensor<1x8x4xf32>
}

// -----

func.func @matmul_shape(%a: tensor<1x8x16xf32>, %b: tensor<1x16x4xf32>) -> tensor<1x8x5xf32> {
  // expected-error @+1 {{a 'tensor<1x8x16xf32>' times a 'tensor<1x16x4xf32>' is not a 'tensor<1x8x5xf32>'}}
  %0 = kiln_gpu.matmul %a, %b : tensor<1x8x16xf32>, tensor<1x16x4xf32> -> tensor<1x8x5xf32>
  return %0 : tensor<1x8x5xf32>
}

// -----

func.func @matmul_inner(%a: tensor<1x8x16xf32>, %b: tensor<1x15x4xf32>) -> tensor<1x8x4xf32> {
  // expected-error @+1 {{the lhs has 16 columns but the rhs 15 rows}}
  %0 = kiln_gpu.matmul %a, %b : tensor<1x8x16xf32>, tensor<1x15x4xf32> -> tensor<1x8x4xf32>
  return %0 : tensor<1x8x4xf32>
}

// -----

func.func @matmul_batch(%a: tensor<2x8x16xf32>, %b: tensor<1x16x4xf32>) -> tensor<3x8x4xf32> {
  // expected-error @+1 {{lhs batch 2 is neither 1 nor 3}}
  %0 = kiln_gpu.matmul %a, %b : tensor<2x8x16xf32>, tensor<1x16x4xf32> -> tensor<3x8x4xf32>
  return %0 : tensor<3x8x4xf32>
}

// -----

func.func @matmul_bias(%a: tensor<1x8x16xf32>, %b: tensor<1x16x4xf32>, %bias: tensor<8xf32>) -> tensor<1x8x4xf32> {
  // expected-error @+1 {{bias must be a vector of 4 elements, got 'tensor<8xf32>'}}
  %0 = kiln_gpu.matmul %a, %b bias(%bias : tensor<8xf32>) : tensor<1x8x16xf32>, tensor<1x16x4xf32> -> tensor<1x8x4xf32>
  return %0 : tensor<1x8x4xf32>
}

// -----

func.func @matmul_addend(%a: tensor<1x8x16xf32>, %b: tensor<1x16x4xf32>, %c: tensor<1x4x8xf32>) -> tensor<1x8x4xf32> {
  // expected-error @+1 {{addend must have the result's type 'tensor<1x8x4xf32>'}}
  %0 = kiln_gpu.matmul %a, %b addend(%c : tensor<1x4x8xf32>) : tensor<1x8x16xf32>, tensor<1x16x4xf32> -> tensor<1x8x4xf32>
  return %0 : tensor<1x8x4xf32>
}
