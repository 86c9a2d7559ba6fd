// RUN: kiln-opt %s -split-input-file -kiln-lower-to-linalg | FileCheck %s
// RUN: kiln-opt %s -split-input-file -kiln-lower-to-linalg=stack-rows | FileCheck %s --check-prefix=STACK

// CHECK-DAG: #[[ID:.*]] = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func @relu
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK: %[[E:.*]] = tensor.empty() : tensor<4xf32>
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[ID]]], iterator_types = ["parallel"]} ins(%[[X]] : tensor<4xf32>) outs(%[[E]] : tensor<4xf32>)
// CHECK: ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[NEG:.*]] = arith.cmpf olt, %[[IN]], %{{.*}} : f32
// CHECK: %[[SEL:.*]] = arith.select %[[NEG]], %{{.*}}, %[[IN]] : f32
// CHECK: linalg.yield %[[SEL]] : f32
// CHECK: return %[[R]]
func.func @relu(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.relu %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Broadcasting is an indexing map: the smaller operand is read with fewer dims.
// CHECK-DAG: #[[ID2:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func @add_broadcast
// CHECK: linalg.generic {indexing_maps = [#[[ID2]], #[[ROW]], #[[ID2]]], iterator_types = ["parallel", "parallel"]}
// CHECK: arith.addf
func.func @add_broadcast(%a: tensor<3x4xf32>, %b: tensor<4xf32>) -> tensor<3x4xf32> {
  %0 = kiln.add %a, %b : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

// Half-precision math runs in f32 and is rounded once at the end.
// CHECK-LABEL: func @exp_f16
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK: math.exp %{{.*}} : f32
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: return %{{.*}} : tensor<4xf16>
func.func @exp_f16(%a: tensor<4xf16>) -> tensor<4xf16> {
  %0 = kiln.exp %a : tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

// A stack of matrices of 64 rows or more times one matrix: one generic over
// (batch, m, n, k).
// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2, d3) -> (d3, d2)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func @batched_matmul_broadcast_rhs
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[FILL:.*]] = linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<2x64x5xf32>)
// CHECK: linalg.generic {indexing_maps = [#[[A]], #[[B]], #[[C]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
// CHECK-SAME: outs(%[[FILL]] : tensor<2x64x5xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK-NOT: tensor.expand_shape
func.func @batched_matmul_broadcast_rhs(%a: tensor<2x64x4xf32>, %b: tensor<4x5xf32>) -> tensor<2x64x5xf32> {
  %0 = kiln.matmul %a, %b : (tensor<2x64x4xf32>, tensor<4x5xf32>) -> tensor<2x64x5xf32>
  return %0 : tensor<2x64x5xf32>
}

// -----

// A stack of matrices of fewer rows (ConvNeXt's pointwise layers on a 7x7
// image) times one matrix: with stack-rows (the CPU's), one product of all
// the stack's rows; without, the stack as it is.
// STACK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// STACK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// STACK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// STACK-LABEL: func @stacked_matmul_broadcast_rhs
// STACK-SAME: (%[[X:.*]]: tensor<1x7x7x4xf32>, %[[W:.*]]: tensor<4x5xf32>)
// STACK: %[[ROWS:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1, 2], [3]] : tensor<1x7x7x4xf32> into tensor<49x4xf32>
// STACK: %[[FILL:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<49x5xf32>)
// STACK: %[[PRODUCT:.*]] = linalg.generic {indexing_maps = [#[[A]], #[[B]], #[[C]]], iterator_types = ["parallel", "parallel", "reduction"]}
// STACK-SAME: ins(%[[ROWS]], %[[W]] : tensor<49x4xf32>, tensor<4x5xf32>) outs(%[[FILL]] : tensor<49x5xf32>)
// STACK: %[[RESULT:.*]] = tensor.expand_shape %[[PRODUCT]] {{\[\[}}0, 1, 2], [3]] output_shape [1, 7, 7, 5] : tensor<49x5xf32> into tensor<1x7x7x5xf32>
// STACK: return %[[RESULT]]
// CHECK-LABEL: func @stacked_matmul_broadcast_rhs
// CHECK-NOT: tensor.collapse_shape
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]
// CHECK-NOT: tensor.expand_shape
func.func @stacked_matmul_broadcast_rhs(%a: tensor<1x7x7x4xf32>, %b: tensor<4x5xf32>) -> tensor<1x7x7x5xf32> {
  %0 = kiln.matmul %a, %b : (tensor<1x7x7x4xf32>, tensor<4x5xf32>) -> tensor<1x7x7x5xf32>
  return %0 : tensor<1x7x7x5xf32>
}

// -----

// With stack-rows, stacks of 64 rows or more, and of one matrix (whose unit
// batch loop unit-dimension folding removes later), stay as they are.
// STACK-LABEL: func @batched_matmul_rows
// STACK-NOT: tensor.collapse_shape
// STACK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// STACK-LABEL: func @unit_stack_matmul
// STACK-NOT: tensor.collapse_shape
// STACK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]
func.func @batched_matmul_rows(%a: tensor<2x64x4xf32>, %b: tensor<4x5xf32>) -> tensor<2x64x5xf32> {
  %0 = kiln.matmul %a, %b : (tensor<2x64x4xf32>, tensor<4x5xf32>) -> tensor<2x64x5xf32>
  return %0 : tensor<2x64x5xf32>
}
func.func @unit_stack_matmul(%a: tensor<1x3x4xf32>, %b: tensor<4x5xf32>) -> tensor<1x3x5xf32> {
  %0 = kiln.matmul %a, %b : (tensor<1x3x4xf32>, tensor<4x5xf32>) -> tensor<1x3x5xf32>
  return %0 : tensor<1x3x5xf32>
}

// -----

// CHECK-DAG: #[[KEEP:.*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-LABEL: func @reduce_sum_keepdims
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<3x1xf32>)
// CHECK: linalg.generic {{.*}}#[[KEEP]]]{{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: arith.addf
func.func @reduce_sum_keepdims(%x: tensor<3x4xf32>) -> tensor<3x1xf32> {
  %0 = kiln.reduce_sum %x {axes = array<i64: 1>} : (tensor<3x4xf32>) -> tensor<3x1xf32>
  return %0 : tensor<3x1xf32>
}

// -----

// Softmax is max-subtracted for stability: max, subtract, exp, sum, then one
// reciprocal per row and a multiplication per element.
// CHECK-LABEL: func @softmax
// CHECK: arith.constant 0xFF800000 : f32
// CHECK: arith.maximumf
// CHECK: arith.subf
// CHECK: math.exp
// CHECK: arith.addf
// CHECK: linalg.generic {{.*}}ins(%{{.*}} : tensor<3x1xf32>) outs(%{{.*}} : tensor<3x1xf32>)
// CHECK: arith.divf
// CHECK: linalg.generic {{.*}}ins(%{{.*}}, %{{.*}} : tensor<3x4xf32>, tensor<3x1xf32>)
// CHECK: arith.mulf
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @softmax(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %0 = kiln.softmax %x {axis = 1 : i64} : tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

// Grouped convolution: padding, then channels split into (group, channel).
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d0, d1, d5, d3 * 2 + d6, d4 * 2 + d7)>
// CHECK-DAG: #[[W:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6, d7) -> (d1, d2, d5, d6, d7)>
// CHECK-LABEL: func @grouped_conv
// CHECK: %[[P:.*]] = tensor.pad %{{.*}} low[0, 0, 1, 1] high[0, 0, 1, 1]
// CHECK: tensor<1x4x7x5xf32> to tensor<1x4x9x7xf32>
// CHECK: %[[XG:.*]] = tensor.expand_shape %[[P]] {{\[}}[0], [1, 2], [3], [4]] output_shape [1, 2, 2, 9, 7]
// CHECK: %[[WG:.*]] = tensor.expand_shape %{{.*}} {{\[}}[0, 1], [2], [3], [4]] output_shape [2, 3, 2, 3, 3]
// CHECK: %[[BIAS:.*]] = linalg.generic
// CHECK: %[[Y:.*]] = linalg.generic {indexing_maps = [#[[IN]], #[[W]], {{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]} ins(%[[XG]], %[[WG]] : {{.*}}) outs(%[[BIAS]] : tensor<1x2x3x4x3xf32>)
// CHECK: tensor.collapse_shape %[[Y]] {{\[}}[0], [1, 2], [3], [4]] : tensor<1x2x3x4x3xf32> into tensor<1x6x4x3xf32>
func.func @grouped_conv(%x: tensor<1x4x7x5xf32>, %w: tensor<6x2x3x3xf32>, %bias: tensor<6xf32>) -> tensor<1x6x4x3xf32> {
  %0 = kiln.conv %x, %w, %bias {dilations = array<i64: 1, 1>, group = 2 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x4x7x5xf32>, tensor<6x2x3x3xf32>, tensor<6xf32>) -> tensor<1x6x4x3xf32>
  return %0 : tensor<1x6x4x3xf32>
}

// -----

// Pooling loops (n, c, oh, kh, kw, ow): the window loops sit outside the
// output row, so the innermost loop walks a contiguous output row.
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2 * 2 + d3, d5 * 2 + d4)>
// CHECK-DAG: #[[WIN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d3, d4)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5)>
// CHECK-LABEL: func @max_pool
// CHECK: arith.constant 0xFF800000 : f32
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[WIN]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "parallel"]}
// CHECK: arith.maximumf
func.func @max_pool(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  %0 = kiln.max_pool %x {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

// -----

// Pools of blocked images (N x C/16 x H x W x 16): the lanes are one more
// loop, innermost, and no padding, inside the window's loops, which are
// inside the output column's; an average pool's divisors broadcast along
// the lanes.
// CHECK-DAG: #[[BIN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2 * 2 + d4, d3 * 2 + d5, d6)>
// CHECK-DAG: #[[BWIN:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d4, d5)>
// CHECK-DAG: #[[BOUT:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3, d6)>
// CHECK-DAG: #[[COUNT:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d2, d3, 0)>
// CHECK-LABEL: func @blocked_pools
// CHECK: tensor.pad %{{.*}} low[0, 0, 1, 1, 0] high[0, 0, 1, 1, 0]
// CHECK: linalg.generic {indexing_maps = [#[[BIN]], #[[BWIN]], #[[BOUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "parallel"]}
// CHECK: arith.maximumf
// CHECK: tensor.pad %{{.*}} low[0, 0, 0, 0, 0] high[0, 0, 1, 1, 0]
// CHECK: arith.addf
// CHECK: arith.constant dense<{{\[\[\[}}2.500000e-01], [2.500000e-01], [5.000000e-01]], {{.*}} : tensor<3x3x1xf64>
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[COUNT]], #{{.*}}]
func.func @blocked_pools(%x: tensor<1x2x5x5x16xf32>) -> (tensor<1x2x3x3x16xf32>, tensor<1x2x3x3x16xf32>) {
  %0 = kiln.max_pool %x {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x2x5x5x16xf32>) -> tensor<1x2x3x3x16xf32>
  %1 = kiln.average_pool %x {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x2x5x5x16xf32>) -> tensor<1x2x3x3x16xf32>
  return %0, %1 : tensor<1x2x3x3x16xf32>, tensor<1x2x3x3x16xf32>
}

// -----

// CHECK-LABEL: func @concat
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>, %[[Y:.*]]: tensor<2x1xf32>)
// CHECK: %[[E:.*]] = tensor.empty() : tensor<2x4xf32>
// CHECK: %[[S0:.*]] = tensor.insert_slice %[[X]] into %[[E]][0, 0] [2, 3] [1, 1]
// CHECK: %[[S1:.*]] = tensor.insert_slice %[[Y]] into %[[S0]][0, 3] [2, 1] [1, 1]
// CHECK: return %[[S1]]
func.func @concat(%x: tensor<2x3xf32>, %y: tensor<2x1xf32>) -> tensor<2x4xf32> {
  %0 = kiln.concat %x, %y {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// Tensors one element thick along the axis, side by side (stride phases
// interleaved): a generic over the output whose inputs hold the axis at 0,
// choosing input j at position j of the axis.
// CHECK-DAG: #[[PHASE:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
// CHECK-LABEL: func @interleaving_concat
// CHECK-SAME: (%[[A:.*]]: tensor<2x4x3x1xf32>, %[[B:.*]]: tensor<2x4x3x1xf32>, %[[C:.*]]: tensor<2x4x3x1xf32>)
// CHECK-NOT: tensor.insert_slice
// CHECK: linalg.generic {indexing_maps = [#[[PHASE]], #[[PHASE]], #[[PHASE]], #[[OUT]]], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%[[A]], %[[B]], %[[C]] : {{.*}}) outs(%{{.*}} : tensor<2x4x3x3xf32>)
// CHECK: ^bb0(%[[VA:.*]]: f32, %[[VB:.*]]: f32, %[[VC:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[J:.*]] = linalg.index 3
// CHECK: %[[IS1:.*]] = arith.cmpi eq, %[[J]], %c1
// CHECK: %[[BC:.*]] = arith.select %[[IS1]], %[[VB]], %[[VC]]
// CHECK: %[[IS0:.*]] = arith.cmpi eq, %[[J]], %c0
// CHECK: %[[R:.*]] = arith.select %[[IS0]], %[[VA]], %[[BC]]
// CHECK: linalg.yield %[[R]]
func.func @interleaving_concat(%a: tensor<2x4x3x1xf32>, %b: tensor<2x4x3x1xf32>, %c: tensor<2x4x3x1xf32>) -> tensor<2x4x3x3xf32> {
  %0 = kiln.concat %a, %b, %c {axis = 3 : i64} : (tensor<2x4x3x1xf32>, tensor<2x4x3x1xf32>, tensor<2x4x3x1xf32>) -> tensor<2x4x3x3xf32>
  return %0 : tensor<2x4x3x3xf32>
}

// -----

// A concat of one tensor and splat constants is padding: a generic over the
// output that reads the tensor (clamped, since the select evaluates it
// everywhere) between offsets 1 and 4 of the axis and the constants around
// it, instead of insert_slice copies that no kernel could split over threads.
// CHECK-LABEL: func @padding_concat
// CHECK-NOT: tensor.insert_slice
// CHECK: linalg.generic
// CHECK: %[[J:.*]] = linalg.index 1
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[LOCAL:.*]] = arith.subi %[[J]], %{{.*}}
// CHECK: %[[LOW:.*]] = arith.maxsi %[[LOCAL]], %{{.*}}
// CHECK: %[[CLAMPED:.*]] = arith.minsi %[[LOW]], %{{.*}}
// CHECK: %[[X:.*]] = tensor.extract %{{.*}}[%{{.*}}, %[[CLAMPED]]] : tensor<2x3xf32>
// CHECK: %[[IN:.*]] = arith.cmpi sge, %[[J]], %{{.*}}
// CHECK: %[[V:.*]] = arith.select %[[IN]], %[[X]], %[[ZERO]]
// CHECK: %[[FILL:.*]] = arith.constant -1.000000e+00 : f32
// CHECK: %[[PAST:.*]] = arith.cmpi sge, %[[J]], %{{.*}}
// CHECK: %[[R:.*]] = arith.select %[[PAST]], %[[FILL]], %[[V]]
// CHECK: linalg.yield %[[R]]
func.func @padding_concat(%x: tensor<2x3xf32>) -> tensor<2x6xf32> {
  %z = kiln.constant dense<0.0> : tensor<2x1xf32>
  %m = kiln.constant dense<-1.0> : tensor<2x2xf32>
  %0 = kiln.concat %z, %x, %m {axis = 1 : i64} : (tensor<2x1xf32>, tensor<2x3xf32>, tensor<2x2xf32>) -> tensor<2x6xf32>
  return %0 : tensor<2x6xf32>
}

// -----

// A negative step reads a forward strided window and reverses it: a
// generic over the output that extracts element (i, 1 - j) of the window.
// CHECK-LABEL: func @reversing_slice
// CHECK: %[[W:.*]] = tensor.extract_slice %{{.*}}[0, 1] [2, 2] [1, 2] : tensor<2x4xf32> to tensor<2x2xf32>
// CHECK: linalg.generic
// CHECK-NOT: ins(
// CHECK-SAME: outs(
// CHECK: %[[I:.*]] = linalg.index 0
// CHECK: %[[J:.*]] = linalg.index 1
// CHECK: %[[R:.*]] = arith.subi %{{.*}}, %[[J]]
// CHECK: tensor.extract %[[W]][%[[I]], %[[R]]] : tensor<2x2xf32>
func.func @reversing_slice(%x: tensor<2x4xf32>) -> tensor<2x2xf32> {
  %0 = kiln.slice %x {start = array<i64: 0, 3>, step = array<i64: 1, -2>} : tensor<2x4xf32> -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// CHECK-LABEL: func @forward_slice
// CHECK: %[[W:.*]] = tensor.extract_slice %{{.*}}[1, 0] [1, 2] [1, 2] : tensor<2x4xf32> to tensor<1x2xf32>
// CHECK-NOT: linalg.generic
// CHECK: return %[[W]]
func.func @forward_slice(%x: tensor<2x4xf32>) -> tensor<1x2xf32> {
  %0 = kiln.slice %x {start = array<i64: 1, 0>, step = array<i64: 1, 2>} : tensor<2x4xf32> -> tensor<1x2xf32>
  return %0 : tensor<1x2xf32>
}

// -----

// Negative indices wrap and every index is clamped into range, once per
// index, so a bad index never reads out of bounds; the gather reads the
// clamped indices.
// CHECK-LABEL: func @gather
// CHECK: %[[CLAMPED:.*]] = linalg.generic {{.*}} ins(%arg1 : tensor<2xi64>)
// CHECK: %[[I:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK-NOT: scf.if
// CHECK: arith.cmpi slt, %[[I]]
// CHECK: arith.maxsi
// CHECK: arith.minsi
// CHECK: linalg.generic {{.*}} ins(%[[CLAMPED]] : tensor<2xi64>)
// CHECK: tensor.extract %{{.*}}[%{{.*}}, %{{.*}}] : tensor<5x3xf32>
func.func @gather(%x: tensor<5x3xf32>, %i: tensor<2xi64>) -> tensor<2x3xf32> {
  %0 = kiln.gather %x, %i {axis = 0 : i64} : (tensor<5x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// A gather with index check 3: a generic over the indices records one outside
// [-5, 5) (3 + 1, and the index) in kiln_index_check and clamps it; the
// gather reads the clamped indices as they are.
// CHECK-LABEL: func @gather_checked
// CHECK: %[[CHECKED:.*]] = linalg.generic {{.*}} ins(%arg1 : tensor<2xi64>)
// CHECK: %[[I:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK: %[[LO:.*]] = arith.cmpi slt, %[[I]], %c-5
// CHECK: %[[HI:.*]] = arith.cmpi sge, %[[I]], %c5
// CHECK: %[[BAD:.*]] = arith.ori %[[LO]], %[[HI]] : i1
// CHECK: scf.if %[[BAD]] {
// CHECK:   %[[G:.*]] = memref.get_global @kiln_index_check : memref<2xi64>
// CHECK:   memref.atomic_rmw maxs %c4{{.*}}, %[[G]][%c0{{.*}}] : (i64, memref<2xi64>) -> i64
// CHECK:   %[[V:.*]] = arith.index_cast %[[I]] : index to i64
// CHECK:   memref.atomic_rmw assign %[[V]], %[[G]][%c1{{.*}}] : (i64, memref<2xi64>) -> i64
// CHECK: }
// CHECK: arith.maxsi
// CHECK: %[[C:.*]] = arith.minsi
// CHECK: %[[C64:.*]] = arith.index_cast %[[C]] : index to i64
// CHECK: linalg.yield %[[C64]] : i64
// CHECK: linalg.generic {{.*}} ins(%[[CHECKED]] : tensor<2xi64>)
// CHECK-NOT: arith.minsi
// CHECK: tensor.extract %arg0
memref.global @kiln_index_check : memref<2xi64> = dense<0>
func.func @gather_checked(%x: tensor<5x3xf32>, %i: tensor<2xi64>) -> tensor<2x3xf32> {
  %0 = kiln.gather %x, %i {axis = 0 : i64, kiln.index_check = 3 : i64} : (tensor<5x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Integer division never traps: a zero or -1 divisor is replaced by 1 and
// the result selected afterwards.
// CHECK-LABEL: func @integer_division
// CHECK: ^bb0(%[[A:.*]]: i32, %[[B:.*]]: i32, %{{.*}}: i32):
// CHECK: %[[Z:.*]] = arith.cmpi eq, %[[B]], %{{.*}} : i32
// CHECK: %[[M:.*]] = arith.cmpi eq, %[[B]], %{{.*}} : i32
// CHECK: %[[S:.*]] = arith.ori %[[Z]], %[[M]] : i1
// CHECK: %[[D:.*]] = arith.select %[[S]], %{{.*}}, %[[B]] : i32
// CHECK: %[[Q:.*]] = arith.divsi %[[A]], %[[D]] : i32
// CHECK: arith.select %[[S]], %{{.*}}, %[[Q]] : i32
func.func @integer_division(%a: tensor<4xi32>, %b: tensor<4xi32>) -> tensor<4xi32> {
  %0 = kiln.div %a, %b : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

// Dropout: each element draws Philox4x32-10 of its row-major index and the
// counter (10 rounds of 32x32->64-bit products), keeps the element when the
// draw's top 24 bits reach the ratio, and scales it by 1 / (1 - ratio).
// CHECK-LABEL: func.func @dropout
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<i64>)
// CHECK: linalg.index 1
// CHECK: linalg.index 0
// CHECK-COUNT-20: arith.muli %{{.*}} : i64
// CHECK: arith.cmpf oge
// CHECK: arith.select
func.func @dropout(%x: tensor<4x8xf32>, %step: tensor<i64>) -> tensor<4x8xf32> {
  %y = kiln.dropout %x, %step {ratio = 0.25 : f32, seed = 3 : i64} : (tensor<4x8xf32>, tensor<i64>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// With an offset, the index drawn for is the row-major index plus the offset.
// CHECK-LABEL: func.func @dropout_offset
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %{{.*}} : tensor<4x8xf32>, tensor<i64>, tensor<i64>)
// CHECK: ^bb0(%{{.*}}: f32, %{{.*}}: i64, %[[OFF:.*]]: i64, %{{.*}}: f32):
// CHECK: %[[I:.*]] = arith.index_castui %{{.*}} : index to i64
// CHECK: arith.addi %[[I]], %[[OFF]] : i64
func.func @dropout_offset(%x: tensor<4x8xf32>, %step: tensor<i64>, %offset: tensor<i64>) -> tensor<4x8xf32> {
  %y = kiln.dropout %x, %step offset %offset {ratio = 0.25 : f32, seed = 3 : i64} : (tensor<4x8xf32>, tensor<i64>, tensor<i64>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// GatherElements: the indices are wrapped and clamped once each, then the
// result reads data at its own position with the axis coordinate replaced
// by the index there.
// CHECK-LABEL: func @gather_elements
// CHECK: %[[I:.*]] = linalg.generic {{.*}} ins(%arg1 : tensor<3x2xi64>)
// CHECK: arith.minsi
// CHECK: linalg.generic {{.*}} ins(%[[I]] : tensor<3x2xi64>) outs(%{{.*}} : tensor<3x2xf32>)
// CHECK: %[[ROW:.*]] = linalg.index 0 : index
// CHECK: %[[COL:.*]] = arith.index_cast %{{.*}} : i64 to index
// CHECK: tensor.extract %arg0[%[[ROW]], %[[COL]]] : tensor<3x4xf32>
func.func @gather_elements(%x: tensor<3x4xf32>, %i: tensor<3x2xi64>) -> tensor<3x2xf32> {
  %0 = kiln.gather_elements %x, %i {axis = 1 : i64} : (tensor<3x4xf32>, tensor<3x2xi64>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// GatherND: one generic over the result reads each coordinate from the
// indices' last dimension, wraps and clamps it, then reads data.
// CHECK-LABEL: func @gather_nd
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<5x4xf32>)
// CHECK: %[[R:.*]] = linalg.index 0 : index
// CHECK: %[[C:.*]] = linalg.index 1 : index
// CHECK: tensor.extract %arg1[%[[R]], %{{.*}}] : tensor<5x2xi64>
// CHECK: arith.minsi
// CHECK: tensor.extract %arg1[%[[R]], %{{.*}}] : tensor<5x2xi64>
// CHECK: arith.minsi
// CHECK: tensor.extract %arg0[%{{.*}}, %{{.*}}, %[[C]]] : tensor<2x3x4xf32>
func.func @gather_nd(%x: tensor<2x3x4xf32>, %i: tensor<5x2xi64>) -> tensor<5x4xf32> {
  %0 = kiln.gather_nd %x, %i : (tensor<2x3x4xf32>, tensor<5x2xi64>) -> tensor<5x4xf32>
  return %0 : tensor<5x4xf32>
}

// -----

// Constant padding: the input coordinate is the result's minus the amount
// before; outside the input the element is the constant.
// CHECK-LABEL: func @pad_constant
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<2x7xf32>)
// CHECK: %[[J:.*]] = linalg.index 1 : index
// CHECK: %[[X:.*]] = arith.subi %[[J]], %c1
// CHECK: %[[OUT:.*]] = arith.ori
// CHECK: %[[V:.*]] = tensor.extract %arg0
// CHECK: %[[FILL:.*]] = tensor.extract %arg1[] : tensor<f32>
// CHECK: arith.select %[[OUT]], %[[FILL]], %[[V]] : f32
func.func @pad_constant(%x: tensor<2x4xf32>, %v: tensor<f32>) -> tensor<2x7xf32> {
  %0 = kiln.pad %x, %v : tensor<f32> {pads = array<i64: 0, 1, 0, 2>} : tensor<2x4xf32> -> tensor<2x7xf32>
  return %0 : tensor<2x7xf32>
}

// -----

// Reflect mirrors about the first element (-x) and the last (2 (n - 1) - x).
// CHECK-LABEL: func @pad_reflect
// CHECK: arith.subi %c0
// CHECK: arith.subi %c6
// CHECK-NOT: arith.ori
func.func @pad_reflect(%x: tensor<4xf32>) -> tensor<7xf32> {
  %0 = kiln.pad %x {pads = array<i64: 2, 1>, mode = "reflect"} : tensor<4xf32> -> tensor<7xf32>
  return %0 : tensor<7xf32>
}

// -----

// Nearest resize: only resized dimensions compute a coordinate (in f64),
// round it and clamp it into the input.
// CHECK-LABEL: func @resize_nearest
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x2x6x9xf32>)
// CHECK: %[[N:.*]] = linalg.index 0 : index
// CHECK: %[[CH:.*]] = linalg.index 1 : index
// CHECK-COUNT-2: math.floor {{.*}} : f64
// CHECK: tensor.extract %arg0[%[[N]], %[[CH]], %{{.*}}, %{{.*}}] : tensor<1x2x3x3xf32>
func.func @resize_nearest(%x: tensor<1x2x3x3xf32>) -> tensor<1x2x6x9xf32> {
  %0 = kiln.resize %x {scales = array<f64: 1.0, 1.0, 2.0, 3.0>} : tensor<1x2x3x3xf32> -> tensor<1x2x6x9xf32>
  return %0 : tensor<1x2x6x9xf32>
}

// -----

// Linear resize of two dimensions: four weighted reads.
// CHECK-LABEL: func @resize_linear
// CHECK-COUNT-4: tensor.extract %arg0
// CHECK-NOT: tensor.extract
// CHECK: arith.truncf {{.*}} : f64 to f32
func.func @resize_linear(%x: tensor<1x2x3x3xf32>) -> tensor<1x2x6x6xf32> {
  %0 = kiln.resize %x {mode = "linear", scales = array<f64: 1.0, 1.0, 2.0, 2.0>} : tensor<1x2x3x3xf32> -> tensor<1x2x6x6xf32>
  return %0 : tensor<1x2x6x6xf32>
}

// -----

// Cubic resize of one dimension: four weighted reads.
// CHECK-LABEL: func @resize_cubic
// CHECK-COUNT-4: tensor.extract %arg0
// CHECK-NOT: tensor.extract
func.func @resize_cubic(%x: tensor<2x4xf32>) -> tensor<2x8xf32> {
  %0 = kiln.resize %x {mode = "cubic", scales = array<f64: 1.0, 2.0>} : tensor<2x4xf32> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// CumSum: a reduced loop along the axis adds the elements at or before each.
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[OUT:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func @cumsum
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[OUT]]], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK: %[[I:.*]] = linalg.index 1 : index
// CHECK: %[[K:.*]] = linalg.index 2 : index
// CHECK: arith.cmpi sle, %[[K]], %[[I]] : index
func.func @cumsum(%x: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %0 = kiln.cumsum %x {axis = 1 : i64} : tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// -----

// CHECK-LABEL: func @cumsum_reverse_exclusive
// CHECK: arith.cmpi sgt
func.func @cumsum_reverse_exclusive(%x: tensor<5xi32>) -> tensor<5xi32> {
  %0 = kiln.cumsum %x {axis = 0 : i64, reverse = true, exclusive = true} : tensor<5xi32>
  return %0 : tensor<5xi32>
}

// -----

// Einsum: a loop per label; a repeated label reads the diagonal, and the
// labels the result drops are reduced.
// CHECK-DAG: #[[DIAG:.*]] = affine_map<(d0, d1) -> (d0, d1, d1)>
// CHECK-DAG: #[[KEEP:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func @einsum_diagonal
// CHECK: linalg.generic {indexing_maps = [#[[DIAG]], #[[KEEP]]], iterator_types = ["parallel", "parallel"]}
func.func @einsum_diagonal(%x: tensor<2x3x3xf32>) -> tensor<2x3xf32> {
  %0 = kiln.einsum %x {equation = "...ii->...i"} : (tensor<2x3x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-LABEL: func @einsum_batch_matmul
// CHECK: linalg.generic {indexing_maps = [#[[A]], #[[B]], #[[C]]], iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
// CHECK: arith.mulf
// CHECK: arith.addf
func.func @einsum_batch_matmul(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>) -> tensor<2x3x5xf32> {
  %0 = kiln.einsum %a, %b {equation = "bij, bjk -> bik"} : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// -----

// ScatterElements: the result starts as data; an innermost reduced loop
// visits the updates along the axis and combines those whose index names
// the element (the indices are also read along that loop, for its bound).
// CHECK-DAG: #[[BOUND:.*]] = affine_map<(d0, d1, d2) -> (0, d2)>
// CHECK-LABEL: func @scatter_elements
// CHECK: linalg.generic {indexing_maps = [#[[BOUND]], {{.*}}], iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg1 : tensor<3x2xi64>) outs(%arg0 : tensor<3x4xf32>)
// CHECK: %[[K:.*]] = linalg.index 2 : index
// CHECK: tensor.extract %arg1[%{{.*}}, %[[K]]] : tensor<3x2xi64>
// CHECK: arith.cmpi eq
// CHECK: tensor.extract %arg2[%{{.*}}, %[[K]]] : tensor<3x2xf32>
// CHECK: arith.addf
// CHECK: arith.select
func.func @scatter_elements(%x: tensor<3x4xf32>, %i: tensor<3x2xi64>, %u: tensor<3x2xf32>) -> tensor<3x4xf32> {
  %0 = kiln.scatter_elements %x, %i, %u {axis = 1 : i64, reduction = "add"} : (tensor<3x4xf32>, tensor<3x2xi64>, tensor<3x2xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

// ScatterND: the reduced loops visit every index row.
// CHECK-DAG: #[[ROWS:.*]] = affine_map<(d0, d1, d2) -> (d2, 0)>
// CHECK-LABEL: func @scatter_nd
// CHECK: linalg.generic {indexing_maps = [#[[ROWS]], {{.*}}], iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg1 : tensor<2x1xi64>) outs(%arg0 : tensor<3x4xf32>)
// CHECK: %[[ROW:.*]] = linalg.index 2 : index
// CHECK: tensor.extract %arg1[%[[ROW]], %{{.*}}] : tensor<2x1xi64>
// CHECK: tensor.extract %arg2[%[[ROW]], %{{.*}}] : tensor<2x4xf32>
// CHECK-NOT: arith.addf
func.func @scatter_nd(%x: tensor<3x4xf32>, %i: tensor<2x1xi64>, %u: tensor<2x4xf32>) -> tensor<3x4xf32> {
  %0 = kiln.scatter_nd %x, %i, %u : (tensor<3x4xf32>, tensor<2x1xi64>, tensor<2x4xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

// GridSample: the grid's x and y are read per result element; bilinear
// sampling reads four neighbours, each zero outside the input.
// CHECK-LABEL: func @grid_sample_bilinear
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x2x4x5xf32>)
// CHECK-COUNT-2: tensor.extract %arg1
// CHECK-COUNT-4: tensor.extract %arg0
// CHECK-NOT: tensor.extract
func.func @grid_sample_bilinear(%x: tensor<1x2x3x3xf32>, %g: tensor<1x4x5x2xf32>) -> tensor<1x2x4x5xf32> {
  %0 = kiln.grid_sample %x, %g : (tensor<1x2x3x3xf32>, tensor<1x4x5x2xf32>) -> tensor<1x2x4x5xf32>
  return %0 : tensor<1x2x4x5xf32>
}

// -----

// Bicubic sampling reads 16 neighbours.
// CHECK-LABEL: func @grid_sample_bicubic
// CHECK-COUNT-16: tensor.extract %arg0
// CHECK-NOT: tensor.extract
func.func @grid_sample_bicubic(%x: tensor<1x1x3x3xf32>, %g: tensor<1x2x2x2xf32>) -> tensor<1x1x2x2xf32> {
  %0 = kiln.grid_sample %x, %g {mode = "bicubic", padding_mode = "border"} : (tensor<1x1x3x3xf32>, tensor<1x2x2x2xf32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}

// -----

// Unsigned integers: is_unsigned picks arith's unsigned ops; division by 0
// gives 0 through a select, as for signed integers.
// CHECK-LABEL: func @unsigned_ops
// CHECK: arith.divui
// CHECK: arith.maxui
// CHECK: arith.minui
// CHECK: arith.remui
// CHECK: arith.cmpi ult
// CHECK: arith.cmpi uge
// CHECK-NOT: arith.divsi
// CHECK-NOT: arith.maxsi
func.func @unsigned_ops(%a: tensor<4xi8>, %b: tensor<4xi8>) -> (tensor<4xi8>, tensor<4xi8>, tensor<4xi8>, tensor<4xi8>, tensor<4xi1>, tensor<4xi1>) {
  %0 = kiln.div %a, %b {is_unsigned} : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  %1 = kiln.max %a, %b {is_unsigned} : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  %2 = kiln.min %a, %b {is_unsigned} : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  %3 = kiln.mod %a, %b {is_unsigned} : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  %4 = kiln.less %a, %b {is_unsigned} : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi1>
  %5 = kiln.greater_equal %a, %b {is_unsigned} : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi1>
  return %0, %1, %2, %3, %4, %5 : tensor<4xi8>, tensor<4xi8>, tensor<4xi8>, tensor<4xi8>, tensor<4xi1>, tensor<4xi1>
}

// -----

// Casts read and write unsigned integers as their attributes say.
// CHECK-LABEL: func @unsigned_casts
// CHECK: arith.uitofp
// CHECK: arith.extui
// CHECK: arith.fptoui
// CHECK: arith.sitofp
func.func @unsigned_casts(%a: tensor<4xi8>, %f: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi32>, tensor<4xi8>, tensor<4xf32>) {
  %0 = kiln.cast %a {unsigned_input} : tensor<4xi8> -> tensor<4xf32>
  %1 = kiln.cast %a {unsigned_input} : tensor<4xi8> -> tensor<4xi32>
  %2 = kiln.cast %f {unsigned_output} : tensor<4xf32> -> tensor<4xi8>
  %3 = kiln.cast %a : tensor<4xi8> -> tensor<4xf32>
  return %0, %1, %2, %3 : tensor<4xf32>, tensor<4xi32>, tensor<4xi8>, tensor<4xf32>
}

// -----

// Shifts by the bit width or more give 0 (LLVM leaves them undefined).
// CHECK-LABEL: func @shifts
// CHECK: arith.cmpi ult
// CHECK: arith.shli
// CHECK: arith.select
// CHECK: arith.cmpi ult
// CHECK: arith.shrui
// CHECK: arith.select
func.func @shifts(%a: tensor<4xi16>, %b: tensor<4xi16>) -> (tensor<4xi16>, tensor<4xi16>) {
  %0 = kiln.shift_left %a, %b : (tensor<4xi16>, tensor<4xi16>) -> tensor<4xi16>
  %1 = kiln.shift_right %a, %b : (tensor<4xi16>, tensor<4xi16>) -> tensor<4xi16>
  return %0, %1 : tensor<4xi16>, tensor<4xi16>
}

// -----

// TopK: a generic ranks each element in its row (a reduction over a second
// position p along the axis), a second gives slot r the position of rank r.
// CHECK-LABEL: func @topk
// CHECK: %[[RANKS:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]{{.*}} ins(%arg0, %arg0 : tensor<2x6xf32>, tensor<2x6xf32>) outs(%{{.*}} : tensor<2x6xi64>)
// CHECK: arith.cmpf uno
// CHECK: arith.cmpf ogt
// CHECK: arith.cmpi ult
// CHECK: arith.extui
// CHECK: linalg.generic {{.*}} ins(%[[RANKS]] : tensor<2x6xi64>) outs(%{{.*}} : tensor<2x3xi64>)
// CHECK: arith.cmpi eq
// CHECK: arith.select
func.func @topk(%x: tensor<2x6xf32>) -> tensor<2x3xi64> {
  %0 = kiln.topk %x {axis = 1 : i64, k = 3 : i64} : (tensor<2x6xf32>) -> tensor<2x3xi64>
  return %0 : tensor<2x3xi64>
}

// -----

// GatherND with index check 5 over data [3, 4]: the generic over the index
// rows checks coordinate 0 against 3 (check 5, recorded as 6) and
// coordinate 1 against 4 (check 6, recorded as 7), each where the row
// position says, and clamps each into its own dimension.
// CHECK-LABEL: func @gather_nd_checked
// CHECK: %[[CHECKED:.*]] = linalg.generic {{.*}} ins(%arg1 : tensor<2x2xi64>)
// CHECK: %[[POS:.*]] = linalg.index 1 : index
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[POS]], %c0
// CHECK: scf.if %[[FIRST]] {
// CHECK:   arith.cmpi sge, %{{.*}}, %c3
// CHECK:   memref.atomic_rmw maxs %c6{{.*}}
// CHECK: %[[SECOND:.*]] = arith.cmpi eq, %[[POS]], %c1
// CHECK: scf.if %[[SECOND]] {
// CHECK:   arith.cmpi sge, %{{.*}}, %c4
// CHECK:   memref.atomic_rmw maxs %c7{{.*}}
// CHECK: arith.select %[[SECOND]]
// CHECK: linalg.generic {{.*}}outs(%{{.*}} : tensor<2xf32>)
// CHECK: tensor.extract %[[CHECKED]]
memref.global @kiln_index_check : memref<2xi64> = dense<0>
func.func @gather_nd_checked(%x: tensor<3x4xf32>, %i: tensor<2x2xi64>) -> tensor<2xf32> {
  %0 = kiln.gather_nd %x, %i {kiln.index_check = 5 : i64} : (tensor<3x4xf32>, tensor<2x2xi64>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
