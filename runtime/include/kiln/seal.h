// The seal every Kiln artifact ends with: 16 bytes after the ELF image, "KILNSEAL" followed by
// the CRC-32 (zlib's) of every byte before the seal and 4 reserved zero bytes. The dynamic loader
// ignores bytes past the image; the runtime checks the seal before it loads anything, so a
// flipped byte in code, weights or manifest is an error naming the file, not a wrong answer or a
// crash.
#ifndef KILN_SEAL_H
#define KILN_SEAL_H

#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::rt {

inline constexpr std::size_t kSealSize = 16;

// The seal of `image` (the artifact's bytes without a seal).
std::string sealFor(std::string_view image);

// Checks the seal at the end of the open file `fd` of `size` bytes. Returns "" when it holds,
// else why not (no seal, or the CRC-32 it records and the one computed).
std::string checkSeal(int fd, uint64_t size);

} // namespace kiln::rt

#endif // KILN_SEAL_H
