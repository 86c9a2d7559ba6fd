// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-place{place=head/.*=/cpu:1}))' | FileCheck %s
// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-place{place=head/.*=/cpu:1 log=1}))' -o /dev/null 2>&1 | FileCheck %s --check-prefix=LOG
// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-place{place=head/.*=/gpu:0 device-types=CPU,GPU}))' | FileCheck %s --check-prefix=GPU
// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-place{default-device=/gpu:0 device-types=GPU allow-soft-placement=1}))' 2>/dev/null | FileCheck %s --check-prefix=GPUONLY

// Rules place the head; the rest follows its inputs; constants go with their
// first user.
// CHECK-LABEL: func.func @rules_then_inputs
// CHECK: kiln.constant {kiln.device = "/job:localhost/replica:0/task:0/device:CPU:1"}
// CHECK: kiln.relu %{{.*}} {kiln.device = "/job:localhost/replica:0/task:0/device:CPU:0"}
// CHECK: kiln.neg %{{.*}} {kiln.device = "/job:localhost/replica:0/task:0/device:CPU:1"}
// CHECK: kiln.add %{{.*}} {kiln.device = "/job:localhost/replica:0/task:0/device:CPU:1"}
// CHECK: kiln.exp %{{.*}} {kiln.device = "/job:localhost/replica:0/task:0/device:CPU:1"}
// LOG: one: /job:localhost/replica:0/task:0/device:CPU:1
// LOG-NEXT: fc1: /job:localhost/replica:0/task:0/device:CPU:0
// LOG-NEXT: head/neg: /job:localhost/replica:0/task:0/device:CPU:1
// LOG-NEXT: head/add: /job:localhost/replica:0/task:0/device:CPU:1
// LOG-NEXT: tail: /job:localhost/replica:0/task:0/device:CPU:1
// GPU-LABEL: func.func @rules_then_inputs
// GPU: kiln.relu %{{.*}} {kiln.device = "/job:localhost/replica:0/task:0/device:CPU:0"}
// GPU: kiln.neg %{{.*}} {kiln.device = "/job:localhost/replica:0/task:0/device:GPU:0"}
func.func @rules_then_inputs(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = kiln.constant dense<1.0> : tensor<4xf32> loc("one")
  %r = kiln.relu %x : tensor<4xf32> loc("fc1")
  %n = kiln.neg %r : tensor<4xf32> loc("head/neg")
  %a = kiln.add %n, %c : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("head/add")
  %e = kiln.exp %a : tensor<4xf32> loc("tail")
  return %e : tensor<4xf32>
}

// -----

// The input with the most bytes decides; an explicit attribute is kept and
// completed.
// CHECK-LABEL: func.func @largest_input_wins
// CHECK: kiln.relu %{{.*}} {kiln.device = "/job:localhost/replica:0/task:0/device:CPU:0"}
// CHECK: kiln.neg %{{.*}} {kiln.device = "/job:localhost/replica:0/task:0/device:CPU:1"}
// CHECK: kiln.exp %{{.*}} {kiln.device = "/job:localhost/replica:0/task:0/device:CPU:2"}
// CHECK: kiln.add %{{.*}} {kiln.device = "/job:localhost/replica:0/task:0/device:CPU:1"}
func.func @largest_input_wins(%x: tensor<8x4xf32>, %y: tensor<4xf32>) -> tensor<8x4xf32> {
  %small = kiln.relu %y : tensor<4xf32> loc("small")
  %big = kiln.neg %x : tensor<8x4xf32> loc("head/big")
  %e = kiln.exp %small {kiln.device = "/cpu:2"} : tensor<4xf32> loc("pinned")
  %a = kiln.add %big, %e : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32> loc("sum")
  return %a : tensor<8x4xf32>
}

// -----

// A tiny shape computation whose input lives on a GPU stays on the CPU.
// GPU-LABEL: func.func @tiny_shape_op
// GPU: kiln.neg %{{.*}} {kiln.device = "/job:localhost/replica:0/task:0/device:GPU:0"} : tensor<4xi64>
// GPU: kiln.abs %{{.*}} {kiln.device = "/job:localhost/replica:0/task:0/device:CPU:0"} : tensor<4xi64>
// GPU: kiln.relu %{{.*}} {kiln.device = "/job:localhost/replica:0/task:0/device:GPU:0"} : tensor<64xf32>
func.func @tiny_shape_op(%s: tensor<4xi64>, %x: tensor<64xf32>) -> (tensor<4xi64>, tensor<64xf32>) {
  %n = kiln.neg %s : tensor<4xi64> loc("head/shape")
  %a = kiln.abs %n : tensor<4xi64> loc("dims")
  %h = kiln.neg %x : tensor<64xf32> loc("head/x")
  %r = kiln.relu %h : tensor<64xf32> loc("act")
  return %a, %r : tensor<4xi64>, tensor<64xf32>
}

// -----

// Only GPU code: a tiny shape op stays on the GPU (there is no CPU code to
// move it to); declarations are left alone.
// GPUONLY-LABEL: func.func private @declaration
// GPUONLY-LABEL: func.func @gpu_only
// GPUONLY: kiln.neg %{{.*}} {kiln.device = "/job:localhost/replica:0/task:0/device:GPU:0"} : tensor<4xi64>
// GPUONLY: kiln.abs %{{.*}} {kiln.device = "/job:localhost/replica:0/task:0/device:GPU:0"} : tensor<4xi64>
func.func private @declaration(tensor<4xi64>) -> tensor<4xi64>
func.func @gpu_only(%s: tensor<4xi64>) -> tensor<4xi64> {
  %n = kiln.neg %s : tensor<4xi64> loc("shape")
  %a = kiln.abs %n : tensor<4xi64> loc("dims")
  return %a : tensor<4xi64>
}
