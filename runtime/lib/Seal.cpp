#include "kiln/seal.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unistd.h>

namespace kiln::rt {
namespace {

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'S', 'E', 'A', 'L'};

uint32_t crcUpdate(uint32_t crc, const char *data, std::size_t size) {
  // zlib takes the length as uInt: feed it in chunks below 4 GiB.
  while (size > 0) {
    std::size_t n = std::min<std::size_t>(size, 1u << 30);
    crc = static_cast<uint32_t>(::crc32(crc, reinterpret_cast<const Bytef *>(data), n));
    data += n;
    size -= n;
  }
  return crc;
}

std::string hex(uint32_t value) {
  char text[16];
  std::snprintf(text, sizeof text, "%08x", value);
  return text;
}

} // namespace

std::string sealFor(std::string_view image) {
  uint32_t crc = crcUpdate(static_cast<uint32_t>(::crc32(0, nullptr, 0)), image.data(), image.size());
  std::string seal(kMagic, sizeof kMagic);
  for (int i = 0; i < 4; ++i)
    seal.push_back(static_cast<char>((crc >> (8 * i)) & 0xff));
  seal.append(4, '\0');
  return seal;
}

std::string checkSeal(int fd, uint64_t size) {
  char seal[kSealSize];
  if (size < kSealSize || ::pread(fd, seal, kSealSize, static_cast<off_t>(size - kSealSize)) !=
                              static_cast<ssize_t>(kSealSize) ||
      std::memcmp(seal, kMagic, sizeof kMagic) != 0)
    return "no Kiln seal at its end (not written by kilnc, or cut short or appended to)";
  uint32_t recorded = 0;
  for (int i = 0; i < 4; ++i)
    recorded |= static_cast<uint32_t>(static_cast<unsigned char>(seal[8 + i])) << (8 * i);
  uint32_t crc = static_cast<uint32_t>(::crc32(0, nullptr, 0));
  static constexpr std::size_t kChunk = 1 << 20;
  std::string buffer(kChunk, '\0');
  for (uint64_t offset = 0, end = size - kSealSize; offset < end;) {
    std::size_t want = static_cast<std::size_t>(std::min<uint64_t>(kChunk, end - offset));
    ssize_t got = ::pread(fd, buffer.data(), want, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR)
      continue;
    if (got <= 0)
      return std::string("read error while checking its seal: ") +
             (got < 0 ? std::strerror(errno) : "file shrank");
    crc = crcUpdate(crc, buffer.data(), static_cast<std::size_t>(got));
    offset += static_cast<uint64_t>(got);
  }
  if (crc != recorded)
    return "its bytes do not match its seal (CRC-32 " + hex(crc) + ", sealed as " +
           hex(recorded) + "): the file was changed or damaged after kilnc wrote it";
  return "";
}

} // namespace kiln::rt
