// End-to-end tests of GPU artifacts through the C ABI, on the fake CUDA driver and cuBLASLt (fake_cuda.c).
#include "TestUtil.h"
#include "fake_gpu_constants.h"
#include "kiln/artifact.h"
#include "kiln/runtime.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <dlfcn.h>

using kiln::rt::Artifact;
using kiln::rt::Error;
using kiln::rt::Tensor;

namespace {

using kiln::test::ArtifactPtr;
using Opened = kiln::test::OpenedArtifact;

Opened open(const std::string &path, const char *device = nullptr) {
  return kiln::test::openArtifact(path, device);
}

const char *const kKnobs[] = {"KILN_FAKE_CUDA_DEVICES", "KILN_FAKE_CUDA_CC",       "KILN_FAKE_CUDA_DRIVER",
                              "KILN_FAKE_CUDA_NO_CAPTURE", "KILN_FAKE_CUDA_NO_PINNED", "KILN_FAKE_CUDA_JIT_FAIL",
                              "KILN_FAKE_CUDA_NO_ALGO",  "KILN_CUDA_GRAPH",         "CUDA_LAUNCH_BLOCKING",
                              "KILN_FAKE_CUDA_CANDIDATES", "KILN_CUBLASLT_AUTOTUNE"};

// Counters of the fake driver, read from the copy the runtime loaded.
long fakeStat(const char *name) {
  void *fake = dlopen(KILN_FAKE_CUDA, RTLD_NOW | RTLD_NOLOAD);
  if (!fake)
    return 0; // not loaded yet: nothing allocated
  auto stat = reinterpret_cast<long (*)(const char *)>(dlsym(fake, "kiln_fake_cuda_stat"));
  long value = stat ? stat(name) : -1;
  dlclose(fake);
  return value;
}

std::string fakeLastImage() {
  void *fake = dlopen(KILN_FAKE_CUDA, RTLD_NOW | RTLD_NOLOAD);
  if (!fake)
    return {};
  auto last = reinterpret_cast<const char *(*)()>(dlsym(fake, "kiln_fake_cuda_last_image"));
  std::string image = last ? last() : "";
  dlclose(fake);
  return image;
}

class GpuArtifact : public ::testing::Test {
protected:
  void SetUp() override {
    setenv("KILN_LIBCUDA", KILN_FAKE_CUDA, 1);
    setenv("KILN_LIBCUBLASLT", KILN_FAKE_CUDA, 1);
    for (const char *knob : kKnobs)
      unsetenv(knob);
  }

  void TearDown() override {
    // Every artifact is closed by now: whatever the runtime took from the driver it gave back.
    for (const char *counter : {"live_allocs", "live_host_allocs", "live_modules", "live_streams", "live_events",
                                "live_graphs", "live_graph_execs", "live_ctx_retains", "live_lt_handles",
                                "live_lt_descs", "live_lt_layouts", "live_lt_prefs", "ctx_depth"})
      EXPECT_EQ(fakeStat(counter), 0) << counter;
    for (const char *knob : kKnobs)
      unsetenv(knob);
    unsetenv("KILN_LIBCUDA");
    unsetenv("KILN_LIBCUBLASLT");
  }

  // Runs the add artifact on a = i, b = 100 * i and checks y = a + b + bias, a_copy = a.
  static void runAdd(kiln_artifact *artifact, float scale = 1) {
    static const float kBias[6] = {KILN_FAKE_ADD_BIAS};
    float a[6], b[6], y[6] = {}, copy[6] = {};
    for (int i = 0; i < 6; ++i) {
      a[i] = static_cast<float>(i) * scale;
      b[i] = static_cast<float>(100 * i);
    }
    void *inputs[] = {a, b};
    void *outputs[] = {y, copy};
    ASSERT_EQ(kiln_artifact_run(artifact, inputs, outputs), KILN_OK) << kiln_last_error();
    for (int i = 0; i < 6; ++i) {
      EXPECT_EQ(y[i], a[i] + b[i] + kBias[i]) << "y[" << i << "]";
      EXPECT_EQ(copy[i], a[i]) << "a_copy[" << i << "]";
    }
  }
};

bool contains(const std::string &haystack, const std::string &needle) {
  return haystack.find(needle) != std::string::npos;
}

// A train step's state stays on the GPU: the init entry sets it, each step reads what the last one
// wrote (the two buffers trade places, one CUDA graph per arrangement) and copies only the batch in
// and the loss out; entries read the state where it is.
TEST_F(GpuArtifact, ResidentStateStaysOnTheDevice) {
  Opened opened = open(KILN_FAKE_GPU_TRAIN);
  ASSERT_EQ(opened.status, KILN_OK) << opened.message;
  kiln_artifact *artifact = opened.artifact.get();
  float w[6] = {};
  EXPECT_EQ(kiln_artifact_state_read(artifact, "w", w, sizeof w), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kiln_last_error()).find("call kiln_artifact_state_init first"), std::string::npos)
      << kiln_last_error();
  EXPECT_FALSE(kiln_artifact_has_resident_state(artifact));
  ASSERT_EQ(kiln_artifact_state_init(artifact), KILN_OK) << kiln_last_error();
  EXPECT_TRUE(kiln_artifact_has_resident_state(artifact));
  ASSERT_EQ(kiln_artifact_state_read(artifact, "w", w, sizeof w), KILN_OK) << kiln_last_error();
  float expected[6] = {1, 2, 3, 4, 5, 6};
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(w[i], expected[i]) << "init's w[" << i << "]";

  float x[6] = {10, 20, 30, 40, 50, 60}, loss[6] = {};
  void *inputs[] = {x, nullptr};
  void *outputs[] = {loss, nullptr};
  long htod = fakeStat("htod_copies"), dtoh = fakeStat("dtoh_copies"), dtod = fakeStat("dtod_copies");
  long captures = fakeStat("captures");
  const char *graphs[] = {"pending", "on", "on", "on", "on"};
  for (int step = 0; step < 5; ++step) {
    ASSERT_EQ(kiln_artifact_run(artifact, inputs, outputs), KILN_OK) << kiln_last_error();
    for (int i = 0; i < 6; ++i) {
      EXPECT_EQ(loss[i], x[i] + expected[i]) << "step " << step << " loss[" << i << "]";
      expected[i] += x[i];
    }
    EXPECT_STREQ(kiln_artifact_cuda_graph(artifact), graphs[step]) << "after step " << step;
  }
  // One copy in (the batch) and one out (the loss) per step; the state never crossed.
  EXPECT_EQ(fakeStat("htod_copies") - htod, 5);
  EXPECT_EQ(fakeStat("dtoh_copies") - dtoh, 5);
  EXPECT_EQ(fakeStat("dtod_copies") - dtod, 0);
  EXPECT_EQ(fakeStat("captures") - captures, 2); // one graph per arrangement of the state's two buffers
  ASSERT_EQ(kiln_artifact_state_read(artifact, "w", w, sizeof w), KILN_OK) << kiln_last_error();
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(w[i], expected[i]) << "w[" << i << "] after 5 steps";

  // Steps back to back on the device move the state on as runs do.
  double ms = 0;
  ASSERT_EQ(kiln_artifact_time_steps(artifact, 3, &ms), KILN_OK) << kiln_last_error();
  ASSERT_EQ(kiln_artifact_state_read(artifact, "w", w, sizeof w), KILN_OK) << kiln_last_error();
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(w[i], expected[i] + 3 * x[i]) << "w[" << i << "] after 3 timed steps";

  // A checkpoint's value, written back, is what the next step reads.
  float restored[6] = {-1, -2, -3, -4, -5, -6};
  ASSERT_EQ(kiln_artifact_state_write(artifact, "w", restored, sizeof restored), KILN_OK) << kiln_last_error();
  ASSERT_EQ(kiln_artifact_run(artifact, inputs, outputs), KILN_OK) << kiln_last_error();
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(loss[i], x[i] + restored[i]) << "loss[" << i << "] after the restore";

  // The eval entry (a GPU program of its own) reads w in place when its buffer is NULL, or the
  // caller's weights when given.
  float y[6] = {};
  void *evalOutputs[] = {y};
  ASSERT_EQ(kiln_artifact_run_entry(artifact, "eval", inputs, evalOutputs), KILN_OK) << kiln_last_error();
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(y[i], x[i] + restored[i] + x[i]) << "eval y[" << i << "]";
  float given[6] = {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f};
  void *evalInputs[] = {x, given};
  ASSERT_EQ(kiln_artifact_run_entry(artifact, "eval", evalInputs, evalOutputs), KILN_OK) << kiln_last_error();
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(y[i], x[i] + 0.5f) << "eval y[" << i << "] on given weights";

  // Misuse is an error naming the tensor.
  EXPECT_EQ(kiln_artifact_state_read(artifact, "w", w, 4), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kiln_last_error()).find("'w' is f32[2x3] (24 bytes), not 4 bytes"), std::string::npos)
      << kiln_last_error();
  EXPECT_EQ(kiln_artifact_state_read(artifact, "v", w, sizeof w), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kiln_last_error()).find("no state tensor 'v'"), std::string::npos) << kiln_last_error();

  // Starting over from init.
  ASSERT_EQ(kiln_artifact_state_init(artifact), KILN_OK) << kiln_last_error();
  ASSERT_EQ(kiln_artifact_state_read(artifact, "w", w, sizeof w), KILN_OK) << kiln_last_error();
  EXPECT_EQ(w[0], 1);
  EXPECT_EQ(w[5], 6);
}

// An inference artifact has no state to keep.
TEST_F(GpuArtifact, ResidentStateNeedsATrainStep) {
  Opened opened = open(KILN_FAKE_GPU_ADD);
  ASSERT_EQ(opened.status, KILN_OK) << opened.message;
  EXPECT_EQ(kiln_artifact_state_init(opened.artifact.get()), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(kiln_last_error()).find("not a train step with an init entry"), std::string::npos)
      << kiln_last_error();
}

} // namespace

TEST_F(GpuArtifact, RunsOnTheGpuAndReplaysAGraph) {
  Opened opened = open(KILN_FAKE_GPU_ADD);
  ASSERT_EQ(opened.status, KILN_OK) << opened.message;
  kiln_artifact *artifact = opened.artifact.get();
  EXPECT_STREQ(kiln_artifact_device(artifact), "gpu:0"); // the default of a cuda-only artifact
  EXPECT_STREQ(kiln_artifact_device_name(artifact), "Kiln Fake GPU (sm_90, driver 13.0)");
  EXPECT_STREQ(kiln_artifact_devices(artifact), "cuda");
  EXPECT_STREQ(kiln_artifact_device_code(artifact), "cubin sm_90");
  EXPECT_EQ(fakeLastImage(), "cubin sm_90");
  EXPECT_EQ(kiln_artifact_last_device_ms(artifact), -1.0);

  EXPECT_STREQ(kiln_artifact_cuda_graph(artifact), "pending");
  long launches = fakeStat("launches"), captures = fakeStat("captures");
  runAdd(artifact);
  EXPECT_GE(kiln_artifact_last_device_ms(artifact), 0.0);
  EXPECT_STREQ(kiln_artifact_cuda_graph(artifact), "on");
  EXPECT_EQ(fakeStat("launches"), launches + 2) << "the first run launches directly";
  EXPECT_EQ(fakeStat("captures"), captures + 1);

  // The graph replays the program on new inputs: it holds device pointers, not values.
  long graphLaunches = fakeStat("graph_launches");
  runAdd(artifact, 3);
  EXPECT_EQ(fakeStat("graph_launches"), graphLaunches + 1);
  EXPECT_EQ(fakeStat("launches"), launches + 4) << "a replay runs the kernels too";
  runAdd(artifact, -2);
  EXPECT_EQ(fakeStat("graph_launches"), graphLaunches + 2);

  ASSERT_EQ(kiln_artifact_set_option(artifact, "cuda-graph", "off"), KILN_OK);
  EXPECT_STREQ(kiln_artifact_cuda_graph(artifact), "off");
  runAdd(artifact, 5);
  EXPECT_EQ(fakeStat("graph_launches"), graphLaunches + 2);
  ASSERT_EQ(kiln_artifact_set_option(artifact, "cuda-graph", "on"), KILN_OK);
  EXPECT_STREQ(kiln_artifact_cuda_graph(artifact), "on");
  runAdd(artifact, 7);
  EXPECT_EQ(fakeStat("graph_launches"), graphLaunches + 3);
  EXPECT_EQ(fakeStat("captures"), captures + 1) << "the graph is captured once";

  // Back-to-back steps on the device data: one graph launch each, nothing copied.
  double ms = -1;
  graphLaunches = fakeStat("graph_launches");
  ASSERT_EQ(kiln_artifact_time_steps(artifact, 4, &ms), KILN_OK) << kiln_last_error();
  EXPECT_GE(ms, 0.0);
  EXPECT_EQ(fakeStat("graph_launches"), graphLaunches + 4);
  EXPECT_EQ(kiln_artifact_time_steps(artifact, 0, &ms), KILN_ERROR_INVALID_ARGUMENT);
}

TEST_F(GpuArtifact, TimeStepsNeedsARunAndAGpu) {
  Opened opened = open(KILN_FAKE_GPU_ADD);
  ASSERT_EQ(opened.status, KILN_OK) << opened.message;
  double ms = 0;
  EXPECT_EQ(kiln_artifact_time_steps(opened.artifact.get(), 1, &ms), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_TRUE(contains(kiln_last_error(), "time the steps after a first run")) << kiln_last_error();
  Opened cpu = open(KILN_FAKE_GPU_BOTH);
  ASSERT_EQ(cpu.status, KILN_OK) << cpu.message;
  runAdd(cpu.artifact.get());
  EXPECT_EQ(kiln_artifact_time_steps(cpu.artifact.get(), 1, &ms), KILN_ERROR_UNSUPPORTED);
}

TEST_F(GpuArtifact, GraphSwitchedOffOrUncapturable) {
  setenv("KILN_CUDA_GRAPH", "0", 1);
  {
    Opened opened = open(KILN_FAKE_GPU_ADD);
    ASSERT_EQ(opened.status, KILN_OK) << opened.message;
    long captures = fakeStat("captures");
    EXPECT_STREQ(kiln_artifact_cuda_graph(opened.artifact.get()), "off");
    for (int i = 0; i < 3; ++i)
      runAdd(opened.artifact.get(), static_cast<float>(i));
    EXPECT_STREQ(kiln_artifact_cuda_graph(opened.artifact.get()), "off");
    EXPECT_EQ(fakeStat("captures"), captures);
  }
  unsetenv("KILN_CUDA_GRAPH");
  // A driver that cannot capture leaves direct launches, silently.
  setenv("KILN_FAKE_CUDA_NO_CAPTURE", "1", 1);
  Opened opened = open(KILN_FAKE_GPU_ADD);
  ASSERT_EQ(opened.status, KILN_OK) << opened.message;
  long graphLaunches = fakeStat("graph_launches");
  for (int i = 0; i < 3; ++i)
    runAdd(opened.artifact.get(), static_cast<float>(i));
  EXPECT_STREQ(kiln_artifact_cuda_graph(opened.artifact.get()),
               "failed: cuStreamBeginCapture: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: operation not permitted when "
               "stream is capturing");
  EXPECT_EQ(fakeStat("graph_launches"), graphLaunches);
}

TEST_F(GpuArtifact, CopiesWithoutPinnedMemory) {
  setenv("KILN_FAKE_CUDA_NO_PINNED", "1", 1);
  Opened opened = open(KILN_FAKE_GPU_ADD);
  ASSERT_EQ(opened.status, KILN_OK) << opened.message;
  runAdd(opened.artifact.get());
  runAdd(opened.artifact.get(), 2);
}

TEST_F(GpuArtifact, CpuAndGpuCodeInOneArtifact) {
  Opened cpu = open(KILN_FAKE_GPU_BOTH);
  ASSERT_EQ(cpu.status, KILN_OK) << cpu.message;
  EXPECT_STREQ(kiln_artifact_device(cpu.artifact.get()), "cpu"); // CPU code makes cpu the default
  EXPECT_STREQ(kiln_artifact_devices(cpu.artifact.get()), "cpu,cuda");
  EXPECT_STREQ(kiln_artifact_device_name(cpu.artifact.get()), "generic");
  EXPECT_STREQ(kiln_artifact_device_code(cpu.artifact.get()), "");
  EXPECT_STREQ(kiln_artifact_cuda_graph(cpu.artifact.get()), "");
  runAdd(cpu.artifact.get());
  EXPECT_EQ(kiln_artifact_last_device_ms(cpu.artifact.get()), -1.0);
  EXPECT_EQ(kiln_artifact_set_option(cpu.artifact.get(), "cuda-graph", "off"), KILN_OK);

  Opened gpu = open(KILN_FAKE_GPU_BOTH, "gpu");
  ASSERT_EQ(gpu.status, KILN_OK) << gpu.message;
  EXPECT_STREQ(kiln_artifact_device(gpu.artifact.get()), "gpu:0");
  runAdd(gpu.artifact.get(), 4);
  EXPECT_GE(kiln_artifact_last_device_ms(gpu.artifact.get()), 0.0);
}

TEST_F(GpuArtifact, ChoosesTheCodeForTheGpu) {
  // Same major, lower minor: the sm_80 cubin runs on an sm_86 GPU.
  setenv("KILN_FAKE_CUDA_CC", "8.6", 1);
  {
    Opened opened = open(KILN_FAKE_GPU_ADD);
    ASSERT_EQ(opened.status, KILN_OK) << opened.message;
    EXPECT_STREQ(kiln_artifact_device_code(opened.artifact.get()), "cubin sm_80");
    EXPECT_EQ(fakeLastImage(), "cubin sm_80");
    EXPECT_STREQ(kiln_artifact_device_name(opened.artifact.get()), "Kiln Fake GPU (sm_86, driver 13.0)");
    runAdd(opened.artifact.get());
  }
  // A newer GPU than every cubin: the driver compiles the PTX.
  setenv("KILN_FAKE_CUDA_CC", "12.0", 1);
  {
    Opened opened = open(KILN_FAKE_GPU_ADD);
    ASSERT_EQ(opened.status, KILN_OK) << opened.message;
    EXPECT_STREQ(kiln_artifact_device_code(opened.artifact.get()), "ptx compute_80");
    EXPECT_EQ(fakeLastImage(), "ptx");
    runAdd(opened.artifact.get());
  }
  unsetenv("KILN_FAKE_CUDA_CC");
  Opened ptx = open(KILN_FAKE_GPU_PTX_ONLY);
  ASSERT_EQ(ptx.status, KILN_OK) << ptx.message;
  EXPECT_STREQ(kiln_artifact_device_code(ptx.artifact.get()), "ptx compute_80");
  runAdd(ptx.artifact.get());
}

TEST_F(GpuArtifact, RefusesGpusItHasNoCodeFor) {
  Opened sm80 = open(KILN_FAKE_GPU_SM80);
  EXPECT_EQ(sm80.status, KILN_ERROR_UNSUPPORTED);
  EXPECT_EQ(sm80.message, std::string(KILN_FAKE_GPU_SM80) +
                              ": cannot run on gpu:0 (Kiln Fake GPU, sm_90): the artifact has code for sm_80 only "
                              "and no PTX (recompile with kilnc --target=cuda:sm_90)");

  setenv("KILN_FAKE_CUDA_DRIVER", "12040", 1);
  Opened ptx = open(KILN_FAKE_GPU_PTX_ONLY);
  EXPECT_EQ(ptx.status, KILN_ERROR_UNSUPPORTED);
  EXPECT_EQ(ptx.message, std::string(KILN_FAKE_GPU_PTX_ONLY) +
                             ": cannot run on gpu:0 (Kiln Fake GPU, sm_90): the artifact has PTX for compute_80 of "
                             "PTX ISA 8.5, which needs a CUDA 12.5 driver; this driver is CUDA 12.4 (update the "
                             "NVIDIA driver or recompile with kilnc --target=cuda:sm_90)");

  setenv("KILN_FAKE_CUDA_DRIVER", "11080", 1);
  Opened old = open(KILN_FAKE_GPU_ADD);
  EXPECT_EQ(old.status, KILN_ERROR_UNSUPPORTED);
  EXPECT_EQ(old.message, std::string(KILN_FAKE_GPU_ADD) +
                             ": cannot run on gpu:0 (Kiln Fake GPU, sm_90): the artifact needs a CUDA 12.0 driver or "
                             "newer; this driver is CUDA 11.8 (update the NVIDIA driver)");
}

TEST_F(GpuArtifact, MissingDriverOrGpu) {
  setenv("KILN_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
  Opened noDriver = open(KILN_FAKE_GPU_ADD);
  EXPECT_EQ(noDriver.status, KILN_ERROR_NO_DEVICE);
  EXPECT_EQ(noDriver.message, std::string(KILN_FAKE_GPU_ADD) +
                                  ": no CUDA driver on this machine (/nonexistent/libcuda.so.1: cannot open shared "
                                  "object file: No such file or directory); this artifact needs an NVIDIA GPU (code "
                                  "for sm_80 and sm_90, PTX for compute_80)");
  // A library that is not a CUDA driver.
  setenv("KILN_LIBCUDA", KILN_FAKE_ADD_ONE, 1);
  Opened notDriver = open(KILN_FAKE_GPU_ADD);
  EXPECT_EQ(notDriver.status, KILN_ERROR_NO_DEVICE);
  EXPECT_TRUE(contains(notDriver.message, "no CUDA driver on this machine (" + std::string(KILN_FAKE_ADD_ONE) +
                                              ": it has no cuInit (")) << notDriver.message;

  setenv("KILN_LIBCUDA", KILN_FAKE_CUDA, 1);
  Opened second = open(KILN_FAKE_GPU_ADD, "gpu:1");
  EXPECT_EQ(second.status, KILN_ERROR_NO_DEVICE);
  EXPECT_EQ(second.message, std::string(KILN_FAKE_GPU_ADD) + ": no gpu:1 on this machine (it has 1 GPU: gpu:0)");
  setenv("KILN_FAKE_CUDA_DEVICES", "0", 1);
  EXPECT_EQ(open(KILN_FAKE_GPU_ADD).message,
            std::string(KILN_FAKE_GPU_ADD) + ": no gpu:0 on this machine (it has no CUDA GPUs)");
  setenv("KILN_FAKE_CUDA_DEVICES", "4", 1);
  EXPECT_EQ(open(KILN_FAKE_GPU_ADD, "gpu:7").message,
            std::string(KILN_FAKE_GPU_ADD) + ": no gpu:7 on this machine (it has 4 GPUs: gpu:0 to gpu:3)");
  Opened fourth = open(KILN_FAKE_GPU_ADD, "gpu:3");
  ASSERT_EQ(fourth.status, KILN_OK) << fourth.message;
  EXPECT_STREQ(kiln_artifact_device(fourth.artifact.get()), "gpu:3");
}

TEST_F(GpuArtifact, NeverFallsBackToAnotherDevice) {
  Opened cpu = open(KILN_FAKE_GPU_ADD, "cpu");
  EXPECT_EQ(cpu.status, KILN_ERROR_UNSUPPORTED);
  EXPECT_EQ(cpu.message, std::string(KILN_FAKE_GPU_ADD) +
                             ": cannot run on cpu: the artifact has code for cuda only (add cpu to kilnc's --target)");
  Opened gpu = open(KILN_FAKE_ADD_ONE, "gpu:0");
  EXPECT_EQ(gpu.status, KILN_ERROR_UNSUPPORTED);
  EXPECT_EQ(gpu.message, std::string(KILN_FAKE_ADD_ONE) + ": cannot run on gpu:0: the artifact has code for cpu "
                                                          "only (add cuda:sm_XY to kilnc's --target)");
  Opened bad = open(KILN_FAKE_GPU_ADD, "gpu:x");
  EXPECT_EQ(bad.status, KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(bad.message, std::string(KILN_FAKE_GPU_ADD) + ": bad device 'gpu:x' (expected cpu, gpu or gpu:N)");
  // CPU artifacts keep working as before, also when cpu is asked for by name.
  Opened plain = open(KILN_FAKE_ADD_ONE, "cpu");
  ASSERT_EQ(plain.status, KILN_OK) << plain.message;
  EXPECT_STREQ(kiln_artifact_device(plain.artifact.get()), "cpu");
  EXPECT_STREQ(kiln_artifact_devices(plain.artifact.get()), "cpu");
  EXPECT_EQ(open(KILN_FAKE_ADD_ONE, "").status, KILN_OK);
}

TEST_F(GpuArtifact, LaunchFailureNamesTheKernelAndNode) {
  Opened opened = open(KILN_FAKE_GPU_FAIL);
  ASSERT_EQ(opened.status, KILN_OK) << opened.message;
  float a[6] = {}, b[6] = {}, y[6], copy[6];
  void *inputs[] = {a, b};
  void *outputs[] = {y, copy};
  EXPECT_EQ(kiln_artifact_run(opened.artifact.get(), inputs, outputs), KILN_ERROR_DEVICE);
  EXPECT_EQ(std::string(kiln_last_error()),
            std::string(KILN_FAKE_GPU_FAIL) +
                ": gpu:0 (Kiln Fake GPU, sm_90): cuLaunchKernel failed for kernel 'fake_fail' (program line 8, "
                "node=Bad Node): CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered");
}

// A kernel's fault shows at a later call: the next record's, or the synchronization. Neither may
// be blamed on the record that happened to be next.
TEST_F(GpuArtifact, AsynchronousFaultIsNotBlamedOnTheNextRecord) {
  const std::string hint = " (CUDA reports a kernel's fault to a later call, so the failing record is not known; "
                           "run with CUDA_LAUNCH_BLOCKING=1 to name it)";
  float a[6] = {}, b[6] = {}, y[6], copy[6];
  void *inputs[] = {a, b};
  void *outputs[] = {y, copy};
  {
    Opened opened = open(KILN_FAKE_GPU_FAULT);
    ASSERT_EQ(opened.status, KILN_OK) << opened.message;
    EXPECT_EQ(kiln_artifact_run(opened.artifact.get(), inputs, outputs), KILN_ERROR_DEVICE);
    EXPECT_EQ(std::string(kiln_last_error()),
              std::string(KILN_FAKE_GPU_FAULT) +
                  ": gpu:0 (Kiln Fake GPU, sm_90): the GPU program failed before copy (program line 9, "
                  "node=Identity_0): cuStreamSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was "
                  "encountered" + hint);
    // The context stays broken, as CUDA's does; later runs fail cleanly too.
    EXPECT_EQ(kiln_artifact_run(opened.artifact.get(), inputs, outputs), KILN_ERROR_DEVICE);
  }
  Opened last = open(KILN_FAKE_GPU_FAULT_LAST);
  ASSERT_EQ(last.status, KILN_OK) << last.message;
  EXPECT_EQ(kiln_artifact_run(last.artifact.get(), inputs, outputs), KILN_ERROR_DEVICE);
  EXPECT_EQ(std::string(kiln_last_error()),
            std::string(KILN_FAKE_GPU_FAULT_LAST) +
                ": gpu:0 (Kiln Fake GPU, sm_90): the GPU program failed: cuStreamSynchronize: "
                "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered" + hint);
}

TEST_F(GpuArtifact, LoadErrors) {
  Opened missing = open(KILN_FAKE_GPU_MISSING_KERNEL);
  EXPECT_EQ(missing.status, KILN_ERROR_DEVICE);
  EXPECT_EQ(missing.message, std::string(KILN_FAKE_GPU_MISSING_KERNEL) +
                                 ": gpu:0 (Kiln Fake GPU, sm_90): cuModuleGetFunction failed for kernel 'kiln_k7' "
                                 "(program line 8, node=Missing): CUDA_ERROR_NOT_FOUND: named symbol not found");
  Opened program = open(KILN_FAKE_GPU_BAD_PROGRAM);
  EXPECT_EQ(program.status, KILN_ERROR_INVALID_ARTIFACT);
  EXPECT_EQ(program.message, std::string(KILN_FAKE_GPU_BAD_PROGRAM) +
                                 ": cuda program line 8: dst= out:1 needs 28 bytes, but output 1 'a_copy' has 24");
  Opened cubin = open(KILN_FAKE_GPU_BAD_CUBIN);
  EXPECT_EQ(cubin.status, KILN_ERROR_INVALID_ARTIFACT);
  EXPECT_EQ(cubin.message,
            std::string(KILN_FAKE_GPU_BAD_CUBIN) + ": kiln_cuda_cubin_sm_90 is not a valid cubin (no ELF header)");
  // An artifact that lists cpu must have its CPU entry, whichever device it is opened on.
  Opened noEntry = open(KILN_FAKE_GPU_BOTH_NO_ENTRY, "gpu:0");
  EXPECT_EQ(noEntry.status, KILN_ERROR_INVALID_ARTIFACT);
  EXPECT_EQ(noEntry.message, std::string(KILN_FAKE_GPU_BOTH_NO_ENTRY) + ": artifact has no kiln_entry symbol");
  setenv("KILN_FAKE_CUDA_JIT_FAIL", "1", 1);
  Opened jit = open(KILN_FAKE_GPU_PTX_ONLY);
  EXPECT_EQ(jit.status, KILN_ERROR_DEVICE);
  EXPECT_EQ(jit.message, std::string(KILN_FAKE_GPU_PTX_ONLY) +
                             ": gpu:0 (Kiln Fake GPU, sm_90): cuModuleLoadDataEx failed for the PTX (ptx compute_80): "
                             "CUDA_ERROR_INVALID_PTX: a PTX JIT compilation failed: ptxas fatal   : fake JIT failure");
}

TEST_F(GpuArtifact, RunChecksBuffersAndOptions) {
  Opened opened = open(KILN_FAKE_GPU_ADD);
  ASSERT_EQ(opened.status, KILN_OK) << opened.message;
  float a[6] = {}, y[6], copy[6];
  void *inputs[] = {a, nullptr};
  void *outputs[] = {y, copy};
  EXPECT_EQ(kiln_artifact_run(opened.artifact.get(), inputs, outputs), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(kiln_last_error()), std::string(KILN_FAKE_GPU_ADD) + ": input 'b' buffer is NULL");
  EXPECT_EQ(kiln_artifact_set_option(opened.artifact.get(), "cuda-graphs", "on"), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(kiln_last_error()),
            std::string(KILN_FAKE_GPU_ADD) + ": unknown option 'cuda-graphs' (options: cuda-graph)");
  EXPECT_EQ(kiln_artifact_set_option(opened.artifact.get(), "cuda-graph", "yes"), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(kiln_last_error()),
            std::string(KILN_FAKE_GPU_ADD) + ": option cuda-graph takes on or off, got 'yes'");
  EXPECT_EQ(kiln_artifact_set_option(nullptr, "cuda-graph", "on"), KILN_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(kiln_artifact_last_device_ms(nullptr), -1.0);
  EXPECT_STREQ(kiln_artifact_device(nullptr), "");
}

// y = relu(x . W + bias); z[b] = xt[b]^T . W + bias + addend[b]; w = x . W (see fake_gpu_artifact.c).
TEST_F(GpuArtifact, MatmulThroughCublasLt) {
  static const float kW[12] = {KILN_FAKE_W};
  auto W = [](int p, int j) { return kW[p * 4 + j]; };
  static const float kBias[4] = {KILN_FAKE_COLUMN_BIAS};
  long heuristics = fakeStat("heuristics");
  Artifact artifact = Artifact::open(KILN_FAKE_GPU_MATMUL, "gpu:0");
  EXPECT_EQ(artifact.device(), "gpu:0");
  EXPECT_EQ(fakeStat("heuristics"), heuristics + 4) << "one algorithm choice per matmul, at load";
  EXPECT_EQ(fakeStat("live_lt_prefs"), 0);

  Tensor x(KILN_DTYPE_F32, {2, 3}), xt(KILN_DTYPE_F32, {2, 3, 2}), addend(KILN_DTYPE_F32, {2, 2, 4});
  for (int i = 0; i < 6; ++i)
    x.dataAs<float>()[i] = static_cast<float>(i) - 2.5f;
  for (int i = 0; i < 12; ++i)
    xt.dataAs<float>()[i] = static_cast<float>(i % 5) - 1.0f;
  for (int i = 0; i < 16; ++i)
    addend.dataAs<float>()[i] = static_cast<float>(i) * 0.25f;
  std::vector<Tensor> outputs = artifact.allocateOutputs();
  for (int round = 0; round < 3; ++round) { // later runs replay the captured graph
    long matmuls = fakeStat("matmuls");
    artifact.run({&x, &xt, &addend}, {&outputs[0], &outputs[1], &outputs[2], &outputs[3]});
    // The first run calls cuBLASLt four times and four more while capturing; a replay, never.
    EXPECT_EQ(fakeStat("matmuls"), matmuls + (round == 0 ? 8 : 0));
    EXPECT_EQ(artifact.cudaGraph(), "on");
    auto X = [&](int i, int p) { return x.dataAs<float>()[i * 3 + p]; };
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 4; ++j) {
        float sum = 0;
        for (int p = 0; p < 3; ++p)
          sum += X(i, p) * W(p, j);
        EXPECT_FLOAT_EQ(outputs[0].dataAs<float>()[i * 4 + j], std::max(sum + kBias[j], 0.0f)) << i << "," << j;
        EXPECT_FLOAT_EQ(outputs[2].dataAs<float>()[i * 4 + j], sum) << i << "," << j;
        for (int b = 0; b < 2; ++b) // batch b's columns start b * 4 into each row of 8
          EXPECT_FLOAT_EQ(outputs[3].dataAs<float>()[i * 8 + b * 4 + j], 0.5f * sum) << b << "," << i << "," << j;
      }
    }
    for (int b = 0; b < 2; ++b) {
      for (int i = 0; i < 2; ++i) {
        for (int j = 0; j < 4; ++j) {
          float sum = 0;
          for (int p = 0; p < 3; ++p)
            sum += xt.dataAs<float>()[b * 6 + p * 2 + i] * W(p, j);
          float want = sum + kBias[j] + addend.dataAs<float>()[b * 8 + i * 4 + j];
          EXPECT_FLOAT_EQ(outputs[1].dataAs<float>()[b * 8 + i * 4 + j], want) << b << "," << i << "," << j;
        }
      }
    }
  }
  EXPECT_GE(artifact.lastDeviceMs(), 0.0);
}

// With KILN_CUBLASLT_AUTOTUNE=1 and several algorithms offered, each product times every
// candidate once at load (a warm-up and three runs), passes over one that fails, and still
// computes the right values. By default it takes the first, untimed, for runs that repeat bit
// for bit.
TEST_F(GpuArtifact, MatmulTakesTheFastestCandidate) {
  setenv("KILN_FAKE_CUDA_CANDIDATES", "3", 1);
  setenv("KILN_CUBLASLT_AUTOTUNE", "1", 1);
  long matmuls = fakeStat("matmuls");
  {
    Artifact artifact = Artifact::open(KILN_FAKE_GPU_MATMUL, "gpu:0");
    // 4 products x 2 candidates that run x 4 runs; the refused one runs none.
    EXPECT_EQ(fakeStat("matmuls") - matmuls, 32);
    Tensor x(KILN_DTYPE_F32, {2, 3}), xt(KILN_DTYPE_F32, {2, 3, 2}), addend(KILN_DTYPE_F32, {2, 2, 4});
    for (int i = 0; i < 6; ++i)
      x.dataAs<float>()[i] = 1.0f;
    std::vector<Tensor> outputs = artifact.allocateOutputs();
    artifact.run({&x, &xt, &addend}, {&outputs[0], &outputs[1], &outputs[2], &outputs[3]});
    static const float kW[12] = {KILN_FAKE_W};
    for (int j = 0; j < 4; ++j) // w = x . W with x all ones: column sums of W
      EXPECT_FLOAT_EQ(outputs[2].dataAs<float>()[j], kW[j] + kW[4 + j] + kW[8 + j]) << j;
  }
  unsetenv("KILN_CUBLASLT_AUTOTUNE");
  matmuls = fakeStat("matmuls");
  Artifact untuned = Artifact::open(KILN_FAKE_GPU_MATMUL, "gpu:0");
  EXPECT_EQ(fakeStat("matmuls"), matmuls) << "by default the first choice, untimed";
}

TEST_F(GpuArtifact, MatmulLoadErrors) {
  setenv("KILN_FAKE_CUDA_NO_ALGO", "1", 1);
  Opened noAlgo = open(KILN_FAKE_GPU_MATMUL);
  EXPECT_EQ(noAlgo.status, KILN_ERROR_DEVICE);
  EXPECT_EQ(noAlgo.message, std::string(KILN_FAKE_GPU_MATMUL) +
                                ": gpu:0 (Kiln Fake GPU, sm_90): cuBLASLt has no algorithm for matmul (program line "
                                "4, node=Gemm_relu) (f32, batch=1 m=2 n=4 k=3, cuBLASLt 130000 at " KILN_FAKE_CUDA ")");
  unsetenv("KILN_FAKE_CUDA_NO_ALGO");
  setenv("KILN_LIBCUBLASLT", "/nonexistent/libcublasLt.so.13", 1);
  Opened noLibrary = open(KILN_FAKE_GPU_MATMUL);
  EXPECT_EQ(noLibrary.status, KILN_ERROR_DEVICE);
  EXPECT_EQ(noLibrary.message, std::string(KILN_FAKE_GPU_MATMUL) +
                                   ": cannot load cuBLASLt, which the artifact's matmul records need "
                                   "(/nonexistent/libcublasLt.so.13: cannot open shared object file: No such file or "
                                   "directory; tried /nonexistent/libcublasLt.so.13)");
  // Artifacts without matmul records never look for it.
  Opened add = open(KILN_FAKE_GPU_ADD);
  EXPECT_EQ(add.status, KILN_OK) << add.message;
}

TEST_F(GpuArtifact, InspectNeedsNoDevice) {
  setenv("KILN_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
  kiln::rt::ArtifactInfo info = kiln::rt::inspectArtifact(KILN_FAKE_GPU_ADD);
  EXPECT_EQ(info.manifest.deviceList(), "cuda");
  EXPECT_EQ(info.manifest.cudaCubins, (std::vector<std::string>{"sm_80", "sm_90"}));
  ASSERT_TRUE(info.cudaProgram);
  EXPECT_EQ(info.cudaProgram->launches(), 2u);
  EXPECT_EQ(info.cudaProgram->copies(), 1u);
  EXPECT_EQ(info.cudaProgram->arenaBytes, 256u);
  EXPECT_FALSE(kiln::rt::inspectArtifact(KILN_FAKE_ADD_ONE).cudaProgram);
  auto inspectError = [](const char *path) -> std::string {
    try {
      kiln::rt::inspectArtifact(path);
    } catch (const Error &e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_TRUE(contains(inspectError(KILN_FAKE_GPU_BAD_PROGRAM), "cuda program line 8: dst= out:1 needs 28 bytes"));
  EXPECT_EQ(inspectError(KILN_FAKE_GPU_BAD_CUBIN),
            std::string(KILN_FAKE_GPU_BAD_CUBIN) + ": kiln_cuda_cubin_sm_90 is not a valid cubin (no ELF header)");
  EXPECT_EQ(inspectError(KILN_FAKE_GPU_BOTH_NO_ENTRY),
            std::string(KILN_FAKE_GPU_BOTH_NO_ENTRY) + ": artifact has no kiln_entry symbol");
}

TEST_F(GpuArtifact, PartitionedOverTheCpuAndTwoGpus) {
  setenv("KILN_FAKE_CUDA_DEVICES", "2", 1);
  Opened opened = open(KILN_FAKE_GPU_PARTITIONED);
  ASSERT_EQ(opened.status, KILN_OK) << opened.message;
  kiln_artifact *artifact = opened.artifact.get();
  EXPECT_STREQ(kiln_artifact_devices(artifact), "partitioned");
  EXPECT_STREQ(kiln_artifact_device(artifact), "cpu:0,gpu:0,gpu:1");
  const char *counters[] = {"htod_copies", "dtoh_copies", "dtod_copies", "peer_copies"};
  long before[4];
  for (int c = 0; c < 4; ++c)
    before[c] = fakeStat(counters[c]);
  // Every run goes cpu:0 -> gpu:0 -> gpu:1 -> cpu:0 -> gpu:0, each stage on its device's thread.
  const int runs = 20;
  for (int run = 0; run < runs; ++run) {
    float a[6], b[6], v[6] = {}, u[6] = {}, x[6] = {};
    for (int i = 0; i < 6; ++i) {
      a[i] = static_cast<float>(i + run);
      b[i] = static_cast<float>(100 * i);
    }
    void *inputs[] = {a, b};
    void *outputs[] = {v, u, x};
    ASSERT_EQ(kiln_artifact_run(artifact, inputs, outputs), KILN_OK) << kiln_last_error();
    for (int i = 0; i < 6; ++i) {
      EXPECT_EQ(u[i], 2 * a[i] + b[i]) << "u[" << i << "], run " << run;
      EXPECT_EQ(v[i], 4 * a[i] + b[i] + 1) << "v[" << i << "], run " << run;
      EXPECT_EQ(x[i], 6 * a[i] + 2 * b[i] + 1) << "x[" << i << "], run " << run;
    }
  }
  // Per run: into the GPUs, t and b (gpu:0), t (gpu:1) and v (gpu:0 again) from the host; u
  // peer to peer to gpu:1 and on gpu:0 to the last stage; back to the host only u and x (graph
  // outputs) and w (for cpu:0).
  long expected[4] = {4, 3, 1, 1};
  for (int c = 0; c < 4; ++c)
    EXPECT_EQ(fakeStat(counters[c]) - before[c], expected[c] * runs) << counters[c];
  // Each GPU stage's executor holds its own stream and device buffers.
  EXPECT_GE(fakeStat("live_streams"), 3);
}

TEST_F(GpuArtifact, PartitionedNeedsEveryGpuItIsPlacedOn) {
  Opened opened = open(KILN_FAKE_GPU_PARTITIONED);
  EXPECT_EQ(opened.status, KILN_ERROR_NO_DEVICE);
  EXPECT_TRUE(contains(opened.message, "no gpu:1 on this machine (it has 1 GPU: gpu:0)")) << opened.message;
  // A partitioned artifact runs where it was placed; naming a device is refused.
  setenv("KILN_FAKE_CUDA_DEVICES", "2", 1);
  Opened named = open(KILN_FAKE_GPU_PARTITIONED, "gpu:0");
  EXPECT_EQ(named.status, KILN_ERROR_UNSUPPORTED);
  EXPECT_TRUE(contains(named.message, "partitioned over cpu:0,gpu:0,gpu:1")) << named.message;
  // Without a driver: the clear "no CUDA driver" error, naming the artifact.
  setenv("KILN_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
  Opened noDriver = open(KILN_FAKE_GPU_PARTITIONED);
  EXPECT_EQ(noDriver.status, KILN_ERROR_NO_DEVICE);
  EXPECT_TRUE(contains(noDriver.message, "no CUDA driver on this machine")) << noDriver.message;
}

TEST_F(GpuArtifact, InspectsPartitionedStagesWithoutADevice) {
  kiln::rt::ArtifactInfo info = kiln::rt::inspectArtifact(KILN_FAKE_GPU_PARTITIONED);
  ASSERT_EQ(info.manifest.stages.size(), 5u);
  EXPECT_EQ(info.manifest.stages[2].device, "gpu:1");
  kiln::rt::Manifest stage = kiln::rt::stageManifest(info.manifest, 2);
  ASSERT_EQ(stage.inputs.size(), 2u);
  EXPECT_EQ(stage.inputs[1].name, "stage 2 argument 1");
  EXPECT_EQ(stage.outputs.size(), 1u);
  EXPECT_EQ(stage.cudaCubins, std::vector<std::string>{"sm_90"});
}
