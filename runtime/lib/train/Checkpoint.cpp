// .npz checkpoints: an uncompressed zip whose members are .npy files, each with its CRC-32,
// written through a temporary file, fsync and rename so a crash never leaves a torn checkpoint
// under the final name.
#include "kiln/train/checkpoint.h"

#include "kiln/files.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <functional>
#include <sys/stat.h>
#include <unistd.h>

namespace kiln::train {
namespace {

using rt::Error;

constexpr char kMetadataMember[] = "kiln-train.txt";
constexpr uint32_t kLocalHeader = 0x04034b50, kCentralHeader = 0x02014b50, kEnd = 0x06054b50;
constexpr uint16_t kZipVersion = 20;  // 2.0: stored members, no zip64
constexpr uint16_t kDosDate = 0x0021; // 1980-01-01, so equal checkpoints are equal bytes

void put16(std::string &out, uint16_t v) {
  out += static_cast<char>(v & 0xff);
  out += static_cast<char>(v >> 8);
}
void put32(std::string &out, uint32_t v) {
  put16(out, static_cast<uint16_t>(v & 0xffff));
  put16(out, static_cast<uint16_t>(v >> 16));
}
uint16_t get16(const std::string &b, size_t at) {
  return static_cast<uint16_t>(static_cast<uint8_t>(b[at]) | static_cast<uint8_t>(b[at + 1]) << 8);
}
uint32_t get32(const std::string &b, size_t at) {
  return get16(b, at) | static_cast<uint32_t>(get16(b, at + 2)) << 16;
}

uint32_t crc32Of(uint32_t crc, const void *data, size_t size) {
  const auto *p = static_cast<const Bytef *>(data);
  while (size > 0) { // zlib takes uInt lengths
    uInt chunk = static_cast<uInt>(std::min<size_t>(size, 1u << 30));
    crc = static_cast<uint32_t>(crc32(crc, p, chunk));
    p += chunk;
    size -= chunk;
  }
  return crc;
}

/// One zip member: a name and its bytes, which are a header plus a payload
/// (the .npy header and the tensor's data, without copying the data).
struct Member {
  std::string name, head;
  const void *payload = nullptr;
  size_t payloadSize = 0;
  uint32_t crc = 0;
  uint64_t offset = 0;
  uint64_t size() const { return head.size() + payloadSize; }
};

/// What a member's local header and its central directory entry both hold,
/// from the flags to the extra field's length.
void putMemberFields(std::string &h, const Member &m) {
  put16(h, 0); // flags
  put16(h, 0); // stored
  put16(h, 0); // time
  put16(h, kDosDate);
  put32(h, m.crc);
  put32(h, static_cast<uint32_t>(m.size()));
  put32(h, static_cast<uint32_t>(m.size()));
  put16(h, static_cast<uint16_t>(m.name.size()));
  put16(h, 0); // extra
}

std::string localHeader(const Member &m) {
  std::string h;
  put32(h, kLocalHeader);
  put16(h, kZipVersion);
  putMemberFields(h, m);
  return h + m.name;
}

std::string centralHeader(const Member &m) {
  std::string h;
  put32(h, kCentralHeader);
  put16(h, kZipVersion); // made by
  put16(h, kZipVersion); // needed
  putMemberFields(h, m);
  put16(h, 0); // comment
  put16(h, 0); // disk
  put16(h, 0); // internal attributes
  put32(h, 0); // external attributes
  put32(h, static_cast<uint32_t>(m.offset));
  return h + m.name;
}

} // namespace

const rt::Tensor *Checkpoint::find(const std::string &name) const {
  for (const rt::Tensor &t : tensors)
    if (t.name() == name)
      return &t;
  return nullptr;
}

void writeCheckpoint(const std::string &path, const std::vector<const rt::Tensor *> &tensors,
                     const std::map<std::string, std::string> &metadata) {
  std::vector<Member> members;
  std::vector<std::string> npyHeaders;
  for (const rt::Tensor *t : tensors) {
    // The data is written from the tensor itself, never copied.
    Member m;
    m.name = t->name() + ".npy";
    m.head = rt::npyHeader(*t);
    m.payload = t->data();
    m.payloadSize = t->byteSize();
    members.push_back(std::move(m));
  }
  Member meta;
  meta.name = kMetadataMember;
  for (const auto &[key, value] : metadata)
    meta.head += key + "=" + value + "\n";
  members.push_back(std::move(meta));

  uint64_t offset = 0;
  for (Member &m : members) {
    if (m.name.size() > 0xffff)
      throw Error(path + ": tensor name too long for a checkpoint: " + m.name);
    m.crc = crc32Of(crc32Of(0, m.head.data(), m.head.size()), m.payload, m.payloadSize);
    m.offset = offset;
    offset += localHeader(m).size() + m.size();
  }
  std::string central;
  for (const Member &m : members)
    central += centralHeader(m);
  if (offset + central.size() > 0xffffffffull || members.size() > 0xffff)
    throw Error(path + ": a checkpoint of " + std::to_string(offset) +
                " bytes is over the 4 GiB a zip without zip64 holds");
  std::string end;
  put32(end, kEnd);
  put16(end, 0);
  put16(end, 0);
  put16(end, static_cast<uint16_t>(members.size()));
  put16(end, static_cast<uint16_t>(members.size()));
  put32(end, static_cast<uint32_t>(central.size()));
  put32(end, static_cast<uint32_t>(offset));
  put16(end, 0);

  rt::replaceAtomically(path, [&](rt::FileWriter &out) {
    for (const Member &m : members) {
      out.write(localHeader(m));
      out.write(m.head);
      if (m.payloadSize)
        out.write(m.payload, m.payloadSize);
    }
    out.write(central);
    out.write(end);
  });
}

Checkpoint readCheckpoint(const std::string &path) {
  std::string bytes = rt::readFileBytes(path);
  auto corrupt = [&](const std::string &why) {
    return Error(path + ": corrupt checkpoint: " + why);
  };
  if (bytes.size() < 22 || get32(bytes, bytes.size() - 22) != kEnd)
    throw corrupt("no zip end record (a torn or truncated file)");
  size_t endAt = bytes.size() - 22;
  size_t count = get16(bytes, endAt + 10);
  size_t centralSize = get32(bytes, endAt + 12), centralAt = get32(bytes, endAt + 16);
  if (centralAt > endAt || centralSize != endAt - centralAt)
    throw corrupt("the central directory is out of place");
  Checkpoint checkpoint;
  size_t at = centralAt;
  for (size_t i = 0; i < count; ++i) {
    if (at + 46 > endAt || get32(bytes, at) != kCentralHeader)
      throw corrupt("bad central directory entry " + std::to_string(i));
    uint16_t method = get16(bytes, at + 10);
    uint32_t crc = get32(bytes, at + 16), size = get32(bytes, at + 20);
    size_t nameSize = get16(bytes, at + 28), extra = get16(bytes, at + 30),
           comment = get16(bytes, at + 32);
    size_t local = get32(bytes, at + 42);
    if (at + 46 + nameSize + extra + comment > endAt)
      throw corrupt("bad central directory entry " + std::to_string(i));
    std::string name = bytes.substr(at + 46, nameSize);
    at += 46 + nameSize + extra + comment;
    if (method != 0)
      throw corrupt("member " + name + " is compressed; Kiln writes and reads stored members");
    if (local + 30 > centralAt || get32(bytes, local) != kLocalHeader)
      throw corrupt("member " + name + " has no local header");
    size_t dataAt = local + 30 + get16(bytes, local + 26) + get16(bytes, local + 28);
    if (dataAt > centralAt || size > centralAt - dataAt)
      throw corrupt("member " + name + " runs past the end of the data");
    if (crc32Of(0, bytes.data() + dataAt, size) != crc)
      throw corrupt("member " + name + " fails its CRC-32 check");
    std::string_view data(bytes.data() + dataAt, size);
    if (name == kMetadataMember) {
      size_t start = 0;
      while (start < data.size()) {
        size_t newline = data.find('\n', start);
        std::string_view line = data.substr(start, newline - start);
        size_t eq = line.find('=');
        if (eq != std::string_view::npos)
          checkpoint.metadata[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
        if (newline == std::string_view::npos)
          break;
        start = newline + 1;
      }
      continue;
    }
    if (name.size() < 4 || name.compare(name.size() - 4, 4, ".npy") != 0)
      continue; // not a tensor: leave it to whoever added it
    rt::Tensor tensor = rt::parseNpy(data, path + ": member " + name);
    tensor.setName(name.substr(0, name.size() - 4));
    checkpoint.tensors.push_back(std::move(tensor));
  }
  return checkpoint;
}

CheckpointDir::CheckpointDir(std::string dir, int keep)
    : dir_(std::move(dir)), keep_(std::max(keep, 1)) {}

void CheckpointDir::prepare() {
  std::string partial;
  size_t start = 0;
  while (start != std::string::npos) { // mkdir -p
    size_t slash = dir_.find('/', start + 1);
    partial = dir_.substr(0, slash);
    if (!partial.empty() && ::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST)
      throw Error(dir_ + ": cannot create checkpoint directory: " + std::strerror(errno));
    start = slash;
  }
  struct stat info;
  if (::stat(dir_.c_str(), &info) != 0 || !S_ISDIR(info.st_mode))
    throw Error(dir_ + ": not a directory");
  if (::access(dir_.c_str(), W_OK) != 0)
    throw Error(dir_ + ": checkpoint directory is not writable: " + std::strerror(errno));
  if (DIR *d = ::opendir(dir_.c_str())) {
    while (dirent *entry = ::readdir(d)) {
      std::string name = entry->d_name;
      // rt::replaceAtomically's temporary files: ckpt-<step>.npz.tmp.XXXXXX.
      if (name.rfind("ckpt-", 0) == 0 && name.find(".npz.tmp.") != std::string::npos)
        ::unlink((dir_ + "/" + name).c_str());
    }
    ::closedir(d);
  }
}

std::string CheckpointDir::save(int64_t step, const std::vector<const rt::Tensor *> &tensors,
                                const std::map<std::string, std::string> &metadata) {
  std::string path = dir_ + "/ckpt-" + std::to_string(step) + ".npz";
  writeCheckpoint(path, tensors, metadata);
  // Keeps this one and the newest keep - 1 before it. Newer files are left
  // alone: they are what a resume skipped (corrupt, or another run's), and
  // counting them could delete the valid checkpoints this run depends on.
  size_t kept = 0;
  for (const auto &[number, other] : list()) {
    if (number > step)
      continue;
    if (++kept > static_cast<size_t>(keep_))
      ::unlink(other.c_str());
  }
  return path;
}

std::vector<std::pair<int64_t, std::string>> CheckpointDir::list() const {
  std::vector<std::pair<int64_t, std::string>> found;
  DIR *d = ::opendir(dir_.c_str());
  if (!d)
    return found;
  while (dirent *entry = ::readdir(d)) {
    std::string name = entry->d_name;
    if (name.rfind("ckpt-", 0) != 0 || name.size() <= 9 ||
        name.compare(name.size() - 4, 4, ".npz") != 0)
      continue;
    std::string digits = name.substr(5, name.size() - 9);
    if (digits.empty() || digits.size() > 18 ||
        !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    found.push_back({std::stoll(digits), dir_ + "/" + name});
  }
  ::closedir(d);
  std::sort(found.begin(), found.end(), [](const auto &a, const auto &b) { return a.first > b.first; });
  return found;
}

} // namespace kiln::train
