#include "Rendezvous.h"
#include "TcpStore.h"

#include "kiln/tensor.h"

#include <gloo/rendezvous/file_store.h>

#include <cerrno>
#include <csignal>
#include <sstream>
#include <unistd.h>

namespace kiln::rt::detail {
namespace {

std::string hostName() {
  char name[256] = {};
  return ::gethostname(name, sizeof name - 1) == 0 ? name : "localhost";
}

} // namespace

std::string processKey(int rank) { return "kiln-process/" + std::to_string(rank); }

Rendezvous::Rendezvous(const CollectiveConfig &config) : config_(config) {
  std::string host;
  int port = 0;
  try {
    if (parseTcpAddress(config.rendezvous, host, port))
      base_ = std::make_unique<TcpStore>(host, port, config.timeout);
    else
      base_ = std::make_unique<gloo::rendezvous::FileStore>(config.rendezvous);
  } catch (const std::exception &e) {
    throw Error(where() + ": " + e.what());
  }
  store_ = std::make_unique<gloo::rendezvous::PrefixStore>(config.runId, *base_);
}

std::string Rendezvous::where() const {
  return "rank " + std::to_string(config_.rank) + " of " + std::to_string(config_.size);
}

void Rendezvous::publish() {
  std::string process = hostName() + " " + std::to_string(::getpid()) + " " + config_.host;
  store_->set(processKey(config_.rank), std::vector<char>(process.begin(), process.end()));
}

std::string Rendezvous::describe(int peer) {
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

int Rendezvous::deadRank() {
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

std::string Rendezvous::missing(const std::string &prefix) {
  std::string ranks;
  for (int peer = 0; peer < config_.size; ++peer) {
    if (peer == config_.rank)
      continue;
    try {
      store_->wait({prefix + std::to_string(peer)}, std::chrono::milliseconds(1));
    } catch (const std::exception &) {
      ranks += (ranks.empty() ? "" : ", ") + std::to_string(peer);
    }
  }
  return ranks.empty() ? "" : "rank " + ranks + " did not join";
}

} // namespace kiln::rt::detail
