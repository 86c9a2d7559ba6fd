// Parser for the line-oriented kiln_manifest text embedded in every artifact.
#include "kiln/manifest.h"

#include "kiln/cuda_program.h"

#include <algorithm>
#include <cstdint>
#include <set>

namespace kiln::rt {
namespace {

int hexValue(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

bool parseCount(std::string_view text, int64_t &value) {
  value = 0;
  if (text.empty())
    return false;
  for (char c : text) {
    if (c < '0' || c > '9' || value > (INT64_MAX - (c - '0')) / 10)
      return false;
    value = value * 10 + (c - '0');
  }
  return true;
}

bool parseDims(std::string_view text, std::vector<int64_t> &dims) {
  dims.clear();
  if (text == "scalar")
    return true;
  std::size_t pos = 0;
  for (;;) {
    std::size_t end = text.find('x', pos);
    int64_t value;
    if (!parseCount(text.substr(pos, end == std::string_view::npos ? end : end - pos), value))
      return false;
    dims.push_back(value);
    if (end == std::string_view::npos)
      return true;
    pos = end + 1;
  }
}

// `input:I` or `stage:S:R`.
bool parseValueRef(std::string_view text, StageValueRef &ref) {
  int64_t index = 0, result = 0;
  if (text.substr(0, 6) == "input:") {
    ref.kind = StageValueRef::Kind::Input;
    if (!parseCount(text.substr(6), index) || index > INT32_MAX)
      return false;
  } else if (text.substr(0, 6) == "stage:") {
    ref.kind = StageValueRef::Kind::Stage;
    std::string_view rest = text.substr(6);
    std::size_t colon = rest.find(':');
    if (colon == std::string_view::npos || !parseCount(rest.substr(0, colon), index) ||
        !parseCount(rest.substr(colon + 1), result) || index > INT32_MAX || result > INT32_MAX)
      return false;
  } else {
    return false;
  }
  ref.index = static_cast<int>(index);
  ref.result = static_cast<int>(result);
  return true;
}

// The type of a stage value, after checking that it exists (and, for a stage argument, that it
// comes from an earlier stage).
const TensorSpec &resolveValue(const Manifest &manifest, const StageValueRef &ref, int before,
                               const std::string &where) {
  if (ref.kind == StageValueRef::Kind::Input) {
    if (ref.index >= static_cast<int>(manifest.inputs.size()))
      throw Error(where + ": input " + std::to_string(ref.index) + " does not exist (" +
                  std::to_string(manifest.inputs.size()) + " inputs)");
    return manifest.inputs[ref.index];
  }
  if (ref.index >= before)
    throw Error(where + ": stage " + std::to_string(ref.index) +
                " does not come before it (stages may only use earlier stages)");
  const StageSpec &stage = manifest.stages[ref.index];
  if (ref.result >= static_cast<int>(stage.results.size()))
    throw Error(where + ": stage " + std::to_string(ref.index) + " has no result " +
                std::to_string(ref.result));
  return stage.results[ref.result];
}

// Whether a value of dtype `from` can be returned as `to`: the same dtype, or integers of the
// same width, since stage results are signless and only the artifact's own outputs say
// whether an integer is unsigned (u8 over a stage's i8).
bool sameBits(DType from, DType to) {
  auto integer = [](DType t) {
    return t != KILN_DTYPE_INVALID && t != KILN_DTYPE_BOOL && !isFloatingPoint(t);
  };
  return from == to || (integer(from) && integer(to) && dtypeSize(from) == dtypeSize(to));
}

// The partition records must describe a program the executor can run without deadlock or
// out-of-bounds reads.
void validatePartitions(const Manifest &manifest, const std::string &source) {
  if (!manifest.hasDevice("partitioned")) {
    if (!manifest.stages.empty() || !manifest.partitions.empty())
      throw Error(source + ": manifest has stage records but 'devices' does not list partitioned");
    return;
  }
  if (manifest.devices.size() != 1)
    throw Error(source + ": a partitioned artifact lists no other device kind");
  if (manifest.partitions.empty() || manifest.stages.empty())
    throw Error(source + ": partitioned artifact without partition or stage records");
  for (std::size_t s = 0; s < manifest.stages.size(); ++s) {
    const StageSpec &stage = manifest.stages[s];
    std::string where = source + ": stage " + std::to_string(s);
    bool known = false;
    for (const PartitionDevice &device : manifest.partitions)
      known = known || device.name == stage.device;
    if (!known)
      throw Error(where + ": device '" + stage.device + "' has no partition record");
    for (const StageValueRef &arg : stage.args)
      resolveValue(manifest, arg, static_cast<int>(s), where);
  }
  if (manifest.outputSources.size() != manifest.outputs.size())
    throw Error(source + ": " + std::to_string(manifest.outputSources.size()) +
                " output-from records for " + std::to_string(manifest.outputs.size()) + " outputs");
  for (std::size_t o = 0; o < manifest.outputs.size(); ++o) {
    const TensorSpec &spec = manifest.outputs[o];
    const TensorSpec &from = resolveValue(manifest, manifest.outputSources[o],
                                          static_cast<int>(manifest.stages.size()),
                                          source + ": output '" + spec.name + "'");
    if (!sameBits(from.dtype, spec.dtype) || from.dims != spec.dims)
      throw Error(source + ": output '" + spec.name + "' is " + spec.typeString() +
                  " but its source is " + from.typeString());
  }
}

} // namespace

std::vector<std::string_view> splitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t lineStart = 0;
  while (lineStart <= text.size()) {
    std::size_t lineEnd = text.find('\n', lineStart);
    if (lineEnd == std::string_view::npos)
      lineEnd = text.size();
    std::string_view line = text.substr(lineStart, lineEnd - lineStart);
    if (!line.empty() && line.back() == '\r')
      line.remove_suffix(1);
    lines.push_back(line);
    lineStart = lineEnd + 1;
  }
  return lines;
}

std::vector<std::string_view> splitFields(std::string_view line) {
  std::vector<std::string_view> fields;
  std::size_t pos = 0;
  while (pos < line.size()) {
    while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\t'))
      ++pos;
    std::size_t start = pos;
    while (pos < line.size() && line[pos] != ' ' && line[pos] != '\t')
      ++pos;
    if (pos > start)
      fields.push_back(line.substr(start, pos - start));
  }
  return fields;
}

std::string printable(std::string_view text) {
  std::string out;
  for (char c : text)
    out += (static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f) ? c : '?';
  return out;
}

bool Manifest::hasDevice(std::string_view kind) const {
  return std::find(devices.begin(), devices.end(), kind) != devices.end();
}

std::string Manifest::deviceList() const {
  std::string out;
  for (const std::string &kind : devices)
    out += (out.empty() ? "" : ",") + kind;
  return out;
}

int findSpec(const std::vector<TensorSpec> &specs, std::string_view name) {
  for (std::size_t i = 0; i < specs.size(); ++i)
    if (specs[i].name == name)
      return static_cast<int>(i);
  return -1;
}

std::string percentDecode(std::string_view text, const std::string &context) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    bool complete = i + 2 < text.size();
    int hi = complete ? hexValue(text[i + 1]) : -1;
    int lo = complete ? hexValue(text[i + 2]) : -1;
    if (hi < 0 || lo < 0)
      throw Error(context + ": bad percent-escape in '" + printable(text) + "'");
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

std::string percentEncode(std::string_view text) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char c : text) {
    unsigned char byte = static_cast<unsigned char>(c);
    if (byte < 0x21 || byte > 0x7e || byte == '%') {
      out += '%';
      out += kHex[byte >> 4];
      out += kHex[byte & 15];
    } else {
      out += c;
    }
  }
  return out;
}

Manifest entryManifest(const Manifest &manifest, const EntrySpec &entry) {
  Manifest out = manifest;
  out.inputs = entry.inputs;
  out.outputs = entry.outputs;
  out.entries.clear();
  return out;
}

Manifest stageManifest(const Manifest &manifest, int index) {
  const StageSpec &stage = manifest.stages.at(index);
  Manifest out;
  out.version = manifest.version;
  out.name = manifest.name + " stage " + std::to_string(index);
  out.target = manifest.target;
  out.devices = {stage.device.rfind("gpu", 0) == 0 ? "cuda" : "cpu"};
  out.cudaCubins = manifest.cudaCubins;
  out.cudaPtxTarget = manifest.cudaPtxTarget;
  out.cudaPtxIsa = manifest.cudaPtxIsa;
  out.cudaMinDriver = manifest.cudaMinDriver;
  for (std::size_t a = 0; a < stage.args.size(); ++a) {
    TensorSpec spec = resolveValue(manifest, stage.args[a], index, manifest.name);
    spec.name = "stage " + std::to_string(index) + " argument " + std::to_string(a);
    out.inputs.push_back(std::move(spec));
  }
  out.outputs = stage.results;
  return out;
}

/// A tensor record's fields from `first` on: NAME DTYPE DIMS, then optional
/// annotations (`state=KIND`, `in-place`; others are skipped so that later format
/// revisions can add their own).
static TensorSpec parseTensorRecord(const std::vector<std::string_view> &fields, std::size_t first,
                                    std::string_view keyword, const std::string &where) {
  if (fields.size() < first + 3)
    throw Error(where + ": expected '" + std::string(keyword) + " NAME DTYPE DIMS'");
  TensorSpec spec;
  spec.name = percentDecode(fields[first], where);
  std::optional<DType> dtype = parseDType(fields[first + 1]);
  if (!dtype)
    throw Error(where + ": unknown dtype '" + printable(fields[first + 1]) + "' for " +
                std::string(keyword) + " '" + spec.name + "'");
  spec.dtype = *dtype;
  if (!parseDims(fields[first + 2], spec.dims))
    throw Error(where + ": bad dims '" + printable(fields[first + 2]) + "' for " +
                std::string(keyword) + " '" + spec.name + "' (expected AxBxC or scalar)");
  int64_t count = checkedNumElements(spec.dims, where);
  // Callers size buffers as count * element size; make sure that product is representable.
  if (count > INT64_MAX / static_cast<int64_t>(dtypeSize(spec.dtype)))
    throw Error(where + ": " + std::string(keyword) + " '" + spec.name + "' of type " +
                spec.typeString() + " is too large");
  for (std::size_t i = first + 3; i < fields.size(); ++i)
    if (fields[i].substr(0, 6) == "state=") {
      spec.state = std::string(fields[i].substr(6));
      if (spec.state.empty())
        throw Error(where + ": empty state kind for " + std::string(keyword) + " '" + spec.name +
                    "'");
    } else if (fields[i] == "in-place") {
      spec.inPlace = true;
    }
  return spec;
}

Manifest parseManifest(std::string_view text, const std::string &source) {
  Manifest manifest;
  std::set<std::string> inputNames, outputNames;
  int lineNumber = 0;
  bool sawHeader = false;
  for (std::string_view line : splitLines(text)) {
    ++lineNumber;
    std::vector<std::string_view> fields = splitFields(line);
    std::string where = source + ": manifest line " + std::to_string(lineNumber);

    if (!sawHeader) {
      // The version line comes first so a future format can change everything after it.
      if (fields.size() != 2 || fields[0] != "kiln-artifact")
        throw Error(source + ": not a Kiln artifact manifest (first line must be "
                             "'kiln-artifact <version>', got '" + printable(line.substr(0, 60)) + "')");
      int64_t version;
      if (!parseCount(fields[1], version) || version > INT32_MAX)
        throw Error(where + ": bad format version '" + printable(fields[1]) + "'");
      manifest.version = static_cast<int>(version);
      if (manifest.version != KILN_ARTIFACT_FORMAT_VERSION)
        throw ManifestVersionError(source + ": artifact format version " + std::to_string(manifest.version) +
                    " is not supported by this runtime (reads version " +
                    std::to_string(KILN_ARTIFACT_FORMAT_VERSION) + ")");
      sawHeader = true;
      continue;
    }
    if (fields.empty())
      continue;

    std::string_view keyword = fields[0];
    if (keyword == "name" || keyword == "target" || keyword == "cpu") {
      if (fields.size() != 2)
        throw Error(where + ": expected '" + std::string(keyword) + " VALUE'");
      std::string value = percentDecode(fields[1], where);
      if (keyword == "name")
        manifest.name = value;
      else if (keyword == "target")
        manifest.target = value;
      else
        manifest.cpu = value;
    } else if (keyword == "features") {
      if (fields.size() > 2)
        throw Error(where + ": expected 'features A,B,...' (no spaces)");
      manifest.features.clear();
      if (fields.size() == 2) {
        std::string_view list = fields[1];
        std::size_t pos = 0;
        while (pos <= list.size()) {
          std::size_t comma = list.find(',', pos);
          if (comma == std::string_view::npos)
            comma = list.size();
          if (comma > pos)
            manifest.features.emplace_back(list.substr(pos, comma - pos));
          pos = comma + 1;
        }
      }
    } else if (keyword == "input" || keyword == "output") {
      bool isInput = keyword == "input";
      TensorSpec spec = parseTensorRecord(fields, 1, keyword, where);
      if (!(isInput ? inputNames : outputNames).insert(spec.name).second)
        throw Error(where + ": duplicate " + std::string(keyword) + " name '" + spec.name + "'");
      (isInput ? manifest.inputs : manifest.outputs).push_back(std::move(spec));
    } else if (keyword == "entry") {
      if (fields.size() != 2)
        throw Error(where + ": expected 'entry NAME'");
      for (const EntrySpec &entry : manifest.entries)
        if (entry.name == fields[1])
          throw Error(where + ": entry '" + std::string(fields[1]) + "' is listed twice");
      manifest.entries.push_back({std::string(fields[1]), {}, {}});
    } else if (keyword == "entry-input" || keyword == "entry-output") {
      if (fields.size() < 2)
        throw Error(where + ": expected '" + std::string(keyword) + " ENTRY NAME DTYPE DIMS'");
      auto entry = std::find_if(manifest.entries.begin(), manifest.entries.end(),
                                [&](const EntrySpec &e) { return e.name == fields[1]; });
      if (entry == manifest.entries.end())
        throw Error(where + ": " + std::string(keyword) + " of entry '" + printable(fields[1]) +
                    "', which no earlier 'entry' record declares");
      bool isInput = keyword == "entry-input";
      std::vector<TensorSpec> &specs = isInput ? entry->inputs : entry->outputs;
      TensorSpec spec = parseTensorRecord(fields, 2, keyword, where);
      for (const TensorSpec &other : specs)
        if (other.name == spec.name)
          throw Error(where + ": duplicate " + std::string(keyword) + " name '" + spec.name +
                      "' of entry '" + entry->name + "'");
      specs.push_back(std::move(spec));
    } else if (keyword == "devices") {
      if (fields.size() < 2)
        throw Error(where + ": expected 'devices KIND...' (e.g. 'devices cpu cuda')");
      manifest.devices.clear();
      for (std::size_t i = 1; i < fields.size(); ++i)
        if (!manifest.hasDevice(fields[i]))
          manifest.devices.emplace_back(fields[i]);
    } else if (keyword == "cuda-cubin") {
      if (fields.size() < 2)
        throw Error(where + ": expected 'cuda-cubin sm_NN...'");
      manifest.cudaCubins.clear();
      for (std::size_t i = 1; i < fields.size(); ++i) {
        if (!parseCudaArch(fields[i], "sm_"))
          throw Error(where + ": bad cubin architecture '" + printable(fields[i]) + "' (expected sm_NN)");
        if (std::find(manifest.cudaCubins.begin(), manifest.cudaCubins.end(), fields[i]) !=
            manifest.cudaCubins.end())
          throw Error(where + ": cubin architecture '" + std::string(fields[i]) + "' listed twice");
        manifest.cudaCubins.emplace_back(fields[i]);
      }
    } else if (keyword == "cuda-ptx") {
      if (fields.size() != 3)
        throw Error(where + ": expected 'cuda-ptx compute_NN ISA' (e.g. 'cuda-ptx compute_80 7.8')");
      if (!parseCudaArch(fields[1], "compute_"))
        throw Error(where + ": bad PTX architecture '" + printable(fields[1]) + "' (expected compute_NN)");
      std::size_t dot = fields[2].find('.');
      int64_t major, minor;
      if (dot == std::string_view::npos || !parseCount(fields[2].substr(0, dot), major) ||
          !parseCount(fields[2].substr(dot + 1), minor) || major > 99 || minor > 99)
        throw Error(where + ": bad PTX ISA version '" + printable(fields[2]) + "' (expected MAJOR.MINOR)");
      manifest.cudaPtxTarget = std::string(fields[1]);
      manifest.cudaPtxIsa = std::string(fields[2]);
    } else if (keyword == "cuda-min-driver") {
      int64_t version;
      if (fields.size() != 2 || !parseCount(fields[1], version) || version > INT32_MAX)
        throw Error(where + ": expected 'cuda-min-driver VERSION' (e.g. 12000 for CUDA 12.0)");
      manifest.cudaMinDriver = static_cast<int>(version);
    } else if (keyword == "partition") {
      if (fields.size() != 3)
        throw Error(where + ": expected 'partition DEVICE FULL_NAME' (e.g. 'partition cpu:1 "
                            "/job:localhost/replica:0/task:0/device:CPU:1')");
      std::string name(fields[1]);
      PartitionDevice device{name, std::string(fields[2]), name.substr(0, 4) == "gpu:", 0};
      int64_t index = 0;
      std::string_view number = fields[1].substr(std::min<std::size_t>(4, fields[1].size()));
      bool canonical = number.size() == 1 || (!number.empty() && number[0] != '0');
      if ((name.substr(0, 4) != "cpu:" && !device.gpu) || !canonical || !parseCount(number, index) ||
          index > INT32_MAX)
        throw Error(where + ": bad partition device '" + printable(fields[1]) + "' (cpu:N or gpu:N)");
      device.index = static_cast<int>(index);
      for (const PartitionDevice &other : manifest.partitions)
        if (other.name == name)
          throw Error(where + ": partition '" + name + "' listed twice");
      manifest.partitions.push_back(std::move(device));
    } else if (keyword == "stage") {
      // stage INDEX DEVICE NARGS ARG... NRESULTS (DTYPE DIMS)...
      int64_t index = 0, count = 0;
      std::size_t at = 3;
      auto expect = [&](bool ok) {
        if (!ok)
          throw Error(where + ": expected 'stage INDEX DEVICE NARGS ARG... NRESULTS DTYPE DIMS...'");
      };
      expect(fields.size() >= 5 && parseCount(fields[1], index) &&
             index == static_cast<int64_t>(manifest.stages.size()));
      StageSpec stage;
      stage.device = std::string(fields[2]);
      expect(parseCount(fields[at++], count) && count <= static_cast<int64_t>(fields.size()));
      for (int64_t i = 0; i < count; ++i) {
        expect(at < fields.size());
        StageValueRef ref;
        if (!parseValueRef(fields[at], ref))
          throw Error(where + ": bad stage argument '" + printable(fields[at]) +
                      "' (input:I or stage:S:R)");
        stage.args.push_back(ref);
        ++at;
      }
      expect(at < fields.size() && parseCount(fields[at++], count) &&
             at + 2 * static_cast<std::size_t>(count) == fields.size());
      for (int64_t i = 0; i < count; ++i, at += 2) {
        TensorSpec spec;
        spec.name = "stage " + std::to_string(index) + " result " + std::to_string(i);
        std::optional<DType> dtype = parseDType(fields[at]);
        if (!dtype || !parseDims(fields[at + 1], spec.dims))
          throw Error(where + ": bad result type '" + printable(fields[at]) + " " +
                      printable(fields[at + 1]) + "'");
        spec.dtype = *dtype;
        int64_t elements = checkedNumElements(spec.dims, where);
        if (elements > INT64_MAX / static_cast<int64_t>(dtypeSize(spec.dtype)))
          throw Error(where + ": result of type " + spec.typeString() + " is too large");
        stage.results.push_back(std::move(spec));
      }
      manifest.stages.push_back(std::move(stage));
    } else if (keyword == "output-from") {
      StageValueRef ref;
      if (fields.size() != 2 || !parseValueRef(fields[1], ref))
        throw Error(where + ": expected 'output-from input:I' or 'output-from stage:S:R'");
      manifest.outputSources.push_back(ref);
    } else if (keyword == "index-check") {
      IndexCheckSpec check;
      if (fields.size() != 4 || !parseCount(fields[1], check.id) ||
          check.id != static_cast<int64_t>(manifest.indexChecks.size()) ||
          !parseCount(fields[2], check.size))
        throw Error(where + ": expected 'index-check ID SIZE NODE' with IDs 0, 1, ... in order");
      check.node = percentDecode(fields[3], where);
      manifest.indexChecks.push_back(std::move(check));
    } else if (keyword == "profile-kernel") {
      int64_t id;
      static constexpr std::string_view kKinds[] = {"parallel", "serial", "copy", "call"};
      if (fields.size() != 5 || !parseCount(fields[1], id) ||
          id != static_cast<int64_t>(manifest.profiledKernels.size()) ||
          std::find(std::begin(kKinds), std::end(kKinds), fields[3]) == std::end(kKinds))
        throw Error(where + ": expected 'profile-kernel ID FUNCTION parallel|serial|copy|call NODES' "
                            "with IDs 0, 1, ... in order");
      manifest.profiledKernels.push_back(
          {percentDecode(fields[2], where), std::string(fields[3]), percentDecode(fields[4], where)});
    } else {
      // A newer kilnc that adds a record also raises the format version, so
      // an unknown keyword is damage or tampering, not a newer artifact.
      throw Error(where + ": unknown manifest keyword '" + printable(keyword) + "'");
    }
  }
  validatePartitions(manifest, source);
  return manifest;
}

} // namespace kiln::rt
