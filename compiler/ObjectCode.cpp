//===- ObjectCode.cpp - Native object code for the host module ------------===//
//
// LLVM's code generator is the longest single phase of a CPU compilation
// (ResNet-50: about half of kilnc's time) and runs one function at a time,
// so it is split by function over threads, as LLD's and gold's parallel LTO
// code generation split theirs: each part is a copy of the module holding
// the definitions of its own functions and declarations of everything else,
// moved into an LLVMContext of its own through bitcode, and compiled to an
// object of its own. The linker joins the objects into the artifact.
//
// Every global variable (the manifest, small constants, and the weights
// when they are not in an object of their own: compiler/DataObject.h) stays
// defined in the first part, which is the original module with the other
// parts' function bodies deleted, so no initializer is copied or serialized.
// Symbols that only one part defined as local and another part refers to
// become hidden, so that they resolve within the artifact and are not
// exported from it.
//
//===----------------------------------------------------------------------===//
#include "compiler/ObjectCode.h"

#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Threading.h"
#include "llvm/Transforms/Utils/Cloning.h"
#include "llvm/Transforms/Utils/ValueMapper.h"

#include <algorithm>
#include <atomic>
#include <thread>

namespace kiln {
namespace {

/// Most parts a module is split into. Parts beyond the threads that compile
/// them cost a module copy and a bitcode round trip each, a few percent of
/// their code generation.
constexpr unsigned kMaxParts = 8;
/// Fewest LLVM IR instructions worth a part of their own: below it, copying
/// the module and moving it through bitcode costs about what a second
/// thread saves. Tests lower it to split small models.
llvm::cl::opt<unsigned> minPartInstructions(
    "kiln-codegen-part-instructions", llvm::cl::Hidden, llvm::cl::init(4000),
    llvm::cl::desc("Fewest LLVM IR instructions in a part of the code that kilnc generates on a "
                   "thread of its own"));
/// Bytes of global variable initializers that cost the object writer about
/// as much as one instruction costs the code generator; they weigh on the
/// first part, which holds them all.
constexpr uint64_t kInitializerBytesPerInstruction = 4096;

/// Gives every large constant array of numbers (a layer's weights) the same
/// bytes as an array of i8, which the object writer copies in one piece
/// where it writes a float array one element at a time (ResNet-50: 25
/// million). Only code that is already generated reads them, through
/// pointers, so their element type no longer matters.
void weightsAsBytes(llvm::Module &module) {
  constexpr uint64_t kMinBytes = 4096;
  llvm::Type *byte = llvm::Type::getInt8Ty(module.getContext());
  for (llvm::GlobalVariable &global : llvm::make_early_inc_range(module.globals())) {
    auto *data = llvm::dyn_cast_or_null<llvm::ConstantDataSequential>(
        global.hasInitializer() ? global.getInitializer() : nullptr);
    if (!data || !global.isConstant() || data->getElementType() == byte ||
        data->getRawDataValues().size() < kMinBytes)
      continue;
    llvm::StringRef raw = data->getRawDataValues();
    auto *bytes = new llvm::GlobalVariable(
        module, llvm::ArrayType::get(byte, raw.size()), /*isConstant=*/true, global.getLinkage(),
        llvm::ConstantDataArray::getRaw(raw, raw.size(), byte), "", &global,
        global.getThreadLocalMode(), global.getAddressSpace());
    bytes->copyAttributesFrom(&global);
    bytes->setAlignment(global.getPointerAlignment(module.getDataLayout()));
    bytes->takeName(&global);
    global.replaceAllUsesWith(bytes);
    global.eraseFromParent();
  }
}

/// Runs the code generator over `module` into an object.
llvm::Expected<std::string> generate(llvm::Module &module, llvm::TargetMachine &machine) {
  llvm::SmallString<0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::legacy::PassManager pm;
  if (machine.addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile))
    return llvm::createStringError("the target cannot emit object files");
  pm.run(module);
  return std::string(buffer.str());
}

uint64_t instructionCount(const llvm::Function &function) {
  uint64_t count = 0;
  for (const llvm::BasicBlock &block : function)
    count += block.size();
  return count;
}

/// The global values `constant` refers to, through constant expressions and
/// aggregates, into `refs`.
void collectReferences(const llvm::Constant *constant,
                       llvm::SmallPtrSetImpl<const llvm::Constant *> &visited,
                       llvm::SmallPtrSetImpl<llvm::GlobalValue *> &refs) {
  if (!visited.insert(constant).second)
    return;
  if (auto *global = llvm::dyn_cast<llvm::GlobalValue>(constant)) {
    refs.insert(const_cast<llvm::GlobalValue *>(global));
    return;
  }
  for (const llvm::Use &operand : constant->operands())
    collectReferences(llvm::cast<llvm::Constant>(operand.get()), visited, refs);
}

/// The global values the definition of `global` refers to.
llvm::SmallPtrSet<llvm::GlobalValue *, 16> referencesOf(const llvm::GlobalValue &global) {
  llvm::SmallPtrSet<llvm::GlobalValue *, 16> refs;
  llvm::SmallPtrSet<const llvm::Constant *, 32> visited;
  if (auto *function = llvm::dyn_cast<llvm::Function>(&global)) {
    for (const llvm::BasicBlock &block : *function)
      for (const llvm::Instruction &inst : block)
        for (const llvm::Use &operand : inst.operands())
          if (auto *constant = llvm::dyn_cast<llvm::Constant>(operand.get()))
            collectReferences(constant, visited, refs);
  } else if (auto *variable = llvm::dyn_cast<llvm::GlobalVariable>(&global)) {
    if (variable->hasInitializer())
      collectReferences(variable->getInitializer(), visited, refs);
  } else if (auto *alias = llvm::dyn_cast<llvm::GlobalAlias>(&global)) {
    collectReferences(alias->getAliasee(), visited, refs);
  }
  return refs;
}

/// Makes `global`, defined in one part and referred to from another, a
/// symbol the linker resolves across objects but does not export.
void externalize(llvm::GlobalValue &global) {
  if (global.hasLocalLinkage()) {
    global.setLinkage(llvm::GlobalValue::ExternalLinkage);
    global.setVisibility(llvm::GlobalValue::HiddenVisibility);
  }
  if (!global.hasName())
    global.setName("kiln.part.symbol");
}

/// Which part defines each function, balanced by instruction count (the
/// largest functions first, each to the part with the least so far; the
/// first part starts with the weight of the module's initializers). Global
/// variables and aliases are all in part 0.
struct Partition {
  unsigned parts = 1;
  llvm::DenseMap<const llvm::GlobalValue *, unsigned> home;
  std::vector<uint64_t> load;

  unsigned homeOf(const llvm::GlobalValue *global) const { return home.lookup(global); }
};

Partition partition(llvm::Module &module) {
  std::vector<std::pair<uint64_t, llvm::Function *>> functions;
  uint64_t total = 0;
  for (llvm::Function &function : module)
    if (!function.isDeclaration()) {
      functions.push_back({instructionCount(function), &function});
      total += functions.back().first;
    }
  uint64_t initializerBytes = 0;
  for (llvm::GlobalVariable &global : module.globals())
    if (global.hasInitializer())
      initializerBytes += module.getDataLayout().getTypeAllocSize(global.getValueType());

  Partition result;
  uint64_t most = std::max<uint64_t>(1, std::min<uint64_t>(kMaxParts, functions.size()));
  result.parts = static_cast<unsigned>(
      std::clamp<uint64_t>(total / std::max(1u, minPartInstructions.getValue()), 1, most));
  result.load.assign(result.parts, 0);
  result.load[0] = initializerBytes / kInitializerBytesPerInstruction;
  // Names break ties, so the split depends on the module alone.
  llvm::sort(functions, [](const auto &a, const auto &b) {
    return a.first != b.first ? a.first > b.first : a.second->getName() < b.second->getName();
  });
  for (const auto &[count, function] : functions) {
    unsigned part = std::min_element(result.load.begin(), result.load.end()) - result.load.begin();
    result.home[function] = part;
    result.load[part] += count;
  }
  return result;
}

} // namespace

llvm::Expected<std::string> emitObject(llvm::Module &module, llvm::TargetMachine &machine) {
  weightsAsBytes(module);
  return generate(module, machine);
}

unsigned defaultCodegenThreads() {
  return std::max(1u, llvm::hardware_concurrency().compute_thread_count());
}

llvm::Expected<std::vector<std::string>>
emitObjects(llvm::Module &module, TargetMachineFactory createMachine, unsigned threads) {
  weightsAsBytes(module);
  Partition split = partition(module);
  unsigned workers = std::max(1u, std::min(threads, split.parts));
  std::vector<std::unique_ptr<llvm::TargetMachine>> machines;
  for (unsigned i = 0; i < workers; ++i) {
    auto machine = createMachine();
    if (!machine)
      return machine.takeError();
    machines.push_back(std::move(*machine));
  }
  if (split.parts == 1) {
    auto object = generate(module, *machines.front());
    if (!object)
      return object.takeError();
    return std::vector<std::string>{std::move(*object)};
  }

  // A symbol one part defines and another refers to must be visible to the
  // linker; everything else keeps its linkage.
  for (llvm::GlobalValue &global : module.global_values()) {
    if (global.isDeclaration())
      continue;
    unsigned part = split.homeOf(&global);
    for (llvm::GlobalValue *ref : referencesOf(global))
      if (!ref->isDeclaration() && split.homeOf(ref) != part)
        externalize(*ref);
  }

  // Parts 1.. leave for contexts of their own as bitcode.
  std::vector<std::string> bitcode(split.parts);
  for (unsigned part = 1; part < split.parts; ++part) {
    llvm::ValueToValueMapTy map;
    std::unique_ptr<llvm::Module> copy =
        llvm::CloneModule(module, map, [&](const llvm::GlobalValue *global) {
          return llvm::isa<llvm::Function>(global) && split.homeOf(global) == part;
        });
    // Appending globals (llvm.used, llvm.global_ctors) belong to part 0 and
    // cannot be declared.
    for (llvm::GlobalVariable &global : llvm::make_early_inc_range(copy->globals()))
      if (global.isDeclaration() && global.getName().starts_with("llvm.") && global.use_empty())
        global.eraseFromParent();
    llvm::raw_string_ostream os(bitcode[part]);
    llvm::WriteBitcodeToFile(*copy, os);
  }
  for (llvm::Function &function : module)
    if (!function.isDeclaration() && split.homeOf(&function) != 0) {
      llvm::GlobalValue::VisibilityTypes visibility = function.getVisibility();
      function.deleteBody();
      function.setComdat(nullptr); // a declaration is in no comdat
      function.setVisibility(visibility);
    }

  // The largest parts start first.
  std::vector<unsigned> order(split.parts);
  for (unsigned part = 0; part < split.parts; ++part)
    order[part] = part;
  llvm::stable_sort(order, [&](unsigned a, unsigned b) { return split.load[a] > split.load[b]; });
  std::vector<std::string> objects(split.parts), errors(split.parts);
  std::atomic<unsigned> next{0};
  auto work = [&](llvm::TargetMachine &machine) {
    for (unsigned i = next++; i < split.parts; i = next++) {
      unsigned part = order[i];
      llvm::LLVMContext context;
      std::unique_ptr<llvm::Module> parsed;
      llvm::Module *target = &module;
      if (part != 0) {
        std::string name = "kiln-part-" + std::to_string(part);
        auto read = llvm::parseBitcodeFile(llvm::MemoryBufferRef(bitcode[part], name), context);
        if (!read) {
          errors[part] = llvm::toString(read.takeError());
          continue;
        }
        parsed = std::move(*read);
        target = parsed.get();
      }
      auto object = generate(*target, machine);
      if (object)
        objects[part] = std::move(*object);
      else
        errors[part] = llvm::toString(object.takeError());
    }
  };
  std::vector<std::thread> pool;
  for (unsigned i = 1; i < workers; ++i)
    pool.emplace_back(work, std::ref(*machines[i]));
  work(*machines.front());
  for (std::thread &thread : pool)
    thread.join();
  for (auto [part, error] : llvm::enumerate(errors))
    if (!error.empty())
      return llvm::createStringError("generating code for part " + std::to_string(part) + " of " +
                                     std::to_string(split.parts) + " failed: " + error);
  return objects;
}

} // namespace kiln
