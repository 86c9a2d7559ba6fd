/*===- PackedMatmul.c - f32 matmul tiles with weights packed once ----------===
 *
 * Linked into every CPU artifact that multiplies by constant weights (kilnc
 * adds this archive to the link; only what the artifact calls is pulled in).
 *
 * dnnl_sgemm repacks both operands on every call. For a constant B (a layer's
 * weights) that work is the same on every run, so a call site here keeps a
 * oneDNN matmul primitive and, per B address it meets (one per tile of the
 * weights), a copy of B in the primitive's own blocked layout, made on the
 * first call. MLP layers of batch 64 run about 15 % faster on AVX-512.
 *
 * Where kilnDirectConvRuns (AVX2 without AVX-512), products of few rows
 * (batch-1 and small-batch inference; takesSmall) run instead as
 * Kiln's own kernel (kilnSmallMatmulAvx2, DirectConvolution.c), B packed
 * once per address into blocks of 16 columns and streamed once per call:
 * oneDNN's matmul took 2-3x ONNX Runtime's time there (K 2048, N 1000:
 * 0.26 ms at 4 rows on two Zen 3 cores, against 0.12).
 *
 * kiln_matmul_constant_a does the same for products whose constant operand
 * is the left one (convolution filters) and that have few columns: it runs
 * the transposed product, or, where kilnDirectConvRuns, the 1x1
 * convolution it is through kiln_conv2d_constant_w (PackedConvolution.c).
 *
 * A call site is an 8-byte slot in the artifact's data, zero at load. Any
 * failure to build the primitive (an unusual shape, out of memory) turns the
 * site into plain dnnl_sgemm calls, which compute the same product. The
 * packed copies are freed when the artifact is unloaded.
 *
 *===----------------------------------------------------------------------===*/
#include "OneDnnSupport.h"

#ifdef KILN_CPU_KERNELS_X86
#include "DirectConvolution.h"
#endif

#include <stdint.h>
#include <stdlib.h>

/* One shape of a call site. A site sees as many shapes as its kernel has
 * tile shapes: a dimension that the tile size does not divide ends in a
 * smaller tile. */
typedef struct MatmulSite {
  KilnSite base;
  /* transposed: A stored transposed and C a dense buffer written, not
   * added to (kiln_matmul_constant_a's transposed product); accumulate: C
   * added to, not written over. */
  int64_t transposed, accumulate, transB, m, n, k, lda, ldb, ldc;
  int failed; /* fall back to dnnl_sgemm */
  int small;  /* run by kilnSmallMatmulAvx2, B packed in its blocks */
  dnnl_primitive_t matmul;
  dnnl_memory_desc_t aDesc, bDesc, cDesc, packedDesc, scratchDesc;
  /* This shape's packed weights, or those of an earlier shape that packs
   * them the same way. */
  KilnPackedWeights *ownWeights, **weights;
  struct MatmulSite *nextShape;
} MatmulSite;

/* Shapes a site keeps primitives for; more are computed by dnnl_sgemm. */
enum { MAX_SHAPES = 4 };
/* Products that kilnSmallMatmulAvx2 takes: every one of at most
 * SMALL_MATMUL_ROWS rows, and those of at most SMALL_MATMUL_MAX_ROWS rows at
 * most SMALL_MATMUL_MAX_DEPTH deep. On two Zen 3 cores it beat oneDNN's
 * matmul on the four Gemm/MatMul sweep families at 17 and 32 rows
 * (1.05-1.7x), but lost two of them at 64 (K 2048 and 3072: 0.84x, A no
 * longer in L2 for each block of B). At 1024 deep, 64 rows of A take 256
 * KiB, half of Zen's 512 KiB L2; 768 deep, on two Zen 1 cores, Kiln's
 * kernel was the faster from 37 to 61 rows (Gemm K 768 N 3072 at 57 rows:
 * 4.23 against 4.97 ms). The depth alone decides, so that the tiles of one
 * product (64 rows and 36, say) agree and keep one packing of B. */
enum { SMALL_MATMUL_ROWS = 32, SMALL_MATMUL_MAX_ROWS = 64, SMALL_MATMUL_MAX_DEPTH = 1024 };

/* Whether kilnSmallMatmulAvx2 takes a product of m rows, k deep. */
static int takesSmall(int64_t m, int64_t k) {
  return m <= SMALL_MATMUL_ROWS || (m <= SMALL_MATMUL_MAX_ROWS && k <= SMALL_MATMUL_MAX_DEPTH);
}

static void release(KilnSite *base) {
  MatmulSite *site = (MatmulSite *)base;
  kilnDnnlFreePacked(site->ownWeights);
  if (site->matmul)
    dnnl_primitive_destroy(site->matmul);
  free(site);
}

/* A rows x cols matrix stored row-major with leading dimension ld, or, when
 * `transposed`, column-major (its transpose stored row-major). */
static void describe(dnnl_memory_desc_t *desc, int64_t rows, int64_t cols, int64_t ld,
                     int transposed) {
  dnnl_dims_t dims = {rows, cols}, strides = {ld, 1};
  if (transposed)
    strides[0] = 1, strides[1] = ld;
  dnnl_memory_desc_init_by_strides(desc, 2, dims, dnnl_f32, strides);
}

/* Builds the site's primitive: C = A * B, or C += A * B where the site
 * accumulates (a sum post-op: the loops it replaces add onto a bias), B in
 * whatever layout oneDNN prefers. With kilnDnnlLock held. */
static void build(MatmulSite *site) {
  if (!site->transposed && takesSmall(site->m, site->k) && kilnDirectConvRuns()) {
    site->small = 1;
    return;
  }
  describe(&site->aDesc, site->m, site->k, site->lda, site->transposed != 0);
  describe(&site->bDesc, site->k, site->n, site->ldb, site->transB != 0);
  describe(&site->cDesc, site->m, site->n, site->ldc, 0);
  dnnl_memory_desc_t anyB;
  dnnl_dims_t bDims = {site->k, site->n};
  dnnl_matmul_desc_t desc;
  dnnl_post_ops_t postOps = NULL;
  dnnl_primitive_attr_t attr = NULL;
  dnnl_primitive_desc_t primitiveDesc = NULL;
  site->failed = 1;
  if (kilnDnnlInit() &&
      kilnDnnlOk(dnnl_memory_desc_init_by_tag(&anyB, 2, bDims, dnnl_f32, dnnl_format_tag_any)) &&
      kilnDnnlOk(dnnl_matmul_desc_init(&desc, &site->aDesc, &anyB, NULL, &site->cDesc)) &&
      (!site->accumulate || (kilnDnnlOk(dnnl_post_ops_create(&postOps)) &&
                           kilnDnnlOk(dnnl_post_ops_append_sum(postOps, 1.0f)))) &&
      (attr = kilnDnnlAttributes(postOps)) &&
      kilnDnnlOk(dnnl_primitive_desc_create(&primitiveDesc, &desc, attr, kilnDnnlEngine, NULL)) &&
      kilnDnnlOk(dnnl_primitive_create(&site->matmul, primitiveDesc))) {
    site->packedDesc = *dnnl_primitive_desc_query_md(primitiveDesc, dnnl_query_weights_md, 0);
    site->scratchDesc = *dnnl_primitive_desc_query_md(primitiveDesc, dnnl_query_scratchpad_md, 0);
    site->failed = 0;
  }
  if (primitiveDesc)
    dnnl_primitive_desc_destroy(primitiveDesc);
  if (attr)
    dnnl_primitive_attr_destroy(attr);
  if (postOps)
    dnnl_post_ops_destroy(postOps);
}

/* The site's shape (m, n, k, lda, ldb, ldc and the flags), found among the
 * slot's or built; NULL past MAX_SHAPES or out of memory. With kilnDnnlLock
 * held. */
static MatmulSite *siteFor(void **slot, const MatmulSite *shape) {
  MatmulSite *site = (MatmulSite *)*slot;
  /* A slot of kiln_matmul_constant_a's that holds kiln_conv2d_constant_w's
   * sites (their `release` tells them apart) is not read as this file's. */
  if (site && site->base.release != release)
    return NULL;
  int shapes = 0;
  for (; site && !(site->transposed == shape->transposed &&
                   site->accumulate == shape->accumulate && site->transB == shape->transB &&
                   site->m == shape->m && site->n == shape->n && site->k == shape->k &&
                   site->lda == shape->lda && site->ldb == shape->ldb && site->ldc == shape->ldc);
       site = site->nextShape)
    ++shapes;
  if (!site && shapes < MAX_SHAPES && (site = calloc(1, sizeof(MatmulSite)))) {
    site->base.release = release;
    site->transposed = shape->transposed, site->accumulate = shape->accumulate;
    site->transB = shape->transB;
    site->m = shape->m, site->n = shape->n, site->k = shape->k;
    site->lda = shape->lda, site->ldb = shape->ldb, site->ldc = shape->ldc;
    build(site);
    site->weights = &site->ownWeights;
    for (MatmulSite *other = (MatmulSite *)*slot; other && !site->failed; other = other->nextShape)
      if (site->small ? other->small && other->transB == site->transB && other->n == site->n &&
                            other->k == site->k && other->ldb == site->ldb
                      : !other->small && !other->failed &&
                            dnnl_memory_desc_equal(&other->bDesc, &site->bDesc) &&
                            dnnl_memory_desc_equal(&other->packedDesc, &site->packedDesc)) {
        site->weights = &other->ownWeights;
        break;
      }
    kilnDnnlRegister(&site->base);
    site->nextShape = (MatmulSite *)*slot;
    *slot = site;
  }
  return site;
}

#ifdef KILN_CPU_KERNELS_X86
/* `b` packed for kilnSmallMatmulAvx2, from `list` or made and added to it;
 * NULL without memory. With kilnDnnlLock held. */
static KilnPackedWeights *packSmall(KilnPackedWeights **list, const float *b,
                                    const MatmulSite *site) {
  int fresh;
  KilnPackedWeights *p = kilnPackedEntry(
      list, b, (size_t)kilnDirectConvPackedFloats(site->n, site->k) * sizeof(float), &fresh);
  if (fresh)
    kilnSmallMatmulPack(b, site->n, site->k, site->ldb, site->transB != 0, p->data);
  return p;
}
#endif

/* The site's packed weights for `b`, or NULL when it cannot run. */
static KilnPackedWeights *packedFor(void **slot, const MatmulSite *shape, const float *b,
                                    MatmulSite **site) {
  pthread_mutex_lock(&kilnDnnlLock);
  *site = siteFor(slot, shape);
  KilnPackedWeights *weights = NULL;
#ifdef KILN_CPU_KERNELS_X86
  if (*site && (*site)->small)
    weights = packSmall((*site)->weights, b, *site);
  else
#endif
  if (*site && !(*site)->failed)
    weights = kilnDnnlPack((*site)->weights, b, &(*site)->bDesc, &(*site)->packedDesc);
  pthread_mutex_unlock(&kilnDnnlLock);
  return weights;
}

/* Runs the site's primitive on a and c; 0 if it could not. */
static int execute(MatmulSite *site, KilnPackedWeights *weights, const float *a, float *c) {
  dnnl_memory_t aMemory = NULL, cMemory = NULL;
  int done = weights &&
             kilnDnnlOk(dnnl_memory_create(&aMemory, &site->aDesc, kilnDnnlEngine, (void *)a)) &&
             kilnDnnlOk(dnnl_memory_create(&cMemory, &site->cDesc, kilnDnnlEngine, c));
  if (done) {
    dnnl_exec_arg_t args[4] = {
        {DNNL_ARG_SRC, aMemory}, {DNNL_ARG_WEIGHTS, weights->memory}, {DNNL_ARG_DST, cMemory}};
    done = kilnDnnlExecute(site->matmul, &site->scratchDesc, 3, args);
  }
  if (aMemory)
    dnnl_memory_destroy(aMemory);
  if (cMemory)
    dnnl_memory_destroy(cMemory);
  return done;
}

/* C[m x n] += A[m x k] * B[k x n] where `accumulate`, else C = A * B (C
 * is not read), row-major with leading dimensions lda, ldb, ldc, B stored
 * transposed (n x k) when `transB`; B constant for the artifact's
 * lifetime. `slot` is the call site's zero-initialized 8 bytes. */
__attribute__((visibility("default"))) void
kiln_matmul_constant_b(void **slot, int64_t transB, int64_t m, int64_t n, int64_t k,
                       const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
                       int64_t ldc, int64_t accumulate) {
  MatmulSite shape = {.accumulate = accumulate != 0, .transB = transB, .m = m, .n = n, .k = k,
                      .lda = lda, .ldb = ldb, .ldc = ldc};
  MatmulSite *site;
  KilnPackedWeights *weights = packedFor(slot, &shape, b, &site);
#ifdef KILN_CPU_KERNELS_X86
  if (weights && site->small) {
    kilnSmallMatmulAvx2(m, n, k, a, lda, weights->data, c, ldc, accumulate != 0);
    return;
  }
#endif
  if (!site || site->small || !execute(site, weights, a, c))
    dnnl_sgemm('N', transB ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, accumulate ? 1.0f : 0.0f,
               c, ldc);
}

/* C[m x n] += A[m x k] * B[k x n] (leading dimensions lda, ldb, ldc), A
 * constant for the artifact's lifetime and n small: a convolution tile's
 * product by its filters with few output positions (49 at a 7x7 stage).
 * dnnl_sgemm repacks A on every call and runs a product this narrow at
 * about 75 % of its speed on wide ones; here the transposed product B^T A^T,
 * whose right operand is the constant, runs with A packed once, into a
 * thread buffer [n][m] that is then added into C transposed (1.3x faster on
 * AVX-512 at n = 49, transpose included). Where kilnDirectConvRuns, the
 * product is the 1x1 convolution of k channels of one row of n positions
 * (dense filters, lda = k) by m filters, which the direct kernel runs 1.7x
 * faster than oneDNN's product on AVX2 (ResNet-50's 512->2048 at 7x7:
 * 2.4 ms against 1.4 on two Zen 3 cores) up to 1024 channels; on more,
 * oneDNN's product was the faster (2048->512: 1.29-1.32 ms against
 * 1.46-1.48). The choice depends on what every call of a site shares (the
 * CPU, k and lda; not m, which a last tile has fewer of), so that a slot
 * holds one kind of site. */
__attribute__((visibility("default"))) void
kiln_matmul_constant_a(void **slot, int64_t m, int64_t n, int64_t k, const float *b,
                       int64_t ldb, const float *a, int64_t lda, float *c, int64_t ldc) {
  if (kilnDirectConvRuns() && lda == k && k <= 1024) {
    kiln_conv2d_constant_w(slot, 1, k, 1, n, m, 1, 1, 1, n, 1, 1, 1, 1, b, ldb, n, a, c, ldc, n);
    return;
  }
  MatmulSite shape = {.transposed = 1, .transB = 1, .m = n, .n = m, .k = k,
                      .lda = ldb, .ldb = lda, .ldc = m};
  MatmulSite *site;
  KilnPackedWeights *weights = packedFor(slot, &shape, a, &site);
  float *product = weights ? kilnDnnlThreadBuffer(1, (size_t)(m * n) * sizeof(float)) : NULL;
  if (!product || !execute(site, weights, b, product)) {
    dnnl_sgemm('N', 'N', m, n, k, 1.0f, a, lda, b, ldb, 1.0f, c, ldc);
    return;
  }
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      c[i * ldc + j] += product[j * m + i];
}
