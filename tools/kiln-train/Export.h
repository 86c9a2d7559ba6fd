//===- Export.h - Trained weights written back into an ONNX model -*- C++ -*-===//
#ifndef KILN_TOOLS_KILN_TRAIN_EXPORT_H
#define KILN_TOOLS_KILN_TRAIN_EXPORT_H

#include "kiln/tensor.h"

#include <string>
#include <utility>
#include <vector>

namespace kiln::train {

// Reads the ONNX model `source` (binary, or text format for .onnxtxt/.txt),
// replaces the data of each initializer named in `weights` with the tensor's
// (raw_data, same dtype and dims) and writes the model to `destination`
// through a temporary file and a rename. Nodes in training mode are switched
// to inference: Dropout loses its training_mode input, BatchNormalization
// gets training_mode 0 and only its first output. Throws rt::Error naming the file or
// the weight: an unreadable model, a weight with no initializer of its name
// (a weight named after an Identity of an initializer, as exporters name
// each use of a shared tensor, becomes an initializer in the Identity's place)
// or of another shape, `destination` being `source`. Returns the number of
// initializers replaced.
int exportOnnx(const std::string &source, const std::string &destination,
               const std::vector<std::pair<std::string, const rt::Tensor *>> &weights);

} // namespace kiln::train

#endif // KILN_TOOLS_KILN_TRAIN_EXPORT_H
