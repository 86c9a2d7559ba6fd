// A train step's further entries (init and eval, on the CPU or as GPU programs of their own)
// and its resident state (kiln_artifact_state_*): the state kept on the artifact's device.
#include "ArtifactHandle.h"

#include <algorithm>
#include <cstring>
#include <string_view>

using kiln::rt::Manifest;
using kiln::rt::printable;
using kiln::rt::TensorSpec;
using kiln::rt::detail::checkBuffers;
using kiln::rt::detail::fail;
using kiln::rt::detail::findEntrySpec;
using kiln::rt::detail::guarded;
using kiln::rt::detail::runEntryOnCpu;

namespace {

// The GPU executor of a further entry, opened on first use.
kiln::rt::cuda::Executor &gpuEntry(kiln_artifact &artifact, const std::string &entry) {
  std::unique_ptr<kiln::rt::cuda::Executor> &executor = artifact.gpuEntries[entry];
  if (!executor)
    executor = kiln::rt::cuda::Executor::open(artifact.path, artifact.entryManifests.at(entry), artifact.library,
                                              artifact.gpuIndex, "kiln_entry_" + entry + "_");
  return *executor;
}

// The state pair whose input is named `name`, as an index into residentPairs; -1 when none.
int residentIndex(const kiln_artifact &artifact, std::string_view name) {
  for (std::size_t k = 0; k < artifact.residentPairs.size(); ++k)
    if (artifact.manifest.inputs[artifact.residentPairs[k].first].name == name)
      return static_cast<int>(k);
  return -1;
}

} // namespace

extern "C" {

kiln_status kiln_artifact_run_entry(kiln_artifact *artifact, const char *entry, void *const *inputs,
                                    void *const *outputs) {
  if (!artifact || !entry)
    return fail(KILN_ERROR_INVALID_ARGUMENT, "kiln_artifact_run_entry: artifact and entry must not be NULL");
  return guarded([&]() -> kiln_status {
    const kiln::rt::EntrySpec *spec = findEntrySpec(*artifact, entry);
    auto fn = artifact->entries.find(entry);
    if (!spec || (!artifact->gpu && fn == artifact->entries.end()))
      return fail(KILN_ERROR_INVALID_ARGUMENT,
                  artifact->path + ": no entry '" + entry + "'" +
                      (artifact->manifest.entries.empty() ? " (the artifact has none besides the main one)"
                                                          : ""));
    // With resident state, a NULL input named like a state tensor reads its current value.
    std::vector<int> fromState(spec->inputs.size(), -1);
    std::vector<void *> ins(spec->inputs.size());
    static char onDevice;
    for (std::size_t i = 0; i < ins.size() && inputs; ++i) {
      ins[i] = inputs[i];
      if (!ins[i] && artifact->resident && (fromState[i] = residentIndex(*artifact, spec->inputs[i].name)) >= 0)
        ins[i] = artifact->gpu ? &onDevice : artifact->stateIn[fromState[i]].get();
    }
    if (kiln_status status = checkBuffers(artifact, spec->inputs, spec->outputs, inputs ? ins.data() : nullptr,
                                          outputs, "kiln_artifact_run_entry");
        status != KILN_OK)
      return status;
    if (artifact->gpu) {
      std::vector<kiln::rt::cuda::Executor::InputSource> sources(ins.size());
      for (std::size_t i = 0; i < ins.size(); ++i) {
        sources[i].host = ins[i];
        if (fromState[i] >= 0) {
          sources[i].device = artifact->gpu.get();
          sources[i].resident = artifact->residentPairs[fromState[i]].first;
        }
      }
      gpuEntry(*artifact, entry).run(sources.data(), outputs);
      return KILN_OK;
    }
    runEntryOnCpu(artifact, spec->inputs, spec->outputs, ins.data(), outputs, fn->second);
    return KILN_OK;
  });
}

kiln_status kiln_artifact_state_init(kiln_artifact *artifact) {
  if (!artifact)
    return fail(KILN_ERROR_INVALID_ARGUMENT, "kiln_artifact_state_init: artifact is NULL");
  return guarded([&]() -> kiln_status {
    const Manifest &manifest = artifact->manifest;
    const kiln::rt::EntrySpec *init = findEntrySpec(*artifact, "init");
    if (!init || artifact->partitioned)
      return fail(KILN_ERROR_INVALID_ARGUMENT,
                  artifact->path + ": not a train step with an init entry (compile it with kilnc --train)");
    std::vector<std::pair<int, int>> pairs;
    for (std::size_t i = 0; i < manifest.inputs.size(); ++i) {
      if (manifest.inputs[i].state.empty())
        continue;
      int output = kiln::rt::findSpec(manifest.outputs, manifest.inputs[i].name);
      if (output < 0 || manifest.outputs[output].state != manifest.inputs[i].state ||
          manifest.outputs[output].byteSize() != manifest.inputs[i].byteSize())
        return fail(KILN_ERROR_INVALID_ARTIFACT, artifact->path + ": state input '" + manifest.inputs[i].name +
                                                     "' has no output of the same name, kind and size");
      pairs.push_back({static_cast<int>(i), output});
    }
    // Every init output sets the state tensor of its name: `targets` holds its pair.
    std::vector<std::size_t> targets;
    for (const TensorSpec &spec : init->outputs) {
      int input = kiln::rt::findSpec(manifest.inputs, spec.name);
      auto pair = std::find_if(pairs.begin(), pairs.end(), [&](auto p) { return p.first == input; });
      if (pair == pairs.end() || manifest.inputs[input].byteSize() != spec.byteSize())
        return fail(KILN_ERROR_INVALID_ARTIFACT,
                    artifact->path + ": init output '" + spec.name + "' matches no state input");
      targets.push_back(static_cast<std::size_t>(pair - pairs.begin()));
    }
    artifact->resident = false;
    artifact->residentPairs = pairs;
    if (artifact->gpu) {
      artifact->gpu->setResident(pairs);
      kiln::rt::cuda::Executor &entry = gpuEntry(*artifact, "init");
      std::vector<void *> none(init->outputs.size(), nullptr); // left on the device
      entry.run(static_cast<const kiln::rt::cuda::Executor::InputSource *>(nullptr), none.data());
      for (std::size_t k = 0; k < targets.size(); ++k)
        artifact->gpu->copyResidentFrom(pairs[targets[k]].first, entry, static_cast<int>(k));
      artifact->gpuEntries.erase("init"); // its constants (the initial weights) are not needed again
    } else {
      artifact->stateIn.clear();
      artifact->stateOut.clear();
      // A pair the step updates in place has one buffer; the others two, swapped after each step.
      for (auto [input, output] : pairs) {
        artifact->stateIn.push_back(kiln::rt::detail::allocateAligned(manifest.inputs[input].byteSize()));
        artifact->stateOut.push_back(
            manifest.outputs[output].inPlace
                ? kiln::rt::detail::AlignedBuffer()
                : kiln::rt::detail::allocateAligned(manifest.inputs[input].byteSize()));
      }
      std::vector<void *> outs;
      for (std::size_t k : targets)
        outs.push_back(artifact->stateIn[k].get());
      auto fn = artifact->entries.find("init");
      runEntryOnCpu(artifact, init->inputs, init->outputs, nullptr, outs.data(), fn->second);
    }
    artifact->resident = true;
    return KILN_OK;
  });
}

// Copies state tensor `name` out of (`out`) or into (`in`) the resident state.
static kiln_status transferState(kiln_artifact *artifact, const char *name, void *out, const void *in,
                                 std::size_t bytes, const char *what) {
  if (!artifact || !name || (!out && !in))
    return fail(KILN_ERROR_INVALID_ARGUMENT, std::string(what) + ": artifact, name and data must not be NULL");
  return guarded([&]() -> kiln_status {
    if (!artifact->resident)
      return fail(KILN_ERROR_INVALID_ARGUMENT,
                  artifact->path + ": " + what + ": no resident state (call kiln_artifact_state_init first)");
    int k = residentIndex(*artifact, name);
    if (k < 0)
      return fail(KILN_ERROR_INVALID_ARGUMENT, artifact->path + ": no state tensor '" + printable(name) + "'");
    int input = artifact->residentPairs[k].first;
    const TensorSpec &spec = artifact->manifest.inputs[input];
    if (bytes != spec.byteSize())
      return fail(KILN_ERROR_INVALID_ARGUMENT, artifact->path + ": state tensor '" + spec.name + "' is " +
                                                   spec.typeString() + " (" + std::to_string(spec.byteSize()) +
                                                   " bytes), not " + std::to_string(bytes) + " bytes");
    if (artifact->gpu) {
      if (out)
        artifact->gpu->readResident(input, out);
      else
        artifact->gpu->writeResident(input, in);
    } else if (bytes > 0) {
      std::lock_guard<std::mutex> lock(*artifact->runMutex);
      if (out)
        std::memcpy(out, artifact->stateIn[k].get(), bytes);
      else
        std::memcpy(artifact->stateIn[k].get(), in, bytes);
    }
    return KILN_OK;
  });
}

kiln_status kiln_artifact_state_read(kiln_artifact *artifact, const char *name, void *data, size_t bytes) {
  return transferState(artifact, name, data, nullptr, bytes, "kiln_artifact_state_read");
}

kiln_status kiln_artifact_state_write(kiln_artifact *artifact, const char *name, const void *data, size_t bytes) {
  return transferState(artifact, name, nullptr, data, bytes, "kiln_artifact_state_write");
}

int kiln_artifact_has_resident_state(const kiln_artifact *artifact) { return artifact && artifact->resident; }

} // extern "C"
