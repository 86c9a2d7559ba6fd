//===- Artifact.cpp - Native code and the .kiln artifact ------------------===//
#include "compiler/Artifact.h"
#include "compiler/DataObject.h"

#include "codegen/Optimize.h"
#include "dialects/kiln/Device.h"
#include "kiln/manifest.h"
#include "kiln/runtime.h"
#include "kiln/seal.h"
#include "kiln/tensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/Transforms/Utils/CodeExtractor.h"

#include "lld/Common/Driver.h"

LLD_HAS_DRIVER(elf)

using namespace mlir;

namespace kiln {

static std::string dtypeName(Type type) {
  if (type.isF32()) return "f32";
  if (type.isF16()) return "f16";
  if (type.isBF16()) return "bf16";
  if (type.isF64()) return "f64";
  if (type.isInteger(1)) return "bool";
  if (auto integer = llvm::dyn_cast<IntegerType>(type))
    return "i" + std::to_string(integer.getWidth());
  return "";
}

static std::string cType(llvm::StringRef dtype) {
  return llvm::StringSwitch<std::string>(dtype)
      .Case("f32", "float")
      .Case("f64", "double")
      .Case("f16", "uint16_t /* float16 bits */")
      .Case("bf16", "uint16_t /* bfloat16 bits */")
      .Case("bool", "uint8_t /* bool */")
      .Case("i8", "int8_t")
      .Case("i16", "int16_t")
      .Case("i32", "int32_t")
      .Case("i64", "int64_t")
      .Case("u8", "uint8_t")
      .Case("u16", "uint16_t")
      .Case("u32", "uint32_t")
      .Case("u64", "uint64_t")
      .Default("void");
}

/// Names in the manifest are percent-encoded, by the runtime's own rules, so
/// that every record is whitespace-separated; an empty name still needs a
/// field.
static std::string encodeName(llvm::StringRef name) {
  return name.empty() ? "%00" : kiln::rt::percentEncode(name);
}

static std::string shapeText(llvm::ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s;
}

/// The signature of `func` from its types and `kiln.name`/`kiln.state`
/// attributes.
static LogicalResult describeFunction(func::FuncOp func, std::vector<TensorSignature> &inputs,
                                      std::vector<TensorSignature> &outputs) {
  auto describe = [&](Type type, DictionaryAttr attrs, const std::string &fallback,
                      std::vector<TensorSignature> &into) -> LogicalResult {
    auto tensor = llvm::dyn_cast<RankedTensorType>(type);
    if (!tensor || !tensor.hasStaticShape() || dtypeName(tensor.getElementType()).empty())
      return func.emitError("@")
             << func.getSymName()
             << "'s signature must use statically shaped tensors of supported element types, got "
             << type;
    std::string name = fallback, state, dtype = dtypeName(tensor.getElementType());
    if (attrs) {
      if (auto attr = attrs.getAs<StringAttr>("kiln.name"))
        name = attr.str();
      if (auto attr = attrs.getAs<StringAttr>("kiln.state"))
        state = attr.str();
      // Tensors are signless; the importer marks ONNX's unsigned integers.
      if (attrs.get("kiln.unsigned") && dtype[0] == 'i')
        dtype[0] = 'u';
    }
    into.push_back({name, dtype,
                    llvm::SmallVector<int64_t>(tensor.getShape()), state});
    return success();
  };
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (failed(describe(func.getArgumentTypes()[i], func.getArgAttrDict(i),
                        "input_" + std::to_string(i), inputs)))
      return failure();
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    if (failed(describe(func.getResultTypes()[i], func.getResultAttrDict(i),
                        "output_" + std::to_string(i), outputs)))
      return failure();
  return success();
}

llvm::FailureOr<ModelSignature> readSignature(ModuleOp module) {
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!main) {
    module.emitError("the module has no function @main to compile");
    return failure();
  }
  ModelSignature signature;
  if (failed(describeFunction(main, signature.inputs, signature.outputs)))
    return failure();
  for (const char *name : kExtraEntries)
    if (auto func = module.lookupSymbol<func::FuncOp>(name)) {
      EntrySignature &entry = signature.entries.emplace_back();
      entry.name = name;
      if (failed(describeFunction(func, entry.inputs, entry.outputs)))
        return failure();
    }
  return signature;
}

bool PartitionPlan::hasGpu() const {
  return llvm::any_of(stages, [](const StageSignature &stage) { return stage.isGpu(); });
}

bool PartitionPlan::hasCpu() const {
  return llvm::any_of(stages, [](const StageSignature &stage) { return !stage.isGpu(); });
}

llvm::FailureOr<std::optional<PartitionPlan>> readPartitionPlan(ModuleOp module) {
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!main || main.isExternal())
    return std::optional<PartitionPlan>();
  Block &body = main.getBody().front();
  if (llvm::none_of(body.getOps<func::CallOp>(),
                    [](func::CallOp call) { return call->hasAttr(kDeviceAttrName); }))
    return std::optional<PartitionPlan>();

  PartitionPlan plan;
  llvm::DenseMap<Value, StageValue> sources;
  for (auto [index, arg] : llvm::enumerate(main.getArguments()))
    sources[arg] = {StageValue::Kind::Input, static_cast<unsigned>(index), 0};
  for (Operation &op : body.without_terminator()) {
    auto call = llvm::dyn_cast<func::CallOp>(op);
    auto device = call ? call->getAttrOfType<StringAttr>(kDeviceAttrName) : nullptr;
    if (!device)
      return op.emitError("a partitioned @main holds only stage calls with a device"),
             failure();
    std::string error;
    std::optional<DeviceName> name = DeviceName::parse(device.getValue(), error);
    if (!name || !name->isFull())
      return op.emitError("bad stage device '") << device.getValue() << "'", failure();
    StageSignature stage;
    stage.function = call.getCallee().str();
    stage.device = name->shortName();
    if (llvm::none_of(plan.devices, [&](const auto &d) { return d.first == stage.device; }))
      plan.devices.push_back({stage.device, name->str()});
    for (Value operand : call.getOperands())
      stage.args.push_back(sources.lookup(operand));
    for (auto [index, result] : llvm::enumerate(call.getResults())) {
      auto tensor = llvm::dyn_cast<RankedTensorType>(result.getType());
      if (!tensor || !tensor.hasStaticShape() || dtypeName(tensor.getElementType()).empty())
        return call.emitError("a stage result must be a statically shaped tensor, got ")
                   << result.getType(),
               failure();
      stage.results.push_back({"", dtypeName(tensor.getElementType()),
                               llvm::SmallVector<int64_t>(tensor.getShape())});
      sources[result] = {StageValue::Kind::Stage, static_cast<unsigned>(plan.stages.size()),
                         static_cast<unsigned>(index)};
    }
    plan.stages.push_back(std::move(stage));
  }
  for (Value value : body.getTerminator()->getOperands())
    plan.outputs.push_back(sources.lookup(value));
  return std::optional<PartitionPlan>(std::move(plan));
}

/// The train step's state pairs: each state input's index and that of the
/// output of the same name, kind and type.
static SmallVector<std::pair<size_t, size_t>> statePairs(const ModelSignature &signature) {
  SmallVector<std::pair<size_t, size_t>> pairs;
  for (auto [i, input] : llvm::enumerate(signature.inputs)) {
    if (input.state.empty())
      continue;
    auto output = llvm::find_if(signature.outputs, [&](const TensorSignature &output) {
      return output.name == input.name && output.state == input.state &&
             output.dtype == input.dtype && output.shape == input.shape;
    });
    if (output != signature.outputs.end())
      pairs.push_back({i, static_cast<size_t>(output - signature.outputs.begin())});
  }
  return pairs;
}

void markStatePairs(ModuleOp module, const ModelSignature &signature) {
  auto main = module.lookupSymbol<func::FuncOp>("main");
  if (!main || main.isExternal() || main.getNumArguments() != signature.inputs.size())
    return;
  SmallVector<int64_t> arguments;
  for (auto [input, output] : statePairs(signature))
    arguments.append(
        {static_cast<int64_t>(input), static_cast<int64_t>(signature.inputs.size() + output)});
  if (!arguments.empty())
    main->setAttr("kiln.state_pairs", DenseI64ArrayAttr::get(module.getContext(), arguments));
}

void readInPlaceState(ModuleOp module, ModelSignature &signature) {
  auto proven = module->getAttrOfType<DenseI64ArrayAttr>("kiln.in_place_state");
  if (!proven)
    return;
  int64_t inputs = static_cast<int64_t>(signature.inputs.size());
  for (int64_t argument : proven.asArrayRef())
    if (argument >= inputs && argument - inputs < static_cast<int64_t>(signature.outputs.size()))
      signature.outputs[argument - inputs].inPlace = true;
  module->removeAttr("kiln.in_place_state");
}

void stripSignatureNames(ModuleOp module) {
  for (auto func : module.getOps<func::FuncOp>())
    for (llvm::StringRef attr : {"kiln.name", "kiln.state", "kiln.unsigned"}) {
      for (unsigned i = 0; i < func.getNumArguments(); ++i)
        func.removeArgAttr(i, attr);
      for (unsigned i = 0; i < func.getNumResults(); ++i)
        func.removeResultAttr(i, StringAttr::get(module.getContext(), attr));
    }
}

llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
createTargetMachine(const TargetOptions &options) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(llvm::sys::getProcessTriple());
  std::string error;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return llvm::createStringError("no LLVM target for " + triple.str() + ": " + error);
  std::string cpu = options.cpu, features;
  if (cpu == "native" || cpu == "host") {
    cpu = llvm::sys::getHostCPUName().str();
    for (const auto &feature : llvm::sys::getHostCPUFeatures())
      features += (features.empty() ? "" : ",") + std::string(feature.second ? "+" : "-") +
                  feature.first().str();
  } else if (!std::unique_ptr<llvm::MCSubtargetInfo>(target->createMCSubtargetInfo(triple, "", ""))
                  ->isCPUStringValid(cpu)) {
    return llvm::createStringError("unknown --cpu '" + cpu +
                                   "' (try native, x86-64, x86-64-v3, skylake-avx512)");
  }
  // Gathers and scatters are slower than scalar loads and stores on current
  // x86 cores (microcoded on AMD's, behind the GDS mitigation on Intel's);
  // LLVM vectorizes strided loops with them when its cost model says
  // otherwise. Measured: a ResNet-18 train step's filter transposes, 10 %.
  if (triple.isX86())
    features += (features.empty() ? "" : ",") + std::string("+prefer-no-gather,+prefer-no-scatter");
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, cpu, features, llvm::TargetOptions(), llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    return llvm::createStringError("cannot create a target machine for " + cpu);
  return machine;
}

bool hasSixteenLaneVectors(llvm::TargetMachine &machine) {
  return machine.getMCSubtargetInfo()->checkFeatures("+avx512f");
}

bool hasDirectConvolutionKernel(llvm::TargetMachine &machine) {
  return machine.getTargetTriple().isX86() &&
         machine.getMCSubtargetInfo()->checkFeatures("+avx2,+fma,-avx512f");
}

/// Kernel rows are often short (28, 14 or 10 elements in a LeNet). LLVM fully
/// unrolls constant loops of up to a few dozen iterations before it
/// vectorizes, and then vectorizes the next loop out, whose accesses are
/// strided: gathers and scatters. Capping full unrolling at 8 iterations
/// keeps rows as loops that the loop vectorizer runs along their contiguous
/// dimension (with a masked tail), and still unrolls windows (3x3, 5x5
/// kernels' inner loops). Measured on bench/: LeNet -20 %, ResNet block and
/// layer norm -13 to -30 %, the others unchanged. A user's own
/// --unroll-full-max-count wins.
static void limitFullUnrolling() {
  auto options = llvm::cl::getRegisteredOptions();
  auto it = options.find("unroll-full-max-count");
  if (it == options.end() || it->second->getNumOccurrences() > 0)
    return;
  // As if given on the command line: LLVM reads the value only then.
  (void)it->second->addOccurrence(0, "unroll-full-max-count", "8");
}

/// Gives every constant array of numbers (a layer's weights) one flat
/// array type instead of one nested array per dimension. The code reads
/// weights through pointers with element offsets, so the global's type does
/// not matter to it, while LLVM builds a nested array as one uniqued constant
/// per innermost row (ResNet-50: over a million) and its object writer
/// visits them one by one; a flat array is one constant over the raw bytes.
static void flattenConstantArrays(ModuleOp module) {
  module.walk([](LLVM::GlobalOp global) {
    auto data = llvm::dyn_cast_or_null<DenseElementsAttr>(global.getValueOrNull());
    auto type = data ? llvm::dyn_cast<RankedTensorType>(data.getType()) : nullptr;
    if (!type || type.getRank() < 2 || data.isSplat() ||
        !llvm::isa<LLVM::LLVMArrayType>(global.getGlobalType()))
      return;
    auto flat = RankedTensorType::get({type.getNumElements()}, type.getElementType());
    global.setGlobalTypeAttr(TypeAttr::get(
        LLVM::LLVMArrayType::get(type.getElementType(), type.getNumElements())));
    global.setValueAttr(data.reshape(flat));
  });
}

/// Functions with more top-level loops than this have each loop moved into
/// a function of its own.
constexpr size_t kMaxLoopsPerFunction = 32;

/// Moves each top-level loop nest of a function with many of them (a graph's
/// untiled kernels, one after another in its model function) into a
/// function of its own, kept out of line. LLVM's loop passes query
/// ScalarEvolution, whose dominance walks are linear in the function's size,
/// once per loop: a model function of n kernels took time quadratic in n
/// (a chain of 2000 kernels: 32 s of optimization).
static void outlineLoops(llvm::Function &function) {
  llvm::DominatorTree dominators(function);
  llvm::LoopInfo loops(dominators);
  if (loops.getTopLevelLoops().size() <= kMaxLoopsPerFunction)
    return;
  std::vector<llvm::SmallVector<llvm::BasicBlock *>> regions;
  for (llvm::Loop *loop : loops.getTopLevelLoops())
    regions.emplace_back(loop->blocks());
  llvm::CodeExtractorAnalysisCache cache(function);
  for (llvm::ArrayRef<llvm::BasicBlock *> region : regions) {
    llvm::CodeExtractor extractor(region, /*DT=*/nullptr, /*AggregateArgs=*/false,
                                  /*BFI=*/nullptr, /*BPI=*/nullptr, /*AC=*/nullptr,
                                  /*AllowVarArgs=*/false, /*AllowAlloca=*/true,
                                  /*AllocationBlock=*/nullptr, /*Suffix=*/"kernel");
    if (!extractor.isEligible())
      continue;
    if (llvm::Function *outlined = extractor.extractCodeRegion(cache))
      outlined->addFnAttr(llvm::Attribute::NoInline);
  }
}

/// CPU features the runtime checks before running an artifact.
static std::string requiredFeatures(llvm::TargetMachine &machine) {
  static const char *kChecked[] = {"sse4.2",   "avx",      "avx2",      "fma",
                                   "f16c",     "bmi",      "bmi2",      "avx512f",
                                   "avx512bw", "avx512vl", "avx512dq",  "avx512cd",
                                   "avx512vnni", "avx512bf16", "avx512fp16"};
  const llvm::MCSubtargetInfo *info = machine.getMCSubtargetInfo();
  std::string out;
  for (const char *feature : kChecked)
    if (info->checkFeatures(std::string("+") + feature))
      out += (out.empty() ? "" : ",") + std::string(feature);
  return out;
}

/// The byte size of each of `inputs` then `outputs`.
static std::vector<uint64_t> bufferBytes(llvm::ArrayRef<TensorSignature> inputs,
                                         llvm::ArrayRef<TensorSignature> outputs) {
  std::vector<uint64_t> bytes;
  for (llvm::ArrayRef<TensorSignature> list : {inputs, outputs})
    for (const TensorSignature &t : list) {
      std::optional<rt::DType> dtype = rt::parseDType(t.dtype);
      uint64_t size = dtype ? rt::dtypeSize(*dtype) : 0;
      for (int64_t d : t.shape)
        size *= static_cast<uint64_t>(d);
      bytes.push_back(size);
    }
  return bytes;
}

EntryPoint modelEntry(const ModelSignature &signature, const TargetOptions &options) {
  EntryPoint entry{"main", options.functionName, "kiln_entry",
                   signature.inputs.size() + signature.outputs.size(),
                   bufferBytes(signature.inputs, signature.outputs), {}};
  for (auto [input, output] : statePairs(signature))
    if (signature.outputs[output].inPlace)
      entry.mayAlias.insert(entry.mayAlias.end(), {input, signature.inputs.size() + output});
  return entry;
}

std::vector<EntryPoint> extraEntries(const ModelSignature &signature) {
  std::vector<EntryPoint> entries;
  for (const EntrySignature &entry : signature.entries)
    entries.push_back({entry.name, "", "kiln_entry_" + entry.name,
                       entry.inputs.size() + entry.outputs.size(),
                       bufferBytes(entry.inputs, entry.outputs)});
  return entries;
}

std::vector<EntryPoint> stageEntries(const PartitionPlan &plan) {
  std::vector<EntryPoint> entries;
  for (auto [index, stage] : llvm::enumerate(plan.stages))
    if (!stage.isGpu())
      entries.push_back({stage.function, "", "kiln_stage_" + std::to_string(index),
                         stage.args.size() + stage.results.size()});
  return entries;
}

/// The vector width loops are vectorized for: --vector-width, or with
/// AVX-512 the full 512 bits (LLVM's x86 default stays at 256 for fear of
/// clock drops; bench/ measured softmax 1.27 -> 0.99 ms and GELU 1.15 ->
/// 1.00 ms on a Xeon with AMX, nothing slower); 0 leaves LLVM's choice.
static unsigned preferredVectorWidth(llvm::TargetMachine &machine,
                                     const TargetOptions &options) {
  if (options.vectorWidth)
    return options.vectorWidth;
  return machine.getMCSubtargetInfo()->checkFeatures("+avx512f") ? 512 : 0;
}

llvm::Expected<std::unique_ptr<llvm::Module>>
translateToLLVMIR(ModuleOp module, llvm::ArrayRef<EntryPoint> entries,
                  llvm::TargetMachine &machine, const TargetOptions &options,
                  llvm::LLVMContext &llvmContext) {
  flattenConstantArrays(module);
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext, "kiln");
  if (!llvmModule)
    return llvm::createStringError("translation to LLVM IR failed");
  llvmModule->setTargetTriple(machine.getTargetTriple());
  llvmModule->setDataLayout(machine.createDataLayout());

  for (const EntryPoint &entryPoint : entries) {
    llvm::Function *model = llvmModule->getFunction(entryPoint.function);
    if (!model)
      return llvm::createStringError("the lowered module has no function '" +
                                     entryPoint.function + "'");
    if (!entryPoint.symbol.empty()) {
      model->setName(entryPoint.symbol);
      if (model->getName() != entryPoint.symbol)
        return llvm::createStringError("the symbol name '" + entryPoint.symbol +
                                       "' is taken; choose another --name");
    }
    // The runtime passes distinct buffers, which lets LLVM vectorize freely;
    // but resident state may pass an `in-place` output as its input.
    for (llvm::Argument &arg : model->args())
      if (arg.getType()->isPointerTy() && !llvm::is_contained(entryPoint.mayAlias, arg.getArgNo()))
        arg.addAttr(llvm::Attribute::NoAlias);
      else if (arg.getType()->isPointerTy())
        arg.removeAttr(llvm::Attribute::NoAlias);

    // void wrapper(void **buffers): inputs, then outputs.
    llvm::IRBuilder<> b(llvmContext);
    llvm::PointerType *ptr = b.getPtrTy();
    auto *entry = llvm::Function::Create(llvm::FunctionType::get(b.getVoidTy(), {ptr}, false),
                                         llvm::GlobalValue::ExternalLinkage, entryPoint.wrapper,
                                         *llvmModule);
    b.SetInsertPoint(llvm::BasicBlock::Create(llvmContext, "entry", entry));
    llvm::SmallVector<llvm::Value *> args;
    if (entryPoint.buffers != model->arg_size())
      return llvm::createStringError("the lowered function '" + entryPoint.function +
                                     "' takes " + std::to_string(model->arg_size()) +
                                     " buffers, expected " + std::to_string(entryPoint.buffers));
    for (size_t i = 0; i < entryPoint.buffers; ++i)
      args.push_back(b.CreateLoad(ptr, b.CreateConstInBoundsGEP1_64(ptr, entry->getArg(0), i)));
    b.CreateCall(model, args);
    b.CreateRetVoid();
    if (!entryPoint.bufferBytes.empty()) {
      std::vector<uint64_t> record = {entryPoint.bufferBytes.size()};
      llvm::append_range(record, entryPoint.bufferBytes);
      llvm::Constant *data = llvm::ConstantDataArray::get(llvmContext, record);
      new llvm::GlobalVariable(*llvmModule, data->getType(), /*isConstant=*/true,
                               llvm::GlobalValue::ExternalLinkage, data,
                               entryPoint.wrapper + "_buffers");
    }
  }

  for (llvm::Function &f : *llvmModule)
    if (!f.isDeclaration()) {
      f.addFnAttr("target-cpu", machine.getTargetCPU());
      if (!machine.getTargetFeatureString().empty())
        f.addFnAttr("target-features", machine.getTargetFeatureString());
      if (unsigned width = preferredVectorWidth(machine, options))
        f.addFnAttr("prefer-vector-width", std::to_string(width));
    }

  std::vector<llvm::Function *> defined;
  for (llvm::Function &f : *llvmModule)
    if (!f.isDeclaration())
      defined.push_back(&f);
  for (llvm::Function *f : defined)
    outlineLoops(*f);
  limitFullUnrolling();
  optimizeModule(*llvmModule, machine);
  return llvmModule;
}

std::unique_ptr<llvm::Module> createDataModule(llvm::TargetMachine &machine,
                                               llvm::LLVMContext &llvmContext) {
  auto module = std::make_unique<llvm::Module>("kiln", llvmContext);
  module->setTargetTriple(machine.getTargetTriple());
  module->setDataLayout(machine.createDataLayout());
  return module;
}

std::vector<DataSymbol> gpuImageSymbols(const GpuImage &image, const std::string &prefix) {
  // Text symbols keep the string's terminating NUL.
  auto bytes = [](const std::string &from, bool text) {
    return llvm::ArrayRef<char>(from.c_str(), from.size() + (text ? 1 : 0));
  };
  std::vector<DataSymbol> symbols;
  symbols.push_back({prefix + "cuda_program", 8, bytes(image.program, true), true});
  for (const auto &[chip, cubin] : image.cubins)
    symbols.push_back({prefix + "cuda_cubin_" + chip, 8, bytes(cubin, false), true});
  if (!image.ptx.empty())
    symbols.push_back({prefix + "cuda_ptx", 8, bytes(image.ptx, true), true});
  // Never empty, so the symbol exists even for a model without constants.
  static const char kNoConstants = 0;
  symbols.push_back({prefix + "cuda_constants", 256,
                     image.constants.empty()
                         ? llvm::ArrayRef<char>(&kNoConstants, 1)
                         : llvm::ArrayRef<char>(image.constants.data(), image.constants.size()),
                     true});
  return symbols;
}

void addData(llvm::Module &module, llvm::ArrayRef<DataSymbol> symbols) {
  for (const DataSymbol &symbol : symbols) {
    llvm::Constant *data = llvm::ConstantDataArray::getString(
        module.getContext(), llvm::StringRef(symbol.bytes.data(), symbol.bytes.size()),
        /*AddNull=*/false);
    auto *global = new llvm::GlobalVariable(module, data->getType(), /*isConstant=*/true,
                                            llvm::GlobalValue::ExternalLinkage, data, symbol.name);
    global->setAlignment(llvm::Align(symbol.alignment));
    if (!symbol.exported)
      global->setVisibility(llvm::GlobalValue::HiddenVisibility);
  }
}

/// `input:I` or `stage:S:R`.
static std::string valueText(const StageValue &value) {
  if (value.kind == StageValue::Kind::Input)
    return "input:" + std::to_string(value.index);
  return "stage:" + std::to_string(value.index) + ":" + std::to_string(value.result);
}

std::string buildManifest(const ModelSignature &signature, const TargetOptions &options,
                          llvm::TargetMachine &machine, bool cpuCode, const GpuImage *gpu,
                          const PartitionPlan *plan, llvm::ArrayRef<IndexCheck> checks,
                          llvm::ArrayRef<ProfiledKernel> kernels) {
  std::string manifest;
  llvm::raw_string_ostream os(manifest);
  os << "kiln-artifact " << KILN_ARTIFACT_FORMAT_VERSION << "\n"
     << "name " << encodeName(options.functionName) << "\n"
     << "target " << machine.getTargetTriple().str() << "\n";
  if (cpuCode)
    os << "cpu " << machine.getTargetCPU() << "\n"
       << "features" << (requiredFeatures(machine).empty() ? "" : " ")
       << requiredFeatures(machine) << "\n";
  if (plan) {
    // Runtimes that predate partitions refuse the kind by name.
    os << "devices partitioned\n";
    for (const auto &[shortName, fullName] : plan->devices)
      os << "partition " << shortName << " " << fullName << "\n";
    for (auto [index, stage] : llvm::enumerate(plan->stages)) {
      os << "stage " << index << " " << stage.device << " " << stage.args.size();
      for (const StageValue &arg : stage.args)
        os << " " << valueText(arg);
      os << " " << stage.results.size();
      for (const TensorSignature &result : stage.results)
        os << " " << result.dtype << " " << shapeText(result.shape);
      os << "\n";
    }
    for (const StageValue &output : plan->outputs)
      os << "output-from " << valueText(output) << "\n";
  } else {
    os << "devices" << (cpuCode ? " cpu" : "") << (gpu ? " cuda" : "") << "\n";
  }
  if (gpu) {
    os << "cuda-cubin";
    for (const auto &[chip, cubin] : gpu->cubins)
      os << " " << chip;
    os << "\n";
    if (!gpu->ptx.empty())
      os << "cuda-ptx " << gpu->ptxTarget << " " << gpu->ptxIsa << "\n";
    os << "cuda-min-driver " << gpu->minDriver << "\n";
  }
  auto tensor = [&](const char *keyword, const TensorSignature &t) {
    os << keyword << " " << encodeName(t.name) << " " << t.dtype << " " << shapeText(t.shape);
    if (!t.state.empty())
      os << " state=" << t.state;
    if (t.inPlace)
      os << " in-place";
    os << "\n";
  };
  for (const TensorSignature &t : signature.inputs)
    tensor("input", t);
  for (const TensorSignature &t : signature.outputs)
    tensor("output", t);
  for (const EntrySignature &entry : signature.entries) {
    os << "entry " << entry.name << "\n";
    std::string input = "entry-input " + entry.name, output = "entry-output " + entry.name;
    for (const TensorSignature &t : entry.inputs)
      tensor(input.c_str(), t);
    for (const TensorSignature &t : entry.outputs)
      tensor(output.c_str(), t);
  }
  for (const IndexCheck &check : checks)
    os << "index-check " << check.id << " " << check.size << " " << encodeName(check.node) << "\n";
  for (auto [id, kernel] : llvm::enumerate(kernels))
    os << "profile-kernel " << id << " " << encodeName(kernel.function) << " " << kernel.kind << " "
       << encodeName(kernel.nodes) << "\n";
  return manifest;
}

void addManifest(llvm::Module &module, llvm::StringRef text) {
  llvm::Constant *data = llvm::ConstantDataArray::getString(module.getContext(), text, true);
  new llvm::GlobalVariable(module, data->getType(), /*isConstant=*/true,
                           llvm::GlobalValue::ExternalLinkage, data, "kiln_manifest");
}

std::string cpuKernelsArchive() {
  static int anchor;
  std::vector<std::string> candidates;
  std::string self = llvm::sys::fs::getMainExecutable("kilnc", &anchor);
  if (!self.empty()) {
    llvm::SmallString<256> beside(llvm::sys::path::parent_path(llvm::sys::path::parent_path(self)));
    llvm::sys::path::append(beside, "lib", "kiln", "libkiln_cpu_kernels.a");
    candidates.push_back(beside.str().str());
  }
  candidates.push_back(KILN_CPU_KERNELS_ARCHIVE);
  for (const std::string &candidate : candidates)
    if (llvm::sys::fs::exists(candidate))
      return candidate;
  return "";
}

/// Writes an object to a new temporary file through `fill`, adding its path
/// to `paths`.
static llvm::Error writeTemporaryObject(std::vector<llvm::SmallString<128>> &paths,
                                        llvm::function_ref<llvm::Error(llvm::raw_ostream &)> fill) {
  llvm::SmallString<128> &path = paths.emplace_back();
  int fd;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile("kiln", "o", fd, path))
    return llvm::createStringError("cannot create a temporary file: " + ec.message());
  llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
  llvm::Error error = fill(os);
  os.close();
  if (os.has_error()) {
    std::string reason = os.error().message();
    os.clear_error();
    llvm::consumeError(std::move(error));
    return llvm::createStringError("cannot write " + path.str().str() + ": " + reason);
  }
  return error;
}

llvm::Error linkArtifact(llvm::ArrayRef<std::string> objects, llvm::ArrayRef<DataSymbol> data,
                         const llvm::Triple &triple, llvm::StringRef outputPath) {
  std::vector<llvm::SmallString<128>> objectPaths;
  llvm::scope_exit removeObjects([&] {
    for (const auto &path : objectPaths)
      llvm::sys::fs::remove(path);
  });
  for (const std::string &object : objects)
    if (llvm::Error error = writeTemporaryObject(objectPaths, [&](llvm::raw_ostream &os) {
          os << object;
          return llvm::Error::success();
        }))
      return error;
  if (!data.empty())
    if (llvm::Error error = writeTemporaryObject(objectPaths, [&](llvm::raw_ostream &os) {
          return writeDataObject(os, triple, data);
        }))
      return error;
  // Shared libraries generated code may call: libc (malloc), libm (scalar
  // math), libgcc_s (half-precision conversions), the OpenMP
  // runtime (kernels' threads) and OpenBLAS (matmul tiles). --as-needed
  // records only those the object uses; an unresolved symbol is an error
  // here rather than at load time.
  std::vector<std::string> libraries;
  for (llvm::StringRef soname : {"libc.so.6", "libm.so.6", "libgcc_s.so.1", "libomp.so.5",
                                 "libopenblas.so.0", "libdnnl.so.2"})
    for (llvm::StringRef dir : {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64",
                                "/usr/lib/llvm-22/lib"}) {
      std::string candidate = (dir + "/" + soname).str();
      if (llvm::sys::fs::exists(candidate)) {
        libraries.push_back(candidate);
        break;
      }
    }
  // The linked image goes to a temporary file; the artifact is that image
  // and its seal, written to `outputPath` atomically.
  llvm::SmallString<128> imagePath;
  if (std::error_code ec = llvm::sys::fs::createTemporaryFile("kiln", "so", imagePath))
    return llvm::createStringError("cannot create a temporary file: " + ec.message());
  std::string output = imagePath.str().str();
  std::vector<const char *> args = {"ld.lld", "-shared", "-o", output.c_str(), "-z", "noexecstack",
                                    "-z", "now", "--no-undefined", "--as-needed"};
  for (auto &path : objectPaths)
    args.push_back(path.c_str());
  // Members are pulled in only for the calls the object makes.
  std::string kernels = cpuKernelsArchive();
  if (!kernels.empty())
    args.push_back(kernels.c_str());
  for (const std::string &library : libraries)
    args.push_back(library.c_str());
  std::string messages;
  llvm::raw_string_ostream errs(messages);
  std::string ignored;
  llvm::raw_string_ostream outs(ignored);
  lld::Result result = lld::lldMain(args, outs, errs, {{lld::Gnu, &lld::elf::link}});
  llvm::scope_exit removeImage([&] { llvm::sys::fs::remove(imagePath); });
  if (result.retCode != 0)
    return llvm::createStringError("linking the artifact failed: " + llvm::StringRef(messages).trim().str());
  // The image is mapped, not read: for a model of large weights it is most
  // of the bytes kilnc handles.
  auto image = llvm::MemoryBuffer::getFile(output, /*IsText=*/false,
                                           /*RequiresNullTerminator=*/false);
  if (!image)
    return llvm::createStringError("cannot read the linked artifact: " + image.getError().message());
  std::string_view bytes((*image)->getBufferStart(), (*image)->getBufferSize());
  try {
    std::string seal = rt::sealFor(bytes);
    rt::replaceAtomically(outputPath.str(), [&](rt::FileWriter &out) {
      out.write(bytes);
      out.write(seal);
    });
  } catch (const rt::Error &e) {
    return llvm::createStringError(e.what());
  }
  return llvm::Error::success();
}

static std::string cIdentifier(llvm::StringRef name) {
  std::string out;
  for (char c : name)
    out += llvm::isAlnum(c) ? c : '_';
  if (out.empty() || llvm::isDigit(out.front()))
    out = "t_" + out;
  return out;
}

std::string emitHeader(const ModelSignature &signature, const TargetOptions &options) {
  std::string guard = llvm::StringRef(cIdentifier(options.functionName)).upper() + "_H";
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "/* " << options.functionName << ": a model compiled by kilnc.\n"
     << " *\n"
     << " * Link with the artifact (the .kiln file is a shared object) or with the\n"
     << " * object from kilnc --emit=obj and the libraries the artifact lists as\n"
     << " * NEEDED (readelf -d; e.g. -lomp -ldnnl -lm). Every tensor is a dense\n"
     << " * row-major buffer; inputs and outputs must not overlap. */\n"
     << "#ifndef " << guard << "\n#define " << guard << "\n\n#include <stdint.h>\n\n"
     << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
  auto declare = [&](const TensorSignature &t, bool input, const char *kind) {
    std::string id = cIdentifier(t.name);
    os << "/* " << kind << " '" << t.name << "': " << t.dtype << "[" << shapeText(t.shape)
       << "] */\n";
    int64_t count = 1;
    for (int64_t d : t.shape)
      count *= d;
    os << "#define " << guard.substr(0, guard.size() - 2) << "_" << llvm::StringRef(id).upper()
       << "_ELEMENTS " << count << "\n";
    (void)input;
  };
  for (const TensorSignature &t : signature.inputs)
    declare(t, true, "input");
  for (const TensorSignature &t : signature.outputs)
    declare(t, false, "output");
  os << "\nvoid " << options.functionName << "(";
  bool first = true;
  for (const TensorSignature &t : signature.inputs) {
    os << (first ? "" : ", ") << "const " << cType(t.dtype) << " *" << cIdentifier(t.name);
    first = false;
  }
  for (const TensorSignature &t : signature.outputs) {
    os << (first ? "" : ", ") << cType(t.dtype) << " *" << cIdentifier(t.name);
    first = false;
  }
  os << (first ? "void" : "") << ");\n\n#ifdef __cplusplus\n}\n#endif\n\n#endif /* " << guard
     << " */\n";
  return text;
}

} // namespace kiln
