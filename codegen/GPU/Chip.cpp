//===- Chip.cpp - What kernel shapes depend on in an NVIDIA GPU -----------===//
#include "codegen/GPU/Chip.h"

#include "llvm/ADT/ArrayRef.h"

namespace kiln {

static const GpuChip kChips[] = {
    // name, version, multiprocessors, threads per multiprocessor
    {"sm_75", 75, 40, 1024},   // T4
    {"sm_80", 80, 108, 2048},  // A100
    {"sm_86", 86, 84, 1536},   // A40, RTX 3090
    {"sm_87", 87, 16, 1536},   // Jetson Orin
    {"sm_89", 89, 142, 1536},  // L40S
    {"sm_90", 90, 132, 2048},  // H100 SXM, H200
    {"sm_100", 100, 148, 2048}, // B200
    {"sm_120", 120, 84, 1536}, // RTX PRO 6000
};

std::optional<GpuChip> lookupGpuChip(llvm::StringRef name) {
  for (const GpuChip &chip : kChips)
    if (chip.name == name)
      return chip;
  return std::nullopt;
}

std::string knownGpuChips() {
  std::string names;
  for (const GpuChip &chip : kChips)
    names += (names.empty() ? "" : ", ") + chip.name.str();
  return names;
}

} // namespace kiln
