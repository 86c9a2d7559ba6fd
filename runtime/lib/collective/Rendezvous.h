// Where the ranks of a world meet, and what they leave there about themselves: every back end
// (Gloo, NCCL) exchanges its addresses through this store, and a survivor reads it to name a
// rank that died.
#ifndef KILN_RUNTIME_COLLECTIVE_RENDEZVOUS_H
#define KILN_RUNTIME_COLLECTIVE_RENDEZVOUS_H

#include "kiln/collective.h"

#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/store.h>

#include <memory>
#include <string>

namespace kiln::rt::detail {

class Rendezvous {
public:
  /// Opens the store `config.rendezvous` names: a directory (Gloo's file store) or
  /// tcp://HOST:PORT (a RendezvousServer), its keys under `config.runId`. Throws Error naming
  /// this rank when the server cannot be reached.
  explicit Rendezvous(const CollectiveConfig &config);

  gloo::rendezvous::Store &store() { return *store_; }

  /// Lists this rank's host, process id and `address` for the others.
  void publish();
  /// "rank 1 (at 10.0.0.2 on node1, pid 4242)": the rank and what it listed.
  std::string describe(int peer);
  /// The rank that died: with two ranks the other one; else the one whose process on this host
  /// is gone. -1 when that cannot be told (peers on other hosts, or more than one gone).
  int deadRank();
  /// "rank 1, 3 did not join": the ranks whose key `prefix + rank` is missing; "" when none is.
  std::string missing(const std::string &prefix);

  /// "rank 0 of 2".
  std::string where() const;

private:
  CollectiveConfig config_;
  std::unique_ptr<gloo::rendezvous::Store> base_;
  std::unique_ptr<gloo::rendezvous::PrefixStore> store_;
};

/// The key under which `rank` lists itself (publish()).
std::string processKey(int rank);

} // namespace kiln::rt::detail

#endif // KILN_RUNTIME_COLLECTIVE_RENDEZVOUS_H
