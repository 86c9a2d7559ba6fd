// The TCP rendezvous store and its server. The protocol is one request and one reply at a time
// per connection: a request is an op byte ('S' set, 'G' get), a u32 key length and the key,
// and for set a u32 value length and the value; the reply is a byte (1: the key is there), and
// for a get of a present key a u32 length and the value. Little-endian lengths, keys and values
// at most 64 MiB. A get of a missing key does not wait; clients poll.
#include "TcpStore.h"

#include "kiln/collective.h"
#include "kiln/tensor.h"

#include <arpa/inet.h>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace kiln::rt {
namespace detail {
namespace {

constexpr uint32_t kMaxField = 64u << 20;

/// Moves exactly `size` bytes with `transfer` (a send or a recv of at most
/// that many bytes); false when the peer closed, an error or the socket's
/// timeout came first, or (with `stop`, checked every 100 ms while waiting to
/// read) once `stop` is set.
template <typename Transfer>
bool transferAll(int fd, char *p, size_t size, Transfer transfer, const std::atomic<bool> *stop = nullptr) {
  while (size > 0) {
    if (stop) {
      pollfd ready{fd, POLLIN, 0};
      int r = ::poll(&ready, 1, 100);
      if (stop->load())
        return false;
      if (r == 0 || (r < 0 && errno == EINTR))
        continue;
    }
    ssize_t n = transfer(p, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool sendAll(int fd, const void *data, size_t size) {
  return transferAll(fd, const_cast<char *>(static_cast<const char *>(data)), size,
                     [fd](char *p, size_t n) { return ::send(fd, p, n, MSG_NOSIGNAL); });
}

bool recvAll(int fd, void *data, size_t size, const std::atomic<bool> *stop = nullptr) {
  return transferAll(fd, static_cast<char *>(data), size,
                     [fd](char *p, size_t n) { return ::recv(fd, p, n, 0); }, stop);
}

bool sendField(int fd, const char *data, size_t size) {
  uint32_t length = static_cast<uint32_t>(size);
  return sendAll(fd, &length, sizeof length) && sendAll(fd, data, size);
}

bool recvField(int fd, std::string &out, const std::atomic<bool> *stop = nullptr) {
  uint32_t length = 0;
  if (!recvAll(fd, &length, sizeof length, stop) || length > kMaxField)
    return false;
  out.resize(length);
  return recvAll(fd, out.data(), length, stop);
}

/// A TCP socket connected to host:port within `timeout`, whose sends and
/// receives also give up after `timeout` (a host that vanished sends no
/// reset: without this a read waits forever); -1 with `error` set.
int connectTo(const std::string &host, int port, std::chrono::milliseconds timeout, std::string &error) {
  addrinfo hints{}, *found = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0) {
    error = gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  for (addrinfo *a = found; a; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0)
      continue;
    int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd ready{fd, POLLOUT, 0};
      int soError = 0;
      socklen_t length = sizeof soError;
      if (::poll(&ready, 1, static_cast<int>(timeout.count())) == 1 &&
          ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &length) == 0 && soError == 0)
        rc = 0;
      else
        errno = soError ? soError : ETIMEDOUT;
    }
    if (rc == 0)
      break;
    error = std::strerror(errno);
    ::close(fd);
    fd = -1;
  }
  ::freeaddrinfo(found);
  if (fd >= 0) {
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    timeval limit{static_cast<time_t>(timeout.count() / 1000),
                  static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
  }
  return fd;
}

} // namespace

bool parseTcpAddress(const std::string &address, std::string &host, int &port) {
  const std::string scheme = "tcp://";
  if (address.rfind(scheme, 0) != 0)
    return false;
  std::string rest = address.substr(scheme.size());
  size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0)
    return false;
  host = rest.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  char *end = nullptr;
  long value = std::strtol(rest.c_str() + colon + 1, &end, 10);
  if (*end || value <= 0 || value > 65535)
    return false;
  port = static_cast<int>(value);
  return true;
}

TcpStore::TcpStore(const std::string &host, int port, std::chrono::milliseconds timeout)
    : where_(host + ":" + std::to_string(port)), timeout_(timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string error;
  while ((fd_ = connectTo(host, port, timeout, error)) < 0) {
    if (std::chrono::steady_clock::now() >= deadline)
      throw Error("cannot reach the rendezvous at " + where_ + " within " +
                  std::to_string(timeout.count()) + " ms: " + error);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

TcpStore::~TcpStore() {
  if (fd_ >= 0)
    ::close(fd_);
}

bool TcpStore::request(char op, const std::string &key, const std::vector<char> &value,
                       std::vector<char> *reply) {
  std::lock_guard<std::mutex> lock(mutex_);
  bool sent = sendAll(fd_, &op, 1) && sendField(fd_, key.data(), key.size()) &&
              (op != 'S' || sendField(fd_, value.data(), value.size()));
  char present = 0;
  const std::string lost = "the rendezvous at " + where_ + " closed the connection or did not answer " +
                           "within " + std::to_string(timeout_.count()) + " ms (its kiln-launch ended?)";
  if (!sent || !recvAll(fd_, &present, 1))
    throw Error(lost);
  if (present && op == 'G') {
    std::string data;
    if (!recvField(fd_, data))
      throw Error(lost);
    if (reply)
      reply->assign(data.begin(), data.end());
  }
  return present != 0;
}

void TcpStore::set(const std::string &key, const std::vector<char> &data) {
  request('S', key, data, nullptr);
}

std::vector<char> TcpStore::get(const std::string &key) {
  wait({key}, timeout_);
  std::vector<char> value;
  request('G', key, {}, &value);
  return value;
}

void TcpStore::wait(const std::vector<std::string> &keys, const std::chrono::milliseconds &timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<std::string> missing = keys;
  for (;;) {
    std::vector<std::string> still;
    for (const std::string &key : missing) {
      std::vector<char> ignored;
      if (!request('G', key, {}, &ignored))
        still.push_back(key);
    }
    if (still.empty())
      return;
    if (std::chrono::steady_clock::now() >= deadline) {
      std::string list;
      for (const std::string &key : still)
        list += (list.empty() ? "" : ", ") + key;
      throw Error("Wait timeout for key(s): [" + list + "]");
    }
    missing = std::move(still);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

} // namespace detail

struct RendezvousServer::State {
  int listener = -1;
  int port = 0;
  std::atomic<bool> stop{false};
  std::mutex mutex;
  std::map<std::string, std::string> values;
  std::vector<std::thread> connections;
  std::thread acceptor;

  void serve(int fd) {
    for (;;) {
      char op = 0;
      std::string key, value;
      if (!detail::recvAll(fd, &op, 1, &stop) || !detail::recvField(fd, key, &stop))
        break;
      if (op == 'S') {
        if (!detail::recvField(fd, value, &stop))
          break;
        {
          std::lock_guard<std::mutex> lock(mutex);
          values[key] = value;
        }
        char ok = 1;
        if (!detail::sendAll(fd, &ok, 1))
          break;
      } else if (op == 'G') {
        bool present;
        {
          std::lock_guard<std::mutex> lock(mutex);
          auto found = values.find(key);
          present = found != values.end();
          if (present)
            value = found->second;
        }
        char flag = present ? 1 : 0;
        if (!detail::sendAll(fd, &flag, 1) || (present && !detail::sendField(fd, value.data(), value.size())))
          break;
      } else {
        break; // not a client of ours
      }
    }
    ::close(fd);
  }

  void acceptLoop() {
    while (!stop.load()) {
      pollfd ready{listener, POLLIN, 0};
      if (::poll(&ready, 1, 100) <= 0)
        continue;
      int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0)
        continue;
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      std::lock_guard<std::mutex> lock(mutex);
      connections.emplace_back([this, fd] { serve(fd); });
    }
  }
};

RendezvousServer::RendezvousServer(const std::string &address, int port) : state_(std::make_unique<State>()) {
  std::string host = address; // "[::1]" as in a URL is "::1" to getaddrinfo
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  addrinfo hints{}, *found = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  std::string where = host + ":" + std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0)
    throw Error("rendezvous " + where + ": " + gai_strerror(rc));
  std::string error = "no address";
  for (addrinfo *a = found; a && state_->listener < 0; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0)
      continue;
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 128) == 0) {
      state_->listener = fd;
      sockaddr_storage bound{};
      socklen_t length = sizeof bound;
      ::getsockname(fd, reinterpret_cast<sockaddr *>(&bound), &length);
      state_->port = ntohs(bound.ss_family == AF_INET6
                               ? reinterpret_cast<sockaddr_in6 *>(&bound)->sin6_port
                               : reinterpret_cast<sockaddr_in *>(&bound)->sin_port);
    } else {
      error = std::strerror(errno);
      ::close(fd);
    }
  }
  ::freeaddrinfo(found);
  if (state_->listener < 0)
    throw Error("cannot listen for the rendezvous on " + where + ": " + error);
  state_->acceptor = std::thread([s = state_.get()] { s->acceptLoop(); });
}

RendezvousServer::~RendezvousServer() {
  state_->stop = true;
  state_->acceptor.join();
  ::close(state_->listener);
  std::vector<std::thread> connections;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    connections.swap(state_->connections);
  }
  for (std::thread &t : connections)
    t.join();
}

int RendezvousServer::port() const { return state_->port; }

} // namespace kiln::rt
