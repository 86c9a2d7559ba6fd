// RUN: kiln-opt %s -split-input-file -verify-diagnostics -pass-pipeline='builtin.module(kiln-partition,kiln-form-stages)'

func.func @unplaced(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{kiln-partition: the op has no kiln.device (run kiln-place first)}}
  %r = kiln.relu %x : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @partial(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{kiln-partition: device '/cpu:1' is not a full device name (run kiln-place first)}}
  %r = kiln.relu %x {kiln.device = "/cpu:1"} : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @bad(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{kiln-partition: bad device name 'cpu1'}}
  %r = kiln.relu %x {kiln.device = "cpu1"} : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// A receive nobody sends.
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = call @main_cpu1(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
func.func @main_cpu1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {kiln.device = "/job:localhost/replica:0/task:0/device:CPU:1"} {
  // expected-error @+1 {{kiln-form-stages: no partition sends tensor 't:0' from '/job:localhost/replica:0/task:0/device:CPU:0'}}
  %v = kiln.recv {tensor_name = "t:0", send_device = "/job:localhost/replica:0/task:0/device:CPU:0", recv_device = "/job:localhost/replica:0/task:0/device:CPU:1"} : tensor<4xf32>
  return %v : tensor<4xf32>
}

// -----

// The same tensor sent twice to one device.
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  call @main_cpu0(%x) : (tensor<4xf32>) -> ()
  return %x : tensor<4xf32>
}
func.func @main_cpu0(%x: tensor<4xf32>) attributes {kiln.device = "/job:localhost/replica:0/task:0/device:CPU:0"} {
  %r = kiln.relu %x : tensor<4xf32>
  kiln.send %r {tensor_name = "t:0", send_device = "/job:localhost/replica:0/task:0/device:CPU:0", recv_device = "/job:localhost/replica:0/task:0/device:CPU:1"} : tensor<4xf32>
  // expected-error @+1 {{kiln-form-stages: tensor 't:0' is sent twice to the same device}}
  kiln.send %r {tensor_name = "t:0", send_device = "/job:localhost/replica:0/task:0/device:CPU:0", recv_device = "/job:localhost/replica:0/task:0/device:CPU:1"} : tensor<4xf32>
  return
}

// -----

// Two partitions waiting for each other.
// expected-error @+1 {{kiln-form-stages: the partitions' transfers form a cycle}}
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  call @main_cpu0(%x) : (tensor<4xf32>) -> ()
  %r = call @main_cpu1(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
func.func @main_cpu0(%x: tensor<4xf32>) attributes {kiln.device = "/job:localhost/replica:0/task:0/device:CPU:0"} {
  %v = kiln.recv {tensor_name = "b:0", send_device = "/job:localhost/replica:0/task:0/device:CPU:1", recv_device = "/job:localhost/replica:0/task:0/device:CPU:0"} : tensor<4xf32>
  %r = kiln.relu %v : tensor<4xf32>
  kiln.send %r {tensor_name = "a:0", send_device = "/job:localhost/replica:0/task:0/device:CPU:0", recv_device = "/job:localhost/replica:0/task:0/device:CPU:1"} : tensor<4xf32>
  return
}
func.func @main_cpu1(%x: tensor<4xf32>) -> tensor<4xf32> attributes {kiln.device = "/job:localhost/replica:0/task:0/device:CPU:1"} {
  %v = kiln.recv {tensor_name = "a:0", send_device = "/job:localhost/replica:0/task:0/device:CPU:0", recv_device = "/job:localhost/replica:0/task:0/device:CPU:1"} : tensor<4xf32>
  %r = kiln.neg %v : tensor<4xf32>
  kiln.send %r {tensor_name = "b:0", send_device = "/job:localhost/replica:0/task:0/device:CPU:1", recv_device = "/job:localhost/replica:0/task:0/device:CPU:0"} : tensor<4xf32>
  return %r : tensor<4xf32>
}
