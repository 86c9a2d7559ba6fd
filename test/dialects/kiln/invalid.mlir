// RUN: kiln-opt %s -split-input-file -verify-diagnostics

func.func @broadcast_mismatch(%a: tensor<3x4xf32>, %b: tensor<5xf32>) -> tensor<3x4xf32> {
  // expected-error @+2 {{operand shapes [3x4], [5] do not broadcast (NumPy rules)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.add %a, %b : (tensor<3x4xf32>, tensor<5xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @element_type_mismatch(%a: tensor<3xf32>, %b: tensor<3xf16>) -> tensor<3xf32> {
  // expected-error @+1 {{operands have different element types}}
  %0 = kiln.mul %a, %b : (tensor<3xf32>, tensor<3xf16>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @wrong_result_shape(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{inferred type(s) 'tensor<3xf32>' are incompatible with return type(s) of operation 'tensor<4xf32>'}}
  %0 = kiln.sub %a, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @integer_mod_of_floats(%a: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{integer modulo (fmod = false) needs integer operands}}
  %0 = kiln.mod %a, %a : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @matmul_contracting(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) -> tensor<2x5xf32> {
  // expected-error @+2 {{contracting dimensions differ}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.matmul %a, %b : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

func.func @matmul_batch(%a: tensor<2x2x3xf32>, %b: tensor<3x3x5xf32>) -> tensor<3x2x5xf32> {
  // expected-error @+2 {{batch dimensions}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.matmul %a, %b : (tensor<2x2x3xf32>, tensor<3x3x5xf32>) -> tensor<3x2x5xf32>
  return %0 : tensor<3x2x5xf32>
}

// -----

func.func @gemm_not_matrix(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) -> tensor<3x5xf32> {
  // expected-error @+2 {{A and B must be matrices}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.gemm %a, %b : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

func.func @gemm_bias(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>, %c: tensor<4xf32>) -> tensor<3x5xf32> {
  // expected-error @+1 {{C of shape}}
  %0 = kiln.gemm %a, %b, %c : (tensor<3x4xf32>, tensor<4x5xf32>, tensor<4xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// -----

func.func @conv_rank(%x: tensor<1x4x7xf32>, %w: tensor<6x4x3xf32>) -> tensor<1x6x5xf32> {
  // expected-error @+2 {{input and filter must be 4-D}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.conv %x, %w {dilations = array<i64: 1>, pads = array<i64: 0, 0>, strides = array<i64: 1>} : (tensor<1x4x7xf32>, tensor<6x4x3xf32>) -> tensor<1x6x5xf32>
  return %0 : tensor<1x6x5xf32>
}

// -----

func.func @conv_groups(%x: tensor<1x4x7x7xf32>, %w: tensor<6x3x3x3xf32>) -> tensor<1x6x5x5xf32> {
  // expected-error @+2 {{with group = 2, input channels}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.conv %x, %w {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x7x7xf32>, tensor<6x3x3x3xf32>) -> tensor<1x6x5x5xf32>
  return %0 : tensor<1x6x5x5xf32>
}

// -----

func.func @conv_strides(%x: tensor<1x4x7x7xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<1x6x5x5xf32> {
  // expected-error @+2 {{strides and dilations must be >= 1, pads >= 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 0, 1>} : (tensor<1x4x7x7xf32>, tensor<6x4x3x3xf32>) -> tensor<1x6x5x5xf32>
  return %0 : tensor<1x6x5x5xf32>
}

// -----

func.func @conv_bias(%x: tensor<1x4x7x7xf32>, %w: tensor<6x4x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x6x5x5xf32> {
  // expected-error @+2 {{bias must have 6}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.conv %x, %w, %b {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x7x7xf32>, tensor<6x4x3x3xf32>, tensor<4xf32>) -> tensor<1x6x5x5xf32>
  return %0 : tensor<1x6x5x5xf32>
}

// -----

func.func @pool_rank(%x: tensor<4x7x7xf32>) -> tensor<4x3x3xf32> {
  // expected-error @+2 {{input must be 4-D (NCHW) or a blocked image (N x C/B x H x W x B, B = 8 or 16)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.max_pool %x {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<4x7x7xf32>) -> tensor<4x3x3xf32>
  return %0 : tensor<4x3x3xf32>
}

// -----

// Five dimensions are a blocked image only with 8 or 16 lanes last.
func.func @pool_blocks(%x: tensor<1x2x8x8x4xf32>) -> tensor<1x2x4x4x4xf32> {
  // expected-error @+2 {{input must be 4-D (NCHW) or a blocked image (N x C/B x H x W x B, B = 8 or 16)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.average_pool %x {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x2x8x8x4xf32>) -> tensor<1x2x4x4x4xf32>
  return %0 : tensor<1x2x4x4x4xf32>
}

// -----

func.func @pool_padding(%x: tensor<1x4x7x7xf32>) -> tensor<1x4x10x10xf32> {
  // expected-error @+2 {{padding must be smaller than the kernel}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.max_pool %x {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 2, 2, 2, 2>, strides = array<i64: 1, 1>} : (tensor<1x4x7x7xf32>) -> tensor<1x4x10x10xf32>
  return %0 : tensor<1x4x10x10xf32>
}

// -----

func.func @reduce_axis(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = kiln.reduce_sum %x {axes = array<i64: 2>} : (tensor<3x4xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @reduce_axes_order(%x: tensor<3x4xf32>) -> tensor<1x1xf32> {
  // expected-error @+1 {{axes must be sorted and unique}}
  %0 = kiln.reduce_sum %x {axes = array<i64: 1, 0>} : (tensor<3x4xf32>) -> tensor<1x1xf32>
  return %0 : tensor<1x1xf32>
}

// -----

func.func @softmax_axis(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{axis -1 is out of range for rank 2}}
  %0 = kiln.softmax %x {axis = -1 : i64} : tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @batch_norm_rank(%x: tensor<3xf32>, %c: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{input must have rank >= 2}}
  %0 = kiln.batch_norm %x, %c, %c, %c, %c : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @batch_norm_channels(%x: tensor<2x3x4xf32>, %c: tensor<4xf32>) -> tensor<2x3x4xf32> {
  // expected-error @+1 {{per-channel operands must have}}
  %0 = kiln.batch_norm %x, %c, %c, %c, %c : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

func.func @batch_norm_training_rank(%x: tensor<3xf32>, %c: tensor<3xf32>) {
  // expected-error @+1 {{input must have rank >= 2}}
  %y, %m, %v = kiln.batch_norm_training %x, %c, %c : (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

func.func @batch_norm_training_channels(%x: tensor<2x3x4xf32>, %c: tensor<3xf32>, %d: tensor<4xf32>) {
  // expected-error @+1 {{per-channel operands must have 3 elements, got 'tensor<4xf32>'}}
  %y, %m, %v = kiln.batch_norm_training %x, %c, %d : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<4xf32>) -> (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

func.func @batch_norm_training_type(%x: tensor<2x3x4xf32>, %c: tensor<3xf32>, %d: tensor<3xf64>) {
  // expected-error @+1 {{per-channel operand type 'tensor<3xf64>' differs from the input element type}}
  %y, %m, %v = kiln.batch_norm_training %x, %d, %c : (tensor<2x3x4xf32>, tensor<3xf64>, tensor<3xf32>) -> (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

func.func @layer_norm_scale(%x: tensor<2x3x4xf32>, %s: tensor<5xf32>) -> tensor<2x3x4xf32> {
  // expected-error @+2 {{scale and bias must broadcast}}
  // expected-error @+1 {{failed to infer returned types}}
  %y, %m, %i = kiln.layer_norm %x, %s, %s {axis = 2 : i64} : (tensor<2x3x4xf32>, tensor<5xf32>, tensor<5xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>)
  return %y : tensor<2x3x4xf32>
}

// -----

func.func @reshape_count(%x: tensor<2x3xf32>) -> tensor<7xf32> {
  // expected-error @+1 {{cannot reshape}}
  %0 = kiln.reshape %x : tensor<2x3xf32> -> tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

func.func @reshape_type(%x: tensor<2x3xf32>) -> tensor<6xi32> {
  // expected-error @+1 {{must not change the element type}}
  %0 = kiln.reshape %x : tensor<2x3xf32> -> tensor<6xi32>
  return %0 : tensor<6xi32>
}

// -----

func.func @squeeze_non_unit(%x: tensor<2x3xf32>) -> tensor<3xf32> {
  // expected-error @+2 {{cannot squeeze dimension 0}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.squeeze %x {axes = array<i64: 0>} : (tensor<2x3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @transpose_perm(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+2 {{perm [1, 1] is not a permutation of 2 dimensions}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.transpose %x {perm = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @concat_shapes(%x: tensor<2x3xf32>, %y: tensor<2x4xf32>) -> tensor<4x3xf32> {
  // expected-error @+2 {{inputs}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.concat %x, %y {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @slice_rank(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{start, step and result must all have rank 2}}
  %0 = kiln.slice %x {start = array<i64: 0>, step = array<i64: 1>} : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @slice_zero_step(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{step of dimension 1 is zero}}
  %0 = kiln.slice %x {start = array<i64: 0, 0>, step = array<i64: 1, 0>} : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @slice_out_of_bounds(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{dimension 1}}
  %0 = kiln.slice %x {start = array<i64: 0, 1>, step = array<i64: 1, 1>} : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @gather_axis(%x: tensor<2x3xf32>, %i: tensor<4xi64>) -> tensor<2x3xf32> {
  // expected-error @+2 {{axis 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.gather %x, %i {axis = 2 : i64} : (tensor<2x3xf32>, tensor<4xi64>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @expand_shape(%x: tensor<2x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{cannot broadcast}}
  %0 = kiln.expand %x : tensor<2x3xf32> -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @unranked(%x: tensor<*xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{expected builtin.tensor, but found 'tensor<*xf32>'}}
  %0 = kiln.abs %x : tensor<*xf32>
  return %0 : tensor<*xf32>
}

// -----

func.func @unsupported_element_type(%x: tensor<3xcomplex<f32>>) -> tensor<3xcomplex<f32>> {
  // expected-error @+1 {{operand #0 must be}}
  %0 = kiln.exp %x : tensor<3xcomplex<f32>>
  return %0 : tensor<3xcomplex<f32>>
}

// -----

func.func @dropout_ratio(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kiln.dropout' op ratio must be in [0, 1), got 1}}
  %y = kiln.dropout %x {ratio = 1.0 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @dropout_counter(%x: tensor<4xf32>, %c: tensor<2xi64>) -> tensor<4xf32> {
  // expected-error @+1 {{'kiln.dropout' op counter must be a scalar (tensor<i64>), got 'tensor<2xi64>'}}
  %y = kiln.dropout %x, %c {ratio = 0.5 : f32} : (tensor<4xf32>, tensor<2xi64>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @all_reduce_wait_without_start(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kiln.all_reduce_wait' op waits for bucket 0, which needs the all_reduce_start of that bucket as its input}}
  %y = kiln.all_reduce_wait %x {bucket = 0 : i64} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @all_reduce_bucket_in_flight_read(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'kiln.all_reduce_start' op bucket 1 in flight may only be read by the all_reduce_wait of bucket 1}}
  %t = kiln.all_reduce_start %x {bucket = 1 : i64} : tensor<4xf32>
  %y = kiln.neg %t : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @all_reduce_start_rank(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
  // expected-error @+1 {{operand #0 must be 1D tensor of 32-bit float values}}
  %t = kiln.all_reduce_start %x {bucket = 0 : i64} : tensor<2x2xf32>
  return %t : tensor<2x2xf32>
}

// -----

func.func @dropout_offset(%x: tensor<4xf32>, %c: tensor<i64>, %o: tensor<2xi64>) -> tensor<4xf32> {
  // expected-error @+1 {{'kiln.dropout' op offset must be a scalar (tensor<i64>), got 'tensor<2xi64>'}}
  %y = kiln.dropout %x, %c offset %o {ratio = 0.5 : f32} : (tensor<4xf32>, tensor<i64>, tensor<2xi64>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @gather_elements_longer_indices(%x: tensor<2x3xf32>, %i: tensor<3x3xi64>) -> tensor<3x3xf32> {
  // expected-error @+1 {{'kiln.gather_elements' op indices dimension 0 (3) is longer than data's (2)}}
  %0 = kiln.gather_elements %x, %i {axis = 1 : i64} : (tensor<2x3xf32>, tensor<3x3xi64>) -> tensor<3x3xf32>
  return %0 : tensor<3x3xf32>
}

// -----

func.func @gather_elements_rank(%x: tensor<2x3xf32>, %i: tensor<3xi64>) -> tensor<3xf32> {
  // expected-error @+1 {{'kiln.gather_elements' op indices must have the rank of data (2), got 1}}
  %0 = kiln.gather_elements %x, %i {axis = 1 : i64} : (tensor<2x3xf32>, tensor<3xi64>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @gather_nd_depth(%x: tensor<2x3xf32>, %i: tensor<4x3xi64>) -> tensor<4xf32> {
  // expected-error @+2 {{indices [4x3] index 3 dimensions of data [2x3] after 0 batch dimensions}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.gather_nd %x, %i : (tensor<2x3xf32>, tensor<4x3xi64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @gather_nd_batch(%x: tensor<2x3xf32>, %i: tensor<3x1xi64>) -> tensor<3xf32> {
  // expected-error @+2 {{the batch dimensions of indices [3x1] and data [2x3] differ}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.gather_nd %x, %i {batch_dims = 1 : i64} : (tensor<2x3xf32>, tensor<3x1xi64>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @pad_count(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{pads must have 2 values per dimension (4), got 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.pad %x {pads = array<i64: 1, 1>} : tensor<2x3xf32> -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @pad_negative(%x: tensor<2x3xf32>) -> tensor<2x1xf32> {
  // expected-error @+2 {{padding dimension 1 of [2x3] by -2 and -2 leaves a negative size}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.pad %x {pads = array<i64: 0, -2, 0, -2>} : tensor<2x3xf32> -> tensor<2x1xf32>
  return %0 : tensor<2x1xf32>
}

// -----

func.func @pad_mode(%x: tensor<2x3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'kiln.pad' op unknown mode 'mirror' (constant, edge, reflect, wrap)}}
  %0 = kiln.pad %x {pads = array<i64: 0, 1, 0, 0>, mode = "mirror"} : tensor<2x3xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @pad_reflect_too_far(%x: tensor<2x3xf32>) -> tensor<2x6xf32> {
  // expected-error @+1 {{'kiln.pad' op mode 'reflect' adds at most 2 elements to a side of dimension 1 (size 3), got 3}}
  %0 = kiln.pad %x {pads = array<i64: 0, 3, 0, 0>, mode = "reflect"} : tensor<2x3xf32> -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

func.func @pad_wrap_too_far(%x: tensor<2x3xf32>) -> tensor<2x7xf32> {
  // expected-error @+1 {{'kiln.pad' op mode 'wrap' adds at most 3 elements to a side of dimension 1, got 4}}
  %0 = kiln.pad %x {pads = array<i64: 0, 4, 0, 0>, mode = "wrap"} : tensor<2x3xf32> -> tensor<2x7xf32>
  return %0 : tensor<2x7xf32>
}

// -----

func.func @pad_value_type(%x: tensor<2x3xf32>, %v: tensor<i32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'kiln.pad' op the constant value must be one element of the input's type}}
  %0 = kiln.pad %x, %v : tensor<i32> {pads = array<i64: 0, 1, 0, 0>} : tensor<2x3xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @pad_value_mode(%x: tensor<2x3xf32>, %v: tensor<f32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'kiln.pad' op a constant value needs mode 'constant'}}
  %0 = kiln.pad %x, %v : tensor<f32> {pads = array<i64: 0, 1, 0, 0>, mode = "edge"} : tensor<2x3xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @resize_mode(%x: tensor<2x3xf32>) -> tensor<2x6xf32> {
  // expected-error @+1 {{'kiln.resize' op unknown mode 'area' (nearest, linear, cubic)}}
  %0 = kiln.resize %x {mode = "area", scales = array<f64: 1.0, 2.0>} : tensor<2x3xf32> -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

func.func @resize_coordinates(%x: tensor<2x3xf32>) -> tensor<2x6xf32> {
  // expected-error @+1 {{'kiln.resize' op unknown coordinate transformation mode 'centre'}}
  %0 = kiln.resize %x {coordinate_mode = "centre", scales = array<f64: 1.0, 2.0>} : tensor<2x3xf32> -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

func.func @resize_nearest_mode(%x: tensor<2x3xf32>) -> tensor<2x6xf32> {
  // expected-error @+1 {{'kiln.resize' op unknown nearest mode 'round'}}
  %0 = kiln.resize %x {nearest_mode = "round", scales = array<f64: 1.0, 2.0>} : tensor<2x3xf32> -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

func.func @resize_linear_ints(%x: tensor<2x3xi32>) -> tensor<2x6xi32> {
  // expected-error @+1 {{'kiln.resize' op mode 'linear' needs floating-point data}}
  %0 = kiln.resize %x {mode = "linear", scales = array<f64: 1.0, 2.0>} : tensor<2x3xi32> -> tensor<2x6xi32>
  return %0 : tensor<2x6xi32>
}

// -----

func.func @resize_rank(%x: tensor<2x3xf32>) -> tensor<6xf32> {
  // expected-error @+1 {{'kiln.resize' op the result must have the input's rank and element type}}
  %0 = kiln.resize %x {scales = array<f64: 1.0, 2.0>} : tensor<2x3xf32> -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

func.func @resize_scales(%x: tensor<2x3xf32>) -> tensor<2x6xf32> {
  // expected-error @+1 {{'kiln.resize' op scales must have one value per dimension (2), got 1}}
  %0 = kiln.resize %x {scales = array<f64: 2.0>} : tensor<2x3xf32> -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

func.func @resize_negative_scale(%x: tensor<2x3xf32>) -> tensor<2x6xf32> {
  // expected-error @+1 {{'kiln.resize' op scales must be positive and finite}}
  %0 = kiln.resize %x {scales = array<f64: 1.0, -2.0>} : tensor<2x3xf32> -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

func.func @resize_roi(%x: tensor<2x3xf32>) -> tensor<2x6xf32> {
  // expected-error @+1 {{'kiln.resize' op 'tf_crop_and_resize' needs an roi of 2 values per dimension}}
  %0 = kiln.resize %x {coordinate_mode = "tf_crop_and_resize", scales = array<f64: 1.0, 2.0>} : tensor<2x3xf32> -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

func.func @cumsum_axis(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'kiln.cumsum' op axis 2 is out of range for rank 2}}
  %0 = kiln.cumsum %x {axis = 2 : i64} : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @scatter_elements_shapes(%x: tensor<3x4xf32>, %i: tensor<3x2xi64>, %u: tensor<3x3xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'kiln.scatter_elements' op indices [3x2] and updates [3x3] must have one shape, of data's rank (2)}}
  %0 = kiln.scatter_elements %x, %i, %u {axis = 1 : i64} : (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x3xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @scatter_elements_longer(%x: tensor<3x4xf32>, %i: tensor<4x2xi64>, %u: tensor<4x2xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'kiln.scatter_elements' op indices dimension 0 (4) is longer than data's (3)}}
  %0 = kiln.scatter_elements %x, %i, %u {axis = 1 : i64} : (tensor<3x4xf32>, tensor<4x2xi64>, tensor<4x2xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @scatter_elements_reduction(%x: tensor<3x4xf32>, %i: tensor<3x2xi64>, %u: tensor<3x2xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'kiln.scatter_elements' op unknown reduction 'mean' (none, add, mul, max, min)}}
  %0 = kiln.scatter_elements %x, %i, %u {axis = 1 : i64, reduction = "mean"} : (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @scatter_elements_axis(%x: tensor<3x4xf32>, %i: tensor<3x2xi64>, %u: tensor<3x2xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'kiln.scatter_elements' op axis 2 is out of range for rank 2}}
  %0 = kiln.scatter_elements %x, %i, %u {axis = 2 : i64} : (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @scatter_elements_type(%x: tensor<3x4xf32>, %i: tensor<3x2xi64>, %u: tensor<3x2xi32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'kiln.scatter_elements' op updates must have data's element type}}
  %0 = kiln.scatter_elements %x, %i, %u {axis = 1 : i64} : (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xi32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @scatter_nd_depth(%x: tensor<3x4xf32>, %i: tensor<2x3xi64>, %u: tensor<2xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'kiln.scatter_nd' op the last dimension of indices [2x3] must index 1 to 2 dimensions of data}}
  %0 = kiln.scatter_nd %x, %i, %u : (tensor<3x4xf32>, tensor<2x3xi64>, tensor<2xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @scatter_nd_updates(%x: tensor<3x4xf32>, %i: tensor<2x1xi64>, %u: tensor<2x3xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'kiln.scatter_nd' op updates must be [2x4], got [2x3]}}
  %0 = kiln.scatter_nd %x, %i, %u : (tensor<3x4xf32>, tensor<2x1xi64>, tensor<2x3xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @scatter_nd_reduction(%x: tensor<3x4xf32>, %i: tensor<2x1xi64>, %u: tensor<2x4xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{'kiln.scatter_nd' op unknown reduction 'or' (none, add, mul, max, min)}}
  %0 = kiln.scatter_nd %x, %i, %u {reduction = "or"} : (tensor<3x4xf32>, tensor<2x1xi64>, tensor<2x4xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @einsum_operands(%x: tensor<3x4xf32>) -> tensor<3xf32> {
  // expected-error @+2 {{equation 'ij,jk->i': the equation names 2 operands, but there are 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.einsum %x {equation = "ij,jk->i"} : (tensor<3x4xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @einsum_rank(%x: tensor<3x4xf32>) -> tensor<3xf32> {
  // expected-error @+2 {{equation 'ijk->i': 'ijk' does not fit operand 0 of rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.einsum %x {equation = "ijk->i"} : (tensor<3x4xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @einsum_sizes(%x: tensor<3x4xf32>, %y: tensor<5x2xf32>) -> tensor<3x2xf32> {
  // expected-error @+2 {{equation 'ij,jk->ik': dimension 0 of operand 1 (size 5) does not match the size 4 of its label elsewhere}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.einsum %x, %y {equation = "ij,jk->ik"} : (tensor<3x4xf32>, tensor<5x2xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @einsum_result_label(%x: tensor<3x4xf32>) -> tensor<3xf32> {
  // expected-error @+2 {{equation 'ij->z': result label 'z' is not an operand's, or appears twice}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.einsum %x {equation = "ij->z"} : (tensor<3x4xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @einsum_character(%x: tensor<3x4xf32>) -> tensor<3xf32> {
  // expected-error @+2 {{equation 'i1->i': unexpected '1' in 'i1'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.einsum %x {equation = "i1->i"} : (tensor<3x4xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @grid_sample_shapes(%x: tensor<1x3x8x8xf32>, %g: tensor<1x4x4x3xf32>) -> tensor<1x3x4x4xf32> {
  // expected-error @+2 {{needs an input [N, C, H, W] and a grid [N, Ho, Wo, 2], got [1x3x8x8] and [1x4x4x3]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.grid_sample %x, %g : (tensor<1x3x8x8xf32>, tensor<1x4x4x3xf32>) -> tensor<1x3x4x4xf32>
  return %0 : tensor<1x3x4x4xf32>
}

// -----

func.func @grid_sample_mode(%x: tensor<1x3x8x8xf32>, %g: tensor<1x4x4x2xf32>) -> tensor<1x3x4x4xf32> {
  // expected-error @+1 {{'kiln.grid_sample' op unknown mode 'area' (nearest, bilinear, bicubic)}}
  %0 = kiln.grid_sample %x, %g {mode = "area"} : (tensor<1x3x8x8xf32>, tensor<1x4x4x2xf32>) -> tensor<1x3x4x4xf32>
  return %0 : tensor<1x3x4x4xf32>
}

// -----

func.func @grid_sample_padding(%x: tensor<1x3x8x8xf32>, %g: tensor<1x4x4x2xf32>) -> tensor<1x3x4x4xf32> {
  // expected-error @+1 {{'kiln.grid_sample' op unknown padding mode 'wrap' (zeros, border, reflection)}}
  %0 = kiln.grid_sample %x, %g {padding_mode = "wrap"} : (tensor<1x3x8x8xf32>, tensor<1x4x4x2xf32>) -> tensor<1x3x4x4xf32>
  return %0 : tensor<1x3x4x4xf32>
}

// -----

func.func @grid_sample_grid_type(%x: tensor<1x3x8x8xf32>, %g: tensor<1x4x4x2xf64>) -> tensor<1x3x4x4xf32> {
  // expected-error @+1 {{'kiln.grid_sample' op the grid must have the input's element type}}
  %0 = kiln.grid_sample %x, %g : (tensor<1x3x8x8xf32>, tensor<1x4x4x2xf64>) -> tensor<1x3x4x4xf32>
  return %0 : tensor<1x3x4x4xf32>
}

// -----

func.func @shift_of_floats(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{operand #0 must be ranked tensor of 8-bit signless integer or 16-bit signless integer or 32-bit signless integer or 64-bit signless integer values}}
  %0 = kiln.shift_left %a, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @topk_k_too_large(%x: tensor<2x4xf32>) -> tensor<2x5xi64> {
  // expected-error @+2 {{k = 5 must be between 1 and the extent of axis 1 (4)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.topk %x {axis = 1 : i64, k = 5 : i64} : (tensor<2x4xf32>) -> tensor<2x5xi64>
  return %0 : tensor<2x5xi64>
}

// -----

func.func @blocked_conv_rank(%x: tensor<1x32x7x7xf32>, %w: tensor<16x32x1x1xf32>) -> tensor<1x1x7x7x16xf32> {
  // expected-error @+2 {{input must be 5-D in blocks of 16 channels (N x C/16 x H x W x 16), or NCHW with fewer than 16 channels, got 'tensor<1x32x7x7xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.blocked_conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x32x7x7xf32>, tensor<16x32x1x1xf32>) -> tensor<1x1x7x7x16xf32>
  return %0 : tensor<1x1x7x7x16xf32>
}

// -----

// The block is 8 or 16 channels.
func.func @blocked_conv_block(%x: tensor<1x8x7x7x4xf32>, %w: tensor<32x32x1x1xf32>) -> tensor<1x8x7x7x4xf32> {
  // expected-error @+2 {{block must be 8 or 16 channels, got 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.blocked_conv %x, %w {block = 4 : i64, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x8x7x7x4xf32>, tensor<32x32x1x1xf32>) -> tensor<1x8x7x7x4xf32>
  return %0 : tensor<1x8x7x7x4xf32>
}

// -----

// An image in blocks of 8 is not one in blocks of 16, the default.
func.func @blocked_conv_block_mismatch(%x: tensor<1x4x7x7x8xf32>, %w: tensor<32x32x1x1xf32>) -> tensor<1x4x7x7x8xf32> {
  // expected-error @+2 {{input must be 5-D in blocks of 16 channels (N x C/16 x H x W x 16), or NCHW with fewer than 16 channels, got 'tensor<1x4x7x7x8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.blocked_conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x7x7x8xf32>, tensor<32x32x1x1xf32>) -> tensor<1x4x7x7x8xf32>
  return %0 : tensor<1x4x7x7x8xf32>
}

// -----

func.func @blocked_conv_channels(%x: tensor<1x2x7x7x16xf32>, %w: tensor<16x40x1x1xf32>) -> tensor<1x1x7x7x16xf32> {
  // expected-error @+2 {{filter [16x40x1x1] with group = 1 reads 40 channels, not the 2 blocks of 16 of 'tensor<1x2x7x7x16xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.blocked_conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x7x7x16xf32>, tensor<16x40x1x1xf32>) -> tensor<1x1x7x7x16xf32>
  return %0 : tensor<1x1x7x7x16xf32>
}

// -----

func.func @blocked_conv_groups(%x: tensor<1x2x7x7x16xf32>, %w: tensor<32x16x1x1xf32>) -> tensor<1x2x7x7x16xf32> {
  // expected-error @+2 {{a grouped blocked convolution must be depthwise (group = channels = filters), got group 2 with 32 channels and 32 filters}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.blocked_conv %x, %w {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x7x7x16xf32>, tensor<32x16x1x1xf32>) -> tensor<1x2x7x7x16xf32>
  return %0 : tensor<1x2x7x7x16xf32>
}

// -----

func.func @blocked_conv_clamp(%x: tensor<1x1x7x7x16xf32>, %w: tensor<16x16x1x1xf32>) -> tensor<1x1x7x7x16xf32> {
  // expected-error @+2 {{clamp_min 6.000000e+00 : f32 exceeds clamp_max 0.000000e+00 : f32}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.blocked_conv %x, %w {clamp_min = 6.0 : f32, clamp_max = 0.0 : f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x7x7x16xf32>, tensor<16x16x1x1xf32>) -> tensor<1x1x7x7x16xf32>
  return %0 : tensor<1x1x7x7x16xf32>
}

// -----

func.func @blocked_conv_addend(%x: tensor<1x1x7x7x16xf32>, %w: tensor<32x16x1x1xf32>, %r: tensor<1x1x7x7x16xf32>) -> tensor<1x2x7x7x16xf32> {
  // expected-error @+2 {{addend 'tensor<1x1x7x7x16xf32>' is not the result's type 'tensor<1x2x7x7x16xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.blocked_conv %x, %w add %r {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x7x7x16xf32>, tensor<32x16x1x1xf32>, tensor<1x1x7x7x16xf32>) -> tensor<1x2x7x7x16xf32>
  return %0 : tensor<1x2x7x7x16xf32>
}

// -----

func.func @blocked_conv_dest(%x: tensor<1x1x7x7x16xf32>, %w: tensor<32x16x1x1xf32>, %d: tensor<2x2x7x7x16xf32>) -> tensor<1x2x7x7x16xf32> {
  // expected-error @+2 {{dest 'tensor<2x2x7x7x16xf32>' is not the result's type 'tensor<1x2x7x7x16xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.blocked_conv %x, %w into %d {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x7x7x16xf32>, tensor<32x16x1x1xf32>, tensor<2x2x7x7x16xf32>) -> tensor<1x2x7x7x16xf32>
  return %0 : tensor<1x2x7x7x16xf32>
}

// -----

func.func @blocked_conv_addend_and_dest(%x: tensor<1x1x7x7x16xf32>, %w: tensor<16x16x1x1xf32>, %r: tensor<1x1x7x7x16xf32>) -> tensor<1x1x7x7x16xf32> {
  // expected-error @+2 {{takes an addend or a dest, not both}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.blocked_conv %x, %w add %r into %r {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x7x7x16xf32>, tensor<16x16x1x1xf32>, tensor<1x1x7x7x16xf32>, tensor<1x1x7x7x16xf32>) -> tensor<1x1x7x7x16xf32>
  return %0 : tensor<1x1x7x7x16xf32>
}

// -----

func.func @blocked_conv_plain_groups(%x: tensor<1x4x7x7xf32>, %w: tensor<16x2x1x1xf32>) -> tensor<1x1x7x7x16xf32> {
  // expected-error @+2 {{filter [16x2x1x1] with group = 2 does not convolve the 4 channels of NCHW 'tensor<1x4x7x7xf32>' in one group}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = kiln.blocked_conv %x, %w {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x7x7xf32>, tensor<16x2x1x1xf32>) -> tensor<1x1x7x7x16xf32>
  return %0 : tensor<1x1x7x7x16xf32>
}
