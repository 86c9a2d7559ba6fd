// Tests for the pools of channel-blocked images that CPU artifacts call for
// kiln.max_pool and kiln.average_pool on blocked images
// (runtime/kernels/BlockedPool.c): the oneDNN primitive and the plain loops a
// site falls back to, against a float64 loop written from ONNX's definition,
// on the pools of ResNet, Inception-v3 and DenseNet and each path's edges
// (ceil mode, pads counted or not, asymmetric pads, dilations, batches), in
// blocks of 16 channels (AVX-512's nChw16c) and of 8 (AVX2's nChw8c).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

extern "C" {
void kiln_pool2d_blocked(void **slot, int64_t n, int64_t cb, int64_t ih, int64_t iw, int64_t oh,
                         int64_t ow, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t dh,
                         int64_t dw, int64_t padTop, int64_t padLeft, int64_t padBottom,
                         int64_t padRight, int64_t block, const float *in, float *out,
                         int64_t kind);
void kilnBlockedPool2dLoops(const int64_t *shape, const float *in, float *out, int64_t kind);
}

namespace {

enum Kind : int64_t { kMax = 0, kAverageCountingPads = 1, kAverage = 2 };

// ONNX's output extent along one axis (kiln::windowOutputSize).
int64_t extent(int64_t in, int64_t begin, int64_t end, int64_t k, int64_t s, int64_t d, bool ceil) {
  int64_t span = in + begin + end - d * (k - 1) - 1;
  int64_t size = (ceil ? (span + s - 1) / s : span / s) + 1;
  if (ceil && (size - 1) * s >= in + begin)
    --size;
  return size;
}

struct Case {
  std::string name;
  int64_t n, cb, ih, iw, kh, kw, sh, sw, dh, dw, top, left, bottom, right;
  Kind kind;
  bool ceil = false;
  // Channels per block.
  int64_t block = 16;

  int64_t oh() const { return extent(ih, top, bottom, kh, sh, dh, ceil); }
  int64_t ow() const { return extent(iw, left, right, kw, sw, dw, ceil); }
};

enum class Path { Primitive, Loops };

void check(const Case &c, Path path, std::mt19937 &rng) {
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  int64_t oh = c.oh(), ow = c.ow(), block = c.block;
  std::vector<float> in(c.n * c.cb * c.ih * c.iw * block), out(c.n * c.cb * oh * ow * block);
  for (float &v : in)
    v = value(rng);
  for (float &v : out)
    v = std::numeric_limits<float>::quiet_NaN(); // every output must be written
  if (path == Path::Primitive) {
    // A site's state starts at zero; its primitive is built at the first
    // call and reused by the second.
    void *slot = nullptr;
    for (int call = 0; call < 2; ++call)
      kiln_pool2d_blocked(&slot, c.n, c.cb, c.ih, c.iw, oh, ow, c.kh, c.kw, c.sh, c.sw, c.dh, c.dw,
                          c.top, c.left, c.bottom, c.right, block, in.data(), out.data(), c.kind);
  } else {
    const int64_t shape[] = {c.n,  c.cb, c.ih, c.iw,  oh,     ow,       c.kh,    c.kw, c.sh,
                             c.sw, c.dh, c.dw, c.top, c.left, c.bottom, c.right, block};
    kilnBlockedPool2dLoops(shape, in.data(), out.data(), c.kind);
  }
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t b = 0; b < c.cb; ++b)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x)
          for (int64_t lane = 0; lane < block; ++lane) {
            double best = -INFINITY, sum = 0.0;
            int64_t inside = 0, counted = 0;
            for (int64_t i = 0; i < c.kh; ++i)
              for (int64_t j = 0; j < c.kw; ++j) {
                int64_t iy = y * c.sh - c.top + i * c.dh, ix = x * c.sw - c.left + j * c.dw;
                // Counting pads counts the explicit pads only, not what
                // ceil mode reaches beyond them.
                counted += iy < c.ih + c.bottom && ix < c.iw + c.right;
                if (iy < 0 || iy >= c.ih || ix < 0 || ix >= c.iw)
                  continue;
                double v = in[(((n * c.cb + b) * c.ih + iy) * c.iw + ix) * block + lane];
                best = std::max(best, v);
                sum += v;
                ++inside;
              }
            double expected = c.kind == kMax                ? best
                              : c.kind == kAverageCountingPads ? sum / counted
                                                               : sum / inside;
            ASSERT_NEAR(out[(((n * c.cb + b) * oh + y) * ow + x) * block + lane], expected, 1e-6)
                << (path == Path::Primitive ? "primitive" : "loops") << ", " << c.name
                << ", blocks of " << block << ": image " << n << " block " << b << " row " << y
                << " column " << x << " lane " << lane;
          }
}

std::vector<Case> cases() {
  return {
      // ResNet's stem: 3x3 stride 2, pads 1.
      {"resnet stem", 1, 4, 16, 16, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, kMax},
      // Inception-v3's max pools (3x3 stride 2, no pads) and its 3x3
      // average pools at stride 1 counting the pads (PyTorch's default).
      {"inception max", 1, 3, 15, 15, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, kMax},
      {"inception average", 1, 2, 11, 11, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, kAverageCountingPads},
      {"average not counting pads", 1, 2, 11, 11, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, kAverage},
      // DenseNet's transitions: 2x2 stride 2, over a batch.
      {"densenet transition", 2, 3, 12, 12, 2, 2, 2, 2, 1, 1, 0, 0, 0, 0, kAverage},
      // Ceil mode: the last windows reach past the input (and its pads).
      {"ceil max", 1, 2, 16, 16, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, kMax, true},
      {"ceil average", 1, 2, 10, 9, 3, 3, 2, 2, 1, 1, 0, 0, 0, 0, kAverage, true},
      // ... counting pads: only the explicit ones count (the loops' case).
      {"ceil average counting pads", 2, 1, 10, 10, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1,
       kAverageCountingPads, true},
      // End pads only, counted; asymmetric pads and strides; dilations.
      {"end pads counted", 1, 2, 9, 9, 2, 2, 2, 2, 1, 1, 0, 0, 1, 1, kAverageCountingPads},
      {"asymmetric", 2, 2, 10, 13, 3, 2, 1, 2, 1, 1, 1, 0, 2, 1, kMax},
      {"dilated", 1, 2, 12, 12, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, kMax},
      {"dilated average", 1, 1, 12, 11, 2, 3, 2, 1, 2, 2, 1, 1, 1, 1, kAverage},
  };
}

TEST(BlockedPoolTest, PrimitiveMatchesReference) {
  std::mt19937 rng(12);
  for (const Case &c : cases())
    check(c, Path::Primitive, rng);
}

TEST(BlockedPoolTest, LoopsMatchReference) {
  std::mt19937 rng(13);
  for (const Case &c : cases())
    check(c, Path::Loops, rng);
}

// `all` in blocks of `block` channels.
std::vector<Case> inBlocksOf(int64_t block, std::vector<Case> all) {
  for (Case &c : all)
    c.block = block;
  return all;
}

TEST(BlockedPoolTest, PrimitiveMatchesReferenceInBlocksOf8) {
  std::mt19937 rng(22);
  for (const Case &c : inBlocksOf(8, cases()))
    check(c, Path::Primitive, rng);
}

TEST(BlockedPoolTest, LoopsMatchReferenceInBlocksOf8) {
  std::mt19937 rng(23);
  for (const Case &c : inBlocksOf(8, cases()))
    check(c, Path::Loops, rng);
}

// A NaN in a window gives NaN, in the loops as in Kiln's own pools; a
// window of zeros (a padding lane) gives zero.
TEST(BlockedPoolTest, LoopsKeepNaNsAndZeroLanes) {
  constexpr int64_t kBlock = 16;
  const int64_t shape[] = {1, 1, 2, 2, 1, 1, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0, kBlock};
  std::vector<float> in(2 * 2 * kBlock, 0.0f), out(kBlock, 1.0f);
  in[1 * kBlock + 3] = std::numeric_limits<float>::quiet_NaN();
  in[2 * kBlock + 3] = 5.0f;
  kilnBlockedPool2dLoops(shape, in.data(), out.data(), kMax);
  EXPECT_TRUE(std::isnan(out[3]));
  for (int64_t lane = 0; lane < kBlock; ++lane) {
    if (lane == 3)
      continue;
    EXPECT_EQ(out[lane], 0.0f) << "lane " << lane;
  }
}

} // namespace
