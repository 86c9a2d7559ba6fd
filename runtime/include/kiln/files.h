// Whole-file reads and writes for Kiln's tools and runtime, with the guarantees users rely on:
// inputs are regular files (a FIFO or a device never blocks or streams forever), outputs are
// written to a temporary file beside them and renamed into place (an interrupted write leaves
// what was there), and no output replaces a file the user gave as an input.
#ifndef KILN_FILES_H
#define KILN_FILES_H

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::rt {

// Opens `path` for reading. Returns -1 and sets `reason` (the system's message, or "it is a
// FIFO, not a regular file") when it cannot be opened or is not a regular file: a FIFO or a
// device would block or never end. The caller closes the descriptor.
int openRegularFile(const std::string &path, std::string &reason);

// Reads the regular file `path` into `bytes`; false, with `reason`, on failure.
bool readRegularFile(const std::string &path, std::string &bytes, std::string &reason);

// The bytes of the regular file `path`; rt::Error naming it on failure.
std::string readFileBytes(const std::string &path);

// A file being written with write(2); every error is thrown as rt::Error naming `shownAs`.
class FileWriter {
public:
  FileWriter(int fd, std::string path, std::string shownAs);
  FileWriter(const FileWriter &) = delete;
  FileWriter &operator=(const FileWriter &) = delete;
  ~FileWriter();
  void write(const void *data, size_t size);
  void write(std::string_view bytes) { write(bytes.data(), bytes.size()); }
  // fsync and close; throws on failure.
  void close();

private:
  [[noreturn]] void fail(const char *what);
  int fd_;
  std::string path_, shownAs_;
};

// Writes `path` through `fill` into a new temporary file beside it, syncs it, renames it over
// `path` and syncs the directory. On failure the temporary file goes, whatever was at `path`
// stays as it was, and rt::Error names the file and the reason.
void replaceAtomically(const std::string &path, const std::function<void(FileWriter &)> &fill);
void writeFileAtomically(const std::string &path, std::string_view bytes);

// A file the user gave and what it is to the tool ("the model", "input 'x'").
struct InputFile {
  std::string path;
  std::string role;
};

// Throws rt::Error when `output` names one of `inputs`: the same path, or the same file through
// another name (a hard or symbolic link). `flag` is the option that chose the output.
void refuseToOverwriteInput(const std::string &output, const std::string &flag,
                            const std::vector<InputFile> &inputs);

} // namespace kiln::rt

#endif // KILN_FILES_H
