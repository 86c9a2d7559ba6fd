//===- Artifact.h - Native code and the .kiln artifact --------*- C++ -*-===//
//
// A Kiln artifact is an ELF shared object holding the compiled model
// function, its weights as read-only data, and two symbols for the runtime:
// `kiln_manifest` (text: format version, target, inputs and outputs) and
// `kiln_entry(void **buffers)`, which takes the inputs then the outputs.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_ARTIFACT_H
#define KILN_COMPILER_ARTIFACT_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/IR/Module.h"
#include "llvm/Target/TargetMachine.h"

#include <memory>
#include <string>

namespace kiln {

struct TargetOptions {
  /// LLVM CPU name, or "native" for the compiling machine.
  std::string cpu = "native";
  /// Name of the exported model function and prefix of the C header.
  std::string functionName = "kiln_model";
};

/// One input or output of the compiled function, from @main's signature.
struct TensorSignature {
  std::string name;
  std::string dtype; // f32, i64, bool, ...
  llvm::SmallVector<int64_t> shape;
};

/// The signature of @main (inputs, outputs), read from the kiln-level module
/// before lowering, with names from the `kiln.name` attributes.
struct ModelSignature {
  std::vector<TensorSignature> inputs, outputs;
};

llvm::FailureOr<ModelSignature> readSignature(mlir::ModuleOp module);

/// Drops the `kiln.name` attributes from @main once the signature is read;
/// the LLVM dialect has no meaning for them.
void stripSignatureNames(mlir::ModuleOp module);

/// Creates the target machine for `options` (host triple), or reports why not.
llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
createTargetMachine(const TargetOptions &options);

/// Translates an LLVM-dialect module to LLVM IR and adds the artifact
/// symbols: the model function is renamed to `functionName`, and
/// `kiln_entry` and `kiln_manifest` are added. Runs LLVM's O3 pipeline.
llvm::Expected<std::unique_ptr<llvm::Module>>
translateToLLVMIR(mlir::ModuleOp module, const ModelSignature &signature,
                  llvm::TargetMachine &machine, const TargetOptions &options,
                  llvm::LLVMContext &llvmContext);

/// Native object code for `module`.
llvm::Expected<std::string> emitObject(llvm::Module &module,
                                       llvm::TargetMachine &machine);

/// Links `object` into the shared-object artifact at `outputPath` with the
/// built-in LLD.
llvm::Error linkArtifact(llvm::StringRef object, llvm::StringRef outputPath);

/// A C header declaring the compiled function for direct linking.
std::string emitHeader(const ModelSignature &signature, const TargetOptions &options);

} // namespace kiln

#endif // KILN_COMPILER_ARTIFACT_H
