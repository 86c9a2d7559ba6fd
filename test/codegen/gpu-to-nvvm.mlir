// RUN: kiln-opt %s -kiln-gpu-to-nvvm | FileCheck %s

// What kilnc runs after kiln-gpu-form-kernels: kernels become LLVM-dialect
// functions marked for NVVM, memrefs bare pointers (their parameter
// attributes kept), indices 32-bit, math calls libdevice.
// CHECK-LABEL: gpu.module @kiln_kernels
// CHECK: llvm.func @__nv_expf(f32) -> f32
// CHECK: llvm.func @k(%[[IN:.*]]: !llvm.ptr {llvm.noalias, llvm.readonly}, %[[OUT:.*]]: !llvm.ptr {llvm.noalias, llvm.writeonly})
// CHECK-SAME: nvvm.kernel
// CHECK-SAME: nvvm.maxntid = array<i32: 256, 1, 1>
// CHECK: %[[TID:.*]] = nvvm.read.ptx.sreg.tid.x range <i32, 0, 256> : i32
// CHECK: %[[AT:.*]] = llvm.getelementptr {{.*}}%[[IN]][%{{.*}}] : (!llvm.ptr, i32) -> !llvm.ptr, f32
// CHECK: llvm.load %[[AT]] {alignment = 16 : i64} : !llvm.ptr -> vector<4xf32>
// CHECK-COUNT-4: llvm.call @__nv_expf
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 16 : i64} : vector<4xf32>, !llvm.ptr
module attributes {gpu.container_module} {
  gpu.module @kiln_kernels {
    gpu.func @k(%in: memref<1024xf32> {llvm.noalias, llvm.readonly},
                %out: memref<1024xf32> {llvm.noalias, llvm.writeonly}) kernel
        attributes {known_block_size = array<i32: 256, 1, 1>} {
      %c4 = arith.constant 4 : index
      %c256 = arith.constant 256 : index
      %tid = gpu.thread_id x
      %inRange = arith.cmpi ult, %tid, %c256 : index
      scf.if %inRange {
        %at = arith.muli %tid, %c4 : index
        %v = vector.load %in[%at] {alignment = 16 : i64} : memref<1024xf32>, vector<4xf32>
        %a = vector.extract %v[0] : f32 from vector<4xf32>
        %b = vector.extract %v[1] : f32 from vector<4xf32>
        %c = vector.extract %v[2] : f32 from vector<4xf32>
        %d = vector.extract %v[3] : f32 from vector<4xf32>
        %ea = math.exp %a : f32
        %eb = math.exp %b : f32
        %ec = math.exp %c : f32
        %ed = math.exp %d : f32
        %r = vector.from_elements %ea, %eb, %ec, %ed : vector<4xf32>
        vector.store %r, %out[%at] {alignment = 16 : i64} : memref<1024xf32>, vector<4xf32>
      }
      gpu.return
    }
  }
}
