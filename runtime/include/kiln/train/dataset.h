// Data sets for training loops: IDX files (MNIST, Fashion-MNIST; gzip-compressed or not) and
// .npy arrays read into memory, the examples' order in each epoch, and batches gathered from it.
#ifndef KILN_TRAIN_DATASET_H
#define KILN_TRAIN_DATASET_H

#include "kiln/tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::train {

// Reads an array of examples: an IDX file (big-endian, type codes u8, i8, i16, i32, f32, f64), a
// .npy file, or either compressed with gzip. The format is told by the content, not the name.
// Throws rt::Error naming the file for a missing or unreadable file, a wrong magic number, a
// header whose sizes disagree with the data (truncated files) or an array of rank 0.
rt::Tensor readArray(const std::string &path);

// `array` converted to `dtype`, each element multiplied by `scale` on the way (integer targets
// must get scale 1). Throws rt::Error naming `what` when an element does not fit the target.
rt::Tensor convertArray(const rt::Tensor &array, rt::DType dtype, double scale,
                        const std::string &what);

// Checks that every label is an integer in [0, classes); throws rt::Error naming `what`, the
// first bad label's index and its value.
void checkLabels(const rt::Tensor &labels, int64_t classes, const std::string &what);

// Examples and labels of equal count, in the dtypes and per-example shapes a train step takes.
struct Dataset {
  rt::Tensor examples; // [count, example shape...]
  rt::Tensor labels;   // [count, label shape...]
  int64_t count() const { return examples.shape().empty() ? 0 : examples.shape()[0]; }
};

// The permutation of [0, count) that epoch `epoch` visits: a Fisher-Yates shuffle drawing from
// SplitMix64 seeded with seed + epoch * 0x9E3779B97F4A7C15, index j for position i taken as the
// high 64 bits of draw * (i + 1). Fixed by this definition on every platform and release, so a
// resumed run and other frameworks (bench/) can replay it.
std::vector<int64_t> epochOrder(int64_t count, uint64_t seed, int64_t epoch);

// Copies rows `indices` of `source` ([count, ...]) into consecutive rows of `batch` ([n, ...],
// same dtype and row size, n >= indices.size()); rows past indices.size() are zeroed.
void gatherRows(const rt::Tensor &source, const int64_t *indices, int64_t count,
                rt::Tensor &batch);

} // namespace kiln::train

#endif // KILN_TRAIN_DATASET_H
