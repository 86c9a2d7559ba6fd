// NumPy .npy reader/writer (format 1.0-3.0 headers, little-endian, C order), no NumPy needed.
#include "kiln/tensor.h"

#include <cstring>
#include <limits>

namespace kiln::rt {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicSize = 6;

struct NpyDescr {
  const char *code; // without the byte-order character
  DType dtype;
};

constexpr NpyDescr kDescrs[] = {
    {"f4", KILN_DTYPE_F32}, {"f2", KILN_DTYPE_F16}, {"f8", KILN_DTYPE_F64},
    {"i8", KILN_DTYPE_I64}, {"i4", KILN_DTYPE_I32}, {"i2", KILN_DTYPE_I16},
    {"i1", KILN_DTYPE_I8},  {"u1", KILN_DTYPE_U8},  {"u2", KILN_DTYPE_U16},
    {"u4", KILN_DTYPE_U32}, {"u8", KILN_DTYPE_U64}, {"b1", KILN_DTYPE_BOOL},
};

// The header is a Python dict literal; this reads just the subset np.save writes.
class HeaderParser {
public:
  HeaderParser(std::string_view text, const std::string &source) : text_(text), source_(source) {}

  struct Value {
    enum Kind { String, Bool, Tuple } kind;
    std::string string;
    bool boolean = false;
    std::vector<int64_t> tuple;
  };

  template <typename Fn> void parseDict(Fn &&onEntry) {
    expect('{');
    for (;;) {
      skipSpace();
      if (consume('}'))
        return;
      std::string key = parseString();
      expect(':');
      Value value = parseValue();
      onEntry(key, value);
      skipSpace();
      if (consume('}'))
        return;
      expect(',');
    }
  }

private:
  [[noreturn]] void fail(const std::string &what) const {
    throw Error(source_ + ": malformed .npy header (" + what + " at offset " +
                std::to_string(pos_) + "): " + std::string(text_));
  }
  void skipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }
  bool consume(char c) {
    skipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!consume(c))
      fail(std::string("expected '") + c + "'");
  }
  std::string parseString() {
    skipSpace();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"'))
      fail("expected a quoted string");
    char quote = text_[pos_++];
    std::size_t end = text_.find(quote, pos_);
    if (end == std::string_view::npos)
      fail("unterminated string");
    std::string out(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return out;
  }
  bool startsWith(std::string_view word) const { return text_.substr(pos_, word.size()) == word; }
  int64_t parseInt() {
    skipSpace();
    int64_t value = 0;
    std::size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      int digit = text_[pos_] - '0';
      if (value > (std::numeric_limits<int64_t>::max() - digit) / 10)
        fail("dimension too large");
      value = value * 10 + digit;
      ++pos_;
    }
    if (pos_ == start)
      fail("expected a non-negative integer");
    if (pos_ < text_.size() && text_[pos_] == 'L') // Python 2 long suffix
      ++pos_;
    return value;
  }
  Value parseValue() {
    skipSpace();
    Value value{Value::String, {}, false, {}};
    if (pos_ < text_.size() && (text_[pos_] == '\'' || text_[pos_] == '"')) {
      value.string = parseString();
    } else if (startsWith("True") || startsWith("False")) {
      value.kind = Value::Bool;
      value.boolean = startsWith("True");
      pos_ += value.boolean ? 4 : 5;
    } else if (consume('(')) {
      value.kind = Value::Tuple;
      for (;;) {
        if (consume(')'))
          break;
        value.tuple.push_back(parseInt());
        if (consume(')'))
          break;
        expect(',');
      }
    } else if (pos_ < text_.size() && text_[pos_] == '[') {
      fail("structured dtypes are not supported");
    } else {
      fail("unexpected value");
    }
    return value;
  }

  std::string_view text_;
  const std::string &source_;
  std::size_t pos_ = 0;
};

DType dtypeFromDescr(const std::string &descr, const std::string &source) {
  if (descr.size() == 3) {
    char order = descr[0];
    std::string code = descr.substr(1);
    for (const NpyDescr &entry : kDescrs) {
      if (code != entry.code)
        continue;
      // '=' is native order, and this runtime only targets little-endian hosts.
      if (dtypeSize(entry.dtype) == 1 || order == '<' || order == '|' || order == '=')
        return entry.dtype;
      if (order == '>')
        throw Error(source + ": big-endian .npy data ('" + descr +
                    "') is not supported; save it as '<" + code + "'");
    }
  }
  throw Error(source + ": unsupported .npy dtype '" + descr +
              "' (supported: <f4 <f2 <f8 <i8 <i4 <i2 |i1 |u1 <u2 <u4 <u8 |b1)");
}

std::string descrFor(DType dtype) {
  // bf16 has no NumPy dtype; its raw bits travel as <u2.
  DType stored = dtype == KILN_DTYPE_BF16 ? KILN_DTYPE_U16 : dtype;
  for (const NpyDescr &entry : kDescrs)
    if (entry.dtype == stored)
      return std::string(dtypeSize(stored) == 1 ? "|" : "<") + entry.code;
  throw Error("cannot write " + std::string(dtypeName(dtype)) + " to .npy");
}

uint32_t readLittleEndian(std::string_view bytes, std::size_t offset, std::size_t width) {
  uint32_t value = 0;
  for (std::size_t i = 0; i < width; ++i)
    value |= static_cast<uint32_t>(static_cast<uint8_t>(bytes[offset + i])) << (8 * i);
  return value;
}

} // namespace

Tensor parseNpy(std::string_view bytes, const std::string &source) {
  if (bytes.size() < kMagicSize || bytes.substr(0, kMagicSize) != std::string_view(kMagic, kMagicSize))
    throw Error(source + ": not a .npy file (missing \\x93NUMPY magic)");
  if (bytes.size() < kMagicSize + 2)
    throw Error(source + ": truncated .npy header");
  int major = static_cast<uint8_t>(bytes[6]);
  int minor = static_cast<uint8_t>(bytes[7]);
  if (major < 1 || major > 3)
    throw Error(source + ": unsupported .npy format version " + std::to_string(major) + "." +
                std::to_string(minor));
  std::size_t lengthWidth = major == 1 ? 2 : 4;
  std::size_t headerStart = kMagicSize + 2 + lengthWidth;
  if (bytes.size() < headerStart)
    throw Error(source + ": truncated .npy header");
  std::size_t headerLength = readLittleEndian(bytes, kMagicSize + 2, lengthWidth);
  if (headerLength > bytes.size() - headerStart)
    throw Error(source + ": truncated .npy header (needs " + std::to_string(headerLength) +
                " bytes, file has " + std::to_string(bytes.size() - headerStart) + " left)");

  std::string_view header = bytes.substr(headerStart, headerLength);
  std::optional<std::string> descr;
  std::optional<bool> fortranOrder;
  std::optional<std::vector<int64_t>> shape;
  HeaderParser parser(header, source);
  parser.parseDict([&](const std::string &key, const HeaderParser::Value &value) {
    auto wrongType = [&] {
      throw Error(source + ": malformed .npy header (bad value for '" + key + "')");
    };
    if (key == "descr") {
      if (value.kind != HeaderParser::Value::String)
        wrongType();
      descr = value.string;
    } else if (key == "fortran_order") {
      if (value.kind != HeaderParser::Value::Bool)
        wrongType();
      fortranOrder = value.boolean;
    } else if (key == "shape") {
      if (value.kind != HeaderParser::Value::Tuple)
        wrongType();
      shape = value.tuple;
    }
  });
  if (!descr || !fortranOrder || !shape)
    throw Error(source + ": malformed .npy header (needs 'descr', 'fortran_order' and 'shape')");

  DType dtype = dtypeFromDescr(*descr, source);
  if (*fortranOrder) {
    // With at most one dimension above 1 both orders share one layout, so only real
    // Fortran-ordered data is refused.
    int bigDims = 0;
    for (int64_t dim : *shape)
      bigDims += dim > 1;
    if (bigDims > 1)
      throw Error(source + ": Fortran-ordered .npy arrays are not supported; save a C-ordered array "
                           "(np.ascontiguousarray)");
  }

  int64_t count = checkedNumElements(*shape, source);
  std::size_t dataStart = headerStart + headerLength;
  std::size_t available = bytes.size() - dataStart;
  // Compare against the file before allocating so a lying header cannot demand huge memory.
  uint64_t elementSize = dtypeSize(dtype);
  if (static_cast<uint64_t>(count) > available / elementSize)
    throw Error(source + ": truncated .npy data (" + typeString(dtype, *shape) + " needs " +
                (static_cast<uint64_t>(count) <= std::numeric_limits<uint64_t>::max() / elementSize
                     ? std::to_string(static_cast<uint64_t>(count) * elementSize)
                     : std::string("over 2^64")) +
                " bytes, file has " + std::to_string(available) + ")");
  uint64_t needed = static_cast<uint64_t>(count) * elementSize;
  if (needed != available)
    throw Error(source + ": " + std::to_string(available - needed) +
                " unexpected bytes after the .npy data of " + typeString(dtype, *shape));

  Tensor tensor(dtype, *shape);
  if (tensor.byteSize())
    std::memcpy(tensor.data(), bytes.data() + dataStart, tensor.byteSize());
  if (dtype == KILN_DTYPE_BOOL) {
    // Generated code may rely on bools being exactly 0 or 1.
    uint8_t *values = tensor.dataAs<uint8_t>();
    for (int64_t i = 0; i < count; ++i)
      values[i] = values[i] != 0;
  }
  return tensor;
}

std::string npyHeader(const Tensor &tensor) {
  std::string dict = "{'descr': '" + descrFor(tensor.dtype()) + "', 'fortran_order': False, 'shape': (";
  for (int i = 0; i < tensor.rank(); ++i) {
    dict += std::to_string(tensor.shape()[i]);
    if (tensor.rank() == 1 || i + 1 < tensor.rank())
      dict += tensor.rank() == 1 ? "," : ", ";
  }
  dict += "), }";

  // np.save pads the header with spaces and a newline so the data starts 64-byte aligned.
  std::size_t preamble = kMagicSize + 2 + 2;
  bool version2 = false;
  std::size_t total = (preamble + dict.size() + 1 + 63) / 64 * 64;
  if (total - preamble > 0xffff) {
    version2 = true;
    preamble = kMagicSize + 2 + 4;
    total = (preamble + dict.size() + 1 + 63) / 64 * 64;
  }
  std::size_t headerLength = total - preamble;
  dict.append(headerLength - dict.size() - 1, ' ');
  dict += '\n';

  std::string out(kMagic, kMagicSize);
  out += static_cast<char>(version2 ? 2 : 1);
  out += static_cast<char>(0);
  for (std::size_t i = 0; i < (version2 ? 4u : 2u); ++i)
    out += static_cast<char>((headerLength >> (8 * i)) & 0xff);
  out += dict;
  return out;
}

std::string serializeNpy(const Tensor &tensor) {
  std::string out = npyHeader(tensor);
  out.append(static_cast<const char *>(tensor.data()), tensor.byteSize());
  return out;
}

} // namespace kiln::rt
