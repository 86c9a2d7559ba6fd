// CRC-32C (Castagnoli), the checksum TFRecord framing (and so TensorBoard event files) uses.
#ifndef KILN_TRAIN_CRC32C_H
#define KILN_TRAIN_CRC32C_H

#include <cstddef>
#include <cstdint>

namespace kiln::train {

// CRC-32C of `n` bytes at `data`. Pass a previous result as `crc` to extend it over more
// bytes: crc32c(b, nb, crc32c(a, na)) == crc32c of a followed by b.
uint32_t crc32c(const void *data, std::size_t n, uint32_t crc = 0);

// The masked form TFRecord stores, ((crc >> 15) | (crc << 17)) + 0xa282ead8, so that a
// checksum of bytes that themselves contain checksums does not degenerate.
uint32_t maskedCrc32c(const void *data, std::size_t n);

} // namespace kiln::train

#endif // KILN_TRAIN_CRC32C_H
