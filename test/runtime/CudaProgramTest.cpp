// Tests for the GPU parts that need no GPU: device strings, the program parser, the choice of GPU code.
#include "kiln/cuda_program.h"

#include <gtest/gtest.h>

using kiln::rt::BufferRef;
using kiln::rt::chooseCudaImage;
using kiln::rt::CudaCopy;
using kiln::rt::CudaImageChoice;
using kiln::rt::CudaLaunch;
using kiln::rt::CudaMatmul;
using kiln::rt::CudaProgram;
using kiln::rt::CudaProgramVersionError;
using kiln::rt::DeviceSpec;
using kiln::rt::Error;
using kiln::rt::Manifest;
using kiln::rt::parseCudaProgram;
using kiln::rt::parseDeviceString;

namespace {

// x: f32[64x784] (200704 bytes), flag: bool scalar; y: f32[64x10] (2560 bytes), n: i64 scalar.
Manifest signature() {
  return kiln::rt::parseManifest("kiln-artifact 1\n"
                                 "devices cuda\n"
                                 "input x f32 64x784\n"
                                 "input flag bool scalar\n"
                                 "output y f32 64x10\n"
                                 "output n i64 scalar\n",
                                 "model.kiln");
}

const char kHeader[] = "kiln-cuda-program 1\narena 1024\nconstants 65536\n";

CudaProgram parse(const std::string &body) { return parseCudaProgram(kHeader + body, "model.kiln", signature()); }

// The error for `body` after the header (so a body's first line is program line 4).
std::string errorOf(const std::string &text, bool withHeader = true) {
  try {
    parseCudaProgram(withHeader ? kHeader + text : text, "model.kiln", signature());
  } catch (const Error &e) {
    return e.what();
  }
  return "no error";
}

const char kLaunch[] = "launch kernel=k grid=1,1,1 block=32,1,1 shared=0 args=in:0 node=n";
const char kMatmul[] = "matmul dtype=f32 math=f32 batch=1 m=64 n=10 k=784 lhs=in:0 lhs_t=0 lhs_batched=0 "
                       "rhs=const:0 rhs_t=0 rhs_batched=0 out=out:0 bias=- addend=- epilogue=none node=g";

// kMatmul with one field replaced (or removed when `value` is empty and `remove` is set).
std::string matmulWith(const std::string &key, const std::string &value, bool remove = false) {
  std::string text = kMatmul;
  std::size_t at = text.find(" " + key + "=");
  std::size_t end = text.find(' ', at + 1);
  if (end == std::string::npos)
    end = text.size();
  text.replace(at, end - at, remove ? "" : " " + key + "=" + value);
  return text;
}

} // namespace

// --- Device strings ------------------------------------------------------------------------------

TEST(DeviceString, ParsesCpuGpuAndIndices) {
  EXPECT_EQ(parseDeviceString("")->kind, DeviceSpec::Kind::Default);
  EXPECT_EQ(parseDeviceString("cpu")->kind, DeviceSpec::Kind::Cpu);
  std::optional<DeviceSpec> gpu = parseDeviceString("gpu");
  ASSERT_TRUE(gpu);
  EXPECT_EQ(gpu->kind, DeviceSpec::Kind::Gpu);
  EXPECT_EQ(gpu->index, 0);
  EXPECT_EQ(parseDeviceString("gpu:0")->index, 0);
  EXPECT_EQ(parseDeviceString("gpu:3")->index, 3);
  EXPECT_EQ(parseDeviceString("gpu:12")->index, 12);
  for (const char *bad : {"GPU", "gpu:", "gpu:-1", "gpu:x", "gpu:1x", "gpu:01", "gpu:99999999999", "cuda",
                          "cuda:0", "cpu:0", " gpu", "gpu0", "tpu"})
    EXPECT_FALSE(parseDeviceString(bad)) << bad;
}

// --- Architectures, PTX ISA, driver versions -----------------------------------------------------

TEST(CudaArch, ParsesSmAndCompute) {
  std::optional<kiln::rt::CudaArch> sm90 = kiln::rt::parseCudaArch("sm_90", "sm_");
  ASSERT_TRUE(sm90);
  EXPECT_EQ(sm90->major, 9);
  EXPECT_EQ(sm90->minor, 0);
  EXPECT_EQ(sm90->name("sm_"), "sm_90");
  EXPECT_EQ(kiln::rt::parseCudaArch("sm_90a", "sm_")->suffix, 'a');
  EXPECT_EQ(kiln::rt::parseCudaArch("sm_120", "sm_")->major, 12);
  EXPECT_EQ(kiln::rt::parseCudaArch("compute_86", "compute_")->minor, 6);
  for (const char *bad : {"sm90", "sm_", "sm_9", "sm_090", "sm_90b", "compute_80", "sm_x0", "sm_12345"})
    EXPECT_FALSE(kiln::rt::parseCudaArch(bad, "sm_")) << bad;
}

TEST(CudaArch, PtxIsaNeedsTheDriverThatIntroducedIt) {
  EXPECT_EQ(kiln::rt::ptxIsaMinDriver(7, 8), 11080);
  EXPECT_EQ(kiln::rt::ptxIsaMinDriver(8, 0), 12000);
  EXPECT_EQ(kiln::rt::ptxIsaMinDriver(8, 5), 12050);
  EXPECT_EQ(kiln::rt::ptxIsaMinDriver(8, 6), 12070); // there was no CUDA 12.6 ISA of its own
  EXPECT_EQ(kiln::rt::ptxIsaMinDriver(8, 8), 12090);
  EXPECT_EQ(kiln::rt::ptxIsaMinDriver(9, 0), 13000);
  EXPECT_EQ(kiln::rt::ptxIsaMinDriver(5, 0), 9000); // older than the table: any supported driver
  EXPECT_EQ(kiln::rt::ptxIsaMinDriver(9, 9), 0);    // newer than this runtime: the driver decides
  EXPECT_EQ(kiln::rt::formatDriverVersion(13000), "13.0");
  EXPECT_EQ(kiln::rt::formatDriverVersion(12080), "12.8");
}

// --- Image choice --------------------------------------------------------------------------------

TEST(ImageChoice, ExactCubinFirst) {
  CudaImageChoice choice = chooseCudaImage(9, 0, 13000, {"sm_80", "sm_90"}, "compute_80", "7.8");
  EXPECT_EQ(choice.kind, CudaImageChoice::Kind::Cubin);
  EXPECT_EQ(choice.arch, "sm_90");
  // The arch-specific cubin runs on its own SM.
  EXPECT_EQ(chooseCudaImage(9, 0, 13000, {"sm_90a"}, "", "").arch, "sm_90a");
}

TEST(ImageChoice, SameMajorLowerMinorIsBinaryCompatible) {
  CudaImageChoice choice = chooseCudaImage(8, 6, 12000, {"sm_80", "sm_75", "sm_90"}, "", "");
  EXPECT_EQ(choice.kind, CudaImageChoice::Kind::Cubin);
  EXPECT_EQ(choice.arch, "sm_80");
  EXPECT_EQ(chooseCudaImage(8, 9, 12000, {"sm_80", "sm_86"}, "", "").arch, "sm_86");
  // Never a higher minor, never another major, never arch-specific code on another SM.
  EXPECT_EQ(chooseCudaImage(8, 0, 12000, {"sm_86"}, "", "").kind, CudaImageChoice::Kind::None);
  EXPECT_EQ(chooseCudaImage(10, 0, 12080, {"sm_90"}, "", "").kind, CudaImageChoice::Kind::None);
  EXPECT_EQ(chooseCudaImage(9, 1, 13000, {"sm_90a"}, "", "").kind, CudaImageChoice::Kind::None);
}

TEST(ImageChoice, PtxForNewerGpus) {
  CudaImageChoice choice = chooseCudaImage(12, 0, 12080, {"sm_80", "sm_90"}, "compute_80", "7.8");
  EXPECT_EQ(choice.kind, CudaImageChoice::Kind::Ptx);
  EXPECT_EQ(choice.arch, "compute_80");
  // The same major without a fitting cubin also takes the PTX.
  EXPECT_EQ(chooseCudaImage(8, 0, 12000, {"sm_86"}, "compute_80", "7.8").kind, CudaImageChoice::Kind::Ptx);
  // A PTX ISA newer than this runtime knows is left to the driver.
  EXPECT_EQ(chooseCudaImage(9, 0, 13000, {}, "compute_90", "9.9").kind, CudaImageChoice::Kind::Ptx);
}

TEST(ImageChoice, PtxNeedingANewerDriver) {
  CudaImageChoice choice = chooseCudaImage(12, 0, 12040, {"sm_90"}, "compute_80", "8.5");
  EXPECT_EQ(choice.kind, CudaImageChoice::Kind::None);
  EXPECT_EQ(choice.refusal, "the artifact has code for sm_90 and PTX for compute_80 of PTX ISA 8.5, which needs "
                            "a CUDA 12.5 driver; this driver is CUDA 12.4 (update the NVIDIA driver or recompile "
                            "with kilnc --target=cuda:sm_120)");
  EXPECT_EQ(chooseCudaImage(12, 0, 12050, {"sm_90"}, "compute_80", "8.5").kind, CudaImageChoice::Kind::Ptx);
}

TEST(ImageChoice, NothingFits) {
  EXPECT_EQ(chooseCudaImage(8, 0, 13000, {"sm_90"}, "", "").refusal,
            "the artifact has code for sm_90 only and no PTX (recompile with kilnc --target=cuda:sm_80)");
  EXPECT_EQ(chooseCudaImage(7, 5, 13000, {"sm_80", "sm_86", "sm_90"}, "", "").refusal,
            "the artifact has code for sm_80, sm_86 and sm_90 only and no PTX (recompile with kilnc "
            "--target=cuda:sm_75)");
  EXPECT_EQ(chooseCudaImage(8, 0, 13000, {"sm_90"}, "compute_90", "8.0").refusal,
            "the artifact has code for sm_90 and PTX for compute_90, newer than the GPU (recompile with kilnc "
            "--target=cuda:sm_80)");
  EXPECT_EQ(chooseCudaImage(8, 0, 13000, {}, "compute_90", "8.0").refusal,
            "the artifact has PTX for compute_90, newer than the GPU (recompile with kilnc --target=cuda:sm_80)");
  EXPECT_EQ(chooseCudaImage(9, 0, 13000, {}, "", "").refusal,
            "the artifact has no GPU code and no PTX (recompile with kilnc --target=cuda:sm_90)");
  // Arch-specific PTX compiles for its own SM only.
  EXPECT_EQ(chooseCudaImage(10, 0, 13000, {}, "compute_90a", "8.0").kind, CudaImageChoice::Kind::None);
}

// --- The program ---------------------------------------------------------------------------------

TEST(CudaProgram, ParsesEveryRecord) {
  CudaProgram program = parseCudaProgram(
      "# written by kilnc\n"
      "\n"
      "kiln-cuda-program 1\r\n"
      "arena 1048576\n"
      "constants 4198400\n"
      "launch kernel=kiln_k0 grid=128,2,1 block=256,1,1 shared=0 args=in:0,const:0,arena:0 node=Conv_0\n"
      "  # a comment after leading blanks\n"
      "matmul dtype=f32 math=tf32 batch=1 m=64 n=10 k=784 lhs=in:0 lhs_t=0 lhs_batched=0 rhs=const:3211264 "
      "rhs_t=1 rhs_batched=0 out=arena:0 bias=const:3211264 addend=- epilogue=relu node=Gemm%200\n"
      "copy dst=out:0 src=arena:256 bytes=2560 node=Identity_0\n"
      "launch node=empty kernel=kiln_k1 grid=1,1,1 block=1,1,1 shared=49152 args=\n",
      "model.kiln", signature());
  EXPECT_EQ(program.version, 1);
  EXPECT_EQ(program.arenaBytes, 1048576u);
  EXPECT_EQ(program.constantBytes, 4198400u);
  ASSERT_EQ(program.records.size(), 4u);
  EXPECT_EQ(program.launches(), 2u);
  EXPECT_EQ(program.matmuls(), 1u);
  EXPECT_EQ(program.copies(), 1u);

  const auto &launch = std::get<CudaLaunch>(program.records[0].op);
  EXPECT_EQ(program.records[0].line, 6);
  EXPECT_EQ(program.records[0].node, "Conv_0");
  EXPECT_EQ(launch.kernel, "kiln_k0");
  EXPECT_EQ(launch.grid[0], 128u);
  EXPECT_EQ(launch.grid[1], 2u);
  EXPECT_EQ(launch.block[0], 256u);
  ASSERT_EQ(launch.args.size(), 3u);
  EXPECT_EQ(launch.args[0].kind, BufferRef::Kind::Input);
  EXPECT_EQ(launch.args[1].str(), "const:0");
  EXPECT_EQ(launch.args[2].str(), "arena:0");
  EXPECT_EQ(program.records[0].describe(), "kernel 'kiln_k0' (program line 6, node=Conv_0)");

  const auto &matmul = std::get<CudaMatmul>(program.records[1].op);
  EXPECT_EQ(program.records[1].node, "Gemm 0");
  EXPECT_EQ(matmul.dtype, KILN_DTYPE_F32);
  EXPECT_EQ(matmul.math, CudaMatmul::Math::TF32);
  EXPECT_EQ(matmul.m, 64);
  EXPECT_EQ(matmul.n, 10);
  EXPECT_EQ(matmul.k, 784);
  EXPECT_TRUE(matmul.rhsTransposed);
  EXPECT_FALSE(matmul.lhsTransposed);
  EXPECT_EQ(matmul.bias.value, 3211264u);
  EXPECT_EQ(matmul.addend.kind, BufferRef::Kind::None);
  EXPECT_EQ(matmul.epilogue, CudaMatmul::Epilogue::Relu);
  EXPECT_EQ(program.records[1].describe(), "matmul (program line 8, node=Gemm 0)");

  // node= is optional: kilnc leaves it out where no ONNX node made the record.
  CudaProgram unnamed = parse("copy dst=out:0 src=const:0 bytes=24\n");
  EXPECT_EQ(unnamed.records[0].node, "");
  EXPECT_EQ(unnamed.records[0].describe(), "copy (program line 4)");

  const auto &copy = std::get<CudaCopy>(program.records[2].op);
  EXPECT_EQ(copy.dst.kind, BufferRef::Kind::Output);
  EXPECT_EQ(copy.src.value, 256u);
  EXPECT_EQ(copy.bytes, 2560u);

  const auto &empty = std::get<CudaLaunch>(program.records[3].op);
  EXPECT_TRUE(empty.args.empty());
  EXPECT_EQ(empty.sharedBytes, 49152u);
}

TEST(CudaProgram, HalfPrecisionBatchesAndAddend) {
  // z: f16[4x8x16] from lhs f16[4x8x32] (batched, stored transposed) and one shared rhs f16[32x16].
  Manifest manifest = kiln::rt::parseManifest(
      "kiln-artifact 1\ninput a f16 4x32x8\ninput c f16 4x8x16\noutput z f16 4x8x16\n", "model.kiln");
  CudaProgram program = parseCudaProgram(
      "kiln-cuda-program 1\narena 0\nconstants 1024\n"
      "matmul dtype=f16 math=f32 batch=4 m=8 n=16 k=32 lhs=in:0 lhs_t=1 lhs_batched=1 rhs=const:0 rhs_t=0 "
      "rhs_batched=0 out=out:0 bias=- addend=in:1 epilogue=none node=MatMul\n",
      "model.kiln", manifest);
  const auto &matmul = std::get<CudaMatmul>(program.records[0].op);
  EXPECT_EQ(matmul.dtype, KILN_DTYPE_F16);
  EXPECT_EQ(matmul.batch, 4);
  EXPECT_TRUE(matmul.lhsBatched);
  EXPECT_EQ(matmul.addend.str(), "in:1");
  // The same with a batched rhs needs 4 x 32 x 16 halves of constants, more than there are.
  try {
    parseCudaProgram("kiln-cuda-program 1\narena 0\nconstants 1024\n"
                     "matmul dtype=bf16 math=f32 batch=4 m=8 n=16 k=32 lhs=in:0 lhs_t=1 lhs_batched=1 rhs=const:0 "
                     "rhs_t=0 rhs_batched=1 out=out:0 bias=- addend=- epilogue=none node=MatMul\n",
                     "model.kiln", manifest);
    FAIL();
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "model.kiln: cuda program line 4: rhs= const:0 needs 4096 bytes, but the constants "
                           "has 1024");
  }
}

TEST(CudaProgram, HeaderErrors) {
  EXPECT_EQ(errorOf("", false), "model.kiln: cuda program is empty (expected 'kiln-cuda-program 1')");
  EXPECT_EQ(errorOf("arena 0\n", false),
            "model.kiln: cuda program line 1: expected 'kiln-cuda-program VERSION' first, got 'arena 0'");
  EXPECT_EQ(errorOf("kiln-cuda-program one\n", false), "model.kiln: cuda program line 1: bad program version 'one'");
  EXPECT_THROW(parseCudaProgram("kiln-cuda-program 2\nfuture stuff\n", "model.kiln", signature()),
               CudaProgramVersionError);
  EXPECT_EQ(errorOf("kiln-cuda-program 2\n", false),
            "model.kiln: cuda program version 2 is not supported by this runtime (reads version 1)");
  EXPECT_EQ(errorOf("kiln-cuda-program 1\nconstants 0\n", false), "model.kiln: cuda program has no 'arena' record");
  EXPECT_EQ(errorOf("kiln-cuda-program 1\narena 0\n", false), "model.kiln: cuda program has no 'constants' record");
  EXPECT_EQ(errorOf("arena 5\n"), "model.kiln: cuda program line 4: duplicate 'arena' record");
  EXPECT_EQ(errorOf("kiln-cuda-program 1\n"), "model.kiln: cuda program line 4: second 'kiln-cuda-program' header");
  EXPECT_EQ(errorOf("kiln-cuda-program 1\narena -1\n", false), "model.kiln: cuda program line 2: expected 'arena BYTES'");
  EXPECT_EQ(errorOf("kiln-cuda-program 1\narena 1 2\n", false), "model.kiln: cuda program line 2: expected 'arena BYTES'");
}

TEST(CudaProgram, RecordAndFieldErrors) {
  EXPECT_EQ(errorOf("lunch kernel=k\n"), "model.kiln: cuda program line 4: unknown record 'lunch'");
  EXPECT_EQ(errorOf("\n\nlaunch kernel=k\n"), "model.kiln: cuda program line 6: missing field 'grid='");
  EXPECT_EQ(errorOf(std::string(kLaunch) + " grid=2,1,1\n"), "model.kiln: cuda program line 4: duplicate field 'grid'");
  EXPECT_EQ(errorOf(std::string(kLaunch) + " colour=red\n"),
            "model.kiln: cuda program line 4: unknown field 'colour' in 'launch'");
  EXPECT_EQ(errorOf(std::string(kLaunch) + " stray\n"), "model.kiln: cuda program line 4: expected KEY=VALUE, got 'stray'");
  EXPECT_EQ(errorOf(std::string(kLaunch) + " =x\n"), "model.kiln: cuda program line 4: expected KEY=VALUE, got '=x'");
  EXPECT_EQ(errorOf("launch kernel=k grid=1,1,1 block=32,1,1 args=in:0 node=n\n"),
            "model.kiln: cuda program line 4: missing field 'shared='");
  EXPECT_EQ(errorOf("launch kernel= grid=1,1,1 block=1,1,1 shared=0 args= node=n\n"),
            "model.kiln: cuda program line 4: kernel= names no kernel");
  EXPECT_EQ(errorOf("launch kernel=k grid=1,1,1 block=1,1,1 shared=0 args= node=a%2\n"),
            "model.kiln: cuda program line 4: bad percent-escape in 'a%2'");
  EXPECT_EQ(errorOf("copy dst=out:0 src=in:0 node=c\n"), "model.kiln: cuda program line 4: missing field 'bytes='");
}

// Strided matrices (heads of attention read in place) and a scale: row and batch strides in
// elements, checked against the buffers they reach into.
TEST(CudaProgram, StridesAndAlpha) {
  Manifest manifest = kiln::rt::parseManifest(
      "kiln-artifact 1\ninput q f32 128x256\ninput k f32 128x256\noutput s f32 4x128x128\n", "model.kiln");
  const std::string heads = "matmul dtype=f32 math=f32 batch=4 m=128 n=128 k=64 lhs=in:0 lhs_t=0 lhs_batched=1 "
                            "rhs=in:1 rhs_t=1 rhs_batched=1 out=out:0 bias=- addend=- epilogue=none "
                            "lhs_ld=256 lhs_batch_stride=64 rhs_ld=256 rhs_batch_stride=64 alpha=0.125 node=QK\n";
  CudaProgram program = parseCudaProgram("kiln-cuda-program 1\narena 0\nconstants 0\n" + heads, "model.kiln",
                                         manifest);
  const auto &matmul = std::get<CudaMatmul>(program.records[0].op);
  EXPECT_EQ(matmul.lhsLd, 256);
  EXPECT_EQ(matmul.lhsBatchStride, 64);
  EXPECT_EQ(matmul.rhsLd, 256);
  EXPECT_EQ(matmul.outLd, 128) << "dense when absent";
  EXPECT_EQ(matmul.outBatchStride, 128 * 128);
  EXPECT_FLOAT_EQ(matmul.alpha, 0.125f);

  auto error = [&](const std::string &line) {
    try {
      parseCudaProgram("kiln-cuda-program 1\narena 0\nconstants 0\n" + line, "model.kiln", manifest);
    } catch (const Error &e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // A batch stride of 256 puts the last head's rows past the 128x256 input.
  std::string far = heads;
  far.replace(far.find("lhs_batch_stride=64"), 19, "lhs_batch_stride=256");
  EXPECT_EQ(error(far), "model.kiln: cuda program line 4: lhs= in:0 needs 133376 bytes, but input 0 'q' has 131072");
  std::string narrow = heads;
  narrow.replace(narrow.find("lhs_ld=256"), 10, "lhs_ld=32");
  EXPECT_EQ(error(narrow), "model.kiln: cuda program line 4: lhs_ld=32 is less than the 64 elements of a row");
  std::string nan = heads;
  nan.replace(nan.find("alpha=0.125"), 11, "alpha=nan");
  EXPECT_EQ(error(nan), "model.kiln: cuda program line 4: alpha= must be a finite number, got 'nan'");
}

TEST(CudaProgram, NumberErrors) {
  for (const char *grid : {"1,1", "1,1,1,1", "0,1,1", "1,,1", "a,1,1", "4294967296,1,1", "-1,1,1", "1,1,1,"}) {
    std::string line = "launch kernel=k grid=" + std::string(grid) + " block=1,1,1 shared=0 args= node=n\n";
    EXPECT_EQ(errorOf(line), "model.kiln: cuda program line 4: grid= expects three positive integers X,Y,Z, got '" +
                                 std::string(grid) + "'")
        << grid;
  }
  EXPECT_EQ(errorOf("launch kernel=k grid=1,1,1 block=1,1,1 shared=-4 args= node=n\n"),
            "model.kiln: cuda program line 4: bad number '-4' for shared=");
  EXPECT_EQ(errorOf("launch kernel=k grid=1,1,1 block=1,1,1 shared=4294967296 args= node=n\n"),
            "model.kiln: cuda program line 4: shared=4294967296 is out of range [0, 4294967295]");
  EXPECT_EQ(errorOf(matmulWith("m", "0") + "\n"), "model.kiln: cuda program line 4: m=0 is out of range [1, 2147483647]");
  EXPECT_EQ(errorOf(matmulWith("k", "1e3") + "\n"), "model.kiln: cuda program line 4: bad number '1e3' for k=");
  EXPECT_EQ(errorOf(matmulWith("batch", "99999999999999999999999") + "\n"),
            "model.kiln: cuda program line 4: bad number '99999999999999999999999' for batch=");
  EXPECT_EQ(errorOf(matmulWith("lhs_t", "yes") + "\n"), "model.kiln: cuda program line 4: lhs_t= must be 0 or 1, got 'yes'");
  EXPECT_EQ(errorOf(matmulWith("dtype", "f64") + "\n"),
            "model.kiln: cuda program line 4: dtype= must be f32, f16 or bf16, got 'f64'");
  EXPECT_EQ(errorOf(matmulWith("math", "fast") + "\n"), "model.kiln: cuda program line 4: math= must be f32 or tf32, got 'fast'");
  EXPECT_EQ(errorOf(matmulWith("epilogue", "gelu") + "\n"),
            "model.kiln: cuda program line 4: epilogue= must be none or relu, got 'gelu'");
  EXPECT_EQ(errorOf(matmulWith("rhs_batched", "", true) + "\n"),
            "model.kiln: cuda program line 4: missing field 'rhs_batched='");
}

TEST(CudaProgram, BufferReferenceErrors) {
  EXPECT_EQ(errorOf("launch kernel=k grid=1,1,1 block=1,1,1 shared=0 args=in:0,heap:0 node=n\n"),
            "model.kiln: cuda program line 4: unknown buffer kind 'heap' in 'heap:0' for argument 1 (expected in, "
            "out, arena or const)");
  EXPECT_EQ(errorOf("launch kernel=k grid=1,1,1 block=1,1,1 shared=0 args=in:0, node=n\n"),
            "model.kiln: cuda program line 4: bad buffer reference '' for argument 1 (expected in:I, out:I, "
            "arena:OFFSET, const:OFFSET)");
  EXPECT_EQ(errorOf("launch kernel=k grid=1,1,1 block=1,1,1 shared=0 args=arena node=n\n"),
            "model.kiln: cuda program line 4: bad buffer reference 'arena' for argument 0 (expected in:I, out:I, "
            "arena:OFFSET, const:OFFSET)");
  EXPECT_EQ(errorOf("launch kernel=k grid=1,1,1 block=1,1,1 shared=0 args=- node=n\n"),
            "model.kiln: cuda program line 4: argument 0 needs a buffer, got '-'");
  EXPECT_EQ(errorOf(matmulWith("bias", "const") + "\n"),
            "model.kiln: cuda program line 4: bad buffer reference 'const' for bias= (expected in:I, out:I, "
            "arena:OFFSET, const:OFFSET or -)");
  EXPECT_EQ(errorOf(matmulWith("out", "-") + "\n"), "model.kiln: cuda program line 4: out= needs a buffer, got '-'");
  // Indices and offsets are checked after the whole program is read, against the signature.
  EXPECT_EQ(errorOf("launch kernel=k grid=1,1,1 block=1,1,1 shared=0 args=in:2 node=n\n"),
            "model.kiln: cuda program line 4: argument 0 in:2: the artifact has 2 inputs");
  EXPECT_EQ(errorOf("launch kernel=k grid=1,1,1 block=1,1,1 shared=0 args=out:0,out:5 node=n\n"),
            "model.kiln: cuda program line 4: argument 1 out:5: the artifact has 2 outputs");
  EXPECT_EQ(errorOf("launch kernel=k grid=1,1,1 block=1,1,1 shared=0 args=arena:1024 node=n\n"),
            "model.kiln: cuda program line 4: argument 0 arena:1024 lies outside the arena (1024 bytes)");
  EXPECT_EQ(errorOf("launch kernel=k grid=1,1,1 block=1,1,1 shared=0 args=const:100 node=n\n"),
            "model.kiln: cuda program line 4: argument 0 const:100: offset is not a multiple of 256");
}

TEST(CudaProgram, ExtentErrors) {
  // x is 64 x 784 f32 = 200704 bytes; y is 64 x 10 f32 = 2560 bytes.
  EXPECT_EQ(errorOf(matmulWith("k", "785") + "\n"),
            "model.kiln: cuda program line 4: lhs= in:0 needs 200960 bytes, but input 0 'x' has 200704");
  EXPECT_EQ(errorOf(matmulWith("rhs", "const:40960") + "\n"),
            "model.kiln: cuda program line 4: rhs= const:40960 needs 31360 bytes, but the constants has 65536 (24576 "
            "from that offset)");
  EXPECT_EQ(errorOf(matmulWith("out", "out:1") + "\n"),
            "model.kiln: cuda program line 4: out= out:1 needs 2560 bytes, but output 1 'n' has 8");
  EXPECT_EQ(errorOf(matmulWith("out", "const:0") + "\n"),
            "model.kiln: cuda program line 4: out=const:0: the constants are read-only");
  EXPECT_EQ(errorOf(matmulWith("bias", "arena:1024") + "\n"),
            "model.kiln: cuda program line 4: bias= arena:1024 needs 40 bytes, but the arena has 1024 (0 from that "
            "offset)");
  EXPECT_EQ(errorOf(matmulWith("addend", "arena:0") + "\n"),
            "model.kiln: cuda program line 4: addend= arena:0 needs 2560 bytes, but the arena has 1024");
  EXPECT_EQ(errorOf(matmulWith("batch", "2") + "\n"),
            "model.kiln: cuda program line 4: out= out:0 needs 5120 bytes, but output 0 'y' has 2560");
  EXPECT_EQ(errorOf("copy dst=out:0 src=in:0 bytes=2564 node=c\n"),
            "model.kiln: cuda program line 4: dst= out:0 needs 2564 bytes, but output 0 'y' has 2560");
  EXPECT_EQ(errorOf("copy dst=arena:768 src=in:1 bytes=2 node=c\n"),
            "model.kiln: cuda program line 4: src= in:1 needs 2 bytes, but input 1 'flag' has 1");
  EXPECT_EQ(errorOf("copy dst=const:0 src=in:0 bytes=4 node=c\n"),
            "model.kiln: cuda program line 4: dst=const:0: the constants are read-only");
  EXPECT_EQ(errorOf("copy dst=arena:1280 src=in:0 bytes=0 node=c\n"),
            "model.kiln: cuda program line 4: dst= arena:1280 needs 0 bytes, but the arena has 1024 (0 from that "
            "offset)");
  // The second record is wrong; the error names its line even though the first was fine.
  EXPECT_EQ(errorOf(std::string(kMatmul) + "\ncopy dst=out:1 src=in:0 bytes=9 node=c\n"),
            "model.kiln: cuda program line 5: dst= out:1 needs 9 bytes, but output 1 'n' has 8");
  // A zero-byte copy at the end of a region is fine.
  EXPECT_EQ(parse("copy dst=arena:1024 src=in:0 bytes=0 node=c\n").copies(), 1u);
}
