// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-blocked-layout,canonicalize))' | FileCheck %s
// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-blocked-layout{everywhere=true},canonicalize))' | FileCheck %s --check-prefix=ALL
// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-blocked-layout{block=8},canonicalize))' | FileCheck %s --check-prefix=B8

// A chain: each convolution takes the one before it's blocked image, the
// first one's input is reordered once and the last one's result reordered
// back; the Relu becomes the first convolution's clamp.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: (%[[X:.*]]: tensor<1x32x8x8xf32>)
// CHECK: %[[S:.*]] = kiln.reshape %[[X]] : tensor<1x32x8x8xf32> -> tensor<1x2x16x8x8xf32>
// CHECK: %[[B:.*]] = kiln.transpose %[[S]] {perm = array<i64: 0, 1, 3, 4, 2>} : (tensor<1x2x16x8x8xf32>) -> tensor<1x2x8x8x16xf32>
// CHECK: %[[C1:.*]] = kiln.blocked_conv %[[B]], %{{.*}}, %{{.*}} {clamp_min = 0.000000e+00 : f32, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x2x8x8x16xf32>, tensor<64x32x3x3xf32>, tensor<64xf32>) -> tensor<1x4x8x8x16xf32>
// CHECK-NOT: kiln.relu
// CHECK: %[[C2:.*]] = kiln.blocked_conv %[[C1]], %{{.*}} {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x8x8x16xf32>, tensor<16x64x1x1xf32>) -> tensor<1x1x8x8x16xf32>
// CHECK: %[[T:.*]] = kiln.transpose %[[C2]] {perm = array<i64: 0, 1, 4, 2, 3>} : (tensor<1x1x8x8x16xf32>) -> tensor<1x1x16x8x8xf32>
// CHECK: %[[Y:.*]] = kiln.reshape %[[T]] : tensor<1x1x16x8x8xf32> -> tensor<1x16x8x8xf32>
// In blocks of 8 (AVX2's vectors), the same chain in twice as many blocks.
// B8-LABEL: func.func @chain
// B8-SAME: (%[[X:.*]]: tensor<1x32x8x8xf32>)
// B8: %[[S:.*]] = kiln.reshape %[[X]] : tensor<1x32x8x8xf32> -> tensor<1x4x8x8x8xf32>
// B8: %[[B:.*]] = kiln.transpose %[[S]] {perm = array<i64: 0, 1, 3, 4, 2>} : (tensor<1x4x8x8x8xf32>) -> tensor<1x4x8x8x8xf32>
// B8: %[[C1:.*]] = kiln.blocked_conv %[[B]], %{{.*}}, %{{.*}} {block = 8 : i64, clamp_min = 0.000000e+00 : f32, {{.*}}} : (tensor<1x4x8x8x8xf32>, tensor<64x32x3x3xf32>, tensor<64xf32>) -> tensor<1x8x8x8x8xf32>
// B8: %[[C2:.*]] = kiln.blocked_conv %[[C1]], %{{.*}} {block = 8 : i64, {{.*}}} : (tensor<1x8x8x8x8xf32>, tensor<16x64x1x1xf32>) -> tensor<1x2x8x8x8xf32>
// B8: %[[T:.*]] = kiln.transpose %[[C2]] {perm = array<i64: 0, 1, 4, 2, 3>} : (tensor<1x2x8x8x8xf32>) -> tensor<1x2x8x8x8xf32>
// B8: %[[Y:.*]] = kiln.reshape %[[T]] : tensor<1x2x8x8x8xf32> -> tensor<1x16x8x8xf32>
// B8: return %[[Y]]
// CHECK: return %[[Y]]
func.func @chain(%x: tensor<1x32x8x8xf32>) -> tensor<1x16x8x8xf32> {
  %w1 = kiln.constant dense<1.0> : tensor<64x32x3x3xf32>
  %b1 = kiln.constant dense<0.5> : tensor<64xf32>
  %w2 = kiln.constant dense<2.0> : tensor<16x64x1x1xf32>
  %0 = kiln.conv %x, %w1, %b1 {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x32x8x8xf32>, tensor<64x32x3x3xf32>, tensor<64xf32>) -> tensor<1x64x8x8xf32>
  %1 = kiln.relu %0 : tensor<1x64x8x8xf32>
  %2 = kiln.conv %1, %w2 {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x64x8x8xf32>, tensor<16x64x1x1xf32>) -> tensor<1x16x8x8xf32>
  return %2 : tensor<1x16x8x8xf32>
}

// -----

// ONNX Clip (a max, then a min, by constants) becomes the clamp; a
// depthwise convolution is blocked too (a 1x1 one reads its result).
// CHECK-LABEL: func.func @clip_depthwise
// CHECK: kiln.blocked_conv %{{.*}}, %{{.*}} {clamp_max = 6.000000e+00 : f32, clamp_min = 0.000000e+00 : f32, dilations = array<i64: 1, 1>, group = 16 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x1x9x9x16xf32>, tensor<16x1x3x3xf32>) -> tensor<2x1x5x5x16xf32>
// CHECK-NOT: kiln.max
// CHECK-NOT: kiln.min
// CHECK: return
func.func @clip_depthwise(%x: tensor<2x16x9x9xf32>) -> tensor<2x16x5x5xf32> {
  %w = kiln.constant dense<1.0> : tensor<16x1x3x3xf32>
  %lo = kiln.constant dense<0.0> : tensor<f32>
  %hi = kiln.constant dense<6.0> : tensor<f32>
  %0 = kiln.conv %x, %w {dilations = array<i64: 1, 1>, group = 16 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x16x9x9xf32>, tensor<16x1x3x3xf32>) -> tensor<2x16x5x5xf32>
  %1 = kiln.max %0, %lo : (tensor<2x16x5x5xf32>, tensor<f32>) -> tensor<2x16x5x5xf32>
  %2 = kiln.min %1, %hi : (tensor<2x16x5x5xf32>, tensor<f32>) -> tensor<2x16x5x5xf32>
  %w1 = kiln.constant dense<1.0> : tensor<16x16x1x1xf32>
  %3 = kiln.conv %2, %w1 {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<2x16x5x5xf32>, tensor<16x16x1x1xf32>) -> tensor<2x16x5x5xf32>
  return %3 : tensor<2x16x5x5xf32>
}

// -----

// A residual block: the block's input is reordered once for both of its
// users, the sum and its Relu fold into the convolution (its addend and its
// clamp), and the next block's convolution reads the result as it is.
// CHECK-LABEL: func.func @residual
// CHECK: %[[B:.*]] = kiln.transpose %{{.*}} {perm = array<i64: 0, 1, 3, 4, 2>}
// CHECK: %[[R:.*]] = kiln.blocked_conv %[[B]], %{{.*}} add %[[B]] {clamp_min = 0.000000e+00 : f32, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x1x4x4x16xf32>, tensor<16x16x3x3xf32>, tensor<1x1x4x4x16xf32>) -> tensor<1x1x4x4x16xf32>
// CHECK-NOT: kiln.add
// CHECK-NOT: kiln.relu
// CHECK: %[[N:.*]] = kiln.blocked_conv %[[R]]
// CHECK: %[[T:.*]] = kiln.transpose %[[N]] {perm = array<i64: 0, 1, 4, 2, 3>}
// CHECK: %[[Y:.*]] = kiln.reshape %[[T]]
// CHECK: return %[[Y]]
func.func @residual(%x: tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32> {
  %w = kiln.constant dense<1.0> : tensor<16x16x3x3xf32>
  %0 = kiln.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x16x4x4xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x4x4xf32>
  %1 = kiln.add %0, %x : (tensor<1x16x4x4xf32>, tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  %2 = kiln.relu %1 : tensor<1x16x4x4xf32>
  %3 = kiln.conv %2, %w {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x16x4x4xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x4x4xf32>
  return %3 : tensor<1x16x4x4xf32>
}

// -----

// Squeeze-and-excitation: the mean over rows and columns, its sigmoid, the
// per-image, per-channel scale and a scalar all stay on blocked images.
// CHECK-LABEL: func.func @excitation
// CHECK-DAG: %[[HALF:.*]] = kiln.constant dense<5.000000e-01> : tensor<1x1x1x1x1xf32>
// CHECK: %[[C:.*]] = kiln.blocked_conv
// CHECK: %[[M:.*]] = kiln.reduce_mean %[[C]] {axes = array<i64: 2, 3>} : (tensor<2x2x4x4x16xf32>) -> tensor<2x2x1x1x16xf32>
// CHECK: %[[G:.*]] = kiln.sigmoid %[[M]] : tensor<2x2x1x1x16xf32>
// CHECK: %[[P:.*]] = kiln.mul %[[C]], %[[G]] : (tensor<2x2x4x4x16xf32>, tensor<2x2x1x1x16xf32>) -> tensor<2x2x4x4x16xf32>
// CHECK: %[[H:.*]] = kiln.mul %[[P]], %[[HALF]] : (tensor<2x2x4x4x16xf32>, tensor<1x1x1x1x1xf32>) -> tensor<2x2x4x4x16xf32>
// CHECK: %[[N:.*]] = kiln.blocked_conv %[[H]]
// CHECK: kiln.transpose %[[N]] {perm = array<i64: 0, 1, 4, 2, 3>}
// CHECK-NOT: kiln.transpose
func.func @excitation(%x: tensor<2x32x4x4xf32>) -> tensor<2x32x4x4xf32> {
  %w = kiln.constant dense<1.0> : tensor<32x32x1x1xf32>
  %half = kiln.constant dense<0.5> : tensor<1xf32>
  %0 = kiln.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<2x32x4x4xf32>, tensor<32x32x1x1xf32>) -> tensor<2x32x4x4xf32>
  %1 = kiln.reduce_mean %0 {axes = array<i64: 2, 3>, keepdims = true} : (tensor<2x32x4x4xf32>) -> tensor<2x32x1x1xf32>
  %2 = kiln.sigmoid %1 : tensor<2x32x1x1xf32>
  %3 = kiln.mul %0, %2 : (tensor<2x32x4x4xf32>, tensor<2x32x1x1xf32>) -> tensor<2x32x4x4xf32>
  %4 = kiln.mul %3, %half : (tensor<2x32x4x4xf32>, tensor<1xf32>) -> tensor<2x32x4x4xf32>
  %5 = kiln.conv %4, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<2x32x4x4xf32>, tensor<32x32x1x1xf32>) -> tensor<2x32x4x4xf32>
  return %5 : tensor<2x32x4x4xf32>
}

// -----

// Left in NCHW: filters that are not constants, two groups that are not
// depthwise, and an elementwise op whose other operand broadcasts along the
// rows (it reads the blocked convolutions' NCHW view). Three input channels
// are read as they are, and the result reordered back for the caller.
// CHECK-LABEL: func.func @unchanged
// CHECK-SAME: (%[[X:[^:]*]]: tensor<1x3x8x8xf32>, %[[Y:[^:]*]]: tensor<1x32x8x8xf32>, %[[WY:[^:]*]]: tensor<16x32x1x1xf32>, %[[ROW:[^:]*]]: tensor<8xf32>)
// CHECK: %[[A0:.*]] = kiln.blocked_conv %[[X]], %{{.*}} {{.*}} -> tensor<1x1x8x8x16xf32>
// CHECK: %[[AT:.*]] = kiln.transpose %[[A0]]
// CHECK: %[[A:.*]] = kiln.reshape %[[AT]] : tensor<1x1x16x8x8xf32> -> tensor<1x16x8x8xf32>
// CHECK: %[[B:.*]] = kiln.conv %[[Y]], %[[WY]] {{.*}} -> tensor<1x16x8x8xf32>
// CHECK: %[[G:.*]] = kiln.conv %[[Y]], %{{.*}} {dilations = array<i64: 1, 1>, group = 2 : i64, {{.*}} -> tensor<1x32x8x8xf32>
// CHECK: %[[C0:.*]] = kiln.blocked_conv
// CHECK: %[[C:.*]] = kiln.blocked_conv %[[C0]]
// CHECK: %[[T:.*]] = kiln.transpose %[[C]]
// CHECK: %[[V:.*]] = kiln.reshape %[[T]] : tensor<1x2x16x8x8xf32> -> tensor<1x32x8x8xf32>
// CHECK: %[[S:.*]] = kiln.add %[[V]], %[[ROW]] : (tensor<1x32x8x8xf32>, tensor<8xf32>) -> tensor<1x32x8x8xf32>
// CHECK: return %[[A]], %[[B]], %[[S]]
func.func @unchanged(%x: tensor<1x3x8x8xf32>, %y: tensor<1x32x8x8xf32>, %wy: tensor<16x32x1x1xf32>, %row: tensor<8xf32>) -> (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>, tensor<1x32x8x8xf32>) {
  %w = kiln.constant dense<1.0> : tensor<16x3x1x1xf32>
  %wg = kiln.constant dense<1.0> : tensor<32x16x1x1xf32>
  %0 = kiln.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x8x8xf32>, tensor<16x3x1x1xf32>) -> tensor<1x16x8x8xf32>
  %1 = kiln.conv %y, %wy {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x32x8x8xf32>, tensor<16x32x1x1xf32>) -> tensor<1x16x8x8xf32>
  %2 = kiln.conv %y, %wg {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x32x8x8xf32>, tensor<32x16x1x1xf32>) -> tensor<1x32x8x8xf32>
  %wc = kiln.constant dense<1.0> : tensor<32x32x1x1xf32>
  %c = kiln.conv %2, %wc {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x32x8x8xf32>, tensor<32x32x1x1xf32>) -> tensor<1x32x8x8xf32>
  %3 = kiln.conv %c, %wc {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x32x8x8xf32>, tensor<32x32x1x1xf32>) -> tensor<1x32x8x8xf32>
  %4 = kiln.add %3, %row : (tensor<1x32x8x8xf32>, tensor<8xf32>) -> tensor<1x32x8x8xf32>
  return %0, %1, %4 : tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>, tensor<1x32x8x8xf32>
}

// -----

// Channels that end in a padded block (MobileNetV2's 24): the reorders pad
// the channels with zeros and slice them off again. Ops that keep zeros
// (the residual sum, here the convolution's addend) run on the blocked
// images; a clamp that moves zero
// (here to 1) and a sigmoid (0.5 at zero) stay in NCHW, since a
// convolution reads the padding lanes; the next convolution reads the sum.
// CHECK-LABEL: func.func @padded
// CHECK-SAME: (%[[X:.*]]: tensor<1x24x4x4xf32>)
// CHECK: %[[P:.*]] = kiln.pad %[[X]] {pads = array<i64: 0, 0, 0, 0, 0, 8, 0, 0>} : tensor<1x24x4x4xf32> -> tensor<1x32x4x4xf32>
// CHECK: %[[S:.*]] = kiln.reshape %[[P]] : tensor<1x32x4x4xf32> -> tensor<1x2x16x4x4xf32>
// CHECK: %[[B:.*]] = kiln.transpose %[[S]] {perm = array<i64: 0, 1, 3, 4, 2>}
// CHECK: %[[SUM:.*]] = kiln.blocked_conv %[[B]], %{{.*}} add %[[B]] {{{.*}}} : (tensor<1x2x4x4x16xf32>, tensor<24x24x1x1xf32>, tensor<1x2x4x4x16xf32>) -> tensor<1x2x4x4x16xf32>
// CHECK: %[[T:.*]] = kiln.transpose %[[SUM]] {perm = array<i64: 0, 1, 4, 2, 3>}
// CHECK: %[[R:.*]] = kiln.reshape %[[T]] : tensor<1x2x16x4x4xf32> -> tensor<1x32x4x4xf32>
// CHECK: %[[V:.*]] = kiln.slice %[[R]] {start = array<i64: 0, 0, 0, 0>, step = array<i64: 1, 1, 1, 1>} : tensor<1x32x4x4xf32> -> tensor<1x24x4x4xf32>
// CHECK: %[[M:.*]] = kiln.max %[[V]], %{{.*}} : (tensor<1x24x4x4xf32>, tensor<f32>) -> tensor<1x24x4x4xf32>
// CHECK: %[[G:.*]] = kiln.sigmoid %[[M]] : tensor<1x24x4x4xf32>
// CHECK: %[[N:.*]] = kiln.blocked_conv %[[SUM]]
// CHECK: return %[[G]]
// In blocks of 8, 24 channels fill three whole blocks: no padding, and
// the clamp to 1 and the sigmoid run on the blocked images too.
// B8-LABEL: func.func @padded
// B8-NOT: kiln.pad
// B8: %[[SUM:.*]] = kiln.blocked_conv %{{.*}}, %{{.*}} add %{{.*}} {{{.*}}} : (tensor<1x3x4x4x8xf32>, tensor<24x24x1x1xf32>, tensor<1x3x4x4x8xf32>) -> tensor<1x3x4x4x8xf32>
// B8: kiln.max %[[SUM]], %{{.*}} : (tensor<1x3x4x4x8xf32>, tensor<f32>) -> tensor<1x3x4x4x8xf32>
// B8: kiln.sigmoid %{{.*}} : tensor<1x3x4x4x8xf32>
// B8: kiln.blocked_conv %[[SUM]]
func.func @padded(%x: tensor<1x24x4x4xf32>) -> (tensor<1x24x4x4xf32>, tensor<1x24x4x4xf32>) {
  %w = kiln.constant dense<1.0> : tensor<24x24x1x1xf32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %0 = kiln.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x24x4x4xf32>, tensor<24x24x1x1xf32>) -> tensor<1x24x4x4xf32>
  %1 = kiln.add %0, %x : (tensor<1x24x4x4xf32>, tensor<1x24x4x4xf32>) -> tensor<1x24x4x4xf32>
  %2 = kiln.max %1, %one : (tensor<1x24x4x4xf32>, tensor<f32>) -> tensor<1x24x4x4xf32>
  %3 = kiln.sigmoid %2 : tensor<1x24x4x4xf32>
  %4 = kiln.conv %1, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x24x4x4xf32>, tensor<24x24x1x1xf32>) -> tensor<1x24x4x4xf32>
  return %3, %4 : tensor<1x24x4x4xf32>, tensor<1x24x4x4xf32>
}

// -----

// A convolution alone between NCHW images stays as it is: two reorders
// would cost more than the layout saves. A sibling that reads an image
// whose blocked form exists already (made for the chain beside it) is
// blocked, since its input costs nothing more.
// CHECK-LABEL: func.func @alone
// CHECK-SAME: (%[[X:[^:]*]]: tensor<1x32x8x8xf32>, %[[Y:[^:]*]]: tensor<1x32x8x8xf32>)
// CHECK: %[[S:.*]] = kiln.reshape %[[Y]]
// CHECK: %[[B:.*]] = kiln.transpose %[[S]] {perm = array<i64: 0, 1, 3, 4, 2>}
// CHECK: %[[A:.*]] = kiln.conv %[[X]], %{{.*}} {dilations = array<i64: 1, 1>, group = 32 : i64
// CHECK: %[[R:.*]] = kiln.relu %[[A]]
// CHECK: %[[C1:.*]] = kiln.blocked_conv %[[B]]
// CHECK: %[[C2:.*]] = kiln.blocked_conv %[[C1]]
// CHECK: %[[C3:.*]] = kiln.blocked_conv %[[B]]
// CHECK-NOT: kiln.conv
// CHECK: return %[[R]]
// With everywhere=true, the lone depthwise convolution is blocked too, its
// Relu the clamp.
// ALL-LABEL: func.func @alone
// ALL: kiln.blocked_conv %{{.*}}, %{{.*}} {clamp_min = 0.000000e+00 : f32, dilations = array<i64: 1, 1>, group = 32 : i64
// ALL-NOT: kiln.conv
// ALL-NOT: kiln.relu
// ALL: return
func.func @alone(%x: tensor<1x32x8x8xf32>, %y: tensor<1x32x8x8xf32>) -> (tensor<1x32x8x8xf32>, tensor<1x32x8x8xf32>, tensor<1x32x8x8xf32>) {
  %wd = kiln.constant dense<1.0> : tensor<32x1x3x3xf32>
  %w = kiln.constant dense<1.0> : tensor<32x32x1x1xf32>
  %0 = kiln.conv %x, %wd {dilations = array<i64: 1, 1>, group = 32 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x32x8x8xf32>, tensor<32x1x3x3xf32>) -> tensor<1x32x8x8xf32>
  %1 = kiln.relu %0 : tensor<1x32x8x8xf32>
  %2 = kiln.conv %y, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x32x8x8xf32>, tensor<32x32x1x1xf32>) -> tensor<1x32x8x8xf32>
  %3 = kiln.conv %2, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x32x8x8xf32>, tensor<32x32x1x1xf32>) -> tensor<1x32x8x8xf32>
  %4 = kiln.conv %y, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x32x8x8xf32>, tensor<32x32x1x1xf32>) -> tensor<1x32x8x8xf32>
  return %1, %3, %4 : tensor<1x32x8x8xf32>, tensor<1x32x8x8xf32>, tensor<1x32x8x8xf32>
}

// -----

// A lone convolution whose window is taller than wide (7x1) is blocked:
// the NCHW kernels' bands of rows would each read its six extra rows again.
// A wide one (1x7) stays as it is.
// CHECK-LABEL: func.func @tall_window
// CHECK-SAME: (%[[X:[^:]*]]: tensor<1x32x9x9xf32>, %[[Y:[^:]*]]: tensor<1x32x9x9xf32>)
// CHECK: %[[S:.*]] = kiln.reshape %[[X]]
// CHECK: %[[B:.*]] = kiln.transpose %[[S]] {perm = array<i64: 0, 1, 3, 4, 2>}
// CHECK: %[[T:.*]] = kiln.blocked_conv %[[B]], %{{.*}} {dilations = array<i64: 1, 1>, pads = array<i64: 3, 0, 3, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x9x9x16xf32>, tensor<32x32x7x1xf32>) -> tensor<1x2x9x9x16xf32>
// CHECK: kiln.conv %[[Y]], %{{.*}} {dilations = array<i64: 1, 1>, pads = array<i64: 0, 3, 0, 3>, strides = array<i64: 1, 1>} : (tensor<1x32x9x9xf32>, tensor<32x32x1x7xf32>) -> tensor<1x32x9x9xf32>
// CHECK-NOT: kiln.blocked_conv
// CHECK: return
func.func @tall_window(%x: tensor<1x32x9x9xf32>, %y: tensor<1x32x9x9xf32>) -> (tensor<1x32x9x9xf32>, tensor<1x32x9x9xf32>) {
  %tall = kiln.constant dense<1.0> : tensor<32x32x7x1xf32>
  %wide = kiln.constant dense<1.0> : tensor<32x32x1x7xf32>
  %0 = kiln.conv %x, %tall {dilations = array<i64: 1, 1>, pads = array<i64: 3, 0, 3, 0>, strides = array<i64: 1, 1>} : (tensor<1x32x9x9xf32>, tensor<32x32x7x1xf32>) -> tensor<1x32x9x9xf32>
  %1 = kiln.conv %y, %wide {dilations = array<i64: 1, 1>, pads = array<i64: 0, 3, 0, 3>, strides = array<i64: 1, 1>} : (tensor<1x32x9x9xf32>, tensor<32x32x1x7xf32>) -> tensor<1x32x9x9xf32>
  return %0, %1 : tensor<1x32x9x9xf32>, tensor<1x32x9x9xf32>
}

// -----

// A lone convolution with a window larger than 1x1 at a stride is blocked:
// the NCHW kernels' tiles of output channels would each reorder the whole
// image. A 1x1 at a stride stays as it is.
// CHECK-LABEL: func.func @strided_window
// CHECK-SAME: (%[[X:[^:]*]]: tensor<1x32x9x9xf32>, %[[Y:[^:]*]]: tensor<1x32x9x9xf32>)
// CHECK: %[[S:.*]] = kiln.reshape %[[X]]
// CHECK: %[[B:.*]] = kiln.transpose %[[S]] {perm = array<i64: 0, 1, 3, 4, 2>}
// CHECK: kiln.blocked_conv %[[B]], %{{.*}} {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x2x9x9x16xf32>, tensor<32x32x3x3xf32>) -> tensor<1x2x5x5x16xf32>
// CHECK: kiln.conv %[[Y]], %{{.*}} {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x32x9x9xf32>, tensor<32x32x1x1xf32>) -> tensor<1x32x5x5xf32>
// CHECK-NOT: kiln.blocked_conv
// CHECK: return
func.func @strided_window(%x: tensor<1x32x9x9xf32>, %y: tensor<1x32x9x9xf32>) -> (tensor<1x32x5x5xf32>, tensor<1x32x5x5xf32>) {
  %w3 = kiln.constant dense<1.0> : tensor<32x32x3x3xf32>
  %w1 = kiln.constant dense<1.0> : tensor<32x32x1x1xf32>
  %0 = kiln.conv %x, %w3 {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x32x9x9xf32>, tensor<32x32x3x3xf32>) -> tensor<1x32x5x5xf32>
  %1 = kiln.conv %y, %w1 {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x32x9x9xf32>, tensor<32x32x1x1xf32>) -> tensor<1x32x5x5xf32>
  return %0, %1 : tensor<1x32x5x5xf32>, tensor<1x32x5x5xf32>
}

// -----

// Reductions over rows and columns (global pools, a squeeze-and-excitation's
// mean) read the blocked image and give a blocked per-channel vector, whose
// small NCHW view the other users get (reshaped when the reduction drops
// its dimensions). One over the channels reads the NCHW view.
// CHECK-LABEL: func.func @spatial_reductions
// CHECK: %[[C:.*]] = kiln.blocked_conv
// CHECK: %[[CT:.*]] = kiln.transpose %[[C]] {perm = array<i64: 0, 1, 4, 2, 3>}
// CHECK: %[[CV:.*]] = kiln.reshape %[[CT]]
// CHECK: %[[S:.*]] = kiln.reduce_sum %[[C]] {axes = array<i64: 2, 3>} : (tensor<1x2x8x8x16xf32>) -> tensor<1x2x1x1x16xf32>
// CHECK: %[[D:.*]] = kiln.div %[[S]], %{{.*}} : (tensor<1x2x1x1x16xf32>, tensor<f32>) -> tensor<1x2x1x1x16xf32>
// CHECK: %[[DT:.*]] = kiln.transpose %[[D]] {perm = array<i64: 0, 1, 4, 2, 3>} : (tensor<1x2x1x1x16xf32>) -> tensor<1x2x16x1x1xf32>
// CHECK: %[[DV:.*]] = kiln.reshape %[[DT]] : tensor<1x2x16x1x1xf32> -> tensor<1x32x1x1xf32>
// CHECK: %[[M:.*]] = kiln.reduce_max %[[C]] {axes = array<i64: 2, 3>} : (tensor<1x2x8x8x16xf32>) -> tensor<1x2x1x1x16xf32>
// CHECK: %[[MT:.*]] = kiln.transpose %[[M]] {perm = array<i64: 0, 1, 4, 2, 3>} : (tensor<1x2x1x1x16xf32>) -> tensor<1x2x16x1x1xf32>
// CHECK: %[[MV:.*]] = kiln.reshape %[[MT]] : tensor<1x2x16x1x1xf32> -> tensor<1x32xf32>
// CHECK: %[[P:.*]] = kiln.reduce_sum %[[CV]] {axes = array<i64: 1>} : (tensor<1x32x8x8xf32>) -> tensor<1x1x8x8xf32>
// CHECK: kiln.blocked_conv %[[C]]
// CHECK: return %[[DV]], %[[MV]], %[[P]]
func.func @spatial_reductions(%x: tensor<1x32x8x8xf32>) -> (tensor<1x32x1x1xf32>, tensor<1x32xf32>, tensor<1x1x8x8xf32>, tensor<1x32x8x8xf32>) {
  %w = kiln.constant dense<1.0> : tensor<32x32x1x1xf32>
  %n = kiln.constant dense<64.0> : tensor<f32>
  %0 = kiln.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x32x8x8xf32>, tensor<32x32x1x1xf32>) -> tensor<1x32x8x8xf32>
  %1 = kiln.reduce_sum %0 {axes = array<i64: 2, 3>} : (tensor<1x32x8x8xf32>) -> tensor<1x32x1x1xf32>
  %2 = kiln.div %1, %n : (tensor<1x32x1x1xf32>, tensor<f32>) -> tensor<1x32x1x1xf32>
  %3 = kiln.reduce_max %0 {axes = array<i64: 2, 3>, keepdims = false} : (tensor<1x32x8x8xf32>) -> tensor<1x32xf32>
  %4 = kiln.reduce_sum %0 {axes = array<i64: 1>} : (tensor<1x32x8x8xf32>) -> tensor<1x1x8x8xf32>
  %5 = kiln.conv %0, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x32x8x8xf32>, tensor<32x32x1x1xf32>) -> tensor<1x32x8x8xf32>
  return %2, %3, %4, %5 : tensor<1x32x1x1xf32>, tensor<1x32xf32>, tensor<1x1x8x8xf32>, tensor<1x32x8x8xf32>
}

// -----

// A sum stays an op of its own where the convolution before it is clamped
// already (the sum would come after the clamp) or has another user.
// CHECK-LABEL: func.func @sums_kept
// CHECK: %[[C:.*]] = kiln.blocked_conv %[[B:[^,]*]], %{{.*}} {clamp_min = 0.000000e+00 : f32
// CHECK: %[[S:.*]] = kiln.add %[[C]], %[[B]]
// CHECK: %[[D:.*]] = kiln.blocked_conv %[[S]], %{{[^ ]*}} {dilations
// CHECK: %[[T:.*]] = kiln.add %[[D]], %[[S]]
// CHECK: kiln.blocked_conv %[[T]], %{{[^ ]*}} add %[[D]]
func.func @sums_kept(%x: tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32> {
  %w = kiln.constant dense<1.0> : tensor<16x16x1x1xf32>
  %0 = kiln.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x4x4xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x4x4xf32>
  %1 = kiln.relu %0 : tensor<1x16x4x4xf32>
  %2 = kiln.add %1, %x : (tensor<1x16x4x4xf32>, tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  %3 = kiln.conv %2, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x4x4xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x4x4xf32>
  %4 = kiln.add %3, %2 : (tensor<1x16x4x4xf32>, tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  %5 = kiln.conv %4, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x4x4xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x4x4xf32>
  %6 = kiln.add %5, %3 : (tensor<1x16x4x4xf32>, tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  return %6 : tensor<1x16x4x4xf32>
}

// -----

// An RGB stem reads its NCHW image as it is and gives its result in blocks,
// which a convolution that takes blocks reads as they are, and a max pool
// too; the pool's result is reordered back for the caller.
// CHECK-LABEL: func.func @rgb_stem
// CHECK-SAME: (%[[X:[^:]*]]: tensor<1x3x16x16xf32>, %[[Y:[^:]*]]: tensor<1x3x16x16xf32>)
// CHECK: %[[S:.*]] = kiln.blocked_conv %[[X]], %{{.*}} {clamp_max = 6.000000e+00 : f32, clamp_min = 0.000000e+00 : f32, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x3x16x16xf32>, tensor<32x3x3x3xf32>) -> tensor<1x2x8x8x16xf32>
// CHECK: kiln.blocked_conv %[[S]], %{{.*}} {dilations = array<i64: 1, 1>, group = 32 : i64
// CHECK: %[[P:.*]] = kiln.blocked_conv %[[Y]], %{{.*}} {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x3x16x16xf32>, tensor<32x3x3x3xf32>) -> tensor<1x2x8x8x16xf32>
// CHECK: %[[M:.*]] = kiln.max_pool %[[P]] {{.*}} : (tensor<1x2x8x8x16xf32>) -> tensor<1x2x4x4x16xf32>
// CHECK: %[[T:.*]] = kiln.transpose %[[M]] {perm = array<i64: 0, 1, 4, 2, 3>}
// CHECK: kiln.reshape %[[T]] : tensor<1x2x16x4x4xf32> -> tensor<1x32x4x4xf32>
// CHECK-NOT: kiln.conv
// ALL-LABEL: func.func @rgb_stem
// ALL-COUNT-3: kiln.blocked_conv
// ALL-NOT: kiln.conv
func.func @rgb_stem(%x: tensor<1x3x16x16xf32>, %y: tensor<1x3x16x16xf32>) -> (tensor<1x32x8x8xf32>, tensor<1x32x4x4xf32>) {
  %w = kiln.constant dense<1.0> : tensor<32x3x3x3xf32>
  %wd = kiln.constant dense<1.0> : tensor<32x1x3x3xf32>
  %lo = kiln.constant dense<0.0> : tensor<f32>
  %hi = kiln.constant dense<6.0> : tensor<f32>
  %0 = kiln.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x3x16x16xf32>, tensor<32x3x3x3xf32>) -> tensor<1x32x8x8xf32>
  %1 = kiln.max %0, %lo : (tensor<1x32x8x8xf32>, tensor<f32>) -> tensor<1x32x8x8xf32>
  %2 = kiln.min %1, %hi : (tensor<1x32x8x8xf32>, tensor<f32>) -> tensor<1x32x8x8xf32>
  %3 = kiln.conv %2, %wd {dilations = array<i64: 1, 1>, group = 32 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x32x8x8xf32>, tensor<32x1x3x3xf32>) -> tensor<1x32x8x8xf32>
  %4 = kiln.conv %y, %w {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x3x16x16xf32>, tensor<32x3x3x3xf32>) -> tensor<1x32x8x8xf32>
  %5 = kiln.max_pool %4 {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<1x32x8x8xf32>) -> tensor<1x32x4x4xf32>
  return %3, %5 : tensor<1x32x8x8xf32>, tensor<1x32x4x4xf32>
}

// -----

// Pools between convolutions (VGG's, ResNet's stem's) run on the blocked
// images: the first convolution is blocked because its result reaches the
// second through the Relu and the max pool, and nothing is reordered
// between them. The average pool keeps its attributes. A pool of an image
// with no blocked form stays NCHW.
// CHECK-LABEL: func.func @pools
// CHECK-SAME: (%[[X:[^:]*]]: tensor<1x32x16x16xf32>, %[[Y:[^:]*]]: tensor<1x32x16x16xf32>)
// CHECK: %[[C1:.*]] = kiln.blocked_conv %{{.*}} {clamp_min = 0.000000e+00 : f32, {{.*}}} : (tensor<1x2x16x16x16xf32>, tensor<32x32x3x3xf32>) -> tensor<1x2x16x16x16xf32>
// CHECK: %[[P:.*]] = kiln.max_pool %[[C1]] {ceil_mode = true, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x2x16x16x16xf32>) -> tensor<1x2x9x9x16xf32>
// CHECK: %[[C2:.*]] = kiln.blocked_conv %[[P]]
// CHECK: %[[A:.*]] = kiln.average_pool %[[C2]] {count_include_pad = true, {{.*}}} : (tensor<1x2x9x9x16xf32>) -> tensor<1x2x5x5x16xf32>
// CHECK: %[[C3:.*]] = kiln.blocked_conv %[[A]]
// CHECK: kiln.max_pool %[[Y]] {{.*}} : (tensor<1x32x16x16xf32>) -> tensor<1x32x8x8xf32>
// CHECK-NOT: kiln.blocked_conv
// CHECK: return
func.func @pools(%x: tensor<1x32x16x16xf32>, %y: tensor<1x32x16x16xf32>) -> (tensor<1x32x5x5xf32>, tensor<1x32x8x8xf32>) {
  %w = kiln.constant dense<1.0> : tensor<32x32x3x3xf32>
  %w1 = kiln.constant dense<1.0> : tensor<32x32x1x1xf32>
  %0 = kiln.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x32x16x16xf32>, tensor<32x32x3x3xf32>) -> tensor<1x32x16x16xf32>
  %1 = kiln.relu %0 : tensor<1x32x16x16xf32>
  %2 = kiln.max_pool %1 {ceil_mode = true, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x32x16x16xf32>) -> tensor<1x32x9x9xf32>
  %3 = kiln.conv %2, %w1 {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x32x9x9xf32>, tensor<32x32x1x1xf32>) -> tensor<1x32x9x9xf32>
  %4 = kiln.average_pool %3 {count_include_pad = true, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x32x9x9xf32>) -> tensor<1x32x5x5xf32>
  %5 = kiln.conv %4, %w1 {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x32x5x5xf32>, tensor<32x32x1x1xf32>) -> tensor<1x32x5x5xf32>
  %6 = kiln.max_pool %y {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x32x16x16xf32>) -> tensor<1x32x8x8xf32>
  return %5, %6 : tensor<1x32x5x5xf32>, tensor<1x32x8x8xf32>
}

// -----

// Branches joined along their channels (Inception's, DenseNet's features)
// join as blocked images when every part fills whole blocks: both branch
// convolutions are blocked because their results reach the last
// convolution through the concatenation, and nothing is reordered. A part
// of 24 channels (a padded block) keeps its concatenation in NCHW.
// CHECK-LABEL: func.func @concat
// CHECK-SAME: (%[[X:[^:]*]]: tensor<1x32x8x8xf32>, %[[Y:[^:]*]]: tensor<1x24x8x8xf32>)
// CHECK: %[[A:.*]] = kiln.blocked_conv %[[B:[^,]*]], %{{.*}} : (tensor<1x2x8x8x16xf32>, tensor<32x32x1x1xf32>) -> tensor<1x2x8x8x16xf32>
// CHECK: %[[C:.*]] = kiln.blocked_conv %[[B]], %{{.*}} : (tensor<1x2x8x8x16xf32>, tensor<16x32x3x3xf32>) -> tensor<1x1x8x8x16xf32>
// CHECK: %[[J:.*]] = kiln.concat %[[A]], %[[C]] {axis = 1 : i64} : (tensor<1x2x8x8x16xf32>, tensor<1x1x8x8x16xf32>) -> tensor<1x3x8x8x16xf32>
// CHECK: kiln.blocked_conv %[[J]]
// CHECK: kiln.concat %[[X]], %[[Y]] {axis = 1 : i64} : (tensor<1x32x8x8xf32>, tensor<1x24x8x8xf32>) -> tensor<1x56x8x8xf32>
// CHECK: return
func.func @concat(%x: tensor<1x32x8x8xf32>, %y: tensor<1x24x8x8xf32>) -> (tensor<1x16x8x8xf32>, tensor<1x56x8x8xf32>) {
  %w1 = kiln.constant dense<1.0> : tensor<32x32x1x1xf32>
  %w3 = kiln.constant dense<1.0> : tensor<16x32x3x3xf32>
  %wj = kiln.constant dense<1.0> : tensor<16x48x1x1xf32>
  %0 = kiln.conv %x, %w1 {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x32x8x8xf32>, tensor<32x32x1x1xf32>) -> tensor<1x32x8x8xf32>
  %1 = kiln.conv %x, %w3 {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x32x8x8xf32>, tensor<16x32x3x3xf32>) -> tensor<1x16x8x8xf32>
  %2 = kiln.concat %0, %1 {axis = 1 : i64} : (tensor<1x32x8x8xf32>, tensor<1x16x8x8xf32>) -> tensor<1x48x8x8xf32>
  %3 = kiln.conv %2, %wj {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x48x8x8xf32>, tensor<16x48x1x1xf32>) -> tensor<1x16x8x8xf32>
  %4 = kiln.concat %x, %y {axis = 1 : i64} : (tensor<1x32x8x8xf32>, tensor<1x24x8x8xf32>) -> tensor<1x56x8x8xf32>
  return %3, %4 : tensor<1x16x8x8xf32>, tensor<1x56x8x8xf32>
}

// -----

// In blocks of 8, a SiLU after a convolution, `x * sigmoid(x)` as PyTorch
// exports it (the product's operands either way round), becomes the
// convolution's swish, which a clamp after it follows; a HardSwish becomes
// its hard swish.
// B8-LABEL: func.func @swish
// B8: %[[A:.*]] = kiln.blocked_conv %{{.*}}, %{{.*}}, %{{.*}} {activation = #kiln<conv_activation swish>, block = 8 : i64, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x6x6x8xf32>, tensor<24x16x1x1xf32>, tensor<24xf32>) -> tensor<1x3x6x6x8xf32>
// B8: %[[B:.*]] = kiln.blocked_conv %[[A]], %{{.*}} {activation = #kiln<conv_activation swish>, block = 8 : i64, clamp_max = 6.000000e+00 : f32, dilations = array<i64: 1, 1>, group = 24 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x3x6x6x8xf32>, tensor<24x1x3x3xf32>) -> tensor<1x3x6x6x8xf32>
// B8: kiln.blocked_conv %[[B]], %{{.*}} {activation = #kiln<conv_activation hard_swish>, block = 8 : i64, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x6x6x8xf32>, tensor<16x24x1x1xf32>) -> tensor<1x2x6x6x8xf32>
// B8-NOT: kiln.sigmoid
// B8-NOT: kiln.mul
// B8-NOT: kiln.hard_swish
// B8: return
// In blocks of 16 (AVX-512) the activations stay ops of their own, and the
// clamp with them (the sigmoid of 24 channels padded to 32 on their NCHW
// view).
// CHECK-LABEL: func.func @swish
// CHECK-NOT: activation
// CHECK: kiln.sigmoid %{{.*}} : tensor<1x24x6x6xf32>
// CHECK: kiln.mul
// CHECK: kiln.hard_swish %{{.*}} : tensor<1x1x6x6x16xf32>
// CHECK: return
func.func @swish(%x: tensor<1x16x6x6xf32>) -> tensor<1x16x6x6xf32> {
  %w1 = kiln.constant dense<0.5> : tensor<24x16x1x1xf32>
  %b1 = kiln.constant dense<0.25> : tensor<24xf32>
  %w2 = kiln.constant dense<1.0> : tensor<24x1x3x3xf32>
  %w3 = kiln.constant dense<2.0> : tensor<16x24x1x1xf32>
  %six = kiln.constant dense<6.0> : tensor<f32>
  %0 = kiln.conv %x, %w1, %b1 {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x6x6xf32>, tensor<24x16x1x1xf32>, tensor<24xf32>) -> tensor<1x24x6x6xf32>
  %1 = kiln.sigmoid %0 : tensor<1x24x6x6xf32>
  %2 = kiln.mul %0, %1 : (tensor<1x24x6x6xf32>, tensor<1x24x6x6xf32>) -> tensor<1x24x6x6xf32>
  %3 = kiln.conv %2, %w2 {dilations = array<i64: 1, 1>, group = 24 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x24x6x6xf32>, tensor<24x1x3x3xf32>) -> tensor<1x24x6x6xf32>
  %4 = kiln.sigmoid %3 : tensor<1x24x6x6xf32>
  %5 = kiln.mul %4, %3 : (tensor<1x24x6x6xf32>, tensor<1x24x6x6xf32>) -> tensor<1x24x6x6xf32>
  %6 = kiln.min %5, %six : (tensor<1x24x6x6xf32>, tensor<f32>) -> tensor<1x24x6x6xf32>
  %7 = kiln.conv %6, %w3 {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x24x6x6xf32>, tensor<16x24x1x1xf32>) -> tensor<1x16x6x6xf32>
  %8 = kiln.hard_swish %7 : tensor<1x16x6x6xf32>
  return %8 : tensor<1x16x6x6xf32>
}

// -----

// In blocks of 8 a residual sum takes the SiLU after it: `silu(conv(x) +
// x)` is one convolution that adds into x's buffer, then applies the swish.
// B8-LABEL: func.func @residual_swish
// B8: kiln.blocked_conv %[[B:.*]], %{{.*}} add %[[B]] {activation = #kiln<conv_activation swish>, block = 8 : i64, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x2x4x4x8xf32>, tensor<16x16x3x3xf32>, tensor<1x2x4x4x8xf32>) -> tensor<1x2x4x4x8xf32>
// B8-NOT: kiln.sigmoid
// B8: return
// CHECK-LABEL: func.func @residual_swish
// CHECK: %[[S:.*]] = kiln.blocked_conv %[[B:.*]], %{{.*}} add %[[B]] {dilations
// CHECK: kiln.sigmoid %[[S]]
// CHECK: return
func.func @residual_swish(%x: tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32> {
  %w = kiln.constant dense<1.0> : tensor<16x16x3x3xf32>
  %r = kiln.relu %x : tensor<1x16x4x4xf32>
  %0 = kiln.conv %r, %w {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x16x4x4xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x4x4xf32>
  %1 = kiln.conv %0, %w {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x16x4x4xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x4x4xf32>
  %2 = kiln.add %1, %0 : (tensor<1x16x4x4xf32>, tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  %3 = kiln.sigmoid %2 : tensor<1x16x4x4xf32>
  %4 = kiln.mul %2, %3 : (tensor<1x16x4x4xf32>, tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  return %4 : tensor<1x16x4x4xf32>
}

// -----

// Not a SiLU: the sigmoid has another user, or the product is by another
// value. The convolution keeps no activation, and the ops run on its
// blocked result.
// B8-LABEL: func.func @not_swish
// B8: %[[C0:.*]] = kiln.blocked_conv %{{.*}}, %{{.*}} {block = 8 : i64, dilations
// B8: %[[A:.*]] = kiln.blocked_conv %[[C0]], %{{.*}} {block = 8 : i64, dilations
// B8: %[[S:.*]] = kiln.sigmoid %[[A]]
// B8: kiln.mul %[[A]], %[[S]]
// B8: %[[C:.*]] = kiln.blocked_conv %[[C0]], %{{.*}} {block = 8 : i64, dilations
// B8: kiln.sigmoid %[[C]]
// B8-NOT: activation
// B8: return
func.func @not_swish(%x: tensor<1x16x4x4xf32>, %y: tensor<1x16x4x4xf32>) -> (tensor<1x16x4x4xf32>, tensor<1x16x4x4xf32>, tensor<1x16x4x4xf32>) {
  %w = kiln.constant dense<1.0> : tensor<16x16x1x1xf32>
  %r = kiln.relu %x : tensor<1x16x4x4xf32>
  %c0 = kiln.conv %r, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x4x4xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x4x4xf32>
  %0 = kiln.conv %c0, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x4x4xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x4x4xf32>
  %1 = kiln.sigmoid %0 : tensor<1x16x4x4xf32>
  %2 = kiln.mul %0, %1 : (tensor<1x16x4x4xf32>, tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  %3 = kiln.conv %c0, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x16x4x4xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x4x4xf32>
  %4 = kiln.sigmoid %3 : tensor<1x16x4x4xf32>
  %5 = kiln.mul %y, %4 : (tensor<1x16x4x4xf32>, tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  %6 = kiln.add %3, %5 : (tensor<1x16x4x4xf32>, tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  return %2, %1, %6 : tensor<1x16x4x4xf32>, tensor<1x16x4x4xf32>, tensor<1x16x4x4xf32>
}

// -----

// In blocks of 8 (AVX2 without AVX-512), a 3x3 convolution at stride 1,
// one group, of 16 or more input channels is blocked even alone between
// NCHW images: Kiln's Winograd kernel takes it. With fewer channels, or
// dilated, it stays; in blocks of 16 all three stay.
// CHECK-LABEL: func.func @lone_winograd
// CHECK-NOT: kiln.blocked_conv
// CHECK: return
// B8-LABEL: func.func @lone_winograd
// B8: kiln.blocked_conv %{{.*}}, %{{.*}}, %{{.*}} {block = 8 : i64, {{.*}}} : (tensor<1x2x10x10x8xf32>, tensor<24x16x3x3xf32>, tensor<24xf32>) -> tensor<1x3x10x10x8xf32>
// B8: kiln.conv %{{.*}}, %{{.*}} {{{.*}}} : (tensor<1x8x10x10xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x10x10xf32>
// B8: kiln.conv %{{.*}}, %{{.*}} {dilations = array<i64: 2, 2>{{.*}}} : (tensor<1x16x10x10xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x10x10xf32>
// B8-NOT: kiln.blocked_conv
// B8: return
// With everywhere=true the two of 16 channels are blocked, and 8 channels
// would be padded to a block of 16: that one stays.
// ALL-LABEL: func.func @lone_winograd
// ALL: kiln.blocked_conv
// ALL: kiln.conv %{{.*}} : (tensor<1x8x10x10xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x10x10xf32>
// ALL: kiln.blocked_conv
func.func @lone_winograd(%x: tensor<1x16x10x10xf32>, %y: tensor<1x8x10x10xf32>, %z: tensor<1x16x10x10xf32>) -> (tensor<1x24x10x10xf32>, tensor<1x8x10x10xf32>, tensor<1x16x10x10xf32>) {
  %w = kiln.constant dense<0.5> : tensor<24x16x3x3xf32>
  %b = kiln.constant dense<0.25> : tensor<24xf32>
  %w8 = kiln.constant dense<0.5> : tensor<8x8x3x3xf32>
  %w16 = kiln.constant dense<0.5> : tensor<16x16x3x3xf32>
  %0 = kiln.conv %x, %w, %b {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x16x10x10xf32>, tensor<24x16x3x3xf32>, tensor<24xf32>) -> tensor<1x24x10x10xf32>
  %1 = kiln.conv %y, %w8 {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x8x10x10xf32>, tensor<8x8x3x3xf32>) -> tensor<1x8x10x10xf32>
  %2 = kiln.conv %z, %w16 {dilations = array<i64: 2, 2>, pads = array<i64: 2, 2, 2, 2>, strides = array<i64: 1, 1>} : (tensor<1x16x10x10xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x10x10xf32>
  return %0, %1, %2 : tensor<1x24x10x10xf32>, tensor<1x8x10x10xf32>, tensor<1x16x10x10xf32>
}

// -----

// In blocks of 8, any other convolution at stride 1 of one group and at
// least 16 input channels is blocked alone too once it has 2^23
// multiply-adds: the 1x1 64->128 at 32x32 has exactly that many. The
// 1x1 64->120 has fewer (7.9 million) and, on an image of its own, stays,
// as does the 1x1 at stride 2, whatever its size. In blocks of 16 all
// three stay.
// CHECK-LABEL: func.func @lone_large
// CHECK-NOT: kiln.blocked_conv
// CHECK: return
// B8-LABEL: func.func @lone_large
// B8: kiln.blocked_conv %{{.*}}, %{{.*}} {block = 8 : i64, {{.*}}} : (tensor<1x8x32x32x8xf32>, tensor<128x64x1x1xf32>) -> tensor<1x16x32x32x8xf32>
// B8: kiln.conv %{{.*}}, %{{.*}} {{{.*}}} : (tensor<1x64x32x32xf32>, tensor<120x64x1x1xf32>) -> tensor<1x120x32x32xf32>
// B8: kiln.conv %{{.*}}, %{{.*}} {{{.*}}strides = array<i64: 2, 2>} : (tensor<1x64x256x256xf32>, tensor<128x64x1x1xf32>) -> tensor<1x128x128x128xf32>
// B8-NOT: kiln.blocked_conv
// B8: return
func.func @lone_large(%x: tensor<1x64x32x32xf32>, %y: tensor<1x64x32x32xf32>, %s: tensor<1x64x256x256xf32>) -> (tensor<1x128x32x32xf32>, tensor<1x120x32x32xf32>, tensor<1x128x128x128xf32>) {
  %w = kiln.constant dense<0.5> : tensor<128x64x1x1xf32>
  %w120 = kiln.constant dense<0.5> : tensor<120x64x1x1xf32>
  %0 = kiln.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x64x32x32xf32>, tensor<128x64x1x1xf32>) -> tensor<1x128x32x32xf32>
  %1 = kiln.conv %y, %w120 {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x64x32x32xf32>, tensor<120x64x1x1xf32>) -> tensor<1x120x32x32xf32>
  %2 = kiln.conv %s, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x64x256x256xf32>, tensor<128x64x1x1xf32>) -> tensor<1x128x128x128xf32>
  return %0, %1, %2 : tensor<1x128x32x32xf32>, tensor<1x120x32x32xf32>, tensor<1x128x128x128xf32>
}

// -----

// Filters that are not constants (a train step's weights, or their
// transpose for the input's gradient) are transformed on every call, so
// only a 3x3 at stride 1 of 16 or more input channels on 16 or more 4x4
// output tiles that its outputs fill at least half of is blocked, for the
// runtime's Winograd kernel: the 16x16 image (16 tiles), not the 12x12 one
// (9 tiles), the 5x5 ones (16 tiles, 25 of their 64 positions), the one of
// 8 channels, the stride-2 one or the 1x1. In blocks of 16 a convolution
// by computed filters needs 64 tiles (see @computed_filters_on_few_tiles),
// so none is blocked, not even with `everywhere`.
// CHECK-LABEL: func.func @computed_filters
// CHECK-NOT: kiln.blocked_conv
// CHECK: return
// ALL-LABEL: func.func @computed_filters
// ALL-NOT: kiln.blocked_conv
// ALL: return
// B8-LABEL: func.func @computed_filters
// B8-SAME: %[[W:[^:]*]]: tensor<16x16x3x3xf32>
// B8: kiln.blocked_conv %{{.*}}, %[[W]] {block = 8 : i64, {{.*}}} : (tensor<1x2x16x16x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x2x16x16x8xf32>
// B8: kiln.conv %{{.*}}, %[[W]] {{{.*}}} : (tensor<1x16x12x12xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x12x12xf32>
// B8: kiln.conv %{{.*}}, %[[W]] {{{.*}}} : (tensor<4x16x5x5xf32>, tensor<16x16x3x3xf32>) -> tensor<4x16x5x5xf32>
// B8: kiln.conv %{{.*}}, %{{.*}} {{{.*}}} : (tensor<4x8x16x16xf32>, tensor<16x8x3x3xf32>) -> tensor<4x16x16x16xf32>
// B8: kiln.conv %{{.*}}, %[[W]] {{{.*}}strides = array<i64: 2, 2>} : (tensor<4x16x32x32xf32>, tensor<16x16x3x3xf32>) -> tensor<4x16x16x16xf32>
// B8: kiln.conv %{{.*}}, %{{.*}} {{{.*}}} : (tensor<1x64x32x32xf32>, tensor<128x64x1x1xf32>) -> tensor<1x128x32x32xf32>
// B8-NOT: kiln.blocked_conv
// B8: return
func.func @computed_filters(%x: tensor<1x16x16x16xf32>, %w: tensor<16x16x3x3xf32>, %y: tensor<1x16x12x12xf32>, %n: tensor<4x8x16x16xf32>, %wn: tensor<16x8x3x3xf32>, %s: tensor<4x16x32x32xf32>, %p: tensor<1x64x32x32xf32>, %wp: tensor<128x64x1x1xf32>, %f: tensor<4x16x5x5xf32>) -> (tensor<1x16x16x16xf32>, tensor<1x16x12x12xf32>, tensor<4x16x5x5xf32>, tensor<4x16x16x16xf32>, tensor<4x16x16x16xf32>, tensor<1x128x32x32xf32>) {
  %0 = kiln.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x16x16x16xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x16x16xf32>
  %1 = kiln.conv %y, %w {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x16x12x12xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x12x12xf32>
  %5 = kiln.conv %f, %w {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<4x16x5x5xf32>, tensor<16x16x3x3xf32>) -> tensor<4x16x5x5xf32>
  %2 = kiln.conv %n, %wn {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<4x8x16x16xf32>, tensor<16x8x3x3xf32>) -> tensor<4x16x16x16xf32>
  %3 = kiln.conv %s, %w {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<4x16x32x32xf32>, tensor<16x16x3x3xf32>) -> tensor<4x16x16x16xf32>
  %4 = kiln.conv %p, %wp {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x64x32x32xf32>, tensor<128x64x1x1xf32>) -> tensor<1x128x32x32xf32>
  return %0, %1, %5, %2, %3, %4 : tensor<1x16x16x16xf32>, tensor<1x16x12x12xf32>, tensor<4x16x5x5xf32>, tensor<4x16x16x16xf32>, tensor<4x16x16x16xf32>, tensor<1x128x32x32xf32>
}

// -----

// In blocks of 16 the Winograd kernel takes whole blocks only: 24 channels
// and filters (blocks of 16, the second half padding) stay, where blocks
// of 8 hold them whole.
// ALL-LABEL: func.func @computed_filters_in_partial_blocks
// ALL-NOT: kiln.blocked_conv
// ALL: return
// B8-LABEL: func.func @computed_filters_in_partial_blocks
// B8: kiln.blocked_conv {{.*}} : (tensor<2x3x16x16x8xf32>, tensor<24x24x3x3xf32>) -> tensor<2x3x16x16x8xf32>
func.func @computed_filters_in_partial_blocks(%x: tensor<2x24x16x16xf32>, %w: tensor<24x24x3x3xf32>) -> tensor<2x24x16x16xf32> {
  %0 = kiln.conv %x, %w {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x24x16x16xf32>, tensor<24x24x3x3xf32>) -> tensor<2x24x16x16xf32>
  return %0 : tensor<2x24x16x16xf32>
}

// -----

// Two 3x3s by computed filters in a chain (a train step's forward pass) in
// blocks of 16, on 64 tiles of 4x4 (four 16x16 images): the first's result
// reaches the second, so both are blocked and the image between them is not
// reordered.
// CHECK-LABEL: func.func @computed_filters_in_a_chain
// CHECK-SAME: %[[W0:[^:]*]]: tensor<32x16x3x3xf32>, %[[W1:[^:]*]]: tensor<32x32x3x3xf32>
// CHECK: %[[A:.*]] = kiln.blocked_conv %{{.*}}, %[[W0]] {{.*}} -> tensor<4x2x16x16x16xf32>
// CHECK-NOT: kiln.transpose
// CHECK: kiln.blocked_conv %[[A]], %[[W1]] {{.*}} -> tensor<4x2x16x16x16xf32>
// CHECK: return
func.func @computed_filters_in_a_chain(%x: tensor<4x16x16x16xf32>, %w0: tensor<32x16x3x3xf32>, %w1: tensor<32x32x3x3xf32>) -> tensor<4x32x16x16xf32> {
  %0 = kiln.conv %x, %w0 {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<4x16x16x16xf32>, tensor<32x16x3x3xf32>) -> tensor<4x32x16x16xf32>
  %1 = kiln.relu %0 : tensor<4x32x16x16xf32>
  %2 = kiln.conv %1, %w1 {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<4x32x16x16xf32>, tensor<32x32x3x3xf32>) -> tensor<4x32x16x16xf32>
  return %2 : tensor<4x32x16x16xf32>
}

// -----

// The same chain on two images, 32 tiles: in blocks of 16 each call would
// stream its 36 transformed filters for too few tiles (it needs 64), so
// both stay NCHW; blocks of 8 take them (16 tiles suffice).
// CHECK-LABEL: func.func @computed_filters_on_few_tiles
// CHECK-NOT: kiln.blocked_conv
// CHECK: return
// B8-LABEL: func.func @computed_filters_on_few_tiles
// B8: kiln.blocked_conv {{.*}} -> tensor<2x4x16x16x8xf32>
// B8: kiln.blocked_conv {{.*}} -> tensor<2x4x16x16x8xf32>
func.func @computed_filters_on_few_tiles(%x: tensor<2x16x16x16xf32>, %w0: tensor<32x16x3x3xf32>, %w1: tensor<32x32x3x3xf32>) -> tensor<2x32x16x16xf32> {
  %0 = kiln.conv %x, %w0 {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x16x16x16xf32>, tensor<32x16x3x3xf32>) -> tensor<2x32x16x16xf32>
  %1 = kiln.relu %0 : tensor<2x32x16x16xf32>
  %2 = kiln.conv %1, %w1 {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x32x16x16xf32>, tensor<32x32x3x3xf32>) -> tensor<2x32x16x16xf32>
  return %2 : tensor<2x32x16x16xf32>
}
