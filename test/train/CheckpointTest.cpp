// Checkpoints: round trip, corruption found by name, atomic writes that fail
// without losing what was there, the directory's retention.
#include "kiln/train/checkpoint.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstring>
#include <filesystem>
#include <sys/resource.h>
#include <unistd.h>

namespace kiln::train {
namespace {

using rt::Error;
using rt::Tensor;

/// Whether `dir` holds a temporary file of rt::replaceAtomically.
bool hasTemporaryFile(const std::string &dir) {
  for (const auto &entry : std::filesystem::directory_iterator(dir))
    if (entry.path().filename().string().find(".tmp.") != std::string::npos)
      return true;
  return false;
}

class CheckpointTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "kiln-ckpt-" + std::to_string(getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::system(("rm -rf '" + dir_ + "' && mkdir -p '" + dir_ + "'").c_str());
    w_ = Tensor(KILN_DTYPE_F32, {2, 3}, "fc/w");
    for (int i = 0; i < 6; ++i)
      w_.dataAs<float>()[i] = 0.25f * i - 1.0f;
    step_ = Tensor(KILN_DTYPE_I64, {}, "step");
    step_.dataAs<int64_t>()[0] = 1234;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  std::string dir_;
  Tensor w_, step_;
};

TEST_F(CheckpointTest, RoundTripsTensorsAndMetadata) {
  std::string path = dir_ + "/a.npz";
  writeCheckpoint(path, {&w_, &step_}, {{"seed", "7"}, {"batch", "100"}});
  Checkpoint c = readCheckpoint(path);
  ASSERT_EQ(c.tensors.size(), 2u);
  const Tensor *w = c.find("fc/w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->shape(), w_.shape());
  EXPECT_EQ(std::memcmp(w->data(), w_.data(), w_.byteSize()), 0);
  EXPECT_EQ(c.find("step")->dataAs<int64_t>()[0], 1234);
  EXPECT_EQ(c.metadata.at("seed"), "7");
  EXPECT_EQ(c.metadata.at("batch"), "100");
  EXPECT_FALSE(hasTemporaryFile(dir_)) << "the temporary file was left behind";
  // Equal state gives equal bytes (no timestamps inside).
  writeCheckpoint(dir_ + "/b.npz", {&w_, &step_}, {{"seed", "7"}, {"batch", "100"}});
  EXPECT_EQ(rt::readFileBytes(path), rt::readFileBytes(dir_ + "/b.npz"));
}

TEST_F(CheckpointTest, RefusesAFlippedByteNamingTheMember) {
  std::string path = dir_ + "/a.npz";
  writeCheckpoint(path, {&w_, &step_}, {});
  std::string bytes = rt::readFileBytes(path);
  size_t at = bytes.find("fc/w.npy") + 8 + 128 + 4; // inside fc/w's data
  bytes[at] ^= 0x40;
  rt::writeFileAtomically(path, bytes);
  try {
    readCheckpoint(path);
    FAIL() << "a corrupt checkpoint was read";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("fc/w.npy fails its CRC-32"), std::string::npos)
        << e.what();
  }
}

TEST_F(CheckpointTest, RefusesATornFile) {
  std::string path = dir_ + "/a.npz";
  writeCheckpoint(path, {&w_, &step_}, {});
  std::string bytes = rt::readFileBytes(path);
  for (size_t keep : {size_t(0), size_t(10), bytes.size() / 2, bytes.size() - 1}) {
    rt::writeFileAtomically(path, bytes.substr(0, keep));
    EXPECT_THROW(readCheckpoint(path), Error) << keep << " bytes";
  }
}

TEST_F(CheckpointTest, AFailedWriteKeepsWhatWasThere) {
  std::string path = dir_ + "/a.npz";
  writeCheckpoint(path, {&w_}, {});
  std::string before = rt::readFileBytes(path);
  Tensor big(KILN_DTYPE_F32, {1 << 20}, "big");
  // A file-size limit stands in for a full disk: writes past it fail with EFBIG.
  struct rlimit saved;
  getrlimit(RLIMIT_FSIZE, &saved);
  auto handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = saved;
  small.rlim_cur = 64 * 1024;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  try {
    writeCheckpoint(path, {&w_, &big}, {});
    ADD_FAILURE() << "the write past the size limit succeeded";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cannot write"), std::string::npos) << e.what();
  }
  setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, handler);
  EXPECT_EQ(rt::readFileBytes(path), before);
  EXPECT_FALSE(hasTemporaryFile(dir_));

  // A directory that is not there: an error naming it, nothing written.
  EXPECT_THROW(writeCheckpoint(dir_ + "/missing/a.npz", {&w_}, {}), Error);
}

TEST_F(CheckpointTest, DirectoryKeepsTheNewest) {
  CheckpointDir ckpts(dir_ + "/run/ckpt", 2);
  ckpts.prepare();
  rt::writeFileAtomically(dir_ + "/run/ckpt/ckpt-7.npz.tmp.k1Lled", "left by a killed run");
  ckpts.prepare();
  EXPECT_EQ(access((dir_ + "/run/ckpt/ckpt-7.npz.tmp.k1Lled").c_str(), F_OK), -1);
  for (int64_t step : {10, 20, 30, 100})
    ckpts.save(step, {&w_}, {});
  auto present = ckpts.list();
  ASSERT_EQ(present.size(), 2u);
  EXPECT_EQ(present[0].first, 100);
  EXPECT_EQ(present[1].first, 30);
  EXPECT_EQ(present[0].second, dir_ + "/run/ckpt/ckpt-100.npz");

  // Newer files a resume skipped (corrupt ones) do not count against `keep`:
  // they must not push out the valid checkpoints written after them.
  rt::writeFileAtomically(dir_ + "/run/ckpt/ckpt-500.npz", "torn");
  rt::writeFileAtomically(dir_ + "/run/ckpt/ckpt-400.npz", "torn");
  for (int64_t step : {110, 120, 130})
    ckpts.save(step, {&w_}, {});
  present = ckpts.list();
  ASSERT_EQ(present.size(), 4u);
  EXPECT_EQ(present[0].first, 500);
  EXPECT_EQ(present[1].first, 400);
  EXPECT_EQ(present[2].first, 130);
  EXPECT_EQ(present[3].first, 120);
  EXPECT_NO_THROW(readCheckpoint(present[2].second));

  rt::writeFileAtomically(dir_ + "/file", "x");
  CheckpointDir notADir(dir_ + "/file", 1);
  EXPECT_THROW(notADir.prepare(), Error);
}

} // namespace
} // namespace kiln::train
