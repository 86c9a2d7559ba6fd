// Collectives among the replicas of a data-parallel train step: every rank's buffer summed or
// averaged in place. Gloo (TCP, host buffers: CPU replicas in one process or many, on one host
// or many) and NCCL (device buffers, one GPU per rank).
#ifndef KILN_COLLECTIVE_H
#define KILN_COLLECTIVE_H

#include "kiln/collective_abi.h"

#include <chrono>
#include <cstdint>
#include <cstddef>
#include <memory>
#include <string>

namespace kiln::rt {

struct CollectiveConfig {
  int rank = 0;
  int size = 1;
  // Where the ranks find each other: a directory every rank can read and write (Gloo's file
  // store; on one host a temporary directory, across hosts a shared file system), or
  // "tcp://HOST:PORT", a RendezvousServer (kiln-launch --rdzv).
  std::string rendezvous;
  // Separates runs that share a rendezvous directory.
  std::string runId = "kiln";
  // The address this rank listens on for its peers.
  std::string host = "127.0.0.1";
  // How long connecting and each collective may wait for a peer before failing.
  std::chrono::milliseconds timeout{10000};
};

class Collective {
public:
  virtual ~Collective();
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Sums `count` floats over every rank in place, then divides by size() when `average`.
  // Throws Error naming this rank and the peer that died or did not answer in time.
  virtual void allReduce(float *data, std::size_t count, bool average) = 0;
  // Returns once every rank has called it (or throws as allReduce does).
  virtual void barrier() = 0;
};

// Connects this rank to every other through `config.rendezvous`, with Gloo over TCP. Throws
// Error naming the rank, the rendezvous and the ranks that did not show up within the timeout.
std::unique_ptr<Collective> connectGloo(const CollectiveConfig &config);

// Sums device buffers over the ranks of a world, one GPU per rank, through NCCL (loaded with
// dlopen, like the CUDA driver: $KILN_LIBNCCL, else libnccl.so.2). Sums run on a stream of the
// collective's own, ordered against the caller's streams by events; the host waits for them only
// in synchronize(), with the timeout, so a dead or hung peer is an error naming it, not a hang.
class DeviceCollective {
public:
  virtual ~DeviceCollective();
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Queues the in-place sum of `count` floats at device address `data`, to start once the work
  // queued so far on `after` (a CUstream; null: the legacy default stream) is done. Returns at
  // once; throws Error when NCCL refuses the call.
  virtual void startAllReduce(uint64_t data, std::size_t count, void *after) = 0;
  // Makes `stream` wait, on the device, for every sum queued so far.
  virtual void waitOn(void *stream) = 0;
  // Blocks until every sum queued so far is done. Throws Error naming this rank, and the peer
  // that died where it can tell, when the timeout passes first or NCCL reports an error; the
  // communicator is aborted then and the collective unusable.
  virtual void synchronize() = 0;
};

// Connects rank `config.rank` on GPU `device` to the others: rank 0 makes NCCL's unique id and
// hands it over through `config.rendezvous`. Throws Error when NCCL or the driver cannot be
// loaded, or a rank does not join within the timeout (naming it).
std::unique_ptr<DeviceCollective> connectNccl(const CollectiveConfig &config, int device);

// The table to install with kiln_artifact_set_device_collective for a GPU step: its all-reduce
// records queue sums on `collective` and the step finishes them (synchronize, with the timeout)
// before it waits for its stream. Valid while `collective` lives.
kiln_device_collective_hooks deviceHooks(DeviceCollective &collective);

// The store ranks meet through when they share no file system: keys and values over TCP, kept
// while the server lives. kiln-launch runs one on the first node for --rdzv HOST:PORT.
class RendezvousServer {
public:
  // Listens on host:port (port 0: a free port, see port()). Throws Error when it cannot.
  RendezvousServer(const std::string &host, int port);
  ~RendezvousServer();
  RendezvousServer(const RendezvousServer &) = delete;
  RendezvousServer &operator=(const RendezvousServer &) = delete;
  int port() const;

private:
  struct State;
  std::unique_ptr<State> state_;
};

// Sums the buckets of a data-parallel train step (kiln/collective_abi.h) over the ranks of
// `collective`, on a thread of its own: a bucket travels while the step computes on, and the step
// waits only for what has not arrived by the time it needs it.
class BucketReducer {
public:
  explicit BucketReducer(Collective &collective);
  ~BucketReducer();
  BucketReducer(const BucketReducer &) = delete;
  BucketReducer &operator=(const BucketReducer &) = delete;

  // The table to install with Artifact::setCollective; valid while this reducer lives.
  kiln_collective_hooks hooks();

  // After each step: throws the Error a bucket of the step met (a dead or silent peer), after
  // which the step's results are garbage; else readies the reducer for the next step.
  void finishStep();

  struct Stats {
    int64_t steps = 0, buckets = 0, bytes = 0;
    // Time the collective spent summing, and the part of it the step stood waiting for.
    double communicationSeconds = 0, exposedSeconds = 0;
  };
  // Totals since the reducer was made.
  Stats stats() const;

private:
  struct State;
  std::unique_ptr<State> state_;
};

} // namespace kiln::rt

#endif // KILN_COLLECTIVE_H
