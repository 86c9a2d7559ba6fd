/*===- PackedConvolution.c - 2-D convolution tiles through oneDNN ----------===
 *
 * A convolution tile of Kiln's (one image, or a band of its rows, input
 * already padded) in plain NCHW, by constant filters. Kiln's own path copies
 * the input windows into a column buffer (im2col) nine times the input for a
 * 3x3 filter and multiplies with dnnl_sgemm. Here a call site keeps a oneDNN
 * convolution in its preferred blocked layouts (nChw16c on AVX-512): the
 * input is reordered into it, the filters once per address, and the result
 * is added back into the plain output by a reorder with a sum post-op (the
 * output holds the bias).
 *
 * 3x3 filters at stride 1 use Winograd where oneDNN has it: its F(4x4, 3x3)
 * kernel (36 multiplies per 4x4 output tile instead of 144) on bands of 2
 * or more rows, F(2x2, 3x3) on some shapes, and on bands of one row, where
 * it ran 6x slower (kiln-form-kernels cuts bands of whole 4-row tiles). The
 * transforms round differently from a direct sum, by a few ulp of the
 * largest partial sums. Other filters, or a build without it, get oneDNN's
 * direct convolution.
 *
 * On CPUs with AVX2 and FMA but not AVX-512, where oneDNN has no Winograd
 * kernels, a convolution of one group runs instead as Kiln's own direct
 * kernel (DirectConvolution.c) on the plain image as it is, its filters
 * packed once per address; KILN_DIRECT_CONV=0 in the environment turns
 * that off (to compare).
 *
 * Any failure to build the primitives makes the site compute the
 * convolution with plain loops, slowly but with the same result.
 *
 *===----------------------------------------------------------------------===*/
#include "OneDnnSupport.h"

#ifdef KILN_CPU_KERNELS_X86
#include "DirectConvolution.h"
#endif

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* C and F are channels per group; the image has G * C of them, the output
 * G * F (a depthwise convolution: C = F = 1). */
enum { G, C, IH, IW, F, KH, KW, OH, OW, SH, SW, DH, DW, IN_C, IN_H, OUT_F, OUT_H, SHAPE };

/* One shape of a call site. A site sees as many shapes as its kernel has
 * tile shapes: a band of rows that the tile size does not divide ends in a
 * shorter one. */
typedef struct ConvSite {
  KilnSite base;
  int64_t shape[SHAPE];
  int failed;
  /* Run by the direct kernel, each tap at its offset. */
  int direct;
  int32_t *offsets;
  dnnl_primitive_t conv, srcReorder, dstReorder;
  dnnl_memory_desc_t userSrc, userDst, userWeights, src, dst, weights;
  dnnl_memory_desc_t convScratch, srcScratch, dstScratch;
  /* This shape's packed filters, or those of an earlier shape that packs
   * them the same way. */
  KilnPackedWeights *ownPacked, **packed;
  struct ConvSite *nextShape;
} ConvSite;

/* Shapes a site keeps primitives for; more are computed plainly. */
enum { MAX_SHAPES = 4 };

static void release(KilnSite *base) {
  ConvSite *site = (ConvSite *)base;
  kilnDnnlFreePacked(site->ownPacked);
  free(site->offsets);
  dnnl_primitive_t primitives[] = {site->conv, site->srcReorder, site->dstReorder};
  for (int i = 0; i < 3; ++i)
    if (primitives[i])
      dnnl_primitive_destroy(primitives[i]);
  free(site);
}

/* A reorder from `from` to `to` (with a sum post-op when `accumulate`). */
static int reorder(const dnnl_memory_desc_t *from, const dnnl_memory_desc_t *to, int accumulate,
                   dnnl_primitive_t *primitive, dnnl_memory_desc_t *scratch) {
  dnnl_post_ops_t postOps = NULL;
  dnnl_primitive_attr_t attr = NULL;
  dnnl_primitive_desc_t desc = NULL;
  int made = (!accumulate || (kilnDnnlOk(dnnl_post_ops_create(&postOps)) &&
                              kilnDnnlOk(dnnl_post_ops_append_sum(postOps, 1.0f)))) &&
             (attr = kilnDnnlAttributes(postOps)) &&
             kilnDnnlOk(dnnl_reorder_primitive_desc_create(&desc, from, kilnDnnlEngine, to,
                                                          kilnDnnlEngine, attr)) &&
             kilnDnnlOk(dnnl_primitive_create(primitive, desc));
  if (made)
    *scratch = *dnnl_primitive_desc_query_md(desc, dnnl_query_scratchpad_md, 0);
  if (desc)
    dnnl_primitive_desc_destroy(desc);
  if (attr)
    dnnl_primitive_attr_destroy(attr);
  if (postOps)
    dnnl_post_ops_destroy(postOps);
  return made;
}

/* A primitive descriptor for the site's convolution by `algorithm`, in the
 * layouts oneDNN prefers, or NULL. */
/* The filters' dimensions: (G, F, C, KH, KW) with groups, else (F, C, KH, KW). */
static int weightDimsOf(const int64_t *s, dnnl_dims_t dims) {
  if (s[G] == 1) {
    dims[0] = s[F], dims[1] = s[C], dims[2] = s[KH], dims[3] = s[KW];
    return 4;
  }
  dims[0] = s[G], dims[1] = s[F], dims[2] = s[C], dims[3] = s[KH], dims[4] = s[KW];
  return 5;
}

static dnnl_primitive_desc_t describe(const int64_t *s, dnnl_alg_kind_t algorithm) {
  dnnl_dims_t srcDims = {1, s[G] * s[C], s[IH], s[IW]};
  dnnl_dims_t dstDims = {1, s[G] * s[F], s[OH], s[OW]};
  dnnl_dims_t weightDims;
  int weightRank = weightDimsOf(s, weightDims);
  dnnl_dims_t strides = {s[SH], s[SW]}, dilates = {s[DH] - 1, s[DW] - 1}, pads = {0, 0};
  dnnl_memory_desc_t anySrc, anyDst, anyWeights;
  dnnl_convolution_desc_t desc;
  dnnl_primitive_attr_t attr = NULL;
  dnnl_primitive_desc_t convDesc = NULL;
  if (kilnDnnlOk(dnnl_memory_desc_init_by_tag(&anySrc, 4, srcDims, dnnl_f32, dnnl_format_tag_any)) &&
      kilnDnnlOk(dnnl_memory_desc_init_by_tag(&anyDst, 4, dstDims, dnnl_f32, dnnl_format_tag_any)) &&
      kilnDnnlOk(dnnl_memory_desc_init_by_tag(&anyWeights, weightRank, weightDims, dnnl_f32,
                                              dnnl_format_tag_any)) &&
      kilnDnnlOk(dnnl_dilated_convolution_forward_desc_init(&desc, dnnl_forward_inference,
                                                            algorithm, &anySrc, &anyWeights, NULL,
                                                            &anyDst, strides, dilates, pads, pads)) &&
      (attr = kilnDnnlAttributes(NULL)) &&
      !kilnDnnlOk(dnnl_primitive_desc_create(&convDesc, &desc, attr, kilnDnnlEngine, NULL)))
    convDesc = NULL;
  if (attr)
    dnnl_primitive_attr_destroy(attr);
  return convDesc;
}

#ifdef KILN_CPU_KERNELS_X86
/* Makes `site` a direct kernel's where that runs it. With kilnDnnlLock held. */
static int buildDirect(ConvSite *site) {
  const int64_t *s = site->shape;
  if (s[G] != 1 || !kilnDirectConvRuns())
    return 0;
  site->offsets = malloc((size_t)(s[C] * s[KH] * s[KW]) * sizeof(int32_t));
  if (!site->offsets ||
      !kilnDirectConvOffsets(s[C], s[KH], s[KW], s[DH], s[DW], s[IN_C], s[IN_H], site->offsets)) {
    free(site->offsets);
    site->offsets = NULL;
    return 0;
  }
  site->direct = 1;
  site->failed = 0;
  return 1;
}

/* The filters `w` packed for the direct kernel, from `list` or made and
 * added to it; NULL without memory. With kilnDnnlLock held. */
static KilnPackedWeights *packDirect(KilnPackedWeights **list, const float *w, const int64_t *s) {
  int64_t taps = s[C] * s[KH] * s[KW];
  int fresh;
  KilnPackedWeights *p = kilnPackedEntry(
      list, w, (size_t)kilnDirectConvPackedFloats(s[F], taps) * sizeof(float), &fresh);
  if (fresh)
    kilnDirectConvPack(w, s[F], taps, p->data);
  return p;
}
#endif

/* With kilnDnnlLock held. */
static void build(ConvSite *site) {
  const int64_t *s = site->shape;
#ifdef KILN_CPU_KERNELS_X86
  if (buildDirect(site))
    return;
#endif
  dnnl_dims_t srcDims = {1, s[G] * s[C], s[IH], s[IW]};
  dnnl_dims_t dstDims = {1, s[G] * s[F], s[OH], s[OW]};
  dnnl_dims_t weightDims;
  int weightRank = weightDimsOf(s, weightDims);
  dnnl_dims_t srcStrides = {s[G] * s[C] * s[IN_C], s[IN_C], s[IN_H], 1};
  dnnl_dims_t dstStrides = {s[G] * s[F] * s[OUT_F], s[OUT_F], s[OUT_H], 1};
  site->failed = 1;
  if (!kilnDnnlInit() ||
      !kilnDnnlOk(dnnl_memory_desc_init_by_strides(&site->userSrc, 4, srcDims, dnnl_f32, srcStrides)) ||
      !kilnDnnlOk(dnnl_memory_desc_init_by_strides(&site->userDst, 4, dstDims, dnnl_f32, dstStrides)) ||
      !kilnDnnlOk(dnnl_memory_desc_init_by_tag(&site->userWeights, weightRank, weightDims, dnnl_f32,
                                               weightRank == 4 ? dnnl_oihw : dnnl_goihw)))
    return;
  int winograd = s[G] == 1 && s[KH] == 3 && s[KW] == 3 && s[SH] == 1 && s[SW] == 1 &&
                 s[DH] == 1 && s[DW] == 1;
  dnnl_primitive_desc_t convDesc = winograd ? describe(s, dnnl_convolution_winograd) : NULL;
  if (!convDesc)
    convDesc = describe(s, dnnl_convolution_direct);
  if (convDesc && kilnDnnlOk(dnnl_primitive_create(&site->conv, convDesc))) {
    site->src = *dnnl_primitive_desc_query_md(convDesc, dnnl_query_src_md, 0);
    site->dst = *dnnl_primitive_desc_query_md(convDesc, dnnl_query_dst_md, 0);
    site->weights = *dnnl_primitive_desc_query_md(convDesc, dnnl_query_weights_md, 0);
    site->convScratch = *dnnl_primitive_desc_query_md(convDesc, dnnl_query_scratchpad_md, 0);
    site->failed = !reorder(&site->userSrc, &site->src, 0, &site->srcReorder, &site->srcScratch) ||
                   !reorder(&site->dst, &site->userDst, 1, &site->dstReorder, &site->dstScratch);
  }
  if (convDesc)
    dnnl_primitive_desc_destroy(convDesc);
}

/* The convolution by plain loops, for a site oneDNN could not build. */
static void direct(const int64_t *s, const float *in, const float *w, float *out) {
  for (int64_t g = 0; g < s[G]; ++g)
    for (int64_t f = 0; f < s[F]; ++f)
      for (int64_t c = 0; c < s[C]; ++c)
        for (int64_t i = 0; i < s[KH]; ++i)
          for (int64_t j = 0; j < s[KW]; ++j) {
            float weight = w[(((g * s[F] + f) * s[C] + c) * s[KH] + i) * s[KW] + j];
            for (int64_t y = 0; y < s[OH]; ++y) {
              const float *row = in + (g * s[C] + c) * s[IN_C] +
                                 (y * s[SH] + i * s[DH]) * s[IN_H] + j * s[DW];
              float *result = out + (g * s[F] + f) * s[OUT_F] + y * s[OUT_H];
              for (int64_t x = 0; x < s[OW]; ++x)
                result[x] += weight * row[x * s[SW]];
            }
          }
}

/* out[g*f + o][y][x] += sum over c, i, j of in[g*c + k][y*sh + i*dh][x*sw +
 * j*dw] * w[g][o][k][i][j], for one image and `groups` groups of c input and
 * f output channels each: `in` is (groups*c) x ih x iw with strides (inC,
 * inH, 1), already padded; `out` is (groups*f) x oh x ow with strides (outF,
 * outH, 1); `w` is dense and constant for the artifact's lifetime. `slot` is
 * the call site's zero-initialized 8 bytes. */
__attribute__((visibility("default"))) void
kiln_conv2d_constant_w(void **slot, int64_t groups, int64_t c, int64_t ih, int64_t iw, int64_t f,
                       int64_t kh, int64_t kw, int64_t oh, int64_t ow, int64_t sh, int64_t sw,
                       int64_t dh, int64_t dw, const float *in, int64_t inC, int64_t inH,
                       const float *w, float *out, int64_t outF, int64_t outH) {
  const int64_t shape[SHAPE] = {groups, c,  ih, iw, f,  kh,  kw,  oh,  ow,
                                sh,     sw, dh, dw, inC, inH, outF, outH};
  pthread_mutex_lock(&kilnDnnlLock);
  ConvSite *site = (ConvSite *)*slot;
  /* A slot shared with kiln_matmul_constant_a holds that entry's sites
   * (their `release` tells them apart): never read as this one's. */
  if (site && site->base.release != release) {
    pthread_mutex_unlock(&kilnDnnlLock);
    direct(shape, in, w, out);
    return;
  }
  int shapes = 0;
  for (; site && memcmp(site->shape, shape, sizeof(shape)) != 0; site = site->nextShape)
    ++shapes;
  if (!site && shapes < MAX_SHAPES && (site = calloc(1, sizeof(ConvSite)))) {
    site->base.release = release;
    memcpy(site->shape, shape, sizeof(shape));
    build(site);
    site->packed = &site->ownPacked;
    for (ConvSite *other = (ConvSite *)*slot; other && !site->failed; other = other->nextShape)
      if (!other->failed && other->direct == site->direct &&
          (site->direct ? other->shape[F] == shape[F] && other->shape[C] == shape[C] &&
                              other->shape[KH] == shape[KH] && other->shape[KW] == shape[KW]
                        : dnnl_memory_desc_equal(&other->weights, &site->weights))) {
        site->packed = &other->ownPacked;
        break;
      }
    kilnDnnlRegister(&site->base);
    site->nextShape = (ConvSite *)*slot;
    *slot = site;
  }
  int usable = site && !site->failed;
#ifdef KILN_CPU_KERNELS_X86
  if (usable && site->direct) {
    KilnPackedWeights *packed = packDirect(site->packed, w, shape);
    pthread_mutex_unlock(&kilnDnnlLock);
    if (packed)
      kilnDirectConv2dAvx2(c * kh * kw, oh, ow, sh, sw, in, inH, site->offsets, packed->data, f,
                           out, outF, outH);
    else
      direct(shape, in, w, out);
    return;
  }
#endif
  KilnPackedWeights *weights =
      usable ? kilnDnnlPack(site->packed, w, &site->userWeights, &site->weights) : NULL;
  pthread_mutex_unlock(&kilnDnnlLock);

  dnnl_memory_t userSrc = NULL, src = NULL, dst = NULL, userDst = NULL;
  void *srcBuffer = weights ? kilnDnnlThreadBuffer(1, dnnl_memory_desc_get_size(&site->src)) : NULL;
  void *dstBuffer = weights ? kilnDnnlThreadBuffer(2, dnnl_memory_desc_get_size(&site->dst)) : NULL;
  size_t scratchBytes = 0;
  if (weights) {
    const dnnl_memory_desc_t *scratches[] = {&site->convScratch, &site->srcScratch, &site->dstScratch};
    for (int i = 0; i < 3; ++i) {
      size_t bytes = dnnl_memory_desc_get_size(scratches[i]);
      scratchBytes = bytes > scratchBytes ? bytes : scratchBytes;
    }
  }
  /* Every buffer is allocated before anything is written to `out`, so a
   * failure falls back to the loops without adding twice. */
  int done = srcBuffer && dstBuffer && (!scratchBytes || kilnDnnlThreadBuffer(0, scratchBytes)) &&
             kilnDnnlOk(dnnl_memory_create(&userSrc, &site->userSrc, kilnDnnlEngine, (void *)in)) &&
             kilnDnnlOk(dnnl_memory_create(&src, &site->src, kilnDnnlEngine, srcBuffer)) &&
             kilnDnnlOk(dnnl_memory_create(&dst, &site->dst, kilnDnnlEngine, dstBuffer)) &&
             kilnDnnlOk(dnnl_memory_create(&userDst, &site->userDst, kilnDnnlEngine, out));
  if (done) {
    dnnl_exec_arg_t toBlocked[3] = {{DNNL_ARG_FROM, userSrc}, {DNNL_ARG_TO, src}};
    dnnl_exec_arg_t convolve[4] = {
        {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights->memory}, {DNNL_ARG_DST, dst}};
    dnnl_exec_arg_t back[3] = {{DNNL_ARG_FROM, dst}, {DNNL_ARG_TO, userDst}};
    done = kilnDnnlExecute(site->srcReorder, &site->srcScratch, 2, toBlocked) &&
           kilnDnnlExecute(site->conv, &site->convScratch, 3, convolve) &&
           kilnDnnlExecute(site->dstReorder, &site->dstScratch, 2, back);
  }
  dnnl_memory_t memories[] = {userSrc, src, dst, userDst};
  for (int i = 0; i < 4; ++i)
    if (memories[i])
      dnnl_memory_destroy(memories[i]);
  if (!done)
    direct(shape, in, w, out);
}
