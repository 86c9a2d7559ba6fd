// Soft placement moves ops placed on a device type without code, and the
// pass's own options are checked.
// RUN: kiln-opt %s -verify-diagnostics -pass-pipeline='builtin.module(func.func(kiln-place{allow-soft-placement=1 default-device=/cpu:1}))' | FileCheck %s
// RUN: not kiln-opt %s -pass-pipeline='builtin.module(func.func(kiln-place{place=(=/cpu:1}))' 2>&1 | FileCheck %s --check-prefix=REGEX
// RUN: not kiln-opt %s -pass-pipeline='builtin.module(func.func(kiln-place{place=x=/cpu:q}))' 2>&1 | FileCheck %s --check-prefix=RULE
// RUN: not kiln-opt %s -pass-pipeline='builtin.module(func.func(kiln-place{place=nodevice}))' 2>&1 | FileCheck %s --check-prefix=FORM
// RUN: not kiln-opt %s -pass-pipeline='builtin.module(func.func(kiln-place{default-device=/gpu:0}))' 2>&1 | FileCheck %s --check-prefix=DEFAULT
// RUN: not kiln-opt %s -pass-pipeline='builtin.module(func.func(kiln-place{default-device=/job:w/task:2/cpu:0}))' 2>&1 | FileCheck %s --check-prefix=REMOTE
// RUN: not kiln-opt %s -pass-pipeline='builtin.module(func.func(kiln-place{default-device=cpu}))' 2>&1 | FileCheck %s --check-prefix=DEFNAME
// RUN: not kiln-opt %s -pass-pipeline='builtin.module(func.func(kiln-place{device-types=TPU}))' 2>&1 | FileCheck %s --check-prefix=TYPES
// REGEX: error: kiln-place: placement rule '(=/cpu:1': bad regular expression
// RULE: error: kiln-place: placement rule 'x=/cpu:q': bad device name '/cpu:q'
// FORM: error: kiln-place: placement rule 'nodevice' is not NODE_REGEX=DEVICE
// DEFAULT: error: kiln-place: default device '/job:localhost/replica:0/task:0/device:GPU:0' has no GPU code in this artifact
// REMOTE: error: kiln-place: default device '/job:w/task:2/cpu:0' is a device of another task
// DEFNAME: error: kiln-place: default device: bad device name 'cpu'
// TYPES: error: kiln-place: unknown device type 'TPU' (CPU, GPU)

// CHECK-LABEL: func.func @soft
// CHECK: kiln.neg %{{.*}} {kiln.device = "/job:localhost/replica:0/task:0/device:CPU:1"}
// CHECK: kiln.relu %{{.*}} {kiln.device = "/job:localhost/replica:0/task:0/device:CPU:1"}
func.func @soft(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-warning @+1 {{'kiln.neg' has no kernel on '/job:localhost/replica:0/task:0/device:GPU:1' (its kiln.device attribute); soft placement moves it to '/job:localhost/replica:0/task:0/device:CPU:1'}}
  %n = kiln.neg %x {kiln.device = "/gpu:1"} : tensor<4xf32>
  %r = kiln.relu %n : tensor<4xf32>
  return %r : tensor<4xf32>
}
