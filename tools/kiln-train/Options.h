//===- Options.h - kiln-train's command line ---------------------*- C++ -*-===//
#ifndef KILN_TOOLS_KILN_TRAIN_OPTIONS_H
#define KILN_TOOLS_KILN_TRAIN_OPTIONS_H

#include <cstdint>
#include <optional>
#include <string>

namespace kiln::train {

/// kiln-train's flags (see its --help), parsed and checked.
struct Options {
  std::string artifact;
  std::string data, trainData, trainLabels, testData, testLabels, labels = "labels";
  std::optional<double> scale;
  int64_t steps = -1, epochs = -1, evalEvery = 1000, printEvery = 10;
  int64_t summaryEvery = 100, histogramEvery = 1000, checkpointEvery = 1000, keep = 5;
  uint64_t seed = 0;
  std::string evalWeights, progress = "auto", logdir, metrics, checkpointDir, exportPath, model;
  std::string predictions;
  bool resume = false;
  long threads = 0;
  // Data-parallel replicas in this process ("cpu:0,cpu:1"), and how long a collective waits for
  // a peer before the run stops.
  std::string devices;
  double timeout = 10;
};

} // namespace kiln::train

#endif // KILN_TOOLS_KILN_TRAIN_OPTIONS_H
