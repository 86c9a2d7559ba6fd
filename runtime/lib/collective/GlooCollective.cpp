// The Gloo back end of kiln::rt::Collective: a full mesh of TCP pairs, set up through Gloo's
// file store or Kiln's TCP store; ring all-reduce on host buffers.
#include "TcpStore.h"

#include "kiln/collective.h"
#include "kiln/tensor.h"

#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <cctype>
#include <cerrno>
#include <csignal>
#include <sstream>
#include <unistd.h>
#include <sys/stat.h>

namespace kiln::rt {

Collective::~Collective() = default;

namespace {

/// Store key under which a rank lists its host and process id, so that a
/// survivor on the same host can tell which rank died. (Gloo's errors name a
/// socket address, which identifies no rank once connections are made.)
std::string processKey(int rank) { return "kiln-process/" + std::to_string(rank); }

std::string hostName() {
  char name[256] = {};
  return ::gethostname(name, sizeof name - 1) == 0 ? name : "localhost";
}

class GlooCollective final : public Collective {
public:
  explicit GlooCollective(const CollectiveConfig &config) : config_(config) {}

  static std::unique_ptr<gloo::rendezvous::Store> openStore(const CollectiveConfig &config) {
    std::string host;
    int port = 0;
    if (detail::parseTcpAddress(config.rendezvous, host, port))
      return std::make_unique<detail::TcpStore>(host, port, config.timeout);
    return std::make_unique<gloo::rendezvous::FileStore>(config.rendezvous);
  }

  void connect() {
    gloo::transport::tcp::attr attr;
    attr.hostname = config_.host;
    try {
      base_ = openStore(config_);
    } catch (const std::exception &e) {
      throw Error(where() + ": " + e.what());
    }
    store_ = std::make_unique<gloo::rendezvous::PrefixStore>(config_.runId, *base_);
    try {
      device_ = gloo::transport::tcp::CreateDevice(attr);
      context_ = std::make_shared<gloo::rendezvous::Context>(config_.rank, config_.size);
      context_->setTimeout(config_.timeout);
      context_->connectFullMesh(*store_, device_);
      std::string process = hostName() + " " + std::to_string(::getpid()) + " " + config_.host;
      store_->set(processKey(config_.rank), std::vector<char>(process.begin(), process.end()));
    } catch (const std::exception &e) {
      std::string message = clean(e.what());
      std::string who = missingRanks(message);
      if (who.empty() && peerGone(message))
        if (int peer = deadRank(); peer >= 0)
          who = describe(peer) + " died";
      throw Error(where() + ": cannot connect to the other ranks through " + config_.rendezvous +
                  " within " + std::to_string(config_.timeout.count()) + " ms" +
                  (who.empty() ? std::string() : " (" + who + ")") + ": " + message);
    }
  }

  int rank() const override { return config_.rank; }
  int size() const override { return config_.size; }

  void allReduce(float *data, std::size_t count, bool average) override {
    if (config_.size == 1 || count == 0)
      return;
    try {
      gloo::AllreduceOptions options(context_);
      options.setOutput(data, count);
      options.setReduceFunction(
          static_cast<void (*)(void *, const void *, const void *, size_t)>(&gloo::sum<float>));
      options.setTimeout(config_.timeout);
      gloo::allreduce(options);
    } catch (const std::exception &e) {
      fail("all-reduce", e);
    }
    if (average) {
      float scale = 1.0f / static_cast<float>(config_.size);
      for (std::size_t i = 0; i < count; ++i)
        data[i] *= scale;
    }
  }

  void barrier() override {
    if (config_.size == 1)
      return;
    try {
      gloo::BarrierOptions options(context_);
      options.setTimeout(config_.timeout);
      gloo::barrier(options);
    } catch (const std::exception &e) {
      fail("barrier", e);
    }
  }

private:
  std::string where() const {
    return "rank " + std::to_string(config_.rank) + " of " + std::to_string(config_.size);
  }

  /// Gloo's message without its source-file prefixes ("[./gloo/...cc:598] ").
  static std::string clean(std::string message) {
    for (;;) {
      size_t open = message.find("[./gloo/");
      size_t close = open == std::string::npos ? open : message.find("] ", open);
      if (close == std::string::npos)
        return message;
      message.erase(open, close + 2 - open);
    }
  }

  /// "rank 1, 3 did not join" after Gloo's rendezvous timed out waiting for
  /// a rank's address ("Wait timeout for key(s): [<run id>/<rank>]"): Gloo
  /// waits for one rank at a time, so every other rank's key is probed too.
  /// "" for other errors.
  std::string missingRanks(const std::string &message) const {
    if (message.find("Wait timeout for key(s)") == std::string::npos)
      return "";
    std::string ranks;
    for (int peer = 0; peer < config_.size; ++peer) {
      if (peer == config_.rank)
        continue;
      bool joined = true;
      try {
        store_->wait({std::to_string(peer)}, std::chrono::milliseconds(1));
      } catch (const std::exception &) {
        joined = false;
      }
      if (!joined)
        ranks += (ranks.empty() ? "" : ", ") + std::to_string(peer);
    }
    return ranks.empty() ? "" : "rank " + ranks + " did not join";
  }

  /// Whether Gloo's `message` says a connection to a peer broke (rather than,
  /// say, a bad argument): the peer died, or stopped answering in time.
  static bool peerGone(const std::string &message) {
    for (const char *sign : {"closed by peer", "reset by peer", "Read error", "Write error",
                             "Broken pipe", "Connection refused", "Timed out"})
      if (message.find(sign) != std::string::npos)
        return true;
    return false;
  }

  /// "rank 1 (at 10.0.0.2, pid 4242)": the rank and what it listed of itself.
  std::string describe(int peer) {
    std::string text = "rank " + std::to_string(peer);
    try {
      store_->wait({processKey(peer)}, std::chrono::milliseconds(100));
      std::vector<char> listed = store_->get(processKey(peer));
      std::istringstream fields(std::string(listed.begin(), listed.end()));
      std::string host, pid, address;
      if (fields >> host >> pid >> address)
        text += " (at " + address + " on " + host + ", pid " + pid + ")";
    } catch (const std::exception &) {
      // never listed: it died while connecting
    }
    return text;
  }

  /// The rank that died: with two ranks the other one; else the one whose
  /// process on this host is gone. -1 when that cannot be told (peers on
  /// other hosts).
  int deadRank() {
    if (config_.size == 2)
      return 1 - config_.rank;
    std::string host = hostName();
    int found = -1;
    for (int peer = 0; peer < config_.size; ++peer) {
      if (peer == config_.rank)
        continue;
      try {
        store_->wait({processKey(peer)}, std::chrono::milliseconds(100));
        std::vector<char> listed = store_->get(processKey(peer));
        std::istringstream text(std::string(listed.begin(), listed.end()));
        std::string peerHost;
        long pid = 0;
        if (text >> peerHost >> pid && peerHost == host && ::kill(pid, 0) != 0 && errno == ESRCH) {
          if (found >= 0)
            return -1; // more than one: name none rather than the wrong one
          found = peer;
        }
      } catch (const std::exception &) {
        // never listed: it died while connecting, or is elsewhere
      }
    }
    return found;
  }

  [[noreturn]] void fail(const char *what, const std::exception &e) {
    std::string message = clean(e.what());
    int peer = peerGone(message) ? deadRank() : -1;
    throw Error(where() + ": " + what + " failed" +
                (peer >= 0 ? ": " + describe(peer) + " died or stopped answering"
                           : std::string()) +
                " (" + message + "; timeout " + std::to_string(config_.timeout.count()) + " ms)");
  }

  CollectiveConfig config_;
  std::unique_ptr<gloo::rendezvous::Store> base_;
  std::unique_ptr<gloo::rendezvous::PrefixStore> store_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::rendezvous::Context> context_;
};

} // namespace

std::unique_ptr<Collective> connectGloo(const CollectiveConfig &config) {
  if (config.size < 1 || config.rank < 0 || config.rank >= config.size)
    throw Error("collective: rank " + std::to_string(config.rank) + " is not in a world of " +
                std::to_string(config.size));
  struct stat info;
  std::string host;
  int port = 0;
  if (config.size > 1 && !detail::parseTcpAddress(config.rendezvous, host, port) &&
      (::stat(config.rendezvous.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)))
    throw Error("rank " + std::to_string(config.rank) + " of " + std::to_string(config.size) +
                ": rendezvous directory " + config.rendezvous + " does not exist");
  auto collective = std::make_unique<GlooCollective>(config);
  if (config.size > 1)
    collective->connect();
  return collective;
}

} // namespace kiln::rt
