// What the collective tests share: a fresh rendezvous directory per test, a rank's configuration
// in it, and ranks run as threads of the test process.
#ifndef KILN_TEST_COLLECTIVE_WORLD_H
#define KILN_TEST_COLLECTIVE_WORLD_H

#include "kiln/collective.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace kiln::rt {

class WorldTest : public ::testing::Test {
protected:
  void SetUp() override {
    char pattern[] = "/tmp/kiln-collective-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  CollectiveConfig config(int rank, int size,
                          std::chrono::milliseconds timeout = std::chrono::milliseconds(5000)) {
    CollectiveConfig c;
    c.rank = rank;
    c.size = size;
    c.rendezvous = dir_;
    c.runId = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    c.timeout = timeout;
    return c;
  }

  // Runs `body(rank)` on a thread per rank and waits for them; an exception fails the test.
  static void threadRanks(int size, const std::function<void(int)> &body) {
    std::vector<std::thread> threads;
    for (int rank = 0; rank < size; ++rank)
      threads.emplace_back([&, rank] {
        try {
          body(rank);
        } catch (const std::exception &e) {
          ADD_FAILURE() << "rank " << rank << ": " << e.what();
        }
      });
    for (std::thread &t : threads)
      t.join();
  }

  std::string dir_;
};

} // namespace kiln::rt

#endif // KILN_TEST_COLLECTIVE_WORLD_H
