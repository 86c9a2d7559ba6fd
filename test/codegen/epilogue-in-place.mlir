// RUN: kiln-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(kiln-epilogue-in-place))' | FileCheck %s

#mm_a = affine_map<(d0, d1, d2) -> (d0, d2)>
#mm_b = affine_map<(d0, d1, d2) -> (d2, d1)>
#mm_c = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// A tile of a product with a bias: the product is zeroed and computed in the
// slice of the loop's result that the epilogue wrote, and the epilogue adds
// the bias to it there. The product's own destination is gone.
// CHECK-LABEL: func.func @bias_tile
// CHECK: %[[E:.+]] = tensor.empty() : tensor<8x64xf32>
// CHECK: scf.forall (%[[J:.+]]) = (0) to (64) step (32) shared_outs(%[[OUT:.+]] = %[[E]])
// CHECK-NOT: tensor.extract_slice %[[E]]
// CHECK: %[[TILE:.+]] = tensor.extract_slice %[[OUT]][0, %[[J]]] [8, 32] [1, 1]
// CHECK-NEXT: %[[ZERO:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[TILE]] : tensor<8x32xf32>)
// CHECK-NEXT: %[[P:.+]] = linalg.generic {{.+}} outs(%[[ZERO]] : tensor<8x32xf32>)
// CHECK: %[[B:.+]] = tensor.extract_slice %{{.+}}[%[[J]]] [32] [1]
// CHECK-NEXT: %[[R:.+]] = linalg.generic {{.+}} ins(%[[B]] : tensor<32xf32>) outs(%[[P]] : tensor<8x32xf32>)
// CHECK-NEXT: ^bb0(%[[BIAS:.+]]: f32, %[[X:.+]]: f32):
// CHECK-NEXT: %[[S:.+]] = arith.addf %[[X]], %[[BIAS]]
// CHECK-NEXT: linalg.yield %[[S]]
// CHECK: tensor.parallel_insert_slice %[[R]] into %[[OUT]][0, %[[J]]]
func.func @bias_tile(%a: tensor<8x16xf32>, %w: tensor<16x64xf32>, %bias: tensor<64xf32>) -> tensor<8x64xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<8x64xf32>
  %r = scf.forall (%j) = (0) to (64) step (32) shared_outs(%out = %empty) -> (tensor<8x64xf32>) {
    %wj = tensor.extract_slice %w[0, %j] [16, 32] [1, 1] : tensor<16x64xf32> to tensor<16x32xf32>
    %own = tensor.extract_slice %empty[0, %j] [8, 32] [1, 1] : tensor<8x64xf32> to tensor<8x32xf32>
    %z = linalg.fill ins(%zero : f32) outs(%own : tensor<8x32xf32>) -> tensor<8x32xf32>
    %p = linalg.generic {indexing_maps = [#mm_a, #mm_b, #mm_c], iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %wj : tensor<8x16xf32>, tensor<16x32xf32>) outs(%z : tensor<8x32xf32>) {
    ^bb0(%x: f32, %y: f32, %acc: f32):
      %m = arith.mulf %x, %y : f32
      %s = arith.addf %acc, %m : f32
      linalg.yield %s : f32
    } -> tensor<8x32xf32>
    %bj = tensor.extract_slice %bias[%j] [32] [1] : tensor<64xf32> to tensor<32xf32>
    %tile = tensor.extract_slice %out[0, %j] [8, 32] [1, 1] : tensor<8x64xf32> to tensor<8x32xf32>
    %e = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
        ins(%p, %bj : tensor<8x32xf32>, tensor<32xf32>) outs(%tile : tensor<8x32xf32>) {
    ^bb0(%x: f32, %b: f32, %o: f32):
      %s = arith.addf %x, %b : f32
      linalg.yield %s : f32
    } -> tensor<8x32xf32>
    scf.forall.in_parallel {
      tensor.parallel_insert_slice %e into %out[0, %j] [8, 32] [1, 1] : tensor<8x32xf32> into tensor<8x64xf32>
    }
  }
  return %r : tensor<8x64xf32>
}

// -----

#mm_a = affine_map<(d0, d1, d2) -> (d0, d2)>
#mm_b = affine_map<(d0, d1, d2) -> (d2, d1)>
#mm_c = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>

// Two products share one zero fill (CSE merged them): each gets a fill of
// the epilogue's destination of its own, and the shared one goes.
// CHECK-LABEL: func.func @shared_fill
// CHECK-SAME: (%[[A:.+]]: tensor<4x4xf32>, %[[W:.+]]: tensor<4x4xf32>, %[[B:.+]]: tensor<4xf32>)
// CHECK: %[[E1:.+]] = tensor.empty() : tensor<4x4xf32>
// CHECK-NEXT: %[[F1:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[E1]] : tensor<4x4xf32>)
// CHECK-NEXT: %[[P1:.+]] = linalg.generic {{.+}} ins(%[[A]], %[[W]] : {{.+}}) outs(%[[F1]] : tensor<4x4xf32>)
// CHECK: %[[R1:.+]] = linalg.generic {{.+}} ins(%[[B]] : tensor<4xf32>) outs(%[[P1]] : tensor<4x4xf32>)
// CHECK: %[[E2:.+]] = tensor.empty() : tensor<4x4xf32>
// CHECK-NEXT: %[[F2:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%[[E2]] : tensor<4x4xf32>)
// CHECK-NEXT: %[[P2:.+]] = linalg.generic {{.+}} ins(%[[R1]], %[[W]] : {{.+}}) outs(%[[F2]] : tensor<4x4xf32>)
// CHECK: linalg.generic {{.+}} ins(%[[B]] : tensor<4xf32>) outs(%[[P2]] : tensor<4x4xf32>)
func.func @shared_fill(%a: tensor<4x4xf32>, %w: tensor<4x4xf32>, %bias: tensor<4xf32>) -> tensor<4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<4x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%empty : tensor<4x4xf32>) -> tensor<4x4xf32>
  %p1 = linalg.generic {indexing_maps = [#mm_a, #mm_b, #mm_c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %w : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x4xf32>
  %e1 = tensor.empty() : tensor<4x4xf32>
  %r1 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p1, %bias : tensor<4x4xf32>, tensor<4xf32>) outs(%e1 : tensor<4x4xf32>) {
  ^bb0(%x: f32, %b: f32, %o: f32):
    %s = arith.addf %x, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x4xf32>
  %p2 = linalg.generic {indexing_maps = [#mm_a, #mm_b, #mm_c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%r1, %w : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x4xf32>
  %e2 = tensor.empty() : tensor<4x4xf32>
  %r2 = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p2, %bias : tensor<4x4xf32>, tensor<4xf32>) outs(%e2 : tensor<4x4xf32>) {
  ^bb0(%x: f32, %b: f32, %o: f32):
    %s = arith.addf %x, %b : f32
    linalg.yield %s : f32
  } -> tensor<4x4xf32>
  return %r2 : tensor<4x4xf32>
}

// -----

#mm_a = affine_map<(d0, d1, d2) -> (d0, d2)>
#mm_b = affine_map<(d0, d1, d2) -> (d2, d1)>
#mm_c = affine_map<(d0, d1, d2) -> (d0, d1)>
#id = affine_map<(d0, d1) -> (d0, d1)>

// Left alone: an optimizer's step after a weight gradient, which reads the
// weight, a function argument (the BLAS lowering folds SGD's into the
// product's call); a product that another op reads too; an epilogue that
// reads its destination; and a product that starts from a value other than
// a fill or an empty tensor.
// CHECK-LABEL: func.func @left_alone
// CHECK-SAME: (%[[A:.+]]: tensor<4x4xf32>, %[[W:.+]]: tensor<4x4xf32>, %{{.+}}: f32, %[[ACC:.+]]: tensor<4x4xf32>)
// CHECK: %[[G:.+]] = linalg.generic {{.+}} ins(%[[A]], %[[A]] :
// CHECK: linalg.generic {{.+}} ins(%[[G]], %[[W]] : tensor<4x4xf32>, tensor<4x4xf32>) outs(
// CHECK: %[[P:.+]] = linalg.generic {{.+}} ins(%[[A]], %[[W]] :
// CHECK: linalg.generic {{.+}} ins(%[[P]], %[[P]] : tensor<4x4xf32>, tensor<4x4xf32>) outs(
// CHECK: %[[Q:.+]] = linalg.generic {{.+}} ins(%[[W]], %[[W]] :
// CHECK: linalg.generic {{.+}} ins(%[[Q]], %[[W]] : tensor<4x4xf32>, tensor<4x4xf32>) outs(%[[ACC]] :
// CHECK: %[[R:.+]] = linalg.generic {{.+}} ins(%[[W]], %[[A]] : {{.+}}) outs(%[[ACC]] :
// CHECK: linalg.generic {{.+}} ins(%[[R]], %[[W]] : tensor<4x4xf32>, tensor<4x4xf32>) outs(
func.func @left_alone(%a: tensor<4x4xf32>, %w: tensor<4x4xf32>, %lr: f32, %acc0: tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<4x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%empty : tensor<4x4xf32>) -> tensor<4x4xf32>
  %g = linalg.generic {indexing_maps = [#mm_a, #mm_b, #mm_c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %a : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x4xf32>
  %e0 = tensor.empty() : tensor<4x4xf32>
  %step = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g, %w : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e0 : tensor<4x4xf32>) {
  ^bb0(%x: f32, %v: f32, %o: f32):
    %m = arith.mulf %x, %lr : f32
    %s = arith.subf %v, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x4xf32>
  %p = linalg.generic {indexing_maps = [#mm_a, #mm_b, #mm_c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %w : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x4xf32>
  %e1 = tensor.empty() : tensor<4x4xf32>
  %twice = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%p, %p : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e1 : tensor<4x4xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<4x4xf32>
  %q = linalg.generic {indexing_maps = [#mm_a, #mm_b, #mm_c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %w : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x4xf32>
  %accumulated = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%q, %w : tensor<4x4xf32>, tensor<4x4xf32>) outs(%acc0 : tensor<4x4xf32>) {
  ^bb0(%x: f32, %v: f32, %o: f32):
    %s = arith.addf %x, %o : f32
    linalg.yield %s : f32
  } -> tensor<4x4xf32>
  %r = linalg.generic {indexing_maps = [#mm_a, #mm_b, #mm_c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%w, %a : tensor<4x4xf32>, tensor<4x4xf32>) outs(%acc0 : tensor<4x4xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<4x4xf32>
  %e3 = tensor.empty() : tensor<4x4xf32>
  %plus = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%r, %w : tensor<4x4xf32>, tensor<4x4xf32>) outs(%e3 : tensor<4x4xf32>) {
  ^bb0(%x: f32, %v: f32, %o: f32):
    %s = arith.addf %x, %v : f32
    linalg.yield %s : f32
  } -> tensor<4x4xf32>
  return %step, %twice, %accumulated, %plus : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

#conv_in = affine_map<(n, c, h, w, kh, kw) -> (n, c, h + kh, w + kw)>
#conv_w = affine_map<(n, c, h, w, kh, kw) -> (c, kh, kw)>
#conv_out = affine_map<(n, c, h, w, kh, kw) -> (n, c, h, w)>
#id4 = affine_map<(n, c, h, w) -> (n, c, h, w)>
#id = affine_map<(d0, d1) -> (d0, d1)>
#argmax_in = affine_map<(d0, d1) -> (d0, d1)>
#argmax_out = affine_map<(d0, d1) -> (d0)>
#row = affine_map<(d0) -> (d0)>

// Left alone too: a windowed convolution (a depthwise 3x3 here), whose
// lowerings find a clamp after it by its own tile, and a product with two
// results (an arg-max's values and indices).
// CHECK-LABEL: func.func @not_products
// CHECK: %[[C:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]
// CHECK: linalg.generic {{.+}} ins(%[[C]] : tensor<1x4x6x6xf32>) outs(%{{.+}} : tensor<1x4x6x6xf32>)
// CHECK: %[[M:.+]]:2 = linalg.generic
// CHECK: linalg.generic {{.+}} ins(%[[M]]#1 : tensor<4xi64>) outs(%{{.+}} : tensor<4xi64>)
func.func @not_products(%x: tensor<1x4x8x8xf32>, %w: tensor<4x3x3xf32>, %s: tensor<4x5xf32>) -> (tensor<1x4x6x6xf32>, tensor<4xi64>) {
  %zero = arith.constant 0.0 : f32
  %six = arith.constant 6.0 : f32
  %low = arith.constant -3.0e38 : f32
  %none = arith.constant 0 : i64
  %one = arith.constant 1 : i64
  %e = tensor.empty() : tensor<1x4x6x6xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %c = linalg.generic {indexing_maps = [#conv_in, #conv_w, #conv_out], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %w : tensor<1x4x8x8xf32>, tensor<4x3x3xf32>) outs(%z : tensor<1x4x6x6xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %t = arith.addf %acc, %m : f32
    linalg.yield %t : f32
  } -> tensor<1x4x6x6xf32>
  %e1 = tensor.empty() : tensor<1x4x6x6xf32>
  %clamped = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%c : tensor<1x4x6x6xf32>) outs(%e1 : tensor<1x4x6x6xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.minimumf %a, %six : f32
    linalg.yield %m : f32
  } -> tensor<1x4x6x6xf32>
  %ev = tensor.empty() : tensor<4xf32>
  %ei = tensor.empty() : tensor<4xi64>
  %fv = linalg.fill ins(%low : f32) outs(%ev : tensor<4xf32>) -> tensor<4xf32>
  %fi = linalg.fill ins(%none : i64) outs(%ei : tensor<4xi64>) -> tensor<4xi64>
  %max:2 = linalg.generic {indexing_maps = [#argmax_in, #argmax_out, #argmax_out], iterator_types = ["parallel", "reduction"]}
      ins(%s : tensor<4x5xf32>) outs(%fv, %fi : tensor<4xf32>, tensor<4xi64>) {
  ^bb0(%a: f32, %best: f32, %at: i64):
    %j = linalg.index 1 : index
    %ji = arith.index_cast %j : index to i64
    %better = arith.cmpf ogt, %a, %best : f32
    %v = arith.select %better, %a, %best : f32
    %i = arith.select %better, %ji, %at : i64
    linalg.yield %v, %i : f32, i64
  } -> (tensor<4xf32>, tensor<4xi64>)
  %e2 = tensor.empty() : tensor<4xi64>
  %next = linalg.generic {indexing_maps = [#row, #row], iterator_types = ["parallel"]}
      ins(%max#1 : tensor<4xi64>) outs(%e2 : tensor<4xi64>) {
  ^bb0(%a: i64, %o: i64):
    %p = arith.addi %a, %one : i64
    linalg.yield %p : i64
  } -> tensor<4xi64>
  return %clamped, %next : tensor<1x4x6x6xf32>, tensor<4xi64>
}
