//===- kiln-translate.cpp - Translates between model formats and MLIR ----===//
//
// `--import-onnx` reads an ONNX model (binary or protobuf text format) and
// prints the kiln-dialect module; MLIR's translations (--mlir-to-llvmir, ...)
// are available too.
//
//===----------------------------------------------------------------------===//
#include "compiler/Driver.h"
#include "compiler/OnnxImporter.h"
#include "compiler/Registration.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/InitAllTranslations.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/SourceMgr.h"

namespace cl = llvm::cl;

static cl::list<std::string> inputShapes(
    "input-shape",
    cl::desc("With --import-onnx: static shape for a graph input, NAME=DIMxDIM..."),
    cl::value_desc("name=shape"));
static cl::list<std::string> freezeInputs(
    "freeze-input",
    cl::desc("With --import-onnx: bind a graph input to a TensorProto file's tensor"),
    cl::value_desc("name=file.pb"));

int main(int argc, char **argv) {
  mlir::registerAllTranslations();
  mlir::TranslateToMLIRRegistration importOnnx(
      "import-onnx", "Import an ONNX model into the kiln dialect",
      [](llvm::SourceMgr &sourceMgr, mlir::MLIRContext *context)
          -> mlir::OwningOpRef<mlir::Operation *> {
        kiln::ImportOptions options;
        for (const std::string &spec : inputShapes) {
          std::string error = kiln::parseInputShape(spec, options);
          if (!error.empty()) {
            mlir::emitError(mlir::UnknownLoc::get(context)) << error;
            return nullptr;
          }
        }
        for (const std::string &spec : freezeInputs) {
          auto [name, file] = llvm::StringRef(spec).split('=');
          options.frozenInputs[name] = file.str();
        }
        const llvm::MemoryBuffer *buffer = sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
        // Import errors print as kilnc prints them: one line naming the
        // file and the ONNX node.
        auto handler = kiln::installDiagnosticPrinter(*context, "kiln-translate");
        kiln::ImportResult result = kiln::importOnnx(
            buffer->getBuffer(), buffer->getBufferIdentifier(), *context, options);
        context->getDiagEngine().eraseHandler(handler);
        if (!result.module)
          return nullptr;
        return mlir::OwningOpRef<mlir::Operation *>(result.module.release());
      },
      [](mlir::DialectRegistry &registry) { kiln::registerKilnDialects(registry); });
  return mlir::failed(mlir::mlirTranslateMain(argc, argv, "Kiln translation tool"));
}
