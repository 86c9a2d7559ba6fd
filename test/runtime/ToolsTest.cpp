// End-to-end tests of the kiln-run and kiln-conformance binaries on fake artifacts and test data.
#include "TestUtil.h"
#include "kiln/tensor.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

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
  EXPECT_TRUE(contains(badFile.stdErr, dir.file("absent.npy") + ": cannot open")) << badFile.stdErr;
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
  for (const char *option : {"--input", "--output-dir", "--output-format", "--print", "--repeat", "--help"})
    EXPECT_TRUE(contains(help.stdOut, option)) << option;
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
  EXPECT_TRUE(contains(noKilnc.stdErr, "--kilnc and --kiln-run are required")) << noKilnc.stdErr;
  CommandResult badRegex = conformance({"--filter", "("});
  EXPECT_EQ(badRegex.exitCode, 2);
  EXPECT_TRUE(contains(badRegex.stdErr, "invalid regular expression")) << badRegex.stdErr;
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
