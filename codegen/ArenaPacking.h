//===- ArenaPacking.h - Offsets for buffers with known live ranges -*- C++ -*-===//
//
// Both buffer plans (the CPU's kiln-plan-buffers and the GPU host program)
// know, for every intermediate buffer, its size and the first and last step
// of the program that uses it. Packing those live ranges into one arena is
// the same problem for both, solved here once.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_ARENAPACKING_H
#define KILN_CODEGEN_ARENAPACKING_H

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>

namespace kiln {

/// A buffer live from step `begin` to step `end`, both included.
struct LiveRange {
  int64_t bytes = 0;
  unsigned begin = 0;
  unsigned end = 0;
  /// Set by packLiveRanges.
  int64_t offset = 0;
};

/// Places every range at an `alignment`-aligned offset so that ranges live
/// at the same time never overlap, and returns the arena size. Greedy by
/// size: the largest range first (ties in order of `begin`, so the plan is
/// deterministic), each at the lowest offset free for its whole life.
int64_t packLiveRanges(llvm::MutableArrayRef<LiveRange> ranges, int64_t alignment);

} // namespace kiln

#endif // KILN_CODEGEN_ARENAPACKING_H
