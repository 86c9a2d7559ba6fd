// End-to-end tests of the kiln-run and kiln-conformance binaries on fake artifacts and test data.
#include "TestUtil.h"
#include "fake_gpu_constants.h"
#include "kiln/tensor.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include <sys/stat.h>

using kiln::rt::Tensor;
using kiln::test::CommandResult;
using kiln::test::runCommand;
using kiln::test::TempDir;

namespace {

Tensor sequence(kiln_dtype dtype, std::vector<int64_t> shape, std::string name = {}) {
  Tensor tensor(dtype, std::move(shape), std::move(name));
  for (int64_t i = 0; i < tensor.numElements(); ++i)
    tensor.dataAs<float>()[i] = static_cast<float>(i) * 0.5f - 1.0f;
  return tensor;
}

Tensor plusOne(Tensor tensor) {
  for (int64_t i = 0; i < tensor.numElements(); ++i)
    tensor.dataAs<float>()[i] += 1.0f;
  return tensor;
}

bool contains(const std::string &haystack, const std::string &needle) {
  return haystack.find(needle) != std::string::npos;
}

// Sets environment variables for the child processes of one test, and restores them after.
class ScopedEnv {
public:
  ScopedEnv(std::initializer_list<std::pair<const char *, std::string>> values) {
    for (const auto &[name, value] : values) {
      const char *old = std::getenv(name);
      saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
      setenv(name, value.c_str(), 1);
    }
  }
  ScopedEnv(const ScopedEnv &) = delete;
  ScopedEnv &operator=(const ScopedEnv &) = delete;
  ~ScopedEnv() {
    for (const auto &[name, old] : saved_) {
      if (old)
        setenv(name.c_str(), old->c_str(), 1);
      else
        unsetenv(name.c_str());
    }
  }

private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// The fake driver and cuBLASLt, for tools that open GPU artifacts.
ScopedEnv fakeGpu(const std::string &driver = KILN_FAKE_CUDA) {
  return ScopedEnv{{"KILN_LIBCUDA", driver}, {"KILN_LIBCUBLASLT", KILN_FAKE_CUDA}};
}

// The inputs of the fake GPU add artifact and its expected outputs: y = a + b + bias, a_copy = a.
struct GpuAddCase {
  Tensor a = sequence(KILN_DTYPE_F32, {2, 3}, "a");
  Tensor b = plusOne(sequence(KILN_DTYPE_F32, {2, 3}, "b"));
  Tensor y{KILN_DTYPE_F32, {2, 3}, "y"};
  Tensor copy = sequence(KILN_DTYPE_F32, {2, 3}, "a_copy");
  GpuAddCase() {
    const float bias[6] = {KILN_FAKE_ADD_BIAS};
    for (int i = 0; i < 6; ++i)
      y.dataAs<float>()[i] = a.dataAs<float>()[i] + b.dataAs<float>()[i] + bias[i];
  }
};

} // namespace

#ifdef KILN_RUN_PATH

TEST(KilnRun, WritesNpyOutputs) {
  TempDir dir;
  Tensor x = sequence(KILN_DTYPE_F32, {2, 3});
  kiln::rt::writeNpy(x, dir.file("x.npy"));
  CommandResult result = runCommand({KILN_RUN_PATH, KILN_FAKE_ADD_ONE, dir.file("x.npy"),
                                     "--output-dir", dir.file("out")});
  ASSERT_EQ(result.exitCode, 0) << result.stdErr;
  Tensor y = kiln::rt::readNpy(dir.file("out/y.npy"));
  ASSERT_EQ(y.shape(), x.shape());
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(y.dataAs<float>()[i], x.dataAs<float>()[i] + 1.0f);
}

TEST(KilnRun, BindsByNameWritesPbAndPrints) {
  TempDir dir;
  kiln::rt::writeTensorProto(sequence(KILN_DTYPE_F32, {2, 3}, "x"), dir.file("x.pb"));
  Tensor flag(KILN_DTYPE_BOOL, {});
  flag.dataAs<uint8_t>()[0] = 1;
  kiln::rt::writeNpy(flag, dir.file("flag.npy"));
  CommandResult result = runCommand({KILN_RUN_PATH, KILN_FAKE_MULTI, "--input", "flag=" + dir.file("flag.npy"),
                                     "--input=x=" + dir.file("x.pb"), "--output-dir", dir.file("out"),
                                     "--output-format", "pb", "--print"});
  ASSERT_EQ(result.exitCode, 0) << result.stdErr;
  Tensor y = kiln::rt::readTensorProto(dir.file("out/y.pb"));
  EXPECT_EQ(y.name(), "y");
  EXPECT_EQ(y.dataAs<float>()[0], 0.0f); // -1 + 1
  // "total count" is sanitized in the file name but kept inside the TensorProto.
  Tensor count = kiln::rt::readTensorProto(dir.file("out/total_count.pb"));
  EXPECT_EQ(count.name(), "total count");
  EXPECT_EQ(count.dataAs<int64_t>()[0], 6);
  EXPECT_TRUE(contains(result.stdOut, "y: f32[2x3] [0, 0.5, 1, 1.5, 2, 2.5]")) << result.stdOut;
  EXPECT_TRUE(contains(result.stdOut, "total count: i64[scalar] [6]")) << result.stdOut;
}

TEST(KilnRun, RepeatReportsMedian) {
  TempDir dir;
  kiln::rt::writeNpy(sequence(KILN_DTYPE_F32, {2, 3}), dir.file("x.npy"));
  CommandResult result = runCommand({KILN_RUN_PATH, KILN_FAKE_ADD_ONE, dir.file("x.npy"), "--repeat", "5"});
  ASSERT_EQ(result.exitCode, 0) << result.stdErr;
  EXPECT_TRUE(contains(result.stdOut, "5 runs: median ")) << result.stdOut;
  EXPECT_FALSE(contains(result.stdOut, "y: f32")) << "--repeat alone should not print outputs";
}

TEST(KilnRun, ReportsInputMistakes) {
  TempDir dir;
  kiln::rt::writeNpy(sequence(KILN_DTYPE_F32, {3, 2}), dir.file("x.npy"));
  CommandResult shape = runCommand({KILN_RUN_PATH, KILN_FAKE_ADD_ONE, dir.file("x.npy")});
  EXPECT_EQ(shape.exitCode, 1);
  EXPECT_EQ(shape.stdErr, "kiln-run: error: input 'x': expected f32[2x3], got f32[3x2] from " +
                              dir.file("x.npy") + "\n");

  kiln::rt::writeNpy(sequence(KILN_DTYPE_F32, {2, 3}), dir.file("x.npy"));
  CommandResult missing = runCommand({KILN_RUN_PATH, KILN_FAKE_MULTI, dir.file("x.npy")});
  EXPECT_EQ(missing.exitCode, 1);
  EXPECT_TRUE(contains(missing.stdErr, "kiln-run: error: missing input: 'flag' (bool[scalar])"))
      << missing.stdErr;

  CommandResult unknown = runCommand({KILN_RUN_PATH, KILN_FAKE_ADD_ONE, "--input", "z=" + dir.file("x.npy")});
  EXPECT_EQ(unknown.exitCode, 1);
  EXPECT_EQ(unknown.stdErr, "kiln-run: error: unknown input 'z' (model inputs: x)\n");

  CommandResult twice = runCommand({KILN_RUN_PATH, KILN_FAKE_ADD_ONE, dir.file("x.npy"), "--input",
                                    "x=" + dir.file("x.npy")});
  EXPECT_EQ(twice.exitCode, 1);
  EXPECT_TRUE(contains(twice.stdErr, "input 'x' given twice")) << twice.stdErr;

  CommandResult badFile = runCommand({KILN_RUN_PATH, KILN_FAKE_ADD_ONE, dir.file("absent.npy")});
  EXPECT_EQ(badFile.exitCode, 1);
  EXPECT_TRUE(contains(badFile.stdErr, dir.file("absent.npy") + ": cannot read: No such file")) << badFile.stdErr;
}

TEST(KilnRun, ReportsBadModelsAndFlags) {
  TempDir dir;
  kiln::test::writeFile(dir.file("junk.kiln"), "not an elf file");
  CommandResult junk = runCommand({KILN_RUN_PATH, dir.file("junk.kiln")});
  EXPECT_EQ(junk.exitCode, 1);
  EXPECT_EQ(junk.stdErr, "kiln-run: error: " + dir.file("junk.kiln") + ": not a Kiln artifact (no ELF header)\n");

  CommandResult flag = runCommand({KILN_RUN_PATH, KILN_FAKE_ADD_ONE, "--frobnicate"});
  EXPECT_EQ(flag.exitCode, 1);
  EXPECT_TRUE(contains(flag.stdErr, "unknown option '--frobnicate'")) << flag.stdErr;

  CommandResult repeat = runCommand({KILN_RUN_PATH, KILN_FAKE_ADD_ONE, "--repeat", "0"});
  EXPECT_EQ(repeat.exitCode, 1);
  EXPECT_TRUE(contains(repeat.stdErr, "--repeat expects a positive integer")) << repeat.stdErr;

  CommandResult help = runCommand({KILN_RUN_PATH, "--help"});
  EXPECT_EQ(help.exitCode, 0);
  for (const char *option : {"--input", "--output-dir", "--output-format", "--print", "--repeat", "--help",
                             "--device", "--no-cuda-graph", "--info", "KILN_LIBCUDA", "KILN_CUDA_GRAPH"})
    EXPECT_TRUE(contains(help.stdOut, option)) << option;

  CommandResult device = runCommand({KILN_RUN_PATH, KILN_FAKE_ADD_ONE, "--device", "gpu:one"});
  EXPECT_EQ(device.exitCode, 1);
  EXPECT_EQ(device.stdErr, "kiln-run: error: --device expects cpu, gpu or gpu:N, got 'gpu:one' (see kiln-run --help)\n");
}

TEST(KilnRun, RunsOnTheFakeGpu) {
  ScopedEnv env = fakeGpu();
  TempDir dir;
  GpuAddCase data;
  kiln::rt::writeNpy(data.a, dir.file("a.npy"));
  kiln::rt::writeNpy(data.b, dir.file("b.npy"));
  CommandResult result = runCommand({KILN_RUN_PATH, KILN_FAKE_GPU_ADD, dir.file("a.npy"), dir.file("b.npy"),
                                     "--device=gpu:0", "--output-dir", dir.file("out")});
  ASSERT_EQ(result.exitCode, 0) << result.stdErr;
  Tensor y = kiln::rt::readNpy(dir.file("out/y.npy"));
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(y.dataAs<float>()[i], data.y.dataAs<float>()[i]);

  CommandResult graph = runCommand({KILN_RUN_PATH, KILN_FAKE_GPU_ADD, dir.file("a.npy"), dir.file("b.npy"),
                                    "--repeat", "3", "--warmup", "1"});
  ASSERT_EQ(graph.exitCode, 0) << graph.stdErr;
  EXPECT_TRUE(contains(graph.stdOut, "3 runs: median ")) << graph.stdOut;
  EXPECT_TRUE(contains(graph.stdOut, "; on gpu:0 median ")) << graph.stdOut;
  EXPECT_TRUE(contains(graph.stdOut, " ms per run (CUDA graph)\n")) << graph.stdOut;
  CommandResult direct = runCommand({KILN_RUN_PATH, KILN_FAKE_GPU_ADD, dir.file("a.npy"), dir.file("b.npy"),
                                     "--repeat", "2", "--no-cuda-graph"});
  ASSERT_EQ(direct.exitCode, 0) << direct.stdErr;
  EXPECT_TRUE(contains(direct.stdOut, " ms per run (direct launches)\n")) << direct.stdOut;
  // CPU artifacts print no device time.
  kiln::rt::writeNpy(sequence(KILN_DTYPE_F32, {2, 3}), dir.file("x.npy"));
  CommandResult cpu = runCommand({KILN_RUN_PATH, KILN_FAKE_ADD_ONE, dir.file("x.npy"), "--repeat", "2"});
  EXPECT_FALSE(contains(cpu.stdOut, "; on ")) << cpu.stdOut;
}

TEST(KilnRun, RefusesDevicesWithoutCode) {
  ScopedEnv env = fakeGpu();
  TempDir dir;
  GpuAddCase data;
  kiln::rt::writeNpy(data.a, dir.file("a.npy"));
  kiln::rt::writeNpy(data.b, dir.file("b.npy"));
  CommandResult cpu = runCommand({KILN_RUN_PATH, KILN_FAKE_GPU_ADD, dir.file("a.npy"), dir.file("b.npy"),
                                  "--device", "cpu"});
  EXPECT_EQ(cpu.exitCode, 1);
  EXPECT_EQ(cpu.stdErr, "kiln-run: error: " + std::string(KILN_FAKE_GPU_ADD) +
                            ": cannot run on cpu: the artifact has code for cuda only (add cpu to kilnc's --target)\n");
  CommandResult absent = runCommand({KILN_RUN_PATH, KILN_FAKE_GPU_ADD, "--device", "gpu:1"});
  EXPECT_EQ(absent.exitCode, 1);
  EXPECT_EQ(absent.stdErr, "kiln-run: error: " + std::string(KILN_FAKE_GPU_ADD) +
                               ": no gpu:1 on this machine (it has 1 GPU: gpu:0)\n");
}

TEST(KilnRun, InfoShowsGpuCodeAndProgram) {
  ScopedEnv env = fakeGpu();
  CommandResult info = runCommand({KILN_RUN_PATH, KILN_FAKE_GPU_ADD, "--info"});
  ASSERT_EQ(info.exitCode, 0) << info.stdErr;
  for (const char *line : {"devices  cuda\n", "cubins   sm_80 sm_90\n", "ptx      compute_80 (PTX ISA 7.8)\n",
                           "driver   CUDA 12.0 or newer\n",
                           "program  2 launches, 0 matmuls, 1 copy; arena 256 bytes, constants 256 bytes\n",
                           "input    a f32[2x3]\n", "output   a_copy f32[2x3]\n",
                           "device   gpu:0: Kiln Fake GPU (sm_90, driver 13.0), cubin sm_90, cuda graph on (captured at the end of "
                           "the first run)\n"})
    EXPECT_TRUE(contains(info.stdOut, line)) << line << "\nin:\n" << info.stdOut;

  CommandResult cpu = runCommand({KILN_RUN_PATH, KILN_FAKE_ADD_ONE, "--info"});
  ASSERT_EQ(cpu.exitCode, 0) << cpu.stdErr;
  EXPECT_TRUE(contains(cpu.stdOut, "devices  cpu\n")) << cpu.stdOut;
  EXPECT_TRUE(contains(cpu.stdOut, "device   cpu (generic)\n")) << cpu.stdOut;
  EXPECT_FALSE(contains(cpu.stdOut, "cubins")) << cpu.stdOut;

  // Without a driver the contents still print; the device part fails.
  ScopedEnv noDriver{{"KILN_LIBCUDA", "/nonexistent/libcuda.so.1"}};
  CommandResult offline = runCommand({KILN_RUN_PATH, KILN_FAKE_GPU_MATMUL, "--info"});
  EXPECT_EQ(offline.exitCode, 1);
  EXPECT_TRUE(contains(offline.stdOut, "program  0 launches, 4 matmuls, 0 copies; arena 0 bytes, constants 768 bytes\n"))
      << offline.stdOut;
  EXPECT_TRUE(contains(offline.stdErr, ": no CUDA driver on this machine (/nonexistent/libcuda.so.1: ")) << offline.stdErr;
}

#endif // KILN_RUN_PATH

#if defined(KILN_RUN_PATH) && defined(KILN_CONFORMANCE_PATH)

namespace {

// A node-test directory in the ONNX layout, plus a fake kilnc whose behaviour depends on the
// test's name; every "compiled" artifact is the add-one fake.
class ConformanceFixture : public ::testing::Test {
protected:
  void SetUp() override {
    data_ = dir_.file("node");
    addTest("test_pass", {sequence(KILN_DTYPE_F32, {2, 3}, "x")}, {plusOne(sequence(KILN_DTYPE_F32, {2, 3}, "y"))});
    addTest("test_wrong", {sequence(KILN_DTYPE_F32, {2, 3}, "x")},
            {plusOne(plusOne(sequence(KILN_DTYPE_F32, {2, 3}, "y")))});
    Tensor shape(KILN_DTYPE_I64, {2}, "shape");
    addTest("test_frozen", {sequence(KILN_DTYPE_F32, {2, 3}, "x"), shape},
            {plusOne(sequence(KILN_DTYPE_F32, {2, 3}, "y"))});
    addTest("test_unnamed", {sequence(KILN_DTYPE_F32, {2, 3})}, {plusOne(sequence(KILN_DTYPE_F32, {2, 3}))});
    addTest("test_unsupported", {}, {});
    addTest("test_crash", {}, {});
    addTest("test_hang", {}, {});
    addTest("test_compile_error", {}, {});
    std::filesystem::create_directories(data_ + "/test_nomodel/test_data_set_0");
    std::filesystem::create_directories(data_ + "/test_nodata");
    kiln::test::writeFile(data_ + "/test_nodata/model.onnx", "fake");

    kilnc_ = dir_.file("fake-kilnc.sh");
    kiln::test::writeFile(kilnc_, R"sh(#!/bin/sh
# Fake kilnc: MODEL -o OUT [--freeze-input NAME=PATH]...
model=$1 out=$3
case $(basename "$(dirname "$model")") in
  test_unsupported) echo "kilnc: error: op 'Frobnicate' is not supported" >&2; exit 3 ;;
  test_crash) kill -SEGV $$ ;;
  test_hang) sleep 30; exit 0 ;;
  test_compile_error) echo "kilnc: error: node 'n0': bad attribute" >&2; echo "more detail" >&2; exit 1 ;;
  test_frozen)
    if [ "$4" != "--freeze-input" ]; then
      echo "kilnc: error: Reshape 'r' needs a constant shape; recompile with --freeze-input shape" >&2
      exit 4
    fi
    case $5 in shape=*/test_data_set_0/input_1.pb) ;; *) echo "bad freeze argument $5" >&2; exit 1 ;; esac ;;
  test_pass) (sleep 30) & ;;  # a straggler holding our stdout must not stall the runner
esac
cp ")sh" KILN_FAKE_ADD_ONE R"sh(" "$out"
)sh");
    chmod(kilnc_.c_str(), 0755);
  }

  void addTest(const std::string &name, const std::vector<Tensor> &inputs, const std::vector<Tensor> &outputs) {
    std::string set = data_ + "/" + name + "/test_data_set_0";
    std::filesystem::create_directories(set);
    kiln::test::writeFile(data_ + "/" + name + "/model.onnx", "not really onnx");
    for (std::size_t i = 0; i < inputs.size(); ++i)
      kiln::rt::writeTensorProto(inputs[i], set + "/input_" + std::to_string(i) + ".pb");
    for (std::size_t i = 0; i < outputs.size(); ++i)
      kiln::rt::writeTensorProto(outputs[i], set + "/output_" + std::to_string(i) + ".pb");
  }

  CommandResult conformance(std::vector<std::string> extra) {
    std::vector<std::string> args = {KILN_CONFORMANCE_PATH, "--kilnc", kilnc_, "--kiln-run", KILN_RUN_PATH,
                                     "--data-dir", data_, "--timeout", "2", "--jobs", "4"};
    args.insert(args.end(), extra.begin(), extra.end());
    return runCommand(args);
  }

  TempDir dir_;
  std::string data_;
  std::string kilnc_;
};

} // namespace

TEST_F(ConformanceFixture, ReportsEveryOutcome) {
  auto start = std::chrono::steady_clock::now();
  CommandResult result = conformance({});
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 20) << "the hung kilnc or the straggler was not cut off";
  EXPECT_EQ(result.exitCode, 1) << result.stdErr;
  const std::string &out = result.stdOut;
  EXPECT_TRUE(contains(out, "PASS test_pass\n")) << out;
  EXPECT_TRUE(contains(out, "PASS test_frozen\n")) << out;
  EXPECT_TRUE(contains(out, "PASS test_unnamed\n")) << out;
  EXPECT_TRUE(contains(out, "SKIP test_unsupported: kilnc: error: op 'Frobnicate' is not supported\n")) << out;
  EXPECT_TRUE(contains(out, "FAIL test_wrong: output 'y': 6 of 6 values differ, max |diff| 1 at index 0 "
                            "(got 0, expected 1)\n"))
      << out;
  EXPECT_TRUE(contains(out, "FAIL test_crash: kilnc crashed (signal 11, Segmentation fault)\n")) << out;
  EXPECT_TRUE(contains(out, "FAIL test_hang: kilnc timed out after 2 s\n")) << out;
  EXPECT_TRUE(contains(out, "FAIL test_compile_error: kilnc exited with 1: kilnc: error: node 'n0': bad attribute\n"))
      << out;
  EXPECT_TRUE(contains(out, "FAIL test_nomodel: no model.onnx in ")) << out;
  EXPECT_TRUE(contains(out, "FAIL test_nodata: no test_data_set_* directories in ")) << out;
  // Sorted order, and the summary is the last line.
  EXPECT_LT(out.find("test_compile_error"), out.find("test_crash"));
  EXPECT_LT(out.find("test_wrong"), out.find("3 passed"));
  EXPECT_TRUE(out.size() >= 30 && out.substr(out.rfind('\n', out.size() - 2) + 1) == "3 passed, 6 failed, 1 skipped\n")
      << out;
}

TEST_F(ConformanceFixture, ExpectedListFindsRegressionsAndNewPasses) {
  kiln::test::writeFile(dir_.file("expected.txt"), "# tests that must pass\ntest_pass\n"
                                                   "test_unsupported   # was passing once\n\ntest_gone\n");
  CommandResult result = conformance({"--expected", dir_.file("expected.txt"), "--filter", "^test_(pass|frozen|unsupported|gone)$",
                                      "--write-passing", dir_.file("passing.txt")});
  EXPECT_EQ(result.exitCode, 1) << result.stdOut << result.stdErr;
  EXPECT_TRUE(contains(result.stdOut, "REGRESSION test_unsupported: SKIP")) << result.stdOut;
  EXPECT_TRUE(contains(result.stdOut, "REGRESSION test_gone: not found in")) << result.stdOut;
  EXPECT_TRUE(contains(result.stdOut, "newly passing")) << result.stdOut;
  EXPECT_TRUE(contains(result.stdOut, "  test_frozen\n")) << result.stdOut;
  EXPECT_TRUE(contains(result.stdOut, "2 passed, 0 failed, 1 skipped\n")) << result.stdOut;
  EXPECT_EQ(kiln::test::readFile(dir_.file("passing.txt")), "test_frozen\ntest_pass\n");

  kiln::test::writeFile(dir_.file("expected.txt"), "test_pass\n");
  CommandResult clean = conformance({"--expected", dir_.file("expected.txt"), "--filter", "^test_(pass|wrong)$"});
  EXPECT_EQ(clean.exitCode, 0) << clean.stdOut;  // test_wrong fails but is not expected to pass
  EXPECT_TRUE(contains(clean.stdOut, "1 passed, 1 failed, 0 skipped\n")) << clean.stdOut;
}

TEST_F(ConformanceFixture, UsageErrors) {
  CommandResult noKilnc = runCommand({KILN_CONFORMANCE_PATH, "--kiln-run", KILN_RUN_PATH});
  EXPECT_EQ(noKilnc.exitCode, 2);
  EXPECT_TRUE(contains(noKilnc.stdErr, "--kilnc (or --prebuilt) and --kiln-run are required")) << noKilnc.stdErr;
  CommandResult badRegex = conformance({"--filter", "("});
  EXPECT_EQ(badRegex.exitCode, 2);
  EXPECT_TRUE(contains(badRegex.stdErr, "invalid regular expression")) << badRegex.stdErr;
}

namespace {

// One GPU test in the ONNX layout and a fake kilnc that logs its arguments and "compiles" the fake
// GPU add artifact (or, for test_badgpu, one whose GPU program is wrong).
class GpuConformanceFixture : public ::testing::Test {
protected:
  void SetUp() override {
    data_ = dir_.file("node");
    GpuAddCase expected;
    for (const char *name : {"test_gpu", "test_badgpu"}) {
      std::string set = data_ + "/" + name + "/test_data_set_0";
      std::filesystem::create_directories(set);
      kiln::test::writeFile(data_ + "/" + name + "/model.onnx", "not really onnx");
      kiln::rt::writeTensorProto(expected.a, set + "/input_0.pb");
      kiln::rt::writeTensorProto(expected.b, set + "/input_1.pb");
      kiln::rt::writeTensorProto(expected.y, set + "/output_0.pb");
      kiln::rt::writeTensorProto(expected.copy, set + "/output_1.pb");
    }
    kilnc_ = dir_.file("fake-kilnc.sh");
    kiln::test::writeFile(kilnc_, "#!/bin/sh\n"
                                  "echo \"$@\" >> " + dir_.file("kilnc.log") + "\n"
                                  "case $(basename \"$(dirname \"$1\")\") in\n"
                                  "  test_badgpu) cp " KILN_FAKE_GPU_BAD_PROGRAM " \"$3\" ;;\n"
                                  "  *) cp " KILN_FAKE_GPU_ADD " \"$3\" ;;\n"
                                  "esac\n");
    chmod(kilnc_.c_str(), 0755);
  }

  CommandResult conformance(std::vector<std::string> extra) {
    std::vector<std::string> args = {KILN_CONFORMANCE_PATH, "--kilnc", kilnc_, "--data-dir", data_, "--timeout", "10"};
    args.insert(args.end(), extra.begin(), extra.end());
    return runCommand(args);
  }

  TempDir dir_;
  std::string data_;
  std::string kilnc_;
};

} // namespace

TEST_F(GpuConformanceFixture, PassesArgumentsToKilncAndKilnRun) {
  ScopedEnv env = fakeGpu();
  CommandResult result = conformance({"--kiln-run", KILN_RUN_PATH, "--filter", "^test_gpu$",
                                      "--kilnc-arg=--target=cuda:sm_90", "--kilnc-arg", "--name=m",
                                      "--kiln-run-arg=--device=gpu:0", "--kiln-run-arg", "--no-cuda-graph"});
  EXPECT_EQ(result.exitCode, 0) << result.stdOut << result.stdErr;
  EXPECT_TRUE(contains(result.stdOut, "PASS test_gpu\n")) << result.stdOut;
  EXPECT_TRUE(contains(result.stdOut, "1 passed, 0 failed, 0 skipped\n")) << result.stdOut;
  std::string log = kiln::test::readFile(dir_.file("kilnc.log"));
  EXPECT_TRUE(contains(log, ".kiln --target=cuda:sm_90 --name=m\n")) << log;

  // kiln-run gets its arguments too: on the CPU this artifact is refused.
  CommandResult cpu = conformance({"--kiln-run", KILN_RUN_PATH, "--filter", "^test_gpu$", "--kiln-run-arg=--device=cpu"});
  EXPECT_EQ(cpu.exitCode, 1);
  EXPECT_TRUE(contains(cpu.stdOut, "FAIL test_gpu: kiln-run exited with 1: test_gpu.kiln: cannot run on cpu: the "
                                   "artifact has code for cuda only"))
      << cpu.stdOut;
}

TEST_F(GpuConformanceFixture, CompileOnlyNeedsNoGpu) {
  ScopedEnv env = fakeGpu("/nonexistent/libcuda.so.1");
  CommandResult result = conformance({"--compile-only"});
  EXPECT_EQ(result.exitCode, 1) << result.stdOut << result.stdErr;
  EXPECT_TRUE(contains(result.stdOut, "PASS test_gpu\n")) << result.stdOut;
  EXPECT_TRUE(contains(result.stdOut, "FAIL test_badgpu: test_badgpu.kiln: cuda program line 8: dst= out:1 needs 28 "
                                      "bytes, but output 1 'a_copy' has 24\n"))
      << result.stdOut;
  EXPECT_TRUE(contains(result.stdOut, "1 passed, 1 failed, 0 skipped\n")) << result.stdOut;

  kiln::test::writeFile(dir_.file("expected.txt"), "test_gpu\n");
  CommandResult expected = conformance({"--compile-only", "--expected", dir_.file("expected.txt")});
  EXPECT_EQ(expected.exitCode, 0) << expected.stdOut << expected.stdErr;
  kiln::test::writeFile(dir_.file("expected.txt"), "test_gpu\ntest_badgpu\n");
  CommandResult regressed = conformance({"--compile-only", "--expected", dir_.file("expected.txt")});
  EXPECT_EQ(regressed.exitCode, 1) << regressed.stdOut;
  EXPECT_TRUE(contains(regressed.stdOut, "REGRESSION test_badgpu: FAIL")) << regressed.stdOut;

  CommandResult noRunner = conformance({});
  EXPECT_EQ(noRunner.exitCode, 2);
  EXPECT_TRUE(contains(noRunner.stdErr, "--kilnc (or --prebuilt) and --kiln-run are required"))
      << noRunner.stdErr;
}

// Artifacts compiled where kilnc is (--compile-only --work-dir), run where the GPU is (--prebuilt).
TEST_F(GpuConformanceFixture, RunsPrebuiltArtifacts) {
  std::string work = dir_.file("work");
  {
    ScopedEnv env = fakeGpu("/nonexistent/libcuda.so.1");
    CommandResult compiled = conformance({"--compile-only", "--work-dir", work, "--keep"});
    EXPECT_TRUE(contains(compiled.stdOut, "PASS test_gpu\n")) << compiled.stdOut;
  }
  ScopedEnv env = fakeGpu(KILN_FAKE_CUDA);
  CommandResult ran = runCommand({KILN_CONFORMANCE_PATH, "--prebuilt", work, "--kiln-run", KILN_RUN_PATH,
                                  "--data-dir", data_, "--kiln-run-arg=--device=gpu:0", "--jobs", "1"});
  EXPECT_TRUE(contains(ran.stdOut, "PASS test_gpu\n")) << ran.stdOut << ran.stdErr;
  EXPECT_TRUE(contains(ran.stdOut, "FAIL test_badgpu:")) << ran.stdOut;

  CommandResult both = runCommand({KILN_CONFORMANCE_PATH, "--prebuilt", work, "--compile-only",
                                   "--kilnc", KILN_RUN_PATH, "--data-dir", data_});
  EXPECT_EQ(both.exitCode, 2);
  EXPECT_TRUE(contains(both.stdErr, "--prebuilt runs artifacts; --compile-only makes them")) << both.stdErr;
  CommandResult missing = runCommand({KILN_CONFORMANCE_PATH, "--prebuilt", dir_.file("none"), "--kiln-run",
                                      KILN_RUN_PATH, "--data-dir", data_});
  EXPECT_EQ(missing.exitCode, 2);
  EXPECT_TRUE(contains(missing.stdErr, "--prebuilt " + dir_.file("none") + ": not a directory")) << missing.stdErr;
}

#endif // KILN_RUN_PATH && KILN_CONFORMANCE_PATH

TEST(ConformanceData, ReshapeShapeInputIsNamedInt64) {
  // kilnc's --freeze-input hints name this input; the runner finds it by the TensorProto name.
  std::string set = std::string(KILN_ONNX_NODE_DATA) + "/test_reshape_reordered_all_dims/test_data_set_0/";
  if (!std::filesystem::exists(set + "input_1.pb"))
    GTEST_SKIP() << "libonnx-testdata is not installed";
  Tensor shape = kiln::rt::readTensorProto(set + "input_1.pb");
  EXPECT_EQ(shape.name(), "shape");
  EXPECT_EQ(shape.dtype(), KILN_DTYPE_I64);
  EXPECT_EQ(shape.rank(), 1);
}
