// Reading the protobuf wire format by hand, for the few messages the runtime decodes without
// libprotobuf: ONNX TensorProto (.pb tensors) and TensorBoard's Event records. Every read is
// bounds-checked; malformed input throws kiln::rt::Error naming the source and the byte offset
// of the field being read.
#ifndef KILN_RUNTIME_PROTOWIRE_H
#define KILN_RUNTIME_PROTOWIRE_H

#include "kiln/tensor.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace kiln::rt::wire {

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5,
};

// Deeper group nesting than this is hostile input, not a message.
constexpr int kMaxGroupDepth = 64;

template <typename T, typename Bits> T fromBits(Bits bits) {
  static_assert(sizeof(T) == sizeof(Bits));
  T value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

template <typename Bits, typename T> Bits toBits(T value) {
  static_assert(sizeof(T) == sizeof(Bits));
  Bits bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

// Reads the fields of one message. `kind` names the message in errors ("TensorProto",
// "event"); `offset` is where `data` starts in the source, `sourceSize` the source's size.
class WireReader {
public:
  WireReader(std::string_view data, const std::string &source, const char *kind,
             std::size_t offset = 0, std::size_t sourceSize = std::string_view::npos)
      : data_(data), source_(source), kind_(kind), offset_(offset),
        sourceSize_(sourceSize == std::string_view::npos ? data.size() : sourceSize) {}

  bool atEnd() const { return pos_ >= data_.size(); }

  // Reads a tag; returns false at a clean end of the message.
  bool tag(uint32_t &field, uint32_t &wireType) {
    if (atEnd())
      return false;
    fieldStart_ = pos_;
    uint64_t key = varint();
    if ((key >> 3) == 0 || (key >> 3) > 0x1fffffff)
      fail("invalid field number " + std::to_string(key >> 3));
    field = static_cast<uint32_t>(key >> 3);
    wireType = static_cast<uint32_t>(key & 7);
    return true;
  }

  uint64_t varint() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      need(1, "varint");
      uint8_t byte = static_cast<uint8_t>(data_[pos_++]);
      value |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80))
        return value;
    }
    fail("varint longer than 10 bytes");
  }

  uint32_t fixed32() { return static_cast<uint32_t>(fixed(4)); }
  uint64_t fixed64() { return fixed(8); }
  float fixedFloat() { return fromBits<float>(fixed32()); }
  double fixedDouble() { return fromBits<double>(fixed64()); }

  std::string_view lengthDelimited(uint32_t field) {
    uint64_t length = varint();
    if (length > data_.size() - pos_)
      fail("field " + std::to_string(field) + " claims " + std::to_string(length) +
           " bytes but only " + std::to_string(data_.size() - pos_) + " remain (truncated?)");
    std::string_view out = data_.substr(pos_, static_cast<std::size_t>(length));
    pos_ += static_cast<std::size_t>(length);
    return out;
  }

  // A reader over the nested message (or packed run) in length-delimited `field`.
  WireReader message(uint32_t field) {
    std::string_view inner = lengthDelimited(field);
    return WireReader(inner, source_, kind_, offset_ + (inner.data() - data_.data()), sourceSize_);
  }

  void expectWireType(uint32_t field, uint32_t wireType, uint32_t expected) {
    if (wireType != expected)
      fail("field " + std::to_string(field) + " has wire type " + std::to_string(wireType) +
           ", expected " + std::to_string(expected));
  }

  // Skips a field the caller does not read, of any wire type.
  void skip(uint32_t field, uint32_t wireType, int depth = 0) {
    switch (wireType) {
    case kVarint: varint(); return;
    case kFixed64: fixed(8); return;
    case kLengthDelimited: lengthDelimited(field); return;
    case kFixed32: fixed(4); return;
    case kStartGroup: {
      if (depth >= kMaxGroupDepth)
        fail("groups nested too deeply");
      uint32_t innerField, innerWire;
      for (;;) {
        if (!tag(innerField, innerWire))
          fail("unterminated group " + std::to_string(field));
        if (innerWire == kEndGroup) {
          if (innerField != field)
            fail("group " + std::to_string(field) + " closed by field " + std::to_string(innerField));
          return;
        }
        skip(innerField, innerWire, depth + 1);
      }
    }
    case kEndGroup: fail("unexpected end-group for field " + std::to_string(field));
    default:
      fail("invalid wire type " + std::to_string(wireType) + " for field " + std::to_string(field));
    }
  }

  [[noreturn]] void fail(const std::string &what) const {
    throw Error(source_ + ": malformed " + kind_ + " at byte " +
                std::to_string(offset_ + fieldStart_) + " of " + std::to_string(sourceSize_) +
                ": " + what);
  }

private:
  uint64_t fixed(int bytes) {
    need(static_cast<std::size_t>(bytes), bytes == 8 ? "fixed64 value" : "fixed32 value");
    uint64_t value = 0;
    for (int i = 0; i < bytes; ++i)
      value |= static_cast<uint64_t>(static_cast<uint8_t>(data_[pos_++])) << (8 * i);
    return value;
  }
  void need(std::size_t bytes, const char *what) const {
    if (data_.size() - pos_ < bytes)
      fail(std::string("truncated ") + what);
  }

  std::string_view data_;
  const std::string &source_;
  const char *kind_;
  std::size_t offset_, sourceSize_;
  std::size_t pos_ = 0, fieldStart_ = 0;
};

// Repeated scalars arrive packed (one length-delimited run) or one tag per value; protobuf
// parsers accept both, whatever the .proto says.
template <typename ReadOne>
void readRepeated(WireReader &reader, uint32_t field, uint32_t wireType, uint32_t scalarWire,
                  ReadOne &&readOne) {
  if (wireType == scalarWire) {
    readOne(reader);
    return;
  }
  reader.expectWireType(field, wireType, kLengthDelimited);
  WireReader packed = reader.message(field);
  while (!packed.atEnd())
    readOne(packed);
}

} // namespace kiln::rt::wire

#endif // KILN_RUNTIME_PROTOWIRE_H
