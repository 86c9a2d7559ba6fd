//===- main.cpp - kiln-launch: the processes of a data-parallel run -------===//
//
// Starts one process per replica on this host with its place in the world
// in the environment (KILN_RANK, KILN_WORLD_SIZE, KILN_RENDEZVOUS, ...), as
// torchrun and horovodrun do, and watches them. When one fails, the others
// stop by themselves (their collectives fail within the timeout and name
// the rank); those that do not are terminated, so a failure never leaves a
// hung group. With --max-restarts the whole group is started again, and a
// command that resumes from its checkpoints loses no step beyond the last.
//
//===----------------------------------------------------------------------===//
#include "common/Flags.h"

#include "kiln/collective.h"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

const char kUsage[] = R"(Usage: kiln-launch [options] -- COMMAND [ARGS...]

Runs COMMAND once per replica of a data-parallel run (usually kiln-train with a step
compiled by kilnc --train --data-parallel=true). Each process finds its place in the
world in its environment:
  KILN_RANK          its rank, node-rank * nproc-per-node + local rank
  KILN_LOCAL_RANK    its rank on this node
  KILN_WORLD_SIZE    processes in the world, nnodes * nproc-per-node
  KILN_RENDEZVOUS    where the processes meet: tcp://HOST:PORT or a directory
  KILN_RUN_ID        separates runs and the attempts of one run (--run-id)
  KILN_HOST          the address peers reach it on
When a process fails, the others stop within the collective timeout with a message
naming it; any still running after the grace period are terminated.

Options:
  --nproc-per-node N   processes on this node (default 1)
  --nnodes M           nodes in the run (default 1); run kiln-launch on each
  --node-rank R        this node's place among them (default 0)
  --rdzv HOST:PORT     meet through a TCP store that node 0's kiln-launch serves on
                       HOST:PORT (node 0's address, which every node reaches)
  --rdzv-dir DIR       or through a directory; across nodes a shared file system every
                       node mounts (default on one node: a fresh temporary directory)
  --run-id ID          names this run's keys in the rendezvous; every node gives the same
                       (default kiln; a --rdzv-dir that holds files needs a new one)
  --host ADDR          the address this node's processes listen on (default 127.0.0.1;
                       across nodes, one the other nodes reach)
  --max-restarts K     start the whole group again up to K times after a failure; give the
                       command --checkpoint-dir and --resume so it continues from its newest
                       checkpoint (default 0)
  --grace SECONDS      after a failure, how long the others get to stop on their own before
                       SIGTERM, then SIGKILL (default 15: kiln-train's collective timeout
                       of 10 s, and margin)
  -h, --help           this text

Exit status: the command's (0 when every process succeeded); 1 when the group failed and
no restart was left; 2 for a bad command line.

Example (two CPU replicas on this host):
  kilnc mlp.onnx --train --data-parallel=true -o mlp.kiln
  kiln-launch --nproc-per-node 2 --max-restarts 3 -- \
      kiln-train mlp.kiln --data data --epochs 2 --checkpoint-dir ckpt --resume
)";

struct Options {
  int perNode = 1, nodes = 1, nodeRank = 0, maxRestarts = 0;
  double grace = 15;
  std::string rendezvous, tcp, host = "127.0.0.1", runId = "kiln";
  bool runIdGiven = false;
  std::vector<std::string> command;
};

[[noreturn]] void usageError(const std::string &message) {
  std::fprintf(stderr, "kiln-launch: %s\n(kiln-launch --help lists the options)\n", message.c_str());
  std::exit(2);
}

long parseInt(const std::string &flag, const std::string &text, long min, long max) {
  char *end = nullptr;
  errno = 0;
  long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end || errno || value < min || value > max)
    usageError(flag + ": expected an integer from " + std::to_string(min) + " to " +
               std::to_string(max) + ", got '" + text + "'");
  return value;
}

Options parseOptions(int argc, char **argv) {
  Options o;
  int i = 1;
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    }
    kiln::tools::Flag flag = kiln::tools::splitFlag(arg);
    std::optional<std::string> value = kiln::tools::flagValue(flag, argc, argv, i);
    if (!value)
      usageError(flag.name + " needs a value");
    const std::string &v = *value;
    if (flag.name == "--nproc-per-node")
      o.perNode = static_cast<int>(parseInt(flag.name, v, 1, 4096));
    else if (flag.name == "--nnodes")
      o.nodes = static_cast<int>(parseInt(flag.name, v, 1, 4096));
    else if (flag.name == "--node-rank")
      o.nodeRank = static_cast<int>(parseInt(flag.name, v, 0, 4095));
    else if (flag.name == "--max-restarts")
      o.maxRestarts = static_cast<int>(parseInt(flag.name, v, 0, 1000));
    else if (flag.name == "--rdzv-dir")
      o.rendezvous = v;
    else if (flag.name == "--rdzv")
      o.tcp = v;
    else if (flag.name == "--run-id") {
      if (v.empty() || v.find_first_of("/ \t") != std::string::npos)
        usageError("--run-id: expected a name without '/' or spaces, got '" + v + "'");
      o.runId = v;
      o.runIdGiven = true;
    }
    else if (flag.name == "--host")
      o.host = v;
    else if (flag.name == "--grace") {
      char *end = nullptr;
      o.grace = std::strtod(v.c_str(), &end);
      if (v.empty() || *end || !(o.grace >= 0) || o.grace > 3600)
        usageError("--grace: expected seconds from 0 to 3600, got '" + v + "'");
    } else
      usageError("unknown option '" + flag.name + "' (the command follows '--')");
  }
  for (; i < argc; ++i)
    o.command.push_back(argv[i]);
  if (o.command.empty())
    usageError("no command: kiln-launch [options] -- COMMAND [ARGS...]");
  if (o.nodeRank >= o.nodes)
    usageError("--node-rank " + std::to_string(o.nodeRank) + " is not below --nnodes " +
               std::to_string(o.nodes));
  if (!o.tcp.empty() && !o.rendezvous.empty())
    usageError("--rdzv and --rdzv-dir: give one");
  if (!o.tcp.empty()) {
    size_t colon = o.tcp.rfind(':');
    char *end = nullptr;
    long port = colon == std::string::npos ? 0 : std::strtol(o.tcp.c_str() + colon + 1, &end, 10);
    if (colon == std::string::npos || colon == 0 || *end || port <= 0 || port > 65535)
      usageError("--rdzv: expected HOST:PORT, got '" + o.tcp + "'");
  }
  if (o.nodes > 1 && o.rendezvous.empty() && o.tcp.empty())
    usageError("--nnodes " + std::to_string(o.nodes) +
               " needs --rdzv HOST:PORT (node 0's address) or --rdzv-dir, a directory on a file "
               "system every node mounts");
  return o;
}

volatile std::sig_atomic_t gSignal = 0;
void onSignal(int signal) { gSignal = signal; }

std::string describe(int status) {
  if (WIFEXITED(status))
    return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return std::string("was killed by ") + strsignal(WTERMSIG(status));
  return "stopped";
}

struct Child {
  int rank;
  pid_t pid;
  bool running = true;
  int status = 0;
};

/// Reaps whatever has exited; returns false when nothing is left running.
bool reap(std::vector<Child> &children, bool block) {
  for (;;) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, block ? 0 : WNOHANG);
    if (pid == 0 || (pid < 0 && errno == ECHILD))
      break;
    if (pid < 0) {
      if (errno == EINTR && gSignal == 0)
        continue;
      break;
    }
    for (Child &c : children)
      if (c.pid == pid) {
        c.running = false;
        c.status = status;
      }
    block = false;
  }
  for (const Child &c : children)
    if (c.running)
      return true;
  return false;
}

/// One attempt: starts the group, returns 0 when every process succeeded,
/// else the first failure's exit status (at least 1).
int runGroup(const Options &o, const std::string &rendezvous, int attempt) {
  int world = o.nodes * o.perNode;
  std::vector<Child> children;
  for (int local = 0; local < o.perNode; ++local) {
    int rank = o.nodeRank * o.perNode + local;
    pid_t pid = ::fork();
    if (pid < 0) {
      std::fprintf(stderr, "kiln-launch: cannot start rank %d: %s\n", rank, std::strerror(errno));
      for (const Child &c : children)
        ::kill(c.pid, SIGKILL);
      reap(children, true);
      return 1;
    }
    if (pid == 0) {
      ::setenv("KILN_RANK", std::to_string(rank).c_str(), 1);
      ::setenv("KILN_LOCAL_RANK", std::to_string(local).c_str(), 1);
      ::setenv("KILN_WORLD_SIZE", std::to_string(world).c_str(), 1);
      ::setenv("KILN_RENDEZVOUS", rendezvous.c_str(), 1);
      ::setenv("KILN_RUN_ID", (o.runId + "-attempt-" + std::to_string(attempt)).c_str(), 1);
      ::setenv("KILN_HOST", o.host.c_str(), 1);
      std::vector<char *> args;
      for (const std::string &arg : o.command)
        args.push_back(const_cast<char *>(arg.c_str()));
      args.push_back(nullptr);
      ::execvp(args[0], args.data());
      std::fprintf(stderr, "kiln-launch: rank %d: cannot run '%s': %s\n", rank, args[0],
                   std::strerror(errno));
      ::_exit(127);
    }
    children.push_back({rank, pid});
    std::fprintf(stderr, "kiln-launch: rank %d of %d: pid %d\n", rank, world, static_cast<int>(pid));
  }
  std::fflush(stderr);

  // Until one fails (or all succeed), or the launcher is told to stop.
  const Child *failed = nullptr;
  while (!failed && !gSignal && reap(children, true)) {
    for (const Child &c : children)
      if (!c.running && !(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0)) {
        failed = &c;
        break;
      }
  }
  if (!failed)
    for (const Child &c : children)
      if (!c.running && !(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0))
        failed = &c;
  int result = 0;
  if (failed) {
    std::fprintf(stderr, "kiln-launch: rank %d (pid %d) %s\n", failed->rank,
                 static_cast<int>(failed->pid), describe(failed->status).c_str());
    result = WIFEXITED(failed->status) && WEXITSTATUS(failed->status) != 0 ? WEXITSTATUS(failed->status) : 1;
  }
  if (gSignal) {
    for (const Child &c : children)
      if (c.running)
        ::kill(c.pid, SIGTERM);
    result = 128 + gSignal;
  }
  // The others stop by themselves within the collective timeout; past the
  // grace period they are terminated, then killed.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(o.grace);
  bool terminated = false;
  while (reap(children, false)) {
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      for (const Child &c : children)
        if (c.running) {
          std::fprintf(stderr, "kiln-launch: rank %d (pid %d) still running %.0f s after the "
                       "failure; %s it\n", c.rank, static_cast<int>(c.pid), o.grace,
                       terminated ? "killing" : "terminating");
          ::kill(c.pid, terminated ? SIGKILL : SIGTERM);
        }
      deadline = now + std::chrono::seconds(5);
      terminated = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (const Child &c : children)
    if (failed && &c != failed && !(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0))
      std::fprintf(stderr, "kiln-launch: rank %d (pid %d) %s\n", c.rank, static_cast<int>(c.pid),
                   describe(c.status).c_str());
  return result;
}

} // namespace

int main(int argc, char **argv) {
  Options o = parseOptions(argc, argv);
  struct sigaction action = {};
  action.sa_handler = onSignal;
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);

  std::string rendezvous = o.rendezvous, temporary;
  std::unique_ptr<kiln::rt::RendezvousServer> server;
  if (!o.tcp.empty()) {
    rendezvous = "tcp://" + o.tcp;
    if (o.nodeRank == 0) {
      size_t colon = o.tcp.rfind(':');
      try {
        server = std::make_unique<kiln::rt::RendezvousServer>(o.tcp.substr(0, colon),
                                                              std::stoi(o.tcp.substr(colon + 1)));
      } catch (const std::exception &e) {
        std::fprintf(stderr, "kiln-launch: --rdzv %s: %s\n", o.tcp.c_str(), e.what());
        return 1;
      }
    }
  } else if (rendezvous.empty()) {
    std::string base = (std::filesystem::temp_directory_path() / "kiln-launch-XXXXXX").string();
    if (!::mkdtemp(base.data())) {
      std::fprintf(stderr, "kiln-launch: cannot make a rendezvous directory: %s\n", std::strerror(errno));
      return 1;
    }
    rendezvous = temporary = base;
  } else {
    std::error_code ec;
    std::filesystem::create_directories(rendezvous, ec);
    if (ec) {
      std::fprintf(stderr, "kiln-launch: --rdzv-dir %s: %s\n", rendezvous.c_str(), ec.message().c_str());
      return 1;
    }
    // The file store keeps its keys: an earlier run's addresses would be read as this one's.
    if (o.nodeRank == 0 && !o.runIdGiven && !std::filesystem::is_empty(rendezvous, ec)) {
      std::fprintf(stderr,
                   "kiln-launch: --rdzv-dir %s holds files of an earlier run; give an empty "
                   "directory, or the same new --run-id to every node\n",
                   rendezvous.c_str());
      return 2;
    }
  }
  int result = 0;
  for (int attempt = 0;; ++attempt) {
    result = runGroup(o, rendezvous, attempt);
    if (result == 0 || gSignal || attempt >= o.maxRestarts)
      break;
    std::fprintf(stderr, "kiln-launch: restarting the group (restart %d of %d)\n", attempt + 1,
                 o.maxRestarts);
  }
  if (!temporary.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(temporary, ignored);
  }
  return result;
}
