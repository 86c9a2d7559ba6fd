// RUN: kiln-opt %s -split-input-file -kiln-concat-in-place | FileCheck %s

// A dense block: each concatenation starts with all of the one before it.
// The chain is built in one tensor of the last one's type; each inserts only
// its new part, and the shorter ones are views of the leading channels.
// CHECK-LABEL: func.func @dense_block
// CHECK-SAME: (%[[X:.+]]: tensor<1x16x4x4xf32>)
// CHECK: %[[F:.+]] = call @layer(%[[X]])
// CHECK: %[[E:.+]] = tensor.empty() : tensor<1x64x4x4xf32>
// CHECK-NOT: tensor.empty
// CHECK: %[[A:.+]] = tensor.insert_slice %[[X]] into %[[E]][0, 0, 0, 0] [1, 16, 4, 4]
// CHECK: %[[B:.+]] = tensor.insert_slice %[[F]] into %[[A]][0, 16, 0, 0] [1, 16, 4, 4]
// CHECK: %[[C1:.+]] = tensor.extract_slice %[[B]][0, 0, 0, 0] [1, 32, 4, 4] [1, 1, 1, 1] : tensor<1x64x4x4xf32> to tensor<1x32x4x4xf32>
// CHECK: %[[G:.+]] = call @wide(%[[C1]])
// CHECK: %[[C:.+]] = tensor.insert_slice %[[G]] into %[[B]][0, 32, 0, 0] [1, 16, 4, 4]
// CHECK: %[[C2:.+]] = tensor.extract_slice %[[C]][0, 0, 0, 0] [1, 48, 4, 4] [1, 1, 1, 1] : tensor<1x64x4x4xf32> to tensor<1x48x4x4xf32>
// CHECK: %[[H:.+]] = call @wider(%[[C2]])
// CHECK: %[[D:.+]] = tensor.insert_slice %[[H]] into %[[C]][0, 48, 0, 0] [1, 16, 4, 4]
// CHECK-NOT: tensor.insert_slice
// CHECK: return %[[D]]
func.func private @layer(tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
func.func private @wide(tensor<1x32x4x4xf32>) -> tensor<1x16x4x4xf32>
func.func private @wider(tensor<1x48x4x4xf32>) -> tensor<1x16x4x4xf32>
func.func @dense_block(%x: tensor<1x16x4x4xf32>) -> tensor<1x64x4x4xf32> {
  %f = call @layer(%x) : (tensor<1x16x4x4xf32>) -> tensor<1x16x4x4xf32>
  %e1 = tensor.empty() : tensor<1x32x4x4xf32>
  %a1 = tensor.insert_slice %x into %e1[0, 0, 0, 0] [1, 16, 4, 4] [1, 1, 1, 1] : tensor<1x16x4x4xf32> into tensor<1x32x4x4xf32>
  %c1 = tensor.insert_slice %f into %a1[0, 16, 0, 0] [1, 16, 4, 4] [1, 1, 1, 1] : tensor<1x16x4x4xf32> into tensor<1x32x4x4xf32>
  %g = call @wide(%c1) : (tensor<1x32x4x4xf32>) -> tensor<1x16x4x4xf32>
  %e2 = tensor.empty() : tensor<1x48x4x4xf32>
  %a2 = tensor.insert_slice %x into %e2[0, 0, 0, 0] [1, 16, 4, 4] [1, 1, 1, 1] : tensor<1x16x4x4xf32> into tensor<1x48x4x4xf32>
  %b2 = tensor.insert_slice %f into %a2[0, 16, 0, 0] [1, 16, 4, 4] [1, 1, 1, 1] : tensor<1x16x4x4xf32> into tensor<1x48x4x4xf32>
  %c2 = tensor.insert_slice %g into %b2[0, 32, 0, 0] [1, 16, 4, 4] [1, 1, 1, 1] : tensor<1x16x4x4xf32> into tensor<1x48x4x4xf32>
  %h = call @wider(%c2) : (tensor<1x48x4x4xf32>) -> tensor<1x16x4x4xf32>
  %e3 = tensor.empty() : tensor<1x64x4x4xf32>
  %a3 = tensor.insert_slice %x into %e3[0, 0, 0, 0] [1, 16, 4, 4] [1, 1, 1, 1] : tensor<1x16x4x4xf32> into tensor<1x64x4x4xf32>
  %b3 = tensor.insert_slice %f into %a3[0, 16, 0, 0] [1, 16, 4, 4] [1, 1, 1, 1] : tensor<1x16x4x4xf32> into tensor<1x64x4x4xf32>
  %c3 = tensor.insert_slice %g into %b3[0, 32, 0, 0] [1, 16, 4, 4] [1, 1, 1, 1] : tensor<1x16x4x4xf32> into tensor<1x64x4x4xf32>
  %d3 = tensor.insert_slice %h into %c3[0, 48, 0, 0] [1, 16, 4, 4] [1, 1, 1, 1] : tensor<1x16x4x4xf32> into tensor<1x64x4x4xf32>
  return %d3 : tensor<1x64x4x4xf32>
}

// -----

// Rank-reduced parts (a batch-1 image without its batch dimension) along the
// blocks of a blocked image, read through a reshape.
// CHECK-LABEL: func.func @rank_reduced
// CHECK: tensor.empty() : tensor<1x3x2x2x16xf32>
// CHECK-NOT: tensor.empty
// CHECK: tensor.extract_slice %{{.+}}[0, 0, 0, 0, 0] [1, 2, 2, 2, 16] [1, 1, 1, 1, 1] : tensor<1x3x2x2x16xf32> to tensor<1x2x2x2x16xf32>
// CHECK: tensor.collapse_shape
func.func private @reduce(tensor<2x2x2x16xf32>) -> tensor<1x2x2x16xf32>
func.func @rank_reduced(%x: tensor<1x2x2x16xf32>, %y: tensor<1x2x2x16xf32>) -> tensor<1x3x2x2x16xf32> {
  %e1 = tensor.empty() : tensor<1x2x2x2x16xf32>
  %a1 = tensor.insert_slice %x into %e1[0, 0, 0, 0, 0] [1, 1, 2, 2, 16] [1, 1, 1, 1, 1] : tensor<1x2x2x16xf32> into tensor<1x2x2x2x16xf32>
  %c1 = tensor.insert_slice %y into %a1[0, 1, 0, 0, 0] [1, 1, 2, 2, 16] [1, 1, 1, 1, 1] : tensor<1x2x2x16xf32> into tensor<1x2x2x2x16xf32>
  %v = tensor.collapse_shape %c1 [[0, 1], [2], [3], [4]] : tensor<1x2x2x2x16xf32> into tensor<2x2x2x16xf32>
  %g = call @reduce(%v) : (tensor<2x2x2x16xf32>) -> tensor<1x2x2x16xf32>
  %e2 = tensor.empty() : tensor<1x3x2x2x16xf32>
  %a2 = tensor.insert_slice %x into %e2[0, 0, 0, 0, 0] [1, 1, 2, 2, 16] [1, 1, 1, 1, 1] : tensor<1x2x2x16xf32> into tensor<1x3x2x2x16xf32>
  %b2 = tensor.insert_slice %y into %a2[0, 1, 0, 0, 0] [1, 1, 2, 2, 16] [1, 1, 1, 1, 1] : tensor<1x2x2x16xf32> into tensor<1x3x2x2x16xf32>
  %c2 = tensor.insert_slice %g into %b2[0, 2, 0, 0, 0] [1, 1, 2, 2, 16] [1, 1, 1, 1, 1] : tensor<1x2x2x16xf32> into tensor<1x3x2x2x16xf32>
  return %c2 : tensor<1x3x2x2x16xf32>
}

// -----

// The shorter concatenation is read after the longer one starts inserting
// its own part (here: returned), so sharing its tensor would cost a copy of
// it: both stay as they are.
// CHECK-LABEL: func.func @read_later
// CHECK: tensor.empty() : tensor<1x32x4x4xf32>
// CHECK: tensor.empty() : tensor<1x48x4x4xf32>
// CHECK-NOT: tensor.extract_slice
func.func private @wide(tensor<1x32x4x4xf32>) -> tensor<1x16x4x4xf32>
func.func @read_later(%x: tensor<1x16x4x4xf32>, %f: tensor<1x16x4x4xf32>) -> (tensor<1x32x4x4xf32>, tensor<1x48x4x4xf32>) {
  %e1 = tensor.empty() : tensor<1x32x4x4xf32>
  %a1 = tensor.insert_slice %x into %e1[0, 0, 0, 0] [1, 16, 4, 4] [1, 1, 1, 1] : tensor<1x16x4x4xf32> into tensor<1x32x4x4xf32>
  %c1 = tensor.insert_slice %f into %a1[0, 16, 0, 0] [1, 16, 4, 4] [1, 1, 1, 1] : tensor<1x16x4x4xf32> into tensor<1x32x4x4xf32>
  %g = call @wide(%c1) : (tensor<1x32x4x4xf32>) -> tensor<1x16x4x4xf32>
  %e2 = tensor.empty() : tensor<1x48x4x4xf32>
  %a2 = tensor.insert_slice %x into %e2[0, 0, 0, 0] [1, 16, 4, 4] [1, 1, 1, 1] : tensor<1x16x4x4xf32> into tensor<1x48x4x4xf32>
  %b2 = tensor.insert_slice %f into %a2[0, 16, 0, 0] [1, 16, 4, 4] [1, 1, 1, 1] : tensor<1x16x4x4xf32> into tensor<1x48x4x4xf32>
  %c2 = tensor.insert_slice %g into %b2[0, 32, 0, 0] [1, 16, 4, 4] [1, 1, 1, 1] : tensor<1x16x4x4xf32> into tensor<1x48x4x4xf32>
  return %c1, %c2 : tensor<1x32x4x4xf32>, tensor<1x48x4x4xf32>
}

// -----

// Two concatenations start with the same one: only the first extends it
// (the second would overwrite the first's new part); the second keeps its
// own tensor.
// CHECK-LABEL: func.func @two_extensions
// CHECK: %[[E:.+]] = tensor.empty() : tensor<1x48x4x4xf32>
// CHECK: %[[C1:.+]] = tensor.extract_slice %[[B:.+]][0, 0, 0, 0] [1, 32, 4, 4]
// CHECK: %[[G:.+]] = call @wide(%[[C1]])
// CHECK: tensor.empty() : tensor<1x48x4x4xf32>
// CHECK: tensor.insert_slice %[[G]] into %[[B]][0, 32, 0, 0] [1, 16, 4, 4] [1, 1, 1, 1] : tensor<1x16x4x4xf32> into tensor<1x48x4x4xf32>
// CHECK-COUNT-3: tensor.insert_slice
// CHECK-NOT: tensor.insert_slice
func.func private @wide(tensor<1x32x4x4xf32>) -> tensor<1x16x4x4xf32>
func.func @two_extensions(%x: tensor<1x16x4x4xf32>, %f: tensor<1x16x4x4xf32>) -> (tensor<1x48x4x4xf32>, tensor<1x48x4x4xf32>) {
  %e1 = tensor.empty() : tensor<1x32x4x4xf32>
  %a1 = tensor.insert_slice %x into %e1[0, 0, 0, 0] [1, 16, 4, 4] [1, 1, 1, 1] : tensor<1x16x4x4xf32> into tensor<1x32x4x4xf32>
  %c1 = tensor.insert_slice %f into %a1[0, 16, 0, 0] [1, 16, 4, 4] [1, 1, 1, 1] : tensor<1x16x4x4xf32> into tensor<1x32x4x4xf32>
  %g = call @wide(%c1) : (tensor<1x32x4x4xf32>) -> tensor<1x16x4x4xf32>
  %e2 = tensor.empty() : tensor<1x48x4x4xf32>
  %a2 = tensor.insert_slice %x into %e2[0, 0, 0, 0] [1, 16, 4, 4] [1, 1, 1, 1] : tensor<1x16x4x4xf32> into tensor<1x48x4x4xf32>
  %b2 = tensor.insert_slice %f into %a2[0, 16, 0, 0] [1, 16, 4, 4] [1, 1, 1, 1] : tensor<1x16x4x4xf32> into tensor<1x48x4x4xf32>
  %c2 = tensor.insert_slice %g into %b2[0, 32, 0, 0] [1, 16, 4, 4] [1, 1, 1, 1] : tensor<1x16x4x4xf32> into tensor<1x48x4x4xf32>
  %a3 = tensor.insert_slice %x into %e2[0, 0, 0, 0] [1, 16, 4, 4] [1, 1, 1, 1] : tensor<1x16x4x4xf32> into tensor<1x48x4x4xf32>
  %b3 = tensor.insert_slice %f into %a3[0, 16, 0, 0] [1, 16, 4, 4] [1, 1, 1, 1] : tensor<1x16x4x4xf32> into tensor<1x48x4x4xf32>
  %c3 = tensor.insert_slice %x into %b3[0, 32, 0, 0] [1, 16, 4, 4] [1, 1, 1, 1] : tensor<1x16x4x4xf32> into tensor<1x48x4x4xf32>
  return %c2, %c3 : tensor<1x48x4x4xf32>, tensor<1x48x4x4xf32>
}

// -----

// Not concatenations in the sense of the pass: parts along different axes,
// and parts that leave the tensor partly unwritten.
// CHECK-LABEL: func.func @not_chains
// CHECK-COUNT-3: tensor.empty
// CHECK-NOT: tensor.extract_slice
func.func @not_chains(%x: tensor<1x16x4x4xf32>, %f: tensor<1x16x4x4xf32>) -> (tensor<1x48x4x4xf32>, tensor<1x32x8x4xf32>) {
  %e1 = tensor.empty() : tensor<1x32x4x4xf32>
  %a1 = tensor.insert_slice %x into %e1[0, 0, 0, 0] [1, 16, 4, 4] [1, 1, 1, 1] : tensor<1x16x4x4xf32> into tensor<1x32x4x4xf32>
  %c1 = tensor.insert_slice %f into %a1[0, 16, 0, 0] [1, 16, 4, 4] [1, 1, 1, 1] : tensor<1x16x4x4xf32> into tensor<1x32x4x4xf32>
  %e2 = tensor.empty() : tensor<1x48x4x4xf32>
  %a2 = tensor.insert_slice %x into %e2[0, 0, 0, 0] [1, 16, 4, 4] [1, 1, 1, 1] : tensor<1x16x4x4xf32> into tensor<1x48x4x4xf32>
  %b2 = tensor.insert_slice %f into %a2[0, 16, 0, 0] [1, 16, 4, 4] [1, 1, 1, 1] : tensor<1x16x4x4xf32> into tensor<1x48x4x4xf32>
  %e3 = tensor.empty() : tensor<1x32x8x4xf32>
  %a3 = tensor.insert_slice %c1 into %e3[0, 0, 0, 0] [1, 32, 4, 4] [1, 1, 1, 1] : tensor<1x32x4x4xf32> into tensor<1x32x8x4xf32>
  %b3 = tensor.insert_slice %c1 into %a3[0, 0, 4, 0] [1, 32, 4, 4] [1, 1, 1, 1] : tensor<1x32x4x4xf32> into tensor<1x32x8x4xf32>
  return %b2, %b3 : tensor<1x48x4x4xf32>, tensor<1x32x8x4xf32>
}
