// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(one-shot-bufferize{bufferize-function-boundaries=1 function-boundary-type-conversion=identity-layout-map},canonicalize)' | FileCheck %s
// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(one-shot-bufferize{bufferize-function-boundaries=1 function-boundary-type-conversion=identity-layout-map},buffer-results-to-out-params{hoist-static-allocs=1 modify-public-functions=1},func.func(kiln-plan-buffers))' | FileCheck %s --check-prefix=PLAN
// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(one-shot-bufferize{bufferize-function-boundaries=1 function-boundary-type-conversion=identity-layout-map},cse,canonicalize)' | FileCheck %s --check-prefix=INPLACE

// A blocked convolution becomes one call of the runtime on its buffers'
// addresses: the call site's state (a zeroed global of its own), the sizes
// (n, c, ih, iw, f, group, kh, kw, oh, ow), strides, dilations and pads
// (top, left, bottom, right), the channels per block, the input, the filters, the bias (0: none), a
// fresh output buffer and the elements from one of its images to the next,
// the clamp (unbounded: infinities) and 0 for no addend. The call is marked as keeping no buffer after it returns
// and as only reading its input, filters and bias (operands 20 to 22).
// CHECK-DAG: memref.global "private" @kiln_kernel_site : memref<1xi64> = dense<0> {alignment = 8 : i64}
// CHECK-DAG: memref.global "private" @kiln_kernel_site_0 : memref<1xi64> = dense<0> {alignment = 8 : i64}
// CHECK-LABEL: func.func @chain
// CHECK-SAME: (%[[X:.*]]: memref<1x2x8x8x16xf32>)
// CHECK-DAG: %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[INF:.*]] = arith.constant 0x7F800000 : f32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[NOBIAS:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : i64
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : i64
// CHECK-DAG: %[[C3:.*]] = arith.constant 3 : i64
// CHECK-DAG: %[[C8:.*]] = arith.constant 8 : i64
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : i64
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : i64
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : i64
// CHECK-DAG: %[[C1024:.*]] = arith.constant 1024 : i64
// CHECK-DAG: %[[C4096:.*]] = arith.constant 4096 : i64
// CHECK: %[[MID:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x4x8x8x16xf32>
// CHECK: %[[SITE1:.*]] = memref.get_global @kiln_kernel_site : memref<1xi64>
// CHECK: %[[S1:.*]] = memref.extract_aligned_pointer_as_index %[[SITE1]]
// CHECK: %[[IN1:.*]] = memref.extract_aligned_pointer_as_index %[[X]]
// CHECK: %[[W1:.*]] = memref.extract_aligned_pointer_as_index %{{.*}} : memref<64x32x3x3xf32>
// CHECK: %[[B1:.*]] = memref.extract_aligned_pointer_as_index %{{.*}} : memref<64xf32>
// CHECK: %[[OUT1:.*]] = memref.extract_aligned_pointer_as_index %[[MID]]
// CHECK: call @kiln_conv2d_blocked(%[[S1]], %[[C1]], %[[C32]], %[[C8]], %[[C8]], %[[C64]], %[[C1]], %[[C3]], %[[C3]], %[[C8]], %[[C8]], %[[C1]], %[[C1]], %[[C1]], %[[C1]], %[[C1]], %[[C1]], %[[C1]], %[[C1]], %[[C16]], %[[IN1]], %[[W1]], %[[B1]], %[[OUT1]], %[[C4096]], %[[ZERO]], %[[INF]], %[[C0]]) {kiln.no_capture, kiln.read_only_operands = array<i64: 20, 21, 22>}
// CHECK: %[[OUT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x1x8x8x16xf32>
// CHECK: %[[SITE2:.*]] = memref.get_global @kiln_kernel_site_0 : memref<1xi64>
// CHECK: %[[S2:.*]] = memref.extract_aligned_pointer_as_index %[[SITE2]]
// CHECK: %[[IN2:.*]] = memref.extract_aligned_pointer_as_index %[[MID]]
// CHECK: %[[W2:.*]] = memref.extract_aligned_pointer_as_index %{{.*}} : memref<16x64x1x1xf32>
// CHECK: %[[OUT2:.*]] = memref.extract_aligned_pointer_as_index %[[OUT]]
// CHECK: call @kiln_conv2d_blocked(%[[S2]], %[[C1]], %[[C64]], %[[C8]], %[[C8]], %[[C16]], %[[C1]], %[[C1]], %[[C1]], %[[C8]], %[[C8]], %[[C1]], %[[C1]], %[[C1]], %[[C1]], %[[C0]], %[[C0]], %[[C0]], %[[C0]], %[[C16]], %[[IN2]], %[[W2]], %[[NOBIAS]], %[[OUT2]], %[[C1024]], %[[NINF]], %[[INF]], %[[C0]]) {kiln.no_capture, kiln.read_only_operands = array<i64: 20, 21, 22>}
// CHECK: return %[[OUT]]
// CHECK: func.func private @kiln_conv2d_blocked(index, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, index, index, index, index, i64, f32, f32, i64)

// The intermediate between the two calls goes in the arena, live until the
// second call reads it: kiln-plan-buffers sees through the addresses to the
// calls.
// PLAN-LABEL: func.func @chain
// PLAN-SAME: kiln.intermediate_buffers = 1 : i64
// PLAN-SAME: kiln.unplanned_buffers = 0 : i64
// PLAN: memref.alloc() {alignment = 64 : i64, kiln.arena} : memref<16384xi8>
// PLAN-COUNT-2: call @kiln_conv2d_blocked
func.func @chain(%x: tensor<1x2x8x8x16xf32>) -> tensor<1x1x8x8x16xf32> {
  %w1 = arith.constant dense<1.0> : tensor<64x32x3x3xf32>
  %b1 = arith.constant dense<0.5> : tensor<64xf32>
  %w2 = arith.constant dense<2.0> : tensor<16x64x1x1xf32>
  %0 = kiln.blocked_conv %x, %w1, %b1 {clamp_min = 0.0 : f32, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x2x8x8x16xf32>, tensor<64x32x3x3xf32>, tensor<64xf32>) -> tensor<1x4x8x8x16xf32>
  %1 = kiln.blocked_conv %0, %w2 {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x4x8x8x16xf32>, tensor<16x64x1x1xf32>) -> tensor<1x1x8x8x16xf32>
  return %1 : tensor<1x1x8x8x16xf32>
}

// -----

// A fused activation is a flag of the call: 4 for a swish, 8 for a hard
// swish, with 1 for an addend; the clamp after it is passed as it is.
// CHECK-LABEL: func.func @activations
// CHECK-DAG: %[[SWISH:.*]] = arith.constant 4 : i64
// CHECK-DAG: %[[HARD:.*]] = arith.constant 9 : i64
// CHECK-DAG: %[[SIX:.*]] = arith.constant 6.000000e+00 : f32
// CHECK: call @kiln_conv2d_blocked({{.*}}, %{{.*}}, %[[SIX]], %[[SWISH]]) {kiln.no_capture, kiln.read_only_operands = array<i64: 20, 21, 22>}
// CHECK: call @kiln_conv2d_blocked({{.*}}, %{{.*}}, %{{.*}}, %[[HARD]]) {kiln.no_capture, kiln.read_only_operands = array<i64: 20, 21, 22>}
func.func @activations(%x: tensor<1x1x5x5x16xf32>) -> tensor<1x1x5x5x16xf32> {
  %w = arith.constant dense<1.0> : tensor<16x16x1x1xf32>
  %0 = kiln.blocked_conv %x, %w {activation = #kiln<conv_activation swish>, clamp_max = 6.0 : f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x5x5x16xf32>, tensor<16x16x1x1xf32>) -> tensor<1x1x5x5x16xf32>
  %1 = kiln.blocked_conv %0, %w add %0 {activation = #kiln<conv_activation hard_swish>, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x5x5x16xf32>, tensor<16x16x1x1xf32>, tensor<1x1x5x5x16xf32>) -> tensor<1x1x5x5x16xf32>
  return %1 : tensor<1x1x5x5x16xf32>
}

// -----

// With an addend, the call writes into the addend's buffer, which holds the
// residual branch (flag 1): in place where nothing reads the addend later,
// into a copy of it where something does (the same call's input here) or
// where it is the caller's (a function argument).
// CHECK-LABEL: func.func @residual
// CHECK-SAME: (%[[X:[^:]*]]: memref<1x1x4x4x16xf32>, %[[R:[^:]*]]: memref<1x1x4x4x16xf32>)
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i64
// CHECK-DAG: %[[NONE:.*]] = arith.constant 0 : i64
// CHECK: %[[COPY:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x1x4x4x16xf32>
// CHECK: memref.copy %[[R]], %[[COPY]]
// CHECK: %[[IN1:.*]] = memref.extract_aligned_pointer_as_index %[[X]]
// CHECK: %[[OUT1:.*]] = memref.extract_aligned_pointer_as_index %[[COPY]]
// CHECK: call @kiln_conv2d_blocked({{.*}}, %[[IN1]], %{{.*}}, %{{.*}}, %[[OUT1]], %{{.*}}, %{{.*}}, %{{.*}}, %[[ONE]]) {kiln.no_capture, kiln.read_only_operands = array<i64: 20, 21, 22>}
// CHECK: %[[Y:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x1x4x4x16xf32>
// CHECK: %[[IN2:.*]] = memref.extract_aligned_pointer_as_index %[[COPY]]
// CHECK: %[[OUT2:.*]] = memref.extract_aligned_pointer_as_index %[[Y]]
// CHECK: call @kiln_conv2d_blocked({{.*}}, %[[IN2]], %{{.*}}, %{{.*}}, %[[OUT2]], %{{.*}}, %{{.*}}, %{{.*}}, %[[NONE]]) {kiln.no_capture, kiln.read_only_operands = array<i64: 20, 21, 22>}
// CHECK-NOT: memref.copy
// CHECK: %[[IN3:.*]] = memref.extract_aligned_pointer_as_index %[[COPY]]
// CHECK: %[[OUT3:.*]] = memref.extract_aligned_pointer_as_index %[[Y]]
// CHECK: call @kiln_conv2d_blocked({{.*}}, %[[IN3]], %{{.*}}, %{{.*}}, %[[OUT3]], %{{.*}}, %{{.*}}, %{{.*}}, %[[ONE]]) {kiln.no_capture, kiln.read_only_operands = array<i64: 20, 21, 22>}
// CHECK: %[[Z:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x1x4x4x16xf32>
// CHECK: memref.copy %[[Y]], %[[Z]]
// CHECK: %[[IN4:.*]] = memref.extract_aligned_pointer_as_index %[[Y]]
// CHECK: %[[OUT4:.*]] = memref.extract_aligned_pointer_as_index %[[Z]]
// CHECK: call @kiln_conv2d_blocked({{.*}}, %[[IN4]], %{{.*}}, %{{.*}}, %[[OUT4]], %{{.*}}, %{{.*}}, %{{.*}}, %[[ONE]]) {kiln.no_capture, kiln.read_only_operands = array<i64: 20, 21, 22>}
// CHECK: return %[[Z]]
func.func @residual(%x: tensor<1x1x4x4x16xf32>, %r: tensor<1x1x4x4x16xf32>) -> tensor<1x1x4x4x16xf32> {
  %w = arith.constant dense<1.0> : tensor<16x16x1x1xf32>
  %0 = kiln.blocked_conv %x, %w add %r {clamp_min = 0.0 : f32, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x4x4x16xf32>, tensor<16x16x1x1xf32>, tensor<1x1x4x4x16xf32>) -> tensor<1x1x4x4x16xf32>
  %1 = kiln.blocked_conv %0, %w {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x4x4x16xf32>, tensor<16x16x1x1xf32>) -> tensor<1x1x4x4x16xf32>
  %2 = kiln.blocked_conv %0, %w add %1 {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x4x4x16xf32>, tensor<16x16x1x1xf32>, tensor<1x1x4x4x16xf32>) -> tensor<1x1x4x4x16xf32>
  %3 = kiln.blocked_conv %2, %w add %2 {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x4x4x16xf32>, tensor<16x16x1x1xf32>, tensor<1x1x4x4x16xf32>) -> tensor<1x1x4x4x16xf32>
  return %3 : tensor<1x1x4x4x16xf32>
}

// -----

// With a destination, the call writes into its buffer: a slot of a
// concatenation. A batch-1 slot is dense and starts 4 blocks of 4 x 4
// pixels in (1024 floats, 4096 bytes); the images of a batch-2 slot are
// each dense, 2 blocks of the concatenation apart (512 floats). The copy
// of the result over itself that the insertion leaves folds away once CSE
// has made its two views one, and the destination is not read.
// CHECK-LABEL: func.func @into_slots
// CHECK-DAG: %[[BYTES:.*]] = arith.constant 4096 : index
// CHECK-DAG: %[[IMAGE:.*]] = arith.constant 512 : i64
// CHECK-DAG: %[[SLOT_IMAGE:.*]] = arith.constant 1536 : i64
// CHECK: %[[SLOT:.*]] = memref.subview %{{.*}}[0, 4, 0, 0, 0] [1, 2, 4, 4, 16] [1, 1, 1, 1, 1]
// CHECK: %[[BASE:.*]] = memref.extract_aligned_pointer_as_index %[[SLOT]]
// CHECK: %[[OUT:.*]] = arith.addi %[[BASE]], %[[BYTES]] : index
// CHECK: call @kiln_conv2d_blocked({{.*}}, %[[OUT]], %[[SLOT_IMAGE]], %{{.*}}, %{{.*}}, %{{.*}}) {kiln.no_capture, kiln.read_only_operands = array<i64: 20, 21, 22>}
// CHECK: memref.subview %{{.*}}[0, 1, 0, 0, 0] [2, 1, 4, 4, 16] [1, 1, 1, 1, 1]
// CHECK: call @kiln_conv2d_blocked({{.*}}, %[[IMAGE]], %{{.*}}, %{{.*}}, %{{.*}}) {kiln.no_capture, kiln.read_only_operands = array<i64: 20, 21, 22>}
// INPLACE-LABEL: func.func @into_slots
// INPLACE-NOT: memref.copy
// INPLACE-COUNT-2: call @kiln_conv2d_blocked
// INPLACE-NOT: memref.copy
// INPLACE: return
func.func @into_slots(%x: tensor<1x1x4x4x16xf32>, %y: tensor<2x1x4x4x16xf32>, %t: tensor<1x6x4x4x16xf32>, %u: tensor<2x2x4x4x16xf32>) -> (tensor<1x6x4x4x16xf32>, tensor<2x2x4x4x16xf32>) {
  %w = arith.constant dense<1.0> : tensor<32x16x1x1xf32>
  %w1 = arith.constant dense<1.0> : tensor<16x16x1x1xf32>
  %s = tensor.extract_slice %t[0, 4, 0, 0, 0] [1, 2, 4, 4, 16] [1, 1, 1, 1, 1] : tensor<1x6x4x4x16xf32> to tensor<1x2x4x4x16xf32>
  %0 = kiln.blocked_conv %x, %w into %s {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x4x4x16xf32>, tensor<32x16x1x1xf32>, tensor<1x2x4x4x16xf32>) -> tensor<1x2x4x4x16xf32>
  %1 = tensor.insert_slice %0 into %t[0, 4, 0, 0, 0] [1, 2, 4, 4, 16] [1, 1, 1, 1, 1] : tensor<1x2x4x4x16xf32> into tensor<1x6x4x4x16xf32>
  %s2 = tensor.extract_slice %u[0, 1, 0, 0, 0] [2, 1, 4, 4, 16] [1, 1, 1, 1, 1] : tensor<2x2x4x4x16xf32> to tensor<2x1x4x4x16xf32>
  %2 = kiln.blocked_conv %y, %w1 into %s2 {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<2x1x4x4x16xf32>, tensor<16x16x1x1xf32>, tensor<2x1x4x4x16xf32>) -> tensor<2x1x4x4x16xf32>
  %3 = tensor.insert_slice %2 into %u[0, 1, 0, 0, 0] [2, 1, 4, 4, 16] [1, 1, 1, 1, 1] : tensor<2x1x4x4x16xf32> into tensor<2x2x4x4x16xf32>
  return %1, %3 : tensor<1x6x4x4x16xf32>, tensor<2x2x4x4x16xf32>
}

// -----

// A destination whose images are not dense (a band of columns) gets the
// result in a new buffer, copied into it after the call.
// CHECK-LABEL: func.func @into_columns
// CHECK: %[[SLOT:.*]] = memref.subview %{{.*}}[0, 0, 0, 2, 0] [1, 1, 4, 4, 16] [1, 1, 1, 1, 1]
// CHECK: %[[DENSE:.*]] = memref.alloc() {alignment = 64 : i64} : memref<1x1x4x4x16xf32>
// CHECK: %[[OUT:.*]] = memref.extract_aligned_pointer_as_index %[[DENSE]]
// CHECK: call @kiln_conv2d_blocked({{.*}}, %[[OUT]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) {kiln.no_capture, kiln.read_only_operands = array<i64: 20, 21, 22>}
// CHECK: memref.copy %[[DENSE]], %[[SLOT]]
func.func @into_columns(%x: tensor<1x1x4x4x16xf32>, %t: tensor<1x1x4x8x16xf32>) -> tensor<1x1x4x8x16xf32> {
  %w = arith.constant dense<1.0> : tensor<16x16x1x1xf32>
  %s = tensor.extract_slice %t[0, 0, 0, 2, 0] [1, 1, 4, 4, 16] [1, 1, 1, 1, 1] : tensor<1x1x4x8x16xf32> to tensor<1x1x4x4x16xf32>
  %0 = kiln.blocked_conv %x, %w into %s {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x4x4x16xf32>, tensor<16x16x1x1xf32>, tensor<1x1x4x4x16xf32>) -> tensor<1x1x4x4x16xf32>
  %1 = tensor.insert_slice %0 into %t[0, 0, 0, 2, 0] [1, 1, 4, 4, 16] [1, 1, 1, 1, 1] : tensor<1x1x4x4x16xf32> into tensor<1x1x4x8x16xf32>
  return %1 : tensor<1x1x4x8x16xf32>
}

// -----

// A slot of an intermediate concatenation, passed by its first element's
// address (the buffer's plus an offset): kiln-plan-buffers still sees the
// call through the offset and plans the concatenation in the arena.
// PLAN-LABEL: func.func @slot_of_an_intermediate
// PLAN-SAME: kiln.intermediate_buffers = 1 : i64
// PLAN-SAME: kiln.unplanned_buffers = 0 : i64
// PLAN: arith.addi
// PLAN-COUNT-2: call @kiln_conv2d_blocked
func.func @slot_of_an_intermediate(%x: tensor<1x1x4x4x16xf32>) -> tensor<1x1x4x4x16xf32> {
  %w = arith.constant dense<1.0> : tensor<16x16x1x1xf32>
  %w2 = arith.constant dense<1.0> : tensor<16x32x1x1xf32>
  %e = tensor.empty() : tensor<1x2x4x4x16xf32>
  %i = tensor.insert_slice %x into %e[0, 0, 0, 0, 0] [1, 1, 4, 4, 16] [1, 1, 1, 1, 1] : tensor<1x1x4x4x16xf32> into tensor<1x2x4x4x16xf32>
  %s = tensor.extract_slice %i[0, 1, 0, 0, 0] [1, 1, 4, 4, 16] [1, 1, 1, 1, 1] : tensor<1x2x4x4x16xf32> to tensor<1x1x4x4x16xf32>
  %0 = kiln.blocked_conv %x, %w into %s {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x1x4x4x16xf32>, tensor<16x16x1x1xf32>, tensor<1x1x4x4x16xf32>) -> tensor<1x1x4x4x16xf32>
  %1 = tensor.insert_slice %0 into %i[0, 1, 0, 0, 0] [1, 1, 4, 4, 16] [1, 1, 1, 1, 1] : tensor<1x1x4x4x16xf32> into tensor<1x2x4x4x16xf32>
  %2 = kiln.blocked_conv %1, %w2 {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x2x4x4x16xf32>, tensor<16x32x1x1xf32>) -> tensor<1x1x4x4x16xf32>
  return %2 : tensor<1x1x4x4x16xf32>
}

// -----

// In blocks of 8 channels (AVX2's vectors) the call passes 8, and an RGB
// image's 3 channels come in NCHW (flag 2).
// CHECK-LABEL: func.func @blocks_of_8
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : i64
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : i64
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : i64
// CHECK-DAG: %[[C8:.*]] = arith.constant 8 : i64
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<1x3x5x5x8xf32>
// CHECK: call @kiln_conv2d_blocked({{.*}}, %[[C1]], %[[C1]], %[[C1]], %[[C1]], %[[C8]], %{{.*}}, %[[C2]]) {kiln.no_capture, kiln.read_only_operands = array<i64: 20, 21, 22>}
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<1x3x5x5x8xf32>
// CHECK: call @kiln_conv2d_blocked({{.*}}, %[[C0]], %[[C0]], %[[C0]], %[[C0]], %[[C8]], %{{.*}}, %[[C0]]) {kiln.no_capture, kiln.read_only_operands = array<i64: 20, 21, 22>}
func.func @blocks_of_8(%x: tensor<1x3x5x5xf32>) -> tensor<1x3x5x5x8xf32> {
  %w1 = arith.constant dense<1.0> : tensor<24x3x3x3xf32>
  %w2 = arith.constant dense<2.0> : tensor<20x24x1x1xf32>
  %0 = kiln.blocked_conv %x, %w1 {block = 8 : i64, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x3x5x5xf32>, tensor<24x3x3x3xf32>) -> tensor<1x3x5x5x8xf32>
  %1 = kiln.blocked_conv %0, %w2 {block = 8 : i64, dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x5x5x8xf32>, tensor<20x24x1x1xf32>) -> tensor<1x3x5x5x8xf32>
  return %1 : tensor<1x3x5x5x8xf32>
}

// -----

// Filters that are not a constant (a train step's weights) change between
// calls: flag 16 has the runtime pack them again on each.
// CHECK-LABEL: func.func @computed_filters
// CHECK-DAG: %[[COMPUTED:.*]] = arith.constant 16 : i64
// CHECK-DAG: %[[CONSTANT:.*]] = arith.constant 0 : i64
// CHECK: call @kiln_conv2d_blocked({{.*}}, %{{.*}}, %{{.*}}, %[[COMPUTED]]) {kiln.no_capture, kiln.read_only_operands = array<i64: 20, 21, 22>}
// CHECK: call @kiln_conv2d_blocked({{.*}}, %{{.*}}, %{{.*}}, %[[CONSTANT]]) {kiln.no_capture, kiln.read_only_operands = array<i64: 20, 21, 22>}
func.func @computed_filters(%x: tensor<1x2x6x6x8xf32>, %w: tensor<16x16x3x3xf32>) -> tensor<1x2x6x6x8xf32> {
  %c = arith.constant dense<1.0> : tensor<16x16x3x3xf32>
  %0 = kiln.blocked_conv %x, %w {block = 8 : i64, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x2x6x6x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x2x6x6x8xf32>
  %1 = kiln.blocked_conv %0, %c {block = 8 : i64, dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x2x6x6x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x2x6x6x8xf32>
  return %1 : tensor<1x2x6x6x8xf32>
}
