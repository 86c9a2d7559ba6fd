// Tests for the convolution on channel-blocked images that CPU artifacts
// call for kiln.blocked_conv (runtime/kernels/BlockedConvolution.c): the
// oneDNN primitive and the plain loops a site falls back to, against a
// float64 loop over the NCHW image, on the layer shapes of ResNet-50 and
// MobileNetV2 and each path's edges (Winograd, 1x1, strided, depthwise,
// dilated, asymmetric pads, bias or none, clamps, swish and hard swish
// activations, channels that end in a
// padded block, a residual addend in the output, an RGB image in NCHW,
// outputs written into a slot of a concatenation of several images), in
// blocks of 16 channels (AVX-512's nChw16c) and of 8 (AVX2's nChw8c).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

extern "C" {
void kiln_conv2d_blocked(void **slot, int64_t n, int64_t c, int64_t ih, int64_t iw, int64_t f,
                         int64_t group, int64_t kh, int64_t kw, int64_t oh, int64_t ow, int64_t sh,
                         int64_t sw, int64_t dh, int64_t dw, int64_t padTop, int64_t padLeft,
                         int64_t padBottom, int64_t padRight, int64_t block, const float *in,
                         const float *w, const float *bias, float *out, int64_t outStride,
                         float low, float high, int64_t flags);
void kilnBlockedConv2dLoops(const int64_t *shape, const float *in, const float *w,
                            const float *bias, float *out, float low, float high, int64_t flags);
}
#ifdef KILN_TEST_WINOGRAD_AVX2
extern "C" {
#include "WinogradConvolution.h"
}
#endif

namespace {

struct Case {
  int64_t n, c, ih, iw, f, group, kh, kw, sh, sw, dh, dw, top, left, bottom, right;
  bool withBias = true;
  float low = -INFINITY, high = INFINITY;
  // Whether the output holds an addend on entry (a residual sum).
  bool accumulate = false;
  // Whether the input is NCHW (fewer channels than a block, one group).
  bool plain = false;
  // The activation before the clamp: none, swish (x * sigmoid(x)) or hard
  // swish (x * clamp(x / 6 + 0.5, 0, 1)).
  enum Activation { None, Swish, HardSwish } activation = None;
  // Channels per block.
  int64_t block = 16;
  // Blocks of a concatenation before and after the output's in each image,
  // which the convolution must leave as they are.
  int64_t blocksBefore = 0, blocksAfter = 0;
  // Whether the filters change between calls (a train step's), at the same
  // address.
  bool computedFilters = false;

  int64_t flags() const {
    return (accumulate ? 1 : 0) | (plain ? 2 : 0) | (activation == Swish ? 4 : 0) |
           (activation == HardSwish ? 8 : 0) | (computedFilters ? 16 : 0);
  }
  // The activation of `x`, in float64.
  double activate(double x) const;
  // Where element (n, channel, y, x) of the input is.
  int64_t inputIndex(int64_t n, int64_t channel, int64_t y, int64_t x) const;

  int64_t oh() const { return (ih + top + bottom - dh * (kh - 1) - 1) / sh + 1; }
  int64_t ow() const { return (iw + left + right - dw * (kw - 1) - 1) / sw + 1; }
};

int64_t blocks(int64_t channels, int64_t block) { return (channels + block - 1) / block; }

// Element (n, c, y, x) of an image of `channels` channels, `h` x `w`, in
// blocks of `block` channels, the last one padded.
int64_t blockedIndex(int64_t n, int64_t c, int64_t y, int64_t x, int64_t channels, int64_t h,
                     int64_t w, int64_t block) {
  return (((n * blocks(channels, block) + c / block) * h + y) * w + x) * block + c % block;
}

double Case::activate(double x) const {
  switch (activation) {
  case Swish:
    return x / (1.0 + std::exp(-x));
  case HardSwish:
    return x * std::clamp(x / 6.0 + 0.5, 0.0, 1.0);
  case None:
    break;
  }
  return x;
}

int64_t Case::inputIndex(int64_t image, int64_t channel, int64_t y, int64_t x) const {
  return plain ? ((image * c + channel) * ih + y) * iw + x
               : blockedIndex(image, channel, y, x, c, ih, iw, block);
}

enum class Path { Primitive, Loops, Winograd };

const char *nameOf(Path path) {
  switch (path) {
  case Path::Primitive:
    return "primitive";
  case Path::Loops:
    return "loops";
  case Path::Winograd:
    return "winograd";
  }
  return "?";
}

#ifdef KILN_TEST_WINOGRAD_AVX2
// The Winograd kernel called directly, on any CPU with AVX2 and FMA (an
// AVX-512 one too, where kiln_conv2d_blocked picks it only for computed
// filters in blocks of 16): its tiles
// in work items of `itemTiles` and its filters in groups of `itemColumns`
// (a multiple of 16), as the threads of kiln_conv2d_blocked would split
// them, one after another.
void runWinograd(const Case &c, const float *in, const float *w, const float *bias, float *out,
                 int64_t outStride, int64_t itemTiles, int64_t itemColumns) {
  KilnWinogradConv conv{};
  conv.n = c.n, conv.c = c.c, conv.ih = c.ih, conv.iw = c.iw, conv.f = c.f;
  conv.oh = c.oh(), conv.ow = c.ow(), conv.padTop = c.top, conv.padLeft = c.left;
  conv.block = c.block;
  conv.in = in, conv.bias = bias, conv.out = out, conv.outStride = outStride;
  conv.low = c.low, conv.high = c.high, conv.accumulate = c.accumulate;
  conv.activation = c.activation == Case::Swish       ? KILN_ACTIVATION_SWISH
                    : c.activation == Case::HardSwish ? KILN_ACTIVATION_HARD_SWISH
                                                      : KILN_ACTIVATION_NONE;
  auto aligned = [](int64_t floats) {
    return static_cast<float *>(std::aligned_alloc(64, (floats * sizeof(float) + 63) / 64 * 64));
  };
  float *filters = aligned(kilnWinogradPackedFloats(c.c, c.f));
  kilnWinogradPack(w, c.c, c.f, filters);
  conv.packed = filters;
  int64_t tiles = kilnWinogradTiles(&conv), f8 = blocks(c.f, 8) * 8;
  float *scratch = aligned(kilnWinogradScratchFloats(&conv, itemTiles, itemColumns));
  for (int64_t first = 0; first < tiles; first += itemTiles)
    for (int64_t column = 0; column < f8; column += itemColumns)
      kilnWinogradConv2dAvx2(&conv, first, std::min(itemTiles, tiles - first), column,
                             std::min(itemColumns, f8 - column), scratch);
  std::free(scratch);
  std::free(filters);
}
#endif

void check(const Case &c, Path path, std::mt19937 &rng) {
  const int64_t block = c.block;
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  int64_t perGroup = c.c / c.group, oh = c.oh(), ow = c.ow();
  // The output's channels within the concatenation's.
  int64_t channels = (c.blocksBefore + blocks(c.f, block) + c.blocksAfter) * block;
  auto outIndex = [&](int64_t n, int64_t f, int64_t y, int64_t x) {
    return blockedIndex(n, c.blocksBefore * block + f, y, x, channels, oh, ow, block);
  };
  std::vector<float> in(c.n * (c.plain ? c.c : blocks(c.c, block) * block) * c.ih * c.iw),
      w(c.f * perGroup * c.kh * c.kw), bias(c.f), out(c.n * channels * oh * ow);
  for (std::vector<float> *values : {&in, &w, &bias, &out})
    for (float &v : *values)
      v = value(rng);
  // The input's padding lanes are zero; the output's must come out so.
  for (int64_t n = 0; n < c.n && !c.plain; ++n)
    for (int64_t channel = c.c; channel < blocks(c.c, block) * block; ++channel)
      for (int64_t y = 0; y < c.ih; ++y)
        for (int64_t x = 0; x < c.iw; ++x)
          in[blockedIndex(n, channel, y, x, c.c, c.ih, c.iw, block)] = 0.0f;
  // An addend's padding lanes are zero too; without one, the output's
  // values on entry must not matter.
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t f = c.f; f < blocks(c.f, block) * block; ++f)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x)
          out[outIndex(n, f, y, x)] = c.accumulate ? 0.0f : 1.0f;
  const std::vector<float> addend = out;
  const float *biasData = c.withBias ? bias.data() : nullptr;
  if (path == Path::Winograd) {
#ifdef KILN_TEST_WINOGRAD_AVX2
    out = addend;
    // Items of 5 tiles by 16 filters, or, for a case with more filters
    // than 16, of 7 tiles by 32 filters (a last item of fewer).
    bool wide = c.f > 16;
    runWinograd(c, in.data(), w.data(), biasData, out.data() + c.blocksBefore * oh * ow * block,
                channels * oh * ow, wide ? 7 : 5, wide ? 32 : 16);
#endif
  } else if (path == Path::Primitive) {
    // A site's state starts at zero; its primitive is built at the first
    // call and reused by the second, on the same data, or, for computed
    // filters, on the filters the first call's are changed into in place.
    void *slot = nullptr;
    const std::vector<float> filters = w;
    for (int call = 0; call < 2; ++call) {
      out = addend;
      for (size_t i = 0; i < w.size() && c.computedFilters; ++i)
        w[i] = call == 0 ? 0.5f - filters[i] : filters[i];
      kiln_conv2d_blocked(&slot, c.n, c.c, c.ih, c.iw, c.f, c.group, c.kh, c.kw, oh, ow, c.sh, c.sw,
                          c.dh, c.dw, c.top, c.left, c.bottom, c.right, block, in.data(), w.data(),
                          biasData, out.data() + c.blocksBefore * oh * ow * block,
                          channels * oh * ow, c.low, c.high, c.flags());
    }
  } else {
    ASSERT_EQ(channels, blocks(c.f, block) * block) << "the loops write dense images only";
    const int64_t shape[] = {c.n,  c.c,  c.ih, c.iw, c.f,   c.group, c.kh,     c.kw,    oh,   ow,
                             c.sh, c.sw, c.dh, c.dw, c.top, c.left,  c.bottom, c.right, block};
    kilnBlockedConv2dLoops(shape, in.data(), w.data(), biasData, out.data(), c.low, c.high,
                           c.flags());
  }
  // The concatenation's other blocks are left as they were.
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t channel = 0; channel < channels; ++channel) {
      int64_t f = channel - c.blocksBefore * block;
      if (f >= 0 && f < blocks(c.f, block) * block)
        continue;
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x) {
          int64_t at = blockedIndex(n, channel, y, x, channels, oh, ow, block);
          ASSERT_EQ(out[at], addend[at]) << "channel " << channel << " of the concatenation, "
                                         << "image " << n << " row " << y << " column " << x;
        }
    }
  int64_t filtersPerGroup = c.f / c.group;
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t f = c.f; f < blocks(c.f, block) * block; ++f)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x)
          ASSERT_EQ(out[outIndex(n, f, y, x)], 0.0f)
              << nameOf(path) << ": padding lane " << f << " of " << c.f << " filters, image " << n
              << " row " << y << " column " << x;
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t f = 0; f < c.f; ++f)
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x) {
          double expected = c.withBias ? bias[f] : 0.0;
          if (c.accumulate)
            expected += addend[outIndex(n, f, y, x)];
          double magnitude = std::fabs(expected);
          for (int64_t k = 0; k < perGroup; ++k) {
            int64_t channel = f / filtersPerGroup * perGroup + k;
            for (int64_t i = 0; i < c.kh; ++i)
              for (int64_t j = 0; j < c.kw; ++j) {
                int64_t iy = y * c.sh - c.top + i * c.dh, ix = x * c.sw - c.left + j * c.dw;
                if (iy < 0 || iy >= c.ih || ix < 0 || ix >= c.iw)
                  continue;
                double product = double(w[((f * perGroup + k) * c.kh + i) * c.kw + j]) *
                                 in[c.inputIndex(n, channel, iy, ix)];
                expected += product;
                magnitude += std::fabs(product);
              }
          }
          expected = std::min<double>(std::max<double>(c.activate(expected), c.low), c.high);
          // Winograd's transforms round differently from a direct sum: a
          // few ulp of the largest partial sums.
          ASSERT_NEAR(out[outIndex(n, f, y, x)], expected, 1e-5 * (1 + magnitude))
              << nameOf(path) << ": " << c.n << "x" << c.c << "x" << c.ih << "x" << c.iw << " by "
              << c.f << "x" << perGroup << "x" << c.kh << "x" << c.kw << ", group " << c.group
              << ", blocks of " << block << ", strides " << c.sh << "x" << c.sw << ", dilations "
              << c.dh << "x" << c.dw << ", pads " << c.top << "," << c.left << "," << c.bottom
              << "," << c.right << ", at image " << n << " filter " << f << " row " << y
              << " column " << x;
        }
}

std::vector<Case> cases() {
  Case resnet3x3{1, 64, 14, 14, 64, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
  Case pointwise{2, 32, 9, 11, 48, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
  Case strided{1, 32, 15, 15, 32, 1, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1};
  Case depthwise{1, 32, 12, 12, 32, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
  Case depthwiseStrided{2, 16, 13, 13, 16, 16, 5, 5, 2, 2, 1, 1, 2, 2, 2, 2};
  Case dilated{1, 16, 11, 11, 32, 1, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2};
  Case asymmetric{1, 16, 10, 9, 16, 1, 3, 2, 1, 2, 1, 1, 0, 1, 2, 0};
  Case stem7x7{1, 16, 20, 20, 32, 1, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3};
  // Channels in a last block of their own: MobileNetV2's and
  // EfficientNet's 24 and 40, in and out, depthwise too.
  Case paddedIn{1, 24, 10, 10, 32, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
  Case paddedOut{2, 32, 9, 9, 40, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
  Case paddedBoth{1, 40, 8, 8, 24, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
  Case paddedDepthwise{1, 24, 11, 11, 24, 24, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1};
  Case relu = resnet3x3, clip = depthwise, noBias = pointwise, lowOnly = strided;
  relu.low = 0.0f;
  clip.low = 0.0f, clip.high = 6.0f;
  noBias.withBias = false;
  lowOnly.low = -0.25f;
  paddedDepthwise.low = 0.0f, paddedDepthwise.high = 6.0f;
  // Residual sums: ResNet's relu(conv + identity) by Winograd and by 1x1,
  // MobileNetV2's unclamped sum on padded channels.
  Case residual = relu, residual1x1 = pointwise, paddedResidual = paddedBoth;
  residual.accumulate = residual1x1.accumulate = paddedResidual.accumulate = true;
  residual1x1.low = 0.0f;
  // RGB stems read in NCHW: ResNet's 7x7 stride 2, MobileNetV2's 3x3
  // stride 2 with ReLU6, a 1x1 of one channel into a padded block.
  Case stemRgb{2, 3, 21, 21, 32, 1, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3};
  Case stemClip{1, 3, 17, 17, 32, 1, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1};
  Case stemGray{1, 1, 6, 7, 24, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
  stemRgb.plain = stemClip.plain = stemGray.plain = true;
  stemClip.low = 0.0f, stemClip.high = 6.0f;
  // Winograd's larger tiles, F(4x4, 3x3): 64 or more input channels at
  // 16x16 outputs or more, padded and not (Inception-v3's 80->192 at 71x71
  // has no padding), under a residual sum and a ReLU.
  Case largeTiles{1, 64, 18, 18, 80, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
  Case largeTilesUnpadded{1, 80, 19, 21, 64, 1, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0};
  // A batch of large images of few channels (Inception-v3's stems): the
  // direct kernel rather than Winograd.
  Case largeFewChannels{2, 32, 130, 130, 32, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
  largeFewChannels.low = 0.0f;
  Case largeTilesResidual = largeTiles;
  largeTilesResidual.accumulate = true;
  largeTilesResidual.low = 0.0f;
  // 3x3 at stride 1 on channels and filters that end in a partly padded
  // block (of 8 and of 16), pads of 2 and unequal ones, a batch, a residual
  // sum under a ReLU: Kiln's Winograd kernel on AVX2.
  Case ragged{2, 20, 13, 11, 36, 1, 3, 3, 1, 1, 1, 1, 2, 0, 1, 2};
  ragged.low = 0.25f; // a clamp that moves zero: the padding lanes stay zero
  Case raggedResidual{1, 28, 10, 10, 12, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
  raggedResidual.accumulate = true;
  raggedResidual.low = 0.0f;
  // Fused activations: EfficientNet's swish after a 1x1 expansion into a
  // padded block, after a depthwise 3x3 and after a residual 3x3 (Winograd
  // on AVX2) or a ragged one; MobileNetV3's hard swish after its RGB stem
  // and after a depthwise 5x5, under a clamp.
  Case swish1x1 = paddedIn, swishDepthwise = depthwise, swishResidual = resnet3x3;
  Case swishRagged{1, 20, 9, 13, 28, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
  swish1x1.f = 40;
  swishResidual.accumulate = true;
  Case hardSwishStem = stemClip, hardSwishDepthwise = depthwiseStrided;
  hardSwishStem.low = -INFINITY, hardSwishStem.high = INFINITY;
  hardSwishDepthwise.high = 0.5f;
  // A clamp that moves zero after a swish, on 24 filters in a block of 16
  // or of 8 and 32: the padding lanes still come out zero.
  Case swishClamped = paddedBoth;
  swishClamped.low = 0.125f;
  for (Case *c : {&swish1x1, &swishDepthwise, &swishResidual, &swishRagged, &swishClamped})
    c->activation = Case::Swish;
  hardSwishStem.activation = hardSwishDepthwise.activation = Case::HardSwish;
  return {resnet3x3,
          pointwise,
          strided,
          depthwise,
          depthwiseStrided,
          dilated,
          asymmetric,
          stem7x7,
          relu,
          clip,
          noBias,
          lowOnly,
          paddedIn,
          paddedOut,
          paddedBoth,
          paddedDepthwise,
          residual,
          residual1x1,
          paddedResidual,
          stemRgb,
          stemClip,
          stemGray,
          largeTiles,
          largeTilesUnpadded,
          largeTilesResidual,
          largeFewChannels,
          ragged,
          raggedResidual,
          swish1x1,
          swishDepthwise,
          swishResidual,
          swishRagged,
          hardSwishStem,
          hardSwishDepthwise,
          swishClamped};
}

// Parts of concatenations along channels: SqueezeNet's expand 1x1 at
// batch 2 (the images a slot apart, convolved one by one), the last 3x3
// part of an Inception module at batch 1 (the slot is dense), a padded 3x3
// part in the middle at batch 2 (its 288 products per output are enough to
// convolve the batch at once, then copy each image into its slot).
std::vector<Case> concatenationParts() {
  Case first{2, 32, 9, 11, 48, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
  Case last{1, 64, 14, 14, 64, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
  Case middle{2, 32, 9, 9, 40, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
  first.blocksAfter = 2, first.low = 0.0f;
  last.blocksBefore = 3;
  middle.blocksBefore = 1, middle.blocksAfter = 1;
  // Fused activations on a slot: image by image, and through the dense
  // buffer.
  first.activation = Case::Swish;
  middle.activation = Case::HardSwish, middle.high = 0.5f;
  return {first, last, middle};
}

// `all` in blocks of `block` channels.
std::vector<Case> inBlocksOf(int64_t block, std::vector<Case> all) {
  for (Case &c : all)
    c.block = block;
  return all;
}

TEST(BlockedConvolutionTest, PrimitiveMatchesReference) {
  std::mt19937 rng(11);
  for (const Case &c : cases())
    check(c, Path::Primitive, rng);
}

TEST(BlockedConvolutionTest, PrimitiveWritesConcatenationSlots) {
  std::mt19937 rng(13);
  for (const Case &c : concatenationParts())
    check(c, Path::Primitive, rng);
}

TEST(BlockedConvolutionTest, LoopsMatchReference) {
  std::mt19937 rng(12);
  for (const Case &c : cases())
    check(c, Path::Loops, rng);
}

// The same in blocks of 8 (AVX2's vectors): 24 and 40 channels then fill
// whole blocks, and the stems' 3 and 1 channels are still fewer than one.
TEST(BlockedConvolutionTest, PrimitiveMatchesReferenceInBlocksOf8) {
  std::mt19937 rng(21);
  for (const Case &c : inBlocksOf(8, cases()))
    check(c, Path::Primitive, rng);
}

TEST(BlockedConvolutionTest, PrimitiveWritesConcatenationSlotsInBlocksOf8) {
  std::mt19937 rng(23);
  for (const Case &c : inBlocksOf(8, concatenationParts()))
    check(c, Path::Primitive, rng);
}

TEST(BlockedConvolutionTest, LoopsMatchReferenceInBlocksOf8) {
  std::mt19937 rng(22);
  for (const Case &c : inBlocksOf(8, cases()))
    check(c, Path::Loops, rng);
}

// Filters that change between calls at one address (a train step's) are
// packed again on each: by oneDNN's reorder, and for the 3x3 cases at
// stride 1 by Kiln's Winograd transform (in blocks of 8 on CPUs with AVX2
// but not AVX-512; on AVX-512 ones, where channels and filters fill blocks
// of 16). In
// the CPU's own blocks (oneDNN runs the other width by its reference loops,
// minutes for these cases).
TEST(BlockedConvolutionTest, ComputedFiltersArePackedOnEveryCall) {
  std::mt19937 rng(31);
  std::vector<Case> all = cases();
  for (const Case &c : concatenationParts())
    all.push_back(c);
  for (Case c : inBlocksOf(__builtin_cpu_supports("avx512f") ? 16 : 8, all)) {
    c.computedFilters = true;
    check(c, Path::Primitive, rng);
  }
}

#ifdef KILN_TEST_WINOGRAD_AVX2
// The cases Kiln's F(4x4, 3x3) kernel takes in blocks of `block`: the 3x3s
// at stride 1 of one group on blocked images, in blocks of 16 only those
// whose channels and filters fill whole blocks (as kiln_conv2d_blocked asks).
std::vector<Case> winogradCases(int64_t block, std::vector<Case> all) {
  std::vector<Case> taken;
  for (const Case &c : inBlocksOf(block, std::move(all)))
    if (!c.plain && c.group == 1 && c.kh == 3 && c.kw == 3 && c.sh == 1 && c.sw == 1 && c.dh == 1 &&
        c.dw == 1 && (block == 8 || (c.c % block == 0 && c.f % block == 0)))
      taken.push_back(c);
  return taken;
}

// Kiln's Winograd kernel in blocks of `block` against the reference loops on
// the cases it takes among cases(), concatenationParts() and `extra`, which
// number `expected`.
void checkWinograd(int64_t block, std::vector<Case> extra, size_t expected, unsigned seed) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
    GTEST_SKIP() << "the CPU has no AVX2 and FMA";
  std::mt19937 rng(seed);
  std::vector<Case> all = cases();
  for (const Case &c : concatenationParts())
    all.push_back(c);
  for (const Case &c : extra)
    all.push_back(c);
  std::vector<Case> taken = winogradCases(block, all);
  EXPECT_EQ(taken.size(), expected);
  for (const Case &c : taken)
    check(c, Path::Winograd, rng);
}

// Kiln's F(4x4, 3x3) kernel for AVX2, on every 3x3 case at stride 1 of one
// group in blocks of 8: partial tiles (9, 19 and 21 outputs), no padding,
// pads of 2 and unequal ones, filters and channels that end in a half block
// of 16 (40, 80, 24) or in a partly padded block of 8 (20, 28, 36, 12), a
// batch, residual sums, clamps, swish and slots of a concatenation.
TEST(BlockedConvolutionTest, WinogradMatchesReferenceInBlocksOf8) {
  Case narrow{1, 24, 7, 30, 24, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
  narrow.low = 0.0f, narrow.high = 6.0f;
  checkWinograd(8, {narrow}, 15u, 24);
}

// The same kernel on images in blocks of 16 (a train step's on AVX-512),
// 8 channels at a time: partial tiles, pads, a batch, residual sums,
// clamps, swish and concatenation slots.
TEST(BlockedConvolutionTest, WinogradMatchesReferenceInBlocksOf16) {
  checkWinograd(16, {}, 9u, 26);
}

// Threads that share the filters' transform, each some blocks of 16
// filters, write what one transform of all of them does: 40 filters (3
// blocks, the last half padding) of 20 channels, in every split.
TEST(BlockedConvolutionTest, WinogradFilterBlocksMatchTheWholeTransform) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
    GTEST_SKIP() << "the CPU has no AVX2 and FMA";
  const int64_t c = 20, f = 40, blocks = kilnWinogradFilterBlocks(f);
  ASSERT_EQ(blocks, 3);
  std::mt19937 rng(25);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<float> w(f * c * 9);
  for (float &v : w)
    v = value(rng);
  const int64_t floats = kilnWinogradPackedFloats(c, f);
  auto aligned = [&] {
    return static_cast<float *>(std::aligned_alloc(64, (floats * sizeof(float) + 63) / 64 * 64));
  };
  float *whole = aligned(), *parts = aligned();
  kilnWinogradPack(w.data(), c, f, whole);
  for (int64_t split = 0; split <= blocks; ++split) {
    std::fill(parts, parts + floats, std::nanf(""));
    kilnWinogradPackBlocks(w.data(), c, f, 0, split, parts);
    kilnWinogradPackBlocks(w.data(), c, f, split, blocks - split, parts);
    EXPECT_EQ(std::memcmp(whole, parts, floats * sizeof(float)), 0) << "split at block " << split;
  }
  std::free(whole);
  std::free(parts);
}

// The swish and hard swish over a span, against float64: the swish within
// 4e-7 of its value (its exponential a polynomial, within 3 ulp; without
// its last term the error near 0 would be 1.2e-6), 0 below -87 where x e^x
// is below 2^-118, a NaN kept, infinities through; then the clamp.
TEST(BlockedConvolutionTest, ActivationSpansMatchFloat64) {
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
    GTEST_SKIP() << "the CPU has no AVX2 and FMA";
  std::vector<float> xs;
  for (float x = -100.0f; x <= 100.0f; x += 0.00390625f * 3.0f)
    xs.push_back(x);
  for (float x : {0.0f, -0.0f, 1e-30f, -1e-30f, -87.5f, -1e37f, -3.4e38f, 3.4e38f, INFINITY, NAN})
    xs.push_back(x);
  while (xs.size() % 8)
    xs.push_back(0.5f);
  for (auto [activation, name] : {std::pair{KILN_ACTIVATION_SWISH, "swish"},
                                  std::pair{KILN_ACTIVATION_HARD_SWISH, "hard swish"}}) {
    std::vector<float> ys = xs;
    kilnActivateSpanAvx2(ys.data(), static_cast<int64_t>(ys.size()), activation, -INFINITY,
                         INFINITY);
    for (size_t i = 0; i < xs.size(); ++i) {
      double x = xs[i];
      if (std::isnan(x)) {
        EXPECT_TRUE(std::isnan(ys[i])) << name << " of NaN";
        continue;
      }
      double want = activation == KILN_ACTIVATION_SWISH
                        ? (x < -87.0 ? 0.0 : x / (1.0 + std::exp(-x)))
                        : x * std::clamp(x / 6.0 + 0.5, 0.0, 1.0);
      if (std::isinf(want)) {
        EXPECT_EQ(ys[i], want) << name << " of " << x;
        continue;
      }
      // The hard swish's gate, x / 6 + 1/2, rounds to an ulp of 1/2 in
      // float, large against a gate near 0.
      double gateRounding = activation == KILN_ACTIVATION_HARD_SWISH ? 1.2e-7 * std::fabs(x) : 0.0;
      EXPECT_NEAR(ys[i], want, 4e-7 * std::fabs(want) + gateRounding + 1e-38)
          << name << " of " << x;
    }
  }
  std::vector<float> clamped = {-1.0f, -0.5f, 0.5f, 8.0f, 1.0f, 2.0f, 3.0f, NAN};
  kilnActivateSpanAvx2(clamped.data(), 8, KILN_ACTIVATION_SWISH, -0.25f, 2.5f);
  EXPECT_FLOAT_EQ(clamped[0], -0.25f);
  EXPECT_NEAR(clamped[1], -0.5 / (1.0 + std::exp(0.5)), 1e-7);
  EXPECT_FLOAT_EQ(clamped[3], 2.5f);
  EXPECT_TRUE(std::isnan(clamped[7]));
}
#endif

} // namespace
