/*===- BlockedConvolution.c - Convolutions on channel-blocked images -------===
 *
 * A kiln.blocked_conv (kiln-blocked-layout): a whole 2-D convolution whose
 * input and output are images in blocks of B = 16 or 8 channels,
 * N x C/B x H x W x B (oneDNN's nChw16c or nChw8c), by constant filters
 * (or a train step's, which change between calls), with its bias, its
 * addend (a residual branch, already in the output buffer) and its clamp (a
 * fused Relu or Clip) as the primitive's bias, sum and eltwise post-ops.
 * One oneDNN primitive per call site, built at the first call, with
 * constant filters reordered into its layout once and a train step's on
 * every call; the images
 * go in and out as they are, so a chain of these reorders nothing between
 * convolutions.
 *
 * A fused swish or hard swish (ConvActivation.h) comes between the sum
 * and the clamp. Kiln's Winograd kernel applies both to each tile it
 * writes; after oneDNN's primitive, one more pass over the output does,
 * because oneDNN's own eltwise post-op for a swish ran slower than that
 * (a 1x1 16->96 at 112x112 on Zen 1: 2.17 ms against 0.73 ms for the
 * convolution and about 1 ms for the pass).
 *
 * The generated code calls this outside its parallel loops, and oneDNN
 * spreads each convolution over all the threads. 3x3 filters at stride 1
 * (one group) use Winograd where oneDNN has it (AVX-512): F(4x4, 3x3)
 * where prefersLargeTiles says its larger tiles pay, else oneDNN's first
 * choice (F(2x2, 3x3) on whole images); the rest, oneDNN's direct
 * convolution (depthwise, 1x1 and strided kernels of their own). On CPUs
 * with AVX2 but not AVX-512, where oneDNN has no Winograd kernels, Kiln's
 * own F(4x4, 3x3) (WinogradConvolution.c) takes the 3x3 convolutions that
 * winogradOnAvx2 picks, its work items spread over the threads of the
 * OpenMP runtime the artifact's own loops use; on CPUs with AVX-512 it
 * takes a train step's, whose filters oneDNN's Winograd would have to
 * reorder on every call, in blocks of 16.
 *
 * Any failure to build or run the primitive makes the site compute the
 * convolution with plain loops, slowly but with the same result.
 *
 *===----------------------------------------------------------------------===*/
#include "ConvActivation.h"
#include "OneDnnSupport.h"
#ifdef KILN_CPU_KERNELS_X86
#include "CpuVectors.h"
#include "WinogradConvolution.h"

#include <omp.h>
#endif

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { N, C, IH, IW, F, GROUP, KH, KW, OH, OW, SH, SW, DH, DW, PT, PL, PB, PR, BLOCK, SHAPE };
/* kiln_conv2d_blocked's flags: the output holds an addend; the input is
 * NCHW (fewer channels than a block, one group); a swish or a hard swish
 * before the clamp; the filters change between calls (a train step's). */
enum { ACCUMULATE = 1, PLAIN_INPUT = 2, SWISH = 4, HARD_SWISH = 8, COMPUTED_FILTERS = 16 };

static KilnConvActivation activationOf(int64_t flags) {
  return flags & SWISH        ? KILN_ACTIVATION_SWISH
         : flags & HARD_SWISH ? KILN_ACTIVATION_HARD_SWISH
                              : KILN_ACTIVATION_NONE;
}

typedef struct BlockedSite {
  KilnSite base;
  /* oneDNN's primitive could not be built (the plain loops run), or the
   * site runs Kiln's Winograd kernel instead (and has no primitive). */
  int failed, winograd;
  dnnl_primitive_t conv;
  dnnl_memory_desc_t src, dst, userWeights, weights, bias, scratch;
  KilnPackedWeights *packed;
} BlockedSite;

static void release(KilnSite *base) {
  BlockedSite *site = (BlockedSite *)base;
  kilnDnnlFreePacked(site->packed);
  if (site->conv)
    dnnl_primitive_destroy(site->conv);
  free(site);
}

/* The filters' dimensions: (F, C, KH, KW), or (G, 1, 1, KH, KW) depthwise. */
static int weightDimsOf(const int64_t *s, dnnl_dims_t dims) {
  if (s[GROUP] == 1) {
    dims[0] = s[F], dims[1] = s[C], dims[2] = s[KH], dims[3] = s[KW];
    return 4;
  }
  dims[0] = s[GROUP], dims[1] = 1, dims[2] = 1, dims[3] = s[KH], dims[4] = s[KW];
  return 5;
}

/* The post-ops: a sum that adds what the output holds when `flags` has
 * ACCUMULATE, then an eltwise that clamps to [low, high] unless both are
 * infinite; NULL when there are none. */
static dnnl_post_ops_t postOpsOf(int64_t flags, float low, float high, int *ok) {
  int accumulate = (flags & ACCUMULATE) != 0;
  dnnl_post_ops_t postOps = NULL;
  *ok = 1;
  if (!accumulate && isinf(low) && isinf(high))
    return NULL;
  if (!kilnDnnlOk(dnnl_post_ops_create(&postOps)) ||
      (accumulate && !kilnDnnlOk(dnnl_post_ops_append_sum(postOps, 1.0f)))) {
    *ok = 0;
    return postOps;
  }
  if (isinf(low) && isinf(high))
    return postOps;
  if (low == 0.0f && isinf(high))
    *ok = kilnDnnlOk(dnnl_post_ops_append_eltwise(postOps, 1.0f, dnnl_eltwise_relu, 0.0f, 0.0f));
  else
    *ok = kilnDnnlOk(dnnl_post_ops_append_eltwise(postOps, 1.0f, dnnl_eltwise_clip,
                                                  isinf(low) ? -FLT_MAX : low,
                                                  isinf(high) ? FLT_MAX : high));
  return postOps;
}

/* A primitive descriptor for the site's convolution by `algorithm`, or NULL. */
static dnnl_primitive_desc_t describe(BlockedSite *site, const int64_t *s, int hasBias,
                                      dnnl_alg_kind_t algorithm, const char *prefer,
                                      int64_t flags, float low, float high) {
  dnnl_dims_t weightDims;
  int weightRank = weightDimsOf(s, weightDims);
  dnnl_memory_desc_t anyWeights;
  dnnl_dims_t strides = {s[SH], s[SW]}, dilates = {s[DH] - 1, s[DW] - 1};
  dnnl_dims_t padBegin = {s[PT], s[PL]}, padEnd = {s[PB], s[PR]};
  dnnl_convolution_desc_t desc;
  int ok = 0;
  dnnl_post_ops_t postOps = postOpsOf(flags, low, high, &ok);
  dnnl_primitive_attr_t attr = NULL;
  dnnl_primitive_desc_t convDesc = NULL;
  if (!ok ||
      !kilnDnnlOk(dnnl_memory_desc_init_by_tag(&anyWeights, weightRank, weightDims, dnnl_f32,
                                               dnnl_format_tag_any)) ||
      !kilnDnnlOk(dnnl_dilated_convolution_forward_desc_init(
          &desc, dnnl_forward_inference, algorithm, &site->src, &anyWeights,
          hasBias ? &site->bias : NULL, &site->dst, strides, dilates, padBegin, padEnd)) ||
      !(attr = kilnDnnlAttributes(postOps)) ||
      !(convDesc = kilnDnnlDescribe(&desc, attr, prefer)))
    convDesc = NULL;
  if (attr)
    dnnl_primitive_attr_destroy(attr);
  if (postOps)
    dnnl_post_ops_destroy(postOps);
  return convDesc;
}

/* Whether a Winograd convolution should take F(4x4, 3x3) over oneDNN's
 * first choice, F(2x2, 3x3). The larger tiles multiply 2.25 times per
 * output pixel where the smaller multiply 4, but transform 36-point tiles
 * and keep 36 transformed copies of the filters. They won 1.05x-1.6x on
 * 64-192 input channels at 17x17 and more (Inception-v3's 80->192 at 71x71:
 * 5.4 -> 3.5 ms, VGG's 128->128 at 112x112: 8.1 -> 5.3 ms), lost 1.07x-2.3x
 * on 32-48 input channels and on 7x7 to 14x14 images, and were no better
 * where the transformed filters pass 8 MiB (256->256 at 56x56). */
static int prefersLargeTiles(const int64_t *s) {
  enum { MIN_CHANNELS = 64, MIN_PIXELS = 16 * 16, MAX_FILTER_BYTES = 8 << 20 };
  return s[C] >= MIN_CHANNELS && s[OH] * s[OW] >= MIN_PIXELS &&
         36 * s[C] * s[F] * (int64_t)sizeof(float) <= MAX_FILTER_BYTES;
}

/* Whether Winograd pays at all. For a batch of images oneDNN offers only
 * F(4x4, 3x3), which lost to its direct kernel on fewer than 64 channels
 * of images larger than 128x128 (batch 8: Inception-v3's 32-channel stems
 * at 147x147, 11.8 and 26.0 ms against 9.7 and 17.7; 16 channels, 5.4
 * against 4.3) and won 1.5x-1.7x at 112x112 and on 64 channels. */
static int winogradPays(const int64_t *s) {
  enum { MIN_CHANNELS = 64, MAX_PIXELS = 128 * 128 };
  return s[N] == 1 || s[C] >= MIN_CHANNELS || s[OH] * s[OW] <= MAX_PIXELS;
}

/* With kilnDnnlLock held. */
static void build(BlockedSite *site, const int64_t *s, int hasBias, int64_t flags, float low,
                  float high) {
  dnnl_dims_t srcDims = {s[N], s[C], s[IH], s[IW]};
  dnnl_dims_t dstDims = {s[N], s[F], s[OH], s[OW]};
  dnnl_dims_t weightDims, biasDims = {s[F]};
  int weightRank = weightDimsOf(s, weightDims);
  dnnl_format_tag_t layout = s[BLOCK] == 8 ? dnnl_nChw8c : dnnl_nChw16c;
  site->failed = 1;
  if (!kilnDnnlInit() ||
      !kilnDnnlOk(dnnl_memory_desc_init_by_tag(&site->src, 4, srcDims, dnnl_f32,
                                               flags & PLAIN_INPUT ? dnnl_nchw : layout)) ||
      !kilnDnnlOk(dnnl_memory_desc_init_by_tag(&site->dst, 4, dstDims, dnnl_f32, layout)) ||
      !kilnDnnlOk(dnnl_memory_desc_init_by_tag(&site->bias, 1, biasDims, dnnl_f32, dnnl_a)) ||
      !kilnDnnlOk(dnnl_memory_desc_init_by_tag(&site->userWeights, weightRank, weightDims, dnnl_f32,
                                               weightRank == 4 ? dnnl_oihw : dnnl_goihw)))
    return;
  int winograd = s[GROUP] == 1 && s[KH] == 3 && s[KW] == 3 && s[SH] == 1 && s[SW] == 1 &&
                 s[DH] == 1 && s[DW] == 1 && winogradPays(s);
  dnnl_primitive_desc_t convDesc =
      winograd ? describe(site, s, hasBias, dnnl_convolution_winograd,
                          prefersLargeTiles(s) ? "wino_4x3" : NULL, flags, low, high)
               : NULL;
  if (!convDesc)
    convDesc = describe(site, s, hasBias, dnnl_convolution_direct, NULL, flags, low, high);
  if (convDesc && kilnDnnlOk(dnnl_primitive_create(&site->conv, convDesc))) {
    site->weights = *dnnl_primitive_desc_query_md(convDesc, dnnl_query_weights_md, 0);
    site->scratch = *dnnl_primitive_desc_query_md(convDesc, dnnl_query_scratchpad_md, 0);
    site->failed = 0;
  }
  if (convDesc)
    dnnl_primitive_desc_destroy(convDesc);
}

/* The convolution by plain loops on the blocked images, for a site oneDNN
 * could not build (not static: the runtime tests call it). */
void kilnBlockedConv2dLoops(const int64_t *s, const float *in, const float *w, const float *bias,
                            float *out, float low, float high, int64_t flags) {
  int accumulate = (flags & ACCUMULATE) != 0, plain = (flags & PLAIN_INPUT) != 0;
  KilnConvActivation activation = activationOf(flags);
  int64_t perGroup = s[C] / s[GROUP], filtersPerGroup = s[F] / s[GROUP], block = s[BLOCK];
  int64_t inBlocks = (s[C] + block - 1) / block, outBlocks = (s[F] + block - 1) / block;
  for (int64_t n = 0; n < s[N]; ++n)
    for (int64_t f = 0; f < outBlocks * block; ++f)
      for (int64_t y = 0; y < s[OH]; ++y)
        for (int64_t x = 0; x < s[OW]; ++x) {
          float *result =
              &out[(((n * outBlocks + f / block) * s[OH] + y) * s[OW] + x) * block + f % block];
          if (f >= s[F]) {
            *result = 0.0f; /* a padding lane */
            continue;
          }
          float sum = (bias ? bias[f] : 0.0f) + (accumulate ? *result : 0.0f);
          int64_t first = f / filtersPerGroup * perGroup;
          for (int64_t k = 0; k < perGroup; ++k) {
            int64_t c = first + k;
            for (int64_t i = 0; i < s[KH]; ++i) {
              int64_t iy = y * s[SH] - s[PT] + i * s[DH];
              if (iy < 0 || iy >= s[IH])
                continue;
              for (int64_t j = 0; j < s[KW]; ++j) {
                int64_t ix = x * s[SW] - s[PL] + j * s[DW];
                if (ix < 0 || ix >= s[IW])
                  continue;
                int64_t at =
                    plain ? ((n * s[C] + c) * s[IH] + iy) * s[IW] + ix
                          : (((n * inBlocks + c / block) * s[IH] + iy) * s[IW] + ix) * block +
                                c % block;
                sum += in[at] * w[((f * perGroup + k) * s[KH] + i) * s[KW] + j];
              }
            }
          }
          *result = kilnActivateClamped(sum, activation, low, high);
        }
}

/* The convolution of the site `slot` on dense images of shape `s`. */
static void convolve(void **slot, const int64_t *s, const float *in, const float *w,
                     const float *bias, float *out, float low, float high, int64_t flags) {
  pthread_mutex_lock(&kilnDnnlLock);
  BlockedSite *site = (BlockedSite *)*slot;
  if (!site && (site = calloc(1, sizeof(BlockedSite)))) {
    site->base.release = release;
    build(site, s, bias != NULL, flags, low, high);
    kilnDnnlRegister(&site->base);
    *slot = site;
  }
  /* Constant filters are reordered once per address; a train step's,
   * which change between calls, on every call into the thread's buffer. */
  int computed = (flags & COMPUTED_FILTERS) != 0, usable = site && !site->failed;
  KilnPackedWeights *packed =
      usable && !computed ? kilnDnnlPack(&site->packed, w, &site->userWeights, &site->weights)
                          : NULL;
  pthread_mutex_unlock(&kilnDnnlLock);

  dnnl_memory_t weights = packed ? packed->memory : NULL;
  void *filters = usable && computed
                      ? kilnDnnlThreadBuffer(2, dnnl_memory_desc_get_size(&site->weights))
                      : NULL;
  if (filters &&
      (!kilnDnnlOk(dnnl_memory_create(&weights, &site->weights, kilnDnnlEngine, filters)) ||
       !kilnDnnlReorder(w, &site->userWeights, weights))) {
    if (weights)
      dnnl_memory_destroy(weights);
    weights = NULL;
  }
  dnnl_memory_t src = NULL, dst = NULL, biasMemory = NULL;
  int done = weights &&
             kilnDnnlOk(dnnl_memory_create(&src, &site->src, kilnDnnlEngine, (void *)in)) &&
             kilnDnnlOk(dnnl_memory_create(&dst, &site->dst, kilnDnnlEngine, out)) &&
             (!bias || kilnDnnlOk(dnnl_memory_create(&biasMemory, &site->bias, kilnDnnlEngine,
                                                     (void *)bias)));
  if (done) {
    dnnl_exec_arg_t args[5] = {
        {DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst}};
    int count = 3;
    if (biasMemory)
      args[count++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, biasMemory};
    done = kilnDnnlExecute(site->conv, &site->scratch, count, args);
  }
  dnnl_memory_t memories[] = {src, dst, biasMemory, filters ? weights : NULL};
  for (int i = 0; i < 4; ++i)
    if (memories[i])
      dnnl_memory_destroy(memories[i]);
  if (!done)
    kilnBlockedConv2dLoops(s, in, w, bias, out, low, high, flags);
}

/* The plain loops on images `outStride` floats apart. */
static void convolveByLoops(const int64_t *s, const float *in, const float *w, const float *bias,
                            float *out, int64_t outStride, float low, float high, int64_t flags) {
  int64_t block = s[BLOCK];
  int64_t outImage = (s[F] + block - 1) / block * s[OH] * s[OW] * block;
  if (s[N] == 1 || outStride == outImage) {
    kilnBlockedConv2dLoops(s, in, w, bias, out, low, high, flags);
    return;
  }
  int64_t inImage = flags & PLAIN_INPUT ? s[C] * s[IH] * s[IW]
                                        : (s[C] + block - 1) / block * s[IH] * s[IW] * block;
  int64_t image[SHAPE];
  memcpy(image, s, sizeof(image));
  image[N] = 1;
  for (int64_t i = 0; i < s[N]; ++i)
    kilnBlockedConv2dLoops(image, in + i * inImage, w, bias, out + i * outStride, low, high, flags);
}

#ifdef KILN_CPU_KERNELS_X86
/* Whether Kiln's Winograd kernel takes the convolution: a 3x3 window at
 * stride 1, one group, at least 16 input channels, on images in blocks of
 * 8 on a CPU with AVX2 but not AVX-512, or by a train step's computed
 * filters on images in blocks of 16 (whole ones: c and f multiples of 16)
 * on a CPU with AVX-512 (either unless the environment sets
 * KILN_WINOGRAD=0), with enough tiles that the outputs fill at least half
 * their positions.
 *
 * On fewer channels the transforms, whose work grows with the channels
 * where the products' grows with their square, save little, and F(4x4,
 * 3x3)'s rounding (its transforms multiply by 1/6 and 1/24) is not worth
 * it. The 36 products stream the transformed filters, 4x the filters'
 * size, and on fewer tiles that costs more than the multiplications it
 * saves. Against oneDNN's direct kernel on two Zen 1 cores it won on
 * ResNet-50's 56x56 images (64->64: 3.05 -> 1.35 ms) and still on its 7x7
 * ones (4 tiles, 512->512: 3.5 -> 2.4 ms). */
static int winogradOnAvx2(const int64_t *s, int64_t flags) {
  enum { MIN_TILES = 4, MIN_CHANNELS = 16 };
  int narrow = s[BLOCK] == 8 && kilnWinogradRuns();
  int wide = s[BLOCK] == 16 && (flags & COMPUTED_FILTERS) && s[C] % 16 == 0 && s[F] % 16 == 0 &&
             kilnWinogradRunsInBlocksOf16();
  if (!(narrow || wide) || (flags & PLAIN_INPUT) || s[C] < MIN_CHANNELS || s[GROUP] != 1 ||
      s[KH] != 3 || s[KW] != 3 || s[SH] != 1 || s[SW] != 1 || s[DH] != 1 || s[DW] != 1)
    return 0;
  int64_t tiles = s[N] * ((s[OH] + 3) / 4) * ((s[OW] + 3) / 4);
  return tiles >= MIN_TILES && 2 * s[N] * s[OH] * s[OW] >= 16 * tiles;
}

/* The convolution by Kiln's Winograd kernel: the tiles in chunks and the
 * filters in groups of whole blocks of 16, one work item per chunk and
 * group, as many items as make the threads' shares even. Returns 0,
 * having written nothing, when it has no memory for the filters or its
 * buffers. */
static int winograd(void **slot, const int64_t *s, const float *in, const float *w,
                    const float *bias, float *out, int64_t outStride, float low, float high,
                    int64_t flags) {
  /* Tiles per work item: the products want many rows (each item streams
   * its share of the transformed filters once, and each 6 of its rows read
   * them from cache again), within 4 MiB of transformed tiles (tiles x 36
   * points x channels) per thread. */
  enum { MAX_ITEM_TILES = 64, MIN_ITEM_TILES = 12, ITEM_FLOATS = 1 << 20, FILTER_BLOCK = 16 };
  KilnWinogradConv conv = {.n = s[N],
                           .c = s[C],
                           .ih = s[IH],
                           .iw = s[IW],
                           .f = s[F],
                           .oh = s[OH],
                           .ow = s[OW],
                           .padTop = s[PT],
                           .padLeft = s[PL],
                           .block = s[BLOCK],
                           .in = in,
                           .bias = bias,
                           .out = out,
                           .outStride = outStride,
                           .low = low,
                           .high = high,
                           .accumulate = (flags & ACCUMULATE) != 0,
                           .activation = activationOf(flags)};
  pthread_mutex_lock(&kilnDnnlLock);
  BlockedSite *site = (BlockedSite *)*slot;
  if (!site && (site = calloc(1, sizeof(BlockedSite)))) {
    site->base.release = release;
    /* No oneDNN primitive: convolve() must never take it for one. */
    site->failed = site->winograd = 1;
    kilnDnnlRegister(&site->base);
    *slot = site;
  }
  /* Constant filters are transformed once per address; a train step's,
   * which change between calls, on every call into the calling thread's
   * buffer, the threads sharing their blocks of 16. */
  int computed = (flags & COMPUTED_FILTERS) != 0, fresh = 0;
  size_t filterBytes = (size_t)kilnWinogradPackedFloats(s[C], s[F]) * sizeof(float);
  KilnPackedWeights *packed = site && site->winograd && !computed
                                  ? kilnPackedEntry(&site->packed, w, filterBytes, &fresh)
                                  : NULL;
  if (packed && fresh)
    kilnWinogradPack(w, s[C], s[F], packed->data);
  int ready = site && site->winograd && (packed || computed) && kilnDnnlInit();
  pthread_mutex_unlock(&kilnDnnlLock);
  float *filters = !ready ? NULL : computed ? kilnDnnlThreadBuffer(1, filterBytes) : packed->data;
  if (!filters)
    return 0;
  int threads = omp_get_max_threads();
  int64_t filterBlocks = kilnWinogradFilterBlocks(s[F]);
  if (computed) {
#pragma omp parallel num_threads(threads)
    {
      int64_t thread = omp_get_thread_num(), team = omp_get_num_threads();
      int64_t first = filterBlocks * thread / team, last = filterBlocks * (thread + 1) / team;
      kilnWinogradPackBlocks(w, s[C], s[F], first, last - first, filters);
    }
  }
  conv.packed = filters;

  int64_t tiles = kilnWinogradTiles(&conv);
  int64_t c8 = (s[C] + 7) / 8 * 8, f8 = (s[F] + 7) / 8 * 8;
  int64_t perItem = ITEM_FLOATS / (KILN_WINOGRAD_POINTS * c8);
  perItem = perItem < MIN_ITEM_TILES ? MIN_ITEM_TILES : perItem;
  perItem = perItem > MAX_ITEM_TILES ? MAX_ITEM_TILES : perItem;
  int64_t chunks = (tiles + perItem - 1) / perItem, groups = 1;
  if (chunks >= threads)
    chunks = (chunks + threads - 1) / threads * threads;
  else
    groups = (threads + chunks - 1) / chunks;
  chunks = chunks > tiles ? tiles : chunks;
  groups = groups > filterBlocks ? filterBlocks : groups;
  perItem = (tiles + chunks - 1) / chunks;
  int64_t groupColumns = (filterBlocks + groups - 1) / groups * FILTER_BLOCK;
  int64_t scratchFloats = kilnWinogradScratchFloats(&conv, perItem, groupColumns);
  float *scratch = kilnDnnlThreadBuffer(2, (size_t)(threads * scratchFloats) * sizeof(float));
  if (!scratch)
    return 0;
  int64_t items = chunks * groups;
#pragma omp parallel num_threads(threads)
  {
    int64_t thread = omp_get_thread_num(), team = omp_get_num_threads();
    for (int64_t item = thread; item < items; item += team) {
      int64_t firstTile = item / groups * perItem, firstColumn = item % groups * groupColumns;
      int64_t count = tiles - firstTile < perItem ? tiles - firstTile : perItem;
      int64_t columns = f8 - firstColumn < groupColumns ? f8 - firstColumn : groupColumns;
      if (count > 0 && columns > 0)
        kilnWinogradConv2dAvx2(&conv, firstTile, count, firstColumn, columns,
                               scratch + thread * scratchFloats);
    }
  }
  return 1;
}
#endif

/* The `n` images of `image` floats at `out`, `stride` floats apart, become
 * min(high, max(low, activation(.))), in spans spread over the threads; a
 * clamp that moves zero leaves the lanes past `f` in the last block of
 * `block` (images of `pixels` pixels) zero. */
static void activate(float *out, int64_t n, int64_t image, int64_t stride,
                     KilnConvActivation activation, float low, float high, int64_t f, int64_t block,
                     int64_t pixels) {
  enum { SPAN = 1 << 14 }; /* floats, a multiple of 8 */
  int64_t spans = (image + SPAN - 1) / SPAN;
#ifdef KILN_CPU_KERNELS_X86
  int vectors = kilnCpuVectors() != KILN_VECTORS_BASELINE;
#pragma omp parallel for schedule(static)
#endif
  for (int64_t item = 0; item < n * spans; ++item) {
    float *data = out + item / spans * stride + item % spans * SPAN;
    int64_t count = image - item % spans * SPAN < SPAN ? image - item % spans * SPAN : SPAN;
#ifdef KILN_CPU_KERNELS_X86
    if (vectors) { /* images are whole blocks of 8 or 16 floats */
      kilnActivateSpanAvx2(data, count, activation, low, high);
      continue;
    }
#endif
    for (int64_t i = 0; i < count; ++i)
      data[i] = kilnActivateClamped(data[i], activation, low, high);
  }
  if (f % block == 0 || (low <= 0.0f && high >= 0.0f))
    return;
  for (int64_t i = 0; i < n; ++i) {
    float *last = out + i * stride + f / block * pixels * block;
    for (int64_t pixel = 0; pixel < pixels; ++pixel)
      memset(last + pixel * block + f % block, 0, (size_t)(block - f % block) * sizeof(float));
  }
}

/* The convolution of kiln_conv2d_blocked by oneDNN, or by the plain loops
 * where it has no primitive. */
static void convolveAll(void **slot, int64_t *shape, const float *in, const float *w,
                        const float *bias, float *out, int64_t outStride, float low, float high,
                        int64_t flags) {
  enum { MAX_PRODUCTS_PER_IMAGE_CALL = 256 };
  int64_t n = shape[N], c = shape[C], ih = shape[IH], iw = shape[IW], group = shape[GROUP];
  int64_t block = shape[BLOCK];
  int64_t outImage = (shape[F] + block - 1) / block * shape[OH] * shape[OW] * block;
  if (n == 1 || outStride == outImage) {
    convolve(slot, shape, in, w, bias, out, low, high, flags);
    return;
  }
  int64_t inImage = flags & PLAIN_INPUT ? c * ih * iw : (c + block - 1) / block * ih * iw * block;
  if (c / group * shape[KH] * shape[KW] > MAX_PRODUCTS_PER_IMAGE_CALL) {
    size_t imageBytes = (size_t)outImage * sizeof(float);
    pthread_mutex_lock(&kilnDnnlLock);
    int ready = kilnDnnlInit();
    pthread_mutex_unlock(&kilnDnnlLock);
    float *dense = ready ? kilnDnnlThreadBuffer(1, (size_t)n * imageBytes) : NULL;
    if (dense) {
      if (flags & ACCUMULATE)
        for (int64_t image = 0; image < n; ++image)
          memcpy(dense + image * outImage, out + image * outStride, imageBytes);
      convolve(slot, shape, in, w, bias, dense, low, high, flags);
      for (int64_t image = 0; image < n; ++image)
        memcpy(out + image * outStride, dense + image * outImage, imageBytes);
      return;
    }
    /* No buffer: the same sums by the plain loops, image by image (the
     * site's primitive is for the whole batch). */
    convolveByLoops(shape, in, w, bias, out, outStride, low, high, flags);
    return;
  }
  shape[N] = 1;
  for (int64_t image = 0; image < n; ++image)
    convolve(slot, shape, in + image * inImage, w, bias, out + image * outStride, low, high, flags);
}

/* out = clamp(act(conv(in, w) + bias [+ out]), low, high) for images in
 * blocks of `block` channels (8 or 16), adding what `out` holds when
 * `flags` has ACCUMULATE (a residual sum), act a swish with SWISH, a hard
 * swish with HARD_SWISH, else none: `in` is n x ceil(c/block) x ih x iw x block
 * (n x c x ih x iw with PLAIN_INPUT), dense, and `out` n images of
 * ceil(f/block) x oh x ow x block, each dense, `outStride` elements apart
 * (a slot of a concatenation along channels when that is more than an
 * image), the lanes past c and f in their last blocks zero; `w` is f x
 * c/group x kh x kw and `bias` (f elements, or NULL) are dense; `w` is
 * constant for the artifact's lifetime unless `flags` has COMPUTED_FILTERS
 * (a train step's weights: packed again on every call; the bias is read on
 * every call anyway); group is 1 or c (= f). Pads are top, left, bottom,
 * right. `slot` is the call site's zero-initialized 8 bytes.
 *
 * oneDNN's fast convolutions write dense images only. Images that are not
 * next to one another are convolved one by one where each output element
 * sums few products (SqueezeNet's expand convolutions: the copy would cost
 * as much as the convolution), else together into a dense buffer then
 * copied into their places: one image at a time, a 1x1 of 768 channels at
 * 17x17 (Inception-v3) ran 1.3x slower than on the batch, and its copy
 * costs less than that. Which of the two a site does follows from its
 * shape alone, so its primitive is built for the one it does. */
__attribute__((visibility("default"))) void
kiln_conv2d_blocked(void **slot, int64_t n, int64_t c, int64_t ih, int64_t iw, int64_t f,
                    int64_t group, int64_t kh, int64_t kw, int64_t oh, int64_t ow, int64_t sh,
                    int64_t sw, int64_t dh, int64_t dw, int64_t padTop, int64_t padLeft,
                    int64_t padBottom, int64_t padRight, int64_t block, const float *in,
                    const float *w, const float *bias, float *out, int64_t outStride, float low,
                    float high, int64_t flags) {
  int64_t shape[SHAPE] = {n,  c,  ih, iw, f,      group,   kh,        kw,       oh,   ow,
                          sh, sw, dh, dw, padTop, padLeft, padBottom, padRight, block};
#ifdef KILN_CPU_KERNELS_X86
  if (winogradOnAvx2(shape, flags)) {
    if (!winograd(slot, shape, in, w, bias, out, outStride, low, high, flags))
      convolveByLoops(shape, in, w, bias, out, outStride, low, high, flags);
    return;
  }
#endif
  KilnConvActivation activation = activationOf(flags);
  if (activation == KILN_ACTIVATION_NONE) {
    convolveAll(slot, shape, in, w, bias, out, outStride, low, high, flags);
    return;
  }
  convolveAll(slot, shape, in, w, bias, out, outStride, -INFINITY, INFINITY,
              flags & ~(int64_t)(SWISH | HARD_SWISH));
  activate(out, n, (f + block - 1) / block * oh * ow * block, outStride, activation, low, high, f,
           block, oh * ow);
}
