// libFuzzer target for the artifact loader: whatever bytes an artifact file holds,
// kiln_artifact_open must refuse it with a status and a message (or open it, when it is an
// intact artifact), never crash. The loader checks the ELF header, its tables and segments and
// the seal before dlopen, so dlopen only ever sees files that pass all of them.
#include "kiln/runtime.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // An anonymous in-memory file: no disk traffic, and nothing left behind.
  int fd = memfd_create("fuzz.kiln", MFD_CLOEXEC);
  if (fd < 0)
    return 0;
  for (size_t written = 0; written < size;) {
    ssize_t got = write(fd, data + written, size - written);
    if (got <= 0) {
      close(fd);
      return 0;
    }
    written += static_cast<size_t>(got);
  }
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  kiln_artifact *artifact = nullptr;
  if (kiln_artifact_open(path.c_str(), &artifact) == KILN_OK)
    kiln_artifact_close(artifact);
  close(fd);
  return 0;
}
