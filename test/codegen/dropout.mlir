// Dropout's masks, compiled and run. The first draw of Philox4x32-10 with a
// zero key and counter is 0x6627e8d5 (Random123's known answer), 0.39904 as
// a 24-bit fraction: element 0 survives a ratio of 0.39 (scaled by 1/0.61)
// and is dropped at 0.40. Over 100000 elements a ratio of 0.3 drops
// 30000 +- 435 (three standard deviations), and the masks of counters 0 and
// 1 differ in about 2 * 0.3 * 0.7 of them.
// RUN: kilnc %s -o %t.kiln
// RUN: kiln-run %t.kiln --print | FileCheck %s
// CHECK: output_0: f32[1] [1.6393442]
// CHECK-NEXT: output_1: f32[1] [0]
// CHECK-NEXT: output_2: f32[scalar] [{{(29[5-9][0-9][0-9]|30[0-4][0-9][0-9])}}]
// CHECK-NEXT: output_3: f32[scalar] [{{(41[5-9][0-9][0-9]|42[0-4][0-9][0-9])}}]
func.func @main() -> (tensor<1xf32>, tensor<1xf32>, tensor<f32>, tensor<f32>) {
  %one = kiln.constant dense<1.0> : tensor<1xf32>
  %kept = kiln.dropout %one {ratio = 0.39 : f32, seed = 0 : i64} : (tensor<1xf32>) -> tensor<1xf32>
  %dropped = kiln.dropout %one {ratio = 0.40 : f32, seed = 0 : i64} : (tensor<1xf32>) -> tensor<1xf32>
  %ones = kiln.constant dense<1.0> : tensor<100000xf32>
  %zero = kiln.constant dense<0.0> : tensor<f32>
  %c0 = kiln.constant dense<0> : tensor<i64>
  %c1 = kiln.constant dense<1> : tensor<i64>
  %a = kiln.dropout %ones, %c0 {ratio = 0.3 : f32, seed = 11 : i64} : (tensor<100000xf32>, tensor<i64>) -> tensor<100000xf32>
  %b = kiln.dropout %ones, %c1 {ratio = 0.3 : f32, seed = 11 : i64} : (tensor<100000xf32>, tensor<i64>) -> tensor<100000xf32>
  %az = kiln.equal %a, %zero : (tensor<100000xf32>, tensor<f32>) -> tensor<100000xi1>
  %azf = kiln.cast %az : tensor<100000xi1> -> tensor<100000xf32>
  %dropped_count = kiln.reduce_sum %azf {axes = array<i64: 0>, keepdims = false} : (tensor<100000xf32>) -> tensor<f32>
  %bz = kiln.equal %b, %zero : (tensor<100000xf32>, tensor<f32>) -> tensor<100000xi1>
  %diff = kiln.xor %az, %bz : (tensor<100000xi1>, tensor<100000xi1>) -> tensor<100000xi1>
  %difff = kiln.cast %diff : tensor<100000xi1> -> tensor<100000xf32>
  %diff_count = kiln.reduce_sum %difff {axes = array<i64: 0>, keepdims = false} : (tensor<100000xf32>) -> tensor<f32>
  return %kept, %dropped, %dropped_count, %diff_count : tensor<1xf32>, tensor<1xf32>, tensor<f32>, tensor<f32>
}
