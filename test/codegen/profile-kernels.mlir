// RUN: kiln-opt %s -split-input-file -kiln-profile-kernels | FileCheck %s

// Each kernel at the top level of a public function, and only those, is
// timed: two clock reads around it, then its nanoseconds and one call added
// at 2 * id and 2 * id + 1. Views, allocations and private functions are
// not. The module lists the kernels in id order with their ONNX nodes.
// CHECK: module attributes {kiln.kernel_profile = {{\[}}["main", "parallel", "Conv#0 -> c, Relu#1 -> y"], ["main", "serial", "Add#2 -> z"], ["main", "copy", "Identity#3 -> w"], ["eval", "call", "(no ONNX node)"]]}
// CHECK-DAG: memref.global @kiln_kernel_profile : memref<8xi64> = dense<0>
// CHECK-DAG: func.func private @clock_gettime(i32, memref<2xi64>) -> i32

// CHECK-LABEL: func.func @main
// CHECK-NEXT: %[[TS:.*]] = memref.alloca() : memref<2xi64>
// CHECK-NEXT: %[[VIEW:.*]] = memref.subview
// CHECK: %[[MONOTONIC:.*]] = arith.constant 1 : i32
// CHECK-NEXT: call @clock_gettime(%[[MONOTONIC]], %[[TS]])
// CHECK: %[[S:.*]] = memref.load %[[TS]][%{{.*}}]
// CHECK: %[[NS:.*]] = memref.load %[[TS]][%{{.*}}]
// CHECK: %[[BILLION:.*]] = arith.constant 1000000000 : i64
// CHECK: %[[START:.*]] = arith.addi
// CHECK-NEXT: scf.forall
// CHECK: call @clock_gettime
// CHECK: %[[END:.*]] = arith.addi
// CHECK-NEXT: %[[ELAPSED:.*]] = arith.subi %[[END]], %[[START]]
// CHECK-NEXT: %[[TABLE:.*]] = memref.get_global @kiln_kernel_profile : memref<8xi64>
// CHECK-NEXT: %[[C0:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[OLD:.*]] = memref.load %[[TABLE]][%[[C0]]]
// CHECK-NEXT: %[[NEW:.*]] = arith.addi %[[OLD]], %[[ELAPSED]]
// CHECK-NEXT: memref.store %[[NEW]], %[[TABLE]][%[[C0]]]
// CHECK-NEXT: %[[ONE:.*]] = arith.constant 1 : i64
// CHECK-NEXT: %[[C1:.*]] = arith.constant 1 : index
// CHECK-NEXT: %[[CALLS:.*]] = memref.load %[[TABLE]][%[[C1]]]
// CHECK-NEXT: %[[MORE:.*]] = arith.addi %[[CALLS]], %[[ONE]]
// CHECK-NEXT: memref.store %[[MORE]], %[[TABLE]][%[[C1]]]
// CHECK: linalg.generic
// CHECK: arith.constant 2 : index
// CHECK: memref.copy
// CHECK: arith.constant 4 : index
// CHECK: return
// CHECK-LABEL: func.func private @helper
// CHECK-NOT: clock_gettime
// CHECK: return
// CHECK-LABEL: func.func @eval
// CHECK: call @clock_gettime
// CHECK: call @helper
// CHECK: call @clock_gettime
// CHECK: arith.constant 6 : index
#id = affine_map<(d0) -> (d0)>
module {
  func.func @main(%x: memref<64xf32>, %y: memref<64xf32>, %z: memref<64xf32>, %w: memref<64xf32>) {
    %half = memref.subview %x[0] [32] [1] : memref<64xf32> to memref<32xf32, strided<[1]>>
    scf.forall (%i) in (2) {
      %c = arith.constant 0.0 : f32 loc("Conv#0 -> c")
      %r = arith.constant 1.0 : f32 loc("Relu#1 -> y")
      linalg.fill ins(%c : f32) outs(%y : memref<64xf32>) loc("Conv#0 -> c")
      linalg.fill ins(%r : f32) outs(%y : memref<64xf32>) loc("Relu#1 -> y")
    }
    linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
        ins(%y : memref<64xf32>) outs(%z : memref<64xf32>) {
    ^bb0(%in: f32, %out: f32):
      %s = arith.addf %in, %in : f32
      linalg.yield %s : f32
    } loc(fused["Add#2 -> z", "initializer 'b'"])
    memref.copy %z, %w : memref<64xf32> to memref<64xf32> loc("Identity#3 -> w")
    return
  }
  func.func private @helper(%x: memref<64xf32>) {
    memref.copy %x, %x : memref<64xf32> to memref<64xf32>
    return
  }
  func.func @eval(%x: memref<64xf32>) {
    func.call @helper(%x) : (memref<64xf32>) -> ()
    return
  }
}

// -----

// A module with nothing to time is left alone.
// CHECK-NOT: kiln.kernel_profile
// CHECK-NOT: kiln_kernel_profile
// CHECK-LABEL: func.func @views
// CHECK-NEXT: memref.subview
// CHECK-NEXT: return
func.func @views(%x: memref<64xf32>) {
  %half = memref.subview %x[0] [32] [1] : memref<64xf32> to memref<32xf32, strided<[1]>>
  return
}
