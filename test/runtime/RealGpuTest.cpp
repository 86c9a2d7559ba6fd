// Tests on a real NVIDIA GPU, through the real driver and cuBLASLt; skipped, saying so, where there is none.
#include "TestUtil.h"
#include "kiln/artifact.h"
#include "kiln/runtime.h"
#include "real_gpu_constants.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using kiln::rt::Artifact;
using kiln::rt::Tensor;

namespace {

float bf16ToFloat(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, 4);
  return value;
}

uint16_t floatToBf16(float value) { // exact for the test's values
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return static_cast<uint16_t>(bits >> 16);
}

// Opens `path` on gpu:0 with the machine's own driver; skips the test where there is no GPU.
#define OPEN_REAL_GPU_OR_SKIP(artifact, path)                                                      \
  unsetenv("KILN_LIBCUDA");                                                                        \
  unsetenv("KILN_LIBCUBLASLT");                                                                    \
  kiln_artifact *artifact##Raw = nullptr;                                                          \
  kiln_status artifact##Status = kiln_artifact_open_device(path, "gpu:0", &artifact##Raw);         \
  if (artifact##Status == KILN_ERROR_NO_DEVICE)                                                    \
    GTEST_SKIP() << "skipped: no NVIDIA GPU here (" << kiln_last_error() << ")";                   \
  ASSERT_EQ(artifact##Status, KILN_OK) << kiln_last_error();                                       \
  kiln_artifact_close(artifact##Raw);                                                              \
  Artifact artifact = Artifact::open(path, "gpu:0")

// Checks `got` against `want` with |got - want| <= tolerance * (1 + |want|); returns mismatches.
int compare(const std::vector<float> &got, const std::vector<double> &want, double tolerance, const char *what) {
  int bad = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (std::fabs(got[i] - want[i]) <= tolerance * (1 + std::fabs(want[i])))
      continue;
    if (bad++ < 5)
      ADD_FAILURE() << what << "[" << i << "]: got " << got[i] << ", want " << want[i];
  }
  return bad;
}

// Runs the program three times and checks every output against a reference computed here.
void checkProgram(Artifact &artifact) {
  // Inputs, from the same small eighths as the constants.
  Tensor a(KILN_DTYPE_F32, {1024}), b(KILN_DTYPE_F32, {1024}), x(KILN_DTYPE_F32, {64, 96}),
      xt(KILN_DTYPE_F32, {3, 96, 64}), addend(KILN_DTYPE_F32, {3, 64, 48}), h(KILN_DTYPE_F16, {2, 64, 96}),
      hw(KILN_DTYPE_F16, {2, 96, 48}), g(KILN_DTYPE_BF16, {64, 96}), gw(KILN_DTYPE_BF16, {48, 96});
  auto fill = [](Tensor &t, int salt) {
    for (int64_t i = 0; i < t.numElements(); ++i) {
      float v = kilnRealValue(static_cast<int>(i), salt);
      if (t.dtype() == KILN_DTYPE_F32)
        t.dataAs<float>()[i] = v;
      else
        t.dataAs<uint16_t>()[i] = t.dtype() == KILN_DTYPE_F16 ? kilnRealHalf(v) : floatToBf16(v);
    }
  };
  int salt = 10;
  for (Tensor *t : {&a, &b, &x, &xt, &addend, &h, &hw, &g, &gw})
    fill(*t, salt++);
  auto F = [](const Tensor &t, int64_t i) -> double {
    if (t.dtype() == KILN_DTYPE_F32)
      return t.dataAs<float>()[i];
    uint16_t bits = t.dataAs<uint16_t>()[i];
    return t.dtype() == KILN_DTYPE_F16 ? kiln::rt::halfToFloat(bits) : bf16ToFloat(bits);
  };

  std::vector<double> sum(1024), sum2(1024), y1(64 * 48), y2(3 * 64 * 48), y3(2 * 64 * 48), y4(64 * 48);
  for (int i = 0; i < 1024; ++i) {
    sum[i] = F(a, i) + F(b, i);
    sum2[i] = sum[i] + kilnRealAddBias(i);
  }
  for (int i = 0; i < 64; ++i) {
    for (int j = 0; j < 48; ++j) {
      double s1 = 0, s4 = 0;
      for (int p = 0; p < 96; ++p) {
        s1 += F(x, i * 96 + p) * kilnRealW(p, j);
        s4 += F(g, i * 96 + p) * F(gw, j * 96 + p);
      }
      y1[i * 48 + j] = std::max(s1 + kilnRealWBias(j), 0.0);
      y4[i * 48 + j] = s4;
      for (int batch = 0; batch < 3; ++batch) {
        double s = 0;
        for (int p = 0; p < 96; ++p)
          s += F(xt, batch * 96 * 64 + p * 64 + i) * kilnRealW(p, j);
        y2[batch * 3072 + i * 48 + j] = s + F(addend, batch * 3072 + i * 48 + j);
      }
      for (int batch = 0; batch < 2; ++batch) {
        double s = 0;
        for (int p = 0; p < 96; ++p)
          s += F(h, batch * 6144 + i * 96 + p) * F(hw, batch * 4608 + p * 48 + j);
        y3[batch * 3072 + i * 48 + j] = std::max(s + kilnRealHBias(j), 0.0);
      }
    }
  }

  std::vector<Tensor> outputs = artifact.allocateOutputs();
  std::vector<Tensor *> outputPtrs;
  for (Tensor &t : outputs)
    outputPtrs.push_back(&t);
  bool graph = artifact.cudaGraph() != "off";
  for (int round = 0; round < 3; ++round) { // with the graph: direct, then replayed
    for (Tensor &t : outputs)
      std::memset(t.data(), 0xff, static_cast<std::size_t>(t.byteSize()));
    artifact.run({&a, &b, &x, &xt, &addend, &h, &hw, &g, &gw}, outputPtrs);
    EXPECT_EQ(artifact.cudaGraph(), graph ? "on" : "off");
    EXPECT_GT(artifact.lastDeviceMs(), 0.0);
    auto values = [&](const Tensor &t) {
      std::vector<float> out(static_cast<std::size_t>(t.numElements()));
      for (int64_t i = 0; i < t.numElements(); ++i)
        out[i] = static_cast<float>(F(t, i));
      return out;
    };
    EXPECT_EQ(compare(values(outputs[0]), sum, 0, "sum"), 0);
    EXPECT_EQ(compare(values(outputs[1]), sum2, 0, "sum2"), 0);
    EXPECT_EQ(compare(values(outputs[2]), y1, 1e-6, "y1 (f32)"), 0);
    EXPECT_EQ(compare(values(outputs[3]), y2, 1e-3, "y2 (tf32)"), 0);
    EXPECT_EQ(compare(values(outputs[4]), y3, 2e-3, "y3 (f16)"), 0);
    EXPECT_EQ(compare(values(outputs[5]), y4, 1e-2, "y4 (bf16)"), 0);
  }
}

} // namespace

TEST(RealGpu, RunsPtxCompiledByTheDriver) {
  OPEN_REAL_GPU_OR_SKIP(artifact, KILN_REAL_GPU_PTX);
  EXPECT_EQ(artifact.deviceCode(), "ptx compute_80");
  std::printf("[ info     ] %s on %s: %s\n", KILN_REAL_GPU_PTX, artifact.device().c_str(), artifact.deviceName().c_str());
  checkProgram(artifact);
}

#ifdef KILN_REAL_GPU_CUBIN
TEST(RealGpu, RunsTheCubin) {
  OPEN_REAL_GPU_OR_SKIP(artifact, KILN_REAL_GPU_CUBIN);
  std::string code = artifact.deviceCode();
  // sm_90 machine code runs on sm_90 only; other GPUs take the PTX.
  EXPECT_TRUE(code == "cubin sm_90" || code == "ptx compute_80") << code;
  checkProgram(artifact);
  artifact.setOption("cuda-graph", "off");
  checkProgram(artifact);
}
#endif

#ifdef KILN_RUN_PATH
// A faulting kernel breaks the CUDA context for the rest of the process, so it runs in kiln-run.
TEST(RealGpu, KernelFaultIsAnErrorNotACrash) {
  OPEN_REAL_GPU_OR_SKIP(artifact, KILN_REAL_GPU_PTX);
  kiln::test::TempDir dir;
  std::vector<std::string> args = {KILN_RUN_PATH, KILN_REAL_GPU_FAULT, "--device", "gpu:0"};
  const char *names[] = {"a", "b", "x", "xt", "addend", "h", "hw", "g", "gw"};
  for (int i = 0; i < 9; ++i) {
    Tensor t(artifact.inputs()[i].dtype, artifact.inputs()[i].dims);
    std::string file = dir.file(std::string(names[i]) + ".npy");
    kiln::rt::writeNpy(t, file);
    args.push_back(file);
  }
  kiln::test::CommandResult result = kiln::test::runCommand(args);
  EXPECT_EQ(result.exitCode, 1) << result.stdOut << result.stdErr;
  // The fault surfaces at whichever call comes next: the matmul after it, or the synchronization.
  EXPECT_NE(result.stdErr.find("the GPU program failed"), std::string::npos) << result.stdErr;
  EXPECT_NE(result.stdErr.find("cuStreamSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos)
      << result.stdErr;
}
#endif
