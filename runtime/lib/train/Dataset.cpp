// IDX and .npy data sets, gzip or not; the per-epoch order; batch gathering.
#include "kiln/train/dataset.h"

#include <zlib.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

namespace kiln::train {
namespace {

using rt::Error;
using rt::Tensor;

bool isGzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<uint8_t>(bytes[0]) == 0x1f &&
         static_cast<uint8_t>(bytes[1]) == 0x8b;
}

/// Bytes an IDX file with this header holds in all, or nullopt while the
/// header is incomplete; throws rt::Error on a header whose sizes overflow.
std::optional<uint64_t> idxFileSize(std::string_view header, const std::string &path);

std::string gunzip(std::string_view bytes, const std::string &path) {
  z_stream stream{};
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK)
    throw Error(path + ": cannot start gzip decompression");
  std::string out, message;
  char chunk[1 << 16];
  size_t consumed = 0;
  int status = Z_OK;
  std::optional<uint64_t> declared; // an IDX header's size: inflating past it is a bomb
  try {
    while (status == Z_OK) {
      if (stream.avail_in == 0 && consumed < bytes.size()) { // zlib takes uInt lengths
        size_t piece = std::min<size_t>(bytes.size() - consumed, 1u << 30);
        stream.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(bytes.data() + consumed));
        stream.avail_in = static_cast<uInt>(piece);
        consumed += piece;
      }
      stream.next_out = reinterpret_cast<Bytef *>(chunk);
      stream.avail_out = sizeof(chunk);
      status = inflate(&stream, Z_NO_FLUSH);
      out.append(chunk, sizeof(chunk) - stream.avail_out);
      if (status == Z_BUF_ERROR && stream.avail_in == 0 && consumed == bytes.size())
        break; // input ended before the stream did
      if (status == Z_BUF_ERROR)
        status = Z_OK;
      if (!declared && out.size() >= 4 && out[0] == 0 && out[1] == 0)
        declared = idxFileSize(out, path);
      if (declared && out.size() > *declared)
        throw Error(path + ": gzip data inflates past the " + std::to_string(*declared) +
                    " bytes its IDX header declares");
    }
  } catch (...) {
    inflateEnd(&stream);
    throw;
  }
  if (stream.msg)
    message = stream.msg;
  inflateEnd(&stream);
  if (status != Z_STREAM_END)
    throw Error(path + ": " +
                (status == Z_BUF_ERROR ? "truncated gzip data"
                                       : "corrupt gzip data" + (message.empty() ? "" : " (" + message + ")")));
  return out;
}

struct IdxType {
  uint8_t code;
  rt::DType dtype;
};
constexpr IdxType kIdxTypes[] = {{0x08, KILN_DTYPE_U8},  {0x09, KILN_DTYPE_I8},
                                 {0x0B, KILN_DTYPE_I16}, {0x0C, KILN_DTYPE_I32},
                                 {0x0D, KILN_DTYPE_F32}, {0x0E, KILN_DTYPE_F64}};

const IdxType *idxType(std::string_view bytes, const std::string &path) {
  uint8_t code = static_cast<uint8_t>(bytes[2]);
  for (const IdxType &type : kIdxTypes)
    if (type.code == code)
      return &type;
  throw Error(path + ": IDX type code 0x" + std::to_string(code) + " is not one of u8, i8, "
              "i16, i32, f32, f64 (wrong magic number)");
}

std::vector<int64_t> idxShape(std::string_view bytes) {
  std::vector<int64_t> shape;
  for (int d = 0; d < static_cast<uint8_t>(bytes[3]); ++d) {
    const auto *p = reinterpret_cast<const uint8_t *>(bytes.data()) + 4 + 4 * d;
    shape.push_back((int64_t(p[0]) << 24) | (p[1] << 16) | (p[2] << 8) | p[3]);
  }
  return shape;
}

std::optional<uint64_t> idxFileSize(std::string_view header, const std::string &path) {
  size_t rank = static_cast<uint8_t>(header[3]);
  if (header.size() < 4 + 4 * rank)
    return std::nullopt;
  uint64_t elements =
      static_cast<uint64_t>(rt::checkedNumElements(idxShape(header), path + ": IDX header"));
  uint64_t width = rt::dtypeSize(idxType(header, path)->dtype);
  if (elements > (UINT64_MAX - 4 - 4 * rank) / width)
    throw Error(path + ": IDX header declares more data than a file can hold");
  return 4 + 4 * rank + elements * width;
}

// IDX: two zero bytes, a type code, the rank; big-endian u32 dims; big-endian elements.
Tensor parseIdx(std::string_view bytes, const std::string &path) {
  if (bytes.size() < 4 || bytes[0] != 0 || bytes[1] != 0)
    throw Error(path + ": not an IDX or .npy file (wrong magic number)");
  const IdxType *type = idxType(bytes, path);
  if (bytes[3] == 0)
    throw Error(path + ": IDX array of rank 0 has no examples");
  std::optional<uint64_t> size = idxFileSize(bytes, path);
  if (!size)
    throw Error(path + ": truncated IDX header");
  // Checked against the file before anything is allocated.
  std::vector<int64_t> shape = idxShape(bytes);
  size_t offset = 4 + 4 * shape.size();
  if (bytes.size() != *size)
    throw Error(path + ": IDX header says " + rt::typeString(type->dtype, shape) + " (" +
                std::to_string(*size - offset) + " bytes) but the file holds " +
                std::to_string(bytes.size() - offset) + " bytes of data" +
                (bytes.size() < *size ? " (truncated)" : ""));
  Tensor array(type->dtype, shape);
  const auto *src = reinterpret_cast<const uint8_t *>(bytes.data()) + offset;
  auto *dst = static_cast<uint8_t *>(array.data());
  size_t width = rt::dtypeSize(type->dtype);
  for (size_t i = 0; i < array.byteSize(); i += width)
    for (size_t b = 0; b < width; ++b)
      dst[i + b] = src[i + width - 1 - b]; // big-endian to the host's little-endian
  return array;
}

} // namespace

rt::Tensor readArray(const std::string &path) {
  std::string bytes = rt::readFileBytes(path);
  if (isGzip(bytes))
    bytes = gunzip(bytes, path);
  Tensor array = bytes.rfind("\x93NUMPY", 0) == 0 ? rt::parseNpy(bytes, path)
                                                   : parseIdx(bytes, path);
  if (array.rank() == 0)
    throw Error(path + ": a scalar holds no examples; expected an array [count, ...]");
  return array;
}

rt::Tensor convertArray(const rt::Tensor &array, rt::DType dtype, double scale,
                        const std::string &what) {
  if (array.dtype() == dtype && scale == 1.0)
    return array;
  Tensor out(dtype, array.shape(), array.name());
  int64_t n = array.numElements();
  if (dtype == KILN_DTYPE_F32) {
    auto *dst = out.dataAs<float>();
    if (array.dtype() == KILN_DTYPE_U8) { // images: the common case, kept fast
      const auto *src = array.dataAs<uint8_t>();
      for (int64_t i = 0; i < n; ++i)
        dst[i] = static_cast<float>(src[i] * scale);
    } else {
      for (int64_t i = 0; i < n; ++i)
        dst[i] = static_cast<float>(array.elementAsDouble(i) * scale);
    }
    return out;
  }
  if (dtype == KILN_DTYPE_F64) {
    for (int64_t i = 0; i < n; ++i)
      out.dataAs<double>()[i] = array.elementAsDouble(i) * scale;
    return out;
  }
  if (rt::isFloatingPoint(dtype))
    throw Error(what + ": cannot convert " + array.typeString() + " to " +
                std::string(rt::dtypeName(dtype)));
  if (scale != 1.0)
    throw Error(what + ": integer data cannot be scaled");
  // Integer targets: every value must be integral and in range.
  int64_t lo = 0, hi = 0;
  switch (dtype) {
  case KILN_DTYPE_I64: lo = std::numeric_limits<int64_t>::min(); hi = std::numeric_limits<int64_t>::max(); break; // 2^63 - 1 rounds to 2^63: checked below
  case KILN_DTYPE_I32: lo = INT32_MIN; hi = INT32_MAX; break;
  case KILN_DTYPE_I16: lo = INT16_MIN; hi = INT16_MAX; break;
  case KILN_DTYPE_I8: lo = INT8_MIN; hi = INT8_MAX; break;
  case KILN_DTYPE_U8: lo = 0; hi = UINT8_MAX; break;
  default:
    throw Error(what + ": cannot convert " + array.typeString() + " to " +
                std::string(rt::dtypeName(dtype)));
  }
  for (int64_t i = 0; i < n; ++i) {
    double v = array.elementAsDouble(i);
    if (!(v == std::floor(v)) || v < static_cast<double>(lo) || v > static_cast<double>(hi) ||
        v >= 0x1p63)
      throw Error(what + ": element " + std::to_string(i) + " (" + array.formatElement(i) +
                  ") is not a " + std::string(rt::dtypeName(dtype)));
    int64_t value = static_cast<int64_t>(v);
    std::memcpy(static_cast<uint8_t *>(out.data()) + i * rt::dtypeSize(dtype), &value,
                rt::dtypeSize(dtype)); // little-endian: the low bytes come first
  }
  return out;
}

void checkLabels(const rt::Tensor &labels, int64_t classes, const std::string &what) {
  for (int64_t i = 0; i < labels.numElements(); ++i) {
    double v = labels.elementAsDouble(i);
    if (!(v >= 0 && v < static_cast<double>(classes) && v == std::floor(v)))
      throw Error(what + ": label " + std::to_string(i) + " is " + labels.formatElement(i) +
                  ", outside the model's " + std::to_string(classes) + " classes [0, " +
                  std::to_string(classes - 1) + "]");
  }
}

std::vector<int64_t> epochOrder(int64_t count, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    order[i] = i;
  uint64_t state = seed + static_cast<uint64_t>(epoch) * 0x9E3779B97F4A7C15ull;
  auto next = [&state] { // SplitMix64
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  for (int64_t i = count - 1; i > 0; --i) {
    auto j = static_cast<int64_t>((static_cast<unsigned __int128>(next()) *
                                   static_cast<uint64_t>(i + 1)) >> 64);
    std::swap(order[i], order[j]);
  }
  return order;
}

void gatherRows(const rt::Tensor &source, const int64_t *indices, int64_t count,
                rt::Tensor &batch) {
  int64_t rows = batch.shape().empty() ? 1 : batch.shape()[0];
  if (source.dtype() != batch.dtype() || source.shape().empty() || count > rows ||
      source.byteSize() / source.shape()[0] != batch.byteSize() / rows)
    throw Error("cannot gather rows of " + source.typeString() + " into " + batch.typeString());
  size_t rowBytes = batch.byteSize() / rows;
  const auto *src = static_cast<const uint8_t *>(source.data());
  auto *dst = static_cast<uint8_t *>(batch.data());
  for (int64_t r = 0; r < count; ++r)
    std::memcpy(dst + r * rowBytes, src + indices[r] * rowBytes, rowBytes);
  std::memset(dst + count * rowBytes, 0, (rows - count) * rowBytes);
}

} // namespace kiln::train
