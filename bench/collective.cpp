// All-reduce throughput of kiln_collective's Gloo back end over loopback against a plain memcpy
// of the same bytes, for 2 and 4 ranks (forked processes) and message sizes from 4 KiB to 64 MiB.
//
//   build/bin/kiln-collective-bench [--ranks 2,4] [--repeat 20]
//
// Bandwidth is the bus bandwidth NCCL's tests report: bytes * 2 (n - 1) / n per second, what
// each rank sends and receives in a ring all-reduce. memcpy is one rank copying the same bytes.
#include "kiln/collective.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double medianSeconds(std::vector<double> times) {
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

double memcpySeconds(size_t bytes, int repeat) {
  std::vector<char> from(bytes, 1), to(bytes);
  std::vector<double> times;
  for (int i = 0; i < repeat; ++i) {
    auto start = Clock::now();
    std::memcpy(to.data(), from.data(), bytes);
    times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    asm volatile("" : : "r"(to.data()) : "memory");
  }
  return medianSeconds(times);
}

} // namespace

int main(int argc, char **argv) {
  std::vector<int> worlds = {2, 4};
  int repeat = 20;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--repeat" && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--ranks" && i + 1 < argc) {
      worlds.clear();
      for (char *t = std::strtok(argv[++i], ","); t; t = std::strtok(nullptr, ","))
        worlds.push_back(std::max(2, std::atoi(t)));
    } else {
      std::fprintf(stderr, "usage: kiln-collective-bench [--ranks 2,4] [--repeat N]\n");
      return 2;
    }
  }
  std::printf("| ranks | bytes | all-reduce ms | bus GB/s | memcpy GB/s | all-reduce / memcpy |\n"
              "|---|---|---|---|---|---|\n");
  for (int size : worlds) {
    char dir[] = "/tmp/kiln-collective-bench-XXXXXX";
    if (!mkdtemp(dir))
      return 1;
    // Rank 0 writes its medians here for the parent to print.
    auto *results = static_cast<double *>(mmap(nullptr, 64 * sizeof(double), PROT_READ | PROT_WRITE,
                                               MAP_SHARED | MAP_ANONYMOUS, -1, 0));
    std::vector<size_t> sizes;
    for (size_t bytes = 4096; bytes <= (64u << 20); bytes *= 4)
      sizes.push_back(bytes);
    for (int rank = 0; rank < size; ++rank) {
      if (fork() != 0)
        continue;
      alarm(600);
      kiln::rt::CollectiveConfig config;
      config.rank = rank;
      config.size = size;
      config.rendezvous = dir;
      config.timeout = std::chrono::seconds(60);
      auto collective = kiln::rt::connectGloo(config);
      for (size_t s = 0; s < sizes.size(); ++s) {
        std::vector<float> data(sizes[s] / sizeof(float), 1.0f);
        collective->allReduce(data.data(), data.size(), true); // warm-up
        std::vector<double> times;
        for (int i = 0; i < repeat; ++i) {
          collective->barrier();
          auto start = Clock::now();
          collective->allReduce(data.data(), data.size(), true);
          times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
        }
        if (rank == 0)
          results[s] = medianSeconds(times);
      }
      _exit(0);
    }
    int status;
    while (wait(&status) > 0) {
    }
    for (size_t s = 0; s < sizes.size(); ++s) {
      double seconds = results[s], copy = memcpySeconds(sizes[s], repeat);
      double bus = sizes[s] * 2.0 * (size - 1) / size / seconds / 1e9;
      std::printf("| %d | %zu | %.3f | %.2f | %.2f | %.1fx |\n", size, sizes[s], seconds * 1e3, bus,
                  sizes[s] / copy / 1e9, seconds / copy);
    }
    munmap(results, 64 * sizeof(double));
    std::system(("rm -rf " + std::string(dir)).c_str());
  }
  return 0;
}
