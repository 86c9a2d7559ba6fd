//===- Report.cpp - kilnc's HTML placement report -------------------------===//
#include "compiler/Report.h"

#include "dialects/kiln/Device.h"
#include "dialects/kiln/KilnOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/Pass.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <map>

using namespace mlir;

namespace kiln {

namespace {

std::string nameOf(Operation *op) {
  std::string name = nodeName(op->getLoc());
  return name.empty() ? op->getName().getStringRef().str() : name;
}

std::string deviceOf(Operation *op) {
  auto attr = op->getAttrOfType<StringAttr>(kDeviceAttrName);
  return attr ? attr.str() : "";
}

/// The graph's input names, from @main's `kiln.name` attributes.
std::vector<std::string> inputNames(func::FuncOp func) {
  std::vector<std::string> names;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    auto attr = func.getArgAttrOfType<StringAttr>(i, "kiln.name");
    names.push_back(attr ? attr.str() : "input_" + std::to_string(i));
  }
  return names;
}

void recordPlacement(func::FuncOp func, PlacementReport &report) {
  report.inputs = inputNames(func);
  report.outputs.clear();
  for (unsigned i = 0; i < func.getNumResults(); ++i) {
    auto attr = func.getResultAttrOfType<StringAttr>(i, "kiln.name");
    report.outputs.push_back(attr ? attr.str() : "output_" + std::to_string(i));
  }
  report.nodes.clear();
  llvm::DenseMap<Operation *, int> index;
  for (Operation &op : func.getBody().front().without_terminator()) {
    PlacementReport::Node node;
    node.name = nameOf(&op);
    node.op = op.getName().getStringRef().str();
    node.device = deviceOf(&op);
    for (Value operand : op.getOperands()) {
      int from;
      if (auto arg = dyn_cast<BlockArgument>(operand))
        from = -1 - static_cast<int>(arg.getArgNumber());
      else
        from = index.lookup(operand.getDefiningOp());
      if (llvm::find(node.inputs, from) == node.inputs.end())
        node.inputs.push_back(from);
    }
    index[&op] = report.nodes.size();
    report.nodes.push_back(std::move(node));
  }
}

void recordPartitions(ModuleOp module, PlacementReport &report) {
  report.partitions.clear();
  for (auto func : module.getOps<func::FuncOp>()) {
    std::string device = deviceOf(func);
    if (device.empty())
      continue;
    PlacementReport::Partition partition;
    partition.device = device;
    func.walk([&](Operation *op) {
      if (auto send = dyn_cast<SendOp>(op))
        partition.sends.push_back({send.getTensorName().str(), send.getRecvDevice().str()});
      else if (auto recv = dyn_cast<RecvOp>(op))
        partition.receives.push_back({recv.getTensorName().str(), recv.getSendDevice().str()});
      else if (op->getParentOp() == func && !isa<ConstantOp, func::ReturnOp>(op))
        ++partition.ops;
    });
    report.partitions.push_back(std::move(partition));
  }
}

std::string escape(llvm::StringRef text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&quot;"; break;
    default: out += c;
    }
  }
  return out;
}

/// "CPU:1" from a full device name, for labels.
std::string shortDevice(llvm::StringRef device) {
  size_t at = device.rfind("/device:");
  return at == llvm::StringRef::npos ? device.str() : device.substr(at + 8).str();
}

const char *const kPalette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

} // namespace

void ReportInstrumentation::runAfterPass(Pass *pass, Operation *op) {
  std::lock_guard<std::mutex> lock(mutex);
  if (pass->getArgument() == "kiln-place") {
    auto func = dyn_cast<func::FuncOp>(op);
    if (func && func.getSymName() == "main") {
      recordPlacement(func, *report);
      if (auto module = func->getParentOfType<ModuleOp>())
        if (auto name = module->getAttrOfType<StringAttr>("kiln.model_name"))
          report->model = name.str();
    }
  } else if (pass->getArgument() == "kiln-partition") {
    recordPartitions(cast<ModuleOp>(op), *report);
  }
}

void collectFusions(ModuleOp module, PlacementReport &report) {
  report.fusions.clear();
  report.stages.clear();
  for (auto func : module.getOps<func::FuncOp>()) {
    std::string device = deviceOf(func);
    func.walk([&](FusionOp fusion) {
      PlacementReport::Fusion entry;
      entry.kind = stringifyFusionKind(fusion.getKind()).str();
      entry.device = device;
      llvm::StringSet<> seen;
      for (Operation &op : fusion.getBody().front().without_terminator())
        if (!isa<ConstantOp>(op))
          if (std::string name = nodeName(op.getLoc()); !name.empty() && seen.insert(name).second)
            entry.nodes.push_back(name);
      report.fusions.push_back(std::move(entry));
    });
  }
  // Each node belongs to the fusion of its device that holds its name.
  for (auto [index, fusion] : llvm::enumerate(report.fusions))
    for (PlacementReport::Node &node : report.nodes)
      if (node.fusion < 0 && (fusion.device.empty() || node.device == fusion.device) &&
          llvm::is_contained(fusion.nodes, node.name))
        node.fusion = static_cast<int>(index);
  if (auto main = module.lookupSymbol<func::FuncOp>("main"))
    for (auto call : main.getBody().getOps<func::CallOp>())
      report.stages.push_back({call.getCallee().str(), deviceOf(call)});
}

std::string renderReport(const PlacementReport &report) {
  // Devices in a stable order, each with a colour.
  std::vector<std::string> devices;
  for (const auto &node : report.nodes)
    if (llvm::find(devices, node.device) == devices.end())
      devices.push_back(node.device);
  llvm::sort(devices);
  auto colour = [&](const std::string &device) {
    size_t i = llvm::find(devices, device) - devices.begin();
    return kPalette[i % std::size(kPalette)];
  };

  // Layers: graph inputs on top, each node one below its lowest producer.
  const int boxW = 180, boxH = 44, gapX = 24, gapY = 46, margin = 30;
  std::vector<int> layer(report.nodes.size(), 1);
  for (size_t i = 0; i < report.nodes.size(); ++i)
    for (int from : report.nodes[i].inputs)
      if (from >= 0)
        layer[i] = std::max(layer[i], layer[from] + 1);
  // Constants sit just above their first user rather than all in the top
  // row, which keeps weight edges short.
  for (size_t i = 0; i < report.nodes.size(); ++i) {
    if (report.nodes[i].op != "kiln.constant")
      continue;
    int first = 0;
    for (size_t j = 0; j < report.nodes.size(); ++j)
      if (llvm::is_contained(report.nodes[j].inputs, static_cast<int>(i)))
        first = first ? std::min(first, layer[j]) : layer[j];
    if (first > 1)
      layer[i] = first - 1;
  }
  int layers = 1;
  for (int l : layer)
    layers = std::max(layers, l + 1);
  std::vector<int> slots(layers, 0);
  std::vector<std::pair<int, int>> at(report.nodes.size()); // x, y
  auto place = [&](int l) {
    int x = margin + slots[l]++ * (boxW + gapX);
    return std::make_pair(x, margin + l * (boxH + gapY));
  };
  std::vector<std::pair<int, int>> inputAt;
  for (size_t i = 0; i < report.inputs.size(); ++i)
    inputAt.push_back(place(0));
  // Layer by layer, nodes go in the order of their producers' mean x (a
  // barycenter ordering, which keeps chains in columns); a constant goes
  // with the other producers of its first user.
  std::vector<std::vector<int>> users(report.nodes.size());
  for (size_t j = 0; j < report.nodes.size(); ++j)
    for (int from : report.nodes[j].inputs)
      if (from >= 0)
        users[from].push_back(static_cast<int>(j));
  auto xOf = [&](int from) {
    return from >= 0 ? at[from].first : inputAt[-1 - from].first;
  };
  std::vector<bool> placed(report.nodes.size(), false);
  auto meanX = [&](int node, int skip) -> double {
    double sum = 0;
    int count = 0;
    for (int from : report.nodes[node].inputs)
      if (from != skip && (from < 0 || placed[from])) {
        sum += xOf(from);
        ++count;
      }
    return count ? sum / count : 1e9 + node;
  };
  for (int l = 1; l < layers; ++l) {
    std::vector<std::pair<double, int>> order;
    for (size_t i = 0; i < report.nodes.size(); ++i) {
      if (layer[i] != l)
        continue;
      double key = meanX(static_cast<int>(i), INT32_MIN);
      if (report.nodes[i].inputs.empty() && !users[i].empty())
        key = meanX(users[i].front(), static_cast<int>(i)) - 0.5;
      order.push_back({key, static_cast<int>(i)});
    }
    llvm::stable_sort(order, [](const auto &a, const auto &b) { return a.first < b.first; });
    for (auto [key, i] : order) {
      at[i] = place(l);
      placed[i] = true;
    }
  }
  int width = margin * 2 + std::max(1, *std::max_element(slots.begin(), slots.end())) * (boxW + gapX);
  int height = margin * 2 + layers * (boxH + gapY);

  std::string html;
  llvm::raw_string_ostream os(html);
  std::string title = "Kiln placement: " + (report.model.empty() ? "model" : report.model);
  os << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>" << escape(title)
     << "</title>\n<style>\n"
        "body{font-family:sans-serif;margin:20px;color:#222}\n"
        "h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}\n"
        "table{border-collapse:collapse;font-size:.9em}td,th{border:1px solid #ccc;padding:3px "
        "8px;text-align:left;vertical-align:top}\n"
        ".swatch{display:inline-block;width:12px;height:12px;margin-right:6px;border:1px solid "
        "#333}\n"
        ".graph{overflow:auto;border:1px solid #ddd;max-height:80vh}\n"
        "svg text{font-size:11px;font-family:sans-serif}\n"
        "</style></head><body>\n<h1>" << escape(title) << "</h1>\n";

  os << "<p>" << report.nodes.size() << " nodes on " << devices.size() << " device"
     << (devices.size() == 1 ? "" : "s") << ", " << report.fusions.size() << " fusions, "
     << report.stages.size() << " stages.</p>\n<p>";
  for (const std::string &device : devices)
    os << "<span class=\"swatch\" style=\"background:" << colour(device) << "\"></span>"
       << escape(device) << "&nbsp;&nbsp; ";
  os << "<span class=\"swatch\" style=\"border-style:dashed;background:none\"></span>fusion</p>\n";

  // The graph.
  os << "<h2>Graph</h2>\n<div class=\"graph\"><svg xmlns=\"http://www.w3.org/2000/svg\" width=\""
     << width << "\" height=\"" << height << "\" id=\"graph\">\n"
     << "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"6\" "
        "markerHeight=\"6\" orient=\"auto\"><path d=\"M0,0L10,5L0,10z\" fill=\"#888\"/></marker>"
        "</defs>\n";
  auto bottom = [&](int from) {
    auto [x, y] = from >= 0 ? at[from] : inputAt[-1 - from];
    return std::make_pair(x + boxW / 2, y + boxH);
  };
  // Fusion outlines: the bounding box of their nodes.
  for (auto [index, fusion] : llvm::enumerate(report.fusions)) {
    int x0 = width, y0 = height, x1 = 0, y1 = 0, members = 0;
    for (size_t i = 0; i < report.nodes.size(); ++i)
      if (report.nodes[i].fusion == static_cast<int>(index)) {
        x0 = std::min(x0, at[i].first);
        y0 = std::min(y0, at[i].second);
        x1 = std::max(x1, at[i].first + boxW);
        y1 = std::max(y1, at[i].second + boxH);
        ++members;
      }
    if (!members)
      continue;
    os << "<g class=\"fusion\"><rect x=\"" << x0 - 7 << "\" y=\"" << y0 - 15 << "\" width=\""
       << x1 - x0 + 14 << "\" height=\"" << y1 - y0 + 22 << "\" rx=\"8\" fill=\"none\" stroke=\""
       << colour(fusion.device.empty() ? devices.front() : fusion.device)
       << "\" stroke-width=\"1.5\" stroke-dasharray=\"6,4\"/><text x=\"" << x0 - 3 << "\" y=\""
       << y0 - 4 << "\" fill=\"#555\">fusion #" << index << " (" << fusion.kind << ")</text></g>\n";
  }
  for (size_t i = 0; i < report.inputs.size(); ++i) {
    auto [x, y] = inputAt[i];
    os << "<g class=\"input\"><ellipse cx=\"" << x + boxW / 2 << "\" cy=\"" << y + boxH / 2
       << "\" rx=\"" << boxW / 2 << "\" ry=\"" << boxH / 2
       << "\" fill=\"#f4f4f4\" stroke=\"#888\"/><text x=\"" << x + boxW / 2 << "\" y=\""
       << y + boxH / 2 + 4 << "\" text-anchor=\"middle\">input " << escape(report.inputs[i])
       << "</text></g>\n";
  }
  for (size_t i = 0; i < report.nodes.size(); ++i) {
    const auto &node = report.nodes[i];
    auto [x, y] = at[i];
    std::string label = node.name;
    if (label.size() > 26) {
      // Cut at a character boundary (not inside a UTF-8 sequence).
      size_t cut = 25;
      while (cut > 0 && (static_cast<unsigned char>(label[cut]) & 0xC0) == 0x80)
        --cut;
      label = label.substr(0, cut) + "\u2026";
    }
    os << "<g class=\"node\" data-device=\"" << escape(node.device) << "\"><title>"
       << escape(node.name) << " (" << escape(node.op) << ") on " << escape(node.device)
       << "</title><rect x=\"" << x << "\" y=\"" << y << "\" width=\"" << boxW << "\" height=\""
       << boxH << "\" rx=\"4\" fill=\"" << colour(node.device)
       << "\" fill-opacity=\"0.85\" stroke=\"#333\"/><text x=\"" << x + 6 << "\" y=\"" << y + 17
       << "\" fill=\"#fff\" font-weight=\"bold\">" << escape(label) << "</text><text x=\"" << x + 6
       << "\" y=\"" << y + 34 << "\" fill=\"#fff\">" << escape(node.op) << " \u00b7 "
       << escape(shortDevice(node.device)) << "</text></g>\n";
  }
  // Edges last, so that edges skipping layers show over the boxes; a
  // transfer between devices is red and dashed.
  for (size_t i = 0; i < report.nodes.size(); ++i)
    for (int from : report.nodes[i].inputs) {
      auto [x1, y1] = bottom(from);
      int x2 = at[i].first + boxW / 2, y2 = at[i].second;
      bool crossing = from >= 0 && report.nodes[from].device != report.nodes[i].device;
      // An edge that skips layers bulges to the right of the boxes it passes.
      int skipped = (y2 - y1) / (boxH + gapY);
      int bulge = skipped > 0 ? boxW * 3 / 4 : 0;
      os << "<path d=\"M" << x1 << "," << y1 << " C" << x1 + bulge << "," << (bulge ? y1 + gapY : (y1 + y2) / 2)
         << " " << x2 + bulge << "," << (bulge ? y2 - gapY : (y1 + y2) / 2) << " " << x2 << ","
         << y2 << "\" fill=\"none\" stroke=\""
         << (crossing ? "#d62728" : "#999") << "\" stroke-width=\"" << (crossing ? 2 : 1)
         << "\" stroke-opacity=\"0.85\" marker-end=\"url(#arrow)\"" << (crossing ? " stroke-dasharray=\"5,3\"" : "")
         << "><title>" << (crossing ? "transfer " : "")
         << escape(from >= 0 ? report.nodes[from].name : report.inputs[-1 - from]) << " &#8594; "
         << escape(report.nodes[i].name) << "</title></path>\n";
    }
  os << "</svg></div>\n";

  // Partitions.
  os << "<h2>Partitions</h2>\n<table id=\"partitions\"><tr><th>device</th><th>ops</th>"
        "<th>sends</th><th>receives</th></tr>\n";
  for (const auto &partition : report.partitions) {
    auto list = [&](const std::vector<PlacementReport::Transfer> &transfers, const char *arrow) {
      std::string text;
      for (const auto &t : transfers)
        text += (text.empty() ? "" : "<br>") + escape(t.tensor) + " " + arrow + " " +
                escape(shortDevice(t.peer));
      return text.empty() ? std::string("&mdash;") : text;
    };
    os << "<tr><td><span class=\"swatch\" style=\"background:" << colour(partition.device)
       << "\"></span>" << escape(partition.device) << "</td><td>" << partition.ops << "</td><td>"
       << list(partition.sends, "&#8594;") << "</td><td>" << list(partition.receives, "&#8592;")
       << "</td></tr>\n";
  }
  os << "</table>\n";

  if (!report.stages.empty()) {
    os << "<h2>Stages</h2>\n<p>Each stage is compiled on its own and runs on its device's "
          "executor, in this order per device.</p>\n<table id=\"stages\"><tr><th>#</th>"
          "<th>function</th><th>device</th></tr>\n";
    for (auto [index, stage] : llvm::enumerate(report.stages))
      os << "<tr><td>" << index << "</td><td>" << escape(stage.function) << "</td><td>"
         << escape(stage.device) << "</td></tr>\n";
    os << "</table>\n";
  }

  os << "<h2>Nodes</h2>\n<table id=\"nodes\"><tr><th>node</th><th>op</th><th>device</th>"
        "<th>fusion</th></tr>\n";
  for (const auto &node : report.nodes)
    os << "<tr><td class=\"node-name\">" << escape(node.name) << "</td><td>" << escape(node.op)
       << "</td><td>" << escape(node.device) << "</td><td>"
       << (node.fusion >= 0 ? "#" + std::to_string(node.fusion) + " " +
                                  report.fusions[node.fusion].kind
                            : std::string("&mdash;"))
       << "</td></tr>\n";
  os << "</table>\n</body></html>\n";
  return html;
}

} // namespace kiln
