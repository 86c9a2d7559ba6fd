//===- Target.cpp - NVIDIA code: NVVM lowering, PTX, cubins ---------------===//
#include "codegen/NVPTX/Target.h"

#include "codegen/Optimize.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/Linker/Linker.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/IPO/Internalize.h"

#include <mutex>

extern "C" {
void LLVMInitializeNVPTXTargetInfo();
void LLVMInitializeNVPTXTarget();
void LLVMInitializeNVPTXTargetMC();
void LLVMInitializeNVPTXAsmPrinter();
}

using namespace mlir;

namespace kiln {

//===----------------------------------------------------------------------===//
// The toolkit
//===----------------------------------------------------------------------===//

/// A temporary file removed when it goes out of scope.
class TempFile {
public:
  explicit TempFile(llvm::StringRef suffix) {
    if (llvm::sys::fs::createTemporaryFile("kiln", suffix, path))
      path.clear();
  }
  ~TempFile() {
    if (!path.empty())
      llvm::sys::fs::remove(path);
  }
  bool valid() const { return !path.empty(); }
  llvm::StringRef str() const { return path; }

private:
  llvm::SmallString<128> path;
};

/// Runs `program` with `args`, returning its exit code and what it printed.
static llvm::Expected<std::pair<int, std::string>> run(llvm::StringRef program,
                                                       llvm::ArrayRef<llvm::StringRef> args) {
  TempFile output("txt");
  if (!output.valid())
    return llvm::createStringError("cannot create a temporary file for " + program.str());
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, output.str(), output.str()};
  std::string error;
  int code = llvm::sys::ExecuteAndWait(program, args, std::nullopt, redirects,
                                       /*SecondsToWait=*/600, /*MemoryLimit=*/0, &error);
  if (code < 0)
    return llvm::createStringError("cannot run " + program.str() + ": " + error);
  auto text = llvm::MemoryBuffer::getFile(output.str());
  return std::make_pair(code, text ? (*text)->getBuffer().str() : std::string());
}

llvm::Expected<CudaToolkit> findCudaToolkit(llvm::StringRef hint) {
  llvm::SmallVector<std::string> roots;
  if (!hint.empty()) {
    roots.push_back(hint.str());
  } else {
    for (const char *variable : {"CUDA_HOME", "CUDA_PATH"})
      if (const char *value = std::getenv(variable); value && *value)
        roots.push_back(value);
    roots.push_back("/usr/local/cuda");
    if (auto ptxas = llvm::sys::findProgramByName("ptxas"))
      roots.push_back(llvm::sys::path::parent_path(llvm::sys::path::parent_path(*ptxas)).str());
  }
  std::string tried;
  for (const std::string &root : roots) {
    CudaToolkit toolkit;
    toolkit.root = root;
    toolkit.ptxas = root + "/bin/ptxas";
    toolkit.libdevice = root + "/nvvm/libdevice/libdevice.10.bc";
    bool hasPtxas = llvm::sys::fs::can_execute(toolkit.ptxas);
    bool hasLibdevice = llvm::sys::fs::exists(toolkit.libdevice);
    if (!hasPtxas || !hasLibdevice) {
      tried += "\n  " + root + ": " +
               (!hasPtxas ? "no bin/ptxas" : "no nvvm/libdevice/libdevice.10.bc");
      continue;
    }
    auto version = run(toolkit.ptxas, {toolkit.ptxas, "--version"});
    if (!version)
      return version.takeError();
    // "Cuda compilation tools, release 13.0, V13.0.88"
    llvm::StringRef text = version->second;
    size_t at = text.find("release ");
    if (at == llvm::StringRef::npos ||
        text.substr(at + 8).consumeInteger(10, toolkit.major))
      return llvm::createStringError("cannot read the release of " + toolkit.ptxas +
                                     " from its --version: " + text.trim().str());
    llvm::StringRef rest = text.substr(at + 8).drop_while(llvm::isDigit);
    if (rest.consume_front("."))
      (void)rest.consumeInteger(10, toolkit.minor);
    return toolkit;
  }
  return llvm::createStringError(
      "no CUDA toolkit found (GPU targets need its ptxas and libdevice); looked in:" + tried +
      "\ngive its location with --cuda-path or CUDA_HOME");
}

//===----------------------------------------------------------------------===//
// NVVM lowering
//===----------------------------------------------------------------------===//

void buildGpuToNVVMPipeline(OpPassManager &pm, unsigned indexBitwidth) {
  // convert-gpu-to-nvvm lowers every dialect with an LLVM conversion
  // interface (arith, math, memref, vector, cf); scf has none, so it goes to
  // cf first. Memrefs are bare pointers: every shape is static.
  std::string pipeline = "gpu.module(convert-scf-to-cf,"
                         "convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=1 index-bitwidth=" +
                         std::to_string(indexBitwidth) +
                         "},canonicalize,cse,reconcile-unrealized-casts)";
  if (failed(parsePassPipeline(pipeline, pm, llvm::errs())))
    llvm::report_fatal_error("kiln: the built-in NVVM pipeline does not parse");
}

void registerNVPTXPipelines() {
  PassPipelineRegistration<>(
      "kiln-gpu-to-nvvm",
      "Lowers the kernels of every gpu.module to the LLVM and NVVM dialects (what kilnc runs "
      "after kiln-gpu-form-kernels)",
      [](OpPassManager &pm) { buildGpuToNVVMPipeline(pm, /*indexBitwidth=*/32); });
}

//===----------------------------------------------------------------------===//
// LLVM IR and PTX
//===----------------------------------------------------------------------===//

static llvm::Expected<std::unique_ptr<llvm::TargetMachine>> createMachine(const GpuChip &chip) {
  static std::once_flag initialized;
  std::call_once(initialized, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
  llvm::Triple triple("nvptx64-nvidia-cuda");
  std::string error;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return llvm::createStringError("this LLVM has no NVPTX back end: " + error);
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, chip.name, "", llvm::TargetOptions(), std::nullopt, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    return llvm::createStringError("cannot create an NVPTX target machine for " +
                                   chip.name.str());
  return machine;
}

/// Links the libdevice functions `module` calls (__nv_expf, ...).
static llvm::Error linkLibdevice(llvm::Module &module, const CudaToolkit &toolkit) {
  bool needed = llvm::any_of(module, [](const llvm::Function &f) {
    return f.isDeclaration() && f.getName().starts_with("__nv_");
  });
  if (!needed)
    return llvm::Error::success();
  auto buffer = llvm::MemoryBuffer::getFile(toolkit.libdevice);
  if (!buffer)
    return llvm::createStringError("cannot read " + toolkit.libdevice + ": " +
                                   buffer.getError().message());
  auto libdevice = llvm::parseBitcodeFile((*buffer)->getMemBufferRef(), module.getContext());
  if (!libdevice)
    return llvm::createStringError("cannot parse " + toolkit.libdevice + ": " +
                                   llvm::toString(libdevice.takeError()));
  (*libdevice)->setTargetTriple(module.getTargetTriple());
  (*libdevice)->setDataLayout(module.getDataLayout());
  if (llvm::Linker::linkModules(module, std::move(*libdevice),
                                llvm::Linker::Flags::LinkOnlyNeeded))
    return llvm::createStringError("cannot link " + toolkit.libdevice);
  return llvm::Error::success();
}

llvm::Expected<std::unique_ptr<llvm::Module>>
translateKernelsToLLVMIR(gpu::GPUModuleOp kernels, const GpuChip &chip,
                         const CudaToolkit &toolkit, llvm::LLVMContext &context) {
  auto machine = createMachine(chip);
  if (!machine)
    return machine.takeError();
  // The translation takes a builtin.module; the kernels' module holds the
  // same LLVM-dialect functions.
  OwningOpRef<ModuleOp> holder = ModuleOp::create(kernels.getLoc());
  OpBuilder builder = OpBuilder::atBlockEnd(holder->getBody());
  for (Operation &op : kernels.getBody()->getOperations())
    builder.clone(op);
  std::unique_ptr<llvm::Module> module =
      translateModuleToLLVMIR(*holder, context, kernels.getName());
  if (!module)
    return llvm::createStringError("translating the GPU kernels to LLVM IR failed");
  module->setTargetTriple((*machine)->getTargetTriple());
  module->setDataLayout((*machine)->createDataLayout());
  // libdevice asks, through __nvvm_reflect, whether to flush denormals; no.
  module->addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", uint32_t(0));
  if (llvm::Error error = linkLibdevice(*module, toolkit))
    return std::move(error);
  // Only the kernels are entry points; every other function may be inlined
  // and dropped.
  llvm::internalizeModule(*module, [](const llvm::GlobalValue &value) {
    auto *function = llvm::dyn_cast<llvm::Function>(&value);
    return function && function->getCallingConv() == llvm::CallingConv::PTX_Kernel;
  });

  optimizeModule(*module, **machine);
  return module;
}

llvm::Expected<Ptx> emitPtx(llvm::Module &module, const GpuChip &chip) {
  auto machine = createMachine(chip);
  if (!machine)
    return machine.takeError();
  llvm::SmallString<0> text;
  llvm::raw_svector_ostream os(text);
  llvm::legacy::PassManager pm;
  if ((*machine)->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile))
    return llvm::createStringError("the NVPTX back end cannot emit PTX");
  pm.run(module);
  Ptx ptx{text.str().str(), ""};
  // ".version 7.8"
  llvm::StringRef rest = ptx.text;
  size_t at = rest.find("\n.version ");
  if (at != llvm::StringRef::npos)
    ptx.isa = rest.substr(at + 10).take_until([](char c) { return c == '\n'; }).trim().str();
  if (ptx.isa.empty())
    return llvm::createStringError("the PTX declares no .version");
  return ptx;
}

llvm::Expected<std::string> assembleCubin(llvm::StringRef ptx, const GpuChip &chip,
                                          const CudaToolkit &toolkit) {
  TempFile input("ptx"), output("cubin");
  if (!input.valid() || !output.valid())
    return llvm::createStringError("cannot create temporary files for ptxas");
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(input.str(), ec);
    if (ec)
      return llvm::createStringError("cannot write " + input.str().str() + ": " + ec.message());
    os << ptx;
  }
  std::string arch = "-arch=" + chip.name.str();
  auto result = run(toolkit.ptxas, {toolkit.ptxas, arch, "-O3", "--output-file", output.str(),
                                    input.str()});
  if (!result)
    return result.takeError();
  if (result->first != 0)
    return llvm::createStringError(toolkit.ptxas + " rejected the PTX for " + chip.name.str() +
                                   ":\n" + llvm::StringRef(result->second).trim().str());
  auto cubin = llvm::MemoryBuffer::getFile(output.str());
  if (!cubin)
    return llvm::createStringError("ptxas wrote no cubin: " + cubin.getError().message());
  return (*cubin)->getBuffer().str();
}

} // namespace kiln
