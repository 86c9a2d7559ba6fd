// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-decompose,canonicalize,kiln-fuse,cse))' | FileCheck %s
// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-decompose,canonicalize,kiln-fuse{channel-first-convolutions=1},cse))' | FileCheck %s --check-prefix=CHANNELS

// Loop fusion: an elementwise chain with a broadcast, a transpose, a reshape
// and a cast becomes one fusion.
// CHECK-LABEL: func.func @loop_chain
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<4xf32>)
// CHECK: %[[F:.*]] = kiln.fusion loop(%[[X]], %[[B]])
// CHECK: kiln.transpose
// CHECK: kiln.add
// CHECK: kiln.relu
// CHECK: kiln.reshape
// CHECK: kiln.cast
// CHECK: kiln.yield
// CHECK-NOT: kiln.fusion
// CHECK: return %[[F]]
func.func @loop_chain(%x: tensor<4x8xf32>, %b: tensor<4xf32>) -> tensor<32xf16> {
  %t = kiln.transpose %x {perm = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %a = kiln.add %t, %b : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
  %r = kiln.relu %a : tensor<8x4xf32>
  %s = kiln.reshape %r : tensor<8x4xf32> -> tensor<32xf32>
  %c = kiln.cast %s : tensor<32xf32> -> tensor<32xf16>
  return %c : tensor<32xf16>
}

// -----

// Input fusion: softmax's two reductions and the elementwise ops around them
// are one fusion over rows.
// CHECK-LABEL: func.func @softmax
// CHECK: %[[F:.*]] = kiln.fusion input(%{{.*}}) : (tensor<2x8xf32>) -> tensor<2x8xf32>
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<2x8xf32>):
// CHECK-NEXT: %[[M:.*]] = kiln.reduce_max %[[A]]
// CHECK-NEXT: %[[S:.*]] = kiln.sub %[[A]], %[[M]]
// CHECK-NEXT: %[[E:.*]] = kiln.exp %[[S]]
// CHECK-NEXT: %[[T:.*]] = kiln.reduce_sum %[[E]]
// CHECK-NEXT: %[[R:.*]] = kiln.reciprocal %[[T]]
// CHECK-NEXT: %[[D:.*]] = kiln.mul %[[E]], %[[R]]
// CHECK-NEXT: kiln.yield %[[D]]
// CHECK-NOT: kiln.fusion
func.func @softmax(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %y = kiln.softmax %x {axis = 1 : i64} : tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// Input fusion: layer normalization (mean, variance, scale and shift) is one
// fusion; its small constants are copied in.
// CHECK-LABEL: func.func @layer_norm
// CHECK: kiln.fusion input(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
// CHECK: kiln.constant
// CHECK: kiln.reduce_sum
// CHECK: kiln.div
// CHECK: kiln.sub
// CHECK: kiln.mul
// CHECK: kiln.reduce_sum
// CHECK: kiln.sqrt
// CHECK: kiln.reciprocal
// CHECK: kiln.mul
// CHECK: kiln.add
// CHECK: kiln.yield
// CHECK-NOT: kiln.fusion
func.func @layer_norm(%x: tensor<4x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<4x16xf32> {
  %y, %mean, %rstd = kiln.layer_norm %x, %g, %b {axis = 1 : i64, epsilon = 1.0e-05 : f32}
      : (tensor<4x16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4x1xf32>, tensor<4x1xf32>)
  return %y : tensor<4x16xf32>
}

// -----

// Output fusion: GEMM with bias and ReLU (ONNX Gemm + Relu) is one fusion
// built around the matmul.
// CHECK-LABEL: func.func @gemm_bias_relu
// CHECK: %[[F:.*]] = kiln.fusion output(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<64x784xf32>, tensor<784x1024xf32>, tensor<1024xf32>) -> tensor<64x1024xf32>
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<64x784xf32>, %[[W:.*]]: tensor<784x1024xf32>, %[[B:.*]]: tensor<1024xf32>):
// CHECK-NEXT: %[[M:.*]] = kiln.matmul %[[A]], %[[W]]
// CHECK-NEXT: %[[S:.*]] = kiln.add %[[M]], %[[B]]
// CHECK-NEXT: %[[R:.*]] = kiln.relu %[[S]]
// CHECK-NEXT: kiln.yield %[[R]]
// CHECK: return %[[F]]
func.func @gemm_bias_relu(%x: tensor<64x784xf32>, %w: tensor<784x1024xf32>, %b: tensor<1024xf32>) -> tensor<64x1024xf32> {
  %g = kiln.gemm %x, %w, %b : (tensor<64x784xf32>, tensor<784x1024xf32>, tensor<1024xf32>) -> tensor<64x1024xf32>
  %r = kiln.relu %g : tensor<64x1024xf32>
  return %r : tensor<64x1024xf32>
}

// -----

// A matrix product's epilogue takes in a DAG of elementwise ops that reads
// the product's sum more than once and ends in one value: GELU's
// x * (1 + erf(x / sqrt(2))) / 2 after the bias. A DAG with a value read
// outside it (x, saved for a gradient) ends the epilogue at x.
// CHECK-LABEL: func.func @gelu_epilogue
// CHECK: %[[F:.*]] = kiln.fusion output
// CHECK: %[[M:.*]] = kiln.matmul
// CHECK-NEXT: %[[X:.*]] = kiln.add %[[M]]
// CHECK-NEXT: %[[D:.*]] = kiln.div %[[X]]
// CHECK-NEXT: %[[E:.*]] = kiln.erf %[[D]]
// CHECK-NEXT: %[[P:.*]] = kiln.add %[[E]]
// CHECK-NEXT: %[[Q:.*]] = kiln.mul %[[X]], %[[P]]
// CHECK-NEXT: %[[H:.*]] = kiln.mul %[[Q]]
// CHECK-NEXT: %[[R:.*]] = kiln.relu %[[H]]
// CHECK-NEXT: kiln.yield %[[R]]
// CHECK-NOT: kiln.fusion
// CHECK: return %[[F]]
func.func @gelu_epilogue(%a: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<8x32xf32> {
  %root2 = kiln.constant dense<1.41421354> : tensor<f32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %half = kiln.constant dense<0.5> : tensor<f32>
  %m = kiln.matmul %a, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %x = kiln.add %m, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %d = kiln.div %x, %root2 : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  %e = kiln.erf %d : tensor<8x32xf32>
  %p = kiln.add %e, %one : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  %q = kiln.mul %x, %p : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  %h = kiln.mul %q, %half : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  %r = kiln.relu %h : tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

// The DAG may start at the product itself (SiLU, x * sigmoid(x)). A value
// that is not cheap and is read twice (exp(x) here) ends the epilogue
// before it: the kernel's loops would compute it once for each reader.
// CHECK-LABEL: func.func @silu_epilogue
// CHECK: %[[F:.*]] = kiln.fusion output
// CHECK: %[[M:.*]] = kiln.matmul
// CHECK-NEXT: %[[S:.*]] = kiln.sigmoid %[[M]]
// CHECK-NEXT: %[[Y:.*]] = kiln.mul %[[M]], %[[S]]
// CHECK-NEXT: %[[E:.*]] = kiln.exp %[[Y]]
// CHECK-NEXT: kiln.yield %[[E]]
// CHECK: kiln.fusion loop(%[[F]])
// CHECK: kiln.mul
// CHECK: kiln.add
func.func @silu_epilogue(%a: tensor<8x16xf32>, %w: tensor<16x32xf32>) -> tensor<8x32xf32> {
  %m = kiln.matmul %a, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %s = kiln.sigmoid %m : tensor<8x32xf32>
  %y = kiln.mul %m, %s : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  %e = kiln.exp %y : tensor<8x32xf32>
  %sq = kiln.mul %e, %e : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  %r = kiln.add %sq, %e : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  return %r : tensor<8x32xf32>
}

// -----

// GELU whose input is also a result of the function (saved for a gradient
// in a train step): x is stored, and GELU is a kernel of its own.
// CHECK-LABEL: func.func @gelu_input_saved
// CHECK: %[[F:.*]] = kiln.fusion output
// CHECK: kiln.matmul
// CHECK-NEXT: %[[X:.*]] = kiln.add
// CHECK-NEXT: kiln.yield %[[X]]
// CHECK: kiln.fusion loop(%[[F]])
// CHECK: kiln.erf
// CHECK: return %{{.*}}, %[[F]]
func.func @gelu_input_saved(%a: tensor<8x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> (tensor<8x32xf32>, tensor<8x32xf32>) {
  %root2 = kiln.constant dense<1.41421354> : tensor<f32>
  %one = kiln.constant dense<1.0> : tensor<f32>
  %m = kiln.matmul %a, %w : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %x = kiln.add %m, %b : (tensor<8x32xf32>, tensor<32xf32>) -> tensor<8x32xf32>
  %d = kiln.div %x, %root2 : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  %e = kiln.erf %d : tensor<8x32xf32>
  %p = kiln.add %e, %one : (tensor<8x32xf32>, tensor<f32>) -> tensor<8x32xf32>
  %q = kiln.mul %x, %p : (tensor<8x32xf32>, tensor<8x32xf32>) -> tensor<8x32xf32>
  return %q, %x : tensor<8x32xf32>, tensor<8x32xf32>
}

// -----

// Output fusion with a residual add; the producer of the residual, too
// costly to be an epilogue's operand, stays outside.
// CHECK-LABEL: func.func @residual
// CHECK: %[[P:.*]] = kiln.fusion loop
// CHECK: kiln.tanh
// CHECK: kiln.fusion output(%{{.*}}, %{{.*}}, %[[P]])
// CHECK: kiln.matmul
// CHECK: kiln.add
// CHECK: kiln.relu
func.func @residual(%x: tensor<8x16xf32>, %w: tensor<16x16xf32>, %y: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %p = kiln.tanh %y : tensor<8x16xf32>
  %m = kiln.matmul %x, %w : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %a = kiln.add %m, %p : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %r = kiln.relu %a : tensor<8x16xf32>
  return %r : tensor<8x16xf32>
}

// -----

// A ReLU gradient after dY W^T: the mask y > 0, cheap and read only by the
// epilogue's selection, joins the output fusion, which then reads y itself.
// A mask that another kernel reads too stays outside.
// CHECK-LABEL: func.func @relu_mask
// CHECK-SAME: (%{{.*}}: tensor<8x16xf32>, %{{.*}}: tensor<16x16xf32>, %[[Y:.*]]: tensor<8x16xf32>)
// CHECK: kiln.fusion output(%{{.*}}, %{{.*}}, %[[Y]])
// CHECK: kiln.matmul
// CHECK: kiln.greater
// CHECK: kiln.where
// CHECK-NEXT: kiln.yield
// CHECK-NOT: kiln.fusion
func.func @relu_mask(%g: tensor<8x16xf32>, %w: tensor<16x16xf32>, %y: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %zero = kiln.constant dense<0.0> : tensor<f32>
  %m = kiln.matmul %g, %w : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %pos = kiln.greater %y, %zero : (tensor<8x16xf32>, tensor<f32>) -> tensor<8x16xi1>
  %d = kiln.where %pos, %m, %zero : (tensor<8x16xi1>, tensor<8x16xf32>, tensor<f32>) -> tensor<8x16xf32>
  return %d : tensor<8x16xf32>
}

// -----

// CHECK-LABEL: func.func @shared_mask
// CHECK: %[[MASK:.*]] = kiln.fusion loop
// CHECK: kiln.greater
// CHECK: kiln.fusion output(%{{.*}}, %{{.*}}, %[[MASK]])
// CHECK-NOT: kiln.greater
// CHECK: kiln.where
func.func @shared_mask(%g: tensor<8x16xf32>, %w: tensor<16x16xf32>, %y: tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xi1>) {
  %zero = kiln.constant dense<0.0> : tensor<f32>
  %m = kiln.matmul %g, %w : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %pos = kiln.greater %y, %zero : (tensor<8x16xf32>, tensor<f32>) -> tensor<8x16xi1>
  %d = kiln.where %pos, %m, %zero : (tensor<8x16xi1>, tensor<8x16xf32>, tensor<f32>) -> tensor<8x16xf32>
  return %d, %pos : tensor<8x16xf32>, tensor<8x16xi1>
}

// -----

// A value stored for a matrix product is read, not computed again, by its
// other consumers: the column sum reads d rather than joining a and b anew.
// CHECK-LABEL: func.func @stored_for_product
// CHECK-SAME: (%[[A:.*]]: tensor<8x16xf32>, %[[B:.*]]: tensor<8x16xf32>, %{{.*}}: tensor<16x16xf32>)
// CHECK: %[[D:.*]] = kiln.fusion loop(%[[A]], %[[B]])
// CHECK: kiln.sub
// CHECK: kiln.neg
// CHECK: kiln.fusion output(%[[D]], %{{.*}})
// CHECK: kiln.fusion input(%[[D]]) : (tensor<8x16xf32>) -> tensor<1x16xf32>
// CHECK-NOT: kiln.sub
// CHECK: kiln.reduce_sum
func.func @stored_for_product(%a: tensor<8x16xf32>, %b: tensor<8x16xf32>, %w: tensor<16x16xf32>) -> (tensor<8x16xf32>, tensor<1x16xf32>) {
  %j = kiln.sub %a, %b : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %d = kiln.neg %j : tensor<8x16xf32>
  %m = kiln.matmul %d, %w : (tensor<8x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32>
  %s = kiln.reduce_sum %d {axes = array<i64: 0>} : (tensor<8x16xf32>) -> tensor<1x16xf32>
  return %m, %s : tensor<8x16xf32>, tensor<1x16xf32>
}

// -----

// Multi-output (sibling) fusion: a sum and a max of the same input, each with
// its own consumer, are computed by one fusion that reads x once.
// CHECK-LABEL: func.func @siblings
// CHECK: %[[F:.*]]:2 = kiln.fusion input(%{{.*}}) : (tensor<4x32xf32>) -> (tensor<4x1xf32>, tensor<4x1xf32>)
// CHECK-DAG: kiln.reduce_sum
// CHECK-DAG: kiln.reduce_max
// CHECK: kiln.yield
// CHECK-NOT: kiln.fusion
// CHECK: return %[[F]]#{{[01]}}, %[[F]]#{{[01]}}
func.func @siblings(%x: tensor<4x32xf32>) -> (tensor<4x1xf32>, tensor<4x1xf32>) {
  %s = kiln.reduce_sum %x {axes = array<i64: 1>} : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %m = kiln.reduce_max %x {axes = array<i64: 1>} : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %n = kiln.neg %s : tensor<4x1xf32>
  %e = kiln.abs %m : tensor<4x1xf32>
  return %n, %e : tensor<4x1xf32>, tensor<4x1xf32>
}

// -----

// Cost rule: an expensive producer (exp) that the consumer broadcasts would
// be recomputed for every broadcast element, so it keeps its own fusion.
// CHECK-LABEL: func.func @no_broadcast_recompute
// CHECK: %[[E:.*]] = kiln.fusion loop(%{{.*}}) : (tensor<64xf32>) -> tensor<64xf32>
// CHECK: kiln.exp
// CHECK: kiln.fusion loop(%{{.*}}, %[[E]]) : (tensor<128x64xf32>, tensor<64xf32>) -> tensor<128x64xf32>
// CHECK-NOT: kiln.exp
// CHECK: kiln.add
func.func @no_broadcast_recompute(%x: tensor<128x64xf32>, %v: tensor<64xf32>) -> tensor<128x64xf32> {
  %e = kiln.exp %v : tensor<64xf32>
  %a = kiln.add %x, %e : (tensor<128x64xf32>, tensor<64xf32>) -> tensor<128x64xf32>
  return %a : tensor<128x64xf32>
}

// -----

// Cost rule: an expensive producer used by two fusions is not computed twice;
// a cheap one (neg) is duplicated into both rather than stored. (The two
// consumers run over different shapes, so they are not siblings.)
// CHECK-LABEL: func.func @duplicate_cheap_only
// CHECK: %[[E:.*]] = kiln.fusion loop(%{{.*}}) : (tensor<16xf32>) -> tensor<16xf32>
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.exp
// CHECK-NEXT: kiln.yield
// CHECK: kiln.fusion loop(%{{.*}}, %[[E]]) : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
// CHECK-NOT: kiln.exp
// CHECK: kiln.neg
// CHECK: kiln.mul
// CHECK: kiln.fusion loop(%{{.*}}, %[[E]]) : (tensor<16xf32>, tensor<16xf32>) -> tensor<4x4xf32>
// CHECK-NOT: kiln.exp
// CHECK: kiln.neg
// CHECK: kiln.add
// CHECK: kiln.reshape
func.func @duplicate_cheap_only(%x: tensor<16xf32>, %y: tensor<16xf32>) -> (tensor<16xf32>, tensor<4x4xf32>) {
  %e = kiln.exp %x : tensor<16xf32>
  %n = kiln.neg %y : tensor<16xf32>
  %a = kiln.mul %e, %n : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  %b = kiln.add %e, %n : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  %c = kiln.reshape %b : tensor<16xf32> -> tensor<4x4xf32>
  return %a, %c : tensor<16xf32>, tensor<4x4xf32>
}

// -----

// A cheap product whose copy would take an expensive operand of its own size
// along (SiLU, x * sigmoid(x), read by a squeeze-and-excitation's mean and
// scale) is stored once, with the sigmoid fused into it, rather than copied
// into both readers with the sigmoid stored for them.
// CHECK-LABEL: func.func @store_product_of_expensive
// CHECK: %[[Y:.*]] = kiln.fusion loop(%{{.*}}) : (tensor<2x64xf32>) -> tensor<2x64xf32>
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.sigmoid
// CHECK-NEXT: kiln.mul
// CHECK-NEXT: kiln.yield
// CHECK: kiln.fusion input(%[[Y]], %{{.*}}) : (tensor<2x64xf32>, tensor<2x1xf32>) -> (tensor<2x1xf32>, tensor<2x64xf32>)
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.reduce_sum
// CHECK-NEXT: kiln.mul
// CHECK-NEXT: kiln.yield
func.func @store_product_of_expensive(%x: tensor<2x64xf32>, %g: tensor<2x1xf32>) -> (tensor<2x1xf32>, tensor<2x64xf32>) {
  %s = kiln.sigmoid %x : tensor<2x64xf32>
  %y = kiln.mul %x, %s : (tensor<2x64xf32>, tensor<2x64xf32>) -> tensor<2x64xf32>
  %r = kiln.reduce_sum %y {axes = array<i64: 1>} : (tensor<2x64xf32>) -> tensor<2x1xf32>
  %z = kiln.mul %y, %g : (tensor<2x64xf32>, tensor<2x1xf32>) -> tensor<2x64xf32>
  return %r, %z : tensor<2x1xf32>, tensor<2x64xf32>
}

// -----

// A chain of cheap ops that each feed other fusions (a pre-LN transformer's
// residual stream: each sum is normalized, and the next sum adds to it) is
// not recomputed whole in each consumer: a fusion copies in at most two of
// its sums and reads the rest as stored results. s4 = x + a + b + c + d is
// computed from a stored s1, not from x and a again.
// CHECK-LABEL: func.func @residual_chain
// CHECK: %[[S1:.*]] = kiln.fusion loop(%[[X:.*]], %[[A:.*]]) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.add
// CHECK-NEXT: kiln.yield
// CHECK: kiln.fusion input(%[[X]], %[[A]], %[[S1]], %{{.*}}, %{{.*}}, %{{.*}})
// CHECK-NEXT: ^bb0(%[[X1:.*]]: tensor<4x8xf32>, %[[A1:.*]]: tensor<4x8xf32>, %[[S11:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<4x8xf32>, %[[C:.*]]: tensor<4x8xf32>, %[[D:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: %[[R1:.*]] = kiln.add %[[X1]], %[[A1]]
// CHECK-NEXT: %[[T2:.*]] = kiln.add %[[S11]], %[[B]]
// CHECK-NEXT: %[[R2:.*]] = kiln.add %[[R1]], %[[B]]
// CHECK-NEXT: %[[T3:.*]] = kiln.add %[[T2]], %[[C]]
// CHECK-NEXT: %[[R3:.*]] = kiln.add %[[R2]], %[[C]]
// CHECK-NEXT: %[[R4:.*]] = kiln.add %[[T3]], %[[D]]
// CHECK-NEXT: kiln.reduce_sum %[[R1]]
// CHECK-NEXT: kiln.reduce_sum %[[R2]]
// CHECK-NEXT: kiln.reduce_sum %[[R3]]
// CHECK-NEXT: kiln.reduce_sum %[[R4]]
func.func @residual_chain(%x: tensor<4x8xf32>, %a: tensor<4x8xf32>, %b: tensor<4x8xf32>, %c: tensor<4x8xf32>, %d: tensor<4x8xf32>) -> (tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>) {
  %s1 = kiln.add %x, %a : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %s2 = kiln.add %s1, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %s3 = kiln.add %s2, %c : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %s4 = kiln.add %s3, %d : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %r1 = kiln.reduce_sum %s1 {axes = array<i64: 1>} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %r2 = kiln.reduce_sum %s2 {axes = array<i64: 1>} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %r3 = kiln.reduce_sum %s3 {axes = array<i64: 1>} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %r4 = kiln.reduce_sum %s4 {axes = array<i64: 1>} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  return %r1, %r2, %r3, %r4 : tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x1xf32>
}

// -----

// A value compared as floats (a max-pool gradient's argmax) is computed
// once and read by every kernel, never duplicated: a copy in another kernel
// may round differently (an FMA there, two roundings here) and then equal
// no window.
// CHECK-LABEL: func.func @equality_reads_one_copy
// CHECK: %[[Y:.*]] = kiln.fusion loop(%{{.*}}, %{{.*}}) : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.mul
// CHECK-NEXT: kiln.add
// CHECK-NEXT: kiln.yield
// CHECK: kiln.fusion loop(%[[Y]])
// CHECK-NOT: kiln.add
// CHECK: kiln.exp
// CHECK: kiln.fusion loop(%[[Y]], %{{.*}})
// CHECK-NOT: kiln.add
// CHECK: kiln.equal
func.func @equality_reads_one_copy(%x: tensor<16xf32>, %b: tensor<16xf32>, %z: tensor<4x4xf32>) -> (tensor<16xf32>, tensor<4x4xi1>) {
  %t = kiln.mul %x, %x : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  %y = kiln.add %t, %b : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  %r = kiln.exp %y : tensor<16xf32>
  %w = kiln.reshape %y : tensor<16xf32> -> tensor<4x4xf32>
  %e = kiln.equal %w, %z : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xi1>
  return %r, %e : tensor<16xf32>, tensor<4x4xi1>
}

// -----

// Ops the rules do not merge (pooling here) are single fusions; their
// neighbours fuse around them.
// CHECK-LABEL: func.func @single
// CHECK: kiln.fusion loop
// CHECK: kiln.relu
// CHECK: kiln.fusion single
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.max_pool
// CHECK-NEXT: kiln.yield
func.func @single(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  %r = kiln.relu %x : tensor<1x1x4x4xf32>
  %p = kiln.max_pool %r {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32>
  return %p : tensor<1x1x2x2xf32>
}

// -----

// A pool of a blocked image is a call of the runtime, as a blocked
// convolution is: no fusion holds it, and its neighbours fuse around it.
// CHECK-LABEL: func.func @blocked_pool
// CHECK: kiln.fusion loop
// CHECK: kiln.relu
// CHECK: kiln.yield
// CHECK-NEXT: }
// CHECK-NEXT: %[[P:.+]] = kiln.average_pool
// CHECK-NEXT: kiln.fusion loop(%[[P]])
func.func @blocked_pool(%x: tensor<1x2x4x4x16xf32>) -> tensor<1x2x2x2x16xf32> {
  %r = kiln.relu %x : tensor<1x2x4x4x16xf32>
  %p = kiln.average_pool %r {dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<1x2x4x4x16xf32>) -> tensor<1x2x2x2x16xf32>
  %s = kiln.sigmoid %p : tensor<1x2x2x2x16xf32>
  return %s : tensor<1x2x2x2x16xf32>
}

// -----

// A residual sum that a blocked convolution reads is stored for it; the next
// residual sum, which reads that convolution's result, reads the stored sum
// rather than copying it in and reading x and y again (ConvNeXt's stream).
// CHECK-LABEL: func.func @stored_for_a_call
// CHECK-SAME: (%[[X:.*]]: tensor<1x1x4x4x16xf32>, %[[Y:.*]]: tensor<1x1x4x4x16xf32>,
// CHECK: %[[S:.*]] = kiln.fusion loop(%[[X]], %[[Y]])
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.add
// CHECK-NEXT: kiln.yield
// CHECK: %[[C:.*]] = kiln.blocked_conv %[[S]]
// CHECK: kiln.fusion loop(%[[C]], %[[S]])
// CHECK-NOT: kiln.add
// CHECK: kiln.mul
// CHECK-NEXT: kiln.add
// CHECK-NEXT: kiln.yield
func.func @stored_for_a_call(%x: tensor<1x1x4x4x16xf32>, %y: tensor<1x1x4x4x16xf32>, %w: tensor<16x1x3x3xf32>, %b: tensor<16xf32>) -> tensor<1x1x4x4x16xf32> {
  %two = kiln.constant dense<2.0> : tensor<f32>
  %s = kiln.add %x, %y : (tensor<1x1x4x4x16xf32>, tensor<1x1x4x4x16xf32>) -> tensor<1x1x4x4x16xf32>
  %c = kiln.blocked_conv %s, %w, %b {dilations = array<i64: 1, 1>, group = 16 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x1x4x4x16xf32>, tensor<16x1x3x3xf32>, tensor<16xf32>) -> tensor<1x1x4x4x16xf32>
  %m = kiln.mul %c, %two : (tensor<1x1x4x4x16xf32>, tensor<f32>) -> tensor<1x1x4x4x16xf32>
  %t = kiln.add %m, %s : (tensor<1x1x4x4x16xf32>, tensor<1x1x4x4x16xf32>) -> tensor<1x1x4x4x16xf32>
  return %t : tensor<1x1x4x4x16xf32>
}

// -----

// A sum stored for a blocked convolution whose result the consumer does not
// read is still copied into the consumer, as any cheap producer with users
// elsewhere is: the rule above is for consumers that run after the call.
// CHECK-LABEL: func.func @stored_for_an_independent_call
// CHECK-SAME: (%[[X:.*]]: tensor<1x1x4x4x16xf32>, %[[Y:.*]]: tensor<1x1x4x4x16xf32>,
// CHECK: %[[S:.*]] = kiln.fusion loop(%[[X]], %[[Y]])
// CHECK: kiln.blocked_conv %[[S]]
// CHECK: kiln.fusion loop(%[[X]], %[[Y]])
// CHECK: kiln.add
// CHECK-NEXT: kiln.relu
func.func @stored_for_an_independent_call(%x: tensor<1x1x4x4x16xf32>, %y: tensor<1x1x4x4x16xf32>, %w: tensor<16x1x3x3xf32>, %b: tensor<16xf32>) -> (tensor<1x1x4x4x16xf32>, tensor<1x1x4x4x16xf32>) {
  %s = kiln.add %x, %y : (tensor<1x1x4x4x16xf32>, tensor<1x1x4x4x16xf32>) -> tensor<1x1x4x4x16xf32>
  %c = kiln.blocked_conv %s, %w, %b {dilations = array<i64: 1, 1>, group = 16 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 1, 1>} : (tensor<1x1x4x4x16xf32>, tensor<16x1x3x3xf32>, tensor<16xf32>) -> tensor<1x1x4x4x16xf32>
  %t = kiln.relu %s : tensor<1x1x4x4x16xf32>
  return %c, %t : tensor<1x1x4x4x16xf32>, tensor<1x1x4x4x16xf32>
}

// -----

// A transpose of a matrix product's operand joins its output fusion (the
// back ends read it in place); with another user it is copied in, and the
// original stays for that user.
// CHECK-LABEL: func.func @transposed_operands
// CHECK-SAME: (%[[X:.*]]: tensor<8x4xf32>, %[[G:.*]]: tensor<8x3xf32>, %[[W:.*]]: tensor<4x3xf32>)
// CHECK: kiln.fusion output(%[[X]], %[[G]])
// CHECK: kiln.transpose
// CHECK: kiln.matmul
// CHECK: kiln.fusion output(%[[W]], %[[G]])
// CHECK: kiln.transpose
// CHECK: kiln.matmul
// CHECK: kiln.fusion loop(%[[W]])
// CHECK: kiln.transpose
// CHECK: kiln.exp
func.func @transposed_operands(%x: tensor<8x4xf32>, %g: tensor<8x3xf32>, %w: tensor<4x3xf32>)
    -> (tensor<4x3xf32>, tensor<8x4xf32>, tensor<3x4xf32>) {
  %xt = kiln.transpose %x {perm = array<i64: 1, 0>} : (tensor<8x4xf32>) -> tensor<4x8xf32>
  %dw = kiln.matmul %xt, %g : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %wt = kiln.transpose %w {perm = array<i64: 1, 0>} : (tensor<4x3xf32>) -> tensor<3x4xf32>
  %dx = kiln.matmul %g, %wt : (tensor<8x3xf32>, tensor<3x4xf32>) -> tensor<8x4xf32>
  %e = kiln.exp %wt : tensor<3x4xf32>
  return %dw, %dx, %e : tensor<4x3xf32>, tensor<8x4xf32>, tensor<3x4xf32>
}

// -----

// A weight gradient: the convolution of the input's channels (batch) by the
// cotangent's, transposed back to the filter's layout, then SGD. With
// channel-first-convolutions (the CPU pipeline) the transpose and the update
// join the convolution's output fusion; without it the transpose is a
// loop fusion's with the update.
// CHECK-LABEL: func.func @weight_gradient_update
// CHECK: kiln.fusion output
// CHECK-NEXT: ^bb0
// CHECK-NEXT: kiln.conv
// CHECK-NEXT: kiln.yield
// CHECK: kiln.fusion loop
// CHECK: kiln.transpose
// CHECK-NEXT: kiln.mul
// CHECK-NEXT: kiln.sub
// CHANNELS-LABEL: func.func @weight_gradient_update
// CHANNELS: kiln.fusion output
// CHANNELS: kiln.conv
// CHANNELS-NEXT: kiln.transpose
// CHANNELS-NEXT: kiln.mul
// CHANNELS-NEXT: kiln.sub
// CHANNELS-NEXT: kiln.yield
// CHANNELS-NOT: kiln.fusion
func.func @weight_gradient_update(%xt: tensor<4x8x6x6xf32>, %gt: tensor<16x8x4x4xf32>, %w: tensor<16x4x3x3xf32>) -> tensor<16x4x3x3xf32> {
  %lr = kiln.constant dense<0.01> : tensor<f32>
  %g = kiln.conv %xt, %gt {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<4x8x6x6xf32>, tensor<16x8x4x4xf32>) -> tensor<4x16x3x3xf32>
  %dw = kiln.transpose %g {perm = array<i64: 1, 0, 2, 3>} : (tensor<4x16x3x3xf32>) -> tensor<16x4x3x3xf32>
  %step = kiln.mul %dw, %lr : (tensor<16x4x3x3xf32>, tensor<f32>) -> tensor<16x4x3x3xf32>
  %new = kiln.sub %w, %step : (tensor<16x4x3x3xf32>, tensor<16x4x3x3xf32>) -> tensor<16x4x3x3xf32>
  return %new : tensor<16x4x3x3xf32>
}

// -----

// A convolution with a bias cannot write channel-first: the transpose stays
// out of its fusion.
// CHANNELS-LABEL: func.func @biased_not_channel_first
// CHANNELS: kiln.fusion output
// CHANNELS-NEXT: ^bb0
// CHANNELS-NEXT: kiln.conv
// CHANNELS-NEXT: kiln.yield
// CHANNELS: kiln.fusion loop
// CHANNELS-NEXT: ^bb0
// CHANNELS-NEXT: kiln.transpose
func.func @biased_not_channel_first(%x: tensor<4x8x6x6xf32>, %f: tensor<16x8x4x4xf32>, %b: tensor<16xf32>) -> tensor<16x4x3x3xf32> {
  %y = kiln.conv %x, %f, %b {dilations = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<4x8x6x6xf32>, tensor<16x8x4x4xf32>, tensor<16xf32>) -> tensor<4x16x3x3xf32>
  %t = kiln.transpose %y {perm = array<i64: 1, 0, 2, 3>} : (tensor<4x16x3x3xf32>) -> tensor<16x4x3x3xf32>
  %e = kiln.exp %t : tensor<16x4x3x3xf32>
  return %e : tensor<16x4x3x3xf32>
}
