//===- Pipeline.cpp - linalg on tensors to the LLVM dialect for CPUs ------===//
//
// The pipeline is written as one textual pipeline so that
// `kiln-opt --kiln-cpu-lowering` and kilnc run exactly the same passes.
//
//===----------------------------------------------------------------------===//
#include "codegen/Passes.h"

#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

namespace kiln {

// Up to the matrix products.
static constexpr const char *kBeforeContractions =
    // Concatenations that extend one another share one tensor; each kernel
    // writes into a destination of its own (CSE merged them).
    // A product with an epilogue writes its tile where the epilogue's
    // result goes, and the epilogue updates it there.
    "func.func(kiln-epilogue-in-place,kiln-concat-in-place,kiln-clone-destinations,"
    // ... and a blocked convolution writes its part of a concatenation
    // straight into it.
    "kiln-blocked-conv-in-place),"
    // Tensors to buffers. Function results become out-parameters and static
    // result allocations are the caller's buffers, so outputs are written in
    // place.
    "one-shot-bufferize{bufferize-function-boundaries=1 "
    "function-boundary-type-conversion=identity-layout-map},"
    // ... whose constants' globals come in an order that varies between
    // runs: fixed, for reproducible artifacts.
    "kiln-order-constants,"
    // A part that a kernel wrote in place into its concatenation is then
    // copied over itself: one view after CSE, and a copy that folds away.
    "cse,"
    "canonicalize,"
    // Reshaped results too (a batch-1 image's output is its kernel's buffer
    // with a leading 1).
    "func.func(kiln-results-in-place),"
    "buffer-results-to-out-params{hoist-static-allocs=1 modify-public-functions=1},"
    // Intermediates share one arena, placed by liveness.
    "func.func(kiln-plan-buffers),"
    // ... which is static: mapped once, not faulted in again on every run.
    "kiln-static-arena,"
    // What is left is per-tile scratch inside parallel loops (a row's max
    // or sum, a matmul tile before its epilogue); small ones go on the
    // stack, released per iteration by the OpenMP lowering's alloca scope.
    "func.func(promote-buffers-to-stack{max-alloc-size-in-bytes=16384}),"
    "buffer-deallocation-pipeline,"
    // Train-step state that may be updated in its own buffer, while each
    // update is still one elementwise op.
    "kiln-state-in-place,";

// Loops: each kernel's scf.forall over tiles becomes an OpenMP parallel loop;
// linalg ops inside become plain loops for LLVM to vectorize.
static constexpr const char *kLoops = "func.func(scf-forall-to-parallel),";

// After them.
static constexpr const char *kAfterContractions =
    // Transposes of two dimensions by the runtime's 8x8 register blocks.
    "kiln-transposes-to-calls,"
    "func.func(kiln-empty-buffers,kiln-expand-strided-copies,"
    // Loops over contiguous dimensions as one: a long innermost loop for
    // LLVM to vectorize, never a short one unrolled under a strided one.
    "kiln-collapse-contiguous-loops,"
    // Per-row values read once, not in every iteration: LLVM cannot tell
    // the arena's buffers apart, and would leave such loops scalar.
    "convert-linalg-to-loops,kiln-hoist-invariant-loads,"
    "kiln-vectorizable-math{ldexp=%LDEXP%},"
    // Row tiles are often single pages, where hardware prefetching stops.
    "kiln-prefetch-next-tile),"
    "convert-scf-to-openmp,"
    "func.func(kiln-inline-alloca-scopes),"
    // Reshaped views become strided casts before loads fold through the
    // views left, so an index into a collapsed buffer stays one linear
    // offset: folded through the collapse itself it would be split by
    // division (j / 64, j % 64 for a [4, 64] pair), and a column sum over a
    // transposed gradient would not vectorize. Delinearizations over unit
    // dimensions fold away.
    "expand-strided-metadata,fold-memref-alias-ops,canonicalize,"
    "lower-affine,"
    // Lowering a loop to branches splits its block: one block per loop
    // nest first, so no split moves the rest of the model function.
    "func.func(kiln-block-per-loop),"
    "convert-scf-to-cf,"
    "expand-strided-metadata,"
    "lower-affine,"
    // Scalars without native support: bf16 conversions as integer ops, the
    // transcendental functions LLVM has no intrinsic for as libm calls.
    "arith-expand{include-bf16=1},"
    "convert-math-to-llvm,"
    "convert-math-to-libm,"
    // Everything to LLVM; memrefs are passed as bare pointers, since every
    // shape is static and recorded in the artifact's manifest.
    "finalize-memref-to-llvm,"
    "convert-arith-to-llvm,"
    "convert-index-to-llvm,"
    "convert-cf-to-llvm,"
    "convert-func-to-llvm{use-bare-ptr-memref-call-conv=1},"
    "convert-openmp-to-llvm,"
    "reconcile-unrealized-casts,"
    "canonicalize";

void buildCPULoweringPipeline(OpPassManager &pm, const CPUPipelineOptions &options) {
  std::string after = kAfterContractions;
  after.replace(after.find("%LDEXP%"), 7, options.vectorLdexp ? "1" : "0");
  std::string pipeline = std::string(kBeforeContractions) +
                         // Kernels are still the functions' top-level ops.
                         (options.profile ? "kiln-profile-kernels," : "") + kLoops +
                         "kiln-contractions-to-blas{library=" + options.gemmLibrary +
                         " constant-b=" + (options.constantB ? "1" : "0") +
                         " direct-convolutions=" + (options.directConvolutions ? "1" : "0") +
                         "}," + after;
  if (failed(parsePassPipeline(pipeline, pm, llvm::errs())))
    llvm::report_fatal_error("kiln: the built-in CPU pipeline does not parse");
}

void registerCodegenPipelines() {
  PassPipelineRegistration<>(
      "kiln-cpu-lowering",
      "Lowers linalg on tensors to the LLVM dialect for CPUs (what kilnc runs "
      "after kiln-lower-to-linalg)",
      [](OpPassManager &pm) { buildCPULoweringPipeline(pm); });
}

} // namespace kiln
