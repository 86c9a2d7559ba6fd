/*===- BlockedPool.c - Max and average pools of channel-blocked images -----===
 *
 * A kiln.max_pool or kiln.average_pool of an image in blocks of B = 16 or
 * 8 channels, N x C/B x H x W x B (oneDNN's nChw16c or nChw8c), as ONNX
 * defines them:
 * one oneDNN pooling primitive per call site, built at the first call, run
 * on the images as they are. oneDNN's pooling kernels read each window
 * straight from the image (no padded copy) and keep the B lanes of an
 * output in one register; Kiln's own loops for these (pad, sum or max over
 * the window, scale) ran 2-5 times longer (Inception-v3's 3x3 average pools
 * at 35x35: 0.16-0.28 ms against 0.03).
 *
 * ONNX's ceil mode is oneDNN's floor mode with the end pads grown until the
 * last window fits. A max pool ignores the padding, and so does an average
 * pool that does not count it (count_include_pad = 0); one that counts it
 * counts only the explicit pads, so where ceil mode adds more the site
 * computes the pool with plain loops instead, as it does when oneDNN cannot
 * build the primitive: slowly, with the same result.
 *
 * The generated code calls this outside its parallel loops, and oneDNN
 * spreads each pool over all the threads.
 *
 *===----------------------------------------------------------------------===*/
#include "OneDnnSupport.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

enum { N, CB, IH, IW, OH, OW, KH, KW, SH, SW, DH, DW, PT, PL, PB, PR, BLOCK, SHAPE };
/* The most channels a block has. */
enum { MAX_BLOCK = 16 };
/* kiln_pool2d_blocked's kinds. */
enum { MAX = 0, AVERAGE_COUNTING_PADS = 1, AVERAGE = 2 };

typedef struct PoolSite {
  KilnSite base;
  int failed;
  dnnl_primitive_t pool;
  dnnl_memory_desc_t src, dst, scratch;
} PoolSite;

static void release(KilnSite *base) {
  PoolSite *site = (PoolSite *)base;
  if (site->pool)
    dnnl_primitive_destroy(site->pool);
  free(site);
}

/* The end pad along one axis that makes oneDNN's floor-mode output size
 * `out`: the explicit pad, or more where ceil mode needs the last window to
 * reach further. */
static int64_t endPad(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t dilation,
                      int64_t begin, int64_t end) {
  int64_t needed = (out - 1) * stride + (kernel - 1) * dilation + 1 - in - begin;
  return needed > end ? needed : end;
}

/* With kilnDnnlLock held. */
static void build(PoolSite *site, const int64_t *s, int64_t kind) {
  site->failed = 1;
  int64_t bottom = endPad(s[IH], s[OH], s[KH], s[SH], s[DH], s[PT], s[PB]);
  int64_t right = endPad(s[IW], s[OW], s[KW], s[SW], s[DW], s[PL], s[PR]);
  /* Counting pads that ONNX does not (those ceil mode adds). */
  if (kind == AVERAGE_COUNTING_PADS && (bottom != s[PB] || right != s[PR]))
    return;
  dnnl_dims_t srcDims = {s[N], s[CB] * s[BLOCK], s[IH], s[IW]};
  dnnl_dims_t dstDims = {s[N], s[CB] * s[BLOCK], s[OH], s[OW]};
  dnnl_format_tag_t layout = s[BLOCK] == 8 ? dnnl_nChw8c : dnnl_nChw16c;
  dnnl_dims_t kernel = {s[KH], s[KW]}, strides = {s[SH], s[SW]};
  dnnl_dims_t dilates = {s[DH] - 1, s[DW] - 1};
  dnnl_dims_t padBegin = {s[PT], s[PL]}, padEnd = {bottom, right};
  dnnl_alg_kind_t algorithm = kind == MAX                     ? dnnl_pooling_max
                              : kind == AVERAGE_COUNTING_PADS ? dnnl_pooling_avg_include_padding
                                                              : dnnl_pooling_avg_exclude_padding;
  dnnl_pooling_v2_desc_t desc;
  dnnl_primitive_attr_t attr = NULL;
  dnnl_primitive_desc_t poolDesc = NULL;
  if (kilnDnnlInit() &&
      kilnDnnlOk(dnnl_memory_desc_init_by_tag(&site->src, 4, srcDims, dnnl_f32, layout)) &&
      kilnDnnlOk(dnnl_memory_desc_init_by_tag(&site->dst, 4, dstDims, dnnl_f32, layout)) &&
      kilnDnnlOk(dnnl_pooling_v2_forward_desc_init(&desc, dnnl_forward_inference, algorithm,
                                                   &site->src, &site->dst, strides, kernel, dilates,
                                                   padBegin, padEnd)) &&
      (attr = kilnDnnlAttributes(NULL)) && (poolDesc = kilnDnnlDescribe(&desc, attr, NULL)) &&
      kilnDnnlOk(dnnl_primitive_create(&site->pool, poolDesc))) {
    site->scratch = *dnnl_primitive_desc_query_md(poolDesc, dnnl_query_scratchpad_md, 0);
    site->failed = 0;
  }
  if (poolDesc)
    dnnl_primitive_desc_destroy(poolDesc);
  if (attr)
    dnnl_primitive_attr_destroy(attr);
}

/* The pool by plain loops on the blocked images, for a site oneDNN could
 * not build (not static: the runtime tests call it). */
void kilnBlockedPool2dLoops(const int64_t *s, const float *in, float *out, int64_t kind) {
  const int64_t block = s[BLOCK];
  for (int64_t n = 0; n < s[N]; ++n)
    for (int64_t b = 0; b < s[CB]; ++b)
      for (int64_t y = 0; y < s[OH]; ++y)
        for (int64_t x = 0; x < s[OW]; ++x) {
          float result[MAX_BLOCK];
          int64_t counted = 0;
          for (int64_t lane = 0; lane < block; ++lane)
            result[lane] = kind == MAX ? -INFINITY : 0.0f;
          for (int64_t i = 0; i < s[KH]; ++i) {
            int64_t iy = y * s[SH] - s[PT] + i * s[DH];
            for (int64_t j = 0; j < s[KW]; ++j) {
              int64_t ix = x * s[SW] - s[PL] + j * s[DW];
              int inside = iy >= 0 && iy < s[IH] && ix >= 0 && ix < s[IW];
              /* Counting pads: the explicit ones only, not ceil mode's. */
              counted += kind == AVERAGE_COUNTING_PADS
                             ? iy < s[IH] + s[PB] && ix < s[IW] + s[PR]
                             : inside;
              if (!inside)
                continue;
              const float *v = &in[(((n * s[CB] + b) * s[IH] + iy) * s[IW] + ix) * block];
              for (int64_t lane = 0; lane < block; ++lane)
                /* A NaN in the window gives NaN, as the loops Kiln generates elsewhere. */
                result[lane] = kind != MAX                          ? result[lane] + v[lane]
                               : v[lane] > result[lane] || isnan(v[lane]) ? v[lane]
                                                                       : result[lane];
            }
          }
          float *o = &out[(((n * s[CB] + b) * s[OH] + y) * s[OW] + x) * block];
          for (int64_t lane = 0; lane < block; ++lane)
            o[lane] = kind == MAX ? result[lane] : result[lane] / (float)(counted ? counted : 1);
        }
}

/* out = pool(in) for images in blocks of `block` channels (8 or 16): `in`
 * is n x cb x ih x iw x block and `out` n x cb x oh x ow x block, both
 * dense (padding lanes of zeros give zeros); `kind` is 0 (max), 1 (average
 * counting the explicit pads) or 2 (average over the input alone). Pads
 * are top, left, bottom, right; oh and ow are the pool's (ceil mode's
 * included). `slot` is the call site's zero-initialized 8 bytes. */
__attribute__((visibility("default"))) void
kiln_pool2d_blocked(void **slot, int64_t n, int64_t cb, int64_t ih, int64_t iw, int64_t oh,
                    int64_t ow, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t dh,
                    int64_t dw, int64_t padTop, int64_t padLeft, int64_t padBottom,
                    int64_t padRight, int64_t block, const float *in, float *out, int64_t kind) {
  const int64_t shape[SHAPE] = {n,  cb, ih, iw,     oh,      ow,        kh,       kw,   sh,
                                sw, dh, dw, padTop, padLeft, padBottom, padRight, block};
  pthread_mutex_lock(&kilnDnnlLock);
  PoolSite *site = (PoolSite *)*slot;
  if (!site && (site = calloc(1, sizeof(PoolSite)))) {
    site->base.release = release;
    build(site, shape, kind);
    kilnDnnlRegister(&site->base);
    *slot = site;
  }
  int usable = site && !site->failed;
  pthread_mutex_unlock(&kilnDnnlLock);

  dnnl_memory_t src = NULL, dst = NULL;
  int done = usable &&
             kilnDnnlOk(dnnl_memory_create(&src, &site->src, kilnDnnlEngine, (void *)in)) &&
             kilnDnnlOk(dnnl_memory_create(&dst, &site->dst, kilnDnnlEngine, out));
  if (done) {
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}};
    done = kilnDnnlExecute(site->pool, &site->scratch, 2, args);
  }
  if (src)
    dnnl_memory_destroy(src);
  if (dst)
    dnnl_memory_destroy(dst);
  if (!done)
    kilnBlockedPool2dLoops(shape, in, out, kind);
}
