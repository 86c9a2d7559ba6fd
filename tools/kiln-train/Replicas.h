//===- Replicas.h - Data-parallel replicas of a train step ------*- C++ -*-===//
//
// A data-parallel run is a world of replicas, each running the same train
// step on its own shard of every batch, their gradients summed by the step
// itself through a collective (kilnc --data-parallel=true). A process hosts
// one or more of them (--devices): the first drives the artifact the user
// gave, the others private copies of it (a loaded artifact's buffers and
// hooks belong to its file), each on a thread of its own. Processes find
// each other through a rendezvous directory (kiln-launch sets the
// environment below).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_TOOLS_KILN_TRAIN_REPLICAS_H
#define KILN_TOOLS_KILN_TRAIN_REPLICAS_H

#include "TrainStep.h"

#include "kiln/collective.h"
#include "kiln/train/checkpoint.h"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace kiln::train {

/// Where this process stands in a data-parallel world.
struct World {
  int process = 0, processes = 1; // KILN_RANK, KILN_WORLD_SIZE: processes, not replicas
  int local = 1;                  // replicas in this process (--devices)
  std::string rendezvous;         // KILN_RENDEZVOUS: a directory every process can reach
  std::string runId = "kiln";     // KILN_RUN_ID
  std::string host = "127.0.0.1"; // KILN_HOST: the address peers reach this process on
  std::chrono::milliseconds timeout{10000};
  std::vector<int> gpus; // the GPU of each local replica, when --devices names GPUs

  int size() const { return processes * local; }
  int firstRank() const { return process * local; }
  bool leader() const { return process == 0; }

  /// The world from --devices (a list of cpu:N), the environment and the
  /// collective timeout. Throws rt::Error naming the variable or device at
  /// fault.
  static World fromEnvironment(const std::string &devices, double timeoutSeconds);
};

class Replicas {
public:
  /// Opens the local replicas: `first` (already open on `path`) and copies of
  /// `path` for the others, and connects every one to the world. Throws
  /// rt::Error when the artifact has no collectives but the world has more
  /// than one replica, or a peer does not join within the timeout.
  Replicas(const World &world, TrainStep &first, const std::string &path, const std::string &labels);
  ~Replicas();

  const World &world() const { return world_; }
  int count() const { return static_cast<int>(steps_.size()); }
  /// Replica `i` of this process (0: the one given to the constructor).
  TrainStep &step(int i) { return *steps_[i]; }

  /// Runs one step on every local replica at once (their data and labels
  /// already filled); returns replica 0's loss, which is the world's.
  /// Throws rt::Error naming the rank and the step when a collective failed.
  float run();

  /// Sets every local replica's state as the init entry does, or from
  /// `checkpoint`.
  void initialize();
  void restore(const Checkpoint &checkpoint, const std::string &source);

  /// Checks that every replica of the world starts from the same step (they
  /// restore checkpoints each from its own file system). Throws rt::Error
  /// naming the rank that differs.
  void checkSameStep();

  /// "communication 12.3 ms per step, 81% of it hidden behind computation".
  std::string overlapSummary() const;

private:
  World world_;
  /// The directory of the private copies, removed however the replicas end.
  struct TempDir {
    std::string path;
    ~TempDir();
  } copies_;
  std::vector<TrainStep *> steps_;
  std::vector<std::unique_ptr<TrainStep>> owned_;
  struct Link;
  std::vector<std::unique_ptr<Link>> links_;
  void connectGpus();
  rt::CollectiveConfig configFor(int local) const;
};

} // namespace kiln::train

#endif // KILN_TOOLS_KILN_TRAIN_REPLICAS_H
