// CRC-32C (Castagnoli) with a byte-wise table: portable, and event files are small enough that
// hardware CRC instructions would not be noticed.
#include "kiln/train/crc32c.h"

#include <array>

namespace kiln::train {
namespace {

// The reflected Castagnoli polynomial 0x1EDC6F41.
constexpr uint32_t kPolynomial = 0x82f63b78u;
constexpr uint32_t kMaskDelta = 0xa282ead8u;

constexpr std::array<uint32_t, 256> makeTable() {
  std::array<uint32_t, 256> table{};
  for (uint32_t byte = 0; byte < 256; ++byte) {
    uint32_t crc = byte;
    for (int bit = 0; bit < 8; ++bit)
      crc = (crc >> 1) ^ ((crc & 1u) ? kPolynomial : 0u);
    table[byte] = crc;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kTable = makeTable();

} // namespace

uint32_t crc32c(const void *data, std::size_t n, uint32_t crc) {
  const auto *bytes = static_cast<const unsigned char *>(data);
  // The pre- and post-inversion make `crc` a finished checksum that can be fed back in.
  crc = ~crc;
  for (std::size_t i = 0; i < n; ++i)
    crc = (crc >> 8) ^ kTable[(crc ^ bytes[i]) & 0xffu];
  return ~crc;
}

uint32_t maskedCrc32c(const void *data, std::size_t n) {
  uint32_t crc = crc32c(data, n);
  return ((crc >> 15) | (crc << 17)) + kMaskDelta;
}

} // namespace kiln::train
