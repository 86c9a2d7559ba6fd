// Tests for the depthwise convolution kernels linked into CPU artifacts
// (runtime/kernels/DepthwiseConvolution.c): every vector width this CPU runs,
// and the entry point that picks one, against a float64 loop over random
// shapes, strides, dilations, zero padding, bias, clamps, paddings of the
// rows and tile strides.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

extern "C" {
typedef void DepthwiseFn(int64_t groups, int64_t kh, int64_t kw, int64_t oh, int64_t ow,
                         int64_t sh, int64_t sw, int64_t dh, int64_t dw, const float *in,
                         int64_t inC, int64_t inH, int64_t ih, int64_t iw, int64_t padTop,
                         int64_t padLeft, const float *w, const float *bias, int64_t init,
                         float lo, float hi, float *out, int64_t outF, int64_t outH);
DepthwiseFn kiln_depthwise_conv2d, kilnDepthwiseConv2dGeneric;
#if defined(__x86_64__)
DepthwiseFn kilnDepthwiseConv2dAvx2, kilnDepthwiseConv2dAvx512;
#endif
}

namespace {

struct Variant {
  std::string name;
  DepthwiseFn *fn;
};

std::vector<Variant> variants() {
  std::vector<Variant> out = {{"dispatch", kiln_depthwise_conv2d},
                              {"generic", kilnDepthwiseConv2dGeneric}};
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    out.push_back({"avx2", kilnDepthwiseConv2dAvx2});
  if (__builtin_cpu_supports("avx512f"))
    out.push_back({"avx512", kilnDepthwiseConv2dAvx512});
#endif
  return out;
}

struct Case {
  int64_t groups, kh, kw, oh, ow, sh, sw, dh, dw;
  int64_t inH, inC, outH, outF; // strides, at least the dense ones
  // The image's extent and where it starts in the padded one the window
  // reads (0, 0 and at least the window's reach: already padded).
  int64_t ih, iw, padTop = 0, padLeft = 0;
  // Start from the bias (or 0 without one) and clamp, instead of adding.
  bool init = false, withBias = true;
  float lo = -INFINITY, hi = INFINITY;
};

// Runs `fn` on a case with random data and compares with a float64 sum over
// the zero-padded image; the output starts from random values, which the
// kernel adds to, or from the bias.
void check(const Variant &variant, const Case &c, std::mt19937 &rng) {
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<float> in(c.groups * c.inC), w(c.groups * c.kh * c.kw), out(c.groups * c.outF),
      bias(c.groups);
  for (std::vector<float> *values : {&in, &w, &out, &bias})
    for (float &v : *values)
      v = value(rng);
  std::vector<float> before = out;
  variant.fn(c.groups, c.kh, c.kw, c.oh, c.ow, c.sh, c.sw, c.dh, c.dw, in.data(), c.inC, c.inH,
             c.ih, c.iw, c.padTop, c.padLeft, w.data(), c.withBias ? bias.data() : nullptr, c.init,
             c.lo, c.hi, out.data(), c.outF, c.outH);
  for (int64_t g = 0; g < c.groups; ++g)
    for (int64_t y = 0; y < c.oh; ++y)
      for (int64_t x = 0; x < c.outH; ++x) {
        int64_t at = g * c.outF + y * c.outH + x;
        double expected = before[at];
        if (x < c.ow) {
          if (c.init)
            expected = c.withBias ? bias[g] : 0.0;
          for (int64_t ky = 0; ky < c.kh; ++ky)
            for (int64_t kx = 0; kx < c.kw; ++kx) {
              int64_t r = y * c.sh + ky * c.dh - c.padTop, col = x * c.sw + kx * c.dw - c.padLeft;
              if (r >= 0 && r < c.ih && col >= 0 && col < c.iw)
                expected += double(w[(g * c.kh + ky) * c.kw + kx]) * in[g * c.inC + r * c.inH + col];
            }
          if (c.init)
            expected = std::min<double>(std::max<double>(expected, c.lo), c.hi);
        }
        // Columns past the output's (the row stride's padding) stay as they were.
        ASSERT_NEAR(out[at], expected, 1e-4 * (1 + c.kh * c.kw))
            << variant.name << ": groups " << c.groups << ", window " << c.kh << "x" << c.kw
            << ", output " << c.oh << "x" << c.ow << ", strides " << c.sh << "x" << c.sw
            << ", dilations " << c.dh << "x" << c.dw << ", image " << c.ih << "x" << c.iw
            << " at " << c.padTop << "," << c.padLeft << ", init " << c.init
            << ", at group " << g << " row " << y << " column " << x;
      }
}

Case makeCase(int64_t groups, int64_t kh, int64_t kw, int64_t oh, int64_t ow, int64_t sh,
              int64_t sw, int64_t dh, int64_t dw, int64_t rowPad = 0, int64_t outPad = 0) {
  int64_t ih = (oh - 1) * sh + (kh - 1) * dh + 1, iw = (ow - 1) * sw + (kw - 1) * dw + 1;
  int64_t inH = iw + rowPad, outH = ow + outPad;
  return {groups, kh, kw, oh, ow, sh, sw, dh, dw, inH, ih * inH + 3, outH, oh * outH + 1, ih, iw};
}

// `c` on an unpadded image: `top` and `left` rows and columns of zeros
// before it, `bottom` and `right` of the window's reach cut off after it.
Case unpadded(Case c, int64_t top, int64_t left, int64_t bottom, int64_t right) {
  int64_t rowPad = c.inH - c.iw;
  c.padTop = top, c.padLeft = left;
  c.ih = std::max<int64_t>(1, c.ih - top - bottom), c.iw = std::max<int64_t>(1, c.iw - left - right);
  c.inH = c.iw + rowPad;
  c.inC = c.ih * c.inH + 3;
  return c;
}

Case initialized(Case c, bool withBias, float lo, float hi) {
  c.init = true, c.withBias = withBias, c.lo = lo, c.hi = hi;
  return c;
}

// Every case on every variant, on data drawn from `seed`.
void checkCases(unsigned seed, std::initializer_list<Case> cases) {
  std::mt19937 rng(seed);
  for (const Variant &variant : variants())
    for (const Case &c : cases)
      check(variant, c, rng);
}

// The shapes of MobileNetV2 and EfficientNet-B0, and each path's edges.
TEST(DepthwiseConvolutionTest, NetworkShapes) {
  checkCases(7, {makeCase(4, 3, 3, 112, 112, 1, 1, 1, 1), makeCase(4, 3, 3, 56, 56, 2, 2, 1, 1),
                 makeCase(4, 3, 3, 7, 7, 1, 1, 1, 1), makeCase(4, 5, 5, 14, 14, 1, 1, 1, 1),
                 makeCase(4, 5, 5, 7, 7, 2, 2, 1, 1), makeCase(3, 3, 3, 1, 1, 1, 1, 1, 1),
                 makeCase(2, 9, 9, 20, 20, 1, 1, 1, 1), makeCase(2, 9, 9, 20, 37, 2, 2, 1, 1),
                 makeCase(2, 3, 3, 33, 33, 1, 1, 2, 2), makeCase(2, 3, 3, 10, 31, 3, 3, 1, 1),
                 makeCase(2, 1, 1, 5, 70, 1, 1, 1, 1), makeCase(2, 7, 7, 1, 129, 1, 1, 1, 1)});
}

// `count` random shapes per variant, with rows and channels of the input
// and output further apart than dense (tiles of larger images); with
// `neighbours`, also unpadded images and outputs started from the bias and
// clamped, at random.
void checkRandomShapes(unsigned seed, int count, bool neighbours) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> window(1, 7), stride(1, 3), dilation(1, 2),
      rows(1, 20), columns(1, 70), narrow(1, 9), pad(0, 3), groups(1, 3), coin(0, 3);
  for (const Variant &variant : variants())
    for (int i = 0; i < count; ++i) {
      Case c = makeCase(groups(rng), window(rng), window(rng), rows(rng),
                        coin(rng) ? columns(rng) : narrow(rng), stride(rng), stride(rng),
                        dilation(rng), dilation(rng), pad(rng), pad(rng));
      if (neighbours) {
        c = unpadded(c, std::min(pad(rng), c.kh - 1), std::min(pad(rng), c.kw - 1), pad(rng),
                     pad(rng));
        if (coin(rng))
          c = initialized(c, coin(rng) != 0, coin(rng) ? 0.0f : -INFINITY,
                          coin(rng) ? 1.0f : INFINITY);
      }
      check(variant, c, rng);
      if (::testing::Test::HasFatalFailure())
        return;
    }
}

TEST(DepthwiseConvolutionTest, RandomShapes) { checkRandomShapes(2026, 400, false); }

// The padding, bias and clamp taken over from the ops around a tile: the
// layers of MobileNetV2 (pad 1, ReLU6) and EfficientNet-B0 (pad 2, no
// clamp), and images that the window overhangs on every side.
TEST(DepthwiseConvolutionTest, PaddingBiasAndClamp) {
  checkCases(11, {initialized(unpadded(makeCase(4, 3, 3, 112, 112, 1, 1, 1, 1), 1, 1, 1, 1), true, 0, 6),
                  initialized(unpadded(makeCase(4, 3, 3, 56, 56, 2, 2, 1, 1), 0, 0, 1, 1), true, 0, 6),
                  initialized(unpadded(makeCase(4, 3, 3, 7, 7, 1, 1, 1, 1), 1, 1, 1, 1), true, 0, 0.5f),
                  initialized(unpadded(makeCase(4, 5, 5, 14, 14, 1, 1, 1, 1), 2, 2, 2, 2), true, -INFINITY, INFINITY),
                  initialized(unpadded(makeCase(4, 5, 5, 7, 7, 2, 2, 1, 1), 1, 2, 2, 1), false, 0, INFINITY),
                  initialized(unpadded(makeCase(2, 3, 3, 33, 33, 1, 1, 2, 2), 2, 2, 2, 2), true, -0.25f, 0.25f),
                  unpadded(makeCase(2, 3, 3, 20, 37, 1, 1, 1, 1, 3, 2), 1, 1, 1, 1),
                  unpadded(makeCase(3, 7, 7, 3, 3, 1, 1, 1, 1), 3, 3, 3, 3)});
}

// Rows narrower than two vectors at a stride, summed in phase planes: the
// strided layers of MobileNetV2 and EfficientNet-B0 at 7 to 28 columns
// (symmetric and TensorFlow-style padding), a stride along one axis only,
// strides with dilations, an odd left padding, 81 taps in two passes, and
// an image that is padded already (its rows longer than the window reads).
TEST(DepthwiseConvolutionTest, NarrowStridedRows) {
  checkCases(13, {initialized(unpadded(makeCase(4, 3, 3, 7, 7, 2, 2, 1, 1), 1, 1, 1, 1), true, 0, 6),
                  initialized(unpadded(makeCase(4, 3, 3, 14, 14, 2, 2, 1, 1), 1, 1, 1, 1), true, 0, 6),
                  initialized(unpadded(makeCase(3, 3, 3, 28, 28, 2, 2, 1, 1), 0, 0, 1, 1), true, 0, 6),
                  initialized(unpadded(makeCase(4, 5, 5, 7, 7, 2, 2, 1, 1), 2, 2, 2, 2), true, -INFINITY, INFINITY),
                  initialized(unpadded(makeCase(2, 5, 5, 14, 14, 2, 2, 1, 1), 1, 2, 2, 1), false, 0, INFINITY),
                  initialized(unpadded(makeCase(2, 3, 5, 9, 13, 2, 1, 1, 1), 1, 2, 1, 2), true, -1, 1),
                  unpadded(makeCase(2, 3, 3, 9, 11, 1, 2, 1, 1), 1, 1, 1, 1),
                  unpadded(makeCase(2, 3, 3, 5, 7, 3, 2, 2, 1), 2, 1, 2, 1),
                  unpadded(makeCase(2, 3, 3, 6, 9, 3, 3, 1, 2), 1, 3, 0, 0),
                  unpadded(makeCase(2, 9, 9, 6, 11, 2, 2, 1, 1), 4, 4, 4, 4),
                  makeCase(3, 3, 3, 7, 7, 2, 2, 1, 1, 5, 2),
                  makeCase(2, 5, 5, 14, 14, 2, 2, 1, 1)});
}

// Rows split into two column phases at stride 2 by the vector deinterleave
// (AVX2 and AVX-512): images whose first column lands in either phase
// (left padding 1 or 0), rows of an odd and an even width that leave 1 to
// 15 floats after the last whole vectors, and rows shorter than one
// deinterleave step.
TEST(DepthwiseConvolutionTest, StrideTwoPhases) {
  checkCases(23, {initialized(unpadded(makeCase(3, 3, 3, 28, 55, 2, 2, 1, 1), 1, 1, 0, 0), true, 0, 6),
                  initialized(unpadded(makeCase(2, 3, 3, 9, 40, 2, 2, 1, 1), 0, 0, 1, 1), true, 0, 6),
                  initialized(unpadded(makeCase(2, 5, 5, 11, 37, 2, 2, 1, 1), 2, 2, 1, 1), false, -INFINITY, INFINITY),
                  unpadded(makeCase(2, 3, 3, 6, 33, 2, 2, 1, 1, 3, 2), 1, 1, 1, 1),
                  unpadded(makeCase(2, 3, 3, 4, 5, 2, 2, 1, 1), 1, 1, 1, 1),
                  unpadded(makeCase(2, 3, 3, 5, 8, 2, 2, 1, 1), 1, 0, 0, 1)});
}

// 3x3 and 5x5 windows at unit stride along rows at least two vectors wide,
// whose input rows are shared by the output rows of a tile (4 at a time):
// row counts that leave 1 to 3 rows over, widths with a partial last
// vector, and a stride and dilation of 2 down the columns (the window
// steps down as the outputs do); the rows of an image that is padded
// already run longer than the window reads.
TEST(DepthwiseConvolutionTest, SharedInputRows) {
  checkCases(17, {initialized(unpadded(makeCase(3, 3, 3, 13, 56, 1, 1, 1, 1), 1, 1, 1, 1), true, 0, 6),
                  initialized(unpadded(makeCase(2, 5, 5, 14, 55, 1, 1, 1, 1), 2, 2, 2, 2), true, -INFINITY, INFINITY),
                  initialized(unpadded(makeCase(2, 5, 5, 6, 33, 1, 1, 1, 1), 2, 2, 2, 2), false, 0, INFINITY),
                  unpadded(makeCase(2, 3, 3, 7, 70, 1, 1, 1, 1), 1, 1, 1, 1),
                  unpadded(makeCase(2, 3, 3, 9, 40, 2, 1, 2, 1), 2, 1, 2, 1),
                  unpadded(makeCase(2, 5, 5, 5, 48, 2, 1, 2, 1), 4, 2, 4, 2),
                  makeCase(2, 3, 3, 3, 64, 1, 1, 1, 1),
                  makeCase(2, 5, 5, 11, 37, 1, 1, 1, 1, 5, 9)});
}

// Narrow images with at least a vector's worth of channels, summed with
// channels in the vector lanes (AVX-512 and AVX2): whole and partial blocks
// of 16 and 8, 3x3 to 7x7 windows, strides and dilations, padding taken
// over, with and without a bias, clamped or not, rows and channels further
// apart than dense.
TEST(DepthwiseConvolutionTest, ChannelsInLanes) {
  checkCases(19, {initialized(unpadded(makeCase(16, 3, 3, 7, 7, 1, 1, 1, 1), 1, 1, 1, 1), true, 0, 6),
                  initialized(unpadded(makeCase(37, 5, 5, 14, 14, 1, 1, 1, 1), 2, 2, 2, 2), true, -INFINITY, INFINITY),
                  initialized(unpadded(makeCase(9, 3, 3, 8, 8, 2, 2, 1, 1), 1, 1, 1, 1), true, 0, 6),
                  initialized(unpadded(makeCase(21, 5, 5, 7, 7, 2, 2, 1, 1), 2, 2, 2, 2), false, 0, INFINITY),
                  initialized(unpadded(makeCase(32, 3, 3, 31, 31, 1, 1, 1, 1), 1, 1, 1, 1), true, 0, 6),
                  initialized(unpadded(makeCase(17, 3, 5, 9, 13, 2, 1, 2, 1), 2, 2, 2, 2), true, -1, 1),
                  initialized(unpadded(makeCase(48, 7, 7, 17, 23, 1, 1, 1, 1), 3, 3, 3, 3), true, -INFINITY, INFINITY),
                  initialized(makeCase(16, 3, 3, 11, 15, 3, 2, 1, 2, 5, 3), true, 0, INFINITY),
                  initialized(makeCase(20, 5, 5, 6, 30, 1, 1, 2, 1, 2, 7), false, -INFINITY, INFINITY)});
}

// Random shapes that take the channels-in-lanes path: a block or more of
// channels, narrow rows (every partial vector length at the row's end and
// in the last block of channels), outputs started from the bias.
TEST(DepthwiseConvolutionTest, ChannelsInLanesRandom) {
  std::mt19937 rng(2031);
  std::uniform_int_distribution<int64_t> groups(8, 40), window(0, 1), narrow(1, 15), rows(1, 9),
      stride(1, 2), pad(0, 2), outPad(0, 3), coin(0, 1);
  for (const Variant &variant : variants())
    for (int i = 0; i < 150; ++i) {
      int64_t k = window(rng) ? 5 : 3;
      Case c = makeCase(groups(rng), k, k, rows(rng), narrow(rng), stride(rng), stride(rng), 1, 1,
                        pad(rng), outPad(rng));
      c = unpadded(c, std::min(pad(rng), k - 1), std::min(pad(rng), k - 1), pad(rng), pad(rng));
      c = initialized(c, coin(rng) != 0, coin(rng) ? 0.0f : -INFINITY,
                      coin(rng) ? 6.0f : INFINITY);
      check(variant, c, rng);
      if (::testing::Test::HasFatalFailure())
        return;
    }
}

TEST(DepthwiseConvolutionTest, RandomPaddingBiasAndClamp) {
  checkRandomShapes(2027, 300, true);
}

// Max then min, as arith.maximumf and arith.minimumf: NaN stays NaN.
TEST(DepthwiseConvolutionTest, ClampKeepsNaN) {
  for (const Variant &variant : variants()) {
    float in[9] = {NAN, 1, 1, 1, 1, 1, 1, 1, 1}, w[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    float bias = 0.5f, out[1] = {0};
    variant.fn(1, 3, 3, 1, 1, 1, 1, 1, 1, in, 9, 3, 3, 3, 0, 0, w, &bias, 1, 0, 6, out, 1, 1);
    EXPECT_TRUE(std::isnan(out[0])) << variant.name;
    in[0] = 1;
    variant.fn(1, 3, 3, 1, 1, 1, 1, 1, 1, in, 9, 3, 3, 3, 0, 0, w, &bias, 1, 0, 6, out, 1, 1);
    EXPECT_EQ(out[0], 6.0f) << variant.name;
  }
}

// Nothing to compute: nothing is read or written.
TEST(DepthwiseConvolutionTest, EmptyShapesWriteNothing) {
  float out = 1.5f;
  for (const Variant &variant : variants()) {
    variant.fn(0, 3, 3, 1, 1, 1, 1, 1, 1, nullptr, 9, 3, 3, 3, 0, 0, nullptr, nullptr, 1, 0, 6,
               &out, 1, 1);
    variant.fn(1, 3, 3, 0, 1, 1, 1, 1, 1, nullptr, 9, 3, 3, 3, 0, 0, nullptr, nullptr, 1, 0, 6,
               &out, 1, 1);
    variant.fn(1, 3, 3, 1, 0, 1, 1, 1, 1, nullptr, 9, 3, 3, 3, 0, 0, nullptr, nullptr, 1, 0, 6,
               &out, 1, 1);
    EXPECT_EQ(out, 1.5f) << variant.name;
  }
}

} // namespace
