// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-autodiff{wrt=w.*}),canonicalize)' | FileCheck %s

// A dense layer: the bias gradient sums the cotangent over the batch, the
// weight gradient is x^T dy, and relu's rule selects where its result is
// positive (so that nothing in the backward pass reads the sum before the
// ReLU). Only the arguments matching `wrt` get gradients.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<8x4xf32> {kiln.name = "x"}, %[[W:.*]]: tensor<4x3xf32> {kiln.name = "w"}, %[[B:.*]]: tensor<3xf32> {kiln.name = "wb"})
// CHECK-SAME: -> (tensor<f32>, tensor<4x3xf32> {kiln.name = "grad_w"}, tensor<3xf32> {kiln.name = "grad_wb"})
// CHECK: %[[Y:.*]] = kiln.matmul %[[X]], %[[W]]
// CHECK: %[[Z:.*]] = kiln.add %[[Y]], %[[B]]
// CHECK: %[[R:.*]] = kiln.relu %[[Z]]
// CHECK: %[[POS:.*]] = kiln.greater %[[R]], %{{.*}} : (tensor<8x3xf32>, tensor<f32>) -> tensor<8x3xi1>
// CHECK: %[[DZ:.*]] = kiln.where %[[POS]], %{{.*}}, %{{.*}} : (tensor<8x3xi1>, tensor<8x3xf32>, tensor<f32>) -> tensor<8x3xf32>
// CHECK: %[[DB:.*]] = kiln.reduce_sum %[[DZ]] {axes = array<i64: 0>} : (tensor<8x3xf32>) -> tensor<1x3xf32>
// CHECK: %[[DB1:.*]] = kiln.reshape %[[DB]] : tensor<1x3xf32> -> tensor<3xf32>
// CHECK: %[[XT:.*]] = kiln.transpose %[[X]] {perm = array<i64: 1, 0>}
// CHECK: %[[DW:.*]] = kiln.matmul %[[XT]], %[[DZ]] : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
// CHECK: return %{{.*}}, %[[DW]], %[[DB1]]
func.func @main(%x: tensor<8x4xf32> {kiln.name = "x"}, %w: tensor<4x3xf32> {kiln.name = "w"},
                %b: tensor<3xf32> {kiln.name = "wb"}) -> tensor<f32> {
  %y = kiln.matmul %x, %w : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  %z = kiln.add %y, %b : (tensor<8x3xf32>, tensor<3xf32>) -> tensor<8x3xf32>
  %r = kiln.relu %z : tensor<8x3xf32>
  %s = kiln.reduce_sum %r {axes = array<i64: 0, 1>, keepdims = false} : (tensor<8x3xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A matrix shared by a batch of products (a linear layer over a sequence):
// its gradient is one product of the flattened rows, [K, B*M] x [B*M, N],
// not a batch of products summed afterwards. The input gradient stays
// batched, dY W^T.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<2x5x4xf32> {kiln.name = "wx"}, %[[W:.*]]: tensor<4x3xf32> {kiln.name = "w"})
// CHECK: %[[WT:.*]] = kiln.transpose %[[W]] {perm = array<i64: 1, 0>} : (tensor<4x3xf32>) -> tensor<3x4xf32>
// CHECK: %[[DX:.*]] = kiln.matmul %{{.*}}, %[[WT]] : (tensor<2x5x3xf32>, tensor<3x4xf32>) -> tensor<2x5x4xf32>
// CHECK: %[[XF:.*]] = kiln.reshape %[[X]] : tensor<2x5x4xf32> -> tensor<10x4xf32>
// CHECK: %[[XT:.*]] = kiln.transpose %[[XF]] {perm = array<i64: 1, 0>} : (tensor<10x4xf32>) -> tensor<4x10xf32>
// CHECK: %[[GF:.*]] = kiln.reshape %{{.*}} : tensor<2x5x3xf32> -> tensor<10x3xf32>
// CHECK: %[[DW:.*]] = kiln.matmul %[[XT]], %[[GF]] : (tensor<4x10xf32>, tensor<10x3xf32>) -> tensor<4x3xf32>
// CHECK-NOT: kiln.reduce_sum
// CHECK: return %{{.*}}, %[[DX]], %[[DW]]
func.func @main(%x: tensor<2x5x4xf32> {kiln.name = "wx"}, %w: tensor<4x3xf32> {kiln.name = "w"}) -> tensor<f32> {
  %y = kiln.matmul %x, %w : (tensor<2x5x4xf32>, tensor<4x3xf32>) -> tensor<2x5x3xf32>
  %t = kiln.tanh %y : tensor<2x5x3xf32>
  %s = kiln.reduce_sum %t {axes = array<i64: 0, 1, 2>, keepdims = false} : (tensor<2x5x3xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A value used twice gets the sum of both cotangents.
// CHECK-LABEL: func.func @main
// CHECK: %[[SQ:.*]] = kiln.mul %[[W:.*]], %[[W]]
// CHECK: %[[G1:.*]] = kiln.mul %[[W]], %{{.*}}
// CHECK: %[[G2:.*]] = kiln.mul %[[W]], %{{.*}}
// CHECK: %[[SUM:.*]] = kiln.add %[[G1]], %[[G2]]
// CHECK: return %{{.*}}, %[[SUM]]
func.func @main(%w: tensor<4xf32> {kiln.name = "w"}) -> tensor<f32> {
  %sq = kiln.mul %w, %w : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %s = kiln.reduce_sum %sq {axes = array<i64: 0>, keepdims = false} : (tensor<4xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// Gemm's gradients are Gemms with the transposition flags adjusted, and its
// bias gradient is scaled by beta.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[A:.*]]: tensor<2x4xf32> {kiln.name = "a"}, %[[B:.*]]: tensor<3x4xf32> {kiln.name = "w"}, %[[C:.*]]: tensor<3xf32> {kiln.name = "wc"})
// CHECK: %[[DB:.*]] = kiln.gemm %[[G:.*]], %[[A]] {alpha = 5.000000e-01 : f32, trans_a = true}
// CHECK: %[[DC:.*]] = kiln.mul %{{.*}}, %{{.*}} : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
// CHECK: return %{{.*}}, %[[DB]], %[[DC]]
func.func @main(%a: tensor<2x4xf32> {kiln.name = "a"}, %b: tensor<3x4xf32> {kiln.name = "w"},
                %c: tensor<3xf32> {kiln.name = "wc"}) -> tensor<f32> {
  %y = kiln.gemm %a, %b, %c {alpha = 0.5 : f32, beta = 2.0 : f32, trans_b = true} : (tensor<2x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %s = kiln.reduce_sum %y {axes = array<i64: 0, 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// An argument the loss does not depend on gets zeros.
// CHECK-LABEL: func.func @main
// CHECK: %[[ZERO:.*]] = kiln.constant dense<0.000000e+00> : tensor<2xf32>
// CHECK: return %{{.*}}, %{{.*}}, %[[ZERO]]
func.func @main(%w: tensor<2xf32> {kiln.name = "w"}, %unused: tensor<2xf32> {kiln.name = "w_unused"}) -> tensor<f32> {
  %e = kiln.exp %w : tensor<2xf32>
  %s = kiln.reduce_sum %e {axes = array<i64: 0>, keepdims = false} : (tensor<2xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A maximum's cotangent is split evenly among the elements equal to it.
// CHECK-LABEL: func.func @main
// CHECK: %[[Y:.*]] = kiln.reduce_max %[[W:.*]] {axes = array<i64: 1>, keepdims = false}
// CHECK: %[[EQ:.*]] = kiln.equal %[[W]], %{{.*}}
// CHECK: %[[MASK:.*]] = kiln.cast %[[EQ]] : tensor<2x3xi1> -> tensor<2x3xf32>
// CHECK: %[[COUNT:.*]] = kiln.reduce_sum %[[MASK]] {axes = array<i64: 1>}
// CHECK: %[[SHARE:.*]] = kiln.div %{{.*}}, %[[COUNT]]
// CHECK: kiln.mul %[[MASK]], %[[SHARE]]
func.func @main(%w: tensor<2x3xf32> {kiln.name = "w"}) -> tensor<f32> {
  %m = kiln.reduce_max %w {axes = array<i64: 1>, keepdims = false} : (tensor<2x3xf32>) -> tensor<2xf32>
  %s = kiln.reduce_sum %m {axes = array<i64: 0>, keepdims = false} : (tensor<2xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// Max pooling in ceil mode: the last windows reach a row and a column past
// the 5x5 input, so the rule pools over the input padded at the end to 6x6
// (with -inf, never a maximum) and drops the padding from the gradient.
// CHECK-LABEL: func.func @main
// CHECK: %[[Y:.*]] = kiln.max_pool %[[X:[^ ]*]] {ceil_mode = true
// CHECK: %[[ROWS:.*]] = kiln.concat %[[X]], %{{.*}} {axis = 2 : i64} : (tensor<1x1x5x5xf32>, tensor<1x1x1x5xf32>) -> tensor<1x1x6x5xf32>
// CHECK: %[[PADDED:.*]] = kiln.concat %[[ROWS]], %{{.*}} {axis = 3 : i64} : (tensor<1x1x6x5xf32>, tensor<1x1x6x1xf32>) -> tensor<1x1x6x6xf32>
// CHECK: kiln.slice %[[PADDED]] {start = array<i64: 0, 0, 0, 0>, step = array<i64: 1, 1, 2, 2>} : tensor<1x1x6x6xf32> -> tensor<1x1x3x3xf32>
// CHECK: %[[DX:.*]] = kiln.slice %{{.*}} {start = array<i64: 0, 0, 0, 0>, step = array<i64: 1, 1, 1, 1>} : tensor<1x1x6x6xf32> -> tensor<1x1x5x5xf32>
// CHECK: return %{{.*}}, %[[DX]]
func.func @main(%w: tensor<1x1x5x5xf32> {kiln.name = "w"}) -> tensor<f32> {
  %p = kiln.max_pool %w {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = true} : (tensor<1x1x5x5xf32>) -> tensor<1x1x3x3xf32>
  %s = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<1x1x3x3xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// Overlapping max pooling (3x3, stride 2, pad 1): the first position of each
// window's maximum is found on the -inf padded 8x8 input, then the
// cotangent goes back one stride phase of the padded grid at a time. The
// cotangent and the positions get a row and column of nothing in front
// (a tap two rows down reaches the next window's phase row) and behind
// (4 phase rows, 3 windows): 5x5. Phase (0, 0) sums the taps (0, 0), (0,
// 2), (2, 0) and (2, 2), from windows shifted by 0 or 1; phases (0, 1) and
// (1, 0) two taps each, (1, 1) one. The 4x4 phases interleave into 8x8,
// whose window at the pad (1) is dX.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<1x1x6x6xf32> {kiln.name = "w"})
// CHECK: %[[Y:.*]] = kiln.max_pool %[[X]]
// CHECK: %[[PADDED:.*]] = kiln.concat %{{.*}}, %{{.*}}, %{{.*}} {axis = 3 : i64} : (tensor<1x1x8x1xf32>, tensor<1x1x8x6xf32>, tensor<1x1x8x1xf32>) -> tensor<1x1x8x8xf32>
// CHECK: kiln.slice %[[PADDED]] {start = array<i64: 0, 0, 0, 0>, step = array<i64: 1, 1, 2, 2>} : tensor<1x1x8x8xf32> -> tensor<1x1x3x3xf32>
// CHECK: kiln.slice %[[PADDED]] {start = array<i64: 0, 0, 2, 2>, step = array<i64: 1, 1, 2, 2>}
// CHECK: %[[FIRST:.*]] = kiln.min
// CHECK: %[[G:.*]] = kiln.concat %{{.*}}, %{{.*}}, %{{.*}} {axis = 3 : i64} : (tensor<1x1x5x1xf32>, tensor<1x1x5x3xf32>, tensor<1x1x5x1xf32>) -> tensor<1x1x5x5xf32>
// CHECK: %[[F:.*]] = kiln.concat %{{.*}}, %{{.*}}, %{{.*}} {axis = 3 : i64} : (tensor<1x1x5x1xf32>, tensor<1x1x5x3xf32>, tensor<1x1x5x1xf32>) -> tensor<1x1x5x5xf32>
// CHECK: %[[F11:.*]] = kiln.slice %[[F]] {start = array<i64: 0, 0, 1, 1>, step = array<i64: 1, 1, 1, 1>} : tensor<1x1x5x5xf32> -> tensor<1x1x4x4xf32>
// CHECK: %[[TAP00:.*]] = kiln.equal %[[F11]], %{{.*}} : (tensor<1x1x4x4xf32>, tensor<f32>) -> tensor<1x1x4x4xi1>
// CHECK: %[[G11:.*]] = kiln.slice %[[G]] {start = array<i64: 0, 0, 1, 1>, step = array<i64: 1, 1, 1, 1>} : tensor<1x1x5x5xf32> -> tensor<1x1x4x4xf32>
// CHECK: kiln.where %[[TAP00]], %[[G11]], %{{.*}}
// CHECK: kiln.slice %[[F]] {start = array<i64: 0, 0, 1, 0>
// CHECK: kiln.slice %[[F]] {start = array<i64: 0, 0, 0, 1>
// CHECK: kiln.slice %[[F]] {start = array<i64: 0, 0, 0, 0>
// CHECK: %[[P00:.*]] = kiln.add
// CHECK: kiln.reshape %[[P00]] : tensor<1x1x4x4xf32> -> tensor<1x1x4x1x4x1xf32>
// CHECK: %[[GRID:.*]] = kiln.concat %{{.*}}, %{{.*}} {axis = 3 : i64} : (tensor<1x1x4x1x4x2xf32>, tensor<1x1x4x1x4x2xf32>) -> tensor<1x1x4x2x4x2xf32>
// CHECK: %[[FLAT:.*]] = kiln.reshape %[[GRID]] : tensor<1x1x4x2x4x2xf32> -> tensor<1x1x8x8xf32>
// CHECK: %[[DX:.*]] = kiln.slice %[[FLAT]] {start = array<i64: 0, 0, 1, 1>, step = array<i64: 1, 1, 1, 1>} : tensor<1x1x8x8xf32> -> tensor<1x1x6x6xf32>
// CHECK: return %{{.*}}, %[[DX]]
func.func @main(%w: tensor<1x1x6x6xf32> {kiln.name = "w"}) -> tensor<f32> {
  %p = kiln.max_pool %w {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x1x6x6xf32>) -> tensor<1x1x3x3xf32>
  %s = kiln.reduce_sum %p {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<1x1x3x3xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A strided convolution's input gradient goes one stride phase at a time:
// phase (r, t) correlates the cotangent with the flipped taps r + 2m, t + 2n
// of the 3x3 filter (2x2, 2x1, 1x2 and 1x1 taps), channels swapped. The
// phases interleave into a 6x6 grid, whose window at the pad (1) is dX. The
// weight gradient correlates the input with the cotangent, dilated by the
// stride.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<1x2x5x5xf32> {kiln.name = "wx"}, %[[W:.*]]: tensor<3x2x3x3xf32> {kiln.name = "w"})
// CHECK: %[[T00:.*]] = kiln.slice %[[W]] {start = array<i64: 0, 0, 2, 2>, step = array<i64: 1, 1, -2, -2>} : tensor<3x2x3x3xf32> -> tensor<3x2x2x2xf32>
// CHECK: %[[P00:.*]] = kiln.conv %[[G:.*]], %{{.*}} {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x3x3xf32>, tensor<2x3x2x2xf32>) -> tensor<1x2x3x3xf32>
// CHECK: kiln.slice %[[W]] {start = array<i64: 0, 0, 2, 1>, step = array<i64: 1, 1, -2, -2>} : tensor<3x2x3x3xf32> -> tensor<3x2x2x1xf32>
// CHECK: %[[P01:.*]] = kiln.conv %[[G]], %{{.*}} {dilations = array<i64: 1, 1>, pads = array<i64: 1, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x3x3xf32>, tensor<2x3x2x1xf32>) -> tensor<1x2x3x3xf32>
// CHECK: kiln.slice %[[W]] {start = array<i64: 0, 0, 1, 2>, step = array<i64: 1, 1, -2, -2>} : tensor<3x2x3x3xf32> -> tensor<3x2x1x2xf32>
// CHECK: %[[P10:.*]] = kiln.conv %[[G]], %{{.*}} {dilations = array<i64: 1, 1>, pads = array<i64: 0, 1, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x3x3xf32>, tensor<2x3x1x2xf32>) -> tensor<1x2x3x3xf32>
// CHECK: kiln.slice %[[W]] {start = array<i64: 0, 0, 1, 1>, step = array<i64: 1, 1, -2, -2>} : tensor<3x2x3x3xf32> -> tensor<3x2x1x1xf32>
// CHECK: %[[P11:.*]] = kiln.conv %[[G]], %{{.*}} {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<1x3x3x3xf32>, tensor<2x3x1x1xf32>) -> tensor<1x2x3x3xf32>
// CHECK: %[[R00:.*]] = kiln.reshape %[[P00]] : tensor<1x2x3x3xf32> -> tensor<1x2x3x1x3x1xf32>
// CHECK: %[[R01:.*]] = kiln.reshape %[[P01]]
// CHECK: %[[R10:.*]] = kiln.reshape %[[P10]]
// CHECK: %[[R11:.*]] = kiln.reshape %[[P11]]
// CHECK: %[[C0:.*]] = kiln.concat %[[R00]], %[[R01]] {axis = 5 : i64}
// CHECK: %[[C1:.*]] = kiln.concat %[[R10]], %[[R11]] {axis = 5 : i64}
// CHECK: %[[GRID:.*]] = kiln.concat %[[C0]], %[[C1]] {axis = 3 : i64} : (tensor<1x2x3x1x3x2xf32>, tensor<1x2x3x1x3x2xf32>) -> tensor<1x2x3x2x3x2xf32>
// CHECK: %[[FLAT:.*]] = kiln.reshape %[[GRID]] : tensor<1x2x3x2x3x2xf32> -> tensor<1x2x6x6xf32>
// CHECK: %[[DX:.*]] = kiln.slice %[[FLAT]] {start = array<i64: 0, 0, 1, 1>, step = array<i64: 1, 1, 1, 1>} : tensor<1x2x6x6xf32> -> tensor<1x2x5x5xf32>
// CHECK: %[[DW:.*]] = kiln.conv %{{.*}}, %{{.*}} {dilations = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<2x1x5x5xf32>, tensor<3x1x3x3xf32>) -> tensor<2x3x3x3xf32>
// CHECK: return %{{.*}}, %[[DX]], %{{.*}}
func.func @main(%x: tensor<1x2x5x5xf32> {kiln.name = "wx"}, %w: tensor<3x2x3x3xf32> {kiln.name = "w"}) -> tensor<f32> {
  %y = kiln.conv %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x3x3xf32>
  %s = kiln.reduce_sum %y {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<1x3x3x3xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// An even input at stride 2: the last row and column of the input (past the
// end pad) meet no window, so the weight gradient's correlation drops them
// from its end padding (pads 1, 1, 0, 0) and has the kernel's size; nothing
// is computed to be cut away.
// CHECK-LABEL: func.func @main
// CHECK: %[[DW:.*]] = kiln.conv %{{.*}}, %{{.*}} {dilations = array<i64: 2, 2>, pads = array<i64: 1, 1, 0, 0>, strides = array<i64: 1, 1>} : (tensor<2x1x6x6xf32>, tensor<3x1x3x3xf32>) -> tensor<2x3x3x3xf32>
// CHECK-NEXT: kiln.transpose %[[DW]] {perm = array<i64: 1, 0, 2, 3>} : (tensor<2x3x3x3xf32>) -> tensor<3x2x3x3xf32>
func.func @main(%x: tensor<1x2x6x6xf32> {kiln.name = "wx"}, %w: tensor<3x2x3x3xf32> {kiln.name = "w"}) -> tensor<f32> {
  %y = kiln.conv %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>} : (tensor<1x2x6x6xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x3x3xf32>
  %s = kiln.reduce_sum %y {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<1x3x3x3xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A 1x1 at stride 2 on an even input (a ResNet downsample): the last row
// and column meet no window and there is no end padding to drop them from,
// so the input is cut to 5x5 before the weight gradient's correlation,
// which then has the kernel's 1x1 size (on 6x6 it would be 2x2, four times
// the work, three quarters of it cut away).
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x6x6xf32> {kiln.name = "wx"}
// CHECK: %[[CUT:.*]] = kiln.slice %[[X]] {start = array<i64: 0, 0, 0, 0>, step = array<i64: 1, 1, 1, 1>} : tensor<2x4x6x6xf32> -> tensor<2x4x5x5xf32>
// CHECK: %[[XT:.*]] = kiln.transpose %[[CUT]] {perm = array<i64: 1, 0, 2, 3>} : (tensor<2x4x5x5xf32>) -> tensor<4x2x5x5xf32>
// CHECK: %[[DW:.*]] = kiln.conv %[[XT]], %{{.*}} {dilations = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<4x2x5x5xf32>, tensor<8x2x3x3xf32>) -> tensor<4x8x1x1xf32>
// CHECK-NEXT: kiln.transpose %[[DW]] {perm = array<i64: 1, 0, 2, 3>} : (tensor<4x8x1x1xf32>) -> tensor<8x4x1x1xf32>
func.func @main(%x: tensor<2x4x6x6xf32> {kiln.name = "wx"}, %w: tensor<8x4x1x1xf32> {kiln.name = "w"}) -> tensor<f32> {
  %y = kiln.conv %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>} : (tensor<2x4x6x6xf32>, tensor<8x4x1x1xf32>) -> tensor<2x8x3x3xf32>
  %s = kiln.reduce_sum %y {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<2x8x3x3xf32>) -> tensor<f32>
  return %s : tensor<f32>
}

// -----

// A filter over four times the cotangent and the input together: the
// input gradient flips the cotangent, correlates it with the filter
// unflipped (channels swapped, the pads' ends traded) and flips the result
// back.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[X:.*]]: tensor<1x8x2x3xf32> {kiln.name = "wx"}, %[[W:.*]]: tensor<6x8x3x3xf32> {kiln.name = "w"})
// CHECK-NOT: kiln.slice %[[W]]
// CHECK: %[[GF:.*]] = kiln.slice %{{.*}} {start = array<i64: 0, 0, 1, 2>, step = array<i64: 1, 1, -1, -1>} : tensor<1x6x2x3xf32> -> tensor<1x6x2x3xf32>
// CHECK: %[[DXF:.*]] = kiln.conv %[[GF]], %{{.*}} {dilations = array<i64: 1, 1>, pads = array<i64: 1, 0, 1, 2>, strides = array<i64: 1, 1>} : (tensor<1x6x2x3xf32>, tensor<8x6x3x3xf32>) -> tensor<1x8x2x3xf32>
// CHECK: %[[DX:.*]] = kiln.slice %[[DXF]] {start = array<i64: 0, 0, 1, 2>, step = array<i64: 1, 1, -1, -1>} : tensor<1x8x2x3xf32> -> tensor<1x8x2x3xf32>
// CHECK: return %{{.*}}, %[[DX]], %{{.*}}
func.func @main(%x: tensor<1x8x2x3xf32> {kiln.name = "wx"}, %w: tensor<6x8x3x3xf32> {kiln.name = "w"}) -> tensor<f32> {
  %y = kiln.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 0, 1, 2>, dilations = array<i64: 1, 1>} : (tensor<1x8x2x3xf32>, tensor<6x8x3x3xf32>) -> tensor<1x6x2x3xf32>
  %s = kiln.reduce_sum %y {axes = array<i64: 0, 1, 2, 3>, keepdims = false} : (tensor<1x6x2x3xf32>) -> tensor<f32>
  return %s : tensor<f32>
}
