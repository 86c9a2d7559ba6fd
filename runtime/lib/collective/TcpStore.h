// A key-value store over TCP for ranks that share no file system: the client side is a Gloo
// rendezvous store (what connectFullMesh exchanges addresses through), the server side runs in
// kiln-launch on the first node (kiln::rt::RendezvousServer).
#ifndef KILN_RUNTIME_COLLECTIVE_TCPSTORE_H
#define KILN_RUNTIME_COLLECTIVE_TCPSTORE_H

#include <gloo/rendezvous/store.h>

#include <chrono>
#include <mutex>
#include <string>

namespace kiln::rt::detail {

/// "tcp://HOST:PORT" split into host and port; false when `address` is not one.
bool parseTcpAddress(const std::string &address, std::string &host, int &port);

class TcpStore final : public gloo::rendezvous::Store {
public:
  /// Connects to the server at host:port, retrying until `timeout` (the server may start after
  /// this rank). Throws Error naming the address.
  TcpStore(const std::string &host, int port, std::chrono::milliseconds timeout);
  ~TcpStore() override;

  void set(const std::string &key, const std::vector<char> &data) override;
  /// Waits for the key as wait() does.
  std::vector<char> get(const std::string &key) override;
  void wait(const std::vector<std::string> &keys) override { wait(keys, timeout_); }
  /// Throws "Wait timeout for key(s): [k1, k2]" (Gloo's file store's words) when a key is
  /// still missing after `timeout`.
  void wait(const std::vector<std::string> &keys, const std::chrono::milliseconds &timeout) override;

private:
  /// One request and its reply: whether the key is there and, for get, its value.
  bool request(char op, const std::string &key, const std::vector<char> &value,
               std::vector<char> *reply);

  std::string where_;
  std::chrono::milliseconds timeout_;
  int fd_ = -1;
  std::mutex mutex_;
};

} // namespace kiln::rt::detail

#endif // KILN_RUNTIME_COLLECTIVE_TCPSTORE_H
