//===- ArenaPacking.cpp - Offsets for buffers with known live ranges ------===//
#include "codegen/ArenaPacking.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>

namespace kiln {

int64_t packLiveRanges(llvm::MutableArrayRef<LiveRange> ranges, int64_t alignment) {
  auto indices = llvm::seq<unsigned>(0, ranges.size());
  llvm::SmallVector<unsigned> order(indices.begin(), indices.end());
  llvm::stable_sort(order, [&](unsigned lhs, unsigned rhs) {
    if (ranges[lhs].bytes != ranges[rhs].bytes)
      return ranges[lhs].bytes > ranges[rhs].bytes;
    return ranges[lhs].begin < ranges[rhs].begin;
  });

  int64_t arenaBytes = 0;
  llvm::SmallVector<const LiveRange *> conflicts;
  for (auto [index, current] : llvm::enumerate(order)) {
    LiveRange &range = ranges[current];
    conflicts.clear();
    for (unsigned placed : llvm::ArrayRef(order).take_front(index))
      if (ranges[placed].begin <= range.end && range.begin <= ranges[placed].end)
        conflicts.push_back(&ranges[placed]);
    llvm::sort(conflicts, [](const LiveRange *lhs, const LiveRange *rhs) {
      return lhs->offset < rhs->offset;
    });
    // First fit: the lowest aligned offset below, between or above the
    // ranges live at the same time.
    int64_t offset = 0;
    for (const LiveRange *placed : conflicts) {
      if (offset + range.bytes <= placed->offset)
        break;
      offset = std::max(offset, static_cast<int64_t>(llvm::alignTo(
                                    placed->offset + placed->bytes, alignment)));
    }
    range.offset = offset;
    arenaBytes = std::max(arenaBytes, offset + range.bytes);
  }
  return arenaBytes;
}

} // namespace kiln
