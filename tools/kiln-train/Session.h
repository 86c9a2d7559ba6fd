//===- Session.h - One kiln-train run ----------------------------*- C++ -*-===//
//
// A training run: the train step and its data, the state restored from the
// newest valid checkpoint (or the init entry), and the outputs a run writes
// (progress, metrics, TensorBoard events, checkpoints, the exported model).
// In a data-parallel world every process runs a Session over its replicas;
// the leader (process 0) writes the outputs.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_TOOLS_KILN_TRAIN_SESSION_H
#define KILN_TOOLS_KILN_TRAIN_SESSION_H

#include "Options.h"
#include "Progress.h"
#include "Replicas.h"
#include "TrainStep.h"

#include "kiln/train/checkpoint.h"
#include "kiln/train/dataset.h"
#include "kiln/train/events.h"

#include <map>
#include <memory>
#include <optional>
#include <string>

namespace kiln::train {

class MetricsFile;

class Session {
public:
  // Opens the artifact, reads the data, restores the state and opens the
  // logs. Throws rt::Error naming the file, tensor or option at fault.
  explicit Session(const Options &options);
  ~Session();

  // Trains until the step counter reaches the requested step, then evaluates,
  // checkpoints and exports. Returns 0, or 130 when SIGINT or SIGTERM stopped
  // it (after a checkpoint of the last step). Throws rt::Error on a diverged
  // loss or a failed write.
  int run();

private:
  void resume();
  void evaluate(int64_t at, bool last);
  void saveCheckpoint(int64_t at);
  void writeHistograms(int64_t at);

  const Options &options_;
  World world_;
  TrainStep step_;
  std::unique_ptr<Replicas> replicas_;
  bool useEma_;
  Dataset trainSet_;
  std::optional<Dataset> testSet_;
  int64_t batch_, globalBatch_, perEpoch_, total_;
  std::map<std::string, std::string> runInfo_; // written into every checkpoint
  std::optional<CheckpointDir> checkpoints_;
  std::string lastCheckpoint_ = "none";
  bool resumed_ = false;
  std::unique_ptr<EventWriter> events_;
  std::unique_ptr<MetricsFile> metrics_;
  Progress progress_;
};

} // namespace kiln::train

#endif // KILN_TOOLS_KILN_TRAIN_SESSION_H
