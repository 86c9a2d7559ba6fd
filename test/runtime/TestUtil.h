// Helpers shared by the runtime tests: scratch directories, files and subprocesses.
#ifndef KILN_TEST_RUNTIME_TESTUTIL_H
#define KILN_TEST_RUNTIME_TESTUTIL_H

#include <string>
#include <vector>

namespace kiln::test {

// A fresh directory under $TMPDIR, removed with everything in it on destruction.
class TempDir {
public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  const std::string &path() const { return path_; }
  std::string file(const std::string &name) const { return path_ + "/" + name; }

private:
  std::string path_;
};

void writeFile(const std::string &path, const std::string &bytes);
std::string readFile(const std::string &path);

struct CommandResult {
  int exitCode = -1;   // -1 when killed by a signal
  std::string stdOut;
  std::string stdErr;
};

// Runs args[0] directly (no shell) and captures both streams.
CommandResult runCommand(const std::vector<std::string> &args);

} // namespace kiln::test

#endif // KILN_TEST_RUNTIME_TESTUTIL_H
