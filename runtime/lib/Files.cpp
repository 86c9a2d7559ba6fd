#include "kiln/files.h"

#include "kiln/tensor.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kiln::rt {
namespace {

const char *kindOf(mode_t mode) {
  if (S_ISDIR(mode))
    return "a directory";
  if (S_ISFIFO(mode))
    return "a FIFO";
  if (S_ISSOCK(mode))
    return "a socket";
  if (S_ISCHR(mode) || S_ISBLK(mode))
    return "a device";
  return "not a regular file";
}

std::string directoryOf(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

void syncDirectory(const std::string &dir, const std::string &shownAs) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  // Some file systems cannot sync a directory (EINVAL); the rename is done.
  if (fd < 0 || (::fsync(fd) != 0 && errno != EINVAL)) {
    int error = errno;
    if (fd >= 0)
      ::close(fd);
    throw Error(shownAs + ": cannot sync directory " + dir + ": " + std::strerror(error));
  }
  ::close(fd);
}

} // namespace

int openRegularFile(const std::string &path, std::string &reason) {
  // O_NONBLOCK: opening a FIFO with no writer would otherwise wait forever.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    reason = std::strerror(errno);
    return -1;
  }
  struct stat info;
  if (::fstat(fd, &info) != 0) {
    reason = std::strerror(errno);
    ::close(fd);
    return -1;
  }
  if (!S_ISREG(info.st_mode)) {
    reason = std::string("it is ") + kindOf(info.st_mode) + ", not a regular file";
    ::close(fd);
    return -1;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

bool readRegularFile(const std::string &path, std::string &bytes, std::string &reason) {
  int fd = openRegularFile(path, reason);
  if (fd < 0)
    return false;
  struct stat info;
  bytes.clear();
  if (::fstat(fd, &info) == 0)
    bytes.reserve(static_cast<std::size_t>(info.st_size));
  char chunk[1 << 16];
  for (;;) {
    ssize_t got = ::read(fd, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0) {
      reason = std::string("read error: ") + std::strerror(errno);
      ::close(fd);
      return false;
    }
    if (got == 0)
      break;
    bytes.append(chunk, static_cast<std::size_t>(got));
  }
  ::close(fd);
  return true;
}

std::string readFileBytes(const std::string &path) {
  std::string bytes, reason;
  if (!readRegularFile(path, bytes, reason))
    throw Error(path + ": cannot read: " + reason);
  return bytes;
}

FileWriter::FileWriter(int fd, std::string path, std::string shownAs)
    : fd_(fd), path_(std::move(path)), shownAs_(std::move(shownAs)) {}

FileWriter::~FileWriter() {
  if (fd_ >= 0)
    ::close(fd_);
}

void FileWriter::write(const void *data, size_t size) {
  const auto *p = static_cast<const char *>(data);
  while (size > 0) {
    ssize_t n = ::write(fd_, p, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      fail("cannot write");
    p += n;
    size -= static_cast<size_t>(n);
  }
}

void FileWriter::close() {
  if (::fsync(fd_) != 0)
    fail("cannot sync");
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0)
    fail("cannot close");
}

void FileWriter::fail(const char *what) {
  int error = errno ? errno : EIO;
  throw Error(shownAs_ + ": " + what + " " + path_ + ": " + std::strerror(error));
}

void replaceAtomically(const std::string &path, const std::function<void(FileWriter &)> &fill) {
  // A name of its own (mkstemp), so that no file of the user's is in the way.
  std::string temporary = path + ".tmp.XXXXXX";
  int fd = ::mkostemp(temporary.data(), O_CLOEXEC);
  if (fd < 0)
    throw Error(path + ": cannot create a temporary file beside it: " + std::strerror(errno));
  // mkstemp makes the file private; outputs get the usual permissions.
  mode_t mask = ::umask(0);
  ::umask(mask);
  ::fchmod(fd, 0666 & ~mask);
  try {
    FileWriter out(fd, temporary, path);
    fill(out);
    out.close();
    if (::rename(temporary.c_str(), path.c_str()) != 0)
      throw Error(path + ": cannot rename " + temporary + " to it: " + std::strerror(errno));
  } catch (...) {
    ::unlink(temporary.c_str());
    throw;
  }
  syncDirectory(directoryOf(path), path);
}

void writeFileAtomically(const std::string &path, std::string_view bytes) {
  replaceAtomically(path, [&](FileWriter &out) { out.write(bytes); });
}

void refuseToOverwriteInput(const std::string &output, const std::string &flag,
                            const std::vector<InputFile> &inputs) {
  struct stat out;
  bool exists = ::stat(output.c_str(), &out) == 0;
  for (const InputFile &input : inputs) {
    struct stat in;
    bool same = output == input.path ||
                (exists && ::stat(input.path.c_str(), &in) == 0 && in.st_dev == out.st_dev &&
                 in.st_ino == out.st_ino);
    if (same)
      throw Error(flag + " " + output + ": is " + input.role +
                  (output == input.path ? "" : " (" + input.path + ")") +
                  "; Kiln never overwrites an input: choose another output");
  }
}

} // namespace kiln::rt
