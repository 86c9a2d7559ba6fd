// GPU artifacts without a GPU: device strings, the kiln_cuda_program format and the choice of GPU code.
//
// Everything here is a pure function of its arguments, so tools can inspect GPU artifacts and
// tests can check every rule on machines without a GPU. The format is docs/cuda-artifact.md.
#ifndef KILN_CUDA_PROGRAM_H
#define KILN_CUDA_PROGRAM_H

#include "kiln/manifest.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace kiln::rt {

// --- Device strings ------------------------------------------------------------------------------

struct DeviceSpec {
  enum class Kind { Default, Cpu, Gpu };
  Kind kind = Kind::Default;
  int index = 0; // GPU ordinal
};

// "" -> Default, "cpu", "gpu" (= "gpu:0"), "gpu:N"; nullopt for anything else.
std::optional<DeviceSpec> parseDeviceString(std::string_view text);

// --- CUDA architectures and versions -------------------------------------------------------------

// "sm_90", "sm_90a", "compute_80": compute capability 9.0 / 9.0 arch-specific / 8.0.
struct CudaArch {
  int major = 0;
  int minor = 0;
  char suffix = 0; // 0, 'a' (runs on exactly this capability) or 'f' (this family)

  std::string name(const char *prefix) const; // "sm_90a"
};
// `prefix` is "sm_" or "compute_"; nullopt when `text` is not PREFIX<digits>[a|f].
std::optional<CudaArch> parseCudaArch(std::string_view text, std::string_view prefix);

// The oldest CUDA driver (cuDriverGetVersion's 1000 * major + 10 * minor) that loads PTX of ISA
// `major.minor`, from NVIDIA's PTX ISA release history; 0 when this runtime does not know the ISA
// (newer than it), in which case the driver decides at load.
int ptxIsaMinDriver(int major, int minor);

// 13000 -> "13.0", 12080 -> "12.8".
std::string formatDriverVersion(int version);

// --- Choosing the code for a GPU -----------------------------------------------------------------

struct CudaImageChoice {
  enum class Kind { Cubin, Ptx, None };
  Kind kind = Kind::None;
  std::string arch;    // "sm_90" for a cubin, "compute_80" for PTX
  std::string refusal; // for None: why, e.g. "the artifact has code for sm_90 only and no PTX (...)"
};

// The contract's three steps for a GPU of compute capability ccMajor.ccMinor under a driver of
// version `driverVersion`: the cubin for exactly sm_XY, else the highest cubin of the same major
// and a lower minor, else the PTX if its target is not newer than the GPU and the driver is new
// enough for its ISA ("8.5"). `cubins` are the manifest's cuda-cubin names, `ptxTarget` and `ptxIsa`
// its cuda-ptx fields ("" when the artifact has no PTX). Names that do not parse are ignored (the
// manifest parser has rejected them already).
CudaImageChoice chooseCudaImage(int ccMajor, int ccMinor, int driverVersion,
                                const std::vector<std::string> &cubins, const std::string &ptxTarget,
                                const std::string &ptxIsa);

// --- The GPU program (kiln_cuda_program) ---------------------------------------------------------

struct BufferRef {
  enum class Kind { None, Input, Output, Arena, Constant };
  Kind kind = Kind::None;
  uint64_t value = 0; // input/output index, or byte offset into the arena/constants

  std::string str() const; // "in:0", "arena:256", "-"
};

struct CudaLaunch {
  std::string kernel;
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t sharedBytes = 0;
  std::vector<BufferRef> args;
};

struct CudaMatmul {
  enum class Math { F32, TF32 };
  enum class Epilogue { None, Relu };
  DType dtype = KILN_DTYPE_F32; // f32, f16 or bf16
  Math math = Math::F32;
  int64_t batch = 1, m = 1, n = 1, k = 1;
  BufferRef lhs, rhs, out, bias, addend;
  bool lhsTransposed = false, lhsBatched = false;
  bool rhsTransposed = false, rhsBatched = false;
  Epilogue epilogue = Epilogue::None;
  // Where each matrix's elements are, in elements of its buffer: row r of matrix b starts at
  // b * batchStride + r * ld (rows as stored, so a transposed operand's rows are its columns);
  // columns are consecutive. The record's *_ld and *_batch_stride fields, dense when absent.
  int64_t lhsLd = 0, lhsBatchStride = 0, rhsLd = 0, rhsBatchStride = 0;
  int64_t outLd = 0, outBatchStride = 0, addendLd = 0, addendBatchStride = 0;
  // The product is scaled by alpha before the addend and bias are added.
  float alpha = 1.0f;
};

struct CudaCopy {
  BufferRef dst, src;
  uint64_t bytes = 0;
};

// A data-parallel step's collectives: `all-reduce-start` hands `count` f32 at `data` to the sum
// over the replicas (bucket `bucket`), `all-reduce-wait` makes the stream wait for that sum, and
// `world-size` / `replica-rank` write the number of replicas (f32) / this replica's rank (i64)
// to `data` (count 1).
struct CudaCollective {
  enum class Kind { Start, Wait, WorldSize, Rank };
  Kind kind = Kind::Start;
  int64_t bucket = 0;
  BufferRef data;
  uint64_t count = 1;
};

struct CudaRecord {
  int line = 0;     // in kiln_cuda_program, for messages
  std::string node; // decoded; empty when the record names no node
  std::variant<CudaLaunch, CudaMatmul, CudaCopy, CudaCollective> op;

  // "kernel 'kiln_k0' (program line 4, node=Conv_0)", "matmul (program line 5, node=Gemm_0)",
  // "copy (program line 6)".
  std::string describe() const;
};

struct CudaProgram {
  int version = 0;
  uint64_t arenaBytes = 0;
  uint64_t constantBytes = 0;
  std::vector<CudaRecord> records;

  std::size_t count(std::size_t variantIndex) const; // records holding that alternative
  std::size_t launches() const { return count(0); }
  std::size_t matmuls() const { return count(1); }
  std::size_t copies() const { return count(2); }
  std::size_t collectives() const { return count(3); }
};

// The program is well-formed but of a version this runtime does not read.
class CudaProgramVersionError : public Error {
public:
  using Error::Error;
};

// Parses and checks a program against the artifact's signature: every record and field known,
// present once and well-formed (node= may be left out), every buffer reference inside its region (input and output
// sizes from `manifest`), every byte a matmul or copy touches inside its buffer. Errors are one
// line, "SOURCE: cuda program line N: ...". Throws CudaProgramVersionError for versions other
// than 1.
CudaProgram parseCudaProgram(std::string_view text, const std::string &source, const Manifest &manifest);

// The alignment of every device buffer and of every arena and constant offset.
constexpr uint64_t kCudaBufferAlignment = 256;

} // namespace kiln::rt

#endif // KILN_CUDA_PROGRAM_H
