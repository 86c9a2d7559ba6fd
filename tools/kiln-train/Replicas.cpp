//===- Replicas.cpp - Data-parallel replicas of a train step --------------===//
#include "Replicas.h"

#include "kiln/collective.h"
#include "kiln/collective_abi.h"
#include "kiln/runtime.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <future>
#include <thread>

namespace kiln::train {
namespace {

using rt::Error;

/// An integer environment variable in [min, max], or `fallback` when unset.
int envInt(const char *name, int fallback, int min, int max) {
  const char *text = std::getenv(name);
  if (!text || !*text)
    return fallback;
  char *end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (*end || value < min || value > max)
    throw Error(std::string(name) + "=" + text + ": expected an integer from " +
                std::to_string(min) + " to " + std::to_string(max));
  return static_cast<int>(value);
}

std::string envString(const char *name, const std::string &fallback) {
  const char *text = std::getenv(name);
  return text && *text ? text : fallback;
}

} // namespace

World World::fromEnvironment(const std::string &devices, double timeoutSeconds) {
  World w;
  if (!devices.empty()) {
    w.local = 0;
    size_t begin = 0;
    for (;;) {
      size_t end = devices.find(',', begin);
      std::string device = devices.substr(begin, end == std::string::npos ? end : end - begin);
      // "gpu" alone: this process's GPU on its node, by its local rank (kiln-launch).
      if (device == "gpu")
        device = "gpu:" + std::to_string(envInt("KILN_LOCAL_RANK", 0, 0, 1 << 16));
      bool index = device.size() > 4 &&
                   device.find_first_not_of("0123456789", 4) == std::string::npos;
      bool gpu = device.rfind("gpu:", 0) == 0 && index;
      if ((device.rfind("cpu:", 0) != 0 && !gpu) || !index)
        throw Error("--devices: '" + device + "' is not a device (expected cpu:N, gpu:N or gpu)");
      if (w.local > 0 && gpu != !w.gpus.empty())
        throw Error("--devices " + devices + ": the replicas of a process are all CPUs or all GPUs");
      if (gpu) {
        int ordinal = std::atoi(device.c_str() + 4);
        for (int other : w.gpus)
          if (other == ordinal)
            throw Error("--devices " + devices + ": " + device + " is named twice (one replica per GPU)");
        w.gpus.push_back(ordinal);
      }
      ++w.local;
      if (end == std::string::npos)
        break;
      begin = end + 1;
    }
  }
  w.processes = envInt("KILN_WORLD_SIZE", 1, 1, 1 << 16);
  w.process = envInt("KILN_RANK", 0, 0, w.processes - 1);
  w.rendezvous = envString("KILN_RENDEZVOUS", "");
  w.runId = envString("KILN_RUN_ID", "kiln");
  w.host = envString("KILN_HOST", "127.0.0.1");
  if (w.processes > 1 && w.rendezvous.empty())
    throw Error("KILN_WORLD_SIZE=" + std::to_string(w.processes) +
                " needs KILN_RENDEZVOUS, a directory every process reaches (kiln-launch sets it)");
  if (!(timeoutSeconds > 0) || timeoutSeconds > 86400)
    throw Error("--timeout: expected seconds in (0, 86400]");
  w.timeout = std::chrono::milliseconds(static_cast<int64_t>(timeoutSeconds * 1000));
  return w;
}

namespace {

/// Connects `count` local replicas at once, `connect(i)` each on a thread of
/// its own (joining waits for the whole world), and returns them in order;
/// throws the first failure after every join has ended.
template <typename Connect> auto joinAll(int count, Connect connect) {
  using Joined = decltype(connect(0));
  std::vector<std::future<Joined>> joins;
  for (int i = 0; i < count; ++i)
    joins.push_back(std::async(std::launch::async, connect, i));
  std::vector<Joined> joined;
  std::string error;
  for (auto &join : joins) {
    try {
      joined.push_back(join.get());
    } catch (const Error &e) {
      if (error.empty())
        error = e.what();
    }
  }
  if (!error.empty())
    throw Error(error);
  return joined;
}

} // namespace

struct Replicas::Link {
  // CPU replicas: Gloo, driven by the step's hooks through a bucket reducer.
  std::unique_ptr<rt::Collective> collective;
  std::unique_ptr<rt::BucketReducer> reducer;
  // GPU replicas: NCCL on the replica's GPU, called by the step's device hooks.
  std::unique_ptr<rt::DeviceCollective> device;
};


Replicas::Replicas(const World &world, TrainStep &first, const std::string &path,
                   const std::string &labels)
    : world_(world) {
  steps_.push_back(&first);
  bool gpu = !world.gpus.empty();
  // A data-parallel GPU step sums through NCCL even alone (one rank), so that the path a world
  // of many takes is the path every GPU run takes.
  if (world.size() == 1 && !(gpu && first.artifact().hasCollectives()))
    return;
  if (!first.artifact().hasCollectives())
    throw Error(path + ": a world of " + std::to_string(world.size()) +
                " replicas needs a data-parallel train step (kilnc --train --data-parallel=true)");
  // Private copies, and the rendezvous of replicas that share this process.
  std::string base = (std::filesystem::temp_directory_path() / "kiln-train-XXXXXX").string();
  if (!::mkdtemp(base.data()))
    throw Error("cannot make a temporary directory for the replicas: " + std::string(std::strerror(errno)));
  copies_.path = base;
  for (int i = 1; i < world.local; ++i) {
    std::string copy = copies_.path + "/replica-" + std::to_string(world.firstRank() + i) + ".kiln";
    std::error_code ec;
    std::filesystem::copy_file(path, copy, ec);
    if (ec)
      throw Error(path + ": cannot copy it for replica " + std::to_string(i) + ": " + ec.message());
    std::string device = gpu ? "gpu:" + std::to_string(world.gpus[i]) : "cpu";
    owned_.push_back(std::make_unique<TrainStep>(rt::Artifact::open(copy, device), labels));
    steps_.push_back(owned_.back().get());
  }
  if (gpu) {
    connectGpus();
    return;
  }
  std::vector<std::unique_ptr<rt::Collective>> joined =
      joinAll(world.local, [this](int i) { return rt::connectGloo(configFor(i)); });
  for (auto &collective : joined) {
    links_.push_back(std::make_unique<Link>());
    links_.back()->collective = std::move(collective);
  }
  for (int i = 0; i < world.local; ++i) {
    links_[i]->reducer = std::make_unique<rt::BucketReducer>(*links_[i]->collective);
    kiln_collective_hooks hooks = links_[i]->reducer->hooks();
    steps_[i]->artifact().setCollective(&hooks);
  }
}

// How local replica `i` meets the world: through the rendezvous of the processes, or this
// process's own directory when it is the whole world.
rt::CollectiveConfig Replicas::configFor(int i) const {
  rt::CollectiveConfig config;
  config.rank = world_.firstRank() + i;
  config.size = world_.size();
  config.rendezvous = world_.processes > 1 ? world_.rendezvous : copies_.path;
  config.runId = world_.runId;
  config.host = world_.host;
  config.timeout = world_.timeout;
  return config;
}

// Every local GPU replica joins at once (NCCL's init waits for the whole world), each on its GPU,
// and its step gets the communicator as device hooks.
void Replicas::connectGpus() {
  std::vector<std::unique_ptr<rt::DeviceCollective>> joined =
      joinAll(world_.local, [this](int i) { return rt::connectNccl(configFor(i), world_.gpus[i]); });
  for (auto &device : joined) {
    links_.push_back(std::make_unique<Link>());
    links_.back()->device = std::move(device);
  }
  for (int i = 0; i < world_.local; ++i) {
    kiln_device_collective_hooks hooks = rt::deviceHooks(*links_[i]->device);
    if (kiln_artifact_set_device_collective(steps_[i]->artifact().handle(), &hooks) != KILN_OK)
      throw Error(kiln_last_error());
  }
}

Replicas::~Replicas() {
  for (std::size_t i = 0; i < steps_.size() && i < links_.size(); ++i) {
    if (links_[i]->device)
      kiln_artifact_set_device_collective(steps_[i]->artifact().handle(), nullptr);
    else if (steps_[i]->artifact().hasCollectives())
      steps_[i]->artifact().setCollective(nullptr);
  }
  links_.clear();
  owned_.clear();
}

Replicas::TempDir::~TempDir() {
  if (!path.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
}

void Replicas::checkSameStep() {
  // GPU replicas share no host collective to compare steps with: each process restores from the
  // checkpoint directory it is given.
  if (links_.empty() || links_[0]->device)
    return;
  // Each rank writes its step into its own two slots (24-bit halves: exact in f32); the sum
  // shows every rank all the steps.
  const int world = world_.size();
  std::vector<std::vector<float>> views(links_.size(), std::vector<float>(2 * world, 0.0f));
  std::vector<std::future<void>> sums;
  for (size_t i = 0; i < links_.size(); ++i) {
    int64_t step = steps_[i]->step();
    int rank = world_.firstRank() + static_cast<int>(i);
    views[i][2 * rank] = static_cast<float>(step >> 24);
    views[i][2 * rank + 1] = static_cast<float>(step & 0xffffff);
    sums.push_back(std::async(std::launch::async, [this, i, &views] {
      links_[i]->collective->allReduce(views[i].data(), views[i].size(), /*average=*/false);
    }));
  }
  for (auto &sum : sums)
    sum.get();
  auto stepOf = [&](int rank) {
    return (static_cast<int64_t>(views[0][2 * rank]) << 24) + static_cast<int64_t>(views[0][2 * rank + 1]);
  };
  for (int rank = 1; rank < world; ++rank)
    if (stepOf(rank) != stepOf(0))
      throw Error("rank " + std::to_string(rank) + " starts at step " + std::to_string(stepOf(rank)) +
                  " but rank 0 at step " + std::to_string(stepOf(0)) +
                  ": every process must resume from the same checkpoint (give them one "
                  "--checkpoint-dir on a shared file system)");
}

float Replicas::run() {
  std::vector<std::future<float>> others;
  for (size_t i = 1; i < steps_.size(); ++i)
    others.push_back(std::async(std::launch::async, [step = steps_[i]] { return step->run(); }));
  std::string error;
  float loss = 0;
  try {
    loss = steps_[0]->run();
  } catch (const Error &e) {
    error = e.what();
  }
  for (auto &other : others) {
    try {
      other.get();
    } catch (const Error &e) {
      if (error.empty())
        error = e.what();
    }
  }
  for (auto &link : links_) {
    if (!link->reducer)
      continue; // GPU replicas finish their sums inside the step
    try {
      link->reducer->finishStep();
    } catch (const Error &e) {
      if (error.empty())
        error = e.what();
    }
  }
  if (!error.empty())
    throw Error(error);
  return loss;
}

void Replicas::initialize() {
  for (TrainStep *step : steps_)
    step->initialize();
}

void Replicas::restore(const Checkpoint &checkpoint, const std::string &source) {
  for (TrainStep *step : steps_)
    step->restore(checkpoint, source);
}

std::string Replicas::overlapSummary() const {
  if (links_.empty() || !links_[0]->reducer)
    return "";
  rt::BucketReducer::Stats s = links_[0]->reducer->stats();
  if (s.steps == 0)
    return "";
  double perStep = s.communicationSeconds / static_cast<double>(s.steps);
  double hidden = s.communicationSeconds > 0 ? 1 - s.exposedSeconds / s.communicationSeconds : 0;
  char text[200];
  std::snprintf(text, sizeof text,
                "%d replicas; all-reduce %.2f ms per step in %.1f buckets, %.0f%% of it hidden "
                "behind computation",
                world_.size(), 1000 * perStep, static_cast<double>(s.buckets) / s.steps,
                100 * std::max(0.0, hidden));
  return text;
}

} // namespace kiln::train
