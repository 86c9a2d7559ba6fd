// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(kiln-transposes-to-calls,canonicalize,cse)' | FileCheck %s

// A block of 16 channels of a 28x28 image reordered channels-last: the two
// image dimensions are one run of 784 on both sides, so this is a 16 x 784
// transpose, rows 784 apart in the input and 16 in the output.
// CHECK-LABEL: func.func @to_blocks
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : i64
// CHECK-DAG: %[[C784:.*]] = arith.constant 784 : i64
// CHECK: %[[IN:.*]] = llvm.inttoptr
// CHECK: %[[OUT:.*]] = llvm.inttoptr
// CHECK: call @kiln_transpose(%[[IN]], %[[OUT]], %[[C16]], %[[C784]], %[[C784]], %[[C16]]) : (!llvm.ptr, !llvm.ptr, i64, i64, i64, i64) -> ()
// CHECK-NOT: linalg.transpose
func.func @to_blocks(%a: memref<1x1x16x28x28xf32, strided<[50176, 12544, 784, 28, 1], offset: ?>>, %b: memref<1x1x28x28x16xf32>) {
  linalg.transpose ins(%a : memref<1x1x16x28x28xf32, strided<[50176, 12544, 784, 28, 1], offset: ?>>) outs(%b : memref<1x1x28x28x16xf32>) permutation = [0, 1, 3, 4, 2]
  return
}

// -----

// And back: 784 rows of 16, into rows of 784.
// CHECK-LABEL: func.func @from_blocks
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : i64
// CHECK-DAG: %[[C784:.*]] = arith.constant 784 : i64
// CHECK: call @kiln_transpose(%{{.*}}, %{{.*}}, %[[C784]], %[[C16]], %[[C16]], %[[C784]])
func.func @from_blocks(%a: memref<1x1x28x28x16xf32>, %b: memref<1x1x16x28x28xf32, strided<[50176, 12544, 784, 28, 1], offset: ?>>) {
  linalg.transpose ins(%a : memref<1x1x28x28x16xf32>) outs(%b : memref<1x1x16x28x28xf32, strided<[50176, 12544, 784, 28, 1], offset: ?>>) permutation = [0, 1, 4, 2, 3]
  return
}

// -----

// Heads of attention swapped with the sequence ([batch, seq, heads, dim] to
// [batch, heads, dim, seq]): heads and dim are one run of 128 on both
// sides, so each image is a 64 x 128 transpose, and a loop over the batch
// moves both pointers by its stride.
// CHECK-LABEL: func.func @per_head
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : i64
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : i64
// CHECK-DAG: %[[C8192:.*]] = arith.constant 8192 : i64
// CHECK: %[[IN:.*]] = llvm.inttoptr
// CHECK: %[[OUT:.*]] = llvm.inttoptr
// CHECK: scf.for %[[N:.*]] =
// CHECK: %[[NI:.*]] = arith.index_cast %[[N]] : index to i64
// CHECK: %[[STEP:.*]] = arith.muli %[[NI]], %[[C8192]] : i64
// CHECK: %[[IN1:.*]] = llvm.getelementptr %[[IN]][%[[STEP]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK: %[[OUT1:.*]] = llvm.getelementptr %[[OUT]][%[[STEP]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK: call @kiln_transpose(%[[IN1]], %[[OUT1]], %[[C64]], %[[C128]], %[[C128]], %[[C64]])
func.func @per_head(%a: memref<2x64x4x32xf32>, %b: memref<2x4x32x64xf32>) {
  linalg.transpose ins(%a : memref<2x64x4x32xf32>) outs(%b : memref<2x4x32x64xf32>) permutation = [0, 2, 3, 1]
  return
}

// -----

// Two dimensions left, the batch and the 4 in the middle (which the swap
// leaves in place, between the swapped 32 and 16): a loop for each, the
// call inside both, 32 rows of 16 columns, rows 64 apart in the input and
// 128 in the output.
// CHECK-LABEL: func.func @two_loops
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : i64
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : i64
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : i64
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : i64
// CHECK: scf.for
// CHECK: scf.for
// CHECK: call @kiln_transpose(%{{.*}}, %{{.*}}, %[[C32]], %[[C16]], %[[C64]], %[[C128]])
// CHECK: }
// CHECK: }
func.func @two_loops(%a: memref<2x32x4x16xf32>, %b: memref<2x16x4x32xf32>) {
  linalg.transpose ins(%a : memref<2x32x4x16xf32>) outs(%b : memref<2x16x4x32xf32>) permutation = [0, 3, 2, 1]
  return
}

// -----

// The two outer dimensions (2 and 3) are one run of 6 on both sides: one
// loop, not two, each step 384 floats on; the 16 x 24 matrices transpose.
// CHECK-LABEL: func.func @merged_outer
// CHECK-DAG: %[[C6:.*]] = arith.constant 6 : index
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : i64
// CHECK-DAG: %[[C24:.*]] = arith.constant 24 : i64
// CHECK-DAG: %[[C384:.*]] = arith.constant 384 : i64
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %[[C6]]
// CHECK: %[[II:.*]] = arith.index_cast %[[I]] : index to i64
// CHECK: arith.muli %[[II]], %[[C384]] : i64
// CHECK-NOT: scf.for
// CHECK: call @kiln_transpose(%{{.*}}, %{{.*}}, %[[C16]], %[[C24]], %[[C24]], %[[C16]])
func.func @merged_outer(%a: memref<2x3x16x24xf32>, %b: memref<2x3x24x16xf32>) {
  linalg.transpose ins(%a : memref<2x3x16x24xf32>) outs(%b : memref<2x3x24x16xf32>) permutation = [0, 1, 3, 2]
  return
}

// -----

// A unit dimension, innermost on both sides, is dropped: the transpose is
// the 16 x 24 matrix's, with no loop.
// CHECK-LABEL: func.func @unit_innermost
// CHECK-NOT: scf.for
// CHECK: call @kiln_transpose(%{{.*}}, %{{.*}}, %c16_i64, %c24_i64, %c24_i64, %c16_i64)
func.func @unit_innermost(%a: memref<16x24x1xf32>, %b: memref<24x16x1xf32>) {
  linalg.transpose ins(%a : memref<16x24x1xf32>) outs(%b : memref<24x16x1xf32>) permutation = [1, 0, 2]
  return
}
// -----

// Left as they are: a filter's taps moved as runs of nine (rows of the
// copy are runs, not elements), a side shorter than 8, a transpose that
// keeps the innermost dimension, one of i32, and one of a dynamic shape.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: kiln_transpose
// CHECK-COUNT-5: linalg.transpose
func.func @left_alone(%w: memref<64x32x3x3xf32>, %wt: memref<32x64x3x3xf32>, %n: memref<4x100xf32>, %nt: memref<100x4xf32>, %k: memref<8x16x4xf32>, %kt: memref<16x8x4xf32>, %i: memref<16x16xi32>, %it: memref<16x16xi32>, %d: memref<?x16xf32>, %dt: memref<16x?xf32>) {
  linalg.transpose ins(%w : memref<64x32x3x3xf32>) outs(%wt : memref<32x64x3x3xf32>) permutation = [1, 0, 2, 3]
  linalg.transpose ins(%n : memref<4x100xf32>) outs(%nt : memref<100x4xf32>) permutation = [1, 0]
  linalg.transpose ins(%k : memref<8x16x4xf32>) outs(%kt : memref<16x8x4xf32>) permutation = [1, 0, 2]
  linalg.transpose ins(%i : memref<16x16xi32>) outs(%it : memref<16x16xi32>) permutation = [1, 0]
  linalg.transpose ins(%d : memref<?x16xf32>) outs(%dt : memref<16x?xf32>) permutation = [1, 0]
  return
}
