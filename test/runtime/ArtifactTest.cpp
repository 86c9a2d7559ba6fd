// Tests for artifact loading and running through the C ABI and the C++ wrapper, on fake artifacts.
#include "TestUtil.h"
#include "kiln/artifact.h"
#include "kiln/runtime.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <dlfcn.h>
#include <elf.h>
#include <sched.h>

extern "C" int kiln_test_c_api_add_one(const char *path);
extern "C" int kiln_test_c_api_cpu_device(const char *path);

using kiln::rt::Artifact;
using kiln::rt::Error;
using kiln::rt::Tensor;

namespace {

using kiln::test::ArtifactPtr;
using OpenResult = kiln::test::OpenedArtifact;

OpenResult open(const std::string &path) { return kiln::test::openArtifact(path); }

} // namespace

TEST(Artifact, LoadsSignatureAndMetadata) {
  OpenResult opened = open(KILN_FAKE_ADD_ONE);
  ASSERT_EQ(opened.status, KILN_OK) << opened.message;
  kiln_artifact *artifact = opened.artifact.get();
  EXPECT_STREQ(kiln_artifact_name(artifact), "fake add_one");
  EXPECT_STREQ(kiln_artifact_target(artifact), "x86_64-unknown-linux-gnu");
  EXPECT_STREQ(kiln_artifact_cpu(artifact), "generic");
  EXPECT_STREQ(kiln_artifact_features(artifact), "sse2,not-a-real-feature");
  ASSERT_EQ(kiln_artifact_num_inputs(artifact), 1);
  ASSERT_EQ(kiln_artifact_num_outputs(artifact), 1);
  kiln_tensor_info info;
  ASSERT_EQ(kiln_artifact_input(artifact, 0, &info), KILN_OK);
  EXPECT_STREQ(info.name, "x");
  EXPECT_EQ(info.dtype, KILN_DTYPE_F32);
  ASSERT_EQ(info.rank, 2);
  EXPECT_EQ(info.dims[0], 2);
  EXPECT_EQ(info.dims[1], 3);
  EXPECT_EQ(kiln_tensor_info_num_elements(&info), 6);
  EXPECT_EQ(kiln_artifact_find_input(artifact, "x"), 0);
  EXPECT_EQ(kiln_artifact_find_output(artifact, "y"), 0);
  EXPECT_EQ(kiln_artifact_find_input(artifact, "y"), -1);
  EXPECT_EQ(kiln_artifact_output(artifact, 1, &info), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kiln_last_error()).find("output index 1 out of range (artifact has 1 outputs)"),
            std::string::npos);
}

TEST(Artifact, RunsAddOne) {
  OpenResult opened = open(KILN_FAKE_ADD_ONE);
  ASSERT_EQ(opened.status, KILN_OK) << opened.message;
  alignas(64) float x[6] = {0, 1, 2, -3, 4.5f, 100};
  alignas(64) float y[6] = {};
  void *inputs[] = {x};
  void *outputs[] = {y};
  ASSERT_EQ(kiln_artifact_run(opened.artifact.get(), inputs, outputs), KILN_OK) << kiln_last_error();
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(y[i], x[i] + 1) << "index " << i;
}

// Runs a fake artifact of one 6-float input and output (x + what its dependency reports) on 0, 1,
// ..., 5 and returns its last output; NaN when the run fails, which the test reports.
static float lastOutputOnRamp(kiln_artifact *artifact) {
  alignas(64) float x[6] = {0, 1, 2, 3, 4, 5};
  alignas(64) float y[6] = {};
  void *inputs[] = {x};
  void *outputs[] = {y};
  kiln_status status = kiln_artifact_run(artifact, inputs, outputs);
  EXPECT_EQ(status, KILN_OK) << kiln_last_error();
  return status == KILN_OK ? y[5] : NAN;
}

// Libraries that artifacts link start threads at load; closing the artifact must not unload them
// under those threads (the process would crash at the threads' next wake-up, within a millisecond).
TEST(Artifact, CloseKeepsThreadedDependenciesLoaded) {
  for (int round = 0; round < 3; ++round) {
    OpenResult opened = open(KILN_FAKE_THREADS);
    ASSERT_EQ(opened.status, KILN_OK) << opened.message;
    EXPECT_EQ(lastOutputOnRamp(opened.artifact.get()), 6.0f);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  void *pool = dlopen(KILN_FAKE_POOL, RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(pool, nullptr) << "the thread pool's library was unloaded with the artifact";
  if (pool)
    dlclose(pool);
}

// GCC's OpenMP runtime, which oneDNN links, binds the thread that loads it to one CPU when
// OMP_PROC_BIND or OMP_PLACES is set, and the kernels' OpenMP runtime later takes its CPUs from
// that thread: every kernel thread would run on one core. Opening an artifact leaves the calling
// thread's CPUs as they were.
TEST(Artifact, OpenKeepsTheCallersCpus) {
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof(before), &before), 0);
  if (CPU_COUNT(&before) < 2)
    GTEST_SKIP() << "this thread may run on one CPU only: there is nothing to narrow";
  OpenResult opened = open(KILN_FAKE_BINDS);
  ASSERT_EQ(opened.status, KILN_OK) << opened.message;
  cpu_set_t after;
  ASSERT_EQ(sched_getaffinity(0, sizeof(after), &after), 0);
  EXPECT_TRUE(CPU_EQUAL(&before, &after))
      << CPU_COUNT(&after) << " of " << CPU_COUNT(&before) << " CPUs left after the open";
  // The dependency did narrow the mask when it loaded (1 is added), so the case was exercised.
  EXPECT_EQ(lastOutputOnRamp(opened.artifact.get()), 6.0f);
}

// Artifacts opened and closed on many threads at once, each a different file (so each dlopen
// links a new object into the loader's list and each close unlinks one): every open succeeds and
// every run gives the right values. A stress test: walking the loader's list while another thread
// unlinked an entry crashed kiln-conformance's parallel load checks every time at --jobs 16, and
// this test now and then.
TEST(Artifact, OpensAndClosesConcurrently) {
  kiln::test::TempDir dir;
  const std::string original = kiln::test::readFile(KILN_FAKE_ADD_ONE);
  constexpr int kThreads = 16, kRounds = 300;
  std::vector<std::string> paths;
  for (int t = 0; t < kThreads; ++t) {
    paths.push_back(dir.file("add_one_" + std::to_string(t) + ".kiln"));
    kiln::test::writeFile(paths.back(), original);
  }
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds && failures[t].empty(); ++round) {
        OpenResult opened = open(paths[t]);
        if (opened.status != KILN_OK) {
          failures[t] = opened.message;
          break;
        }
        alignas(64) float x[6] = {0, 1, 2, 3, 4, static_cast<float>(round)};
        alignas(64) float y[6] = {};
        void *inputs[] = {x};
        void *outputs[] = {y};
        if (kiln_artifact_run(opened.artifact.get(), inputs, outputs) != KILN_OK)
          failures[t] = kiln_last_error();
        else if (y[5] != static_cast<float>(round + 1))
          failures[t] = "round " + std::to_string(round) + ": got " + std::to_string(y[5]);
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  for (int t = 0; t < kThreads; ++t)
    EXPECT_EQ(failures[t], "") << "thread " << t;
}

TEST(Artifact, StagesMisalignedBuffers) {
  OpenResult opened = open(KILN_FAKE_ADD_ONE);
  ASSERT_EQ(opened.status, KILN_OK) << opened.message;
  alignas(64) char xBytes[64 + 4], yBytes[64 + 4] = {};
  float *x = reinterpret_cast<float *>(xBytes + 4);
  float *y = reinterpret_cast<float *>(yBytes + 4);
  for (int i = 0; i < 6; ++i)
    x[i] = static_cast<float>(i * i);
  void *inputs[] = {x};
  void *outputs[] = {y};
  ASSERT_EQ(kiln_artifact_run(opened.artifact.get(), inputs, outputs), KILN_OK) << kiln_last_error();
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(y[i], static_cast<float>(i * i + 1));
  void *missing[] = {nullptr};
  EXPECT_EQ(kiln_artifact_run(opened.artifact.get(), missing, outputs), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kiln_last_error()).find("input 'x' buffer is NULL"), std::string::npos);
}

TEST(Artifact, CallableFromC) {
  EXPECT_EQ(kiln_test_c_api_add_one(KILN_FAKE_ADD_ONE), 0);
  EXPECT_EQ(kiln_test_c_api_cpu_device(KILN_FAKE_ADD_ONE), 0);
}

TEST(Artifact, CxxWrapperChecksTensors) {
  Artifact artifact = Artifact::open(KILN_FAKE_MULTI);
  ASSERT_EQ(artifact.inputs().size(), 2u);
  EXPECT_EQ(artifact.outputs()[1].name, "total count");
  Tensor x(KILN_DTYPE_F32, {2, 3});
  for (int i = 0; i < 6; ++i)
    x.dataAs<float>()[i] = static_cast<float>(i);
  Tensor flag(KILN_DTYPE_BOOL, {});
  std::vector<Tensor> outputs = artifact.allocateOutputs();
  artifact.run({&x, &flag}, {&outputs[0], &outputs[1]});
  EXPECT_EQ(outputs[0].dataAs<float>()[5], 4.0f); // flag false: x - 1
  EXPECT_EQ(outputs[1].dataAs<int64_t>()[0], 6);
  flag.dataAs<uint8_t>()[0] = 1;
  artifact.run({&x, &flag}, {&outputs[0], &outputs[1]});
  EXPECT_EQ(outputs[0].dataAs<float>()[5], 6.0f);

  Tensor wrong(KILN_DTYPE_F32, {3, 2});
  try {
    artifact.run({&wrong, &flag}, {&outputs[0], &outputs[1]});
    FAIL() << "expected a shape error";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("input 'x': expected f32[2x3], got f32[3x2]"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(artifact.run({&x}, {&outputs[0], &outputs[1]}), Error);
}

TEST(ArtifactErrors, NonexistentFile) {
  OpenResult result = open("/nonexistent/model.kiln");
  EXPECT_EQ(result.status, KILN_ERROR_IO);
  EXPECT_EQ(result.message, "/nonexistent/model.kiln: cannot open artifact: No such file or directory");
}

TEST(ArtifactErrors, Directory) {
  kiln::test::TempDir dir;
  OpenResult result = open(dir.path());
  EXPECT_EQ(result.status, KILN_ERROR_IO);
  EXPECT_NE(result.message.find("is a directory"), std::string::npos);
}

TEST(ArtifactErrors, RandomBytesAndEmptyFile) {
  kiln::test::TempDir dir;
  std::mt19937 random(42);
  std::string noise(4096, '\0');
  for (char &c : noise)
    c = static_cast<char>(random());
  noise[0] = 'J'; // never an accidental ELF magic
  kiln::test::writeFile(dir.file("model.kiln"), noise);
  OpenResult result = open(dir.file("model.kiln"));
  EXPECT_EQ(result.status, KILN_ERROR_INVALID_ARTIFACT);
  EXPECT_EQ(result.message, dir.file("model.kiln") + ": not a Kiln artifact (no ELF header)");

  kiln::test::writeFile(dir.file("empty.kiln"), "");
  EXPECT_EQ(open(dir.file("empty.kiln")).message, dir.file("empty.kiln") + ": not a Kiln artifact (no ELF header)");
}

TEST(ArtifactErrors, ElfHeaderChecks) {
  kiln::test::TempDir dir;
  std::string real = kiln::test::readFile(KILN_FAKE_ADD_ONE);
  ASSERT_GT(real.size(), 64u);

  std::string elf32 = real;
  elf32[EI_CLASS] = ELFCLASS32;
  kiln::test::writeFile(dir.file("a.kiln"), elf32);
  EXPECT_NE(open(dir.file("a.kiln")).message.find("32-bit ELF"), std::string::npos);

  std::string arm = real;
  uint16_t machine = EM_AARCH64;
  std::memcpy(&arm[18], &machine, 2); // e_machine
  kiln::test::writeFile(dir.file("b.kiln"), arm);
  OpenResult wrongMachine = open(dir.file("b.kiln"));
  EXPECT_EQ(wrongMachine.status, KILN_ERROR_UNSUPPORTED);
  EXPECT_EQ(wrongMachine.message, dir.file("b.kiln") + ": artifact was compiled for aarch64, this host is x86-64");

  std::string executable = real;
  uint16_t type = ET_EXEC;
  std::memcpy(&executable[16], &type, 2); // e_type
  kiln::test::writeFile(dir.file("c.kiln"), executable);
  EXPECT_NE(open(dir.file("c.kiln")).message.find("not a Kiln artifact (an executable, expected a shared object)"),
            std::string::npos);

  kiln::test::writeFile(dir.file("d.kiln"), real.substr(0, 40));
  EXPECT_NE(open(dir.file("d.kiln")).message.find("truncated artifact (ELF header ends at byte 64, file has 40 bytes)"),
            std::string::npos);
}

TEST(ArtifactErrors, TruncatedCopy) {
  kiln::test::TempDir dir;
  std::string real = kiln::test::readFile(KILN_FAKE_ADD_ONE);
  std::size_t half = real.size() / 2;
  kiln::test::writeFile(dir.file("model.kiln"), real.substr(0, half));
  OpenResult result = open(dir.file("model.kiln"));
  EXPECT_EQ(result.status, KILN_ERROR_INVALID_ARTIFACT);
  std::string expectedPrefix = dir.file("model.kiln") + ": truncated artifact (section table ends at byte ";
  EXPECT_EQ(result.message.rfind(expectedPrefix, 0), 0u) << result.message;
  EXPECT_NE(result.message.find(", file has " + std::to_string(half) + " bytes)"), std::string::npos)
      << result.message;
}

TEST(ArtifactErrors, Version2Manifest) {
  OpenResult result = open(KILN_FAKE_VERSION2);
  EXPECT_EQ(result.status, KILN_ERROR_UNSUPPORTED);
  EXPECT_EQ(result.message, std::string(KILN_FAKE_VERSION2) +
                                ": artifact format version 2 is not supported by this runtime (reads version 1)");
}

TEST(ArtifactErrors, MissingEntry) {
  OpenResult result = open(KILN_FAKE_NO_ENTRY);
  EXPECT_EQ(result.status, KILN_ERROR_INVALID_ARTIFACT);
  EXPECT_EQ(result.message, std::string(KILN_FAKE_NO_ENTRY) + ": artifact has no kiln_entry symbol");
}

TEST(ArtifactErrors, UnresolvedSymbol) {
  OpenResult result = open(KILN_FAKE_UNDEFINED);
  EXPECT_EQ(result.status, KILN_ERROR_INVALID_ARTIFACT);
  EXPECT_EQ(result.message, std::string(KILN_FAKE_UNDEFINED) +
                                ": cannot load artifact: undefined symbol: kiln_fake_missing_helper");
}

TEST(ArtifactErrors, MissingLibrary) {
  OpenResult result = open(KILN_FAKE_NEEDS_ABSENT);
  EXPECT_EQ(result.status, KILN_ERROR_INVALID_ARTIFACT);
  EXPECT_EQ(result.message,
            std::string(KILN_FAKE_NEEDS_ABSENT) +
                ": cannot load artifact: libkiln_fake_absent.so: cannot open shared object file: No such file or "
                "directory (the artifact links libkiln_fake_absent.so, which the dynamic loader cannot find on "
                "this machine: install it or add its folder to LD_LIBRARY_PATH)");
}

TEST(ArtifactErrors, SharedObjectWithoutManifest) {
  // The test binary's own libm is an ELF shared object, but not an artifact: it has no seal
  // and, opened as trusted, no manifest.
  const char *libm = "/lib/x86_64-linux-gnu/libm.so.6";
  OpenResult result = open(libm);
  if (result.status == KILN_ERROR_IO)
    GTEST_SKIP() << result.message;
  EXPECT_EQ(result.status, KILN_ERROR_INVALID_ARTIFACT);
  EXPECT_NE(result.message.find("no Kiln seal at its end"), std::string::npos) << result.message;
  kiln_artifact *raw = nullptr;
  EXPECT_EQ(kiln_artifact_open_flags(libm, nullptr, KILN_OPEN_TRUSTED, &raw),
            KILN_ERROR_INVALID_ARTIFACT);
  EXPECT_EQ(raw, nullptr);
  EXPECT_NE(std::string(kiln_last_error()).find("not a Kiln artifact (no kiln_manifest symbol)"),
            std::string::npos)
      << kiln_last_error();
}

// Any byte changed after sealing (code, weights or manifest) is caught before the file is
// loaded; opening it as trusted skips the seal and loads what is there.
TEST(ArtifactErrors, ChangedByteBreaksTheSeal) {
  kiln::test::TempDir dir;
  std::string bytes = kiln::test::readFile(KILN_FAKE_ADD_ONE);
  for (std::size_t at : {std::size_t(0x40), bytes.size() / 2, bytes.size() - 17}) {
    std::string changed = bytes;
    changed[at] ^= 0x10;
    kiln::test::writeFile(dir.file("model.kiln"), changed);
    OpenResult result = open(dir.file("model.kiln"));
    EXPECT_EQ(result.status, KILN_ERROR_INVALID_ARTIFACT) << "byte " << at;
    EXPECT_EQ(result.message.rfind(dir.file("model.kiln") + ": its bytes do not match its seal", 0),
              0u)
        << result.message;
  }
  // Bytes appended after the seal: there is no seal at the end any more.
  kiln::test::writeFile(dir.file("model.kiln"), bytes + "x");
  EXPECT_NE(open(dir.file("model.kiln")).message.find("no Kiln seal at its end"), std::string::npos);
  kiln::test::writeFile(dir.file("model.kiln"), bytes);
  EXPECT_EQ(open(dir.file("model.kiln")).status, KILN_OK);
}

TEST(ArtifactErrors, MissingCpuFeatures) {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512er"))
    GTEST_SKIP() << "this host has AVX-512ER, so the fake artifact's requirement is met";
  OpenResult result = open(KILN_FAKE_AVX512ER);
  EXPECT_EQ(result.status, KILN_ERROR_CPU_FEATURES);
  EXPECT_EQ(result.message, std::string(KILN_FAKE_AVX512ER) +
                                ": compiled for CPU features the host lacks: avx512er (recompile "
                                "with kilnc --cpu=native or a lower --cpu)");
}

TEST(ArtifactErrors, NullArguments) {
  EXPECT_EQ(kiln_artifact_open(nullptr, nullptr), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_artifact_run(nullptr, nullptr, nullptr), KILN_ERROR_INVALID_ARGUMENT);
  kiln_artifact_close(nullptr);
  EXPECT_EQ(kiln_artifact_num_inputs(nullptr), 0);
}

TEST(DType, NamesAndSizes) {
  EXPECT_EQ(kiln_dtype_size(KILN_DTYPE_F32), 4u);
  EXPECT_EQ(kiln_dtype_size(KILN_DTYPE_BOOL), 1u);
  EXPECT_EQ(kiln_dtype_size(KILN_DTYPE_BF16), 2u);
  EXPECT_EQ(kiln_dtype_size(KILN_DTYPE_INVALID), 0u);
  EXPECT_STREQ(kiln_dtype_name(KILN_DTYPE_U64), "u64");
  EXPECT_STREQ(kiln_dtype_name(static_cast<kiln_dtype>(99)), "invalid");
  EXPECT_EQ(kiln_dtype_from_name("bf16"), KILN_DTYPE_BF16);
  EXPECT_EQ(kiln_dtype_from_name("float"), KILN_DTYPE_INVALID);
  EXPECT_EQ(kiln::rt::halfToFloat(0x0001), std::ldexp(1.0f, -24)); // smallest subnormal
  EXPECT_EQ(kiln::rt::halfToFloat(0x7bff), 65504.0f);
}
