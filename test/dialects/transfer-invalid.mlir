// RUN: kiln-opt %s -split-input-file -verify-diagnostics

func.func @partial(%x: tensor<4xf32>) {
  // expected-error @+1 {{'kiln.send' op recv_device '/cpu:1' must name one device fully}}
  kiln.send %x {tensor_name = "t", send_device = "/job:localhost/replica:0/task:0/device:CPU:0", recv_device = "/cpu:1"} : tensor<4xf32>
  return
}

// -----

func.func @bad_name() -> tensor<4xf32> {
  // expected-error @+1 {{'kiln.recv' op send_device: bad device name 'gpu'}}
  %v = kiln.recv {tensor_name = "t", send_device = "gpu", recv_device = "/job:localhost/replica:0/task:0/device:CPU:0"} : tensor<4xf32>
  return %v : tensor<4xf32>
}

// -----

func.func @self(%x: tensor<4xf32>) {
  // expected-error @+1 {{'kiln.send' op sends to its own device '/job:localhost/replica:0/task:0/device:CPU:0'}}
  kiln.send %x {tensor_name = "t", send_device = "/job:localhost/replica:0/task:0/device:CPU:0", recv_device = "/job:localhost/replica:0/task:0/device:CPU:0"} : tensor<4xf32>
  return
}
