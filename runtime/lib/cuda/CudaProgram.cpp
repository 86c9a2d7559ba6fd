// Pure parts of the GPU back end: device strings, CUDA architectures, image choice, program parser.
#include "kiln/cuda_program.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace kiln::rt {
namespace {

bool parseUnsigned(std::string_view text, uint64_t &value) {
  value = 0;
  if (text.empty() || text.size() > 20)
    return false;
  for (char c : text) {
    if (c < '0' || c > '9')
      return false;
    uint64_t digit = static_cast<uint64_t>(c - '0');
    if (value > (UINT64_MAX - digit) / 10)
      return false;
    value = value * 10 + digit;
  }
  return true;
}

std::string joinAnd(const std::vector<std::string> &items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i)
    out += (i == 0 ? "" : i + 1 == items.size() ? " and " : ", ") + items[i];
  return out;
}

} // namespace

// --- Device strings ------------------------------------------------------------------------------

std::optional<DeviceSpec> parseDeviceString(std::string_view text) {
  DeviceSpec spec;
  if (text.empty())
    return spec;
  if (text == "cpu") {
    spec.kind = DeviceSpec::Kind::Cpu;
    return spec;
  }
  if (text == "gpu") {
    spec.kind = DeviceSpec::Kind::Gpu;
    return spec;
  }
  if (text.substr(0, 4) != "gpu:")
    return std::nullopt;
  uint64_t index;
  // No leading zeros or signs: "gpu:01" is more likely a typo than a request for gpu:1.
  std::string_view digits = text.substr(4);
  if (!parseUnsigned(digits, index) || index > 1023 || (digits.size() > 1 && digits[0] == '0'))
    return std::nullopt;
  spec.kind = DeviceSpec::Kind::Gpu;
  spec.index = static_cast<int>(index);
  return spec;
}

// --- CUDA architectures and versions -------------------------------------------------------------

std::string CudaArch::name(const char *prefix) const {
  std::string out = prefix + std::to_string(major * 10 + minor);
  if (suffix)
    out += suffix;
  return out;
}

std::optional<CudaArch> parseCudaArch(std::string_view text, std::string_view prefix) {
  if (text.substr(0, prefix.size()) != prefix)
    return std::nullopt;
  std::string_view rest = text.substr(prefix.size());
  CudaArch arch;
  if (!rest.empty() && (rest.back() == 'a' || rest.back() == 'f')) {
    arch.suffix = rest.back();
    rest.remove_suffix(1);
  }
  uint64_t number;
  if (rest.size() < 2 || rest.size() > 4 || !parseUnsigned(rest, number) || rest[0] == '0')
    return std::nullopt;
  arch.major = static_cast<int>(number / 10);
  arch.minor = static_cast<int>(number % 10);
  return arch;
}

int ptxIsaMinDriver(int major, int minor) {
  // NVIDIA's PTX ISA release history: the CUDA release that introduced each ISA version.
  static const std::map<std::pair<int, int>, int> kTable = {
      {{6, 0}, 9000},   {{6, 1}, 9010},   {{6, 2}, 9020},   {{6, 3}, 10000},  {{6, 4}, 10010},
      {{6, 5}, 10020},  {{7, 0}, 11000},  {{7, 1}, 11010},  {{7, 2}, 11020},  {{7, 3}, 11030},
      {{7, 4}, 11040},  {{7, 5}, 11050},  {{7, 6}, 11060},  {{7, 7}, 11070},  {{7, 8}, 11080},
      {{8, 0}, 12000},  {{8, 1}, 12010},  {{8, 2}, 12020},  {{8, 3}, 12030},  {{8, 4}, 12040},
      {{8, 5}, 12050},  {{8, 6}, 12070},  {{8, 7}, 12080},  {{8, 8}, 12090},  {{9, 0}, 13000},
      {{9, 1}, 13010},
  };
  auto found = kTable.find({major, minor});
  if (found != kTable.end())
    return found->second;
  // Older than the table: every driver that runs Kiln's targets loads it.
  return std::make_pair(major, minor) < kTable.begin()->first ? kTable.begin()->second : 0;
}

std::string formatDriverVersion(int version) {
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

// --- Choosing the code for a GPU -----------------------------------------------------------------

CudaImageChoice chooseCudaImage(int ccMajor, int ccMinor, int driverVersion,
                                const std::vector<std::string> &cubins, const std::string &ptxTarget,
                                const std::string &ptxIsa) {
  CudaImageChoice choice;
  std::string device = "sm_" + std::to_string(ccMajor * 10 + ccMinor);

  // 1. The cubin for exactly this GPU (plain, arch-specific or family: all run on their own SM).
  for (const std::string &name : cubins) {
    std::optional<CudaArch> arch = parseCudaArch(name, "sm_");
    if (arch && arch->major == ccMajor && arch->minor == ccMinor) {
      choice.kind = CudaImageChoice::Kind::Cubin;
      choice.arch = name;
      return choice;
    }
  }
  // 2. The highest lower minor of the same major; arch-specific ("a") code runs on its SM only.
  int bestMinor = -1;
  for (const std::string &name : cubins) {
    std::optional<CudaArch> arch = parseCudaArch(name, "sm_");
    if (arch && arch->suffix != 'a' && arch->major == ccMajor && arch->minor < ccMinor &&
        arch->minor > bestMinor) {
      bestMinor = arch->minor;
      choice.arch = name;
    }
  }
  if (bestMinor >= 0) {
    choice.kind = CudaImageChoice::Kind::Cubin;
    return choice;
  }
  choice.arch.clear();

  // 3. The PTX, compiled by the driver, if the GPU has everything its target assumes.
  std::string holds;
  if (!cubins.empty())
    holds = "code for " + joinAnd(cubins);
  std::string recompile = "recompile with kilnc --target=cuda:" + device;
  std::optional<CudaArch> ptx = ptxTarget.empty() ? std::nullopt : parseCudaArch(ptxTarget, "compute_");
  if (!ptx) {
    choice.refusal = "the artifact has " + (holds.empty() ? "no GPU code" : holds + " only") +
                     " and no PTX (" + recompile + ")";
    return choice;
  }
  bool targetFits = std::make_pair(ptx->major, ptx->minor) <= std::make_pair(ccMajor, ccMinor) &&
                    (ptx->suffix != 'a' || (ptx->major == ccMajor && ptx->minor == ccMinor));
  std::string withPtx = "the artifact has " + (holds.empty() ? "" : holds + (cubins.size() > 1 ? ", and " : " and ")) +
                        "PTX for " + ptxTarget;
  if (!targetFits) {
    choice.refusal = withPtx + ", newer than the GPU (" + recompile + ")";
    return choice;
  }
  std::size_t dot = ptxIsa.find('.');
  int isaMajor = dot == std::string::npos ? 0 : std::atoi(ptxIsa.substr(0, dot).c_str());
  int isaMinor = dot == std::string::npos ? 0 : std::atoi(ptxIsa.substr(dot + 1).c_str());
  int needed = ptxIsaMinDriver(isaMajor, isaMinor);
  if (needed > driverVersion) {
    choice.refusal = withPtx + " of PTX ISA " + ptxIsa + ", which needs a CUDA " +
                     formatDriverVersion(needed) + " driver; this driver is CUDA " +
                     formatDriverVersion(driverVersion) + " (update the NVIDIA driver or " + recompile + ")";
    return choice;
  }
  choice.kind = CudaImageChoice::Kind::Ptx;
  choice.arch = ptxTarget;
  return choice;
}

// --- The GPU program -----------------------------------------------------------------------------

std::string BufferRef::str() const {
  switch (kind) {
  case Kind::None: return "-";
  case Kind::Input: return "in:" + std::to_string(value);
  case Kind::Output: return "out:" + std::to_string(value);
  case Kind::Arena: return "arena:" + std::to_string(value);
  case Kind::Constant: return "const:" + std::to_string(value);
  }
  return "?";
}

static const char *collectiveRecordName(CudaCollective::Kind kind) {
  switch (kind) {
  case CudaCollective::Kind::Start: return "all-reduce-start";
  case CudaCollective::Kind::Wait: return "all-reduce-wait";
  case CudaCollective::Kind::WorldSize: return "world-size";
  case CudaCollective::Kind::Rank: return "replica-rank";
  }
  return "?";
}

std::string CudaRecord::describe() const {
  std::string what;
  if (const auto *launch = std::get_if<CudaLaunch>(&op))
    what = "kernel '" + launch->kernel + "'";
  else if (std::holds_alternative<CudaMatmul>(op))
    what = "matmul";
  else if (const auto *collective = std::get_if<CudaCollective>(&op))
    what = collectiveRecordName(collective->kind);
  else
    what = "copy";
  return what + " (program line " + std::to_string(line) + (node.empty() ? "" : ", node=" + node) + ")";
}

std::size_t CudaProgram::count(std::size_t variantIndex) const {
  return static_cast<std::size_t>(std::count_if(records.begin(), records.end(), [&](const CudaRecord &record) {
    return record.op.index() == variantIndex;
  }));
}

namespace {

class ProgramParser {
public:
  ProgramParser(const std::string &source, const Manifest &manifest) : source_(source), manifest_(manifest) {
    for (const TensorSpec &spec : manifest.inputs)
      inputBytes_.push_back(spec.byteSize());
    for (const TensorSpec &spec : manifest.outputs)
      outputBytes_.push_back(spec.byteSize());
  }

  CudaProgram parse(std::string_view text) {
    CudaProgram program;
    bool sawHeader = false, sawArena = false, sawConstants = false;
    for (std::string_view line : splitLines(text)) {
      ++line_;
      std::vector<std::string_view> words = splitFields(line);
      if (words.empty() || words[0][0] == '#')
        continue;
      std::string_view keyword = words[0];

      if (!sawHeader) {
        if (keyword != "kiln-cuda-program" || words.size() != 2)
          fail("expected 'kiln-cuda-program VERSION' first, got '" + printable(line.substr(0, 60)) + "'");
        uint64_t version;
        if (!parseUnsigned(words[1], version) || version > INT32_MAX)
          fail("bad program version '" + printable(words[1]) + "'");
        program.version = static_cast<int>(version);
        if (version != 1)
          throw CudaProgramVersionError(source_ + ": cuda program version " + std::to_string(version) +
                                        " is not supported by this runtime (reads version 1)");
        sawHeader = true;
        continue;
      }
      if (keyword == "kiln-cuda-program")
        fail("second 'kiln-cuda-program' header");
      if (keyword == "arena" || keyword == "constants") {
        bool &seen = keyword == "arena" ? sawArena : sawConstants;
        if (seen)
          fail("duplicate '" + std::string(keyword) + "' record");
        seen = true;
        uint64_t bytes;
        if (words.size() != 2 || !parseUnsigned(words[1], bytes) || bytes > (uint64_t(1) << 48))
          fail("expected '" + std::string(keyword) + " BYTES'");
        (keyword == "arena" ? program.arenaBytes : program.constantBytes) = bytes;
        continue;
      }
      CudaRecord record;
      record.line = line_;
      fields_.clear();
      for (std::size_t i = 1; i < words.size(); ++i) {
        std::size_t eq = words[i].find('=');
        if (eq == std::string_view::npos || eq == 0)
          fail("expected KEY=VALUE, got '" + printable(words[i]) + "'");
        std::string key(words[i].substr(0, eq));
        if (!fields_.emplace(key, Field{words[i].substr(eq + 1), false}).second)
          fail("duplicate field '" + key + "'");
      }
      if (keyword == "launch")
        record.op = parseLaunch();
      else if (keyword == "matmul")
        record.op = parseMatmul();
      else if (keyword == "copy")
        record.op = parseCopy();
      else if (keyword == "all-reduce-start" || keyword == "all-reduce-wait" || keyword == "world-size" ||
               keyword == "replica-rank")
        record.op = parseCollective(keyword);
      else
        fail("unknown record '" + printable(keyword) + "'");
      // Names are for messages; records the compiler made for no ONNX node (a constant copied to
      // an output) have none.
      if (fields_.count("node"))
        record.node = percentDecode(take("node"), where());
      for (const auto &[key, field] : fields_)
        if (!field.used)
          fail("unknown field '" + printable(key) + "' in '" + std::string(keyword) + "'");
      program.records.push_back(std::move(record));
    }
    line_ = 0;
    if (!sawHeader)
      throw Error(source_ + ": cuda program is empty (expected 'kiln-cuda-program 1')");
    if (!sawArena)
      throw Error(source_ + ": cuda program has no 'arena' record");
    if (!sawConstants)
      throw Error(source_ + ": cuda program has no 'constants' record");

    for (const CudaRecord &record : program.records)
      check(record, program);
    return program;
  }

private:
  struct Field {
    std::string_view value;
    bool used;
  };


  std::string where() const { return source_ + ": cuda program line " + std::to_string(line_); }

  [[noreturn]] void fail(const std::string &message) const { throw Error(where() + ": " + message); }

  std::string_view take(const std::string &key) {
    auto found = fields_.find(key);
    if (found == fields_.end())
      fail("missing field '" + key + "='");
    found->second.used = true;
    return found->second.value;
  }

  uint64_t takeNumber(const std::string &key, uint64_t min, uint64_t max) {
    std::string_view text = take(key);
    uint64_t value;
    if (!parseUnsigned(text, value))
      fail("bad number '" + printable(text) + "' for " + key + "=");
    if (value < min || value > max)
      fail(key + "=" + std::to_string(value) + " is out of range [" + std::to_string(min) + ", " +
           std::to_string(max) + "]");
    return value;
  }

  uint64_t takeNumberOr(const std::string &key, uint64_t min, uint64_t max, uint64_t otherwise) {
    return fields_.count(key) ? takeNumber(key, min, max) : otherwise;
  }

  bool takeFlag(const std::string &key) {
    std::string_view text = take(key);
    if (text != "0" && text != "1")
      fail(key + "= must be 0 or 1, got '" + printable(text) + "'");
    return text == "1";
  }

  void takeTriple(const std::string &key, uint32_t (&out)[3]) {
    std::string_view text = take(key);
    std::size_t pos = 0;
    for (int i = 0; i < 3; ++i) {
      std::size_t comma = i < 2 ? text.find(',', pos) : text.size();
      uint64_t value;
      if (comma == std::string_view::npos || !parseUnsigned(text.substr(pos, comma - pos), value) ||
          value == 0 || value > UINT32_MAX || (i == 2 && text.find(',', pos) != std::string_view::npos))
        fail(key + "= expects three positive integers X,Y,Z, got '" + printable(text) + "'");
      out[i] = static_cast<uint32_t>(value);
      pos = comma + 1;
    }
  }

  BufferRef parseBuffer(std::string_view text, const std::string &what, bool optional) {
    BufferRef ref;
    if (text == "-") {
      if (!optional)
        fail(what + " needs a buffer, got '-'");
      return ref;
    }
    std::size_t colon = text.find(':');
    std::string_view kind = text.substr(0, colon == std::string_view::npos ? 0 : colon);
    uint64_t value;
    if (colon == std::string_view::npos || !parseUnsigned(text.substr(colon + 1), value))
      fail("bad buffer reference '" + printable(text) + "' for " + what +
           " (expected in:I, out:I, arena:OFFSET, const:OFFSET" + (optional ? " or -)" : ")"));
    ref.value = value;
    if (kind == "in")
      ref.kind = BufferRef::Kind::Input;
    else if (kind == "out")
      ref.kind = BufferRef::Kind::Output;
    else if (kind == "arena")
      ref.kind = BufferRef::Kind::Arena;
    else if (kind == "const")
      ref.kind = BufferRef::Kind::Constant;
    else
      fail("unknown buffer kind '" + printable(kind) + "' in '" + printable(text) + "' for " + what +
           " (expected in, out, arena or const)");
    return ref;
  }

  BufferRef takeBuffer(const std::string &key, bool optional = false) {
    return parseBuffer(take(key), key + "=", optional);
  }

  CudaLaunch parseLaunch() {
    CudaLaunch launch;
    launch.kernel = std::string(take("kernel"));
    if (launch.kernel.empty())
      fail("kernel= names no kernel");
    takeTriple("grid", launch.grid);
    takeTriple("block", launch.block);
    launch.sharedBytes = static_cast<uint32_t>(takeNumber("shared", 0, UINT32_MAX));
    std::string_view args = take("args");
    for (std::size_t pos = 0; !args.empty() && pos <= args.size();) {
      std::size_t comma = args.find(',', pos);
      if (comma == std::string_view::npos)
        comma = args.size();
      launch.args.push_back(
          parseBuffer(args.substr(pos, comma - pos), "argument " + std::to_string(launch.args.size()), false));
      pos = comma + 1;
    }
    return launch;
  }

  CudaMatmul parseMatmul() {
    CudaMatmul matmul;
    std::string_view dtype = take("dtype");
    if (dtype == "f32")
      matmul.dtype = KILN_DTYPE_F32;
    else if (dtype == "f16")
      matmul.dtype = KILN_DTYPE_F16;
    else if (dtype == "bf16")
      matmul.dtype = KILN_DTYPE_BF16;
    else
      fail("dtype= must be f32, f16 or bf16, got '" + printable(dtype) + "'");
    std::string_view math = take("math");
    if (math == "f32")
      matmul.math = CudaMatmul::Math::F32;
    else if (math == "tf32")
      matmul.math = CudaMatmul::Math::TF32;
    else
      fail("math= must be f32 or tf32, got '" + printable(math) + "'");
    // cuBLASLt takes every dimension and the batch count as 32-bit integers.
    matmul.batch = static_cast<int64_t>(takeNumber("batch", 1, INT32_MAX));
    matmul.m = static_cast<int64_t>(takeNumber("m", 1, INT32_MAX));
    matmul.n = static_cast<int64_t>(takeNumber("n", 1, INT32_MAX));
    matmul.k = static_cast<int64_t>(takeNumber("k", 1, INT32_MAX));
    matmul.lhs = takeBuffer("lhs");
    matmul.lhsTransposed = takeFlag("lhs_t");
    matmul.lhsBatched = takeFlag("lhs_batched");
    matmul.rhs = takeBuffer("rhs");
    matmul.rhsTransposed = takeFlag("rhs_t");
    matmul.rhsBatched = takeFlag("rhs_batched");
    matmul.out = takeBuffer("out");
    matmul.bias = takeBuffer("bias", true);
    matmul.addend = takeBuffer("addend", true);
    std::string_view epilogue = take("epilogue");
    if (epilogue == "none")
      matmul.epilogue = CudaMatmul::Epilogue::None;
    else if (epilogue == "relu")
      matmul.epilogue = CudaMatmul::Epilogue::Relu;
    else
      fail("epilogue= must be none or relu, got '" + printable(epilogue) + "'");
    // Strides, dense unless given: an operand of R x C stored rows has ld C and, batched,
    // batch stride R * C.
    auto strides = [&](const std::string &name, int64_t rows, int64_t columns, bool batched,
                       int64_t &ld, int64_t &batchStride) {
      constexpr uint64_t kMax = uint64_t(1) << 48;
      ld = static_cast<int64_t>(takeNumberOr(name + "_ld", 1, kMax, static_cast<uint64_t>(columns)));
      batchStride = static_cast<int64_t>(
          takeNumberOr(name + "_batch_stride", 0, kMax, batched ? static_cast<uint64_t>(rows * columns) : 0));
      if (ld < columns)
        fail(name + "_ld=" + std::to_string(ld) + " is less than the " + std::to_string(columns) +
             " elements of a row");
    };
    int64_t m = matmul.m, n = matmul.n, k = matmul.k;
    strides("lhs", matmul.lhsTransposed ? k : m, matmul.lhsTransposed ? m : k, matmul.lhsBatched, matmul.lhsLd,
            matmul.lhsBatchStride);
    strides("rhs", matmul.rhsTransposed ? n : k, matmul.rhsTransposed ? k : n, matmul.rhsBatched, matmul.rhsLd,
            matmul.rhsBatchStride);
    strides("out", m, n, true, matmul.outLd, matmul.outBatchStride);
    strides("addend", m, n, true, matmul.addendLd, matmul.addendBatchStride);
    if (fields_.count("alpha")) {
      std::string text(take("alpha"));
      char *end = nullptr;
      double alpha = std::strtod(text.c_str(), &end);
      if (text.empty() || *end != '\0' || !std::isfinite(alpha))
        fail("alpha= must be a finite number, got '" + printable(text) + "'");
      matmul.alpha = static_cast<float>(alpha);
    }
    return matmul;
  }

  CudaCopy parseCopy() {
    CudaCopy copy;
    copy.dst = takeBuffer("dst");
    copy.src = takeBuffer("src");
    copy.bytes = takeNumber("bytes", 0, uint64_t(1) << 48);
    return copy;
  }

  CudaCollective parseCollective(std::string_view keyword) {
    CudaCollective collective;
    collective.data = takeBuffer("data");
    if (keyword == "world-size" || keyword == "replica-rank") {
      collective.kind = keyword == "world-size" ? CudaCollective::Kind::WorldSize : CudaCollective::Kind::Rank;
      return collective;
    }
    collective.kind = keyword == "all-reduce-start" ? CudaCollective::Kind::Start : CudaCollective::Kind::Wait;
    collective.bucket = static_cast<int64_t>(takeNumber("bucket", 0, INT32_MAX));
    collective.count = takeNumber("count", 1, uint64_t(1) << 40);
    return collective;
  }

  // --- Checks against the regions, after every line has been read --------------------------------

  uint64_t regionBytes(const BufferRef &ref, const CudaProgram &program) const {
    switch (ref.kind) {
    case BufferRef::Kind::Input: return inputBytes_[ref.value];
    case BufferRef::Kind::Output: return outputBytes_[ref.value];
    case BufferRef::Kind::Arena: return program.arenaBytes;
    case BufferRef::Kind::Constant: return program.constantBytes;
    case BufferRef::Kind::None: return 0;
    }
    return 0;
  }

  std::string regionName(const BufferRef &ref) const {
    switch (ref.kind) {
    case BufferRef::Kind::Input: return "input " + std::to_string(ref.value) + " '" + manifest_.inputs[ref.value].name + "'";
    case BufferRef::Kind::Output:
      return "output " + std::to_string(ref.value) + " '" + manifest_.outputs[ref.value].name + "'";
    case BufferRef::Kind::Arena: return "the arena";
    case BufferRef::Kind::Constant: return "the constants";
    case BufferRef::Kind::None: return "no buffer";
    }
    return "?";
  }

  // Checks that `ref` names an existing buffer and that [offset, offset + bytes) lies inside it;
  // `bytes` is nullopt for kernel arguments, whose extent only the kernel knows.
  void checkRef(const BufferRef &ref, const std::string &what, std::optional<uint64_t> bytes,
                const CudaProgram &program) const {
    if (ref.kind == BufferRef::Kind::None)
      return;
    if (ref.kind == BufferRef::Kind::Input && ref.value >= inputBytes_.size())
      fail(what + " " + ref.str() + ": the artifact has " + std::to_string(inputBytes_.size()) + " input" +
           (inputBytes_.size() == 1 ? "" : "s"));
    if (ref.kind == BufferRef::Kind::Output && ref.value >= outputBytes_.size())
      fail(what + " " + ref.str() + ": the artifact has " + std::to_string(outputBytes_.size()) + " output" +
           (outputBytes_.size() == 1 ? "" : "s"));
    uint64_t offset = ref.kind == BufferRef::Kind::Arena || ref.kind == BufferRef::Kind::Constant ? ref.value : 0;
    uint64_t size = regionBytes(ref, program);
    if (offset % kCudaBufferAlignment != 0)
      fail(what + " " + ref.str() + ": offset is not a multiple of " + std::to_string(kCudaBufferAlignment));
    if (!bytes) {
      // A kernel argument points at the start of something inside the region.
      if (offset != 0 && offset >= size)
        fail(what + " " + ref.str() + " lies outside " + regionName(ref) + " (" + std::to_string(size) +
             " bytes)");
      return;
    }
    if (offset > size || *bytes > size - offset)
      fail(what + " " + ref.str() + " needs " + std::to_string(*bytes) + " bytes, but " + regionName(ref) +
           " has " + std::to_string(size) + (offset ? " (" + std::to_string(size > offset ? size - offset : 0) +
                                                         " from that offset)"
                                                   : std::string()));
  }

  uint64_t product(std::initializer_list<uint64_t> factors) const {
    unsigned __int128 total = 1;
    for (uint64_t factor : factors) {
      total *= factor;
      if (total > (uint64_t(1) << 62))
        fail("matmul operands are too large");
    }
    return static_cast<uint64_t>(total);
  }

  void check(const CudaRecord &record, const CudaProgram &program) {
    line_ = record.line;
    if (const auto *launch = std::get_if<CudaLaunch>(&record.op)) {
      for (std::size_t i = 0; i < launch->args.size(); ++i)
        checkRef(launch->args[i], "argument " + std::to_string(i), std::nullopt, program);
    } else if (const auto *matmul = std::get_if<CudaMatmul>(&record.op)) {
      uint64_t element = dtypeSize(matmul->dtype);
      uint64_t batch = static_cast<uint64_t>(matmul->batch);
      uint64_t m = static_cast<uint64_t>(matmul->m), n = static_cast<uint64_t>(matmul->n),
               k = static_cast<uint64_t>(matmul->k);
      // Bytes from a matrix's first element to past its last: (batches - 1) whole batch
      // strides, (rows - 1) row strides, one row.
      auto extent = [&](uint64_t batches, uint64_t rows, uint64_t columns, int64_t ld, int64_t batchStride) {
        uint64_t last = product({batches - 1, static_cast<uint64_t>(batchStride)}) +
                        product({rows - 1, static_cast<uint64_t>(ld)}) + columns;
        return product({last, element});
      };
      checkRef(matmul->lhs, "lhs=",
               extent(matmul->lhsBatched ? batch : 1, matmul->lhsTransposed ? k : m, matmul->lhsTransposed ? m : k,
                      matmul->lhsLd, matmul->lhsBatchStride),
               program);
      checkRef(matmul->rhs, "rhs=",
               extent(matmul->rhsBatched ? batch : 1, matmul->rhsTransposed ? n : k, matmul->rhsTransposed ? k : n,
                      matmul->rhsLd, matmul->rhsBatchStride),
               program);
      checkRef(matmul->out, "out=", extent(batch, m, n, matmul->outLd, matmul->outBatchStride), program);
      checkRef(matmul->bias, "bias=", product({n, element}), program);
      checkRef(matmul->addend, "addend=", extent(batch, m, n, matmul->addendLd, matmul->addendBatchStride),
               program);
      if (matmul->out.kind == BufferRef::Kind::Constant)
        fail("out=" + matmul->out.str() + ": the constants are read-only");
    } else if (const auto *collective = std::get_if<CudaCollective>(&record.op)) {
      uint64_t bytes = collective->kind == CudaCollective::Kind::Rank        ? 8
                       : collective->kind == CudaCollective::Kind::WorldSize ? 4
                                                                            : product({collective->count, 4});
      checkRef(collective->data, "data=", bytes, program);
      if (collective->data.kind == BufferRef::Kind::Constant)
        fail("data=" + collective->data.str() + ": the constants are read-only");
    } else {
      const auto &copy = std::get<CudaCopy>(record.op);
      checkRef(copy.dst, "dst=", copy.bytes, program);
      checkRef(copy.src, "src=", copy.bytes, program);
      if (copy.dst.kind == BufferRef::Kind::Constant)
        fail("dst=" + copy.dst.str() + ": the constants are read-only");
    }
  }

  const std::string &source_;
  const Manifest &manifest_;
  std::vector<uint64_t> inputBytes_, outputBytes_;
  std::map<std::string, Field> fields_;
  int line_ = 0;
};

} // namespace

CudaProgram parseCudaProgram(std::string_view text, const std::string &source, const Manifest &manifest) {
  return ProgramParser(source, manifest).parse(text);
}

} // namespace kiln::rt
