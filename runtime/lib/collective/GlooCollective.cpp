// The Gloo back end of kiln::rt::Collective: a full mesh of TCP pairs, set up through Gloo's
// file store or Kiln's TCP store; ring all-reduce on host buffers.
#include "Rendezvous.h"
#include "TcpStore.h"

#include "kiln/collective.h"
#include "kiln/tensor.h"

#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
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

class GlooCollective final : public Collective {
public:
  explicit GlooCollective(const CollectiveConfig &config) : config_(config) {}

  void connect() {
    gloo::transport::tcp::attr attr;
    attr.hostname = config_.host;
    rendezvous_ = std::make_unique<detail::Rendezvous>(config_);
    try {
      device_ = gloo::transport::tcp::CreateDevice(attr);
      context_ = std::make_shared<gloo::rendezvous::Context>(config_.rank, config_.size);
      context_->setTimeout(config_.timeout);
      context_->connectFullMesh(rendezvous_->store(), device_);
      rendezvous_->publish();
    } catch (const std::exception &e) {
      std::string message = clean(e.what());
      // Gloo waits for one rank's address (key "<rank>") at a time: probe every other rank's.
      std::string who =
          message.find("Wait timeout for key(s)") != std::string::npos ? rendezvous_->missing("") : "";
      // A peer that listed its address and then never accepted the connection (it died, or has
      // not come back from a stall) did not join.
      bool gone = peerGone(message), unanswered = message.find("Connect timeout") != std::string::npos;
      if (who.empty() && (gone || unanswered))
        if (int peer = rendezvous_->deadRank(); peer >= 0)
          who = rendezvous_->describe(peer) + (gone ? " died" : " did not join");
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

  /// Whether Gloo's `message` says a connection to a peer broke (rather than,
  /// say, a bad argument): the peer died, or stopped answering in time.
  static bool peerGone(const std::string &message) {
    for (const char *sign : {"closed by peer", "reset by peer", "Read error", "Write error",
                             "Broken pipe", "Connection refused", "Timed out"})
      if (message.find(sign) != std::string::npos)
        return true;
    return false;
  }

  [[noreturn]] void fail(const char *what, const std::exception &e) {
    std::string message = clean(e.what());
    int peer = peerGone(message) ? rendezvous_->deadRank() : -1;
    throw Error(where() + ": " + what + " failed" +
                (peer >= 0 ? ": " + rendezvous_->describe(peer) + " died or stopped answering"
                           : std::string()) +
                " (" + message + "; timeout " + std::to_string(config_.timeout.count()) + " ms)");
  }

  CollectiveConfig config_;
  std::unique_ptr<detail::Rendezvous> rendezvous_;
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
