// libFuzzer target for the artifact manifest parser: malformed text must throw kiln::rt::Error,
// nothing else. A partitioned manifest that parses is also split into its stages, as the GPU
// executor does.
#include "kiln/manifest.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  try {
    kiln::rt::Manifest manifest = kiln::rt::parseManifest(
        std::string_view(reinterpret_cast<const char *>(data), size), "fuzz.kiln");
    for (std::size_t i = 0; i < manifest.stages.size(); ++i)
      kiln::rt::stageManifest(manifest, static_cast<int>(i));
  } catch (const kiln::rt::Error &) {
  }
  return 0;
}
