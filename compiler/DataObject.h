//===- DataObject.h - Read-only data as an object file ---------*- C++ -*-===//
//
// A model's weights are most of an artifact's bytes (VGG-11: 531 MB of 531).
// Carried through LLVM they are copied into an LLVM constant, into the MC
// layer's fragments and into the object's buffer before they reach a file,
// which made writing the artifact most of the compile time. Instead the
// weights' globals stay declarations in LLVM IR and their bytes go from the
// MLIR attributes that hold them straight into an ELF relocatable object of
// their own, which LLD links beside the code.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_DATAOBJECT_H
#define KILN_COMPILER_DATAOBJECT_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Triple.h"

#include <optional>
#include <string>
#include <vector>

namespace kiln {

/// A symbol of read-only data. `bytes` are not owned: they stay where they
/// are (an attribute of the MLIR context) until the object is written.
struct DataSymbol {
  std::string name;
  uint64_t alignment = 1;
  llvm::ArrayRef<char> bytes;
  /// Visible to dlsym (the runtime looks the symbol up) rather than hidden.
  bool exported = false;
};

/// Smallest initializer worth moving out of LLVM IR. Smaller constants (a
/// shape, a lookup table) stay where the optimizer can fold loads of them.
constexpr uint64_t kMinDataObjectBytes = 4096;

/// The bytes of `attr` as code reads them, where the attribute already holds
/// them so: a non-splat dense array of numbers whose elements are whole bytes
/// (booleans are packed in bits), or a resource blob; none otherwise.
std::optional<llvm::ArrayRef<char>> rawElementBytes(mlir::Attribute attr);

/// Whether writeDataObject can write objects for `triple` (64-bit
/// little-endian ELF: x86-64 and AArch64 Linux).
bool canWriteDataObject(const llvm::Triple &triple);

/// Turns every constant global of the LLVM-dialect `module` whose
/// initializer is at least `minBytes` of dense numbers into a hidden
/// external declaration aligned to 64 bytes, and returns the symbols that
/// define them, in the module's order.
std::vector<DataSymbol> takeConstantData(mlir::ModuleOp module, uint64_t minBytes);

/// Writes `symbols` as an ELF relocatable object for `triple` into `os`: one
/// read-only section holding each symbol at its alignment.
llvm::Error writeDataObject(llvm::raw_ostream &os, const llvm::Triple &triple,
                            llvm::ArrayRef<DataSymbol> symbols);

} // namespace kiln

#endif // KILN_COMPILER_DATAOBJECT_H
