// RUN: kiln-opt %s -split-input-file -kiln-collapse-contiguous-loops | FileCheck %s

// A tile of a 7x7 image's channels is one contiguous run: one loop over
// its 392 elements, through reinterpret_casts (not collapse_shape, whose
// loads would be folded into delinearized ones).
// CHECK-LABEL: func.func @elementwise_tile
// CHECK-SAME:    (%[[A:.*]]: memref<8x7x7xf32, strided<[49, 7, 1], offset: ?>>, %[[B:.*]]: memref<8x7x7xf32>)
// CHECK:         %[[BASE:.*]], %[[OFFSET:.*]], %{{.*}}:3, %{{.*}}:3 = memref.extract_strided_metadata %[[A]]
// CHECK:         %[[IN:.*]] = memref.reinterpret_cast %[[BASE]] to offset: [%[[OFFSET]]], sizes: [392], strides: [1]
// CHECK:         %[[OUTBASE:.*]], %{{.*}}, %{{.*}}:3, %{{.*}}:3 = memref.extract_strided_metadata %[[B]]
// CHECK:         %[[OUT:.*]] = memref.reinterpret_cast %[[OUTBASE]] to offset: [0], sizes: [392], strides: [1]
// CHECK:         linalg.generic
// CHECK-SAME:      iterator_types = ["parallel"]
// CHECK-SAME:      ins(%[[IN]] : memref<392xf32, strided<[1], offset: ?>>) outs(%[[OUT]] : memref<392xf32>)
// CHECK:           arith.negf
// CHECK-NOT:     memref.collapse_shape
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @elementwise_tile(%a: memref<8x7x7xf32, strided<[49, 7, 1], offset: ?>>, %b: memref<8x7x7xf32>) {
  linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%a : memref<8x7x7xf32, strided<[49, 7, 1], offset: ?>>) outs(%b : memref<8x7x7xf32>) {
  ^bb0(%x: f32, %y: f32):
    %n = arith.negf %x : f32
    linalg.yield %n : f32
  }
  return
}

// -----

// Rows with a gap after them join only within the row: the channel loop
// stays, over rows of 49.
// CHECK-LABEL: func.func @gap_between_channels
// CHECK:         memref.reinterpret_cast %{{.*}} to offset: [%{{.*}}], sizes: [8, 49], strides: [64, 1]
// CHECK:         memref.reinterpret_cast %{{.*}} to offset: [0], sizes: [8, 49], strides: [49, 1]
// CHECK:         linalg.generic
// CHECK-SAME:      iterator_types = ["parallel", "parallel"]
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @gap_between_channels(%a: memref<8x7x7xf32, strided<[64, 7, 1], offset: ?>>, %b: memref<8x7x7xf32>) {
  linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%a : memref<8x7x7xf32, strided<[64, 7, 1], offset: ?>>) outs(%b : memref<8x7x7xf32>) {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  }
  return
}

// -----

// A filter's channel transpose keeps its two channel loops and copies
// each channel pair's 3x3 taps as one run of 9.
// CHECK-LABEL: func.func @filter_transpose
// CHECK:         memref.reinterpret_cast %{{.*}} sizes: [512, 1, 9], strides: [4608, 9, 1]
// CHECK:         memref.reinterpret_cast %{{.*}} sizes: [1, 512, 9], strides: [4608, 9, 1]
// CHECK:         linalg.generic
// CHECK-SAME:      iterator_types = ["parallel", "parallel", "parallel"]
// CHECK-NOT:     linalg.transpose
func.func @filter_transpose(%a: memref<512x1x3x3xf32, strided<[4608, 9, 3, 1], offset: ?>>, %b: memref<1x512x3x3xf32, strided<[4608, 9, 3, 1], offset: ?>>) {
  linalg.transpose ins(%a : memref<512x1x3x3xf32, strided<[4608, 9, 3, 1], offset: ?>>)
      outs(%b : memref<1x512x3x3xf32, strided<[4608, 9, 3, 1], offset: ?>>) permutation = [1, 0, 2, 3]
  return
}

// -----

// A dynamic batch joins too: the joined extent is its size times the rest.
// CHECK-LABEL: func.func @dynamic_batch
// CHECK:         %[[BASE:.*]], %{{.*}}, %[[SIZES:.*]]:3, %{{.*}}:3 = memref.extract_strided_metadata %arg0
// CHECK:         %[[N:.*]] = arith.muli %[[SIZES]]#0, %[[SIZES]]#1
// CHECK:         %[[NN:.*]] = arith.muli %[[N]], %[[SIZES]]#2
// CHECK:         memref.reinterpret_cast %[[BASE]] to offset: [0], sizes: [%[[NN]]], strides: [1]
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @dynamic_batch(%a: memref<?x6x28xf32>, %b: memref<?x6x28xf32>) {
  linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%a : memref<?x6x28xf32>) outs(%b : memref<?x6x28xf32>) {
  ^bb0(%x: f32, %y: f32):
    linalg.yield %x : f32
  }
  return
}

// -----

// A bias along the last dimension leaves the leading two free to join;
// the bias keeps its own loop.
// CHECK-LABEL: func.func @trailing_bias
// CHECK:         linalg.generic
// CHECK-SAME:      iterator_types = ["parallel", "parallel"]
// CHECK-SAME:      ins(%{{.*}}, %arg1 : memref<32x16xf32>, memref<16xf32>)
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#last = affine_map<(d0, d1, d2) -> (d2)>
func.func @trailing_bias(%a: memref<4x8x16xf32>, %bias: memref<16xf32>, %b: memref<4x8x16xf32>) {
  linalg.generic {indexing_maps = [#id3, #last, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%a, %bias : memref<4x8x16xf32>, memref<16xf32>) outs(%b : memref<4x8x16xf32>) {
  ^bb0(%x: f32, %c: f32, %y: f32):
    %s = arith.addf %x, %c : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Left alone: a channel bias splits every pair of loops, a window reads
// sums of loops, a body reads its indices, a reduction does not join a
// parallel loop, and two reductions do not join (their sum would be taken
// in another order).
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT:     memref.reinterpret_cast
// CHECK-COUNT-5: linalg.generic
// CHECK-NOT:     memref.reinterpret_cast
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#mid = affine_map<(d0, d1, d2) -> (d1)>
#window = affine_map<(d0, d1, d2) -> (d0, d1 * 2 + d2)>
#taps = affine_map<(d0, d1, d2) -> (d2)>
#rows = affine_map<(d0, d1, d2) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, d1)>
#sum = affine_map<(d0, d1) -> (d0)>
#first = affine_map<(d0, d1, d2) -> (d0)>
func.func @left_alone(%a: memref<4x8x16xf32>, %bias: memref<8xf32>, %b: memref<4x8x16xf32>,
                      %img: memref<4x16xf32>, %k: memref<2xf32>, %pooled: memref<4x8xf32>,
                      %m: memref<4x16xf32>, %s: memref<4xf32>) {
  linalg.generic {indexing_maps = [#id3, #mid, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%a, %bias : memref<4x8x16xf32>, memref<8xf32>) outs(%b : memref<4x8x16xf32>) {
  ^bb0(%x: f32, %c: f32, %y: f32):
    %r = arith.addf %x, %c : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#window, #taps, #rows], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%img, %k : memref<4x16xf32>, memref<2xf32>) outs(%pooled : memref<4x8xf32>) {
  ^bb0(%x: f32, %w: f32, %y: f32):
    %r = arith.maximumf %y, %x : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id3], iterator_types = ["parallel", "parallel", "parallel"]}
      outs(%b : memref<4x8x16xf32>) {
  ^bb0(%y: f32):
    %i = linalg.index 2 : index
    %n = arith.index_cast %i : index to i32
    %f = arith.sitofp %n : i32 to f32
    linalg.yield %f : f32
  }
  linalg.generic {indexing_maps = [#row, #sum], iterator_types = ["parallel", "reduction"]}
      ins(%m : memref<4x16xf32>) outs(%s : memref<4xf32>) {
  ^bb0(%x: f32, %y: f32):
    %r = arith.addf %y, %x : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id3, #first], iterator_types = ["parallel", "reduction", "reduction"]}
      ins(%a : memref<4x8x16xf32>) outs(%s : memref<4xf32>) {
  ^bb0(%x: f32, %y: f32):
    %r = arith.addf %y, %x : f32
    linalg.yield %r : f32
  }
  return
}

// -----

// An operand read at a constant index (a unit dimension kept in a kernel
// that was not fused) is left alone: the op keeps its loops.
// CHECK-LABEL: func.func @constant_index
// CHECK-NOT: memref.reinterpret_cast
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel"]
#unit = affine_map<(d0, d1, d2) -> (0, d1, d2)>
#whole = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @constant_index(%a: memref<1x8x16xf32>, %b: memref<4x8x16xf32>) {
  linalg.generic {indexing_maps = [#unit, #whole], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%a : memref<1x8x16xf32>) outs(%b : memref<4x8x16xf32>) {
  ^bb0(%x: f32, %y: f32):
    %r = arith.addf %y, %x : f32
    linalg.yield %r : f32
  }
  return
}
