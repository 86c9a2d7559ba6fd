// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-lower-to-linalg,canonicalize,kiln-form-kernels{threads=2}),canonicalize,cse)' | FileCheck %s

// Softmax: one parallel loop over rows; both reductions and the
// normalization run inside it on the row. The exponential, read by the sum
// and by the division, is computed once per element into a row buffer.
// CHECK-LABEL: func.func @softmax
// CHECK-NOT: kiln.fusion
// CHECK: scf.forall (%[[I:.*]]) in (256)
// CHECK: tensor.extract_slice %{{.*}}[%[[I]], 0] [1, 1024]
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: arith.maximumf
// CHECK: %[[E:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]
// CHECK: math.exp
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}}ins(%[[E]] :
// CHECK-NOT: math.exp
// CHECK: arith.addf
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]{{.*}}ins(%[[E]], %{{.*}} :
// CHECK-NOT: math.exp
// CHECK: arith.divf
// CHECK: scf.forall.in_parallel
// CHECK-NOT: linalg.generic
// CHECK: return
func.func @softmax(%x: tensor<256x1024xf32>) -> tensor<256x1024xf32> {
  %0 = kiln.fusion input(%x) : (tensor<256x1024xf32>) -> tensor<256x1024xf32> {
  ^bb0(%a: tensor<256x1024xf32>):
    %m = kiln.reduce_max %a {axes = array<i64: 1>} : (tensor<256x1024xf32>) -> tensor<256x1xf32>
    %s = kiln.sub %a, %m : (tensor<256x1024xf32>, tensor<256x1xf32>) -> tensor<256x1024xf32>
    %e = kiln.exp %s : tensor<256x1024xf32>
    %t = kiln.reduce_sum %e {axes = array<i64: 1>} : (tensor<256x1024xf32>) -> tensor<256x1xf32>
    %d = kiln.div %e, %t : (tensor<256x1024xf32>, tensor<256x1xf32>) -> tensor<256x1024xf32>
    kiln.yield %d : tensor<256x1024xf32>
  }
  return %0 : tensor<256x1024xf32>
}

// -----

// GEMM + bias + ReLU: the result's columns are split into one tile per
// thread; each tile computes its matmul slice and applies the epilogue to it.
// CHECK-LABEL: func.func @gemm_bias_relu
// CHECK: scf.forall (%[[J:.*]]) = (0) to (1024) step (512)
// CHECK: %[[W:.*]] = tensor.extract_slice %{{.*}}[0, %[[J]]] [784, 512]
// CHECK: %[[Z:.*]] = linalg.fill
// CHECK: %[[M:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]{{.*}}ins(%{{.*}}, %[[W]] : tensor<64x784xf32>, tensor<784x512xf32>) outs(%[[Z]] : tensor<64x512xf32>)
// CHECK: %[[B:.*]] = tensor.extract_slice %{{.*}}[%[[J]]] [512]
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]{{.*}}ins(%[[M]], %[[B]] : tensor<64x512xf32>, tensor<512xf32>)
// CHECK: arith.addf
// CHECK: arith.select
// CHECK: scf.forall.in_parallel
func.func @gemm_bias_relu(%x: tensor<64x784xf32>, %w: tensor<784x1024xf32>, %b: tensor<1024xf32>) -> tensor<64x1024xf32> {
  %0 = kiln.fusion output(%x, %w, %b) : (tensor<64x784xf32>, tensor<784x1024xf32>, tensor<1024xf32>) -> tensor<64x1024xf32> {
  ^bb0(%a: tensor<64x784xf32>, %c: tensor<784x1024xf32>, %d: tensor<1024xf32>):
    %m = kiln.matmul %a, %c : (tensor<64x784xf32>, tensor<784x1024xf32>) -> tensor<64x1024xf32>
    %s = kiln.add %m, %d : (tensor<64x1024xf32>, tensor<1024xf32>) -> tensor<64x1024xf32>
    %r = kiln.relu %s : tensor<64x1024xf32>
    kiln.yield %r : tensor<64x1024xf32>
  }
  return %0 : tensor<64x1024xf32>
}

// -----

// The larger matmul dimension is split into one tile per thread, rounded up
// to a multiple of 16 when the last tile stays at least half full: 1000
// columns become 512 + 488, the last tile's width dynamic (the BLAS call
// takes it at run time). 1009 columns (a prime) are split the same way. 40
// columns would leave 8 in a second tile of 32, so they are split evenly,
// 20 + 20.
// CHECK-LABEL: func.func @even_tiles
// CHECK: scf.forall (%[[J:.*]]) = (0) to (1000) step (512)
// CHECK: %[[W:.*]] = affine.min #{{.*}}(%[[J]])
// CHECK: tensor.extract_slice %{{.*}}[0, %[[J]]] [512, %[[W]]]
// CHECK-LABEL: func.func @other_dimension
// CHECK: scf.forall (%[[J:.*]]) = (0) to (1009) step (512)
// CHECK-LABEL: func.func @narrow
// CHECK: scf.forall (%[[J:.*]]) = (0) to (40) step (20)
// CHECK: tensor.extract_slice %{{.*}}[0, %[[J]]] [4096, 20]
func.func @even_tiles(%x: tensor<64x512xf32>, %w: tensor<512x1000xf32>) -> tensor<64x1000xf32> {
  %0 = kiln.fusion output(%x, %w) : (tensor<64x512xf32>, tensor<512x1000xf32>) -> tensor<64x1000xf32> {
  ^bb0(%a: tensor<64x512xf32>, %c: tensor<512x1000xf32>):
    %m = kiln.matmul %a, %c : (tensor<64x512xf32>, tensor<512x1000xf32>) -> tensor<64x1000xf32>
    kiln.yield %m : tensor<64x1000xf32>
  }
  return %0 : tensor<64x1000xf32>
}
func.func @other_dimension(%x: tensor<32x512xf32>, %w: tensor<512x1009xf32>) -> tensor<32x1009xf32> {
  %0 = kiln.fusion output(%x, %w) : (tensor<32x512xf32>, tensor<512x1009xf32>) -> tensor<32x1009xf32> {
  ^bb0(%a: tensor<32x512xf32>, %c: tensor<512x1009xf32>):
    %m = kiln.matmul %a, %c : (tensor<32x512xf32>, tensor<512x1009xf32>) -> tensor<32x1009xf32>
    kiln.yield %m : tensor<32x1009xf32>
  }
  return %0 : tensor<32x1009xf32>
}
func.func @narrow(%x: tensor<32x4096xf32>, %w: tensor<4096x40xf32>) -> tensor<32x40xf32> {
  %0 = kiln.fusion output(%x, %w) : (tensor<32x4096xf32>, tensor<4096x40xf32>) -> tensor<32x40xf32> {
  ^bb0(%a: tensor<32x4096xf32>, %c: tensor<4096x40xf32>):
    %m = kiln.matmul %a, %c : (tensor<32x4096xf32>, tensor<4096x40xf32>) -> tensor<32x40xf32>
    kiln.yield %m : tensor<32x40xf32>
  }
  return %0 : tensor<32x40xf32>
}

// -----

// A product of one row (batch-1 inference) has a small result but reads a
// weight per multiply-add: 1280 x 1000 of them (1.3 M multiply-adds, under
// the 4 M that other small results need) are split by columns over the
// threads. A product of 256 x 32 (8 K) stays serial.
// CHECK-LABEL: func.func @one_row
// CHECK: scf.forall (%{{.*}}) = (0) to (1000) step (512)
// CHECK-LABEL: func.func @one_row_small
// CHECK-NOT: scf.forall
// CHECK: return
func.func @one_row(%x: tensor<1x1280xf32>, %w: tensor<1280x1000xf32>) -> tensor<1x1000xf32> {
  %0 = kiln.fusion output(%x, %w) : (tensor<1x1280xf32>, tensor<1280x1000xf32>) -> tensor<1x1000xf32> {
  ^bb0(%a: tensor<1x1280xf32>, %c: tensor<1280x1000xf32>):
    %m = kiln.matmul %a, %c : (tensor<1x1280xf32>, tensor<1280x1000xf32>) -> tensor<1x1000xf32>
    kiln.yield %m : tensor<1x1000xf32>
  }
  return %0 : tensor<1x1000xf32>
}
func.func @one_row_small(%x: tensor<1x256xf32>, %w: tensor<256x32xf32>) -> tensor<1x32xf32> {
  %0 = kiln.fusion output(%x, %w) : (tensor<1x256xf32>, tensor<256x32xf32>) -> tensor<1x32xf32> {
  ^bb0(%a: tensor<1x256xf32>, %c: tensor<256x32xf32>):
    %m = kiln.matmul %a, %c : (tensor<1x256xf32>, tensor<256x32xf32>) -> tensor<1x32xf32>
    kiln.yield %m : tensor<1x32xf32>
  }
  return %0 : tensor<1x32xf32>
}

// -----

// Loop fusion: the elementwise chain becomes one generic; rows are tiled.
// CHECK-LABEL: func.func @chain
// CHECK: scf.forall (%{{.*}}) in (64)
// CHECK-COUNT-1: linalg.generic
// CHECK-NOT: linalg.generic
func.func @chain(%x: tensor<64x512xf32>, %y: tensor<64x512xf32>) -> tensor<64x512xf32> {
  %0 = kiln.fusion loop(%x, %y) : (tensor<64x512xf32>, tensor<64x512xf32>) -> tensor<64x512xf32> {
  ^bb0(%a: tensor<64x512xf32>, %b: tensor<64x512xf32>):
    %s = kiln.add %a, %b : (tensor<64x512xf32>, tensor<64x512xf32>) -> tensor<64x512xf32>
    %t = kiln.tanh %s : tensor<64x512xf32>
    %r = kiln.mul %t, %a : (tensor<64x512xf32>, tensor<64x512xf32>) -> tensor<64x512xf32>
    kiln.yield %r : tensor<64x512xf32>
  }
  return %0 : tensor<64x512xf32>
}

// -----

// A blocked image back to NCHW: the input is contiguous along the 16 lanes
// of a block, so the tiles keep all 16 and take one row each (4 blocks x 32
// rows) rather than one lane of a whole block, which would read every cache
// line of the block for one float of it.
// CHECK-LABEL: func.func @lanes_whole
// CHECK: scf.forall (%[[B:.*]], %[[H:.*]]) in (4, 32)
// CHECK: tensor.extract_slice %{{.*}}[0, %[[B]], %[[H]], 0, 0] [1, 1, 1, 32, 16]
// CHECK: linalg.transpose
// CHECK: tensor.parallel_insert_slice %{{.*}} into %{{.*}}[0, %[[B]], 0, %[[H]], 0] [1, 1, 16, 1, 32]
func.func @lanes_whole(%x: tensor<1x4x32x32x16xf32>) -> tensor<1x4x16x32x32xf32> {
  %0 = kiln.fusion loop(%x) : (tensor<1x4x32x32x16xf32>) -> tensor<1x4x16x32x32xf32> {
  ^bb0(%a: tensor<1x4x32x32x16xf32>):
    %t = kiln.transpose %a {perm = array<i64: 0, 1, 4, 2, 3>} : (tensor<1x4x32x32x16xf32>) -> tensor<1x4x16x32x32xf32>
    kiln.yield %t : tensor<1x4x16x32x32xf32>
  }
  return %0 : tensor<1x4x16x32x32xf32>
}

// -----

// Kernels below min-parallel-elements stay serial: no loop over tiles.
// CHECK-LABEL: func.func @small
// CHECK-NOT: scf.forall
// CHECK: linalg.generic
// CHECK-NOT: kiln.fusion
func.func @small(%x: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = kiln.fusion loop(%x) : (tensor<8x8xf32>) -> tensor<8x8xf32> {
  ^bb0(%a: tensor<8x8xf32>):
    %r = kiln.relu %a : tensor<8x8xf32>
    kiln.yield %r : tensor<8x8xf32>
  }
  return %0 : tensor<8x8xf32>
}

// -----

// Convolution + bias + ReLU at batch 1: the tiles are bands of output rows
// with every output channel (im2col + sgemm per tile later), each padding
// just the input rows its window reads. Rows per band: 56 rows over
// 2 threads x 4 tiles would be 7, but the band's im2col data (64 x 3 x 3
// windows by rows x 56 positions) must stay within 512 KiB: 4 rows.
// CHECK-LABEL: func.func @conv_rows
// CHECK: scf.forall (%[[R:.*]]) = (0) to (56) step (4)
// CHECK: tensor.pad
// CHECK: tensor<64x?x56xf32> to tensor<64x6x58xf32>
// CHECK: tensor.extract_slice %{{.*}}[0, %[[R]], 0] [64, 4, 56]
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]{{.*}}outs(%{{.*}} : tensor<64x4x56xf32>)
// CHECK: arith.select
// CHECK: scf.forall.in_parallel
func.func @conv_rows(%x: tensor<1x64x56x56xf32>, %w: tensor<64x64x3x3xf32>, %b: tensor<64xf32>) -> tensor<1x64x56x56xf32> {
  %0 = kiln.fusion output(%x, %w, %b) : (tensor<1x64x56x56xf32>, tensor<64x64x3x3xf32>, tensor<64xf32>) -> tensor<1x64x56x56xf32> {
  ^bb0(%a: tensor<1x64x56x56xf32>, %f: tensor<64x64x3x3xf32>, %c: tensor<64xf32>):
    %y = kiln.conv %a, %f, %c {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x64x56x56xf32>, tensor<64x64x3x3xf32>, tensor<64xf32>) -> tensor<1x64x56x56xf32>
    %r = kiln.relu %y : tensor<1x64x56x56xf32>
    kiln.yield %r : tensor<1x64x56x56xf32>
  }
  return %0 : tensor<1x64x56x56xf32>
}

// -----

// Constant filters with channels in whole blocks of 16 go to oneDNN's
// blocked layout (kiln-convolutions-to-blas), which has no im2col buffer:
// its bands are bounded by their input and output rows instead (im2col
// would allow one row of 256 x 3 x 3 x 56), and a 3x3 window at stride 1
// takes whole tiles of Winograd's F(4x4, 3x3): 7 rows become 4. The same
// convolution by filters that are not constant keeps bands of one row.
// CHECK-LABEL: func.func @blocked_winograd_rows
// CHECK: scf.forall (%{{.*}}) = (0) to (56) step (4)
// CHECK: outs(%{{.*}} : tensor<256x4x56xf32>)
// CHECK-LABEL: func.func @im2col_rows
// CHECK: scf.forall (%{{.*}}) in (56)
func.func @blocked_winograd_rows(%x: tensor<1x256x56x56xf32>) -> tensor<1x256x56x56xf32> {
  %w = arith.constant dense<0.5> : tensor<256x256x3x3xf32>
  %0 = kiln.fusion output(%x, %w) : (tensor<1x256x56x56xf32>, tensor<256x256x3x3xf32>) -> tensor<1x256x56x56xf32> {
  ^bb0(%a: tensor<1x256x56x56xf32>, %f: tensor<256x256x3x3xf32>):
    %y = kiln.conv %a, %f {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x256x56x56xf32>, tensor<256x256x3x3xf32>) -> tensor<1x256x56x56xf32>
    kiln.yield %y : tensor<1x256x56x56xf32>
  }
  return %0 : tensor<1x256x56x56xf32>
}
func.func @im2col_rows(%x: tensor<1x256x56x56xf32>, %w: tensor<256x256x3x3xf32>) -> tensor<1x256x56x56xf32> {
  %0 = kiln.fusion output(%x, %w) : (tensor<1x256x56x56xf32>, tensor<256x256x3x3xf32>) -> tensor<1x256x56x56xf32> {
  ^bb0(%a: tensor<1x256x56x56xf32>, %f: tensor<256x256x3x3xf32>):
    %y = kiln.conv %a, %f {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x256x56x56xf32>, tensor<256x256x3x3xf32>) -> tensor<1x256x56x56xf32>
    kiln.yield %y : tensor<1x256x56x56xf32>
  }
  return %0 : tensor<1x256x56x56xf32>
}

// -----

// Bands the threads cannot share evenly cost as many bands as they would
// need to: 28 rows in bands of 4 are 7 bands, taking 2 threads the time of
// 8, so the output channels are split in two instead (the whole image's
// im2col, 3.6 MB, read by both tiles against the 590 KB of filters read by
// every band).
// CHECK-LABEL: func.func @uneven_bands
// CHECK: scf.forall (%{{.*}}) = (0) to (128) step (64)
// CHECK: outs(%{{.*}} : tensor<64x28x28xf32>)
func.func @uneven_bands(%x: tensor<1x128x28x28xf32>, %w: tensor<128x128x3x3xf32>) -> tensor<1x128x28x28xf32> {
  %0 = kiln.fusion output(%x, %w) : (tensor<1x128x28x28xf32>, tensor<128x128x3x3xf32>) -> tensor<1x128x28x28xf32> {
  ^bb0(%a: tensor<1x128x28x28xf32>, %f: tensor<128x128x3x3xf32>):
    %y = kiln.conv %a, %f {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x128x28x28xf32>, tensor<128x128x3x3xf32>) -> tensor<1x128x28x28xf32>
    kiln.yield %y : tensor<1x128x28x28xf32>
  }
  return %0 : tensor<1x128x28x28xf32>
}

// -----

// A blocked-layout window other than 3x3 at stride 1 (here 5x5) is a direct
// convolution, with no Winograd tiles to fill: 56 rows over 2 threads x 4
// tiles, 7 rows per band (im2col would allow one; its input and output
// rows, 64 x 60 + 64 x 56 elements each, allow 17).
// CHECK-LABEL: func.func @blocked_direct_rows
// CHECK: scf.forall (%{{.*}}) = (0) to (56) step (7)
// CHECK: outs(%{{.*}} : tensor<64x7x56xf32>)
func.func @blocked_direct_rows(%x: tensor<1x64x56x56xf32>) -> tensor<1x64x56x56xf32> {
  %w = arith.constant dense<0.5> : tensor<64x64x5x5xf32>
  %0 = kiln.fusion output(%x, %w) : (tensor<1x64x56x56xf32>, tensor<64x64x5x5xf32>) -> tensor<1x64x56x56xf32> {
  ^bb0(%a: tensor<1x64x56x56xf32>, %f: tensor<64x64x5x5xf32>):
    %y = kiln.conv %a, %f {dilations = array<i64: 1, 1>, pads = array<i64: 2, 2, 2, 2>, strides = array<i64: 1, 1>} : (tensor<1x64x56x56xf32>, tensor<64x64x5x5xf32>) -> tensor<1x64x56x56xf32>
    kiln.yield %y : tensor<1x64x56x56xf32>
  }
  return %0 : tensor<1x64x56x56xf32>
}

// -----

// Bands of unequal share: 43 rows over 2 threads x 4 tiles would be bands
// of 6, the last of one row, leaving one thread 24 rows and the other 19.
// The tallest band height from 3 to the 11 rows its input and output allow
// that gives the busiest thread the fewest rows is taken instead: 11 (22
// and 21). An image that bands share evenly keeps its height: 47 rows in
// bands of 6 (24 and 23).
// CHECK-LABEL: func.func @balanced_bands
// CHECK: scf.forall (%{{.*}}) = (0) to (43) step (11)
// CHECK-LABEL: func.func @even_bands
// CHECK: scf.forall (%{{.*}}) = (0) to (47) step (6)
func.func @balanced_bands(%x: tensor<1x128x43x43xf32>) -> tensor<1x128x43x43xf32> {
  %w = arith.constant dense<0.5> : tensor<128x128x7x1xf32>
  %0 = kiln.fusion output(%x, %w) : (tensor<1x128x43x43xf32>, tensor<128x128x7x1xf32>) -> tensor<1x128x43x43xf32> {
  ^bb0(%a: tensor<1x128x43x43xf32>, %f: tensor<128x128x7x1xf32>):
    %y = kiln.conv %a, %f {dilations = array<i64: 1, 1>, pads = array<i64: 3, 0, 3, 0>, strides = array<i64: 1, 1>} : (tensor<1x128x43x43xf32>, tensor<128x128x7x1xf32>) -> tensor<1x128x43x43xf32>
    kiln.yield %y : tensor<1x128x43x43xf32>
  }
  return %0 : tensor<1x128x43x43xf32>
}
func.func @even_bands(%x: tensor<1x128x47x47xf32>) -> tensor<1x128x47x47xf32> {
  %w = arith.constant dense<0.5> : tensor<128x128x7x1xf32>
  %0 = kiln.fusion output(%x, %w) : (tensor<1x128x47x47xf32>, tensor<128x128x7x1xf32>) -> tensor<1x128x47x47xf32> {
  ^bb0(%a: tensor<1x128x47x47xf32>, %f: tensor<128x128x7x1xf32>):
    %y = kiln.conv %a, %f {dilations = array<i64: 1, 1>, pads = array<i64: 3, 0, 3, 0>, strides = array<i64: 1, 1>} : (tensor<1x128x47x47xf32>, tensor<128x128x7x1xf32>) -> tensor<1x128x47x47xf32>
    kiln.yield %y : tensor<1x128x47x47xf32>
  }
  return %0 : tensor<1x128x47x47xf32>
}

// -----

// With at least one image per thread, each thread's tile is a run of whole
// images (8 on 2 threads: 4 per tile).
// CHECK-LABEL: func.func @conv_images
// CHECK: scf.forall (%[[N:.*]]) = (0) to (8) step (4)
// CHECK: tensor.extract_slice %{{.*}}[%[[N]], 0, 0] [4, 28, 28]
// CHECK: tensor.pad
// CHECK: tensor<4x28x28xf32> to tensor<4x32x32xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]{{.*}}outs(%{{.*}} : tensor<4x6x28x28xf32>)
// CHECK: scf.forall.in_parallel
func.func @conv_images(%x: tensor<8x1x28x28xf32>, %w: tensor<6x1x5x5xf32>) -> tensor<8x6x28x28xf32> {
  %0 = kiln.fusion output(%x, %w) : (tensor<8x1x28x28xf32>, tensor<6x1x5x5xf32>) -> tensor<8x6x28x28xf32> {
  ^bb0(%a: tensor<8x1x28x28xf32>, %f: tensor<6x1x5x5xf32>):
    %y = kiln.conv %a, %f {dilations = array<i64: 1, 1>, pads = array<i64: 2, 2, 2, 2>, strides = array<i64: 1, 1>} : (tensor<8x1x28x28xf32>, tensor<6x1x5x5xf32>) -> tensor<8x6x28x28xf32>
    %r = kiln.relu %y : tensor<8x6x28x28xf32>
    kiln.yield %r : tensor<8x6x28x28xf32>
  }
  return %0 : tensor<8x6x28x28xf32>
}

// -----

// A depthwise convolution's channels are one run per thread while their
// input and output planes fit in 512 KiB: 960 channels at 7x7, two runs of
// 480 (bounded as if by an im2col buffer, 297 fitted).
// CHECK-LABEL: func.func @depthwise_even_runs
// CHECK: scf.forall (%{{.*}}) = (0) to (960) step (480)
// CHECK: outs(%{{.*}} : tensor<480x7x7xf32>)
func.func @depthwise_even_runs(%x: tensor<1x960x7x7xf32>, %w: tensor<960x1x3x3xf32>) -> tensor<1x960x7x7xf32> {
  %0 = kiln.fusion output(%x, %w) : (tensor<1x960x7x7xf32>, tensor<960x1x3x3xf32>) -> tensor<1x960x7x7xf32> {
  ^bb0(%a: tensor<1x960x7x7xf32>, %f: tensor<960x1x3x3xf32>):
    %y = kiln.conv %a, %f {dilations = array<i64: 1, 1>, group = 960 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x960x7x7xf32>, tensor<960x1x3x3xf32>) -> tensor<1x960x7x7xf32>
    kiln.yield %y : tensor<1x960x7x7xf32>
  }
  return %0 : tensor<1x960x7x7xf32>
}

// -----

// Runs that divide the channels come first: 96 channels at 51x51 (stride
// 2), 9 of which fit in 512 KiB (103x103 in, 51x51 out), are runs of 8,
// every tile static (runs of 9 would leave a last one of 6, with a dynamic
// size). Without a divisor, runs of equal size in a multiple of the
// threads: 97 channels in 14 runs of 7, the last of 6.
// CHECK-LABEL: func.func @depthwise_dividing_runs
// CHECK: scf.forall (%{{.*}}) = (0) to (96) step (8)
// CHECK: outs(%{{.*}} : tensor<8x51x51xf32>)
// CHECK-LABEL: func.func @depthwise_prime_runs
// CHECK: scf.forall (%{{.*}}) = (0) to (97) step (7)
func.func @depthwise_dividing_runs(%x: tensor<1x96x101x101xf32>, %w: tensor<96x1x3x3xf32>) -> tensor<1x96x51x51xf32> {
  %0 = kiln.fusion output(%x, %w) : (tensor<1x96x101x101xf32>, tensor<96x1x3x3xf32>) -> tensor<1x96x51x51xf32> {
  ^bb0(%a: tensor<1x96x101x101xf32>, %f: tensor<96x1x3x3xf32>):
    %y = kiln.conv %a, %f {dilations = array<i64: 1, 1>, group = 96 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x96x101x101xf32>, tensor<96x1x3x3xf32>) -> tensor<1x96x51x51xf32>
    kiln.yield %y : tensor<1x96x51x51xf32>
  }
  return %0 : tensor<1x96x51x51xf32>
}
func.func @depthwise_prime_runs(%x: tensor<1x97x101x101xf32>, %w: tensor<97x1x3x3xf32>) -> tensor<1x97x51x51xf32> {
  %0 = kiln.fusion output(%x, %w) : (tensor<1x97x101x101xf32>, tensor<97x1x3x3xf32>) -> tensor<1x97x51x51xf32> {
  ^bb0(%a: tensor<1x97x101x101xf32>, %f: tensor<97x1x3x3xf32>):
    %y = kiln.conv %a, %f {dilations = array<i64: 1, 1>, group = 97 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<1x97x101x101xf32>, tensor<97x1x3x3xf32>) -> tensor<1x97x51x51xf32>
    kiln.yield %y : tensor<1x97x51x51xf32>
  }
  return %0 : tensor<1x97x51x51xf32>
}

// -----

// A convolution with a small result (64 x 7 x 7 = 3136 elements) but 28 K
// multiply-adds is still split over the threads (an elementwise kernel of
// that size stays serial, see @small).
// CHECK-LABEL: func.func @small_depthwise
// CHECK: scf.forall (%{{.*}}) = (0) to (64) step (32)
// CHECK: outs(%{{.*}} : tensor<32x7x7xf32>)
func.func @small_depthwise(%x: tensor<1x64x7x7xf32>, %w: tensor<64x1x3x3xf32>) -> tensor<1x64x7x7xf32> {
  %0 = kiln.fusion output(%x, %w) : (tensor<1x64x7x7xf32>, tensor<64x1x3x3xf32>) -> tensor<1x64x7x7xf32> {
  ^bb0(%a: tensor<1x64x7x7xf32>, %f: tensor<64x1x3x3xf32>):
    %y = kiln.conv %a, %f {dilations = array<i64: 1, 1>, group = 64 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x64x7x7xf32>, tensor<64x1x3x3xf32>) -> tensor<1x64x7x7xf32>
    kiln.yield %y : tensor<1x64x7x7xf32>
  }
  return %0 : tensor<1x64x7x7xf32>
}

// -----

// A convolution with fewer multiply-adds than that stays serial.
// CHECK-LABEL: func.func @tiny_depthwise
// CHECK-NOT: scf.forall
func.func @tiny_depthwise(%x: tensor<1x16x7x7xf32>, %w: tensor<16x1x3x3xf32>) -> tensor<1x16x7x7xf32> {
  %0 = kiln.fusion output(%x, %w) : (tensor<1x16x7x7xf32>, tensor<16x1x3x3xf32>) -> tensor<1x16x7x7xf32> {
  ^bb0(%a: tensor<1x16x7x7xf32>, %f: tensor<16x1x3x3xf32>):
    %y = kiln.conv %a, %f {dilations = array<i64: 1, 1>, group = 16 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x16x7x7xf32>, tensor<16x1x3x3xf32>) -> tensor<1x16x7x7xf32>
    kiln.yield %y : tensor<1x16x7x7xf32>
  }
  return %0 : tensor<1x16x7x7xf32>
}

// -----

// A result that folds to the fusion's own argument (x * 1, as gradients of
// sums produce) is the fusion's input once the body is inlined.
// CHECK-LABEL: func.func @result_is_argument
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK: linalg.generic {{.*}}ins(%[[X]] : tensor<2x3xf32>)
// CHECK: return %[[X]], %{{.*}} : tensor<2x3xf32>, tensor<1x3xf32>
func.func @result_is_argument(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<1x3xf32>) {
  %0:2 = kiln.fusion input(%x) : (tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<1x3xf32>) {
  ^bb0(%a: tensor<2x3xf32>):
    %one = kiln.constant dense<1.0> : tensor<2x3xf32>
    %m = kiln.mul %a, %one : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %s = kiln.reduce_sum %m {axes = array<i64: 0>} : (tensor<2x3xf32>) -> tensor<1x3xf32>
    kiln.yield %m, %s : tensor<2x3xf32>, tensor<1x3xf32>
  }
  return %0#0, %0#1 : tensor<2x3xf32>, tensor<1x3xf32>
}

// -----

// A small result that is much work (a convolution's weight gradient: 2400
// elements, each a sum of 6400 products) is still split over the threads.
// Its batch elements (input channels) share the filter and have 25
// positions each, so a tile takes enough of them for one product of 128
// columns as far as a tile per thread allows: 3 per tile, 2 tiles.
// CHECK-LABEL: func.func @small_result_much_work
// CHECK: scf.forall (%{{.*}}) = (0) to (6) step (3)
// CHECK: outs(%{{.*}} : tensor<3x16x5x5xf32>)
func.func @small_result_much_work(%x: tensor<6x64x14x14xf32>, %g: tensor<16x64x10x10xf32>) -> tensor<6x16x5x5xf32> {
  %0 = kiln.fusion output(%x, %g) : (tensor<6x64x14x14xf32>, tensor<16x64x10x10xf32>) -> tensor<6x16x5x5xf32> {
  ^bb0(%a: tensor<6x64x14x14xf32>, %f: tensor<16x64x10x10xf32>):
    %y = kiln.conv %a, %f {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<6x64x14x14xf32>, tensor<16x64x10x10xf32>) -> tensor<6x16x5x5xf32>
    kiln.yield %y : tensor<6x16x5x5xf32>
  }
  return %0 : tensor<6x16x5x5xf32>
}

// -----

// A fusion that reads its operand backwards (a convolution gradient's
// flipped filter) is tiled like any other: the reversed dimensions are read
// with tensor.extract at computed indices, not through an indexing map with
// a negative coefficient, from which tiling would take the wrong window.
// CHECK-LABEL: func.func @reversed_slice
// CHECK: scf.forall (%[[I:.*]]) in (512)
// CHECK: linalg.generic
// CHECK: linalg.index 2
// CHECK: arith.subi %{{.*}}, %{{.*}} : index
// CHECK: tensor.extract %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : tensor<512x512x3x3xf32>
func.func @reversed_slice(%w: tensor<512x512x3x3xf32>) -> tensor<512x512x3x3xf32> {
  %0 = kiln.fusion loop(%w) : (tensor<512x512x3x3xf32>) -> tensor<512x512x3x3xf32> {
  ^bb0(%a: tensor<512x512x3x3xf32>):
    %f = kiln.slice %a {start = array<i64: 0, 0, 2, 2>, step = array<i64: 1, 1, -1, -1>} : tensor<512x512x3x3xf32> -> tensor<512x512x3x3xf32>
    kiln.yield %f : tensor<512x512x3x3xf32>
  }
  return %0 : tensor<512x512x3x3xf32>
}

// -----

// A max pooling gradient's shape: the cotangent is spread over each 2x2
// window (a transpose of [.., 7, 7, 2, 2]) and read back as [.., 14, 14]
// through a reshape, which the root's tiles cannot take in. The spread is
// tiled on its own instead of running whole on one thread before them.
// CHECK-LABEL: func.func @spread_through_reshape
// CHECK: %[[SPREAD:.*]] = scf.forall
// CHECK: linalg.transpose
// CHECK: scf.forall.in_parallel
// CHECK: %[[FLAT:.*]] = tensor.collapse_shape %[[SPREAD]]
// CHECK: scf.forall
// CHECK: tensor.extract_slice %[[FLAT]]
// CHECK: arith.select
// CHECK: scf.forall.in_parallel
// CHECK-NOT: linalg.transpose
func.func @spread_through_reshape(%g: tensor<64x64x7x7x2x2xf32>, %y: tensor<64x64x14x14xf32>) -> tensor<64x64x14x14xf32> {
  %0 = kiln.fusion loop(%g, %y) : (tensor<64x64x7x7x2x2xf32>, tensor<64x64x14x14xf32>) -> tensor<64x64x14x14xf32> {
  ^bb0(%a: tensor<64x64x7x7x2x2xf32>, %b: tensor<64x64x14x14xf32>):
    %zero = kiln.constant dense<0.0> : tensor<f32>
    %t = kiln.transpose %a {perm = array<i64: 0, 1, 2, 4, 3, 5>} : (tensor<64x64x7x7x2x2xf32>) -> tensor<64x64x7x2x7x2xf32>
    %r = kiln.reshape %t : tensor<64x64x7x2x7x2xf32> -> tensor<64x64x14x14xf32>
    %m = kiln.greater %b, %zero : (tensor<64x64x14x14xf32>, tensor<f32>) -> tensor<64x64x14x14xi1>
    %s = kiln.where %m, %r, %zero : (tensor<64x64x14x14xi1>, tensor<64x64x14x14xf32>, tensor<f32>) -> tensor<64x64x14x14xf32>
    kiln.yield %s : tensor<64x64x14x14xf32>
  }
  return %0 : tensor<64x64x14x14xf32>
}

// -----

// Batch normalization's statistics: per-channel sums over batch and space
// (then a division) are a small result, but each channel reads 8x28x28
// elements, so the kernel takes one channel per tile, the sum whole in it.
// CHECK-LABEL: func.func @per_channel_mean
// CHECK: scf.forall (%[[C:.*]]) in (64)
// CHECK:   tensor.extract_slice %{{.*}}[0, %[[C]], 0, 0] [8, 1, 28, 28] [1, 1, 1, 1]
// CHECK:   linalg.generic {{.*}}iterator_types = ["reduction", "parallel", "reduction", "reduction"]
// CHECK:   arith.divf
func.func @per_channel_mean(%x: tensor<8x64x28x28xf32>) -> tensor<1x64x1x1xf32> {
  %0 = kiln.fusion input(%x) : (tensor<8x64x28x28xf32>) -> tensor<1x64x1x1xf32> {
  ^bb0(%a: tensor<8x64x28x28xf32>):
    %n = kiln.constant dense<6.272000e+03> : tensor<f32>
    %s = kiln.reduce_sum %a {axes = array<i64: 0, 2, 3>} : (tensor<8x64x28x28xf32>) -> tensor<1x64x1x1xf32>
    %m = kiln.div %s, %n : (tensor<1x64x1x1xf32>, tensor<f32>) -> tensor<1x64x1x1xf32>
    kiln.yield %m : tensor<1x64x1x1xf32>
  }
  return %0 : tensor<1x64x1x1xf32>
}

// -----

// The backward pass's sum of a product per channel: the reduction is the
// root, tiled along its one kept loop.
// CHECK-LABEL: func.func @per_channel_dot
// CHECK: scf.forall (%[[C:.*]]) in (64)
// CHECK:   linalg.generic {{.*}}iterator_types = ["reduction", "parallel", "reduction", "reduction"]
// CHECK:     arith.mulf
func.func @per_channel_dot(%x: tensor<8x64x28x28xf32>, %y: tensor<8x64x28x28xf32>) -> tensor<1x64x1x1xf32> {
  %0 = kiln.fusion input(%x, %y) : (tensor<8x64x28x28xf32>, tensor<8x64x28x28xf32>) -> tensor<1x64x1x1xf32> {
  ^bb0(%a: tensor<8x64x28x28xf32>, %b: tensor<8x64x28x28xf32>):
    %p = kiln.mul %a, %b : (tensor<8x64x28x28xf32>, tensor<8x64x28x28xf32>) -> tensor<8x64x28x28xf32>
    %s = kiln.reduce_sum %p {axes = array<i64: 0, 2, 3>} : (tensor<8x64x28x28xf32>) -> tensor<1x64x1x1xf32>
    kiln.yield %s : tensor<1x64x1x1xf32>
  }
  return %0 : tensor<1x64x1x1xf32>
}

// -----

// Sums over too few elements (8x2x2 per channel) stay on one thread.
// CHECK-LABEL: func.func @per_channel_small
// CHECK-NOT: scf.forall
func.func @per_channel_small(%x: tensor<8x64x2x2xf32>) -> tensor<1x64x1x1xf32> {
  %0 = kiln.fusion input(%x) : (tensor<8x64x2x2xf32>) -> tensor<1x64x1x1xf32> {
  ^bb0(%a: tensor<8x64x2x2xf32>):
    %s = kiln.reduce_sum %a {axes = array<i64: 0, 2, 3>} : (tensor<8x64x2x2xf32>) -> tensor<1x64x1x1xf32>
    kiln.yield %s : tensor<1x64x1x1xf32>
  }
  return %0 : tensor<1x64x1x1xf32>
}

// -----

// A sum over rows into columns (a bias gradient) cannot split its rows, but
// splits its columns, one block per thread, each summed over every row
// along memory (a tile per column would read it down a stride).
// CHECK-LABEL: func.func @column_sums
// CHECK: scf.forall (%[[J:.*]]) = (0) to (1024) step (512)
// CHECK: tensor.extract_slice %{{.*}}[0, %[[J]]] [256, 512] [1, 1]
// CHECK: linalg.generic {{.*}}iterator_types = ["reduction", "parallel"]{{.*}}outs(%{{.*}} : tensor<512xf32>)
func.func @column_sums(%x: tensor<256x1024xf32>) -> tensor<1x1024xf32> {
  %0 = kiln.fusion input(%x) : (tensor<256x1024xf32>) -> tensor<1x1024xf32> {
  ^bb0(%a: tensor<256x1024xf32>):
    %s = kiln.reduce_sum %a {axes = array<i64: 0>} : (tensor<256x1024xf32>) -> tensor<1x1024xf32>
    kiln.yield %s : tensor<1x1024xf32>
  }
  return %0 : tensor<1x1024xf32>
}

// -----

// The elementwise result beside such sums (an activation's gradient and
// its bias's gradient) is split by the same columns: its rows would be
// every reduction's.
// CHECK-LABEL: func.func @columns_with_sums
// CHECK: scf.forall (%{{.*}}) = (0) to (1024) step (512)
// CHECK: outs(%{{.*}} : tensor<128x512xf32>)
// CHECK: scf.forall (%{{.*}}) = (0) to (1024) step (512)
// CHECK: outs(%{{.*}} : tensor<512xf32>)
func.func @columns_with_sums(%x: tensor<128x1024xf32>, %y: tensor<128x1024xf32>) -> (tensor<128x1024xf32>, tensor<1x1024xf32>) {
  %0:2 = kiln.fusion input(%x, %y) : (tensor<128x1024xf32>, tensor<128x1024xf32>) -> (tensor<128x1024xf32>, tensor<1x1024xf32>) {
  ^bb0(%a: tensor<128x1024xf32>, %b: tensor<128x1024xf32>):
    %m = kiln.mul %a, %b : (tensor<128x1024xf32>, tensor<128x1024xf32>) -> tensor<128x1024xf32>
    %s = kiln.reduce_sum %m {axes = array<i64: 0>} : (tensor<128x1024xf32>) -> tensor<1x1024xf32>
    kiln.yield %m, %s : tensor<128x1024xf32>, tensor<1x1024xf32>
  }
  return %0#0, %0#1 : tensor<128x1024xf32>, tensor<1x1024xf32>
}

// -----

// Sums of rows with a small result (a layer norm's statistics: 128 rows of
// 256) split by rows once they read min-parallel-elements.
// CHECK-LABEL: func.func @row_statistics
// CHECK: scf.forall (%{{.*}}) in (128)
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
func.func @row_statistics(%x: tensor<128x256xf32>) -> tensor<128x1xf32> {
  %0 = kiln.fusion input(%x) : (tensor<128x256xf32>) -> tensor<128x1xf32> {
  ^bb0(%a: tensor<128x256xf32>):
    %s = kiln.reduce_sum %a {axes = array<i64: 1>} : (tensor<128x256xf32>) -> tensor<128x1xf32>
    kiln.yield %s : tensor<128x1xf32>
  }
  return %0 : tensor<128x1xf32>
}

// -----

// CHECK-LABEL: func.func @small_row_statistics
// CHECK-NOT: scf.forall
func.func @small_row_statistics(%x: tensor<16x64xf32>) -> tensor<16x1xf32> {
  %0 = kiln.fusion input(%x) : (tensor<16x64xf32>) -> tensor<16x1xf32> {
  ^bb0(%a: tensor<16x64xf32>):
    %s = kiln.reduce_sum %a {axes = array<i64: 1>} : (tensor<16x64xf32>) -> tensor<16x1xf32>
    kiln.yield %s : tensor<16x1xf32>
  }
  return %0 : tensor<16x1xf32>
}

// -----

// Sums of rows and of columns in one fusion (a layer norm's backward):
// neither rows nor columns split without computing the other sums twice.
// CHECK-LABEL: func.func @row_and_column_sums
// CHECK-NOT: scf.forall
func.func @row_and_column_sums(%x: tensor<256x1024xf32>) -> (tensor<256x1xf32>, tensor<1x1024xf32>) {
  %0:2 = kiln.fusion input(%x) : (tensor<256x1024xf32>) -> (tensor<256x1xf32>, tensor<1x1024xf32>) {
  ^bb0(%a: tensor<256x1024xf32>):
    %r = kiln.reduce_sum %a {axes = array<i64: 1>} : (tensor<256x1024xf32>) -> tensor<256x1xf32>
    %c = kiln.reduce_sum %a {axes = array<i64: 0>} : (tensor<256x1024xf32>) -> tensor<1x1024xf32>
    kiln.yield %r, %c : tensor<256x1xf32>, tensor<1x1024xf32>
  }
  return %0#0, %0#1 : tensor<256x1xf32>, tensor<1x1024xf32>
}

// -----

// Column sums of less than min-parallel-elements (8 rows of 1024) stay on
// one thread.
// CHECK-LABEL: func.func @small_column_sums
// CHECK-NOT: scf.forall
func.func @small_column_sums(%x: tensor<8x1024xf32>) -> tensor<1x1024xf32> {
  %0 = kiln.fusion input(%x) : (tensor<8x1024xf32>) -> tensor<1x1024xf32> {
  ^bb0(%a: tensor<8x1024xf32>):
    %s = kiln.reduce_sum %a {axes = array<i64: 0>} : (tensor<8x1024xf32>) -> tensor<1x1024xf32>
    kiln.yield %s : tensor<1x1024xf32>
  }
  return %0 : tensor<1x1024xf32>
}

// -----

// Two per-channel sums of one fusion (batch normalization's backward pair)
// over the same loops: one generic computes both, in one loop of a channel
// per tile, so each tile reads the channel once.
// CHECK-LABEL: func.func @two_per_channel_sums
// CHECK: scf.forall (%{{.*}}) in (64)
// CHECK:   %[[SUMS:.*]]:2 = linalg.generic {{.*}}iterator_types = ["reduction", "parallel", "reduction", "reduction"]
// CHECK:     arith.addf
// CHECK:     arith.mulf
// CHECK:     arith.addf
// CHECK:     linalg.yield
// CHECK:   tensor.parallel_insert_slice %[[SUMS]]#0
// CHECK:   tensor.parallel_insert_slice %[[SUMS]]#1
// CHECK-NOT: scf.forall
func.func @two_per_channel_sums(%x: tensor<8x64x28x28xf32>, %y: tensor<8x64x28x28xf32>) -> (tensor<1x64x1x1xf32>, tensor<1x64x1x1xf32>) {
  %0:2 = kiln.fusion input(%x, %y) : (tensor<8x64x28x28xf32>, tensor<8x64x28x28xf32>) -> (tensor<1x64x1x1xf32>, tensor<1x64x1x1xf32>) {
  ^bb0(%a: tensor<8x64x28x28xf32>, %b: tensor<8x64x28x28xf32>):
    %s = kiln.reduce_sum %a {axes = array<i64: 0, 2, 3>} : (tensor<8x64x28x28xf32>) -> tensor<1x64x1x1xf32>
    %p = kiln.mul %a, %b : (tensor<8x64x28x28xf32>, tensor<8x64x28x28xf32>) -> tensor<8x64x28x28xf32>
    %t = kiln.reduce_sum %p {axes = array<i64: 0, 2, 3>} : (tensor<8x64x28x28xf32>) -> tensor<1x64x1x1xf32>
    kiln.yield %s, %t : tensor<1x64x1x1xf32>, tensor<1x64x1x1xf32>
  }
  return %0#0, %0#1 : tensor<1x64x1x1xf32>, tensor<1x64x1x1xf32>
}

// -----

// A sum that reads another result of its fusion (a variance of the centred
// input after the mean) cannot share its loop: two loops.
// CHECK-LABEL: func.func @dependent_sums
// CHECK: scf.forall (%{{.*}}) in (64)
// CHECK:   linalg.generic {{.*}}iterator_types = ["reduction", "parallel", "reduction", "reduction"]
// CHECK-NOT: :2 = linalg.generic
// CHECK: scf.forall (%{{.*}}) in (64)
// CHECK:   linalg.generic {{.*}}iterator_types = ["reduction", "parallel", "reduction", "reduction"]
// CHECK:     arith.subf
func.func @dependent_sums(%x: tensor<8x64x28x28xf32>) -> (tensor<1x64x1x1xf32>, tensor<1x64x1x1xf32>) {
  %0:2 = kiln.fusion input(%x) : (tensor<8x64x28x28xf32>) -> (tensor<1x64x1x1xf32>, tensor<1x64x1x1xf32>) {
  ^bb0(%a: tensor<8x64x28x28xf32>):
    %s = kiln.reduce_sum %a {axes = array<i64: 0, 2, 3>} : (tensor<8x64x28x28xf32>) -> tensor<1x64x1x1xf32>
    %d = kiln.sub %a, %s : (tensor<8x64x28x28xf32>, tensor<1x64x1x1xf32>) -> tensor<8x64x28x28xf32>
    %t = kiln.reduce_sum %d {axes = array<i64: 0, 2, 3>} : (tensor<8x64x28x28xf32>) -> tensor<1x64x1x1xf32>
    kiln.yield %s, %t : tensor<1x64x1x1xf32>, tensor<1x64x1x1xf32>
  }
  return %0#0, %0#1 : tensor<1x64x1x1xf32>, tensor<1x64x1x1xf32>
}

// -----

// Elementwise results over the same loops share one too (y = 2x + 1 and
// z = relu(y), y computed again in z's body rather than read back).
// CHECK-LABEL: func.func @elementwise_siblings
// CHECK: %[[BOTH:.*]]:2 = linalg.generic
// CHECK:   linalg.yield %{{.*}}, %{{.*}} : f32, f32
// CHECK-NOT: linalg.generic
// CHECK: return %[[BOTH]]#0, %[[BOTH]]#1
func.func @elementwise_siblings(%x: tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %0:2 = kiln.fusion loop(%x) : (tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  ^bb0(%a: tensor<4x16xf32>):
    %two = kiln.constant dense<2.0> : tensor<f32>
    %one = kiln.constant dense<1.0> : tensor<f32>
    %m = kiln.mul %a, %two : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
    %y = kiln.add %m, %one : (tensor<4x16xf32>, tensor<f32>) -> tensor<4x16xf32>
    %z = kiln.relu %y : tensor<4x16xf32>
    kiln.yield %y, %z : tensor<4x16xf32>, tensor<4x16xf32>
  }
  return %0#0, %0#1 : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// The weight gradient of a 3x3 convolution of 64 channels: 9 positions per
// input channel, so a tile takes 16 channels (144 columns; 15 would do, but
// 16 divides 64), not the 8 that four tiles per thread would give.
// CHECK-LABEL: func.func @weight_gradient_columns
// CHECK: scf.forall (%{{.*}}) = (0) to (64) step (16)
// CHECK: linalg.generic {{.*}}outs(%{{.*}} : tensor<16x64x3x3xf32>)
func.func @weight_gradient_columns(%x: tensor<64x8x30x30xf32>, %g: tensor<64x8x28x28xf32>) -> tensor<64x64x3x3xf32> {
  %0 = kiln.fusion output(%x, %g) : (tensor<64x8x30x30xf32>, tensor<64x8x28x28xf32>) -> tensor<64x64x3x3xf32> {
  ^bb0(%a: tensor<64x8x30x30xf32>, %f: tensor<64x8x28x28xf32>):
    %y = kiln.conv %a, %f {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<64x8x30x30xf32>, tensor<64x8x28x28xf32>) -> tensor<64x64x3x3xf32>
    kiln.yield %y : tensor<64x64x3x3xf32>
  }
  return %0 : tensor<64x64x3x3xf32>
}

// -----

// A weight gradient of an RGB stem: its three batch elements (input
// channels) have nine positions each and join the columns of one product;
// the two threads could not share three tiles, so all three stay in one
// tile and the 64 output channels (the product's rows) are split in two.
// CHECK-LABEL: func.func @stem_weight_gradient
// CHECK: scf.forall (%{{.*}}) = (0) to (64) step (32)
// CHECK: linalg.generic {{.*}}outs(%{{.*}} : tensor<3x32x3x3xf32>)
func.func @stem_weight_gradient(%x: tensor<3x8x34x34xf32>, %g: tensor<64x8x32x32xf32>) -> tensor<3x64x3x3xf32> {
  %0 = kiln.fusion output(%x, %g) : (tensor<3x8x34x34xf32>, tensor<64x8x32x32xf32>) -> tensor<3x64x3x3xf32> {
  ^bb0(%a: tensor<3x8x34x34xf32>, %f: tensor<64x8x32x32xf32>):
    %y = kiln.conv %a, %f {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<3x8x34x34xf32>, tensor<64x8x32x32xf32>) -> tensor<3x64x3x3xf32>
    kiln.yield %y : tensor<3x64x3x3xf32>
  }
  return %0 : tensor<3x64x3x3xf32>
}

// Three images on two threads: a tile per image would leave one thread two
// of them, so the 64 output channels are split in two as well (6 tiles).
// CHECK-LABEL: func.func @conv_odd_batch
// CHECK: scf.forall (%{{.*}}, %{{.*}}) = (0, 0) to (3, 64) step (1, 32)
// CHECK: linalg.generic {{.*}}outs(%{{.*}} : tensor<1x32x20x20xf32>)
func.func @conv_odd_batch(%x: tensor<3x16x20x20xf32>, %w: tensor<64x16x3x3xf32>) -> tensor<3x64x20x20xf32> {
  %0 = kiln.fusion output(%x, %w) : (tensor<3x16x20x20xf32>, tensor<64x16x3x3xf32>) -> tensor<3x64x20x20xf32> {
  ^bb0(%a: tensor<3x16x20x20xf32>, %f: tensor<64x16x3x3xf32>):
    %y = kiln.conv %a, %f {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<3x16x20x20xf32>, tensor<64x16x3x3xf32>) -> tensor<3x64x20x20xf32>
    kiln.yield %y : tensor<3x64x20x20xf32>
  }
  return %0 : tensor<3x64x20x20xf32>
}
