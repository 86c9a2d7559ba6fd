// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-lower-to-linalg),canonicalize,cse,kiln-gpu-form-kernels{chip=sm_90 library-gemm=0},canonicalize,cse)' | FileCheck %s

// An elementwise kernel: each thread computes 4 consecutive elements with
// one 128-bit load and one 128-bit store; one block covers the 256 groups.
// CHECK-LABEL: func.func @relu
// CHECK: kiln_gpu.launch @kiln_kernels::@[[K:kiln_k[0-9]+]] grid [1, 1, 1] block [256, 1, 1](%{{.*}}) : (tensor<1024xf32>) -> tensor<1024xf32>
// CHECK: gpu.func @[[K]](%[[IN:.*]]: memref<1024xf32> {llvm.noalias, llvm.readonly}, %[[OUT:.*]]: memref<1024xf32> {llvm.noalias, llvm.writeonly}) kernel
// CHECK-SAME: known_block_size = array<i32: 256, 1, 1>
// CHECK: %[[ITEM:.*]] = arith.addi
// CHECK: scf.if
// CHECK: %[[AT:.*]] = arith.muli %[[ITEM]], %c4
// CHECK: vector.load %[[IN]][%[[AT]]] {alignment = 16 : i64} : memref<1024xf32>, vector<4xf32>
// CHECK-COUNT-4: arith.select
// CHECK: vector.store %{{.*}}, %[[OUT]][%[[AT]]] {alignment = 16 : i64}
func.func @relu(%x: tensor<1024xf32>) -> tensor<1024xf32> {
  %0 = kiln.fusion loop(%x) : (tensor<1024xf32>) -> tensor<1024xf32> {
  ^bb0(%a: tensor<1024xf32>):
    %r = kiln.relu %a : tensor<1024xf32>
    kiln.yield %r : tensor<1024xf32>
  }
  return %0 : tensor<1024xf32>
}

// -----

// Broadcast operands: the bias along the row is contiguous in the lanes and
// is one vector load too; the per-row scale is the same for all four lanes:
// one scalar load.
// CHECK-LABEL: func.func @broadcasts
// CHECK: gpu.func @{{.*}}(%[[X:.*]]: memref<64x128xf32> {{.*}}, %[[B:.*]]: memref<128xf32> {{.*}}, %[[C:.*]]: memref<64x1xf32> {{.*}}, %[[OUT:.*]]: memref<64x128xf32>
// CHECK: %[[COL:.*]] = arith.remui %{{.*}}, %c128
// CHECK: %[[ROW:.*]] = arith.divui %{{.*}}, %c128
// CHECK: vector.load %[[X]][%[[ROW]], %[[COL]]] {alignment = 16 : i64}
// CHECK: vector.load %[[B]][%[[COL]]] {alignment = 16 : i64}
// CHECK-COUNT-4: arith.addf
// CHECK: %[[SCALE:.*]] = memref.load %[[C]][%[[ROW]], %c0]
// CHECK-COUNT-4: arith.mulf %{{.*}}, %[[SCALE]]
// CHECK: vector.store %{{.*}}, %[[OUT]][%[[ROW]], %[[COL]]]
func.func @broadcasts(%x: tensor<64x128xf32>, %b: tensor<128xf32>, %c: tensor<64x1xf32>) -> tensor<64x128xf32> {
  %0 = kiln.fusion loop(%x, %b, %c) : (tensor<64x128xf32>, tensor<128xf32>, tensor<64x1xf32>) -> tensor<64x128xf32> {
  ^bb0(%a: tensor<64x128xf32>, %v: tensor<128xf32>, %w: tensor<64x1xf32>):
    %s = kiln.add %a, %v : (tensor<64x128xf32>, tensor<128xf32>) -> tensor<64x128xf32>
    %t = kiln.mul %s, %w : (tensor<64x128xf32>, tensor<64x1xf32>) -> tensor<64x128xf32>
    kiln.yield %t : tensor<64x128xf32>
  }
  return %0 : tensor<64x128xf32>
}

// -----

// A transpose reads four elements a column apart: four scalar loads, one
// vector store.
// CHECK-LABEL: func.func @transpose
// CHECK: gpu.func
// CHECK-NOT: vector.load
// CHECK-COUNT-4: memref.load %{{.*}} : memref<64x128xf32>
// CHECK: vector.store %{{.*}} : memref<128x64xf32>, vector<4xf32>
func.func @transpose(%x: tensor<64x128xf32>) -> tensor<128x64xf32> {
  %0 = kiln.fusion loop(%x) : (tensor<64x128xf32>) -> tensor<128x64xf32> {
  ^bb0(%a: tensor<64x128xf32>):
    %t = kiln.transpose %a {perm = array<i64: 1, 0>} : (tensor<64x128xf32>) -> tensor<128x64xf32>
    kiln.yield %t : tensor<128x64xf32>
  }
  return %0 : tensor<128x64xf32>
}

// -----

// A result that is a reshape of an input is a view in @main: no kernel.
// CHECK-LABEL: func.func @reshape_only
// CHECK-NEXT: %[[V:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0, 1], [2]] : tensor<2x3x4xf32> into tensor<6x4xf32>
// CHECK-NEXT: return %[[V]]
// CHECK: gpu.module @kiln_kernels {
// CHECK-NEXT: }
func.func @reshape_only(%x: tensor<2x3x4xf32>) -> tensor<6x4xf32> {
  %0 = kiln.fusion loop(%x) : (tensor<2x3x4xf32>) -> tensor<6x4xf32> {
  ^bb0(%a: tensor<2x3x4xf32>):
    %r = kiln.reshape %a {shape = array<i64: 6, 4>} : tensor<2x3x4xf32> -> tensor<6x4xf32>
    kiln.yield %r : tensor<6x4xf32>
  }
  return %0 : tensor<6x4xf32>
}

// -----

// Constant tensors move to @main (the host program uploads them once) and
// reach the kernel as a parameter.
// CHECK-LABEL: func.func @constant
// CHECK: %[[C:.*]] = arith.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
// CHECK: kiln_gpu.launch {{.*}}(%{{.*}}, %[[C]]) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK: gpu.func @{{.*}}(%{{.*}}: memref<4xf32> {llvm.noalias, llvm.readonly}, %{{.*}}: memref<4xf32> {llvm.noalias, llvm.readonly}, %{{.*}}: memref<4xf32> {llvm.noalias, llvm.writeonly})
func.func @constant(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = kiln.fusion loop(%x) : (tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>):
    %c = kiln.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
    %r = kiln.mul %a, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    kiln.yield %r : tensor<4xf32>
  }
  return %0 : tensor<4xf32>
}

// -----

// A multi-output fusion: two elementwise results and the sum of the same
// input. The sum reduces its only row, so one row kernel computes all three
// from one read of the input: a warp, 2 chunks of 4 per thread.
// CHECK-LABEL: func.func @siblings
// CHECK: %[[ALL:.*]]:3 = kiln_gpu.launch @kiln_kernels::@[[K:.*]] grid [1, 1, 1] block [32, 1, 1](%{{.*}}) : (tensor<256xf32>) -> (tensor<256xf32>, tensor<256xf32>, tensor<1xf32>)
// CHECK: return %[[ALL]]#0, %[[ALL]]#1, %[[ALL]]#2
// CHECK: gpu.func @[[K]]
// CHECK-COUNT-2: vector.load
// CHECK-NOT: vector.load
// CHECK: gpu.shuffle xor
// CHECK-COUNT-4: math.exp
// CHECK: vector.store
// CHECK-COUNT-4: arith.negf
// CHECK: vector.store
// CHECK: memref.store
func.func @siblings(%x: tensor<256xf32>) -> (tensor<256xf32>, tensor<256xf32>, tensor<1xf32>) {
  %0:3 = kiln.fusion input(%x) : (tensor<256xf32>) -> (tensor<256xf32>, tensor<256xf32>, tensor<1xf32>) {
  ^bb0(%a: tensor<256xf32>):
    %e = kiln.exp %a : tensor<256xf32>
    %n = kiln.neg %a : tensor<256xf32>
    %s = kiln.reduce_sum %a {axes = array<i64: 0>} : (tensor<256xf32>) -> tensor<1xf32>
    kiln.yield %e, %n, %s : tensor<256xf32>, tensor<256xf32>, tensor<1xf32>
  }
  return %0#0, %0#1, %0#2 : tensor<256xf32>, tensor<256xf32>, tensor<1xf32>
}

// -----

// A padded convolution computed directly (without the library): each
// thread accumulates four
// outputs over the 3x3 window; a padded element is read only inside the
// input (scf.if) and is zero elsewhere.
// CHECK-LABEL: func.func @pad
// CHECK: gpu.func
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32)
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32)
// CHECK: arith.cmpi uge
// CHECK: arith.cmpi ult
// CHECK: scf.if %{{.*}} -> (f32)
// CHECK: memref.load %{{.*}} : memref<1x1x4x4xf32>
// CHECK: } else {
// CHECK: scf.yield %cst : f32
// CHECK: vector.store {{.*}} : memref<1x1x4x4xf32>, vector<4xf32>
func.func @pad(%x: tensor<1x1x4x4xf32>, %w: tensor<1x1x3x3xf32>) -> tensor<1x1x4x4xf32> {
  %0 = kiln.fusion output(%x, %w) : (tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x4x4xf32> {
  ^bb0(%a: tensor<1x1x4x4xf32>, %b: tensor<1x1x3x3xf32>):
    %c = kiln.conv %a, %b {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x4x4xf32>
    kiln.yield %c : tensor<1x1x4x4xf32>
  }
  return %0 : tensor<1x1x4x4xf32>
}

// -----

// A large result: at most 8 blocks per multiprocessor of an sm_90 (132 of
// them), each thread striding over the result.
// CHECK-LABEL: func.func @grid_stride
// CHECK: kiln_gpu.launch {{.*}} grid [1056, 1, 1] block [256, 1, 1]
// CHECK: %[[FIRST:.*]] = arith.addi
// CHECK: scf.for %{{.*}} = %[[FIRST]] to %c1048576 step %c270336
func.func @grid_stride(%x: tensor<4096x1024xf32>) -> tensor<4096x1024xf32> {
  %0 = kiln.fusion loop(%x) : (tensor<4096x1024xf32>) -> tensor<4096x1024xf32> {
  ^bb0(%a: tensor<4096x1024xf32>):
    %r = kiln.neg %a : tensor<4096x1024xf32>
    kiln.yield %r : tensor<4096x1024xf32>
  }
  return %0 : tensor<4096x1024xf32>
}

// -----

// Past 4 items per thread, each trip takes 4 items one grid apart: four
// loads in flight together, then the stores; items past the end (the last
// trip's later ones) recompute the last item and store nothing.
// CHECK-LABEL: func.func @four_per_trip
// CHECK: kiln_gpu.launch {{.*}} grid [1056, 1, 1] block [256, 1, 1]
// CHECK: scf.for %{{.*}} = %{{.*}} to %c2097152 step %c1081344
// CHECK: vector.load
// CHECK: arith.minui %{{.*}}, %c2097151
// CHECK: vector.load
// CHECK: vector.load
// CHECK: vector.load
// CHECK-NOT: vector.load
// CHECK: vector.store
// CHECK-NEXT: scf.if
// CHECK-NEXT: vector.from_elements
// CHECK-NEXT: vector.store
func.func @four_per_trip(%x: tensor<8192x1024xf32>) -> tensor<8192x1024xf32> {
  %0 = kiln.fusion loop(%x) : (tensor<8192x1024xf32>) -> tensor<8192x1024xf32> {
  ^bb0(%a: tensor<8192x1024xf32>):
    %r = kiln.neg %a : tensor<8192x1024xf32>
    kiln.yield %r : tensor<8192x1024xf32>
  }
  return %0 : tensor<8192x1024xf32>
}

// -----

// Division by a constant is multiplication by its rounded reciprocal; a
// division by a variable stays a division.
// CHECK-LABEL: func.func @divide_by_constant
// CHECK-DAG: %[[THIRD:.*]] = arith.constant 0.333333343 : f32
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-COUNT-4: arith.mulf %{{.*}}, %[[THIRD]] : f32
// CHECK-COUNT-4: arith.divf %[[ONE]], %{{.*}} : f32
func.func @divide_by_constant(%x: tensor<1024xf32>) -> tensor<1024xf32> {
  %0 = kiln.fusion loop(%x) : (tensor<1024xf32>) -> tensor<1024xf32> {
  ^bb0(%a: tensor<1024xf32>):
    %c = kiln.constant dense<3.0> : tensor<f32>
    %d = kiln.div %a, %c : (tensor<1024xf32>, tensor<f32>) -> tensor<1024xf32>
    %r = kiln.reciprocal %d : tensor<1024xf32>
    kiln.yield %r : tensor<1024xf32>
  }
  return %0 : tensor<1024xf32>
}

// -----

// A bias's gradient: 32 sums of 100 x 28 x 28 elements, whose reduced
// dimensions surround the kept one, so no row kernel takes it. One thread
// per sum would leave the GPU idle: the sum goes in two steps, first 3,200
// partial sums over each image's pixels (trailing dimensions: a row kernel),
// then 32 sums of 100 partials, themselves in two steps (25 x 32 sums of 4,
// 32 of 25).
// CHECK-LABEL: func.func @bias_gradient
// CHECK: %[[P:.*]] = kiln_gpu.launch @kiln_kernels::@[[K1:.*]] grid [{{.*}}] block [{{.*}}](%{{.*}}) : (tensor<100x32x28x28xf32>) -> tensor<100x32xf32>
// CHECK: %[[Q:.*]] = kiln_gpu.launch @kiln_kernels::@[[K2:.*]] grid [{{.*}}] block [{{.*}}](%[[P]]) : (tensor<100x32xf32>) -> tensor<25x32xf32>
// CHECK: %[[G:.*]] = kiln_gpu.launch @kiln_kernels::@{{.*}} grid [{{.*}}] block [{{.*}}](%[[Q]]) : (tensor<25x32xf32>) -> tensor<32xf32>
// CHECK: return %[[G]]
// CHECK: gpu.func @[[K1]]
// CHECK: gpu.shuffle xor
// CHECK: gpu.func @[[K2]]
func.func @bias_gradient(%x: tensor<100x32x28x28xf32>) -> tensor<32xf32> {
  %0 = kiln.fusion input(%x) : (tensor<100x32x28x28xf32>) -> tensor<32xf32> {
  ^bb0(%a: tensor<100x32x28x28xf32>):
    %s = kiln.reduce_sum %a {axes = array<i64: 0, 2, 3>, keepdims = false} : (tensor<100x32x28x28xf32>) -> tensor<32xf32>
    kiln.yield %s : tensor<32xf32>
  }
  return %0 : tensor<32xf32>
}

// -----

// A short sum of the same shape (16 elements into each result) stays one
// loop kernel.
// CHECK-LABEL: func.func @short_column_sum
// CHECK-COUNT-1: kiln_gpu.launch
// CHECK-NOT: kiln_gpu.launch
func.func @short_column_sum(%x: tensor<4x32x2x2xf32>) -> tensor<32xf32> {
  %0 = kiln.fusion input(%x) : (tensor<4x32x2x2xf32>) -> tensor<32xf32> {
  ^bb0(%a: tensor<4x32x2x2xf32>):
    %s = kiln.reduce_sum %a {axes = array<i64: 0, 2, 3>, keepdims = false} : (tensor<4x32x2x2xf32>) -> tensor<32xf32>
    kiln.yield %s : tensor<32xf32>
  }
  return %0 : tensor<32xf32>
}

// -----

// A whole weight's sum of squares (an L2 term of the loss): one row of
// 1.6 million elements, which one block would crawl through. It goes in two
// steps too, before the row kernel: 512 partial sums of 3,136 (a row kernel
// of warps), then one of 512.
// CHECK-LABEL: func.func @sum_of_squares
// CHECK: %[[P:.*]] = kiln_gpu.launch @kiln_kernels::@[[K1:.*]] grid [{{.*}}] block [{{.*}}](%{{.*}}) : (tensor<512x3136xf32>) -> tensor<512xf32>
// CHECK: %[[S:.*]] = kiln_gpu.launch @kiln_kernels::@{{.*}}(%[[P]]) : (tensor<512xf32>) -> tensor<{{(1x)?}}f32>
// CHECK: gpu.func @[[K1]]
// CHECK: gpu.shuffle xor
func.func @sum_of_squares(%w: tensor<512x3136xf32>) -> tensor<f32> {
  %0 = kiln.fusion input(%w) : (tensor<512x3136xf32>) -> tensor<f32> {
  ^bb0(%a: tensor<512x3136xf32>):
    %s = kiln.reduce_sum_square %a {axes = array<i64: 0, 1>, keepdims = false} : (tensor<512x3136xf32>) -> tensor<f32>
    kiln.yield %s : tensor<f32>
  }
  return %0 : tensor<f32>
}

// -----

// A train step's updates: loop fusions that only the return reads merge into
// one kernel before the return, a range of blocks per shape (16 for the
// 64x256 weight, 1 for the bias, 256 threads each): blocks below 16 update
// the weight, the rest the bias. A fusion that something else reads keeps
// its own kernel, in place.
// CHECK-LABEL: func.func @updates
// CHECK: %[[OTHER:.*]] = kiln_gpu.launch @kiln_kernels::@[[K0:kiln_k[0-9]+]] grid [1, 1, 1]
// CHECK: %[[BOTH:.*]]:2 = kiln_gpu.launch @kiln_kernels::@[[K1:kiln_k[0-9]+]] grid [17, 1, 1] block [256, 1, 1]
// CHECK-SAME: -> (tensor<64x256xf32>, tensor<256xf32>)
// CHECK: return %[[BOTH]]#0, %[[BOTH]]#1, %[[OTHER]]
// CHECK: gpu.func @[[K1]]
// CHECK: %[[BLOCK:.*]] = gpu.block_id x
// CHECK: %[[BELOW:.*]] = arith.cmpi ult, %[[BLOCK]], %c16
// CHECK: scf.if %[[BELOW]] {
// CHECK: vector.store %{{.*}} : memref<64x256xf32>, vector<4xf32>
// CHECK: } else {
// CHECK: arith.subi %[[BLOCK]], %c16
// CHECK: vector.store %{{.*}} : memref<256xf32>, vector<4xf32>
func.func @updates(%w: tensor<64x256xf32>, %gw: tensor<64x256xf32>, %b: tensor<256xf32>, %gb: tensor<256xf32>) -> (tensor<64x256xf32>, tensor<256xf32>, tensor<256xf32>) {
  %0 = kiln.fusion loop(%w, %gw) : (tensor<64x256xf32>, tensor<64x256xf32>) -> tensor<64x256xf32> {
  ^bb0(%p: tensor<64x256xf32>, %g: tensor<64x256xf32>):
    %r = kiln.sub %p, %g : (tensor<64x256xf32>, tensor<64x256xf32>) -> tensor<64x256xf32>
    kiln.yield %r : tensor<64x256xf32>
  }
  %1 = kiln.fusion loop(%gb) : (tensor<256xf32>) -> tensor<256xf32> {
  ^bb0(%g: tensor<256xf32>):
    %r = kiln.neg %g : tensor<256xf32>
    kiln.yield %r : tensor<256xf32>
  }
  %2 = kiln.fusion loop(%b, %1) : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32> {
  ^bb0(%p: tensor<256xf32>, %g: tensor<256xf32>):
    %r = kiln.add %p, %g : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    kiln.yield %r : tensor<256xf32>
  }
  return %0, %2, %1 : tensor<64x256xf32>, tensor<256xf32>, tensor<256xf32>
}

// -----

// Results of different shapes of one fusion share its kernel too: the
// 512-element result's block, then the 32-element one's.
// CHECK-LABEL: func.func @two_shapes
// CHECK-COUNT-1: kiln_gpu.launch {{.*}} grid [2, 1, 1] block [128, 1, 1]
// CHECK-NOT: kiln_gpu.launch
func.func @two_shapes(%x: tensor<16x32xf32>) -> (tensor<16x32xf32>, tensor<32xf32>) {
  %0:2 = kiln.fusion input(%x) : (tensor<16x32xf32>) -> (tensor<16x32xf32>, tensor<32xf32>) {
  ^bb0(%a: tensor<16x32xf32>):
    %e = kiln.exp %a : tensor<16x32xf32>
    %s = kiln.reduce_sum %e {axes = array<i64: 0>, keepdims = false} : (tensor<16x32xf32>) -> tensor<32xf32>
    kiln.yield %e, %s : tensor<16x32xf32>, tensor<32xf32>
  }
  return %0#0, %0#1 : tensor<16x32xf32>, tensor<32xf32>
}

// -----

// A bias gradient over the rows of one matrix: 1024 sums of 256 rows. No
// whole loop can turn parallel (that would leave sums of one element), so
// the rows are cut in two: 16 partial sums of 16 rows for each column
// (16,384 partials, read as rows 16 * i + j), then 1024 sums of 16.
// CHECK-LABEL: func.func @rows_cut
// CHECK: %[[P:.*]] = kiln_gpu.launch @kiln_kernels::@[[K1:kiln_k[0-9]+]] grid [16, 1, 1] block [256, 1, 1](%{{.*}}) : (tensor<256x1024xf32>) -> tensor<16x1024xf32>
// CHECK: %[[S:.*]] = kiln_gpu.launch @kiln_kernels::@[[K2:kiln_k[0-9]+]] grid [1, 1, 1] block [256, 1, 1](%[[P]]) : (tensor<16x1024xf32>) -> tensor<1024xf32>
// CHECK: return %[[S]]
// CHECK: gpu.func @[[K1]]
// CHECK: scf.for %[[J:.*]] = %c0 to %c16 step %c1
// CHECK: %[[ROW:.*]] = arith.addi %[[J]], %{{.*}}
// CHECK: vector.load %{{.*}}[%[[ROW]], %{{.*}}] {{.*}} : memref<256x1024xf32>, vector<4xf32>
// CHECK: gpu.func @[[K2]]
// CHECK: scf.for %{{.*}} = %c0 to %c16 step %c1
func.func @rows_cut(%x: tensor<256x1024xf32>) -> tensor<1024xf32> {
  %0 = kiln.fusion input(%x) : (tensor<256x1024xf32>) -> tensor<1024xf32> {
  ^bb0(%a: tensor<256x1024xf32>):
    %s = kiln.reduce_sum %a {axes = array<i64: 0>, keepdims = false} : (tensor<256x1024xf32>) -> tensor<1024xf32>
    kiln.yield %s : tensor<1024xf32>
  }
  return %0 : tensor<1024xf32>
}

// -----

// The same with the reduced dimension kept (result 1 x 1024, output map
// (d0, d1) -> (0, d1)): split alike.
// CHECK-LABEL: func.func @rows_cut_keepdims
// CHECK: %[[P:.*]] = kiln_gpu.launch {{.*}} : (tensor<256x1024xf32>) -> tensor<16x1024xf32>
// CHECK: kiln_gpu.launch {{.*}}(%[[P]]) : (tensor<16x1024xf32>) -> tensor<1x1024xf32>
func.func @rows_cut_keepdims(%x: tensor<256x1024xf32>) -> tensor<1x1024xf32> {
  %0 = kiln.fusion input(%x) : (tensor<256x1024xf32>) -> tensor<1x1024xf32> {
  ^bb0(%a: tensor<256x1024xf32>):
    %s = kiln.reduce_sum %a {axes = array<i64: 0>, keepdims = true} : (tensor<256x1024xf32>) -> tensor<1x1024xf32>
    kiln.yield %s : tensor<1x1024xf32>
  }
  return %0 : tensor<1x1024xf32>
}
