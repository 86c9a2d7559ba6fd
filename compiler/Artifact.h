//===- Artifact.h - Native code and the .kiln artifact --------*- C++ -*-===//
//
// A Kiln artifact is an ELF shared object holding the compiled model
// function, its weights as read-only data, and two symbols for the runtime:
// `kiln_manifest` (text: format version, target, inputs and outputs) and
// `kiln_entry(void **buffers)`, which takes the inputs then the outputs.
// A model partitioned over devices has `kiln_stage_<i>` entries instead,
// one per stage, and the manifest describes the stages (docs/partitions.md).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_ARTIFACT_H
#define KILN_COMPILER_ARTIFACT_H

#include "compiler/DataObject.h"
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
  /// Bits of the vectors loops are vectorized for (128, 256, 512); 0: 512
  /// on CPUs with AVX-512, else LLVM's choice for the CPU.
  unsigned vectorWidth = 0;
};

/// One input or output of the compiled function, from @main's signature.
struct TensorSignature {
  std::string name;
  std::string dtype; // f32, i64, bool, ...
  llvm::SmallVector<int64_t> shape;
  /// The train-step state kind (`kiln.state`: parameter, momentum, step, ...);
  /// empty for ordinary inputs and outputs.
  std::string state;
  /// A state output that the step may write into its input's buffer
  /// (kiln-state-in-place proved it): the manifest says `in-place`.
  bool inPlace = false;
};

/// The signature of @main (inputs, outputs), read from the kiln-level module
/// before lowering, with names from the `kiln.name` attributes.
/// A further entry point of the artifact (a train step's `eval` and `init`):
/// its function, exported as `kiln_entry_<name>`, and signature.
struct EntrySignature {
  std::string name;
  std::vector<TensorSignature> inputs, outputs;
};

struct ModelSignature {
  std::vector<TensorSignature> inputs, outputs;
  /// The functions @eval and @init when the module has them.
  std::vector<EntrySignature> entries;
};

/// The functions besides @main that become entry points of their own.
inline constexpr const char *kExtraEntries[] = {"eval", "init"};

llvm::FailureOr<ModelSignature> readSignature(mlir::ModuleOp module);

/// Where a stage's argument or a graph output comes from: a graph input or
/// a result of an earlier stage.
struct StageValue {
  enum class Kind { Input, Stage } kind = Kind::Input;
  unsigned index = 0;  // the input, or the stage
  unsigned result = 0; // the stage's result
};

/// One stage of a partitioned model: a function compiled for one device.
struct StageSignature {
  std::string function; // its name in the module
  std::string device;   // short device name, "cpu:1"
  std::vector<StageValue> args;
  std::vector<TensorSignature> results;

  bool isGpu() const { return llvm::StringRef(device).starts_with("gpu"); }
};

/// A model split over devices (kiln-form-stages): the devices, the stages in
/// the order @main calls them, and where each graph output comes from.
struct PartitionPlan {
  /// (short name, full name), e.g. ("cpu:1", "/job:localhost/.../device:CPU:1").
  std::vector<std::pair<std::string, std::string>> devices;
  std::vector<StageSignature> stages;
  std::vector<StageValue> outputs;

  bool hasGpu() const;
  bool hasCpu() const;
};

/// The plan of a partitioned @main (calls to stage functions), or nullopt
/// when @main is not partitioned; failure after an error.
llvm::FailureOr<std::optional<PartitionPlan>> readPartitionPlan(mlir::ModuleOp module);

/// Lists @main's state pairs (an input and the output of the same name and
/// state kind) for kiln-state-in-place, as `kiln.state_pairs`: input and
/// output argument numbers once results are out-parameters.
void markStatePairs(mlir::ModuleOp module, const ModelSignature &signature);

/// Marks the outputs kiln-state-in-place proved may share their input's
/// buffer (the module's `kiln.in_place_state`, which it then drops).
void readInPlaceState(mlir::ModuleOp module, ModelSignature &signature);

/// Drops the signature attributes (`kiln.name`, `kiln.state`,
/// `kiln.unsigned`) from every function once the signature is read; the LLVM
/// dialect has no meaning for them.
void stripSignatureNames(mlir::ModuleOp module);

/// Creates the target machine for `options` (host triple), or reports why not.
llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
createTargetMachine(const TargetOptions &options);

/// Whether the target has AVX-512: vectors of 16 floats, which oneDNN's
/// kernels for 16-channel blocks (kiln-blocked-layout) need, and a vector
/// instruction that scales floats by powers of two (vscalefps), so kernels'
/// exp may use llvm.ldexp.
bool hasSixteenLaneVectors(llvm::TargetMachine &machine);

/// Whether the target is an x86 CPU with AVX2 and FMA and without AVX-512:
/// the CPUs on which the runtime's convolutions by constant filters run its
/// own direct kernel (runtime/kernels/DirectConvolution.c) on plain images.
bool hasDirectConvolutionKernel(llvm::TargetMachine &machine);

/// A function of the lowered module that the runtime calls through a
/// `void wrapper(void **buffers)` entry: inputs, then outputs.
struct EntryPoint {
  std::string function; // name in the lowered module
  std::string symbol;   // exported name of the function; empty: keep it
  std::string wrapper;  // exported name of the entry
  size_t buffers = 0;
  /// The bytes of each buffer, recorded in the code as `<wrapper>_buffers`
  /// (count, then sizes) for the runtime to check the manifest against;
  /// empty: no record.
  std::vector<uint64_t> bufferBytes;
  /// Buffers the runtime may pass as one (a state input and its `in-place`
  /// output): they are not `noalias`, as every other buffer is.
  std::vector<size_t> mayAlias;
};

/// The entry of a single-device model: @main renamed to `functionName`,
/// called by `kiln_entry`.
EntryPoint modelEntry(const ModelSignature &signature, const TargetOptions &options);

/// The entries of a train step's @eval and @init: `kiln_entry_<name>`.
std::vector<EntryPoint> extraEntries(const ModelSignature &signature);

/// The entries of a partitioned model's CPU stages: `kiln_stage_<i>`.
std::vector<EntryPoint> stageEntries(const PartitionPlan &plan);

/// Translates an LLVM-dialect module to LLVM IR and adds the entry points.
/// Runs LLVM's O3 pipeline.
llvm::Expected<std::unique_ptr<llvm::Module>>
translateToLLVMIR(mlir::ModuleOp module, llvm::ArrayRef<EntryPoint> entries,
                  llvm::TargetMachine &machine, const TargetOptions &options,
                  llvm::LLVMContext &llvmContext);

/// An LLVM module for `machine` that holds no code, to carry the data of an
/// artifact without CPU code.
std::unique_ptr<llvm::Module> createDataModule(llvm::TargetMachine &machine,
                                               llvm::LLVMContext &llvmContext);

/// The GPU part of an artifact (docs/cuda-artifact.md).
struct GpuImage {
  /// The `kiln_cuda_program` text and the `kiln_cuda_constants` bytes.
  std::string program;
  std::string constants;
  /// (chip, cubin) per target, e.g. ("sm_90", ...).
  std::vector<std::pair<std::string, std::string>> cubins;
  /// The PTX of the lowest target, its architecture ("compute_80") and PTX
  /// ISA version ("7.8").
  std::string ptx, ptxTarget, ptxIsa;
  /// The CUDA driver API version the cubins need.
  int minDriver = 0;
};

/// The GPU symbols: kiln_cuda_program, kiln_cuda_cubin_<chip>, kiln_cuda_ptx
/// and kiln_cuda_constants (`prefix` replaces "kiln_", e.g. "kiln_stage_2_"
/// for a GPU stage of a partitioned model). Their bytes stay in `image`.
std::vector<DataSymbol> gpuImageSymbols(const GpuImage &image,
                                        const std::string &prefix = "kiln_");

/// Defines `symbols` in `module`, for outputs without a data object
/// (--emit=llvm, --emit=obj).
void addData(llvm::Module &module, llvm::ArrayRef<DataSymbol> symbols);

/// A run-time check of a gather's indices (kIndexCheckAttr): its id, the
/// size of the dimension it indexes and its node's name.
struct IndexCheck {
  int64_t id = 0;
  int64_t size = 0;
  std::string node;
};

/// A kernel of the CPU code timed by kiln-profile-kernels (kilnc --profile),
/// in id order: its function, kind (parallel, serial, copy, call) and the
/// ONNX nodes it computes.
struct ProfiledKernel {
  std::string function;
  std::string kind;
  std::string nodes;
};

/// The manifest: format version, signature, the host target, and the device
/// kinds with code (CPU code when `cpuCode`, GPU code when `gpu` is given,
/// a partitioned program when `plan` is), the index checks of its CPU code
/// and the kernels it times.
std::string buildManifest(const ModelSignature &signature, const TargetOptions &options,
                          llvm::TargetMachine &machine, bool cpuCode, const GpuImage *gpu,
                          const PartitionPlan *plan = nullptr,
                          llvm::ArrayRef<IndexCheck> checks = {},
                          llvm::ArrayRef<ProfiledKernel> kernels = {});

/// Adds the `kiln_manifest` symbol.
void addManifest(llvm::Module &module, llvm::StringRef text);

/// Links `objects` (compiler/ObjectCode.h) and an object holding `data`
/// (compiler/DataObject.h, for `triple`) into the shared-object artifact at
/// `outputPath` with the built-in LLD.
llvm::Error linkArtifact(llvm::ArrayRef<std::string> objects, llvm::ArrayRef<DataSymbol> data,
                         const llvm::Triple &triple, llvm::StringRef outputPath);

/// The archive of kernel support code CPU artifacts link
/// (runtime/kernels: matmuls by constant weights), or "" when it is missing:
/// ../lib/kiln/libkiln_cpu_kernels.a beside the running kilnc, else where
/// the build put it.
std::string cpuKernelsArchive();

/// A C header declaring the compiled function for direct linking.
std::string emitHeader(const ModelSignature &signature, const TargetOptions &options);

} // namespace kiln

#endif // KILN_COMPILER_ARTIFACT_H
