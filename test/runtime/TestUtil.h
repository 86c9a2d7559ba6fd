// Helpers shared by the runtime tests: scratch directories, files and subprocesses.
#ifndef KILN_TEST_RUNTIME_TESTUTIL_H
#define KILN_TEST_RUNTIME_TESTUTIL_H

#include "kiln/runtime.h"

#include <memory>
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

struct ArtifactCloser {
  void operator()(kiln_artifact *artifact) const { kiln_artifact_close(artifact); }
};
using ArtifactPtr = std::unique_ptr<kiln_artifact, ArtifactCloser>;

// What opening an artifact through the C ABI gave: the status, kiln_last_error() on failure,
// and the handle on success.
struct OpenedArtifact {
  kiln_status status;
  std::string message;
  ArtifactPtr artifact;
};

// kiln_artifact_open (device NULL) or kiln_artifact_open_device; on failure also checks that
// the output handle was reset to NULL.
OpenedArtifact openArtifact(const std::string &path, const char *device = nullptr);

} // namespace kiln::test

#endif // KILN_TEST_RUNTIME_TESTUTIL_H
