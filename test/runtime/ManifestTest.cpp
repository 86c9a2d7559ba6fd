// Tests for the artifact manifest parser: records, versions, encoding and error messages.
#include "kiln/manifest.h"

#include <gtest/gtest.h>

using kiln::rt::Error;
using kiln::rt::Manifest;
using kiln::rt::ManifestVersionError;
using kiln::rt::parseManifest;

namespace {

std::string errorOf(const std::string &text) {
  try {
    parseManifest(text, "model.kiln");
  } catch (const Error &e) {
    return e.what();
  }
  return "no error";
}

} // namespace

TEST(Manifest, ParsesEveryRecord) {
  Manifest m = parseManifest("kiln-artifact 1\n"
                             "name mlp\n"
                             "target x86_64-unknown-linux-gnu\n"
                             "cpu skylake-avx512\n"
                             "features avx2,fma,avx512f\n"
                             "input x f32 64x784\n"
                             "input flag bool scalar\n"
                             "output y f32 64x10\n",
                             "model.kiln");
  EXPECT_EQ(m.version, 1);
  EXPECT_EQ(m.name, "mlp");
  EXPECT_EQ(m.target, "x86_64-unknown-linux-gnu");
  EXPECT_EQ(m.cpu, "skylake-avx512");
  EXPECT_EQ(m.features, (std::vector<std::string>{"avx2", "fma", "avx512f"}));
  ASSERT_EQ(m.inputs.size(), 2u);
  EXPECT_EQ(m.inputs[0].name, "x");
  EXPECT_EQ(m.inputs[0].dtype, KILN_DTYPE_F32);
  EXPECT_EQ(m.inputs[0].dims, (std::vector<int64_t>{64, 784}));
  EXPECT_EQ(m.inputs[1].dtype, KILN_DTYPE_BOOL);
  EXPECT_TRUE(m.inputs[1].dims.empty());
  EXPECT_EQ(m.inputs[1].typeString(), "bool[scalar]");
  ASSERT_EQ(m.outputs.size(), 1u);
  EXPECT_EQ(m.outputs[0].typeString(), "f32[64x10]");
}

TEST(Manifest, EmptyFeaturesZeroDimsCrlfAndNoTrailingNewline) {
  Manifest m = parseManifest("kiln-artifact 1\r\nfeatures\r\ninput e u8 3x0x2\r\noutput n i64 scalar",
                             "model.kiln");
  EXPECT_TRUE(m.features.empty());
  EXPECT_EQ(m.inputs[0].dims, (std::vector<int64_t>{3, 0, 2}));
  EXPECT_EQ(m.outputs[0].name, "n");
  EXPECT_TRUE(m.outputs[0].dims.empty());
}

TEST(Manifest, TrainStepState) {
  Manifest m = parseManifest("kiln-artifact 1\n"
                             "input x f32 8x4\n"
                             "input w f32 4x3 state=parameter\n"
                             "input step i64 scalar state=step future=field\n"
                             "output loss f32 scalar\n"
                             "output w f32 4x3 state=parameter in-place\n"
                             "output step i64 scalar state=step\n",
                             "model.kiln");
  EXPECT_EQ(m.inputs[0].state, "");
  EXPECT_EQ(m.inputs[1].state, "parameter");
  EXPECT_EQ(m.inputs[2].state, "step");
  EXPECT_EQ(m.outputs[0].state, "");
  EXPECT_EQ(m.outputs[1].state, "parameter");
  // The step may write w's next value into w's own buffer; not step's.
  EXPECT_TRUE(m.outputs[1].inPlace);
  EXPECT_FALSE(m.outputs[2].inPlace);
  EXPECT_FALSE(m.inputs[1].inPlace);
  EXPECT_EQ(errorOf("kiln-artifact 1\ninput w f32 4x3 state=\n"),
            "model.kiln: manifest line 2: empty state kind for input 'w'");
}

TEST(Manifest, Entries) {
  Manifest m = parseManifest("kiln-artifact 1\n"
                             "input x f32 8x4\n"
                             "output loss f32 scalar\n"
                             "entry eval\n"
                             "entry-input eval x f32 8x4\n"
                             "entry-input eval w f32 4x3 state=parameter\n"
                             "entry-output eval y f32 8x3\n"
                             "entry init\n"
                             "entry-output init w f32 4x3 state=parameter\n",
                             "model.kiln");
  ASSERT_EQ(m.entries.size(), 2u);
  EXPECT_EQ(m.entries[0].name, "eval");
  ASSERT_EQ(m.entries[0].inputs.size(), 2u);
  EXPECT_EQ(m.entries[0].inputs[1].state, "parameter");
  EXPECT_EQ(m.entries[0].outputs[0].typeString(), "f32[8x3]");
  EXPECT_TRUE(m.entries[1].inputs.empty());
  EXPECT_EQ(m.entries[1].outputs[0].name, "w");
  EXPECT_EQ(errorOf("kiln-artifact 1\nentry-input eval x f32 8x4\n"),
            "model.kiln: manifest line 2: entry-input of entry 'eval', which no earlier 'entry' "
            "record declares");
  EXPECT_EQ(errorOf("kiln-artifact 1\nentry eval\nentry eval\n"),
            "model.kiln: manifest line 3: entry 'eval' is listed twice");
  EXPECT_EQ(errorOf("kiln-artifact 1\nentry eval\nentry-output eval y f32 2\nentry-output eval y f32 2\n"),
            "model.kiln: manifest line 4: duplicate entry-output name 'y' of entry 'eval'");
  EXPECT_EQ(errorOf("kiln-artifact 1\nentry eval\nentry-input eval x f99 2\n"),
            "model.kiln: manifest line 3: unknown dtype 'f99' for entry-input 'x'");
}

TEST(Manifest, RefusesOtherVersions) {
  EXPECT_THROW(parseManifest("kiln-artifact 2\nsomething new\n", "model.kiln"), ManifestVersionError);
  EXPECT_EQ(errorOf("kiln-artifact 2\n"),
            "model.kiln: artifact format version 2 is not supported by this runtime (reads version 1)");
  EXPECT_NE(errorOf("kiln-artifact one\n").find("bad format version 'one'"), std::string::npos);
  EXPECT_NE(errorOf("name mlp\nkiln-artifact 1\n").find("first line must be 'kiln-artifact <version>'"),
            std::string::npos);
  EXPECT_EQ(errorOf(""), "model.kiln: not a Kiln artifact manifest (first line must be "
                         "'kiln-artifact <version>', got '')");
}

TEST(Manifest, DecodesPercentEncodedNames) {
  Manifest m = parseManifest("kiln-artifact 1\ninput my%20input%25 f32 2\noutput caf%C3%A9 f32 2\n",
                             "model.kiln");
  EXPECT_EQ(m.inputs[0].name, "my input%");
  EXPECT_EQ(m.outputs[0].name, "caf\xc3\xa9");
  EXPECT_NE(errorOf("kiln-artifact 1\ninput a%2 f32 2\n").find("manifest line 2: bad percent-escape"),
            std::string::npos);
  EXPECT_NE(errorOf("kiln-artifact 1\ninput a%zz f32 2\n").find("bad percent-escape in 'a%zz'"),
            std::string::npos);
  EXPECT_EQ(kiln::rt::percentEncode("my input%\n"), "my%20input%25%0A");
  EXPECT_EQ(kiln::rt::percentDecode(kiln::rt::percentEncode("a b\xff%"), "x"), "a b\xff%");
}

TEST(Manifest, RefusesUnknownKeywordsIgnoresExtraTensorFields) {
  Manifest m = parseManifest("kiln-artifact 1\n"
                             "input x f32 2 layout=nchw\n"
                             "\n"
                             "output y f32 2\n",
                             "model.kiln");
  EXPECT_EQ(m.inputs.size(), 1u);
  EXPECT_EQ(m.outputs.size(), 1u);
  // A record this runtime does not know comes with a newer format version; in a version-1
  // manifest it is damage or tampering.
  try {
    parseManifest("kiln-artifact 1\ninput x f32 2\nplacement cpu:0\noutput y f32 2\n", "model.kiln");
    ADD_FAILURE() << "an unknown keyword was accepted";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "model.kiln: manifest line 3: unknown manifest keyword 'placement'");
  }
}

TEST(Manifest, IndexChecks) {
  Manifest m = parseManifest("kiln-artifact 1\ninput ids i64 3\noutput y f32 3x4\n"
                             "index-check 0 5 embed%20tokens\nindex-check 1 7 g\n",
                             "model.kiln");
  ASSERT_EQ(m.indexChecks.size(), 2u);
  EXPECT_EQ(m.indexChecks[0].size, 5);
  EXPECT_EQ(m.indexChecks[0].node, "embed tokens");
  EXPECT_EQ(m.indexChecks[1].id, 1);
  // Ids must count up from 0: the code reports a check by its id.
  EXPECT_THROW(parseManifest("kiln-artifact 1\nindex-check 1 5 g\n", "model.kiln"), Error);
  EXPECT_THROW(parseManifest("kiln-artifact 1\nindex-check 0 5\n", "model.kiln"), Error);
}

TEST(Manifest, ProfiledKernels) {
  Manifest m = parseManifest("kiln-artifact 1\ninput x f32 3\noutput y f32 3\n"
                             "profile-kernel 0 main parallel Conv#0%20->%20c,%20Relu#1%20->%20y\n"
                             "profile-kernel 1 eval serial add\n",
                             "model.kiln");
  ASSERT_EQ(m.profiledKernels.size(), 2u);
  EXPECT_EQ(m.profiledKernels[0].function, "main");
  EXPECT_EQ(m.profiledKernels[0].kind, "parallel");
  EXPECT_EQ(m.profiledKernels[0].nodes, "Conv#0 -> c, Relu#1 -> y");
  EXPECT_EQ(m.profiledKernels[1].function, "eval");
  // Ids count up from 0 (the code's counters are indexed by them); kinds are known ones.
  EXPECT_NE(errorOf("kiln-artifact 1\nprofile-kernel 1 main serial add\n").find("in order"), std::string::npos);
  EXPECT_NE(errorOf("kiln-artifact 1\nprofile-kernel 0 main fused add\n").find("parallel|serial|copy|call"),
            std::string::npos);
  EXPECT_NE(errorOf("kiln-artifact 1\nprofile-kernel 0 main serial\n").find("manifest line 2"), std::string::npos);
}

TEST(Manifest, ReportsBadRecordsWithLineNumbers) {
  EXPECT_EQ(errorOf("kiln-artifact 1\ninput x f33 2\n"),
            "model.kiln: manifest line 2: unknown dtype 'f33' for input 'x'");
  EXPECT_NE(errorOf("kiln-artifact 1\n\noutput y f32 3xx4\n").find("manifest line 3: bad dims '3xx4'"),
            std::string::npos);
  EXPECT_NE(errorOf("kiln-artifact 1\noutput y f32 -3\n").find("bad dims '-3'"), std::string::npos);
  EXPECT_NE(errorOf("kiln-artifact 1\ninput x f32\n").find("expected 'input NAME DTYPE DIMS'"),
            std::string::npos);
  EXPECT_NE(errorOf("kiln-artifact 1\ninput x f32 2\ninput x i32 2\n").find("duplicate input name 'x'"),
            std::string::npos);
  EXPECT_NE(errorOf("kiln-artifact 1\ninput x f32 99999999999x99999999999\n").find("too many elements"),
            std::string::npos);
  EXPECT_NE(errorOf("kiln-artifact 1\nname a b\n").find("expected 'name VALUE'"), std::string::npos);
}

TEST(Manifest, ParsesGpuRecords) {
  Manifest m = parseManifest("kiln-artifact 1\n"
                             "devices cpu cuda\n"
                             "cuda-cubin sm_80 sm_90a\n"
                             "cuda-ptx compute_80 7.8\n"
                             "cuda-min-driver 12000\n",
                             "model.kiln");
  EXPECT_EQ(m.devices, (std::vector<std::string>{"cpu", "cuda"}));
  EXPECT_TRUE(m.hasDevice("cuda"));
  EXPECT_EQ(m.deviceList(), "cpu,cuda");
  EXPECT_EQ(m.cudaCubins, (std::vector<std::string>{"sm_80", "sm_90a"}));
  EXPECT_EQ(m.cudaPtxTarget, "compute_80");
  EXPECT_EQ(m.cudaPtxIsa, "7.8");
  EXPECT_EQ(m.cudaMinDriver, 12000);

  // No devices record: a CPU artifact.
  Manifest cpu = parseManifest("kiln-artifact 1\ninput x f32 2\n", "model.kiln");
  EXPECT_EQ(cpu.devices, (std::vector<std::string>{"cpu"}));
  EXPECT_TRUE(cpu.cudaCubins.empty());
  EXPECT_TRUE(cpu.cudaPtxTarget.empty());
  EXPECT_EQ(cpu.cudaMinDriver, 0);
  EXPECT_EQ(parseManifest("kiln-artifact 1\ndevices cuda cuda\n", "model.kiln").deviceList(), "cuda");
}

TEST(Manifest, ReportsBadGpuRecords) {
  EXPECT_EQ(errorOf("kiln-artifact 1\ndevices\n"),
            "model.kiln: manifest line 2: expected 'devices KIND...' (e.g. 'devices cpu cuda')");
  EXPECT_EQ(errorOf("kiln-artifact 1\ncuda-cubin\n"), "model.kiln: manifest line 2: expected 'cuda-cubin sm_NN...'");
  EXPECT_EQ(errorOf("kiln-artifact 1\ncuda-cubin sm_90 compute_90\n"),
            "model.kiln: manifest line 2: bad cubin architecture 'compute_90' (expected sm_NN)");
  EXPECT_EQ(errorOf("kiln-artifact 1\ncuda-cubin sm_90 sm_90\n"),
            "model.kiln: manifest line 2: cubin architecture 'sm_90' listed twice");
  EXPECT_EQ(errorOf("kiln-artifact 1\ncuda-ptx compute_80\n"),
            "model.kiln: manifest line 2: expected 'cuda-ptx compute_NN ISA' (e.g. 'cuda-ptx compute_80 7.8')");
  EXPECT_EQ(errorOf("kiln-artifact 1\ncuda-ptx sm_80 7.8\n"),
            "model.kiln: manifest line 2: bad PTX architecture 'sm_80' (expected compute_NN)");
  for (const char *isa : {"78", "7.", ".8", "7.8.1", "v7.8", "7.100"})
    EXPECT_EQ(errorOf("kiln-artifact 1\ncuda-ptx compute_80 " + std::string(isa) + "\n"),
              "model.kiln: manifest line 2: bad PTX ISA version '" + std::string(isa) + "' (expected MAJOR.MINOR)");
  EXPECT_EQ(errorOf("kiln-artifact 1\ncuda-min-driver 12.0\n"),
            "model.kiln: manifest line 2: expected 'cuda-min-driver VERSION' (e.g. 12000 for CUDA 12.0)");
}

namespace {
// A model split over two CPUs: stage 0 on cpu:0 feeds stage 1 on cpu:1; the outputs come from
// stage 1 and straight from the input.
const char *kPartitioned = "kiln-artifact 1\n"
                           "devices partitioned\n"
                           "partition cpu:0 /job:localhost/replica:0/task:0/device:CPU:0\n"
                           "partition cpu:1 /job:localhost/replica:0/task:0/device:CPU:1\n"
                           "stage 0 cpu:0 1 input:0 1 f32 2x3\n"
                           "stage 1 cpu:1 2 stage:0:0 input:0 2 f32 2x3 i64 scalar\n"
                           "output-from stage:1:0\n"
                           "output-from input:0\n"
                           "input x f32 2x3\n"
                           "output y f32 2x3\n"
                           "output z f32 2x3\n";

std::string replaced(std::string text, const std::string &from, const std::string &to) {
  text.replace(text.find(from), from.size(), to);
  return text;
}
} // namespace

TEST(Manifest, ParsesPartitionRecords) {
  Manifest m = parseManifest(kPartitioned, "model.kiln");
  EXPECT_TRUE(m.hasDevice("partitioned"));
  ASSERT_EQ(m.partitions.size(), 2u);
  EXPECT_EQ(m.partitions[1].name, "cpu:1");
  EXPECT_EQ(m.partitions[1].fullName, "/job:localhost/replica:0/task:0/device:CPU:1");
  ASSERT_EQ(m.stages.size(), 2u);
  EXPECT_EQ(m.stages[1].device, "cpu:1");
  ASSERT_EQ(m.stages[1].args.size(), 2u);
  EXPECT_EQ(m.stages[1].args[0].kind, kiln::rt::StageValueRef::Kind::Stage);
  EXPECT_EQ(m.stages[1].args[0].index, 0);
  EXPECT_EQ(m.stages[1].args[1].kind, kiln::rt::StageValueRef::Kind::Input);
  ASSERT_EQ(m.stages[1].results.size(), 2u);
  EXPECT_EQ(m.stages[1].results[1].dtype, KILN_DTYPE_I64);
  EXPECT_TRUE(m.stages[1].results[1].dims.empty());
  ASSERT_EQ(m.outputSources.size(), 2u);
  EXPECT_EQ(m.outputSources[1].kind, kiln::rt::StageValueRef::Kind::Input);
}

TEST(Manifest, UnsignedOutputsOverSignlessStageResults) {
  // Stage results are signless: an output may read a stage's i64 as u64, but not as u32.
  std::string text = replaced(replaced(kPartitioned, "output-from stage:1:0", "output-from stage:1:1"),
                              "output y f32 2x3", "output y u64 scalar");
  Manifest m = parseManifest(text, "model.kiln");
  EXPECT_EQ(m.outputs[0].dtype, KILN_DTYPE_U64);
  EXPECT_NE(errorOf(replaced(text, "output y u64 scalar", "output y u32 scalar"))
                .find("output 'y' is u32[scalar] but its source is i64[scalar]"),
            std::string::npos);
}

TEST(Manifest, ReportsBadPartitionRecords) {
  // A stage that reads a later stage could deadlock; the parser refuses it.
  EXPECT_NE(errorOf(replaced(kPartitioned, "stage 0 cpu:0 1 input:0", "stage 0 cpu:0 1 stage:1:0"))
                .find("stage 0: stage 1 does not come before it"),
            std::string::npos);
  EXPECT_NE(errorOf(replaced(kPartitioned, "stage:0:0 input:0", "stage:0:5 input:0"))
                .find("stage 1: stage 0 has no result 5"),
            std::string::npos);
  EXPECT_NE(errorOf(replaced(kPartitioned, "1 input:0 1 f32", "1 input:7 1 f32")).find("input 7 does not exist"),
            std::string::npos);
  EXPECT_NE(errorOf(replaced(kPartitioned, "stage 1 cpu:1", "stage 1 cpu:5")).find("device 'cpu:5' has no partition"),
            std::string::npos);
  EXPECT_NE(errorOf(replaced(kPartitioned, "stage 1 cpu:1", "stage 3 cpu:1")).find("manifest line 6: expected 'stage"),
            std::string::npos);
  EXPECT_NE(errorOf(replaced(kPartitioned, "output-from input:0\n", "")).find("1 output-from records for 2 outputs"),
            std::string::npos);
  EXPECT_NE(errorOf(replaced(kPartitioned, "output-from stage:1:0", "output-from stage:1:1"))
                .find("output 'y' is f32[2x3] but its source is i64"),
            std::string::npos);
  EXPECT_NE(errorOf(replaced(kPartitioned, "input:0 1 f32 2x3\n", "input:0 1 f33 2x3\n")).find("bad result type"),
            std::string::npos);
  EXPECT_NE(errorOf(replaced(kPartitioned, "stage:0:0 input:0", "stage:0 input:0")).find("bad stage argument 'stage:0'"),
            std::string::npos);
  for (const char *bad : {"tpu:1", "cpu:x", "cpu:01", "cpu:", "cpu:99999999999"})
    EXPECT_NE(errorOf(replaced(kPartitioned, "partition cpu:1", std::string("partition ") + bad))
                  .find(std::string("bad partition device '") + bad + "'"),
              std::string::npos)
        << bad;
  EXPECT_NE(errorOf(replaced(kPartitioned, "devices partitioned", "devices cpu")).find("'devices' does not list partitioned"),
            std::string::npos);
}
