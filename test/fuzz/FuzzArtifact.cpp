// libFuzzer target for the artifact loader: whatever bytes an artifact file holds,
// kiln_artifact_open must refuse it with a status and a message, never crash. The loader checks
// the ELF header, its tables and segments and the seal before dlopen, so dlopen only ever sees
// files that pass all of them.
//
// The target stops at the seal: an input whose seal holds is not opened. The fuzzer can forge a
// seal (a CRC-32, and libFuzzer copies the values that comparisons expected into its inputs),
// and a forged seal makes a damaged ELF image look intact, so dlopen runs whatever it describes;
// test/fuzz/regressions/fuzz-artifact/forged-seal.elf crashes in glibc's relocation that way.
// The seal catches damage, not malice: an artifact is native code, as trusted as any shared
// library, and no check can tell a forged one from one kilnc wrote.
#include "kiln/runtime.h"
#include "kiln/seal.h"

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
  if (kiln::rt::checkSeal(fd, size).empty()) {
    close(fd);
    return 0;
  }
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  kiln_artifact *artifact = nullptr;
  if (kiln_artifact_open(path.c_str(), &artifact) == KILN_OK)
    kiln_artifact_close(artifact);
  close(fd);
  return 0;
}
