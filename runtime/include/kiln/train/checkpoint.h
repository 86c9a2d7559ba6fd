// Checkpoints of a training run: every state tensor of a train step in one .npz file (a zip of
// .npy files, as numpy.savez writes it, each with its CRC-32), written atomically, kept K deep.
#ifndef KILN_TRAIN_CHECKPOINT_H
#define KILN_TRAIN_CHECKPOINT_H

#include "kiln/tensor.h"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::train {

struct Checkpoint {
  std::vector<rt::Tensor> tensors; // named; in file order
  // Key-value text about the run (the member "kiln-train.txt"): the step, the data seed, ...
  std::map<std::string, std::string> metadata;

  const rt::Tensor *find(const std::string &name) const;
};

// Writes `tensors` (each under its name, as "<name>.npy") and `metadata` to `path` atomically:
// a temporary file beside it, fsync, rename over `path`, fsync of the directory. On failure (a
// full disk, an unwritable directory) the temporary file is removed, whatever was at `path`
// stays as it was, and rt::Error names the file and the reason. Zip64 is not written: a
// checkpoint over 4 GiB is refused.
void writeCheckpoint(const std::string &path, const std::vector<const rt::Tensor *> &tensors,
                     const std::map<std::string, std::string> &metadata);

// Reads a checkpoint back, checking its structure and every member's CRC-32. Throws rt::Error
// naming the file (and the member) for a torn, truncated or corrupt file.
Checkpoint readCheckpoint(const std::string &path);

// A directory of checkpoints named ckpt-<step>.npz.
class CheckpointDir {
public:
  // `keep`: how many of the newest checkpoints to keep (at least 1).
  CheckpointDir(std::string dir, int keep);

  const std::string &dir() const { return dir_; }
  // Creates the directory (and parents) if missing, and removes temporary files that a killed
  // run left behind. Throws rt::Error when the directory cannot be made or written.
  void prepare();
  // Writes ckpt-<step>.npz, then deletes all but it and the `keep` - 1 newest before it
  // (checkpoints of later steps, which a resume skipped, are left alone). Returns the path.
  std::string save(int64_t step, const std::vector<const rt::Tensor *> &tensors,
                   const std::map<std::string, std::string> &metadata);
  // The checkpoints present, newest (highest step) first.
  std::vector<std::pair<int64_t, std::string>> list() const;

private:
  std::string dir_;
  int keep_;
};

} // namespace kiln::train

#endif // KILN_TRAIN_CHECKPOINT_H
