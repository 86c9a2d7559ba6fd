//===- Export.cpp - Trained weights written back into an ONNX model -------===//
#include "Export.h"

#include "kiln/files.h"
#include "kiln/train/checkpoint.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/text_format.h>
#include <onnx/onnx_pb.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <sys/stat.h>

namespace kiln::train {
namespace {

using rt::Error;

bool isTextModel(const std::string &path) {
  auto endsWith = [&](const char *suffix) {
    size_t n = std::strlen(suffix);
    return path.size() >= n && path.compare(path.size() - n, n, suffix) == 0;
  };
  return endsWith(".onnxtxt") || endsWith(".txt") || endsWith(".textproto");
}

onnx::ModelProto readModel(const std::string &path) {
  std::string bytes = rt::readFileBytes(path);
  onnx::ModelProto model;
  if (isTextModel(path)) {
    if (!google::protobuf::TextFormat::ParseFromString(bytes, &model) || !model.has_graph())
      throw Error(path + ": not an ONNX model in protobuf text format");
    return model;
  }
  google::protobuf::io::ArrayInputStream stream(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream coded(&stream);
  coded.SetTotalBytesLimit(INT_MAX);
  if (!model.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage() || !model.has_graph())
    throw Error(path + ": not an ONNX model (truncated, or not a ModelProto)");
  return model;
}

/// Switches training-mode nodes to inference: Dropout loses its training_mode
/// input (false by default), BatchNormalization's training_mode becomes 0 and
/// its running-statistics outputs go. Returns how many nodes changed.
int toInferenceMode(onnx::GraphProto &graph, const std::string &source) {
  int changed = 0;
  for (onnx::NodeProto &node : *graph.mutable_node()) {
    if (node.op_type() == "Dropout" && node.input_size() == 3) {
      node.mutable_input()->RemoveLast();
      ++changed;
    } else if (node.op_type() == "BatchNormalization") {
      for (onnx::AttributeProto &attr : *node.mutable_attribute()) {
        if (attr.name() != "training_mode" || attr.i() == 0)
          continue;
        for (int i = 1; i < node.output_size(); ++i) {
          const std::string &stat = node.output(i);
          bool used = false;
          for (const onnx::NodeProto &other : graph.node())
            for (const std::string &input : other.input())
              used |= !stat.empty() && input == stat;
          for (const onnx::ValueInfoProto &output : graph.output())
            used |= !stat.empty() && output.name() == stat;
          if (used)
            throw Error(source + ": node '" + node.name() + "' (BatchNormalization) in training "
                        "mode has its running statistics '" + stat + "' read by the model; "
                        "it cannot be exported in inference mode");
        }
        attr.set_i(0);
        while (node.output_size() > 1)
          node.mutable_output()->RemoveLast();
        ++changed;
      }
    }
  }
  return changed;
}

} // namespace

int exportOnnx(const std::string &source, const std::string &destination,
               const std::vector<std::pair<std::string, const rt::Tensor *>> &weights) {
  rt::refuseToOverwriteInput(destination, "--export", {{source, "the model being exported from"}});
  onnx::ModelProto model = readModel(source);
  onnx::GraphProto &graph = *model.mutable_graph();
  // A weight the importer named after an Identity of an initializer (how
  // exporters give each use of a shared tensor its name) becomes an
  // initializer of that name, in place of the Identity.
  std::map<std::string, int> identities; // output -> node index
  for (int i = 0; i < graph.node_size(); ++i)
    if (graph.node(i).op_type() == "Identity" && graph.node(i).input_size() == 1 &&
        graph.node(i).output_size() == 1)
      identities[graph.node(i).output(0)] = i;
  std::set<int> replacedNodes;
  auto findInitializer = [&](const std::string &name) -> onnx::TensorProto * {
    for (onnx::TensorProto &init : *graph.mutable_initializer())
      if (init.name() == name)
        return &init;
    return nullptr;
  };
  for (const auto &[name, tensor] : weights) {
    if (findInitializer(name))
      continue;
    auto identity = identities.find(name);
    const onnx::TensorProto *shared =
        identity == identities.end() ? nullptr
                                     : findInitializer(graph.node(identity->second).input(0));
    if (!shared)
      throw Error(source + ": has no initializer '" + name + "' to export the trained weight to");
    onnx::TensorProto own = *shared;
    own.set_name(name);
    *graph.add_initializer() = std::move(own);
    replacedNodes.insert(identity->second);
  }
  if (!replacedNodes.empty()) {
    google::protobuf::RepeatedPtrField<onnx::NodeProto> kept;
    for (int i = 0; i < graph.node_size(); ++i)
      if (!replacedNodes.count(i))
        *kept.Add() = graph.node(i);
    graph.mutable_node()->Swap(&kept);
  }
  std::map<std::string, onnx::TensorProto *> initializers;
  for (onnx::TensorProto &init : *graph.mutable_initializer())
    initializers[init.name()] = &init;
  for (const auto &[name, tensor] : weights) {
    auto found = initializers.find(name);
    onnx::TensorProto &init = *found->second;
    std::vector<int64_t> dims(init.dims().begin(), init.dims().end());
    if (init.data_type() != rt::onnxDataType(tensor->dtype()) || dims != tensor->shape())
      throw Error(source + ": initializer '" + name + "' is of another type or shape than the "
                  "trained " + tensor->typeString());
    onnx::TensorProto replacement;
    replacement.mutable_dims()->CopyFrom(init.dims());
    replacement.set_data_type(init.data_type());
    replacement.set_name(init.name());
    if (init.has_doc_string())
      replacement.set_doc_string(init.doc_string());
    replacement.set_raw_data(tensor->data(), tensor->byteSize());
    init = std::move(replacement); // drops float_data, external data and the like
  }
  toInferenceMode(graph, source);
  std::string bytes;
  if (isTextModel(destination)) {
    if (!google::protobuf::TextFormat::PrintToString(model, &bytes))
      throw Error(destination + ": cannot print the model as text");
  } else if (!model.SerializeToString(&bytes)) {
    throw Error(destination + ": the model does not serialize (over 2 GiB?)");
  }
  rt::writeFileAtomically(destination, bytes);
  return static_cast<int>(weights.size());
}

} // namespace kiln::train
