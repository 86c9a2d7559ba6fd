// Collectives over loopback: averages across 2 and 4 ranks (processes and threads), a rank that
// never shows up, one that dies and one that hangs, each reported by name within the timeout.
#include "World.h"

#include "kiln/collective.h"
#include "kiln/tensor.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace kiln::rt {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

class CollectiveTest : public WorldTest {
protected:
  // Runs `body` as `size` forked ranks, each killed after 30 s at the latest; returns their
  // exit statuses (0: passed).
  std::vector<int> forkRanks(int size, const std::function<int(int)> &body) {
    std::vector<pid_t> pids;
    for (int rank = 0; rank < size; ++rank) {
      pid_t pid = fork();
      if (pid == 0) {
        alarm(30);
        int status = 1;
        try {
          status = body(rank);
        } catch (const std::exception &e) {
          std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
        }
        std::fflush(stderr);
        _exit(status);
      }
      pids.push_back(pid);
    }
    // Reaped in the order they end, as a launcher would: a dead rank leaves no zombie.
    std::vector<int> statuses(size, -1);
    for (int left = size; left > 0; --left) {
      int status = 0;
      pid_t pid = waitpid(-1, &status, 0);
      for (int rank = 0; rank < size; ++rank)
        if (pids[rank] == pid)
          statuses[rank] = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    return statuses;
  }

};

// rank + (i % 7) on every rank averages to (size - 1) / 2 + (i % 7), exactly in floats.
int averageAndCheck(Collective &collective, std::size_t count) {
  int rank = collective.rank(), size = collective.size();
  std::vector<float> data(count);
  for (std::size_t i = 0; i < count; ++i)
    data[i] = static_cast<float>(rank + static_cast<int>(i % 7));
  collective.allReduce(data.data(), count, /*average=*/true);
  for (std::size_t i = 0; i < count; ++i)
    if (data[i] != (size - 1) / 2.0f + static_cast<float>(i % 7))
      return 2;
  return 0;
}

// In a forked rank: 0 when an all-reduce fails with an Error holding every one of `expected`
// (within `within`, if given), else a non-zero status, the message on stderr.
int allReduceFails(Collective &collective, std::size_t count,
                   const std::vector<std::string> &expected,
                   std::optional<Clock::duration> within = std::nullopt) {
  std::vector<float> data(count, 1.0f);
  auto start = Clock::now();
  try {
    collective.allReduce(data.data(), data.size(), true);
  } catch (const Error &e) {
    std::string message = e.what();
    for (const std::string &part : expected)
      if (message.find(part) == std::string::npos) {
        std::fprintf(stderr, "rank %d: unexpected message: %s\n", collective.rank(), message.c_str());
        return 3;
      }
    return !within || Clock::now() - start < *within ? 0 : 3;
  }
  return 4;
}

TEST_F(CollectiveTest, AveragesAcrossProcesses) {
  for (int size : {2, 4}) {
    std::vector<int> statuses = forkRanks(size, [&](int rank) {
      CollectiveConfig c = config(rank, size);
      c.runId += std::to_string(size);
      auto collective = connectGloo(c);
      int status = averageAndCheck(*collective, 1 << 20);
      collective->barrier();
      return status;
    });
    EXPECT_EQ(statuses, std::vector<int>(size, 0)) << size << " ranks";
  }
}

TEST_F(CollectiveTest, AveragesAcrossThreadsOfOneProcess) {
  const int size = 2;
  std::vector<int> statuses(size, -1);
  threadRanks(size, [&](int rank) {
    statuses[rank] = averageAndCheck(*connectGloo(config(rank, size)), 1000);
  });
  EXPECT_EQ(statuses, std::vector<int>(size, 0));
}

TEST_F(CollectiveTest, ARankThatNeverComesIsReportedWithinTheTimeout) {
  auto start = Clock::now();
  try {
    connectGloo(config(0, 2, 500ms));
    FAIL() << "connected without rank 1";
  } catch (const Error &e) {
    std::string message = e.what();
    EXPECT_NE(message.find("rank 0 of 2: cannot connect to the other ranks through " + dir_ +
                           " within 500 ms (rank 1 did not join)"),
              std::string::npos)
        << message;
  }
  EXPECT_LT(Clock::now() - start, 5s);
}

TEST_F(CollectiveTest, ADeadRankIsNamed) {
  std::vector<int> statuses = forkRanks(2, [&](int rank) {
    auto collective = connectGloo(config(rank, 2, 2000ms));
    collective->barrier(); // both connected
    if (rank == 1)
      _exit(0); // dies between steps
    std::this_thread::sleep_for(100ms);
    return allReduceFails(*collective, 100,
                          {"rank 0 of 2: all-reduce failed: rank 1 (at 127.0.0.1 on ",
                           ", pid ", ") died or stopped answering"},
                          3s);
  });
  EXPECT_EQ(statuses, (std::vector<int>{0, 0}));
}

TEST_F(CollectiveTest, ADeadRankIsNamedAmongThree) {
  std::vector<int> statuses = forkRanks(3, [&](int rank) {
    auto collective = connectGloo(config(rank, 3, 2000ms));
    collective->barrier();
    if (rank == 2)
      _exit(0);
    std::this_thread::sleep_for(200ms); // rank 2 is gone and reaped
    // The ring may break at rank 2 or at the survivor that saw it first; either way the
    // message names this rank's operation and rank 2.
    return allReduceFails(*collective, 1000, {" of 3: all-reduce failed", "rank 2 (at 127.0.0.1 on ", ") died"});
  });
  EXPECT_EQ(statuses, (std::vector<int>{0, 0, 0}));
}

TEST_F(CollectiveTest, AHungRankTimesOut) {
  std::vector<int> statuses = forkRanks(2, [&](int rank) {
    auto collective = connectGloo(config(rank, 2, 500ms));
    if (rank == 1) {
      std::this_thread::sleep_for(3s); // alive, but never joins the all-reduce
      return 0;
    }
    return allReduceFails(*collective, 100, {"rank 0 of 2: all-reduce failed", "timeout 500 ms"},
                          2s);
  });
  EXPECT_EQ(statuses, (std::vector<int>{0, 0}));
}

// Ranks with no shared directory meet through a RendezvousServer (kiln-launch --rdzv).
TEST_F(CollectiveTest, AveragesThroughATcpRendezvous) {
  RendezvousServer server("127.0.0.1", 0);
  ASSERT_GT(server.port(), 0);
  const int size = 3;
  std::vector<int> statuses(size, -1);
  threadRanks(size, [&](int rank) {
    CollectiveConfig c = config(rank, size);
    c.rendezvous = "tcp://127.0.0.1:" + std::to_string(server.port());
    statuses[rank] = averageAndCheck(*connectGloo(c), 1000);
  });
  EXPECT_EQ(statuses, std::vector<int>(size, 0));
}

TEST_F(CollectiveTest, ATcpRendezvousNamesTheRanksThatNeverCome) {
  RendezvousServer server("127.0.0.1", 0);
  CollectiveConfig c = config(0, 3, 500ms);
  c.rendezvous = "tcp://127.0.0.1:" + std::to_string(server.port());
  try {
    connectGloo(c);
    FAIL() << "connected without ranks 1 and 2";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("within 500 ms (rank 1, 2 did not join)"), std::string::npos)
        << e.what();
  }
}

TEST_F(CollectiveTest, AnUnreachableTcpRendezvousIsNamed) {
  int port;
  { // a port nothing listens on once the server is gone
    RendezvousServer server("127.0.0.1", 0);
    port = server.port();
  }
  CollectiveConfig c = config(1, 2, 300ms);
  c.rendezvous = "tcp://127.0.0.1:" + std::to_string(port);
  try {
    connectGloo(c);
    FAIL() << "connected to nothing";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("rank 1 of 2: cannot reach the rendezvous at 127.0.0.1:" +
                                         std::to_string(port) + " within 300 ms"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(RendezvousServer("256.0.0.1", 0), Error);
}

// The hooks a data-parallel artifact calls (kiln/collective_abi.h), as the compiled step calls
// them: buckets started in order, waited for in any order; misuse ends the step with an error.
TEST_F(CollectiveTest, BucketReducerSumsBucketsAndReportsMisuse) {
  threadRanks(2, [&](int rank) {
    auto collective = connectGloo(config(rank, 2));
    BucketReducer reducer(*collective);
    kiln_collective_hooks hooks = reducer.hooks();
    EXPECT_EQ(hooks.world_size, 2);
    EXPECT_EQ(hooks.rank, rank);
    std::vector<float> a(1000, static_cast<float>(rank + 1)), b(3, 0.5f);
    hooks.start(hooks.context, 0, a.data(), static_cast<int64_t>(a.size()));
    hooks.start(hooks.context, 1, b.data(), static_cast<int64_t>(b.size()));
    hooks.wait(hooks.context, 1, b.data(), static_cast<int64_t>(b.size()));
    hooks.wait(hooks.context, 0, a.data(), static_cast<int64_t>(a.size()));
    reducer.finishStep();
    EXPECT_EQ(a, std::vector<float>(1000, 3.0f));
    EXPECT_EQ(b, std::vector<float>(3, 1.0f));
    EXPECT_EQ(reducer.stats().buckets, 2);
    EXPECT_EQ(reducer.stats().steps, 1);
    // A wait for a bucket never started fails the step instead of waiting forever.
    hooks.wait(hooks.context, 7, b.data(), 3);
    try {
      reducer.finishStep();
      ADD_FAILURE() << "a wait for a bucket never started went unnoticed";
    } catch (const Error &e) {
      EXPECT_EQ(std::string(e.what()), "bucket 7 was waited for but never started");
    }
  });
}

TEST_F(CollectiveTest, RefusesABadWorld) {
  EXPECT_THROW(connectGloo(config(2, 2)), Error);
  CollectiveConfig missing = config(0, 2);
  missing.rendezvous = dir_ + "/missing";
  EXPECT_THROW(connectGloo(missing), Error);
  // One rank needs no peers: its all-reduce leaves the data as it is.
  auto alone = connectGloo(config(0, 1));
  float x = 3.0f;
  alone->allReduce(&x, 1, true);
  EXPECT_EQ(x, 3.0f);
}

} // namespace
} // namespace kiln::rt
