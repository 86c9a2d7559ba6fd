// kiln-test-seal FILE: appends to FILE the seal that kilnc ends every artifact with, so that the
// fake artifacts the C compiler builds for the runtime tests pass the same checks as real ones.
#include "kiln/seal.h"
#include "kiln/tensor.h"

#include <cstdio>
#include <exception>

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: kiln-test-seal FILE\n");
    return 2;
  }
  try {
    std::string image = kiln::rt::readFileBytes(argv[1]);
    kiln::rt::writeFileAtomically(argv[1], image + kiln::rt::sealFor(image));
  } catch (const std::exception &e) {
    std::fprintf(stderr, "kiln-test-seal: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
