// libFuzzer target for the ONNX importer (binary and text protobuf): a bad model must end in
// diagnostics, never a crash. The imported module is verified as kilnc does, which runs the
// kiln ops' verifiers on what the importer built. Diagnostics are swallowed.
#include "compiler/OnnxImporter.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

#include <cstddef>
#include <cstdint>
#include <memory>

namespace {
// Creating a context costs more than importing most inputs (2,000 inputs/s with a context each
// against 15,000 with one shared), so inputs share one. It is replaced now and then, so that the
// attributes and types earlier inputs interned in it do not pile up.
constexpr int kInputsPerContext = 10000;
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static std::unique_ptr<mlir::MLIRContext> context;
  static int inputs = 0;
  if (!context || ++inputs % kInputsPerContext == 0)
    context = std::make_unique<mlir::MLIRContext>(mlir::MLIRContext::Threading::DISABLED);
  mlir::ScopedDiagnosticHandler swallow(context.get(),
                                        [](mlir::Diagnostic &) { return mlir::success(); });
  kiln::ImportResult imported =
      kiln::importOnnx(llvm::StringRef(reinterpret_cast<const char *>(data), size), "fuzz.onnx",
                       *context, kiln::ImportOptions());
  if (imported.module)
    (void)mlir::verify(*imported.module);
  return 0;
}
