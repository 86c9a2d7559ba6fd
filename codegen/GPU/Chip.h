//===- Chip.h - What kernel shapes depend on in an NVIDIA GPU ---*- C++ -*-===//
//
// Kernels are shaped at compile time (launch sizes are constants in the
// artifact), so the few facts of the target chip that shapes depend on are
// written down here, per SM architecture. Counts are those of the
// data-center part of each generation; a kernel shaped for one still runs,
// a little less well, on the others of its architecture.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_CODEGEN_GPU_CHIP_H
#define KILN_CODEGEN_GPU_CHIP_H

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace kiln {

struct GpuChip {
  /// "sm_90".
  llvm::StringRef name;
  /// 90 for sm_90.
  int version;
  /// Streaming multiprocessors (132 on an H100 SXM).
  int multiprocessors;
  /// Threads resident on one multiprocessor.
  int threadsPerMultiprocessor;
  /// Shared memory a block may use without opting in (48 KiB everywhere).
  int sharedBytesPerBlock = 48 * 1024;
};

/// The chip called `name` ("sm_80", "sm_90", ...), if Kiln knows it.
std::optional<GpuChip> lookupGpuChip(llvm::StringRef name);

/// The names of every chip Kiln knows, comma-separated, for messages.
std::string knownGpuChips();

} // namespace kiln

#endif // KILN_CODEGEN_GPU_CHIP_H
