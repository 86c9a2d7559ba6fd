// kiln-conformance: compiles and runs the ONNX backend node tests through kilnc and kiln-run.
#include "common/Flags.h"
#include "kiln/artifact.h"
#include "kiln/manifest.h"
#include "kiln/tensor.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

using kiln::rt::Error;
using kiln::rt::Tensor;
using kiln::rt::TensorSpec;

#define KILN_DEFAULT_DATA_DIR "/usr/share/libonnx-testdata/data/node"
// kilnc's exit codes for "Kiln does not implement this" and "freeze these inputs and retry".
constexpr int kKilncUnsupported = 3;
constexpr int kKilncNeedsFrozenInputs = 4;
// Captured output beyond this is dropped; only the first lines are ever reported.
constexpr std::size_t kMaxCapture = 1 << 20;
constexpr int kUsageExit = 2;

const char kUsage[] = R"(usage: kiln-conformance --kilnc PATH --kiln-run PATH [options]
       kiln-conformance --kilnc PATH --compile-only --work-dir DIR --keep [options]
       kiln-conformance --prebuilt DIR --kiln-run PATH [options]

Compiles every ONNX backend node test with kilnc, runs each test_data_set_* through kiln-run,
and compares the outputs with ONNX's reference outputs (floats: |got-want| <= atol + rtol*|want|,
by default ONNX's own atol 1e-7 and rtol 1e-3; NaN matches NaN, infinities must match exactly;
integers and bools exactly).

Per test it prints one line: PASS test_x, FAIL test_x: <reason>, or SKIP test_x: <kilnc message>
(kilnc exit code 3 = unsupported). When kilnc exits with code 4 and prints
"--freeze-input NAME" hints, the test is compiled again with
"--freeze-input NAME=<test_data_set_0 .pb of that input>" for each hinted input.

Options:
  --kilnc PATH          the compiler to test (required, except with --prebuilt)
  --kiln-run PATH       the runner to use (required, except with --compile-only)
  --data-dir DIR        node test directory (default )" KILN_DEFAULT_DATA_DIR R"()
  --filter REGEX        run only tests whose name matches REGEX (ECMAScript, partial match)
  --expected FILE       tests expected to pass, one per line, '#' starts a comment; any of them
                        that does not pass is a REGRESSION, passing tests not listed are reported
                        as newly passing
  --write-passing FILE  write the sorted names of the passing tests to FILE
  --jobs N              tests run in parallel (default: number of CPUs)
  --timeout SECONDS     limit for each kilnc or kiln-run process (default 120)
  --rtol R              relative tolerance for float outputs (default 1e-3)
  --atol A              absolute tolerance for float outputs (default 1e-7); whole models whose
                        reference comes from another runtime need a larger one, since values near
                        zero are sums of terms that cancel
  --kilnc-arg ARG       pass ARG to every kilnc call, after the model and its output (repeatable),
                        e.g. --kilnc-arg=--target=cuda:sm_90
  --kiln-run-arg ARG    pass ARG to every kiln-run call (repeatable), e.g. --kiln-run-arg=--device=gpu:0
  --prebuilt DIR        run the artifacts DIR/<test>.kiln that an earlier --compile-only
                        --work-dir DIR --keep run wrote, instead of compiling (on a machine without
                        kilnc, e.g. one with the GPU); a test with no artifact there is skipped
  --compile-only        compile every test but run none: a test passes when kilnc succeeds and the
                        artifact it wrote passes the runtime's load checks that need no device
                        (manifest, GPU program, symbols), so GPU code is checked on machines
                        without a GPU; with --expected, every expected test must compile
  --work-dir DIR        keep artifacts and outputs in DIR (default: a temporary directory)
  --keep                do not delete the temporary work directory
  --verbose             show commands and the full stderr of failing steps
  --help                show this help

The last line is "N passed, N failed, N skipped". Exit status: 1 if any expected test regressed
(with --expected) or any test failed (without it), 2 for usage or setup errors, otherwise 0.

Examples:
  kiln-conformance --kilnc build/bin/kilnc --kiln-run build/bin/kiln-run \
      --expected test/conformance/expected.txt --filter '^test_(abs|add)'
  kiln-conformance --kilnc build/bin/kilnc --kiln-run build/bin/kiln-run \
      --kilnc-arg=--target=cuda:sm_90 --kiln-run-arg=--device=gpu:0
)";

struct Options {
  std::string kilnc;
  std::string kilnRun;
  std::string dataDir = KILN_DEFAULT_DATA_DIR;
  std::optional<std::string> expectedFile;
  std::optional<std::string> filter;
  std::optional<std::string> writePassing;
  unsigned jobs = 0;
  double timeoutSeconds = 120;
  // ONNX's backend test tolerances (onnx/backend/test/case/node: rtol=1e-3, atol=1e-7).
  double relativeTolerance = 1e-3;
  double absoluteTolerance = 1e-7;
  std::optional<std::string> workDir;
  bool keep = false;
  bool verbose = false;
  std::vector<std::string> kilncArgs;
  std::vector<std::string> kilnRunArgs;
  bool compileOnly = false;
  // Artifacts an earlier --compile-only --work-dir run wrote, run instead of compiling.
  std::string prebuilt;
};

class UsageError : public Error {
public:
  using Error::Error;
};

// ---------------------------------------------------------------------------------------------
// Interruption: SIGINT/SIGTERM/SIGHUP are blocked in every thread and taken by one waiter thread,
// which kills the process groups of running children so that nothing outlives the runner.

std::atomic<int> gInterrupted{0};
std::mutex gChildrenMutex;
std::set<pid_t> gChildren; // process-group leaders that have not been reaped yet

sigset_t terminationSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  return set;
}

void startSignalWaiter() {
  sigset_t set = terminationSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread([set] {
    int signal = 0;
    if (sigwait(&set, &signal) != 0)
      return;
    gInterrupted = signal;
    std::lock_guard<std::mutex> lock(gChildrenMutex);
    for (pid_t group : gChildren)
      kill(-group, SIGKILL);
  }).detach();
}

// ---------------------------------------------------------------------------------------------
// Child processes.

struct ProcessResult {
  std::string startError; // non-empty when the program could not be started
  bool timedOut = false;
  int signal = 0; // killed by this signal
  int exitCode = -1;
  std::string out;
  std::string err;
};

void appendCapped(std::string &buffer, const char *data, std::size_t size) {
  if (buffer.size() < kMaxCapture)
    buffer.append(data, std::min(size, kMaxCapture - buffer.size()));
}

// Runs argv[0] (an absolute path) in its own process group with stdin from /dev/null, capturing
// stdout and stderr. At the deadline the whole group is killed; stragglers left behind by a child
// that exited are killed too.
ProcessResult runProcess(const std::vector<std::string> &args, double timeoutSeconds) {
  ProcessResult result;
  if (gInterrupted) {
    result.startError = "interrupted";
    return result;
  }
  std::vector<char *> argv;
  for (const std::string &arg : args)
    argv.push_back(const_cast<char *>(arg.c_str()));
  argv.push_back(nullptr);

  // O_CLOEXEC keeps these pipes out of children that other worker threads start concurrently,
  // whose copies would otherwise delay end-of-file here.
  int pipes[3][2]; // stdout, stderr, exec failure report
  for (int i = 0; i < 3; ++i) {
    if (pipe2(pipes[i], O_CLOEXEC) != 0) {
      result.startError = std::string("cannot create a pipe: ") + std::strerror(errno);
      for (int j = 0; j < i; ++j)
        close(pipes[j][0]), close(pipes[j][1]);
      return result;
    }
  }
  int *outPipe = pipes[0], *errPipe = pipes[1], *execPipe = pipes[2];

  sigset_t empty;
  sigemptyset(&empty);
  // Holding the registry lock from the interruption check until the child is registered means
  // the signal waiter either stops this start or sees (and kills) the new process group.
  std::unique_lock<std::mutex> registry(gChildrenMutex);
  pid_t pid = gInterrupted ? -2 : fork();
  if (pid == 0) {
    // Only async-signal-safe calls between fork and exec.
    setpgid(0, 0);
    pthread_sigmask(SIG_SETMASK, &empty, nullptr);
    int devNull = open("/dev/null", O_RDONLY);
    if (devNull >= 0)
      dup2(devNull, STDIN_FILENO);
    dup2(outPipe[1], STDOUT_FILENO);
    dup2(errPipe[1], STDERR_FILENO);
    execv(argv[0], argv.data());
    int error = errno;
    ssize_t ignored = write(execPipe[1], &error, sizeof error);
    (void)ignored;
    _exit(127);
  }
  if (pid < 0) {
    result.startError = pid == -2 ? std::string("interrupted")
                                  : std::string("fork failed: ") + std::strerror(errno);
    registry.unlock();
    for (int fd : {outPipe[0], outPipe[1], errPipe[0], errPipe[1], execPipe[0], execPipe[1]})
      close(fd);
    return result;
  }
  setpgid(pid, pid); // also from the parent, so the group exists before any kill below
  gChildren.insert(pid);
  registry.unlock();
  close(outPipe[1]);
  close(errPipe[1]);
  close(execPipe[1]);

  int execError = 0;
  ssize_t got;
  do
    got = read(execPipe[0], &execError, sizeof execError);
  while (got < 0 && errno == EINTR);
  close(execPipe[0]);
  if (got == static_cast<ssize_t>(sizeof execError))
    result.startError = std::string("cannot execute ") + args[0] + ": " + std::strerror(execError);

  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<int64_t>(timeoutSeconds * 1000));
  struct pollfd fds[2] = {{outPipe[0], POLLIN, 0}, {errPipe[0], POLLIN, 0}};
  std::string *sinks[2] = {&result.out, &result.err};
  bool exited = false;
  for (;;) {
    if (!exited) {
      siginfo_t info;
      info.si_pid = 0;
      // WNOWAIT leaves the child a zombie, so its pid (the group id) cannot be reused while we
      // kill the group's stragglers.
      if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
          info.si_pid == pid) {
        exited = true;
        kill(-pid, SIGKILL);
      }
    }
    auto now = std::chrono::steady_clock::now();
    if (!exited && now >= deadline) {
      result.timedOut = true;
      kill(-pid, SIGKILL);
      exited = true; // the leader dies now; drain what is left
    }
    if (fds[0].fd < 0 && fds[1].fd < 0) {
      if (exited)
        break;
      // Pipes closed but the child lives on: keep checking until it exits or times out.
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    int ready = poll(fds, 2, exited ? 200 : 50);
    if (ready < 0 && errno != EINTR)
      break;
    if (ready == 0 && exited)
      break; // every writer is dead; nothing more will come
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      char buffer[8192];
      ssize_t n = read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        appendCapped(*sinks[i], buffer, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
      }
    }
  }
  for (struct pollfd &fd : fds)
    if (fd.fd >= 0)
      close(fd.fd);

  {
    std::lock_guard<std::mutex> lock(gChildrenMutex);
    gChildren.erase(pid);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status))
    result.exitCode = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    result.signal = WTERMSIG(status);
  return result;
}

// strsignal is not thread-safe; these are the signals a crashing compiler or model dies of.
std::string signalName(int signal) {
  switch (signal) {
  case SIGSEGV: return "Segmentation fault";
  case SIGABRT: return "Aborted";
  case SIGBUS: return "Bus error";
  case SIGFPE: return "Floating point exception";
  case SIGILL: return "Illegal instruction";
  case SIGKILL: return "Killed";
  case SIGTERM: return "Terminated";
  case SIGINT: return "Interrupt";
  case SIGHUP: return "Hangup";
  case SIGPIPE: return "Broken pipe";
  case SIGTRAP: return "Trace/breakpoint trap";
  default: return "signal " + std::to_string(signal);
  }
}

std::string trim(std::string_view text) {
  std::size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string_view::npos)
    return {};
  std::size_t end = text.find_last_not_of(" \t\r\n");
  return std::string(text.substr(begin, end - begin + 1));
}

std::string firstLine(const std::string &text) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    std::string line = trim(std::string_view(text).substr(pos, end == std::string::npos ? end : end - pos));
    if (!line.empty())
      return line;
    if (end == std::string::npos)
      break;
    pos = end + 1;
  }
  return {};
}

std::string commandLine(const std::vector<std::string> &args) {
  std::string out;
  for (const std::string &arg : args) {
    bool plain = !arg.empty() && arg.find_first_of(" \t'\"\\$`*?;&|<>()") == std::string::npos;
    out += (out.empty() ? "" : " ") + (plain ? arg : "'" + arg + "'");
  }
  return out;
}

// Why a process did not succeed, in one line; empty when it exited 0.
std::string processFailure(const std::string &tool, const ProcessResult &result,
                           double timeoutSeconds, const std::string &stripPrefix = {}) {
  if (!result.startError.empty())
    return result.startError;
  if (result.timedOut)
    return tool + " timed out after " + std::to_string(static_cast<long>(timeoutSeconds)) + " s";
  std::string message = firstLine(result.err);
  if (!stripPrefix.empty() && message.rfind(stripPrefix, 0) == 0)
    message.erase(0, stripPrefix.size());
  if (result.signal)
    return tool + " crashed (signal " + std::to_string(result.signal) + ", " +
           signalName(result.signal) + ")" + (message.empty() ? "" : ": " + message);
  if (result.exitCode != 0)
    return tool + " exited with " + std::to_string(result.exitCode) +
           (message.empty() ? "" : ": " + message);
  return {};
}

// ---------------------------------------------------------------------------------------------
// Test data.

// Files named PREFIX<N>SUFFIX (input_0.pb, test_data_set_3) in numeric order of N.
std::vector<fs::path> numbered(const fs::path &dir, const std::string &prefix,
                               const std::string &suffix, bool directories) {
  std::vector<std::pair<long, fs::path>> found;
  std::error_code ec;
  for (const fs::directory_entry &entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    if (name.size() <= prefix.size() + suffix.size() || name.rfind(prefix, 0) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
      continue;
    std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    if (digits.empty() || digits.size() > 9 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      continue;
    if (entry.is_directory(ec) != directories)
      continue;
    found.emplace_back(std::stol(digits), entry.path());
  }
  std::sort(found.begin(), found.end());
  std::vector<fs::path> paths;
  for (auto &item : found)
    paths.push_back(item.second);
  return paths;
}

// "test_data_set_0/input_1.pb": short enough for a one-line reason, still unambiguous.
std::string shortName(const fs::path &path) {
  return (path.parent_path().filename() / path.filename()).string();
}

Tensor readProto(const fs::path &path) {
  try {
    return kiln::rt::readTensorProto(path.string());
  } catch (const Error &e) {
    // Messages start with the full path; the test line already names the test.
    std::string message = e.what();
    if (message.rfind(path.string(), 0) == 0)
      message = shortName(path) + message.substr(path.string().size());
    throw Error(message);
  }
}

// Names after "--freeze-input" in kilnc's stderr, in order of first mention.
std::vector<std::string> freezeHints(const std::string &text) {
  static const std::string kFlag = "--freeze-input";
  std::vector<std::string> names;
  for (std::size_t pos = text.find(kFlag); pos != std::string::npos; pos = text.find(kFlag, pos + 1)) {
    std::size_t start = pos + kFlag.size();
    while (start < text.size() && (text[start] == ' ' || text[start] == '=' || text[start] == '\t'))
      ++start;
    std::size_t end = text.find_first_of(" \t\r\n", start);
    std::string token = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
    while (!token.empty() && std::strchr("'\"`", token.front()))
      token.erase(0, 1);
    while (!token.empty() && std::strchr("'\"`,;:)", token.back()))
      token.pop_back();
    if (std::size_t eq = token.find('='); eq != std::string::npos)
      token.resize(eq);
    if (!token.empty() && token[0] != '<' && std::find(names.begin(), names.end(), token) == names.end())
      names.push_back(token);
  }
  return names;
}

// ---------------------------------------------------------------------------------------------
// Comparison.

std::string formatDouble(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.9g", value);
  return buffer;
}

// Empty when `got` matches `want` under ONNX's rules; otherwise the reason.
std::string compareTensors(const Tensor &got, const Tensor &wantAsStored, const std::string &name,
                           double relativeTolerance, double absoluteTolerance) {
  std::string label = "output '" + name + "'";
  // ONNX's test data stores bfloat16 references as their uint16 bits.
  Tensor want = wantAsStored;
  if (got.dtype() == KILN_DTYPE_BF16 && want.dtype() == KILN_DTYPE_U16)
    want.reinterpret(KILN_DTYPE_BF16);
  if (got.dtype() != want.dtype() || got.shape() != want.shape())
    return label + ": expected " + want.typeString() + ", got " + got.typeString();
  int64_t count = want.numElements();
  int64_t mismatches = 0;
  int64_t worstIndex = -1;
  double worstDiff = -1;
  if (kiln::rt::isFloatingPoint(want.dtype())) {
    for (int64_t i = 0; i < count; ++i) {
      double a = got.elementAsDouble(i), b = want.elementAsDouble(i);
      bool ok;
      if (std::isnan(b))
        ok = std::isnan(a);
      else if (std::isinf(a) || std::isinf(b))
        ok = a == b;
      else
        ok = !std::isnan(a) && std::fabs(a - b) <= absoluteTolerance + relativeTolerance * std::fabs(b);
      if (ok)
        continue;
      ++mismatches;
      double diff = std::isnan(a) || std::isnan(b) ? INFINITY : std::fabs(a - b);
      if (std::isnan(diff))
        diff = INFINITY; // inf - inf of opposite signs
      if (diff > worstDiff) {
        worstDiff = diff;
        worstIndex = i;
      }
    }
    if (!mismatches)
      return {};
    return label + ": " + std::to_string(mismatches) + " of " + std::to_string(count) +
           " values differ, max |diff| " + formatDouble(worstDiff) + " at index " +
           std::to_string(worstIndex) + " (got " + got.formatElement(worstIndex) + ", expected " +
           want.formatElement(worstIndex) + ")";
  }
  std::size_t size = kiln::rt::dtypeSize(want.dtype());
  const auto *a = static_cast<const uint8_t *>(got.data());
  const auto *b = static_cast<const uint8_t *>(want.data());
  for (int64_t i = 0; i < count; ++i) {
    if (std::memcmp(a + i * size, b + i * size, size) == 0)
      continue;
    if (!mismatches++)
      worstIndex = i;
  }
  if (!mismatches)
    return {};
  return label + ": " + std::to_string(mismatches) + " of " + std::to_string(count) +
         " values differ, first at index " + std::to_string(worstIndex) + " (got " +
         got.formatElement(worstIndex) + ", expected " + want.formatElement(worstIndex) + ")";
}

// ---------------------------------------------------------------------------------------------
// One test.

enum class Outcome { Pass, Fail, Skip };

struct TestResult {
  Outcome outcome = Outcome::Fail;
  std::string reason;
  std::string details; // --verbose only
};

class TestRunner {
public:
  TestRunner(const Options &options, fs::path workDir) : options_(options), workDir_(std::move(workDir)) {}

  TestResult run(const std::string &test) const {
    TestResult result;
    try {
      runChecked(test, result);
    } catch (const std::bad_alloc &) {
      fail(result, "out of memory");
    } catch (const std::exception &e) {
      fail(result, e.what());
    }
    // Paths inside the work directory only add noise: "test_x.kiln: ..." says the same.
    std::string prefix = workDir_.string() + "/";
    for (std::size_t at; (at = result.reason.find(prefix)) != std::string::npos;)
      result.reason.erase(at, prefix.size());
    return result;
  }

private:
  static void fail(TestResult &result, std::string reason) {
    result.outcome = Outcome::Fail;
    result.reason = std::move(reason);
  }

  ProcessResult execute(const std::vector<std::string> &args, TestResult &result) const {
    ProcessResult process = runProcess(args, options_.timeoutSeconds);
    if (options_.verbose) {
      result.details += "  $ " + commandLine(args) + "\n";
      bool failed = !process.startError.empty() || process.timedOut || process.signal || process.exitCode != 0;
      if (failed && !process.err.empty()) {
        std::string err = process.err;
        if (err.back() != '\n')
          err += '\n';
        for (std::size_t pos = 0; pos < err.size();) {
          std::size_t end = err.find('\n', pos);
          result.details += "  | " + err.substr(pos, end - pos) + "\n";
          pos = end + 1;
        }
      }
    }
    return process;
  }

  void runChecked(const std::string &test, TestResult &result) const {
    // input_K.pb files compiled into the artifact by --freeze-input (same K in every data set).
    std::set<std::string> frozen;
    fs::path testDir = fs::path(options_.dataDir) / test;
    fs::path model = testDir / "model.onnx";
    std::error_code ec;
    if (!fs::is_regular_file(model, ec))
      return fail(result, "no model.onnx in " + testDir.string());
    std::vector<fs::path> dataSets = numbered(testDir, "test_data_set_", "", true);
    if (dataSets.empty())
      return fail(result, "no test_data_set_* directories in " + testDir.string());

    if (!options_.prebuilt.empty())
      return runPrebuilt(test, dataSets, result);

    // Compile.
    fs::path artifactPath = workDir_ / (test + ".kiln");
    fs::remove(artifactPath, ec);
    std::vector<std::string> freezeArgs;
    auto compileCommand = [&] {
      std::vector<std::string> command = {options_.kilnc, model.string(), "-o", artifactPath.string()};
      command.insert(command.end(), freezeArgs.begin(), freezeArgs.end());
      command.insert(command.end(), options_.kilncArgs.begin(), options_.kilncArgs.end());
      return command;
    };
    ProcessResult compiled = execute(compileCommand(), result);
    // kilnc reports the shape-deciding inputs it meets one node at a time, so
    // freezing can take several rounds; each round must freeze something new.
    std::map<std::string, fs::path> inputsByName = inputNames(dataSets.front());
    while (compiled.startError.empty() && !compiled.timedOut && !compiled.signal &&
           compiled.exitCode == kKilncNeedsFrozenInputs) {
      std::vector<std::string> hints = freezeHints(compiled.err);
      if (hints.empty())
        return fail(result, processFailure("kilnc", compiled, options_.timeoutSeconds) +
                                " (exit 4 without --freeze-input hints)");
      for (const std::string &hint : hints) {
        std::string name = hint;
        if (!inputsByName.count(name)) {
          try {
            name = kiln::rt::percentDecode(hint, "kilnc hint");
          } catch (const Error &) {
          }
        }
        auto found = inputsByName.find(name);
        if (found == inputsByName.end())
          return fail(result, "kilnc asked to freeze input '" + hint + "', but no input_*.pb in " +
                                  dataSets.front().filename().string() + " has that name");
        if (!frozen.insert(found->second.filename().string()).second)
          return fail(result, "kilnc asked again to freeze input '" + hint +
                                  "', which is already frozen");
        freezeArgs.push_back("--freeze-input");
        freezeArgs.push_back(hint + "=" + found->second.string());
      }
      compiled = execute(compileCommand(), result);
    }
    if (compiled.startError.empty() && !compiled.timedOut && !compiled.signal &&
        compiled.exitCode == kKilncUnsupported) {
      result.outcome = Outcome::Skip;
      result.reason = firstLine(compiled.err);
      if (result.reason.empty())
        result.reason = "unsupported (kilnc exit 3)";
      return;
    }
    if (std::string why = processFailure("kilnc", compiled, options_.timeoutSeconds); !why.empty())
      return fail(result, why);
    if (!fs::is_regular_file(artifactPath, ec))
      return fail(result, "kilnc exited 0 but wrote no " + artifactPath.string());

    // The manifest says which inputs survived freezing and the order of the outputs. Reading it
    // needs no device, so GPU artifacts are checked here even where no GPU is.
    kiln::rt::ArtifactInfo info = kiln::rt::inspectArtifact(artifactPath.string());
    if (options_.compileOnly) {
      result.outcome = Outcome::Pass;
      return;
    }
    const std::vector<TensorSpec> &manifestInputs = info.manifest.inputs;
    const std::vector<TensorSpec> &manifestOutputs = info.manifest.outputs;

    for (const fs::path &dataSet : dataSets) {
      std::string where = dataSets.size() > 1 ? dataSet.filename().string() + ": " : "";
      std::string why =
          runDataSet(test, artifactPath, dataSet, frozen, manifestInputs, manifestOutputs, result);
      if (!why.empty())
        return fail(result, where + why);
    }
    result.outcome = Outcome::Pass;
  }

  // Runs the artifact a --compile-only run left in --prebuilt. The inputs it was compiled with
  // frozen are the data set's inputs its manifest does not list.
  void runPrebuilt(const std::string &test, const std::vector<fs::path> &dataSets,
                   TestResult &result) const {
    fs::path artifactPath = fs::path(options_.prebuilt) / (test + ".kiln");
    std::error_code ec;
    if (!fs::is_regular_file(artifactPath, ec)) {
      result.outcome = Outcome::Skip;
      result.reason = "no prebuilt artifact " + artifactPath.string();
      return;
    }
    kiln::rt::ArtifactInfo info = kiln::rt::inspectArtifact(artifactPath.string());
    std::set<std::string> listed;
    for (const TensorSpec &spec : info.manifest.inputs)
      listed.insert(spec.name);
    std::set<std::string> frozen;
    for (const auto &[name, file] : inputNames(dataSets.front()))
      if (!listed.count(name))
        frozen.insert(file.filename().string());
    for (const fs::path &dataSet : dataSets) {
      std::string where = dataSets.size() > 1 ? dataSet.filename().string() + ": " : "";
      std::string why = runDataSet(test, artifactPath, dataSet, frozen, info.manifest.inputs,
                                   info.manifest.outputs, result);
      if (!why.empty())
        return fail(result, where + why);
    }
    result.outcome = Outcome::Pass;
  }

  // input_K.pb files of a data set by their TensorProto name; unreadable files are left out (the
  // run step reports them if they matter).
  static std::map<std::string, fs::path> inputNames(const fs::path &dataSet) {
    std::map<std::string, fs::path> byName;
    for (const fs::path &file : numbered(dataSet, "input_", ".pb", false)) {
      try {
        byName.emplace(readProto(file).name(), file);
      } catch (const Error &) {
      }
    }
    return byName;
  }

  std::string runDataSet(const std::string &test, const fs::path &artifactPath, const fs::path &dataSet,
                         const std::set<std::string> &frozen,
                         const std::vector<TensorSpec> &manifestInputs,
                         const std::vector<TensorSpec> &manifestOutputs, TestResult &result) const {
    // Bind inputs by name; unnamed (old-style) files fall back to order among the unfrozen ones.
    std::vector<std::pair<std::string, fs::path>> available; // name, file
    bool allNamed = true;
    for (const fs::path &file : numbered(dataSet, "input_", ".pb", false)) {
      if (frozen.count(file.filename().string()))
        continue;
      std::string name = readProto(file).name();
      allNamed = allNamed && !name.empty();
      available.emplace_back(name, file);
    }
    std::vector<std::string> run = {options_.kilnRun, artifactPath.string()};
    run.insert(run.end(), options_.kilnRunArgs.begin(), options_.kilnRunArgs.end());
    for (std::size_t i = 0; i < manifestInputs.size(); ++i) {
      const std::string &name = manifestInputs[i].name;
      auto match = std::find_if(available.begin(), available.end(),
                                [&](const auto &item) { return item.first == name; });
      if (match == available.end() && !allNamed && available.size() == manifestInputs.size())
        match = available.begin() + static_cast<std::ptrdiff_t>(i);
      if (match == available.end())
        return "artifact input '" + name + "' has no input_*.pb in " + dataSet.filename().string();
      run.push_back("--input");
      run.push_back(name + "=" + match->second.string());
    }

    fs::path outDir = workDir_ / (test + ".out") / dataSet.filename();
    std::error_code ec;
    fs::remove_all(outDir, ec);
    fs::create_directories(outDir, ec);
    if (ec)
      return "cannot create " + outDir.string() + ": " + ec.message();
    run.insert(run.end(), {"--output-dir", outDir.string(), "--output-format", "pb"});
    ProcessResult ran = execute(run, result);
    if (std::string why = processFailure("kiln-run", ran, options_.timeoutSeconds, "kiln-run: error: ");
        !why.empty())
      return why;

    std::map<std::string, Tensor> producedByName;
    for (const fs::directory_entry &entry : fs::directory_iterator(outDir, ec)) {
      if (entry.path().extension() != ".pb")
        continue;
      Tensor tensor = readProto(entry.path());
      std::string name = tensor.name();
      producedByName.emplace(std::move(name), std::move(tensor));
    }
    std::vector<const Tensor *> produced;
    for (const TensorSpec &spec : manifestOutputs) {
      auto found = producedByName.find(spec.name);
      if (found == producedByName.end())
        return "kiln-run wrote no file for output '" + spec.name + "'";
      produced.push_back(&found->second);
    }

    std::vector<fs::path> expectedFiles = numbered(dataSet, "output_", ".pb", false);
    if (expectedFiles.empty())
      return "no output_*.pb in " + dataSet.filename().string();
    for (std::size_t k = 0; k < expectedFiles.size(); ++k) {
      Tensor want = readProto(expectedFiles[k]);
      const Tensor *got = nullptr;
      std::string name = want.name();
      for (std::size_t i = 0; i < manifestOutputs.size() && !got; ++i)
        if (!name.empty() && manifestOutputs[i].name == name)
          got = produced[i];
      if (!got && k < produced.size()) {
        got = produced[k]; // unnamed or renamed: fall back to manifest order
        if (name.empty())
          name = manifestOutputs[k].name;
      }
      if (!got)
        return shortName(expectedFiles[k]) + " ('" + want.name() + "') has no matching artifact output";
      if (std::string why = compareTensors(*got, want, name, options_.relativeTolerance,
                                             options_.absoluteTolerance); !why.empty())
        return why;
    }
    return {};
  }

  const Options &options_;
  fs::path workDir_;
};

// ---------------------------------------------------------------------------------------------
// Driver.

double parsePositive(const std::string &flag, const std::string &text, double max) {
  char *end = nullptr;
  errno = 0;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno != 0 || !(value > 0) || value > max)
    throw UsageError(flag + " expects a positive number, got '" + text + "'");
  return value;
}

double parseNonNegative(const std::string &flag, const std::string &text) {
  char *end = nullptr;
  errno = 0;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno != 0 || !(value >= 0) || std::isinf(value))
    throw UsageError(flag + " expects a finite number >= 0, got '" + text + "'");
  return value;
}

// An absolute path to an executable: as given when it contains a '/', else searched in $PATH.
std::string resolveProgram(const std::string &flag, const std::string &program) {
  if (program.empty())
    throw UsageError(flag + " needs a path");
  std::vector<std::string> candidates;
  if (program.find('/') != std::string::npos) {
    candidates.push_back(program);
  } else if (const char *path = std::getenv("PATH")) {
    std::string dirs = path;
    for (std::size_t pos = 0; pos <= dirs.size();) {
      std::size_t end = dirs.find(':', pos);
      if (end == std::string::npos)
        end = dirs.size();
      candidates.push_back((end > pos ? dirs.substr(pos, end - pos) : std::string(".")) + "/" + program);
      pos = end + 1;
    }
  }
  for (const std::string &candidate : candidates) {
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec) && access(candidate.c_str(), X_OK) == 0)
      return fs::absolute(candidate, ec).lexically_normal().string();
  }
  throw UsageError(flag + " " + program + ": not an executable file");
}

std::optional<Options> parseArgs(int argc, char **argv) {
  Options options;
  bool sawKilnc = false, sawKilnRun = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    kiln::tools::Flag parsed = kiln::tools::splitFlag(arg);
    const std::string &flag = parsed.name;
    auto takeValue = [&]() -> std::string {
      if (std::optional<std::string> value = kiln::tools::flagValue(parsed, argc, argv, i))
        return *value;
      throw UsageError(flag + " needs a value");
    };
    auto noValue = [&] {
      if (parsed.inlineValue)
        throw UsageError(flag + " takes no value");
    };
    if (flag == "--help" || flag == "-h") {
      std::fputs(kUsage, stdout);
      return std::nullopt;
    } else if (flag == "--kilnc") {
      options.kilnc = takeValue();
      sawKilnc = true;
    } else if (flag == "--kiln-run") {
      options.kilnRun = takeValue();
      sawKilnRun = true;
    } else if (flag == "--data-dir") {
      options.dataDir = takeValue();
    } else if (flag == "--expected") {
      options.expectedFile = takeValue();
    } else if (flag == "--filter") {
      options.filter = takeValue();
    } else if (flag == "--write-passing") {
      options.writePassing = takeValue();
    } else if (flag == "--jobs" || flag == "-j") {
      std::string text = takeValue();
      options.jobs = static_cast<unsigned>(parsePositive(flag, text, 1024));
      if (std::to_string(options.jobs) != text)
        throw UsageError(flag + " expects a positive integer, got '" + text + "'");
    } else if (flag == "--timeout") {
      options.timeoutSeconds = parsePositive(flag, takeValue(), 7 * 24 * 3600);
    } else if (flag == "--rtol") {
      options.relativeTolerance = parseNonNegative(flag, takeValue());
    } else if (flag == "--atol") {
      options.absoluteTolerance = parseNonNegative(flag, takeValue());
    } else if (flag == "--work-dir") {
      options.workDir = takeValue();
    } else if (flag == "--kilnc-arg") {
      options.kilncArgs.push_back(takeValue());
    } else if (flag == "--kiln-run-arg") {
      options.kilnRunArgs.push_back(takeValue());
    } else if (flag == "--compile-only") {
      noValue();
      options.compileOnly = true;
    } else if (flag == "--prebuilt") {
      options.prebuilt = takeValue();
    } else if (flag == "--keep") {
      noValue();
      options.keep = true;
    } else if (flag == "--verbose" || flag == "-v") {
      noValue();
      options.verbose = true;
    } else {
      throw UsageError("unknown argument '" + arg + "'");
    }
  }
  if (!options.prebuilt.empty() && options.compileOnly)
    throw UsageError("--prebuilt runs artifacts; --compile-only makes them: give one");
  if ((!sawKilnc && options.prebuilt.empty()) || (!sawKilnRun && !options.compileOnly))
    throw UsageError("--kilnc (or --prebuilt) and --kiln-run are required");
  if (sawKilnc)
    options.kilnc = resolveProgram("--kilnc", options.kilnc);
  std::error_code prebuiltError;
  if (!options.prebuilt.empty() && !fs::is_directory(options.prebuilt, prebuiltError))
    throw UsageError("--prebuilt " + options.prebuilt + ": not a directory");
  if (sawKilnRun)
    options.kilnRun = resolveProgram("--kiln-run", options.kilnRun);
  if (options.jobs == 0)
    options.jobs = std::max(1u, std::thread::hardware_concurrency());
  return options;
}

std::set<std::string> readExpected(const std::string &path) {
  std::string text = kiln::rt::readFileBytes(path);
  std::set<std::string> names;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    std::string line = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    pos = end == std::string::npos ? text.size() : end + 1;
    if (std::size_t hash = line.find('#'); hash != std::string::npos)
      line.resize(hash);
    line = trim(line);
    if (!line.empty())
      names.insert(line);
  }
  return names;
}

const char *outcomeWord(Outcome outcome) {
  switch (outcome) {
  case Outcome::Pass: return "PASS";
  case Outcome::Fail: return "FAIL";
  case Outcome::Skip: return "SKIP";
  }
  return "?";
}

int run(int argc, char **argv) {
  std::optional<Options> parsed = parseArgs(argc, argv);
  if (!parsed)
    return 0;
  const Options &options = *parsed;

  std::error_code ec;
  if (!fs::is_directory(options.dataDir, ec))
    throw UsageError("--data-dir " + options.dataDir + ": not a directory (is libonnx-testdata installed?)");
  std::optional<std::regex> filter;
  if (options.filter) {
    try {
      filter.emplace(*options.filter, std::regex::ECMAScript);
    } catch (const std::regex_error &e) {
      throw UsageError("--filter '" + *options.filter + "': invalid regular expression: " + e.what());
    }
  }
  std::optional<std::set<std::string>> expected;
  if (options.expectedFile)
    expected = readExpected(*options.expectedFile);

  std::vector<std::string> tests;
  for (const fs::directory_entry &entry : fs::directory_iterator(options.dataDir, ec)) {
    std::string name = entry.path().filename().string();
    // A test is a folder named test_* (ONNX's convention; one without a
    // model.onnx fails) or any other folder with a model.onnx.
    std::error_code modelEc;
    bool isTest = name.rfind("test_", 0) == 0 ||
                  fs::is_regular_file(entry.path() / "model.onnx", modelEc);
    if (entry.is_directory(ec) && isTest && (!filter || std::regex_search(name, *filter)))
      tests.push_back(name);
  }
  if (ec)
    throw Error("cannot list " + options.dataDir + ": " + ec.message());
  // Zero tests run is not a pass: the folder or the filter is wrong.
  if (tests.empty())
    throw Error(options.dataDir + ": no tests" +
                (filter ? " match --filter '" + *options.filter + "'" : std::string()) +
                " (a test is a folder named test_* or holding a model.onnx)");
  std::sort(tests.begin(), tests.end());

  fs::path workDir;
  bool removeWorkDir = false;
  if (options.workDir) {
    workDir = *options.workDir;
    fs::create_directories(workDir, ec);
    if (ec)
      throw Error("cannot create --work-dir " + workDir.string() + ": " + ec.message());
  } else {
    std::string pattern = (fs::temp_directory_path(ec) / "kiln-conformance.XXXXXX").string();
    if (!mkdtemp(pattern.data()))
      throw Error("cannot create a temporary work directory: " + std::string(std::strerror(errno)));
    workDir = pattern;
    removeWorkDir = !options.keep;
  }
  workDir = fs::absolute(workDir, ec);

  TestRunner runner(options, workDir);
  std::vector<std::optional<TestResult>> results(tests.size());
  std::atomic<std::size_t> nextTest{0};
  std::mutex printMutex;
  std::size_t nextToPrint = 0;
  // Lines come out in sorted test order, each as soon as every test before it has finished.
  auto worker = [&] {
    for (;;) {
      std::size_t index = nextTest++;
      if (index >= tests.size() || gInterrupted)
        return;
      TestResult result = runner.run(tests[index]);
      if (gInterrupted)
        return; // its processes were killed; the result means nothing
      std::lock_guard<std::mutex> lock(printMutex);
      results[index] = std::move(result);
      while (nextToPrint < tests.size() && results[nextToPrint]) {
        const TestResult &done = *results[nextToPrint];
        std::string line = std::string(outcomeWord(done.outcome)) + " " + tests[nextToPrint];
        if (!done.reason.empty())
          line += ": " + done.reason;
        std::printf("%s\n%s", line.c_str(), done.details.c_str());
        std::fflush(stdout);
        ++nextToPrint;
      }
    }
  };
  std::vector<std::thread> workers;
  for (unsigned i = 0; i < std::min<std::size_t>(options.jobs, std::max<std::size_t>(tests.size(), 1)); ++i)
    workers.emplace_back(worker);
  for (std::thread &thread : workers)
    thread.join();

  if (removeWorkDir)
    fs::remove_all(workDir, ec);
  else
    std::fprintf(stderr, "kiln-conformance: artifacts and outputs kept in %s\n", workDir.c_str());
  if (int signal = gInterrupted) {
    std::fprintf(stderr, "kiln-conformance: interrupted (%s)\n", signalName(signal).c_str());
    return 128 + signal;
  }

  int passed = 0, failed = 0, skipped = 0;
  std::vector<std::string> passing, regressions, newlyPassing;
  for (std::size_t i = 0; i < tests.size(); ++i) {
    const TestResult &result = *results[i];
    if (result.outcome == Outcome::Pass) {
      ++passed;
      passing.push_back(tests[i]);
    } else {
      (result.outcome == Outcome::Fail ? failed : skipped) += 1;
    }
    if (!expected)
      continue;
    bool listed = expected->count(tests[i]) > 0;
    if (listed && result.outcome != Outcome::Pass)
      regressions.push_back(tests[i] + ": " + outcomeWord(result.outcome) +
                            (result.reason.empty() ? "" : " (" + result.reason + ")"));
    if (!listed && result.outcome == Outcome::Pass)
      newlyPassing.push_back(tests[i]);
  }
  if (expected) {
    // Listed tests that no longer exist are regressions too, unless --filter excluded them.
    for (const std::string &name : *expected)
      if ((!filter || std::regex_search(name, *filter)) &&
          !std::binary_search(tests.begin(), tests.end(), name))
        regressions.push_back(name + ": not found in " + options.dataDir);
    std::sort(regressions.begin(), regressions.end());
    if (!regressions.empty()) {
      std::printf("\n%zu regression%s (listed in %s but not passing):\n", regressions.size(),
                  regressions.size() == 1 ? "" : "s", options.expectedFile->c_str());
      for (const std::string &line : regressions)
        std::printf("REGRESSION %s\n", line.c_str());
    }
    if (!newlyPassing.empty()) {
      std::printf("\n%zu newly passing test%s (not in %s; consider adding them):\n",
                  newlyPassing.size(), newlyPassing.size() == 1 ? "" : "s",
                  options.expectedFile->c_str());
      for (const std::string &name : newlyPassing)
        std::printf("  %s\n", name.c_str());
    }
  }
  if (options.writePassing) {
    std::string text;
    for (const std::string &name : passing)
      text += name + "\n";
    kiln::rt::writeFileAtomically(*options.writePassing, text);
  }
  std::printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
  std::fflush(stdout);
  if (expected)
    return regressions.empty() ? 0 : 1;
  return failed ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
  startSignalWaiter();
  try {
    return run(argc, argv);
  } catch (const UsageError &e) {
    std::fprintf(stderr, "kiln-conformance: error: %s (see --help)\n", e.what());
    return kUsageExit;
  } catch (const std::bad_alloc &) {
    std::fprintf(stderr, "kiln-conformance: error: out of memory\n");
  } catch (const std::exception &e) {
    std::fprintf(stderr, "kiln-conformance: error: %s\n", e.what());
  }
  return kUsageExit;
}
