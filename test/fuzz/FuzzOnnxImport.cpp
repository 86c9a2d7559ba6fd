// libFuzzer target for the ONNX importer (binary and text protobuf): a bad model must end in
// diagnostics, never a crash. The imported module is verified as kilnc does, which runs the
// kiln ops' verifiers on what the importer built. Diagnostics are swallowed; each input gets a
// fresh context, so that nothing one input leaves behind changes how the next is imported.
#include "compiler/OnnxImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  mlir::ScopedDiagnosticHandler swallow(&context, [](mlir::Diagnostic &) { return mlir::success(); });
  kiln::ImportResult imported =
      kiln::importOnnx(llvm::StringRef(reinterpret_cast<const char *>(data), size), "fuzz.onnx",
                       context, kiln::ImportOptions());
  if (imported.module)
    (void)mlir::verify(*imported.module);
  return 0;
}
