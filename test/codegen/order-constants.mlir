// RUN: kiln-opt %s -split-input-file -kiln-order-constants | FileCheck %s

// Constant globals move to the module's start in the order the functions
// first read them, and globals of one name lose the uniquing suffixes they
// were created with, numbered again in that order. A global nothing reads
// comes last; one that is not constant (an arena) stays where it is.
// CHECK-LABEL: module
// CHECK-NEXT: memref.global "private" constant @__constant_4xf32 : memref<4xf32> = dense<1.000000e+00>
// CHECK-NEXT: memref.global "private" constant @__constant_4xf32_1 : memref<4xf32> = dense<2.000000e+00>
// CHECK-NEXT: memref.global "private" constant @__constant_2xi64 : memref<2xi64> = dense<[3, 4]>
// CHECK-NEXT: memref.global "private" constant @__constant_4xf32_2 : memref<4xf32> = dense<5.000000e+00>
// CHECK-NEXT: memref.global "private" @__kiln_arena_main : memref<64xi8> = uninitialized
// CHECK-LABEL: func.func @main
// CHECK: memref.get_global @__constant_4xf32 : memref<4xf32>
// CHECK: memref.get_global @__constant_4xf32_1 : memref<4xf32>
// CHECK-LABEL: func.func @init
// CHECK: memref.get_global @__constant_2xi64 : memref<2xi64>
// CHECK: memref.get_global @__constant_4xf32 : memref<4xf32>
module {
  memref.global "private" constant @__constant_4xf32_0 : memref<4xf32> = dense<5.0>
  memref.global "private" constant @__constant_2xi64 : memref<2xi64> = dense<[3, 4]>
  memref.global "private" @__kiln_arena_main : memref<64xi8> = uninitialized
  memref.global "private" constant @__constant_4xf32_1 : memref<4xf32> = dense<2.0>
  memref.global "private" constant @__constant_4xf32 : memref<4xf32> = dense<1.0>
  func.func @main() -> (memref<4xf32>, memref<4xf32>) {
    %a = memref.get_global @__constant_4xf32 : memref<4xf32>
    %b = memref.get_global @__constant_4xf32_1 : memref<4xf32>
    return %a, %b : memref<4xf32>, memref<4xf32>
  }
  func.func @init() -> (memref<2xi64>, memref<4xf32>) {
    %c = memref.get_global @__constant_2xi64 : memref<2xi64>
    %d = memref.get_global @__constant_4xf32 : memref<4xf32>
    return %c, %d : memref<2xi64>, memref<4xf32>
  }
}

// -----

// A module without constants is left alone.
// CHECK-LABEL: func.func @nothing
// CHECK-NEXT: return
func.func @nothing() {
  return
}
