// RUN: kiln-opt %s -split-input-file -kiln-inline-alloca-scopes | FileCheck %s

// A scope that allocates on the stack: its body is inlined between a stack
// save and a restore, so each use releases what it allocated.
// CHECK-LABEL: func.func @allocates
// CHECK-NOT: memref.alloca_scope
// CHECK: %[[SP:.*]] = llvm.intr.stacksave : !llvm.ptr
// CHECK-NEXT: %[[A:.*]] = memref.alloca() : memref<16xf32>
// CHECK-NEXT: memref.store %{{.*}}, %[[A]]
// CHECK-NEXT: %[[V:.*]] = memref.load %[[A]]
// CHECK-NEXT: llvm.intr.stackrestore %[[SP]] : !llvm.ptr
// CHECK-NEXT: return %[[V]]
func.func @allocates(%x: f32, %i: index) -> f32 {
  %r = memref.alloca_scope -> f32 {
    %a = memref.alloca() : memref<16xf32>
    memref.store %x, %a[%i] : memref<16xf32>
    %v = memref.load %a[%i] : memref<16xf32>
    memref.alloca_scope.return %v : f32
  }
  return %r : f32
}

// -----

// A scope with no allocas is simply inlined.
// CHECK-LABEL: func.func @no_allocas
// CHECK-NOT: memref.alloca_scope
// CHECK-NOT: llvm.intr.stacksave
// CHECK: memref.store
// CHECK-NEXT: return
func.func @no_allocas(%x: f32, %m: memref<4xf32>, %i: index) {
  memref.alloca_scope {
    memref.store %x, %m[%i] : memref<4xf32>
  }
  return
}
