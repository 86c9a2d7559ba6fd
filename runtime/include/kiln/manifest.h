// Parser for the text manifest (kiln_manifest) that every Kiln artifact embeds.
#ifndef KILN_MANIFEST_H
#define KILN_MANIFEST_H

#include "kiln/tensor.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::rt {

struct TensorSpec {
  std::string name; // decoded
  DType dtype = KILN_DTYPE_INVALID;
  std::vector<int64_t> dims;
  // Train steps: the state kind ("parameter", "momentum", "step", ...) of a tensor that the
  // step reads and writes back under the same name; empty otherwise.
  std::string state;
  // A state output that the step may write into its input's buffer (`in-place` in the
  // manifest): resident state then keeps one buffer for the pair, updated in place.
  bool inPlace = false;

  std::string typeString() const { return kiln::rt::typeString(dtype, dims); }
  // Bytes of a dense tensor of this type (Error when the element count overflows).
  uint64_t byteSize() const { return static_cast<uint64_t>(checkedNumElements(dims, name)) * dtypeSize(dtype); }
};

// Where a stage argument or a graph output of a partitioned artifact comes from.
struct StageValueRef {
  enum class Kind { Input, Stage } kind = Kind::Input;
  int index = 0;  // graph input, or stage
  int result = 0; // the stage's result
};

// One stage of a partitioned artifact: the function kiln_stage_<index>, run on `device`.
struct StageSpec {
  std::string device; // "cpu:1", one of Manifest::partitions
  std::vector<StageValueRef> args;
  std::vector<TensorSpec> results;
};

// A device a partitioned artifact runs on.
struct PartitionDevice {
  std::string name;     // "cpu:1"
  std::string fullName; // "/job:localhost/replica:0/task:0/device:CPU:1"
  bool gpu = false;     // the kind and number of `name`
  int index = 0;
};

// A run-time check of the indices a node gathers by (CPU code; see kilnc --no-index-checks):
// a failed check is recorded in the artifact's kiln_index_check global as id + 1.
struct IndexCheckSpec {
  int64_t id = 0;
  int64_t size = 0;  // of the dimension indexed: valid indices are [-size, size)
  std::string node;  // decoded
};

// A kernel timed by CPU code compiled with kilnc --profile: its nanoseconds and calls are at
// 2 * id and 2 * id + 1 of the artifact's kiln_kernel_profile global.
struct ProfiledKernelSpec {
  std::string function; // decoded: "main", "eval", ...
  std::string kind;     // "parallel", "serial", "copy" or "call"
  std::string nodes;    // decoded: the ONNX nodes it computes
};

// A further entry point of an artifact (a train step's `eval` and `init`), exported as
// kiln_entry_<name>, with its own signature.
struct EntrySpec {
  std::string name;
  std::vector<TensorSpec> inputs, outputs;
};

struct Manifest {
  int version = 0;
  std::string name;
  std::string target;
  std::string cpu;
  std::vector<std::string> features; // as written, e.g. "avx2"
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  // Entries besides the main one, in manifest order.
  std::vector<EntrySpec> entries;

  // GPU records (docs/cuda-artifact.md). `devices` holds the kinds with code as written ("cpu",
  // "cuda"); a manifest without a devices record is a CPU artifact, {"cpu"}.
  std::vector<std::string> devices{"cpu"};
  std::vector<std::string> cudaCubins; // "sm_80", "sm_90"
  std::string cudaPtxTarget;           // "compute_80"; empty when the artifact has no PTX
  std::string cudaPtxIsa;              // "7.8"
  int cudaMinDriver = 0;               // cuDriverGetVersion value; 0 when not given

  // Partitioned artifacts (devices record "partitioned", docs/partitions.md): the devices, the
  // stages in an order every device can run its own stages in, and each output's source.
  std::vector<PartitionDevice> partitions;
  std::vector<StageSpec> stages;
  std::vector<StageValueRef> outputSources;

  std::vector<IndexCheckSpec> indexChecks;
  std::vector<ProfiledKernelSpec> profiledKernels; // in id order

  bool hasDevice(std::string_view kind) const;
  // "cpu", "cuda", "cpu,cuda", "partitioned".
  std::string deviceList() const;
};

// The manifest is well-formed but written in a format version this runtime does not read.
class ManifestVersionError : public Error {
public:
  using Error::Error;
};

// Parses manifest text. `source` (usually the artifact path) prefixes every error, e.g.
// "model.kiln: manifest line 4: unknown dtype 'f33'". Throws ManifestVersionError for format
// versions other than KILN_ARTIFACT_FORMAT_VERSION; ignores unknown record keywords.
Manifest parseManifest(std::string_view text, const std::string &source);

// The manifest of stage `index` of a partitioned artifact, as a GPU executor reads it: the
// stage's arguments as inputs, its results as outputs, and the artifact's cuda records.
Manifest stageManifest(const Manifest &manifest, int index);

// The manifest a train step's further entry (init, eval) is read against, as a GPU program of its
// own: the artifact's records with the entry's inputs and outputs as the signature.
Manifest entryManifest(const Manifest &manifest, const EntrySpec &entry);

// Index of the spec called `name` (decoded), or -1.
int findSpec(const std::vector<TensorSpec> &specs, std::string_view name);

// `text` with bytes outside printable ASCII replaced by '?', for messages that
// quote a possibly corrupt file.
std::string printable(std::string_view text);

// The whitespace-separated (spaces, tabs) words of one line of a manifest or a GPU program.
std::vector<std::string_view> splitFields(std::string_view line);

// The lines of a manifest or a GPU program, without their '\n' or "\r\n"; text that does not end
// in a newline still has its last line (so line i + 1 is the i-th entry).
std::vector<std::string_view> splitLines(std::string_view text);

// Undoes the manifest's percent-encoding ("a%20b" -> "a b"); throws Error on a bad escape.
std::string percentDecode(std::string_view text, const std::string &context);
// The inverse, for tools that write manifests (space, '%' and bytes outside 0x21..0x7e).
std::string percentEncode(std::string_view text);

} // namespace kiln::rt

#endif // KILN_MANIFEST_H
