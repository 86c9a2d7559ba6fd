// Tests for the dense convolution tiles linked into CPU artifacts:
// kiln_conv2d_constant_w (runtime/kernels/PackedConvolution.c), whichever
// kernel this CPU gets, and the AVX2 direct kernel it runs on CPUs without
// AVX-512 (runtime/kernels/DirectConvolution.c), called itself where this
// CPU has AVX2 and FMA. Each is compared with a float64 sum over random
// shapes, strides, dilations and tile strides, the output starting from
// random values that the kernels add to.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

extern "C" {
void kiln_conv2d_constant_w(void **slot, int64_t groups, int64_t c, int64_t ih, int64_t iw,
                            int64_t f, int64_t kh, int64_t kw, int64_t oh, int64_t ow, int64_t sh,
                            int64_t sw, int64_t dh, int64_t dw, const float *in, int64_t inC,
                            int64_t inH, const float *w, float *out, int64_t outF, int64_t outH);
}
#if defined(__x86_64__)
extern "C" {
#include "runtime/kernels/DirectConvolution.h"
}
#endif

namespace {

// One group of c input and f output channels; the image (already padded)
// and the output have strides (inC, inH, 1) and (outF, outH, 1), at least
// the dense ones.
struct Case {
  int64_t c, f, kh, kw, oh, ow, sh, sw, dh, dw;
  int64_t rowPad = 0, outPad = 0;

  int64_t ih() const { return (oh - 1) * sh + (kh - 1) * dh + 1; }
  int64_t iw() const { return (ow - 1) * sw + (kw - 1) * dw + 1; }
  int64_t inH() const { return iw() + rowPad; }
  int64_t inC() const { return ih() * inH() + rowPad; }
  int64_t outH() const { return ow + outPad; }
  int64_t outF() const { return oh * outH() + outPad; }
};

struct Data {
  std::vector<float> in, w, out;
};

Data randomData(const Case &c, std::mt19937 &rng) {
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  Data d{std::vector<float>(c.c * c.inC()), std::vector<float>(c.f * c.c * c.kh * c.kw),
         std::vector<float>(c.f * c.outF())};
  for (std::vector<float> *values : {&d.in, &d.w, &d.out})
    for (float &v : *values)
      v = value(rng);
  return d;
}

// Compares `got` with `before` plus the float64 convolution; elements
// outside the output (the strides' padding) must be as they were.
void expectConvolution(const Case &c, const Data &d, const std::vector<float> &before,
                       const std::vector<float> &got, const char *what) {
  for (int64_t o = 0; o < c.f; ++o)
    for (int64_t y = 0; y < c.oh; ++y)
      for (int64_t x = 0; x < c.outH(); ++x) {
        int64_t at = o * c.outF() + y * c.outH() + x;
        double expected = before[at], magnitude = std::fabs(before[at]);
        if (x < c.ow)
          for (int64_t k = 0; k < c.c; ++k)
            for (int64_t i = 0; i < c.kh; ++i)
              for (int64_t j = 0; j < c.kw; ++j) {
                double product = double(d.w[((o * c.c + k) * c.kh + i) * c.kw + j]) *
                                 d.in[k * c.inC() + (y * c.sh + i * c.dh) * c.inH() +
                                      x * c.sw + j * c.dw];
                expected += product;
                magnitude += std::fabs(product);
              }
        ASSERT_NEAR(got[at], expected, 1e-6 * (1 + magnitude))
            << what << ": " << c.c << "->" << c.f << ", window " << c.kh << "x" << c.kw
            << ", output " << c.oh << "x" << c.ow << ", strides " << c.sh << "x" << c.sw
            << ", dilations " << c.dh << "x" << c.dw << ", at channel " << o << " row " << y
            << " column " << x;
      }
}

// Filter counts around the 16-channel blocks, windows and strides of the
// CNNs' layers, outputs narrower than a 6-position micro-tile and larger
// than a 96-position range (runs crossing rows), tap counts past a chunk of
// 144 (20 x 3 x 3), and padded tile strides.
std::vector<Case> cases() {
  return {
      {8, 16, 3, 3, 4, 56, 1, 1, 1, 1},     {16, 32, 3, 3, 7, 7, 1, 1, 1, 1},
      {20, 24, 3, 3, 5, 13, 1, 1, 1, 1},    {3, 5, 7, 7, 6, 9, 2, 2, 1, 1},
      {32, 40, 1, 1, 14, 14, 1, 1, 1, 1},   {17, 17, 1, 1, 7, 7, 2, 2, 1, 1},
      {12, 16, 3, 3, 9, 11, 2, 2, 1, 1},    {8, 48, 5, 5, 3, 17, 1, 1, 1, 1},
      {16, 16, 7, 1, 10, 8, 1, 1, 1, 1},    {16, 16, 1, 7, 8, 10, 1, 1, 1, 1},
      {6, 16, 3, 3, 11, 12, 1, 1, 2, 3},    {4, 1, 3, 3, 1, 1, 1, 1, 1, 1},
      {5, 33, 3, 3, 2, 100, 1, 1, 1, 1, 5, 3}, {9, 16, 3, 3, 13, 5, 1, 2, 1, 1, 2, 7},
  };
}

#if defined(__x86_64__)
TEST(PackedConvolutionTest, DirectKernel) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma"))
    GTEST_SKIP() << "this CPU has no AVX2 and FMA";
  std::mt19937 rng(11);
  for (const Case &c : cases()) {
    Data d = randomData(c, rng);
    int64_t taps = c.c * c.kh * c.kw;
    std::vector<int32_t> offsets(taps);
    ASSERT_TRUE(kilnDirectConvOffsets(c.c, c.kh, c.kw, c.dh, c.dw, c.inC(), c.inH(),
                                      offsets.data()));
    int64_t floats = kilnDirectConvPackedFloats(c.f, taps);
    ASSERT_EQ(floats % 16, 0);
    float *packed = static_cast<float *>(std::aligned_alloc(64, (floats * 4 + 63) / 64 * 64));
    ASSERT_NE(packed, nullptr);
    kilnDirectConvPack(d.w.data(), c.f, taps, packed);
    std::vector<float> out = d.out;
    kilnDirectConv2dAvx2(taps, c.oh, c.ow, c.sh, c.sw, d.in.data(), c.inH(), offsets.data(),
                         packed, c.f, out.data(), c.outF(), c.outH());
    std::free(packed);
    expectConvolution(c, d, d.out, out, "direct kernel");
  }
}

// A tap beyond 32-bit offsets is refused, not wrapped.
TEST(PackedConvolutionTest, DirectKernelOffsetsFit) {
  std::vector<int32_t> offsets(2 * 3 * 3);
  EXPECT_FALSE(kilnDirectConvOffsets(2, 3, 3, 1, 1, int64_t(1) << 31, 100, offsets.data()));
  EXPECT_TRUE(kilnDirectConvOffsets(2, 3, 3, 1, 1, 1 << 20, 100, offsets.data()));
  EXPECT_EQ(offsets[9 + 2 * 3 + 1], (1 << 20) + 2 * 100 + 1);
}
#endif

// The entry point, on one call site: two tile shapes (a band and its last,
// shorter one) and two filter addresses (tiles of the filters, constant as
// an artifact's are), each packed once and reused in the second round.
TEST(PackedConvolutionTest, EntryPoint) {
  std::mt19937 rng(5);
  const Case shapes[] = {{32, 32, 3, 3, 4, 20, 1, 1, 1, 1}, {32, 32, 3, 3, 2, 20, 1, 1, 1, 1}};
  std::vector<float> filters[2];
  for (std::vector<float> &w : filters)
    w = randomData(shapes[0], rng).w;
  void *slot = nullptr;
  for (int round = 0; round < 2; ++round)
    for (const Case &c : shapes)
      for (const std::vector<float> &w : filters) {
        Data d = randomData(c, rng);
        d.w = w;
        std::vector<float> out = d.out;
        kiln_conv2d_constant_w(&slot, 1, c.c, c.ih(), c.iw(), c.f, c.kh, c.kw, c.oh, c.ow, c.sh,
                               c.sw, c.dh, c.dw, d.in.data(), c.inC(), c.inH(), w.data(),
                               out.data(), c.outF(), c.outH());
        expectConvolution(c, d, d.out, out, "kiln_conv2d_constant_w");
      }
}

} // namespace
