/*===- DepthwiseDispatch.c - Picks the depthwise kernel the CPU runs -------===
 *
 * kiln_depthwise_conv2d, which generated code calls, forwards to the build
 * of DepthwiseConvolution.c with the widest vectors this CPU and its
 * operating system support (AVX-512, AVX2 with FMA, or the baseline), read
 * once with CPUID.
 *
 *===----------------------------------------------------------------------===*/
#include <stdint.h>

typedef void DepthwiseFn(int64_t groups, int64_t kh, int64_t kw, int64_t oh, int64_t ow,
                         int64_t sh, int64_t sw, int64_t dh, int64_t dw, const float *in,
                         int64_t inC, int64_t inH, int64_t ih, int64_t iw, int64_t padTop,
                         int64_t padLeft, const float *w, const float *bias, int64_t init,
                         float lo, float hi, float *out, int64_t outF, int64_t outH);

DepthwiseFn kilnDepthwiseConv2dGeneric;
#ifdef KILN_DEPTHWISE_X86
#include <cpuid.h>

DepthwiseFn kilnDepthwiseConv2dAvx2, kilnDepthwiseConv2dAvx512;

static uint64_t enabledStates(void) {
  uint32_t low, high;
  __asm__("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
  return ((uint64_t)high << 32) | low;
}

static DepthwiseFn *choose(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE) || !(c & bit_AVX))
    return kilnDepthwiseConv2dGeneric;
  int fma = (c & bit_FMA) != 0;
  uint64_t states = enabledStates();
  /* The OS saves the SSE and AVX registers (and, for AVX-512, the opmask
   * and upper ZMM ones). */
  if ((states & 0x6) != 0x6 || !__get_cpuid_count(7, 0, &a, &b, &c, &d))
    return kilnDepthwiseConv2dGeneric;
  if ((b & bit_AVX512F) && (states & 0xe6) == 0xe6)
    return kilnDepthwiseConv2dAvx512;
  if ((b & bit_AVX2) && fma)
    return kilnDepthwiseConv2dAvx2;
  return kilnDepthwiseConv2dGeneric;
}
#else
static DepthwiseFn *choose(void) { return kilnDepthwiseConv2dGeneric; }
#endif

/* The depthwise convolution of `groups` channels of the image `in`
 * [groups][ih][iw] (strides inC, inH, 1) by the filters `w` [groups][kh][kw]
 * (dense), at strides sh, sw and dilations dh, dw, into `out`
 * [groups][oh][ow] (strides outF, outH, 1). The window reads a padded image
 * in which `in` starts at row padTop and column padLeft, zero elsewhere (an
 * image already padded: 0, 0 and its whole extent).
 * With init 0 the sums are added to `out`; with init 1 `out` becomes
 * bias[g] (0 without a bias) plus the sum, then min(max(., lo), hi) (pass
 * -INFINITY and INFINITY for no clamp). */
__attribute__((visibility("default"))) void
kiln_depthwise_conv2d(int64_t groups, int64_t kh, int64_t kw, int64_t oh, int64_t ow, int64_t sh,
                      int64_t sw, int64_t dh, int64_t dw, const float *in, int64_t inC,
                      int64_t inH, int64_t ih, int64_t iw, int64_t padTop, int64_t padLeft,
                      const float *w, const float *bias, int64_t init, float lo, float hi,
                      float *out, int64_t outF, int64_t outH) {
  static DepthwiseFn *chosen;
  DepthwiseFn *kernel = __atomic_load_n(&chosen, __ATOMIC_RELAXED);
  if (!kernel) {
    kernel = choose();
    __atomic_store_n(&chosen, kernel, __ATOMIC_RELAXED);
  }
  kernel(groups, kh, kw, oh, ow, sh, sw, dh, dw, in, inC, inH, ih, iw, padTop, padLeft, w, bias,
         init, lo, hi, out, outF, outH);
}
