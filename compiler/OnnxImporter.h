//===- OnnxImporter.h - ONNX ModelProto to the kiln dialect ---*- C++ -*-===//
#ifndef KILN_COMPILER_ONNXIMPORTER_H
#define KILN_COMPILER_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringMap.h"

#include <string>

namespace kiln {

struct ImportOptions {
  /// Shapes for graph inputs, by name; required for symbolic dimensions.
  llvm::StringMap<llvm::SmallVector<int64_t>> inputShapes;
  /// Graph inputs to bind to the tensor stored in a file (ONNX TensorProto
  /// .pb): they become constants and stop being inputs.
  llvm::StringMap<std::string> frozenInputs;
};

/// Why an import failed; kilnc maps it to its exit code so that test
/// drivers can tell an unsupported model from a broken one.
enum class ImportFailure {
  None,
  /// The file is not a valid ONNX model, or the model is inconsistent.
  Invalid,
  /// The model uses an op, type or attribute Kiln does not implement.
  Unsupported,
  /// An operand that decides shapes comes from a graph input; freezing that
  /// input (--freeze-input) makes it a constant.
  NeedsConstant,
};

struct ImportResult {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  ImportFailure failure = ImportFailure::None;
};

/// Imports an ONNX model (binary protobuf, or protobuf text format) held in
/// `bytes` as a module with one function, @main. `path` names the model in
/// diagnostics, which are located at the ONNX node (a NameLoc of the node
/// name inside the file).
ImportResult importOnnx(llvm::StringRef bytes, llvm::StringRef path,
                        mlir::MLIRContext &context, const ImportOptions &options);

/// Reads the model file at `path` and imports it.
ImportResult importOnnxFile(llvm::StringRef path, mlir::MLIRContext &context,
                            const ImportOptions &options);

} // namespace kiln

#endif // KILN_COMPILER_ONNXIMPORTER_H
