// RUN: kiln-opt %s -split-input-file -kiln-contractions-to-blas -canonicalize -cse | FileCheck %s

// A depthwise tile as bufferization leaves it: the image copied into a
// zero-filled buffer to pad it, the output started from the bias, the
// convolution, then ReLU6 into the destination. The kernel call takes all
// of it: it reads the unpadded image (starting at row 1, column 1 of the
// padded one), starts from the bias and clamps to [0, 6].
// CHECK-LABEL: func.func @pad_bias_relu6
// CHECK-NOT:     memref.alloc
// CHECK-NOT:     memref.copy
// CHECK-NOT:     linalg
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG:     %[[SIX:.*]] = arith.constant 6.000000e+00 : f32
// CHECK:         call @kiln_depthwise_conv2d(%c18_i64, %c3_i64, %c3_i64, %c28_i64, %c28_i64, %c1_i64, %c1_i64, %c1_i64, %c1_i64, %{{.*}}, %c784_i64, %c28_i64, %c28_i64, %c28_i64, %c1_i64, %c1_i64, %{{.*}}, %{{.*}}, %c1_i64, %[[ZERO]], %[[SIX]], %{{.*}}, %c784_i64, %c28_i64)
// CHECK-NOT:     linalg
// CHECK:         return
#bias = affine_map<(d0, d1, d2) -> (d0)>
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#image = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1 + d3, d2 + d4)>
#filter = affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d4)>
#out = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>
func.func @pad_bias_relu6(%x: memref<18x28x28xf32, strided<[784, 28, 1], offset: ?>>, %w: memref<18x3x3xf32>, %b: memref<18xf32>, %y: memref<18x28x28xf32, strided<[784, 28, 1], offset: ?>>) {
  %zero = arith.constant 0.000000e+00 : f32
  %six = arith.constant 6.000000e+00 : f32
  %padded = memref.alloc() {alignment = 64 : i64} : memref<18x30x30xf32>
  linalg.map outs(%padded : memref<18x30x30xf32>)
    (%init: f32) {
      linalg.yield %zero : f32
    }
  %window = memref.subview %padded[0, 1, 1] [18, 28, 28] [1, 1, 1] : memref<18x30x30xf32> to memref<18x28x28xf32, strided<[900, 30, 1], offset: 31>>
  memref.copy %x, %window : memref<18x28x28xf32, strided<[784, 28, 1], offset: ?>> to memref<18x28x28xf32, strided<[900, 30, 1], offset: 31>>
  %scratch = memref.alloc() {alignment = 64 : i64} : memref<18x28x28xf32>
  linalg.generic {indexing_maps = [#bias, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%b : memref<18xf32>) outs(%scratch : memref<18x28x28xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [#image, #filter, #out], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%padded, %w : memref<18x30x30xf32>, memref<18x3x3xf32>) outs(%scratch : memref<18x28x28xf32>) {
  ^bb0(%i: f32, %f: f32, %acc: f32):
    %p = arith.mulf %i, %f : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%scratch : memref<18x28x28xf32>) outs(%y : memref<18x28x28xf32, strided<[784, 28, 1], offset: ?>>) {
  ^bb0(%in: f32, %o: f32):
    %lo = arith.maximumf %in, %zero : f32
    %hi = arith.minimumf %lo, %six : f32
    linalg.yield %hi : f32
  }
  memref.dealloc %padded : memref<18x30x30xf32>
  memref.dealloc %scratch : memref<18x28x28xf32>
  return
}

// -----

// An epilogue that is not a clamp (SiLU) stays: the call pads and starts
// from the bias into the scratch buffer, which the epilogue then reads. No
// bias either: the output starts from a zero fill.
// CHECK-LABEL: func.func @zero_start_silu
// CHECK-DAG:     %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-DAG:     %[[INF:.*]] = arith.constant 0x7F800000 : f32
// CHECK-DAG:     %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK:         %[[SCRATCH:.*]] = memref.alloc() {{.*}} : memref<8x14x14xf32>
// CHECK-NOT:     linalg.fill
// CHECK:         call @kiln_depthwise_conv2d(%c8_i64, %c5_i64, %c5_i64, %c14_i64, %c14_i64, %c1_i64, %c1_i64, %c1_i64, %c1_i64, %{{.*}}, %c196_i64, %c14_i64, %c14_i64, %c14_i64, %c2_i64, %c2_i64, %{{.*}}, %[[NULL]], %c1_i64, %[[NINF]], %[[INF]], %{{.*}}, %c196_i64, %c14_i64)
// CHECK:         linalg.generic {{.*}} ins(%[[SCRATCH]]
// CHECK:           arith.negf
// CHECK:         memref.dealloc %[[SCRATCH]]
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#image = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1 + d3, d2 + d4)>
#filter = affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d4)>
#out = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>
func.func @zero_start_silu(%x: memref<8x14x14xf32>, %w: memref<8x5x5xf32>, %y: memref<8x14x14xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %one = arith.constant 1.000000e+00 : f32
  %padded = memref.alloc() {alignment = 64 : i64} : memref<8x18x18xf32>
  linalg.fill ins(%zero : f32) outs(%padded : memref<8x18x18xf32>)
  %window = memref.subview %padded[0, 2, 2] [8, 14, 14] [1, 1, 1] : memref<8x18x18xf32> to memref<8x14x14xf32, strided<[324, 18, 1], offset: 38>>
  memref.copy %x, %window : memref<8x14x14xf32> to memref<8x14x14xf32, strided<[324, 18, 1], offset: 38>>
  %scratch = memref.alloc() {alignment = 64 : i64} : memref<8x14x14xf32>
  linalg.fill ins(%zero : f32) outs(%scratch : memref<8x14x14xf32>)
  linalg.generic {indexing_maps = [#image, #filter, #out], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%padded, %w : memref<8x18x18xf32>, memref<8x5x5xf32>) outs(%scratch : memref<8x14x14xf32>) {
  ^bb0(%i: f32, %f: f32, %acc: f32):
    %p = arith.mulf %i, %f : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%scratch : memref<8x14x14xf32>) outs(%y : memref<8x14x14xf32>) {
  ^bb0(%in: f32, %o: f32):
    %n = arith.negf %in : f32
    %e = math.exp %n : f32
    %d = arith.addf %e, %one : f32
    %r = arith.divf %in, %d : f32
    linalg.yield %r : f32
  }
  memref.dealloc %padded : memref<8x18x18xf32>
  memref.dealloc %scratch : memref<8x14x14xf32>
  return
}

// -----

// What the call cannot take over stays as it was: a buffer filled with 1.0
// is no zero padding, and a clamp whose min comes before its max is not
// min(max(x, lo), hi) when lo > hi. The output still starts from the bias.
// CHECK-LABEL: func.func @not_absorbed
// CHECK:         %[[PADDED:.*]] = memref.alloc() {{.*}} : memref<4x9x9xf32>
// CHECK:         linalg.fill
// CHECK:         memref.copy
// CHECK:         call @kiln_depthwise_conv2d(%c4_i64, %c3_i64, %c3_i64, %c7_i64, %c7_i64, %c1_i64, %c1_i64, %c1_i64, %c1_i64, %{{.*}}, %c81_i64, %c9_i64, %c9_i64, %c9_i64, %c0_i64, %c0_i64, %{{.*}}, %{{.*}}, %c1_i64, %{{.*}}, %{{.*}}, %{{.*}}, %c49_i64, %c7_i64)
// CHECK:         linalg.generic
// CHECK:           arith.minimumf
// CHECK:           arith.maximumf
#bias = affine_map<(d0, d1, d2) -> (d0)>
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#image = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1 + d3, d2 + d4)>
#filter = affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d4)>
#out = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>
func.func @not_absorbed(%x: memref<4x7x7xf32>, %w: memref<4x3x3xf32>, %b: memref<4xf32>, %y: memref<4x7x7xf32>) {
  %one = arith.constant 1.000000e+00 : f32
  %zero = arith.constant 0.000000e+00 : f32
  %six = arith.constant 6.000000e+00 : f32
  %padded = memref.alloc() {alignment = 64 : i64} : memref<4x9x9xf32>
  linalg.fill ins(%one : f32) outs(%padded : memref<4x9x9xf32>)
  %window = memref.subview %padded[0, 1, 1] [4, 7, 7] [1, 1, 1] : memref<4x9x9xf32> to memref<4x7x7xf32, strided<[81, 9, 1], offset: 10>>
  memref.copy %x, %window : memref<4x7x7xf32> to memref<4x7x7xf32, strided<[81, 9, 1], offset: 10>>
  %scratch = memref.alloc() {alignment = 64 : i64} : memref<4x7x7xf32>
  linalg.generic {indexing_maps = [#bias, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%b : memref<4xf32>) outs(%scratch : memref<4x7x7xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [#image, #filter, #out], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%padded, %w : memref<4x9x9xf32>, memref<4x3x3xf32>) outs(%scratch : memref<4x7x7xf32>) {
  ^bb0(%i: f32, %f: f32, %acc: f32):
    %p = arith.mulf %i, %f : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%scratch : memref<4x7x7xf32>) outs(%y : memref<4x7x7xf32>) {
  ^bb0(%in: f32, %o: f32):
    %hi = arith.minimumf %in, %six : f32
    %lo = arith.maximumf %hi, %zero : f32
    linalg.yield %lo : f32
  }
  memref.dealloc %padded : memref<4x9x9xf32>
  memref.dealloc %scratch : memref<4x7x7xf32>
  return
}

// -----

// A scratch buffer that something else also reads keeps its values: the
// clamp is not taken over, and the call writes the scratch.
// CHECK-LABEL: func.func @scratch_read_again
// CHECK:         call @kiln_depthwise_conv2d
// CHECK:         linalg.generic
// CHECK:           arith.maximumf
// CHECK:         memref.copy %{{.*}}, %arg4
#bias = affine_map<(d0, d1, d2) -> (d0)>
#id = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#image = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1 + d3, d2 + d4)>
#filter = affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d4)>
#out = affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>
func.func @scratch_read_again(%x: memref<4x9x9xf32>, %w: memref<4x3x3xf32>, %b: memref<4xf32>, %y: memref<4x7x7xf32>, %z: memref<4x7x7xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %scratch = memref.alloc() {alignment = 64 : i64} : memref<4x7x7xf32>
  linalg.generic {indexing_maps = [#bias, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%b : memref<4xf32>) outs(%scratch : memref<4x7x7xf32>) {
  ^bb0(%in: f32, %o: f32):
    linalg.yield %in : f32
  }
  linalg.generic {indexing_maps = [#image, #filter, #out], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]} ins(%x, %w : memref<4x9x9xf32>, memref<4x3x3xf32>) outs(%scratch : memref<4x7x7xf32>) {
  ^bb0(%i: f32, %f: f32, %acc: f32):
    %p = arith.mulf %i, %f : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]} ins(%scratch : memref<4x7x7xf32>) outs(%y : memref<4x7x7xf32>) {
  ^bb0(%in: f32, %o: f32):
    %lo = arith.maximumf %in, %zero : f32
    linalg.yield %lo : f32
  }
  memref.copy %scratch, %z : memref<4x7x7xf32> to memref<4x7x7xf32>
  memref.dealloc %scratch : memref<4x7x7xf32>
  return
}
