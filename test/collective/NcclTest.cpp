// The NCCL back end against the fake CUDA driver and NCCL (test/runtime/fake_cuda.c: host
// memory, NCCL ranks as threads of this process): its calls, their order, and its error paths,
// with no GPU. Every wait is bounded by the collective's timeout.
#include "World.h"

#include "kiln/collective.h"
#include "kiln/collective_abi.h"
#include "kiln/runtime.h"
#include "kiln/tensor.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace kiln::rt {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

class NcclTest : public WorldTest {
protected:
  void SetUp() override {
    WorldTest::SetUp();
    ::setenv("KILN_LIBCUDA", KILN_FAKE_CUDA, 1);
    ::setenv("KILN_LIBNCCL", KILN_FAKE_CUDA, 1);
  }
  void TearDown() override {
    ::unsetenv("KILN_LIBNCCL");
    ::unsetenv("KILN_FAKE_NCCL_INIT_FAIL");
    WorldTest::TearDown();
  }
  /// Runs `body(rank, communicator)` on a thread per rank.
  void ranks(int size, std::chrono::milliseconds timeout,
             const std::function<void(int, DeviceCollective &)> &body) {
    threadRanks(size, [&](int rank) { body(rank, *connectNccl(config(rank, size, timeout), 0)); });
  }
  static uint64_t address(std::vector<float> &v) { return reinterpret_cast<uint64_t>(v.data()); }
};

TEST_F(NcclTest, SumsBucketsInTheOrderTheyAreQueued) {
  const int size = 3;
  ranks(size, 5000ms, [&](int rank, DeviceCollective &c) {
    EXPECT_EQ(c.rank(), rank);
    EXPECT_EQ(c.size(), size);
    std::vector<float> first(1000), second(7);
    for (size_t i = 0; i < first.size(); ++i)
      first[i] = static_cast<float>(rank * 1000 + i);
    for (size_t i = 0; i < second.size(); ++i)
      second[i] = static_cast<float>(rank + 1) * 0.5f;
    c.startAllReduce(address(first), first.size(), nullptr);
    c.startAllReduce(address(second), second.size(), nullptr);
    c.waitOn(nullptr);
    c.synchronize();
    for (size_t i = 0; i < first.size(); ++i)
      ASSERT_EQ(first[i], static_cast<float>(3000 + 3 * i)) << i; // (0 + 1 + 2) * 1000 + 3 i
    for (float x : second)
      ASSERT_EQ(x, 3.0f); // 0.5 + 1 + 1.5
    // Again, on the same communicator.
    c.startAllReduce(address(second), second.size(), nullptr);
    c.synchronize();
    EXPECT_EQ(second[0], 9.0f);
  });
}

TEST_F(NcclTest, OneRankGivesItsOwnBuffer) {
  ranks(1, 1000ms, [&](int, DeviceCollective &c) {
    std::vector<float> x{1.5f, -2.0f};
    c.startAllReduce(address(x), x.size(), nullptr);
    c.synchronize();
    EXPECT_EQ(x, (std::vector<float>{1.5f, -2.0f}));
  });
}

TEST_F(NcclTest, APeerThatStopsIsAnErrorWithinTheTimeout) {
  ranks(2, 500ms, [&](int rank, DeviceCollective &c) {
    std::vector<float> x(16, 1.0f);
    c.startAllReduce(address(x), x.size(), nullptr);
    c.synchronize(); // both take part once
    if (rank == 1)
      return; // then rank 1 stops answering
    auto start = Clock::now();
    c.startAllReduce(address(x), x.size(), nullptr);
    try {
      c.synchronize();
      ADD_FAILURE() << "the sum finished without rank 1";
    } catch (const Error &e) {
      std::string message = e.what();
      EXPECT_NE(message.find("rank 0 of 2 (GPU 0): NCCL all-reduce did not finish within 500 ms: "
                             "rank 1 (at 127.0.0.1 on "),
                std::string::npos)
          << message;
      EXPECT_NE(message.find("died or stopped answering"), std::string::npos) << message;
    }
    EXPECT_LT(Clock::now() - start, 3s);
    // The communicator was aborted: later calls say so instead of waiting.
    try {
      c.startAllReduce(address(x), x.size(), nullptr);
      ADD_FAILURE() << "an aborted communicator took a call";
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find("was aborted after an earlier failure"), std::string::npos)
          << e.what();
    }
  });
}

TEST_F(NcclTest, NcclsOwnErrorIsReported) {
  // The rank that sees the mismatch first reports NCCL's own error; the
  // other may instead see its peer go away, depending on timing.
  std::atomic<int> invalidUsage{0};
  ranks(2, 2000ms, [&](int rank, DeviceCollective &c) {
    std::vector<float> x(rank == 0 ? 4 : 5, 1.0f); // the ranks disagree on the count
    c.startAllReduce(address(x), x.size(), nullptr);
    try {
      c.synchronize();
      ADD_FAILURE() << "mismatched counts were summed";
    } catch (const Error &e) {
      std::string what = e.what();
      if (what.find("NCCL all-reduce failed: invalid usage (5)") != std::string::npos)
        ++invalidUsage;
      else
        EXPECT_NE(what.find("NCCL all-reduce failed: remote process exited"), std::string::npos)
            << what;
    }
  });
  EXPECT_GE(invalidUsage.load(), 1);
}

TEST_F(NcclTest, ARankThatNeverJoinsIsNamed) {
  auto start = Clock::now();
  try {
    connectNccl(config(0, 2, 300ms), 0);
    FAIL() << "connected without rank 1";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("rank 0 of 2 (GPU 0): NCCL could not connect the ranks within "
                                         "300 ms (rank 1 did not join)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_LT(Clock::now() - start, 3s);
}

TEST_F(NcclTest, LoadAndInitFailuresAreNamed) {
  ::setenv("KILN_FAKE_NCCL_INIT_FAIL", "1", 1);
  try {
    connectNccl(config(0, 1), 0);
    FAIL() << "a failed ncclCommInitRank went unnoticed";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("ncclCommInitRank failed: unhandled system error (2)"),
              std::string::npos)
        << e.what();
  }
  ::unsetenv("KILN_FAKE_NCCL_INIT_FAIL");
  ::setenv("KILN_LIBNCCL", "/nonexistent/libnccl.so.2", 1);
  try {
    connectNccl(config(0, 1), 0);
    FAIL() << "loaded a library that is not there";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("cannot load NCCL (/nonexistent/libnccl.so.2)"), std::string::npos)
        << e.what();
  }
}

// A data-parallel GPU step's collective records, run by the runtime's executor on three replicas
// (threads, one artifact each): world-size and replica-rank write the world's values, and the
// bucket is summed in place between the records that start and wait for it.
TEST_F(NcclTest, StepRecordsSumThroughTheDeviceHooks) {
  const int size = 3;
  ranks(size, 5000ms, [&](int rank, DeviceCollective &c) {
    kiln_artifact *artifact = nullptr;
    ASSERT_EQ(kiln_artifact_open_device(KILN_FAKE_GPU_DATA_PARALLEL, "gpu:0", &artifact), KILN_OK)
        << kiln_last_error();
    EXPECT_TRUE(kiln_artifact_has_collectives(artifact));
    kiln_device_collective_hooks hooks = deviceHooks(c);
    ASSERT_EQ(kiln_artifact_set_device_collective(artifact, &hooks), KILN_OK) << kiln_last_error();
    EXPECT_STREQ(kiln_artifact_cuda_graph(artifact), "off"); // NCCL's work is queued by the host
    for (int step = 0; step < 2; ++step) {
      float x[6], sum[6] = {}, world = 0;
      int64_t which = -1;
      for (int i = 0; i < 6; ++i)
        x[i] = static_cast<float>((rank + 1) * (i + step));
      void *inputs[] = {x};
      void *outputs[] = {sum, &world, &which};
      ASSERT_EQ(kiln_artifact_run(artifact, inputs, outputs), KILN_OK) << kiln_last_error();
      for (int i = 0; i < 6; ++i)
        EXPECT_EQ(sum[i], static_cast<float>(2 * (1 + 2 + 3) * (i + step))) << "step " << step << " sum[" << i << "]";
      EXPECT_EQ(world, 3.0f);
      EXPECT_EQ(which, rank);
    }
    EXPECT_EQ(kiln_artifact_set_device_collective(artifact, nullptr), KILN_OK);
    kiln_artifact_close(artifact);
  });
}

// Alone, without hooks, the step is one replica: the bucket as computed, a world of 1, rank 0.
TEST_F(NcclTest, StepRecordsWithoutHooksAreOneReplica) {
  kiln_artifact *artifact = nullptr;
  ASSERT_EQ(kiln_artifact_open_device(KILN_FAKE_GPU_DATA_PARALLEL, "gpu:0", &artifact), KILN_OK)
      << kiln_last_error();
  float x[6] = {1, 2, 3, 4, 5, 6}, sum[6] = {}, world = 0;
  int64_t which = -1;
  void *inputs[] = {x};
  void *outputs[] = {sum, &world, &which};
  for (int run = 0; run < 2; ++run) // the second replays the CUDA graph
    ASSERT_EQ(kiln_artifact_run(artifact, inputs, outputs), KILN_OK) << kiln_last_error();
  EXPECT_STREQ(kiln_artifact_cuda_graph(artifact), "on");
  EXPECT_EQ(sum[5], 12.0f);
  EXPECT_EQ(world, 1.0f);
  EXPECT_EQ(which, 0);
  kiln_collective_hooks cpu{};
  EXPECT_EQ(kiln_artifact_set_collective(artifact, &cpu), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kiln_last_error()).find("kiln_artifact_set_device_collective"), std::string::npos)
      << kiln_last_error();
  kiln_artifact_close(artifact);
}

// A peer that dies mid-step fails the step within the timeout, naming the record and the peer.
TEST_F(NcclTest, AStepWhosePeerDiesFailsWithinTheTimeout) {
  auto start = Clock::now();
  ranks(2, 500ms, [&](int rank, DeviceCollective &c) {
    if (rank == 1)
      return; // joins, then never takes part
    kiln_artifact *artifact = nullptr;
    ASSERT_EQ(kiln_artifact_open_device(KILN_FAKE_GPU_DATA_PARALLEL, "gpu:0", &artifact), KILN_OK)
        << kiln_last_error();
    kiln_device_collective_hooks hooks = deviceHooks(c);
    ASSERT_EQ(kiln_artifact_set_device_collective(artifact, &hooks), KILN_OK) << kiln_last_error();
    float x[6] = {}, sum[6], world;
    int64_t which;
    void *inputs[] = {x};
    void *outputs[] = {sum, &world, &which};
    EXPECT_EQ(kiln_artifact_run(artifact, inputs, outputs), KILN_ERROR_DEVICE);
    std::string error = kiln_last_error();
    EXPECT_NE(error.find("the step's all-reduce failed"), std::string::npos) << error;
    EXPECT_NE(error.find("rank 1"), std::string::npos) << error;
    kiln_artifact_close(artifact);
  });
  EXPECT_LT(Clock::now() - start, 5s);
}

} // namespace
} // namespace kiln::rt
