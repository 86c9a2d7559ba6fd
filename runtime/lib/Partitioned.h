// Runs an artifact partitioned over several devices: one executor thread per device, each running
// its stages in the manifest's order, with host copies for tensors that cross devices.
#ifndef KILN_RUNTIME_PARTITIONED_H
#define KILN_RUNTIME_PARTITIONED_H

#include "kiln/manifest.h"

#include <memory>
#include <string>

namespace kiln::rt::detail {

class PartitionedExecutor {
public:
  // Resolves every kiln_stage_<i> of `library`, allocates stage results and transfer buffers, and
  // starts one thread per device. Throws StatusError.
  static std::unique_ptr<PartitionedExecutor> open(const std::string &path, const Manifest &manifest,
                                                   void *library);
  ~PartitionedExecutor();

  // `buffers`: the inputs, then the outputs, as kiln_entry takes them (aligned). Runs every stage
  // once and copies the outputs; one run at a time.
  void run(void *const *buffers);

  // "cpu:0,cpu:1".
  const std::string &devices() const;

  struct State;

private:
  explicit PartitionedExecutor(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

} // namespace kiln::rt::detail

#endif // KILN_RUNTIME_PARTITIONED_H
