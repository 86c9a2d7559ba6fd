/*===- WinogradConvolution.c - 3x3 convolutions by Winograd on AVX2 --------===
 *
 * Winograd's F(4x4, 3x3) (Lavin and Gray, "Fast Algorithms for
 * Convolutional Neural Networks"): each 4x4 tile of outputs is
 * A^T [(G g G^T) . (B^T d B)] A, for d the 6x6 input patch under it and g
 * the 3x3 filter, so a 3x3 convolution becomes 36 matrix products, one per
 * point of the transformed tiles, each (tiles x input channels) by (input
 * channels x filters): 2.25 multiplications per output and channel where a
 * direct convolution makes 9.
 *
 * The images are in blocks of 8 channels (nChw8c) or of 16 (nChw16c,
 * each block two halves of 8), so every transform works on vectors of 8
 * channels of one position: a work item (some tiles
 * by some filters) transforms its tiles' patches into V, [36][tiles][C8],
 * runs the 36 products into M, [36][tiles][columns], by
 * kilnSmallMatmulAvx2 (DirectConvolution.c: 6 rows by 16 columns of sums
 * in registers, its operand's filters packed in blocks of 16), and
 * transforms M's tiles back into the output with the bias, the addend and
 * the clamp. The filters are transformed in float64, 16 filters at a time
 * in vectors, and packed as that kernel reads them: once for constant
 * filters, on every call for a train step's.
 *
 * Compiled with -mavx2 -mfma; kiln_conv2d_blocked (BlockedConvolution.c)
 * calls it only where the CPU has them.
 *
 *===----------------------------------------------------------------------===*/
#include "WinogradConvolution.h"
#include "DirectConvolution.h"

#include <immintrin.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { LANES = 8, TILE = 4, PATCH = 6, POINTS = KILN_WINOGRAD_POINTS, FILTER_BLOCK = 16 };

static int64_t roundUp(int64_t value, int64_t step) { return (value + step - 1) / step * step; }

int64_t kilnWinogradTiles(const KilnWinogradConv *conv) {
  return conv->n * ((conv->oh + TILE - 1) / TILE) * ((conv->ow + TILE - 1) / TILE);
}

/* Floats of one point's packed filters. */
static int64_t pointFloats(int64_t c, int64_t f) {
  return kilnDirectConvPackedFloats(roundUp(f, LANES), roundUp(c, LANES));
}

int64_t kilnWinogradPackedFloats(int64_t c, int64_t f) { return POINTS * pointFloats(c, f); }

int64_t kilnWinogradFilterBlocks(int64_t f) {
  return (roundUp(f, LANES) + FILTER_BLOCK - 1) / FILTER_BLOCK;
}

/* G x for the three vectors x[0], x[1], x[2], into y[0], y[ystep], ...
 * y[5 ystep]: the rows of G are (1/4, 0, 0), (-1/6, -1/6, -1/6), (-1/6,
 * 1/6, -1/6), (1/24, 1/12, 1/6), (1/24, -1/12, 1/6), (0, 0, 1). */
static inline __attribute__((always_inline)) void transformFilter(const __m256d *x, __m256d *y,
                                                                  int ystep) {
  __m256d outer = _mm256_add_pd(x[0], x[2]), sixth = _mm256_set1_pd(-1.0 / 6);
  __m256d twelfth = _mm256_set1_pd(1.0 / 12);
  __m256d ends =
      _mm256_fmadd_pd(_mm256_set1_pd(1.0 / 24), x[0], _mm256_mul_pd(_mm256_set1_pd(1.0 / 6), x[2]));
  y[0] = _mm256_mul_pd(_mm256_set1_pd(0.25), x[0]);
  y[ystep] = _mm256_mul_pd(sixth, _mm256_add_pd(outer, x[1]));
  y[2 * ystep] = _mm256_mul_pd(sixth, _mm256_sub_pd(outer, x[1]));
  y[3 * ystep] = _mm256_fmadd_pd(twelfth, x[1], ends);
  y[4 * ystep] = _mm256_fnmadd_pd(twelfth, x[1], ends);
  y[5 * ystep] = x[2];
}

void kilnWinogradPackBlocks(const float *w, int64_t c, int64_t f, int64_t firstBlock,
                            int64_t blocks, float *packed) {
  enum { QUARTERS = FILTER_BLOCK / 4 };
  int64_t c8 = roundUp(c, LANES), floats = pointFloats(c, f);
  for (int64_t block = firstBlock; block < firstBlock + blocks; ++block)
    for (int64_t k = 0; k < c8; ++k)
      for (int q = 0; q < QUARTERS; ++q) {
        /* Filters 4q .. 4q + 3 of the block, channel k, in float64: their
         * taps g[a][b], u = G g (u[i][b] at u[i * 3 + b]), then u G^T,
         * whose point (i, j) is v[i * 6 + j]. */
        __m256d g[9], column[3], u[PATCH * 3], v[POINTS];
        for (int tap = 0; tap < 9; ++tap) {
          double lanes[4];
          for (int lane = 0; lane < 4; ++lane) {
            int64_t o = block * FILTER_BLOCK + q * 4 + lane;
            lanes[lane] = o < f && k < c ? (double)w[(o * c + k) * 9 + tap] : 0.0;
          }
          g[tap] = _mm256_loadu_pd(lanes);
        }
        for (int b = 0; b < 3; ++b) {
          for (int a = 0; a < 3; ++a)
            column[a] = g[a * 3 + b];
          transformFilter(column, u + b, 3);
        }
        for (int i = 0; i < PATCH; ++i)
          transformFilter(u + i * 3, v + i * PATCH, 1);
        /* Point p's operand is c8 x f8 with its filters in blocks of 16
         * (kilnSmallMatmulPack's layout): row k of block `block`. */
        for (int p = 0; p < POINTS; ++p)
          _mm_store_ps(packed + p * floats + (block * c8 + k) * FILTER_BLOCK + q * 4,
                       _mm256_cvtpd_ps(v[p]));
      }
}

void kilnWinogradPack(const float *w, int64_t c, int64_t f, float *packed) {
  kilnWinogradPackBlocks(w, c, f, 0, kilnWinogradFilterBlocks(f), packed);
}

int64_t kilnWinogradScratchFloats(const KilnWinogradConv *conv, int64_t tiles, int64_t columns) {
  return POINTS * tiles * (roundUp(conv->c, LANES) + roundUp(columns, LANES));
}

/* B^T x for the six vectors x[0], x[step], ... x[5 step], into y likewise. */
static inline __attribute__((always_inline)) void transformInput(const __m256 *x, int64_t step,
                                                                 __m256 *y, int64_t ystep) {
  __m256 four = _mm256_set1_ps(4.0f), five = _mm256_set1_ps(5.0f), two = _mm256_set1_ps(2.0f);
  __m256 x0 = x[0], x1 = x[step], x2 = x[2 * step], x3 = x[3 * step], x4 = x[4 * step],
         x5 = x[5 * step];
  y[0] = _mm256_fmadd_ps(four, x0, _mm256_fnmadd_ps(five, x2, x4));
  y[ystep] = _mm256_fnmadd_ps(four, _mm256_add_ps(x1, x2), _mm256_add_ps(x3, x4));
  y[2 * ystep] = _mm256_fmadd_ps(four, _mm256_sub_ps(x1, x2), _mm256_sub_ps(x4, x3));
  y[3 * ystep] = _mm256_fmadd_ps(two, _mm256_sub_ps(x3, x1), _mm256_sub_ps(x4, x2));
  y[4 * ystep] = _mm256_fmadd_ps(two, _mm256_sub_ps(x1, x3), _mm256_sub_ps(x4, x2));
  y[5 * ystep] = _mm256_fmadd_ps(four, x1, _mm256_fnmadd_ps(five, x3, x5));
}

/* A^T x for the six vectors x[0], x[step], ..., into y[0], y[ystep], ... */
static inline __attribute__((always_inline)) void transformOutput(const __m256 *x, int64_t step,
                                                                  __m256 *y, int64_t ystep) {
  __m256 x0 = x[0], x1 = x[step], x2 = x[2 * step], x3 = x[3 * step], x4 = x[4 * step],
         x5 = x[5 * step];
  __m256 sum12 = _mm256_add_ps(x1, x2), diff12 = _mm256_sub_ps(x1, x2);
  __m256 sum34 = _mm256_add_ps(x3, x4), diff34 = _mm256_sub_ps(x3, x4);
  y[0] = _mm256_add_ps(_mm256_add_ps(x0, sum12), sum34);
  y[ystep] = _mm256_fmadd_ps(_mm256_set1_ps(2.0f), diff34, diff12);
  y[2 * ystep] = _mm256_fmadd_ps(_mm256_set1_ps(4.0f), sum34, sum12);
  y[3 * ystep] = _mm256_add_ps(_mm256_fmadd_ps(_mm256_set1_ps(8.0f), diff34, diff12), x5);
}

/* Where tile `tile` is: its image and its first output row and column. */
static void tileOrigin(const KilnWinogradConv *conv, int64_t tile, int64_t *image, int64_t *y,
                       int64_t *x) {
  int64_t across = (conv->ow + TILE - 1) / TILE, down = (conv->oh + TILE - 1) / TILE;
  *image = tile / (across * down);
  *y = tile / across % down * TILE;
  *x = tile % across * TILE;
}

/* Where 8 channels' first pixel is in an image of `channels` channels in
 * blocks of `block` (8 or 16), `pixels` pixels a channel: the start of
 * channels 8 g .. 8 g + 7 of image `image`. Pixels are `block` floats apart. */
static inline int64_t laneGroupOffset(int64_t image, int64_t g, int64_t channels, int64_t block,
                                      int64_t pixels) {
  int64_t blocks = (channels + block - 1) / block, halves = block / LANES;
  return ((image * blocks + g / halves) * pixels) * block + g % halves * LANES;
}

/* V[p][t][...] = (B^T d B)[p] for the tiles' patches, every channel block. */
static void transformTiles(const KilnWinogradConv *conv, int64_t firstTile, int64_t tiles,
                           float *v) {
  int64_t blocks = (conv->c + LANES - 1) / LANES, c8 = blocks * LANES;
  int64_t pointStride = tiles * c8;
  for (int64_t t = 0; t < tiles; ++t) {
    int64_t image, y, x;
    tileOrigin(conv, firstTile + t, &image, &y, &x);
    int64_t top = y - conv->padTop, left = x - conv->padLeft;
    int inside = top >= 0 && left >= 0 && top + PATCH <= conv->ih && left + PATCH <= conv->iw;
    for (int64_t b = 0; b < blocks; ++b) {
      const float *plane =
          conv->in + laneGroupOffset(image, b, conv->c, conv->block, conv->ih * conv->iw);
      __m256 d[PATCH * PATCH], rows[PATCH * PATCH];
      for (int i = 0; i < PATCH; ++i)
        for (int j = 0; j < PATCH; ++j) {
          int64_t iy = top + i, ix = left + j;
          d[i * PATCH + j] = inside || (iy >= 0 && iy < conv->ih && ix >= 0 && ix < conv->iw)
                                 ? _mm256_loadu_ps(plane + (iy * conv->iw + ix) * conv->block)
                                 : _mm256_setzero_ps();
        }
      /* B^T d down each column, then (B^T d) B along each row. */
      for (int j = 0; j < PATCH; ++j)
        transformInput(d + j, PATCH, rows + j, PATCH);
      for (int i = 0; i < PATCH; ++i)
        transformInput(rows + i * PATCH, 1, d + i * PATCH, 1);
      float *at = v + t * c8 + b * LANES;
      for (int p = 0; p < POINTS; ++p)
        _mm256_storeu_ps(at + p * pointStride, d[p]);
    }
  }
}

/* The output tiles from M[p][t][...], filter blocks of the item's columns. */
static void untransformTiles(const KilnWinogradConv *conv, int64_t firstTile, int64_t tiles,
                             int64_t firstColumn, int64_t columns, const float *m) {
  int64_t pointStride = tiles * columns;
  __m256 low = _mm256_set1_ps(conv->low), high = _mm256_set1_ps(conv->high);
  /* Per block of the item's filters, once: its bias, and which of its
   * lanes are filters (the lanes past f, zero sums, stay zero whatever the
   * clamp). */
  int64_t blocks = columns / LANES;
  __m256 biases[blocks], keeps[blocks];
  for (int64_t b = 0; b < blocks; ++b) {
    int64_t first = firstColumn + b * LANES;
    float lanes[LANES] = {0};
    for (int64_t lane = 0; conv->bias && lane < LANES && first + lane < conv->f; ++lane)
      lanes[lane] = conv->bias[first + lane];
    biases[b] = _mm256_loadu_ps(lanes);
    keeps[b] = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32((int)(conv->f - first)),
                                                      _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
  }
  for (int64_t t = 0; t < tiles; ++t) {
    int64_t image, y, x;
    tileOrigin(conv, firstTile + t, &image, &y, &x);
    int64_t rows = conv->oh - y < TILE ? conv->oh - y : TILE;
    int64_t cols = conv->ow - x < TILE ? conv->ow - x : TILE;
    for (int64_t b = 0; b < blocks; ++b) {
      int64_t column = b * LANES, block = (firstColumn + column) / LANES;
      __m256 sums[PATCH * PATCH], half[TILE * PATCH], result[TILE * TILE];
      const float *at = m + t * columns + column;
      for (int p = 0; p < POINTS; ++p)
        sums[p] = _mm256_loadu_ps(at + p * pointStride);
      for (int j = 0; j < PATCH; ++j)
        transformOutput(sums + j, PATCH, half + j, PATCH);
      for (int i = 0; i < TILE; ++i)
        transformOutput(half + i * PATCH, 1, result + i * TILE, 1);
      float *plane = conv->out + image * conv->outStride +
                     laneGroupOffset(0, block, conv->f, conv->block, conv->oh * conv->ow);
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          float *to = plane + ((y + i) * conv->ow + x + j) * conv->block;
          __m256 value = _mm256_add_ps(result[i * TILE + j], biases[b]);
          if (conv->accumulate)
            value = _mm256_add_ps(value, _mm256_loadu_ps(to));
          value = kilnActivate8(value, conv->activation);
          /* max and min return their second operand when one is NaN:
           * a NaN sum stays NaN, as in the plain loops. */
          value = _mm256_min_ps(high, _mm256_max_ps(low, value));
          _mm256_storeu_ps(to, _mm256_and_ps(value, keeps[b]));
        }
    }
  }
}

void kilnWinogradConv2dAvx2(const KilnWinogradConv *conv, int64_t firstTile, int64_t tiles,
                            int64_t firstColumn, int64_t columns, float *scratch) {
  int64_t c8 = roundUp(conv->c, LANES);
  columns = roundUp(columns, LANES);
  float *v = scratch, *m = scratch + POINTS * tiles * c8;
  transformTiles(conv, firstTile, tiles, v);
  int64_t floats = pointFloats(conv->c, conv->f);
  const float *filters = conv->packed + firstColumn * c8; /* whole blocks of 16 */
  for (int p = 0; p < POINTS; ++p)
    kilnSmallMatmulAvx2(tiles, columns, c8, v + p * tiles * c8, c8, filters + p * floats,
                        m + p * tiles * columns, columns, /*accumulate=*/0);
  untransformTiles(conv, firstTile, tiles, firstColumn, columns, m);
}
