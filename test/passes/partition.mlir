// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(kiln-partition)' | FileCheck %s
// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(kiln-partition,kiln-form-stages)' | FileCheck %s --check-prefix=STAGES

// A tensor used twice on another device is sent once; constants are copied
// instead of sent; the function calls both partitions.
// CHECK-LABEL: func.func @main(
// CHECK-SAME: %[[X:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<8x8xf32>)
// CHECK: call @main_cpu0(%[[X]], %[[W]]) : (tensor<4x8xf32>, tensor<8x8xf32>) -> ()
// CHECK: %[[R:.*]]:2 = call @main_cpu1(%[[X]], %[[W]])
// CHECK: return %[[R]]#0, %[[R]]#1
// CHECK-LABEL: func.func @main_cpu0(
// CHECK-SAME: attributes {kiln.device = "/job:localhost/replica:0/task:0/device:CPU:0"}
// CHECK: %[[M:.*]] = kiln.matmul
// CHECK: %[[C:.*]] = kiln.constant dense<1.000000e+00>
// CHECK: %[[A:.*]] = kiln.add %[[M]], %[[C]]
// CHECK: %[[H:.*]] = kiln.relu %[[A]]
// CHECK-NEXT: kiln.send %[[H]] {recv_device = "/job:localhost/replica:0/task:0/device:CPU:1", send_device = "/job:localhost/replica:0/task:0/device:CPU:0", tensor_name = "act:0"}
// CHECK-NOT: kiln.send
// CHECK: return
// CHECK-LABEL: func.func @main_cpu1(
// CHECK-SAME: -> (tensor<4x8xf32>, tensor<4x8xf32>) attributes {kiln.device = "/job:localhost/replica:0/task:0/device:CPU:1"}
// CHECK: %[[V:.*]] = kiln.recv {recv_device = "/job:localhost/replica:0/task:0/device:CPU:1", send_device = "/job:localhost/replica:0/task:0/device:CPU:0", tensor_name = "act:0"} : tensor<4x8xf32>
// CHECK-NOT: kiln.recv
// CHECK: %[[N:.*]] = kiln.neg %[[V]]
// CHECK: %[[E:.*]] = kiln.exp %[[N]]
// CHECK: %[[S:.*]] = kiln.add %[[E]], %[[V]]
// CHECK: kiln.constant dense<1.000000e+00>
// CHECK: %[[T:.*]] = kiln.add %[[S]]
// CHECK: return %[[T]], %[[E]]

// Cut at the receive: cpu:1 takes act from stage 0.
// STAGES-LABEL: func.func @main(
// STAGES: %[[S0:.*]] = call @main_cpu0_s0(%{{.*}}, %{{.*}}) {kiln.device = "/job:localhost/replica:0/task:0/device:CPU:0"}
// STAGES: %[[S1:.*]]:2 = call @main_cpu1_s1(%[[S0]]) {kiln.device = "/job:localhost/replica:0/task:0/device:CPU:1"}
// STAGES: return %[[S1]]#0, %[[S1]]#1
// STAGES-NOT: kiln.send
// STAGES-NOT: kiln.recv
func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %c = kiln.constant {kiln.device = "/job:localhost/replica:0/task:0/device:CPU:0"} dense<1.0> : tensor<8xf32> loc("bias")
  %m = kiln.matmul %x, %w {kiln.device = "/job:localhost/replica:0/task:0/device:CPU:0"} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("fc1")
  %a = kiln.add %m, %c {kiln.device = "/job:localhost/replica:0/task:0/device:CPU:0"} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> loc("bias_add")
  %r = kiln.relu %a {kiln.device = "/job:localhost/replica:0/task:0/device:CPU:0"} : tensor<4x8xf32> loc("act")
  %n = kiln.neg %r {kiln.device = "/job:localhost/replica:0/task:0/device:CPU:1"} : tensor<4x8xf32> loc("head/neg")
  %e = kiln.exp %n {kiln.device = "/job:localhost/replica:0/task:0/device:CPU:1"} : tensor<4x8xf32> loc("head/exp")
  %s = kiln.add %e, %r {kiln.device = "/job:localhost/replica:0/task:0/device:CPU:1"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("tail")
  %t = kiln.add %s, %c {kiln.device = "/job:localhost/replica:0/task:0/device:CPU:1"} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> loc("tail2")
  return %t, %e : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// A round trip: cpu:0, then cpu:1, then cpu:0 again: three stages, each
// taking only what it needs; independent work of cpu:0 stays in its first
// stage.
// STAGES-LABEL: func.func @round_trip(
// STAGES-SAME: %[[X:.*]]: tensor<4xf32>
// STAGES: %[[A:.*]]:2 = call @round_trip_cpu0_s0(%[[X]]) {kiln.device = "{{.*}}CPU:0"} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
// STAGES: %[[B:.*]] = call @round_trip_cpu1_s1(%[[A]]#0) {kiln.device = "{{.*}}CPU:1"}
// STAGES: %[[C:.*]] = call @round_trip_cpu0_s2(%[[B]], %[[A]]#1) {kiln.device = "{{.*}}CPU:0"}
// STAGES: return %[[C]]
// STAGES-LABEL: func.func @round_trip_cpu0_s0(
// STAGES: kiln.relu
// STAGES: kiln.abs
// STAGES-LABEL: func.func @round_trip_cpu1_s1(
// STAGES: kiln.neg
// STAGES-LABEL: func.func @round_trip_cpu0_s2(
// STAGES: kiln.add
func.func @round_trip(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = kiln.relu %x {kiln.device = "/job:localhost/replica:0/task:0/device:CPU:0"} : tensor<4xf32> loc("a")
  %n = kiln.neg %r {kiln.device = "/job:localhost/replica:0/task:0/device:CPU:1"} : tensor<4xf32> loc("b")
  %s = kiln.abs %x {kiln.device = "/job:localhost/replica:0/task:0/device:CPU:0"} : tensor<4xf32> loc("side")
  %t = kiln.add %n, %s {kiln.device = "/job:localhost/replica:0/task:0/device:CPU:0"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("c")
  return %t : tensor<4xf32>
}

// -----

// One device: no split, the function is tagged with it.
// CHECK-LABEL: func.func @single(
// CHECK-SAME: attributes {kiln.device = "/job:localhost/replica:0/task:0/device:CPU:1"}
// CHECK-NEXT: kiln.relu %{{.*}} : tensor<4xf32>
// CHECK-NOT: call
func.func @single(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = kiln.relu %x {kiln.device = "/job:localhost/replica:0/task:0/device:CPU:1"} : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// A constant placed alone on another device makes no partition: constants
// are copied to their users.
// CHECK-LABEL: func.func @lonely_constant(
// CHECK-SAME: attributes {kiln.device = "/job:localhost/replica:0/task:0/device:CPU:0"}
// CHECK-NOT: call
// CHECK: kiln.constant
// CHECK: kiln.add
func.func @lonely_constant(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = kiln.constant {kiln.device = "/job:localhost/replica:0/task:0/device:CPU:1"} dense<1.0> : tensor<4xf32>
  %a = kiln.add %x, %c {kiln.device = "/job:localhost/replica:0/task:0/device:CPU:0"} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %a : tensor<4xf32>
}
