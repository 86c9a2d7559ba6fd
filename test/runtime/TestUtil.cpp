// Helpers shared by the runtime tests: scratch directories, files and subprocesses.
#include "TestUtil.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace kiln::test {

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "kiln-rt-test.XXXXXX").string();
  if (!mkdtemp(pattern.data()))
    throw std::runtime_error("mkdtemp failed: " + std::string(std::strerror(errno)));
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out)
    throw std::runtime_error("cannot write " + path);
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error("cannot read " + path);
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

CommandResult runCommand(const std::vector<std::string> &args) {
  // Capture through files: simpler than pipes and cannot deadlock on large output.
  char outName[] = "/tmp/kiln-rt-test-out.XXXXXX";
  char errName[] = "/tmp/kiln-rt-test-err.XXXXXX";
  int outFd = mkstemp(outName);
  int errFd = mkstemp(errName);
  if (outFd < 0 || errFd < 0)
    throw std::runtime_error("mkstemp failed");
  std::vector<char *> argv;
  for (const std::string &arg : args)
    argv.push_back(const_cast<char *>(arg.c_str()));
  argv.push_back(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(outFd, STDOUT_FILENO);
    dup2(errFd, STDERR_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(outFd);
  close(errFd);
  CommandResult result;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status))
    result.exitCode = WEXITSTATUS(status);
  result.stdOut = readFile(outName);
  result.stdErr = readFile(errName);
  unlink(outName);
  unlink(errName);
  return result;
}

OpenedArtifact openArtifact(const std::string &path, const char *device) {
  kiln_artifact *raw = reinterpret_cast<kiln_artifact *>(0x1); // must be reset on failure
  kiln_status status = device ? kiln_artifact_open_device(path.c_str(), device, &raw)
                              : kiln_artifact_open(path.c_str(), &raw);
  OpenedArtifact result{status, status == KILN_OK ? "" : kiln_last_error(), ArtifactPtr(raw)};
  if (status != KILN_OK) {
    EXPECT_EQ(raw, nullptr);
  }
  return result;
}

} // namespace kiln::test
