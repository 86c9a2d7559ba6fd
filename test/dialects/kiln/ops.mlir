// RUN: kiln-opt %s -split-input-file | kiln-opt -split-input-file | FileCheck %s
// RUN: kiln-opt %s -split-input-file -mlir-print-op-generic | kiln-opt -split-input-file | FileCheck %s

// Every op parses, verifies and prints back in its custom form.

// CHECK-LABEL: func @constant
func.func @constant() -> (tensor<2xf32>, tensor<i64>) {
  // CHECK: kiln.constant dense<[1.000000e+00, 2.000000e+00]> : tensor<2xf32>
  %0 = kiln.constant dense<[1.0, 2.0]> : tensor<2xf32>
  // CHECK: kiln.constant dense<7> : tensor<i64>
  %1 = kiln.constant dense<7> : tensor<i64>
  return %0, %1 : tensor<2xf32>, tensor<i64>
}

// -----

// CHECK-LABEL: func @unary
func.func @unary(%x: tensor<3x4xf32>, %h: tensor<8xf16>, %b: tensor<2xi1>) -> (tensor<3x4xf32>, tensor<8xf16>, tensor<2xi1>, tensor<3x4xi1>) {
  // CHECK: kiln.abs %{{.*}} : tensor<3x4xf32>
  %0 = kiln.abs %x : tensor<3x4xf32>
  // CHECK: kiln.exp
  %1 = kiln.exp %0 : tensor<3x4xf32>
  // CHECK: kiln.sigmoid
  %2 = kiln.sigmoid %1 : tensor<3x4xf32>
  // CHECK: kiln.erf
  %3 = kiln.erf %2 : tensor<3x4xf32>
  // CHECK: kiln.leaky_relu %{{.*}} {alpha = 1.000000e-01 : f32} : tensor<3x4xf32>
  %4 = kiln.leaky_relu %3 {alpha = 0.1 : f32} : tensor<3x4xf32>
  // CHECK: kiln.tanh %{{.*}} : tensor<8xf16>
  %5 = kiln.tanh %h : tensor<8xf16>
  // CHECK: kiln.not %{{.*}} : tensor<2xi1>
  %6 = kiln.not %b : tensor<2xi1>
  // CHECK: kiln.is_inf %{{.*}} {detect_positive = false} : tensor<3x4xf32> -> tensor<3x4xi1>
  %7 = kiln.is_inf %4 {detect_positive = false} : tensor<3x4xf32> -> tensor<3x4xi1>
  return %4, %5, %6, %7 : tensor<3x4xf32>, tensor<8xf16>, tensor<2xi1>, tensor<3x4xi1>
}

// -----

// CHECK-LABEL: func @broadcast_binary
func.func @broadcast_binary(%a: tensor<3x4x5xf32>, %b: tensor<5xf32>, %c: tensor<4x1xi64>, %d: tensor<3x1x6xi64>) -> (tensor<3x4x5xf32>, tensor<3x4x6xi64>, tensor<3x4x5xi1>) {
  // CHECK: kiln.add %{{.*}}, %{{.*}} : (tensor<3x4x5xf32>, tensor<5xf32>) -> tensor<3x4x5xf32>
  %0 = kiln.add %a, %b : (tensor<3x4x5xf32>, tensor<5xf32>) -> tensor<3x4x5xf32>
  // CHECK: kiln.pow
  %1 = kiln.pow %0, %b : (tensor<3x4x5xf32>, tensor<5xf32>) -> tensor<3x4x5xf32>
  // CHECK: kiln.div %{{.*}}, %{{.*}} : (tensor<4x1xi64>, tensor<3x1x6xi64>) -> tensor<3x4x6xi64>
  %2 = kiln.div %c, %d : (tensor<4x1xi64>, tensor<3x1x6xi64>) -> tensor<3x4x6xi64>
  // CHECK: kiln.less_equal {{.*}} -> tensor<3x4x5xi1>
  %3 = kiln.less_equal %1, %b : (tensor<3x4x5xf32>, tensor<5xf32>) -> tensor<3x4x5xi1>
  // CHECK: kiln.mod %{{.*}}, %{{.*}} {fmod = true}
  %4 = kiln.mod %1, %0 {fmod = true} : (tensor<3x4x5xf32>, tensor<3x4x5xf32>) -> tensor<3x4x5xf32>
  return %4, %2, %3 : tensor<3x4x5xf32>, tensor<3x4x6xi64>, tensor<3x4x5xi1>
}

// -----

// CHECK-LABEL: func @where_cast
func.func @where_cast(%c: tensor<2x1xi1>, %x: tensor<2x3xf32>, %y: tensor<f32>) -> tensor<2x3xbf16> {
  // CHECK: kiln.where %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x1xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  %0 = kiln.where %c, %x, %y : (tensor<2x1xi1>, tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
  // CHECK: kiln.cast %{{.*}} : tensor<2x3xf32> -> tensor<2x3xbf16>
  %1 = kiln.cast %0 : tensor<2x3xf32> -> tensor<2x3xbf16>
  return %1 : tensor<2x3xbf16>
}

// -----

// Integer tensors are signless; ops read them as unsigned where marked.
// CHECK-LABEL: func @unsigned
func.func @unsigned(%a: tensor<4xi8>, %b: tensor<4xi8>) -> (tensor<4xi8>, tensor<4xi1>, tensor<4xf32>, tensor<4xi8>) {
  // CHECK: kiln.div %{{.*}}, %{{.*}} {is_unsigned} : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  %0 = kiln.div %a, %b {is_unsigned} : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  // CHECK: kiln.less_equal %{{.*}}, %{{.*}} {is_unsigned} : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi1>
  %1 = kiln.less_equal %a, %b {is_unsigned} : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi1>
  // CHECK: kiln.cast %{{.*}} {unsigned_input} : tensor<4xi8> -> tensor<4xf32>
  %2 = kiln.cast %a {unsigned_input} : tensor<4xi8> -> tensor<4xf32>
  // CHECK: kiln.shift_right %{{.*}}, %{{.*}} : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  %3 = kiln.shift_right %a, %b : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  return %0, %1, %2, %3 : tensor<4xi8>, tensor<4xi1>, tensor<4xf32>, tensor<4xi8>
}

// -----

// CHECK-LABEL: func @topk
func.func @topk(%x: tensor<2x10xf32>) -> tensor<2x3xi64> {
  // CHECK: kiln.topk %{{.*}} {axis = 1 : i64, k = 3 : i64, largest = false} : (tensor<2x10xf32>) -> tensor<2x3xi64>
  %0 = kiln.topk %x {axis = 1 : i64, k = 3 : i64, largest = false} : (tensor<2x10xf32>) -> tensor<2x3xi64>
  return %0 : tensor<2x3xi64>
}

// -----

// CHECK-LABEL: func @contractions
func.func @contractions(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>, %m: tensor<4x3xf32>, %n: tensor<5x4xf32>, %c: tensor<5xf32>) -> (tensor<2x3x5xf32>, tensor<3x5xf32>) {
  // CHECK: kiln.matmul %{{.*}}, %{{.*}} : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  %0 = kiln.matmul %a, %b : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  // CHECK: kiln.gemm %{{.*}}, %{{.*}}, %{{.*}} {alpha = 2.500000e-01 : f32, trans_a = true, trans_b = true}
  %1 = kiln.gemm %m, %n, %c {alpha = 0.25 : f32, trans_a = true, trans_b = true} : (tensor<4x3xf32>, tensor<5x4xf32>, tensor<5xf32>) -> tensor<3x5xf32>
  return %0, %1 : tensor<2x3x5xf32>, tensor<3x5xf32>
}

// -----

// CHECK-LABEL: func @conv_pool
func.func @conv_pool(%x: tensor<1x4x7x5xf32>, %w: tensor<6x2x3x3xf32>, %bias: tensor<6xf32>) -> (tensor<1x6x4x3xf32>, tensor<1x4x3x2xf32>, tensor<1x4x9x7xf32>) {
  // CHECK: kiln.conv %{{.*}}, %{{.*}}, %{{.*}} {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}
  %0 = kiln.conv %x, %w, %bias {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x4x7x5xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<1x6x4x3xf32>
  // CHECK: kiln.max_pool
  %1 = kiln.max_pool %x {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x4x7x5xf32>) -> tensor<1x4x3x2xf32>
  // CHECK: kiln.average_pool
  %2 = kiln.average_pool %x {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 2, 2, 2, 2>, strides = array<i64: 1, 1>} : (tensor<1x4x7x5xf32>) -> tensor<1x4x9x7xf32>
  return %0, %1, %2 : tensor<1x6x4x3xf32>, tensor<1x4x3x2xf32>, tensor<1x4x9x7xf32>
}

// -----

// CHECK-LABEL: func @reductions
func.func @reductions(%x: tensor<3x4x5xf32>) -> (tensor<3x5xf32>, tensor<1x1x5xf32>, tensor<3x1x5xi64>, tensor<3x4x5xf32>) {
  // CHECK: kiln.reduce_mean %{{.*}} {axes = array<i64: 1>, keepdims = false} : (tensor<3x4x5xf32>) -> tensor<3x5xf32>
  %0 = kiln.reduce_mean %x {axes = array<i64: 1>, keepdims = false} : (tensor<3x4x5xf32>) -> tensor<3x5xf32>
  // CHECK: kiln.reduce_max %{{.*}} {axes = array<i64: 0, 1>}
  %1 = kiln.reduce_max %x {axes = array<i64: 0, 1>} : (tensor<3x4x5xf32>) -> tensor<1x1x5xf32>
  // CHECK: kiln.argmax %{{.*}} {axis = 1 : i64} : (tensor<3x4x5xf32>) -> tensor<3x1x5xi64>
  %2 = kiln.argmax %x {axis = 1 : i64} : (tensor<3x4x5xf32>) -> tensor<3x1x5xi64>
  // CHECK: kiln.log_softmax %{{.*}} {axis = 2 : i64} : tensor<3x4x5xf32>
  %3 = kiln.log_softmax %x {axis = 2 : i64} : tensor<3x4x5xf32>
  return %0, %1, %2, %3 : tensor<3x5xf32>, tensor<1x1x5xf32>, tensor<3x1x5xi64>, tensor<3x4x5xf32>
}

// -----

// CHECK-LABEL: func @normalization
func.func @normalization(%x: tensor<2x3x4x5xf32>, %c: tensor<3xf32>, %s: tensor<4x5xf32>) -> (tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>, tensor<2x3x1x1xf32>) {
  // CHECK: kiln.batch_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 1.000000e-03 : f32}
  %0 = kiln.batch_norm %x, %c, %c, %c, %c {epsilon = 1.0e-3 : f32} : (tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4x5xf32>
  // CHECK: %{{.*}}, %{{.*}}, %{{.*}} = kiln.layer_norm %{{.*}}, %{{.*}}, %{{.*}} {axis = 2 : i64}
  %y, %mean, %inv = kiln.layer_norm %x, %s, %s {axis = 2 : i64} : (tensor<2x3x4x5xf32>, tensor<4x5xf32>, tensor<4x5xf32>) -> (tensor<2x3x4x5xf32>, tensor<2x3x1x1xf32>, tensor<2x3x1x1xf32>)
  return %0, %y, %mean : tensor<2x3x4x5xf32>, tensor<2x3x4x5xf32>, tensor<2x3x1x1xf32>
}

// -----

// CHECK-LABEL: func @batch_norm_training
func.func @batch_norm_training(%x: tensor<2x3x4x5xf32>, %c: tensor<3xf32>) -> (tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>) {
  // CHECK: %{{.*}}, %{{.*}}, %{{.*}} = kiln.batch_norm_training %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 1.000000e-03 : f32} : (tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>)
  %y, %m, %v = kiln.batch_norm_training %x, %c, %c {epsilon = 1.0e-3 : f32} : (tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>)
  return %y, %m, %v : tensor<2x3x4x5xf32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// CHECK-LABEL: func @data_movement
func.func @data_movement(%x: tensor<2x3x4xf32>, %i: tensor<5xi64>) -> (tensor<6x4xf32>, tensor<4x3x2xf32>, tensor<4x3x4xf32>, tensor<2x2x4xf32>, tensor<5x3x4xf32>, tensor<2x2x3x4xf32>) {
  // CHECK: kiln.reshape %{{.*}} : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %0 = kiln.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  // CHECK: kiln.transpose %{{.*}} {perm = array<i64: 2, 1, 0>}
  %1 = kiln.transpose %x {perm = array<i64: 2, 1, 0>} : (tensor<2x3x4xf32>) -> tensor<4x3x2xf32>
  // CHECK: kiln.concat %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<4x3x4xf32>
  %2 = kiln.concat %x, %x {axis = 0 : i64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<4x3x4xf32>
  // CHECK: kiln.slice %{{.*}} {start = array<i64: 0, 2, 0>, step = array<i64: 1, -1, 1>} : tensor<2x3x4xf32> -> tensor<2x2x4xf32>
  %3 = kiln.slice %x {start = array<i64: 0, 2, 0>, step = array<i64: 1, -1, 1>} : tensor<2x3x4xf32> -> tensor<2x2x4xf32>
  // CHECK: kiln.gather %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<2x3x4xf32>, tensor<5xi64>) -> tensor<5x3x4xf32>
  %4 = kiln.gather %x, %i {axis = 0 : i64} : (tensor<2x3x4xf32>, tensor<5xi64>) -> tensor<5x3x4xf32>
  // CHECK: kiln.expand %{{.*}} : tensor<2x3x4xf32> -> tensor<2x2x3x4xf32>
  %5 = kiln.expand %x : tensor<2x3x4xf32> -> tensor<2x2x3x4xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<6x4xf32>, tensor<4x3x2xf32>, tensor<4x3x4xf32>, tensor<2x2x4xf32>, tensor<5x3x4xf32>, tensor<2x2x3x4xf32>
}

// -----

// CHECK-LABEL: func @shape_sugar
func.func @shape_sugar(%x: tensor<1x3x1xi8>) -> (tensor<3xi8>, tensor<1x1x3x1xi8>, tensor<1x3xi8>, tensor<1x3x1xi8>) {
  // CHECK: kiln.squeeze %{{.*}} {axes = array<i64: 0, 2>} : (tensor<1x3x1xi8>) -> tensor<3xi8>
  %0 = kiln.squeeze %x {axes = array<i64: 0, 2>} : (tensor<1x3x1xi8>) -> tensor<3xi8>
  // CHECK: kiln.unsqueeze %{{.*}} {axes = array<i64: 0>} : (tensor<1x3x1xi8>) -> tensor<1x1x3x1xi8>
  %1 = kiln.unsqueeze %x {axes = array<i64: 0>} : (tensor<1x3x1xi8>) -> tensor<1x1x3x1xi8>
  // CHECK: kiln.flatten %{{.*}} {axis = 1 : i64} : (tensor<1x3x1xi8>) -> tensor<1x3xi8>
  %2 = kiln.flatten %x {axis = 1 : i64} : (tensor<1x3x1xi8>) -> tensor<1x3xi8>
  // CHECK: kiln.trilu %{{.*}} {k = 1 : i64} : tensor<1x3x1xi8>
  %3 = kiln.trilu %x {k = 1 : i64} : tensor<1x3x1xi8>
  return %0, %1, %2, %3 : tensor<3xi8>, tensor<1x1x3x1xi8>, tensor<1x3xi8>, tensor<1x3x1xi8>
}

// -----

// CHECK-LABEL: func.func @dropout
// CHECK: kiln.dropout %{{.*}}, %{{.*}} {ratio = 1.000000e-01 : f32, seed = 7 : i64} : (tensor<8x64xf32>, tensor<i64>) -> tensor<8x64xf32>
// CHECK: kiln.dropout %{{.*}} {ratio = 5.000000e-01 : f32} : (tensor<8x64xf32>) -> tensor<8x64xf32>
func.func @dropout(%x: tensor<8x64xf32>, %step: tensor<i64>) -> (tensor<8x64xf32>, tensor<8x64xf32>) {
  %a = kiln.dropout %x, %step {ratio = 0.1 : f32, seed = 7 : i64} : (tensor<8x64xf32>, tensor<i64>) -> tensor<8x64xf32>
  %b = kiln.dropout %x {ratio = 0.5 : f32} : (tensor<8x64xf32>) -> tensor<8x64xf32>
  return %a, %b : tensor<8x64xf32>, tensor<8x64xf32>
}

// -----

// CHECK-LABEL: func.func @collectives
// CHECK: kiln.all_reduce %{{.*}} : tensor<2x3xf32>
// CHECK: %[[T:.*]] = kiln.all_reduce_start %{{.*}} {bucket = 2 : i64} : tensor<6xf32>
// CHECK: kiln.all_reduce_wait %[[T]] {bucket = 2 : i64} : tensor<6xf32>
// CHECK: kiln.world_size : tensor<f32>
// CHECK: %[[R:.*]] = kiln.replica_rank : tensor<i64>
// CHECK: kiln.dropout %{{.*}}, %{{.*}} offset %[[R]] {ratio = 5.000000e-01 : f32} : (tensor<6xf32>, tensor<i64>, tensor<i64>) -> tensor<6xf32>
func.func @collectives(%g: tensor<2x3xf32>, %b: tensor<6xf32>) -> (tensor<2x3xf32>, tensor<6xf32>, tensor<f32>, tensor<6xf32>) {
  %s = kiln.all_reduce %g : tensor<2x3xf32>
  %t = kiln.all_reduce_start %b {bucket = 2 : i64} : tensor<6xf32>
  %r = kiln.all_reduce_wait %t {bucket = 2 : i64} : tensor<6xf32>
  %n = kiln.world_size : tensor<f32>
  %rank = kiln.replica_rank : tensor<i64>
  %d = kiln.dropout %b, %rank offset %rank {ratio = 0.5 : f32} : (tensor<6xf32>, tensor<i64>, tensor<i64>) -> tensor<6xf32>
  return %s, %r, %n, %d : tensor<2x3xf32>, tensor<6xf32>, tensor<f32>, tensor<6xf32>
}

// -----

// CHECK-LABEL: func @resampling
// CHECK: kiln.gather_nd %arg0, %arg1 {batch_dims = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x5x1xi64>) -> tensor<2x5x4xf32>
// CHECK: kiln.pad %arg0 {mode = "reflect", pads = array<i64: 0, 1, 2, 0, 1, 2>} : tensor<2x3x4xf32> -> tensor<2x5x8xf32>
// CHECK: kiln.pad %arg0, %arg2 : tensor<f32> {pads = array<i64: 0, 0, -1, 0, 0, 1>} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
// CHECK: kiln.resize %arg0 {coordinate_mode = "align_corners", mode = "cubic", scales = array<f64: 1.000000e+00, 1.000000e+00, 2.000000e+00>} : tensor<2x3x4xf32> -> tensor<2x3x8xf32>
// CHECK: kiln.cumsum %arg0 {axis = 2 : i64, exclusive = true} : tensor<2x3x4xf32>
func.func @resampling(%x: tensor<2x3x4xf32>, %i: tensor<2x5x1xi64>, %v: tensor<f32>) -> (tensor<2x5x4xf32>, tensor<2x5x8xf32>, tensor<2x3x4xf32>, tensor<2x3x8xf32>, tensor<2x3x4xf32>) {
  %0 = kiln.gather_nd %x, %i {batch_dims = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x5x1xi64>) -> tensor<2x5x4xf32>
  %1 = kiln.pad %x {pads = array<i64: 0, 1, 2, 0, 1, 2>, mode = "reflect"} : tensor<2x3x4xf32> -> tensor<2x5x8xf32>
  %2 = kiln.pad %x, %v : tensor<f32> {pads = array<i64: 0, 0, -1, 0, 0, 1>} : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  %3 = kiln.resize %x {mode = "cubic", coordinate_mode = "align_corners", scales = array<f64: 1.0, 1.0, 2.0>} : tensor<2x3x4xf32> -> tensor<2x3x8xf32>
  %4 = kiln.cumsum %x {axis = 2 : i64, exclusive = true} : tensor<2x3x4xf32>
  return %0, %1, %2, %3, %4 : tensor<2x5x4xf32>, tensor<2x5x8xf32>, tensor<2x3x4xf32>, tensor<2x3x8xf32>, tensor<2x3x4xf32>
}

// -----

// CHECK-LABEL: func @scatter_and_einsum
// CHECK: kiln.scatter_elements %arg0, %arg1, %arg2 {axis = 1 : i64, reduction = "add"} : (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x4xf32>
// CHECK: kiln.scatter_nd %arg0, %arg3, %arg4 : (tensor<3x4xf32>, tensor<2x1xi64>, tensor<2x4xf32>) -> tensor<3x4xf32>
// CHECK: kiln.einsum %arg0, %arg5 {equation = "ij,jk->ik"} : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
func.func @scatter_and_einsum(%x: tensor<3x4xf32>, %i: tensor<3x2xi64>, %u: tensor<3x2xf32>, %rows: tensor<2x1xi64>, %slices: tensor<2x4xf32>, %w: tensor<4x5xf32>) -> (tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x5xf32>) {
  %0 = kiln.scatter_elements %x, %i, %u {axis = 1 : i64, reduction = "add"} : (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x4xf32>
  %1 = kiln.scatter_nd %x, %rows, %slices : (tensor<3x4xf32>, tensor<2x1xi64>, tensor<2x4xf32>) -> tensor<3x4xf32>
  %2 = kiln.einsum %x, %w {equation = "ij,jk->ik"} : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  return %0, %1, %2 : tensor<3x4xf32>, tensor<3x4xf32>, tensor<3x5xf32>
}

// -----

// CHECK-LABEL: func @grid_sample
// CHECK: kiln.grid_sample %arg0, %arg1 {align_corners = true, mode = "bicubic", padding_mode = "reflection"} : (tensor<1x1x3x4xf32>, tensor<1x2x2x2xf32>) -> tensor<1x1x2x2xf32>
func.func @grid_sample(%x: tensor<1x1x3x4xf32>, %g: tensor<1x2x2x2xf32>) -> tensor<1x1x2x2xf32> {
  %0 = kiln.grid_sample %x, %g {mode = "bicubic", padding_mode = "reflection", align_corners = true} : (tensor<1x1x3x4xf32>, tensor<1x2x2x2xf32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

// -----

// CHECK-LABEL: func @blocked_conv
// CHECK: kiln.blocked_conv %arg0, %arg1, %arg2 add %arg3 {clamp_min = 0.000000e+00 : f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
// CHECK: kiln.blocked_conv %arg0, %arg1 into %arg3 {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}
func.func @blocked_conv(%x: tensor<1x1x7x7x16xf32>, %w: tensor<16x16x1x1xf32>, %b: tensor<16xf32>, %r: tensor<1x1x7x7x16xf32>) -> (tensor<1x1x7x7x16xf32>, tensor<1x1x7x7x16xf32>) {
  %0 = kiln.blocked_conv %x, %w, %b add %r {clamp_min = 0.0 : f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x7x7x16xf32>, tensor<16x16x1x1xf32>, tensor<16xf32>, tensor<1x1x7x7x16xf32>) -> tensor<1x1x7x7x16xf32>
  %1 = kiln.blocked_conv %x, %w into %r {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x7x7x16xf32>, tensor<16x16x1x1xf32>, tensor<1x1x7x7x16xf32>) -> tensor<1x1x7x7x16xf32>
  return %0, %1 : tensor<1x1x7x7x16xf32>, tensor<1x1x7x7x16xf32>
}

// Blocks of 8 channels (AVX2's vectors): the attribute round-trips, and a
// blocked pool keeps the input's block.
// CHECK-LABEL: func @blocks_of_8
// CHECK: kiln.blocked_conv %arg0, %arg1 {block = 8 : i64, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x7x7xf32>, tensor<20x3x1x1xf32>) -> tensor<1x3x7x7x8xf32>
// CHECK: kiln.max_pool %{{.*}} : (tensor<1x3x7x7x8xf32>) -> tensor<1x3x3x3x8xf32>
func.func @blocks_of_8(%x: tensor<1x3x7x7xf32>, %w: tensor<20x3x1x1xf32>) -> tensor<1x3x3x3x8xf32> {
  %0 = kiln.blocked_conv %x, %w {block = 8 : i64, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x7x7xf32>, tensor<20x3x1x1xf32>) -> tensor<1x3x7x7x8xf32>
  %1 = kiln.max_pool %0 {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x3x7x7x8xf32>) -> tensor<1x3x3x3x8xf32>
  return %1 : tensor<1x3x3x3x8xf32>
}
