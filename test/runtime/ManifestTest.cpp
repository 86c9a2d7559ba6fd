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

TEST(Manifest, IgnoresUnknownKeywordsAndExtraTensorFields) {
  Manifest m = parseManifest("kiln-artifact 1\n"
                             "placement cpu:0\n"
                             "input x f32 2 layout=nchw\n"
                             "\n"
                             "checksum 1234abcd\n"
                             "output y f32 2\n",
                             "model.kiln");
  EXPECT_EQ(m.inputs.size(), 1u);
  EXPECT_EQ(m.outputs.size(), 1u);
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
