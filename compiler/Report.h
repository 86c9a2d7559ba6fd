//===- Report.h - kilnc's HTML placement report ---------------*- C++ -*-===//
//
// `kilnc --report=out.html` writes one self-contained page: the graph drawn
// with nodes coloured by device and fusions outlined, the partitions with
// their sends and receives, the stages, and a table of every node.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_COMPILER_REPORT_H
#define KILN_COMPILER_REPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassInstrumentation.h"

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace kiln {

/// What the report shows, gathered while the graph passes run.
struct PlacementReport {
  struct Node {
    std::string name, op, device;
    /// Producers: node indices, or graph inputs as -1 - input index.
    std::vector<int> inputs;
    int fusion = -1;
  };
  struct Transfer {
    std::string tensor, peer; // the other device
  };
  struct Partition {
    std::string device;
    int ops = 0;
    std::vector<Transfer> sends, receives;
  };
  struct Fusion {
    std::string kind, device;
    std::vector<std::string> nodes;
  };
  struct Stage {
    std::string function, device;
  };

  std::string model;
  std::vector<std::string> inputs, outputs;
  std::vector<Node> nodes;
  std::vector<Partition> partitions;
  std::vector<Fusion> fusions;
  std::vector<Stage> stages;
};

/// Records the placed graph (after kiln-place) and the partitions (after
/// kiln-partition) into `report` as the pass manager runs.
class ReportInstrumentation : public mlir::PassInstrumentation {
public:
  explicit ReportInstrumentation(std::shared_ptr<PlacementReport> report)
      : report(std::move(report)) {}
  void runAfterPass(mlir::Pass *pass, mlir::Operation *op) override;

private:
  std::shared_ptr<PlacementReport> report;
  std::mutex mutex;
};

/// Adds the fusions and stages of the finished graph-level module.
void collectFusions(mlir::ModuleOp module, PlacementReport &report);

/// The HTML page.
std::string renderReport(const PlacementReport &report);

} // namespace kiln

#endif // KILN_COMPILER_REPORT_H
