// Tests for the depthwise convolution kernels linked into CPU artifacts
// (runtime/kernels/DepthwiseConvolution.c): every vector width this CPU runs,
// and the entry point that picks one, against a float64 loop over random
// shapes, strides, dilations, paddings of the rows and tile strides.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

extern "C" {
typedef void DepthwiseFn(int64_t groups, int64_t kh, int64_t kw, int64_t oh, int64_t ow,
                         int64_t sh, int64_t sw, int64_t dh, int64_t dw, const float *in,
                         int64_t inC, int64_t inH, const float *w, float *out, int64_t outF,
                         int64_t outH);
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
};

// Runs `fn` on a case with random data and compares with a float64 sum; the
// output starts from random values (the bias), which the kernel adds to.
void check(const Variant &variant, const Case &c, std::mt19937 &rng) {
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<float> in(c.groups * c.inC), w(c.groups * c.kh * c.kw), out(c.groups * c.outF);
  for (float &v : in)
    v = value(rng);
  for (float &v : w)
    v = value(rng);
  for (float &v : out)
    v = value(rng);
  std::vector<float> before = out;
  variant.fn(c.groups, c.kh, c.kw, c.oh, c.ow, c.sh, c.sw, c.dh, c.dw, in.data(), c.inC, c.inH,
             w.data(), out.data(), c.outF, c.outH);
  for (int64_t g = 0; g < c.groups; ++g)
    for (int64_t y = 0; y < c.oh; ++y)
      for (int64_t x = 0; x < c.outH; ++x) {
        int64_t at = g * c.outF + y * c.outH + x;
        double expected = before[at];
        if (x < c.ow)
          for (int64_t ky = 0; ky < c.kh; ++ky)
            for (int64_t kx = 0; kx < c.kw; ++kx)
              expected += double(w[(g * c.kh + ky) * c.kw + kx]) *
                          in[g * c.inC + (y * c.sh + ky * c.dh) * c.inH + x * c.sw + kx * c.dw];
        // Columns past the output's (the row stride's padding) stay as they were.
        ASSERT_NEAR(out[at], expected, 1e-4 * (1 + c.kh * c.kw))
            << variant.name << ": groups " << c.groups << ", window " << c.kh << "x" << c.kw
            << ", output " << c.oh << "x" << c.ow << ", strides " << c.sh << "x" << c.sw
            << ", dilations " << c.dh << "x" << c.dw << ", at group " << g << " row " << y
            << " column " << x;
      }
}

Case makeCase(int64_t groups, int64_t kh, int64_t kw, int64_t oh, int64_t ow, int64_t sh,
              int64_t sw, int64_t dh, int64_t dw, int64_t rowPad = 0, int64_t outPad = 0) {
  int64_t ih = (oh - 1) * sh + (kh - 1) * dh + 1, iw = (ow - 1) * sw + (kw - 1) * dw + 1;
  int64_t inH = iw + rowPad, outH = ow + outPad;
  return {groups, kh, kw, oh, ow, sh, sw, dh, dw, inH, ih * inH + 3, outH, oh * outH + 1};
}

// The shapes of MobileNetV2 and EfficientNet-B0, and each path's edges.
TEST(DepthwiseConvolutionTest, NetworkShapes) {
  std::mt19937 rng(7);
  for (const Variant &variant : variants())
    for (Case c : {makeCase(4, 3, 3, 112, 112, 1, 1, 1, 1), makeCase(4, 3, 3, 56, 56, 2, 2, 1, 1),
                   makeCase(4, 3, 3, 7, 7, 1, 1, 1, 1), makeCase(4, 5, 5, 14, 14, 1, 1, 1, 1),
                   makeCase(4, 5, 5, 7, 7, 2, 2, 1, 1), makeCase(3, 3, 3, 1, 1, 1, 1, 1, 1),
                   makeCase(2, 9, 9, 20, 20, 1, 1, 1, 1), makeCase(2, 9, 9, 20, 37, 2, 2, 1, 1),
                   makeCase(2, 3, 3, 33, 33, 1, 1, 2, 2), makeCase(2, 3, 3, 10, 31, 3, 3, 1, 1),
                   makeCase(2, 1, 1, 5, 70, 1, 1, 1, 1), makeCase(2, 7, 7, 1, 129, 1, 1, 1, 1)})
      check(variant, c, rng);
}

// Random shapes, with rows and channels of the input and output further
// apart than dense (tiles of larger images).
TEST(DepthwiseConvolutionTest, RandomShapes) {
  std::mt19937 rng(2026);
  std::uniform_int_distribution<int64_t> window(1, 7), stride(1, 3), dilation(1, 2),
      rows(1, 20), columns(1, 70), narrow(1, 9), pad(0, 3), groups(1, 3), coin(0, 3);
  for (const Variant &variant : variants())
    for (int i = 0; i < 400; ++i) {
      Case c = makeCase(groups(rng), window(rng), window(rng), rows(rng),
                        coin(rng) ? columns(rng) : narrow(rng), stride(rng), stride(rng),
                        dilation(rng), dilation(rng), pad(rng), pad(rng));
      check(variant, c, rng);
      if (HasFatalFailure())
        return;
    }
}

// Nothing to compute: nothing is read or written.
TEST(DepthwiseConvolutionTest, EmptyShapesWriteNothing) {
  float out = 1.5f;
  for (const Variant &variant : variants()) {
    variant.fn(0, 3, 3, 1, 1, 1, 1, 1, 1, nullptr, 9, 3, nullptr, &out, 1, 1);
    variant.fn(1, 3, 3, 0, 1, 1, 1, 1, 1, nullptr, 9, 3, nullptr, &out, 1, 1);
    variant.fn(1, 3, 3, 1, 0, 1, 1, 1, 1, nullptr, 9, 3, nullptr, &out, 1, 1);
    EXPECT_EQ(out, 1.5f) << variant.name;
  }
}

} // namespace
