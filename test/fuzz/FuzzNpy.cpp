// libFuzzer target for the .npy reader: malformed files must throw kiln::rt::Error, nothing else.
#include "kiln/tensor.h"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  try {
    kiln::rt::parseNpy(std::string_view(reinterpret_cast<const char *>(data), size), "fuzz.npy");
  } catch (const kiln::rt::Error &) {
  }
  return 0;
}
