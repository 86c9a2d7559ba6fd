/*===- DepthwiseDispatch.c - Picks the depthwise kernel the CPU runs -------===
 *
 * kiln_depthwise_conv2d, which generated code calls, forwards to the build
 * of DepthwiseConvolution.c with the widest vectors this CPU and its
 * operating system support (AVX-512, AVX2 with FMA, or the baseline,
 * CpuVectors.h).
 *
 *===----------------------------------------------------------------------===*/
#include "CpuVectors.h"

#include <stdint.h>

typedef void DepthwiseFn(int64_t groups, int64_t kh, int64_t kw, int64_t oh, int64_t ow,
                         int64_t sh, int64_t sw, int64_t dh, int64_t dw, const float *in,
                         int64_t inC, int64_t inH, int64_t ih, int64_t iw, int64_t padTop,
                         int64_t padLeft, const float *w, const float *bias, int64_t init,
                         float lo, float hi, float *out, int64_t outF, int64_t outH);

DepthwiseFn kilnDepthwiseConv2dGeneric;
#ifdef KILN_CPU_KERNELS_X86
DepthwiseFn kilnDepthwiseConv2dAvx2, kilnDepthwiseConv2dAvx512;

static DepthwiseFn *choose(void) {
  switch (kilnCpuVectors()) {
  case KILN_VECTORS_AVX512:
    return kilnDepthwiseConv2dAvx512;
  case KILN_VECTORS_AVX2:
    return kilnDepthwiseConv2dAvx2;
  default:
    return kilnDepthwiseConv2dGeneric;
  }
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
