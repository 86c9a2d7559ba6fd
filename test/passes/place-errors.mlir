// RUN: kiln-opt %s -split-input-file -verify-diagnostics -pass-pipeline='builtin.module(func.func(kiln-place))'

// Every way a device name can be malformed, each naming the string.
func.func @bad_names(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{bad device name 'gpu:0': a device name starts with '/'}}
  %a = kiln.relu %x {kiln.device = "gpu:0"} : tensor<4xf32>
  // expected-error @+1 {{bad device name '/tpu': 'tpu' is not a field}}
  %b = kiln.relu %x {kiln.device = "/tpu"} : tensor<4xf32>
  // expected-error @+1 {{bad device name '/device:TPU:0': unknown device type 'TPU' (Kiln has CPU and GPU devices)}}
  %c = kiln.relu %x {kiln.device = "/device:TPU:0"} : tensor<4xf32>
  // expected-error @+1 {{bad device name '/gpu:x': 'x' is not a device index (a number, or * for any)}}
  %d = kiln.relu %x {kiln.device = "/gpu:x"} : tensor<4xf32>
  // expected-error @+1 {{bad device name '/cpu:-1': '-1' is not a device index}}
  %e = kiln.relu %x {kiln.device = "/cpu:-1"} : tensor<4xf32>
  // expected-error @+1 {{bad device name '/job:1worker/cpu:0': job name '1worker' must start with a letter}}
  %f = kiln.relu %x {kiln.device = "/job:1worker/cpu:0"} : tensor<4xf32>
  // expected-error @+1 {{bad device name '/task:one': 'one' is not a task (a non-negative number)}}
  %g = kiln.relu %x {kiln.device = "/task:one"} : tensor<4xf32>
  // expected-error @+1 {{bad device name '/replica:0/replica:1': 'replica' is given twice}}
  %h = kiln.relu %x {kiln.device = "/replica:0/replica:1"} : tensor<4xf32>
  // expected-error @+1 {{bad device name '/job:a/job:b': 'job' is given twice}}
  %i = kiln.relu %x {kiln.device = "/job:a/job:b"} : tensor<4xf32>
  // expected-error @+1 {{bad device name '/cpu:0/gpu:0': the device is given twice}}
  %j = kiln.relu %x {kiln.device = "/cpu:0/gpu:0"} : tensor<4xf32>
  // expected-error @+1 {{bad device name '/cpu:0/': empty field}}
  %k = kiln.relu %x {kiln.device = "/cpu:0/"} : tensor<4xf32>
  // expected-error @+1 {{bad device name '/host:0': unknown field 'host'}}
  %l = kiln.relu %x {kiln.device = "/host:0"} : tensor<4xf32>
  return %x : tensor<4xf32>
}

// -----

// Devices of other tasks and device types without code.
func.func @unplaceable(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{placed on '/job:worker/task:1/device:CPU:0' (its kiln.device attribute), a device of another task}}
  %a = kiln.relu %x {kiln.device = "/job:worker/task:1/cpu:0"} : tensor<4xf32>
  // expected-error @+1 {{'kiln.neg' is placed on '/job:localhost/replica:0/task:0/device:GPU:0' (its kiln.device attribute) but the artifact has no GPU code (it is compiled for CPU)}}
  %b = kiln.neg %x {kiln.device = "/gpu:0"} : tensor<4xf32>
  return %b : tensor<4xf32>
}
