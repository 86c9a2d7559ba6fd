/*===- DepthwiseConvolution.c - Depthwise 2-D convolution tiles, NCHW -------===
 *
 * A depthwise convolution (one input and one output channel per group) of a
 * tile of Kiln's: `groups` channels of an image in plain NCHW, by filters
 * [groups][kh][kw]. Kiln's generated loops ran these 2 to 6 times slower
 * than ONNX Runtime, and oneDNN's depthwise kernels want channels innermost,
 * so every call reordered the image there and back.
 *
 * The kernel also does what would otherwise be passes of their own over the
 * tile: the zero padding (an image given unpadded is copied one channel at a
 * time into a padded plane that stays in cache), the bias the output starts
 * from, and a clamp of the result (ReLU, ReLU6), each on one channel's plane
 * while it is in cache.
 *
 * Each window position (tap) is a sequence read at unit stride along the
 * output row, so a block of output vectors takes per tap one broadcast
 * weight and one load and one multiply-add per vector:
 *   - unit stride along the row: the tap's sequence is the input row,
 *     shifted;
 *   - narrow outputs at stride 1 (images of 7 to 31 columns): the rows are
 *     read as one sequence over the padded width and the columns past the
 *     output's are dropped, so a 7x7 image fills whole vectors;
 *   - a stride along the row (or narrow outputs at a stride down the
 *     columns): the padded image is first split into phase planes (every
 *     sh-th row and sw-th column, sh x sw of them), in one copy that also
 *     pads it, in which each tap reads at unit stride, so runs of rows are
 *     read as one sequence as at stride 1.
 * Where each tap's sequence starts is computed once per call, not per
 * channel (the divisions by strides and widths would cost more than the
 * sums of a 7x7 channel).
 * The last, partial vector of a row overlaps the one before it and is
 * computed from the output's values as they were before the row began, so
 * every output is the same sum, in the same order, whichever vector wrote it.
 *
 * This file is compiled once per vector width (KILN_VECTOR_BYTES, with the
 * matching -m flags) under the name KILN_DEPTHWISE_NAME; the entry point in
 * DepthwiseDispatch.c picks the widest the CPU runs.
 *
 *===----------------------------------------------------------------------===*/
#include <math.h>
#include <stdint.h>
#if (KILN_VECTOR_BYTES == 64 && defined(__AVX512F__)) ||                                        \
    (KILN_VECTOR_BYTES == 32 && defined(__AVX2__))
#include <immintrin.h>
#define KILN_DEINTERLEAVE 1
#endif
#include <stdlib.h>
#include <string.h>

#ifndef KILN_VECTOR_BYTES
#define KILN_VECTOR_BYTES 16
#endif
#ifndef KILN_DEPTHWISE_NAME
#define KILN_DEPTHWISE_NAME kilnDepthwiseConv2dGeneric
#endif
#define INLINE static inline __attribute__((always_inline))

typedef float Vector __attribute__((vector_size(KILN_VECTOR_BYTES)));
enum {
  VL = KILN_VECTOR_BYTES / sizeof(float),
  /* Output vectors a tile accumulates at once: enough independent sums to
   * hide the multiply-add's latency, few enough to stay in registers. */
  ACCUMULATORS = 8,
  /* Taps summed per pass over a row (larger windows take several). */
  MAX_TAPS = 64,
  /* Floats of scratch: the planes of a band of strided rows, or the
   * outputs of a run of narrow rows. */
  SCRATCH = 4096,
};

INLINE Vector load(const float *p) {
  Vector v;
  memcpy(&v, p, sizeof v);
  return v;
}

INLINE void store(float *p, Vector v) { memcpy(p, &v, sizeof v); }

/* Where a channel's sums start and what bounds them: with `init`, from
 * `bias` rather than the outputs' values; with `clamps`, stored as
 * min(max(sum, lo), hi). */
typedef struct Start {
  int init, clamps;
  float bias, lo, hi;
} Start;

/* What a band of output rows sums: out[r][x] (or the start's bias) plus
 * the sum over t of w[t] * tap[t][r * rowStep + x], r < rows, x < n.
 * With `kh` (3 or 5), the taps are a kh x kh window whose row ky is row
 * ky - 1 one row step further on (the window steps down the columns as
 * the outputs do), so an input row serves kh output rows. */
typedef struct Band {
  float *out;
  int64_t outH, rows, n;
  const float *const *tap;
  const float *w;
  int64_t taps, rowStep;
  Start start;
  int64_t kh;
} Band;

/* max then min, as arith.maximumf and arith.minimumf: NaN stays NaN, and
 * max(-0, +0) is +0. */
INLINE float clampScalar(float v, float lo, float hi) {
  v = v <= lo ? lo : v;
  return v >= hi ? hi : v;
}

typedef int32_t Mask __attribute__((vector_size(KILN_VECTOR_BYTES)));

INLINE Vector clampVector(Vector v, Vector lo, Vector hi) {
  Mask low = v <= lo, high = v >= hi;
  v = (Vector)(((Mask)lo & low) | ((Mask)v & ~low));
  return (Vector)(((Mask)hi & high) | ((Mask)v & ~high));
}

INLINE Vector splat(float value) { return (Vector){} + value; }

/* The sums of a tile of R rows of V vectors over a K x K window whose tap
 * rows are output rows apart (Band.kh): each of the R + K - 1 input rows
 * the tile reads is loaded once per column tap and added to the output
 * rows it meets (r with 0 <= i - r < K, by weight row i - r), so a
 * multiply-add takes half a load or less instead of one (most of them
 * across cache lines), and each weight is broadcast once per V vectors.
 * K is a constant at every call: the loops unroll, and the accumulators
 * stay in registers. */
INLINE void sharedRows(const Band *b, Vector *acc, int64_t offset, int R, int V, int K) {
  /* Unrolled whole, so that which rows meet which weights is decided at
   * compile time (GCC keeps the row loop otherwise, testing each pair). */
#pragma GCC unroll 16
  for (int i = 0; i < R + K - 1; ++i)
#pragma GCC unroll 8
    for (int kx = 0; kx < K; ++kx) {
      const float *p = b->tap[kx] + offset + i * b->rowStep;
      Vector v[ACCUMULATORS];
      for (int j = 0; j < V; ++j)
        v[j] = load(p + j * VL);
      for (int r = 0; r < R; ++r) {
        int ky = i - r;
        if (ky < 0 || ky >= K)
          continue;
        float wt = b->w[ky * K + kx];
        for (int j = 0; j < V; ++j)
          acc[r * V + j] += wt * v[j];
      }
    }
}

/* R rows from `y` times V vectors from `x`, starting from the outputs or
 * the start's bias (or, V being 1, from `start`, one vector per row). */
INLINE void tile(const Band *b, int64_t y, int64_t x, int R, int V, const Vector *start) {
  Vector acc[ACCUMULATORS];
  float *out = b->out + y * b->outH + x;
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < V; ++j)
      acc[r * V + j] = start            ? start[r]
                       : b->start.init ? splat(b->start.bias)
                                        : load(out + r * b->outH + j * VL);
  int64_t offset = y * b->rowStep + x;
#if KILN_VECTOR_BYTES == 64
  if (b->kh == 3)
    sharedRows(b, acc, offset, R, V, 3);
  else
#endif
  if (b->kh == 5)
    sharedRows(b, acc, offset, R, V, 5);
  else
    for (int64_t t = 0; t < b->taps; ++t) {
      float wt = b->w[t]; /* broadcast once, by the scalar-vector product */
      const float *p = b->tap[t] + offset;
      for (int r = 0; r < R; ++r)
        for (int j = 0; j < V; ++j)
          acc[r * V + j] += wt * load(p + r * b->rowStep + j * VL);
    }
  Vector lo = splat(b->start.lo), hi = splat(b->start.hi);
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < V; ++j)
      store(out + r * b->outH + j * VL,
            b->start.clamps ? clampVector(acc[r * V + j], lo, hi) : acc[r * V + j]);
}

/* Rows y..y+R: tiles of V vectors, the vectors left over as one tile, and
 * a last partial vector overlapping the one before it, computed from the
 * outputs' values before the rows began or from the bias (so the lanes both
 * write get the same sum); rows shorter than a vector are summed one output
 * at a time. */
INLINE void rows(const Band *b, int64_t y, int R, int V) {
  int64_t n = b->n;
  const Start *start = &b->start;
  if (n < VL) {
    for (int r = 0; r < R; ++r)
      for (int64_t x = 0; x < n; ++x) {
        float *o = b->out + (y + r) * b->outH + x;
        float acc = start->init ? start->bias : *o;
        for (int64_t t = 0; t < b->taps; ++t)
          acc += b->w[t] * b->tap[t][(y + r) * b->rowStep + x];
        *o = start->clamps ? clampScalar(acc, start->lo, start->hi) : acc;
      }
    return;
  }
  Vector before[ACCUMULATORS];
  int partial = n % VL != 0;
  if (partial)
    for (int r = 0; r < R; ++r)
      before[r] = load(b->out + (y + r) * b->outH + n - VL);
  int64_t x = 0;
  for (; x + V * VL <= n; x += V * VL)
    tile(b, y, x, R, V, NULL);
  switch ((n - x) / VL) {
#define LEFT(k)                                                                                \
  case k:                                                                                      \
    if (k < V)                                                                                 \
      tile(b, y, x, R, k < V ? k : 1, NULL);                                                   \
    break;
    LEFT(1) LEFT(2) LEFT(3) LEFT(4) LEFT(5) LEFT(6) LEFT(7)
#undef LEFT
  default:
    break;
  }
  if (partial)
    tile(b, y, n - VL, R, 1, start->init ? NULL : before);
}

/* The band in tiles of ACCUMULATORS vectors: along the row when it has that
 * many, else over several rows of fewer vectors each. */
static void accumulate(const Band *b) {
  int64_t vectors = b->n / VL, y = 0;
  /* Shared input rows: the more output rows a tile has, the fewer loads. */
  if (b->kh && vectors >= 2)
    for (; y + 4 <= b->rows; y += 4)
      rows(b, y, 4, 2);
  else if (vectors < 2)
    for (; y + 8 <= b->rows; y += 8)
      rows(b, y, 8, 1);
  else if (vectors < 4)
    for (; y + 4 <= b->rows; y += 4)
      rows(b, y, 4, 2);
  else if (vectors < 8)
    for (; y + 2 <= b->rows; y += 2)
      rows(b, y, 2, 4);
  for (; y < b->rows; ++y)
    rows(b, y, 1, 8);
}

/* accumulate() in passes of at most MAX_TAPS taps, tap t reading from
 * origin + offset[t] (window position t / kw, t % kw). */
static void accumulateWindow(Band b, int64_t taps, const float *origin, const int64_t *offset,
                             const float *w) {
  const float *tap[MAX_TAPS];
  b.tap = tap;
  Start start = b.start;
  for (int64_t t0 = 0; t0 < taps; t0 += MAX_TAPS) {
    b.taps = taps - t0 < MAX_TAPS ? taps - t0 : MAX_TAPS;
    /* The first pass starts the sums, the last one clamps them. */
    b.start.init = start.init && t0 == 0;
    b.start.clamps = start.clamps && t0 + b.taps == taps;
    for (int64_t t = 0; t < b.taps; ++t)
      tap[t] = origin + offset[t0 + t];
    b.w = w + t0;
    accumulate(&b);
  }
}

typedef struct Shape {
  int64_t kh, kw, oh, ow, sh, sw, dh, dw, inH;
} Shape;

/* Where each tap's sequence starts, relative to output (0, 0)'s, in the
 * layout a channel is read from; computed once per call (the divisions
 * cost more than a small channel's sums):
 *   - rows rowStride apart, unit stride along them: the row, shifted;
 *   - phase planes (Phases): plane ((ky * dh) % sh, (kx * dw) % sw),
 *     shifted by the rows and columns of the phase it skips. */
static void rowOffsets(const Shape *s, int64_t rowStride, int64_t *offset) {
  for (int64_t ky = 0; ky < s->kh; ++ky)
    for (int64_t kx = 0; kx < s->kw; ++kx)
      offset[ky * s->kw + kx] = ky * s->dh * rowStride + kx * s->dw;
}

static void phaseOffsets(const Shape *s, int64_t planeRows, int64_t planeWidth, int64_t *offset) {
  for (int64_t ky = 0; ky < s->kh; ++ky)
    for (int64_t kx = 0; kx < s->kw; ++kx) {
      int64_t row = ky * s->dh, column = kx * s->dw;
      offset[ky * s->kw + kx] =
          (row % s->sh * s->sw + column % s->sw) * planeRows * planeWidth +
          row / s->sh * planeWidth + column / s->sw;
    }
}

/* Whether output rows share input rows (Band.kh): 3x3 and 5x5 windows
 * that step down the columns as the outputs do. With 16-register AVX2, a
 * 3x3 window's weight broadcasts (it has no broadcasting multiply-add) cost
 * more than the loads saved. */
static int sharesRows(const Shape *s) {
  return s->sh == s->dh && s->kh == s->kw &&
         (s->kh == 5 || (s->kh == 3 && KILN_VECTOR_BYTES == 64));
}

/* One channel, unit stride along the row (rowOffsets by s->inH). */
static void channelUnitStride(const Shape *s, const float *in, const int64_t *offset,
                              const float *w, float *out, int64_t outH, const Start *start) {
  Band band = {out, outH, s->oh, s->ow, NULL, NULL, 0, s->sh * s->inH, *start,
               sharesRows(s) ? s->kh : 0};
  accumulateWindow(band, s->kh * s->kw, in, offset, w);
}

/* o[x] = r[x], clamped, or o[x] += r[x] without `init`, for x < n: whole
 * vectors, then the rest (under a mask where the CPU has them). */
INLINE void finishRow(float *o, const float *r, int64_t n, const Start *start) {
  Vector lo = splat(start->lo), hi = splat(start->hi);
  int64_t x = 0;
  for (; x + VL <= n; x += VL) {
    Vector v = load(r + x);
    store(o + x, !start->init   ? load(o + x) + v
                 : start->clamps ? clampVector(v, lo, hi)
                                 : v);
  }
  if (x == n)
    return;
#if KILN_VECTOR_BYTES == 64 && defined(__AVX512F__)
  __mmask16 rest = (__mmask16)((1u << (n - x)) - 1);
  Vector v = (Vector)_mm512_maskz_loadu_ps(rest, r + x);
  v = !start->init   ? (Vector)_mm512_maskz_loadu_ps(rest, o + x) + v
      : start->clamps ? clampVector(v, lo, hi)
                      : v;
  _mm512_mask_storeu_ps(o + x, rest, (__m512)v);
#else
  for (; x < n; ++x)
    o[x] = !start->init   ? o[x] + r[x]
           : start->clamps ? clampScalar(r[x], start->lo, start->hi)
                           : r[x];
#endif
}

/* One channel, each tap reading output rows `pitch` floats apart at unit
 * stride from origin + offset[t]: runs of rows read as one row over the
 * pitch into `scratch`, the columns past the output's dropped. Used for
 * rows narrower than two vectors at unit strides (the image's rows,
 * rowOffsets), and at any stride in phase planes (phaseOffsets), where wide
 * rows had read rows split into column planes per band, a second copy after
 * the padded one, and narrow ones were summed one output at a time. */
static void channelRuns(const Shape *s, const float *origin, const int64_t *offset,
                        int64_t pitch, const float *w, float *out, int64_t outH,
                        float *scratch, const Start *start) {
  int64_t runRows = SCRATCH / pitch;
  /* The run's sums start from the bias, or from zero to be added. */
  Start sums = {1, 0, start->init ? start->bias : 0.0f, 0.0f, 0.0f};
  for (int64_t y0 = 0; y0 < s->oh; y0 += runRows) {
    int64_t rowsHere = s->oh - y0 < runRows ? s->oh - y0 : runRows;
    int64_t n = (rowsHere - 1) * pitch + s->ow;
    Band band = {scratch, 0, 1, n, NULL, NULL, 0, 0, sums, 0};
    accumulateWindow(band, s->kh * s->kw, origin + y0 * pitch, offset, w);
    for (int64_t y = 0; y < rowsHere; ++y)
      finishRow(out + (y0 + y) * outH, scratch + y * pitch, s->ow, start);
  }
}

/* Where the image lies in the padded one the window reads: rows and columns
 * of it, its row stride, and its first row and column there. */
typedef struct Unpadded {
  int64_t ih, iw, inH, top, left;
} Unpadded;

/* The padded image split into sh x sw phase planes, phase (p, q) holding
 * rows p, p + sh, ... and columns q, q + sw, ... of it: planeRows x
 * planeWidth each, dense, one after another. The image's first row and
 * column in them (top = topDiv * sh + topMod, left likewise), divided once
 * per call. */
typedef struct Phases {
  float *planes;
  int64_t planeRows, planeWidth;
  int64_t topDiv, topMod, leftDiv, leftMod;
} Phases;

#ifdef KILN_DEINTERLEAVE
/* The `n` floats from `from` split into its even and odd elements, stored
 * at `even` and `odd`: the compiler's loop for one phase at a time, with
 * scalar tails, took as long as the whole window's sums (on AVX2, 60 % of
 * a stride-2 3x3 layer's time at 55x55). */
#if KILN_VECTOR_BYTES == 64
/* Two masked loads and two permutes per 32 floats. */
INLINE void deinterleave(const float *from, int64_t n, float *even, float *odd) {
  const __m512i evens = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odds = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  for (int64_t i = 0; 2 * i < n; i += 16) {
    int64_t left = n - 2 * i;
    __mmask16 low = left >= 16 ? 0xffff : (__mmask16)((1u << left) - 1);
    __mmask16 high = left >= 32 ? 0xffff : left <= 16 ? 0 : (__mmask16)((1u << (left - 16)) - 1);
    __m512 a = _mm512_maskz_loadu_ps(low, from + 2 * i);
    __m512 b = _mm512_maskz_loadu_ps(high, from + 2 * i + 16);
    int64_t evenLeft = (left + 1) / 2, oddLeft = left / 2;
    _mm512_mask_storeu_ps(even + i, evenLeft >= 16 ? 0xffff : (__mmask16)((1u << evenLeft) - 1),
                          _mm512_permutex2var_ps(a, evens, b));
    _mm512_mask_storeu_ps(odd + i, oddLeft >= 16 ? 0xffff : (__mmask16)((1u << oddLeft) - 1),
                          _mm512_permutex2var_ps(a, odds, b));
  }
}
#else
/* Two loads, two in-lane shuffles and two 64-bit permutes per 16 floats;
 * the rest one at a time. */
INLINE void deinterleave(const float *from, int64_t n, float *even, float *odd) {
  int64_t i = 0;
  for (; 2 * i + 16 <= n; i += 8) {
    __m256 a = _mm256_loadu_ps(from + 2 * i), b = _mm256_loadu_ps(from + 2 * i + 8);
    /* Per 128-bit half: a0 a2 b0 b2 | a4 a6 b4 b6, then the halves'
     * middle pairs swapped. */
    __m256d evens = _mm256_castps_pd(_mm256_shuffle_ps(a, b, 0x88));
    __m256d odds = _mm256_castps_pd(_mm256_shuffle_ps(a, b, 0xDD));
    _mm256_storeu_ps(even + i, _mm256_castpd_ps(_mm256_permute4x64_pd(evens, 0xD8)));
    _mm256_storeu_ps(odd + i, _mm256_castpd_ps(_mm256_permute4x64_pd(odds, 0xD8)));
  }
  for (; 2 * i < n; ++i) {
    even[i] = from[2 * i];
    if (2 * i + 1 < n)
      odd[i] = from[2 * i + 1];
  }
}
#endif
#endif

/* Copies one channel `in` into the phase planes where it lies in the padded
 * image (rows x columns; the rest of the planes stays zero). */
static void copyIntoPhases(const Phases *ph, const Shape *s, int64_t rows, int64_t columns,
                           const float *in, const Unpadded *u) {
  int64_t planeFloats = ph->planeRows * ph->planeWidth;
  int64_t end = columns - u->left < u->iw ? columns - u->left : u->iw;
  int64_t p = ph->topMod, row = ph->topDiv;
  for (int64_t r = 0; r < u->ih && u->top + r < rows; ++r) {
    const float *from = in + r * u->inH;
    float *phaseRow = ph->planes + p * s->sw * planeFloats + row * ph->planeWidth;
    if (++p == s->sh)
      p = 0, ++row;
#ifdef KILN_DEINTERLEAVE
    /* Image column c lies in column phase (left + c) % 2: even columns in
     * phase leftMod, odd ones in the other, one further along if that is
     * phase 0. */
    if (s->sw == 2) {
      float *first = phaseRow + ph->leftMod * planeFloats + ph->leftDiv;
      float *second = phaseRow + (1 - ph->leftMod) * planeFloats + ph->leftDiv + ph->leftMod;
      deinterleave(from, end, first, second);
      continue;
    }
#endif
    for (int64_t q = 0; q < s->sw; ++q) {
      /* The first image column in column phase q, and its place there. */
      int64_t c0 = q >= ph->leftMod ? q - ph->leftMod : q - ph->leftMod + s->sw;
      float *to = phaseRow + q * planeFloats + ph->leftDiv + (q < ph->leftMod);
      if (s->sw == 2) {
        /* The common stride, constant so that the copy vectorizes. */
        for (int64_t i = 0; c0 + 2 * i < end; ++i)
          to[i] = from[c0 + 2 * i];
        continue;
      }
      for (int64_t i = 0; c0 + i * s->sw < end; ++i)
        to[i] = from[c0 + i * s->sw];
    }
  }
}

/* Any shape, one output at a time. */
static void channelScalar(const Shape *s, const float *in, const float *w, float *out,
                          int64_t outH, const Start *start) {
  for (int64_t y = 0; y < s->oh; ++y)
    for (int64_t x = 0; x < s->ow; ++x) {
      float acc = start->init ? start->bias : out[y * outH + x];
      for (int64_t ky = 0; ky < s->kh; ++ky)
        for (int64_t kx = 0; kx < s->kw; ++kx)
          acc += w[ky * s->kw + kx] * in[(y * s->sh + ky * s->dh) * s->inH + x * s->sw + kx * s->dw];
      out[y * outH + x] = start->clamps ? clampScalar(acc, start->lo, start->hi) : acc;
    }
}

/* The padded plane (rows x columns, dense; zero outside the image, which
 * `plane` already is) of one channel `in`. */
static void copyIntoPlane(float *plane, int64_t rows, int64_t columns, const float *in,
                          const Unpadded *u) {
  int64_t first = u->left, end = u->left + u->iw < columns ? u->left + u->iw : columns;
  int64_t n = end - first;
  if (n <= 0)
    return;
  /* Rows are short (7 to 112 floats): copied inline, not by memcpy calls
   * (which the compiler makes of a plain loop, and which took a fifth of a
   * 3x3 layer's time at 56x56). */
  for (int64_t r = u->top; r < rows && r - u->top < u->ih; ++r) {
    float *to = plane + r * columns + first;
    const float *from = in + (r - u->top) * u->inH;
#if KILN_VECTOR_BYTES == 64 && defined(__AVX512F__)
    for (int64_t x = 0; x < n; x += VL) {
      __mmask16 part = n - x >= VL ? 0xffff : (__mmask16)((1u << (n - x)) - 1);
      _mm512_mask_storeu_ps(to + x, part, _mm512_maskz_loadu_ps(part, from + x));
    }
#else
    int64_t x = 0;
    for (; x + VL <= n; x += VL)
      store(to + x, load(from + x));
    for (; x < n; ++x)
      to[x] = from[x];
#endif
  }
}

/* One channel, one output at a time, reading the image where it lies inside
 * the padded one (when there is no memory for a plane). */
static void channelScalarUnpadded(const Shape *s, const float *in, const Unpadded *u,
                                  const float *w, float *out, int64_t outH,
                                  const Start *start) {
  for (int64_t y = 0; y < s->oh; ++y)
    for (int64_t x = 0; x < s->ow; ++x) {
      float acc = start->init ? start->bias : out[y * outH + x];
      for (int64_t ky = 0; ky < s->kh; ++ky)
        for (int64_t kx = 0; kx < s->kw; ++kx) {
          int64_t r = y * s->sh + ky * s->dh - u->top, c = x * s->sw + kx * s->dw - u->left;
          if (r >= 0 && r < u->ih && c >= 0 && c < u->iw)
            acc += w[ky * s->kw + kx] * in[r * u->inH + c];
        }
      out[y * outH + x] = start->clamps ? clampScalar(acc, start->lo, start->hi) : acc;
    }
}

#if (KILN_VECTOR_BYTES == 64 && defined(__AVX512F__)) ||                                        \
    (KILN_VECTOR_BYTES == 32 && defined(__AVX2__) && defined(__FMA__))
#define KILN_CHANNEL_LANES 1
/* Small images, channels in the vector lanes: a block of VL channels is
 * transposed into a padded image of VL-channel pixels (zero outside the
 * image), summed there with each tap one aligned load and a multiply-add
 * by a vector of the block's weights, and transposed back. A row then
 * costs its outputs' vectors, not its padded width's, no load crosses a
 * cache line, and a stride needs no phase planes: for narrow images, where
 * the runs over the padded width took 2.4 cycles per multiply-add
 * (AVX-512, one core: 5x5 at 7x7, 240 channels: 64 -> 21 us; 3x3 at 7x7,
 * 960 channels: 112 -> 60 us). The sums are the same, in the same order,
 * as the other paths'. */
enum {
  /* Pixels of the padded image a block holds (128 KiB of them: every
   * image narrower than two 16-lane vectors under a 7x7 window). */
  LANES_MAX_PIXELS = (128 << 10) / KILN_VECTOR_BYTES,
  /* Output pixels summed at once. */
  LANES_PIXELS = 8,
};

#if KILN_VECTOR_BYTES == 64
typedef __m512 Lanes;

INLINE __mmask16 firstLanes(int64_t n) {
  return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1);
}
/* The first n (at most VL) floats at p, zero in the other lanes; stores of
 * the first n lanes of v. Neither touches memory past the n floats. */
INLINE Lanes loadFirst(const float *p, int64_t n) {
  return _mm512_maskz_loadu_ps(firstLanes(n), p);
}
INLINE void storeFirst(float *p, int64_t n, Lanes v) {
  _mm512_mask_storeu_ps(p, firstLanes(n), v);
}
INLINE Lanes lanesZero(void) { return _mm512_setzero_ps(); }
INLINE Lanes lanesSplat(float v) { return _mm512_set1_ps(v); }
INLINE Lanes lanesFmadd(Lanes a, Lanes b, Lanes c) { return _mm512_fmadd_ps(a, b, c); }
INLINE Lanes lanesClamp(Lanes v, Lanes lo, Lanes hi) {
  return _mm512_min_ps(_mm512_max_ps(v, lo), hi);
}

/* r[0..15] transposed in place: lane j of r[i] becomes lane i of r[j]. A
 * 4x4 transpose in every 128-bit quarter, then two rounds of quarter
 * shuffles. */
INLINE void transposeLanes(Lanes r[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int b = 0; b < 4; ++b) {
    r[4 * b] = _mm512_shuffle_ps(t[4 * b], t[4 * b + 2], 0x44);
    r[4 * b + 1] = _mm512_shuffle_ps(t[4 * b], t[4 * b + 2], 0xEE);
    r[4 * b + 2] = _mm512_shuffle_ps(t[4 * b + 1], t[4 * b + 3], 0x44);
    r[4 * b + 3] = _mm512_shuffle_ps(t[4 * b + 1], t[4 * b + 3], 0xEE);
  }
  /* Quarter k of r[4b + m] now holds rows 4b..4b+3 at column 4k + m. */
  for (int m = 0; m < 4; ++m) {
    t[4 * m] = _mm512_shuffle_f32x4(r[m], r[4 + m], 0x88);
    t[4 * m + 1] = _mm512_shuffle_f32x4(r[m], r[4 + m], 0xDD);
    t[4 * m + 2] = _mm512_shuffle_f32x4(r[8 + m], r[12 + m], 0x88);
    t[4 * m + 3] = _mm512_shuffle_f32x4(r[8 + m], r[12 + m], 0xDD);
  }
  for (int m = 0; m < 4; ++m) {
    r[m] = _mm512_shuffle_f32x4(t[4 * m], t[4 * m + 2], 0x88);
    r[8 + m] = _mm512_shuffle_f32x4(t[4 * m], t[4 * m + 2], 0xDD);
    r[4 + m] = _mm512_shuffle_f32x4(t[4 * m + 1], t[4 * m + 3], 0x88);
    r[12 + m] = _mm512_shuffle_f32x4(t[4 * m + 1], t[4 * m + 3], 0xDD);
  }
}
#else
#include "Transpose8.h"

typedef __m256 Lanes;

/* loadFirst and storeFirst as on AVX-512, without masked moves
 * (vmaskmovps): AMD's Zen cores run a masked store as microcode, many
 * times slower than a plain one. Partial vectors go by 128-, 64- and
 * 32-bit moves instead (one Zen 1 core, 3x3 at 14x14, 576 channels: 294 ->
 * 208 us; at 7x7, 960 channels: 129 -> 99 us). */

/* The first n (at most 4) floats at p, zero in the other lanes. */
INLINE __m128 loadFirstQuarter(const float *p, int64_t n) {
  switch (n) {
  case 0:
    return _mm_setzero_ps();
  case 1:
    return _mm_load_ss(p);
  case 2:
    return _mm_castpd_ps(_mm_load_sd((const double *)p));
  case 3:
    return _mm_movelh_ps(_mm_castpd_ps(_mm_load_sd((const double *)p)), _mm_load_ss(p + 2));
  default:
    return _mm_loadu_ps(p);
  }
}
INLINE Lanes loadFirst(const float *p, int64_t n) {
  if (n >= 8)
    return _mm256_loadu_ps(p);
  __m128 low = loadFirstQuarter(p, n);
  __m128 high = n > 4 ? loadFirstQuarter(p + 4, n - 4) : _mm_setzero_ps();
  return _mm256_insertf128_ps(_mm256_castps128_ps256(low), high, 1);
}
INLINE void storeFirst(float *p, int64_t n, Lanes v) {
  if (n >= 8) {
    _mm256_storeu_ps(p, v);
    return;
  }
  __m128 part = _mm256_castps256_ps128(v);
  if (n >= 4) {
    _mm_storeu_ps(p, part);
    part = _mm256_extractf128_ps(v, 1);
    p += 4;
    n -= 4;
  }
  if (n >= 2) {
    _mm_storel_pi((__m64 *)p, part);
    part = _mm_movehl_ps(part, part);
    p += 2;
    n -= 2;
  }
  if (n)
    _mm_store_ss(p, part);
}
INLINE Lanes lanesZero(void) { return _mm256_setzero_ps(); }
INLINE Lanes lanesSplat(float v) { return _mm256_set1_ps(v); }
INLINE Lanes lanesFmadd(Lanes a, Lanes b, Lanes c) { return _mm256_fmadd_ps(a, b, c); }
INLINE Lanes lanesClamp(Lanes v, Lanes lo, Lanes hi) {
  return _mm256_min_ps(_mm256_max_ps(v, lo), hi);
}

/* r[0..7] transposed in place. */
INLINE void transposeLanes(Lanes r[8]) { kilnTranspose8(r); }
#endif

/* Channels c0 .. c0 + n - 1 (n <= VL), starting from the bias (or zero
 * without one): `image` (rows x columns pixels) and `sums` (oh x ow) are
 * scratch. */
static void channelBlock(const Shape *s, int64_t n, const float *in, int64_t inC,
                         const Unpadded *u, int64_t rows, int64_t columns, const float *w,
                         const float *bias, float lo, float hi, int clamps, float *out,
                         int64_t outF, int64_t outH, Lanes *image, Lanes *sums) {
  int64_t taps = s->kh * s->kw;
  memset(image, 0, (size_t)(rows * columns) * sizeof(Lanes));
  /* In: VL pixels of a row at a time, one vector per channel, transposed
   * into VL pixels of VL channels. */
  int64_t end = columns - u->left < u->iw ? columns - u->left : u->iw;
  for (int64_t r = 0; r < u->ih && u->top + r < rows; ++r)
    for (int64_t x = 0; x < end; x += VL) {
      Lanes v[VL];
      for (int64_t c = 0; c < VL; ++c)
        v[c] = c < n ? loadFirst(in + c * inC + r * u->inH + x, end - x) : lanesZero();
      transposeLanes(v);
      Lanes *to = image + (u->top + r) * columns + u->left + x;
      for (int64_t p = 0; p < VL && x + p < end; ++p)
        to[p] = v[p];
    }
  /* The weights, tap by tap across the channels. */
  Lanes weights[MAX_TAPS];
  for (int64_t t = 0; t < taps; ++t) {
    float lane[VL] = {0};
    for (int64_t c = 0; c < n; ++c)
      lane[c] = w[c * taps + t];
    weights[t] = loadFirst(lane, VL);
  }
  Lanes start = bias ? loadFirst(bias, n) : lanesZero(), low = lanesSplat(lo),
        high = lanesSplat(hi);
  for (int64_t y = 0; y < s->oh; ++y)
    for (int64_t x0 = 0; x0 < s->ow; x0 += LANES_PIXELS) {
      int64_t count = s->ow - x0 < LANES_PIXELS ? s->ow - x0 : LANES_PIXELS;
      Lanes acc[LANES_PIXELS];
      for (int j = 0; j < LANES_PIXELS; ++j)
        acc[j] = start;
      for (int64_t ky = 0; ky < s->kh; ++ky) {
        const Lanes *row = image + (y * s->sh + ky * s->dh) * columns + x0 * s->sw;
        for (int64_t kx = 0; kx < s->kw; ++kx) {
          Lanes wt = weights[ky * s->kw + kx];
          const Lanes *p = row + kx * s->dw;
          if (count == LANES_PIXELS)
            for (int j = 0; j < LANES_PIXELS; ++j)
              acc[j] = lanesFmadd(wt, p[j * s->sw], acc[j]);
          else
            for (int j = 0; j < count; ++j)
              acc[j] = lanesFmadd(wt, p[j * s->sw], acc[j]);
        }
      }
      for (int j = 0; j < count; ++j)
        sums[y * s->ow + x0 + j] = clamps ? lanesClamp(acc[j], low, high) : acc[j];
    }
  /* Out: VL pixels of a row at a time, transposed back into one vector per
   * channel. */
  for (int64_t y = 0; y < s->oh; ++y)
    for (int64_t x = 0; x < s->ow; x += VL) {
      Lanes v[VL];
      for (int64_t p = 0; p < VL; ++p)
        v[p] = x + p < s->ow ? sums[y * s->ow + x + p] : lanesZero();
      transposeLanes(v);
      for (int64_t c = 0; c < n; ++c)
        storeFirst(out + c * outF + y * outH + x, s->ow - x, v[c]);
    }
}
#endif

/* See DepthwiseDispatch.c for the arguments. */
void KILN_DEPTHWISE_NAME(int64_t groups, int64_t kh, int64_t kw, int64_t oh, int64_t ow,
                         int64_t sh, int64_t sw, int64_t dh, int64_t dw, const float *in,
                         int64_t inC, int64_t inH, int64_t ih, int64_t iw, int64_t padTop,
                         int64_t padLeft, const float *w, const float *bias, int64_t init,
                         float lo, float hi, float *out, int64_t outF, int64_t outH) {
  if (groups <= 0 || oh <= 0 || ow <= 0 || kh <= 0 || kw <= 0 || sh <= 0 || sw <= 0 ||
      dh <= 0 || dw <= 0 || padTop < 0 || padLeft < 0)
    return;
  /* The padded image the window reads; a plane of it per channel unless the
   * image is that already. */
  int64_t rows = (oh - 1) * sh + (kh - 1) * dh + 1, columns = (ow - 1) * sw + (kw - 1) * dw + 1;
  Unpadded unpadded = {ih, iw, inH, padTop, padLeft};
  int padded = padTop == 0 && padLeft == 0 && ih >= rows && iw >= columns;
#ifdef KILN_CHANNEL_LANES
  /* Blocks of VL channels in the lanes, where there are enough channels
   * and the window has enough taps to pay for the transposes. On AVX-512:
   * 5x5 and larger on every narrow image; 3x3 while the runs' extra
   * columns per row (2 of 26) cost more than the transposes (level from
   * 27x27 on). On AVX2 (the AVX2 build on one Zen 4 core; 3x3 144
   * channels, 5x5 240, 3x3 stride 2 96): 1.2-2.6x faster up to 8 columns;
   * level to 1.2x from 9 to 15 at stride 1 but 0.85-0.98x at stride 2;
   * 0.56-0.7x from 16 on, where rows fill whole vectors. */
  int lanesPay = KILN_VECTOR_BYTES == 64 ? ow < (kh * kw >= 25 ? 2 * VL : 24)
                                         : ow <= VL || (sw == 1 && ow < 2 * VL);
  if (init && kh * kw >= 9 && kh * kw <= MAX_TAPS && groups >= VL && lanesPay &&
      rows * columns <= LANES_MAX_PIXELS) {
    Lanes *lanes = aligned_alloc(sizeof(Lanes), (size_t)(rows * columns + oh * ow) * sizeof(Lanes));
    if (lanes) {
      Shape window = {kh, kw, oh, ow, sh, sw, dh, dw, inH};
      Unpadded image = {ih, iw, inH, padTop, padLeft};
      int clampsLanes = lo > -INFINITY || hi < INFINITY;
      for (int64_t g = 0; g < groups; g += VL)
        channelBlock(&window, groups - g < VL ? groups - g : VL, in + g * inC, inC, &image,
                     rows, columns, w + g * kh * kw, bias ? bias + g : NULL, lo, hi, clampsLanes,
                     out + g * outF, outF, outH, lanes, lanes + rows * columns);
      free(lanes);
      return;
    }
  }
#endif
  /* A stride along the row, or narrow rows at a stride down the columns:
   * the padded image is split into phase planes instead, in one copy that
   * also pads it. Without memory for them, one output at a time. */
  Phases phases = {NULL, (rows + sh - 1) / sh, (columns + sw - 1) / sw,
                   padTop / sh, padTop % sh, padLeft / sw, padLeft % sw};
  if ((sw > 1 || (sh > 1 && ow < 2 * VL)) && phases.planeWidth <= SCRATCH)
    phases.planes =
        calloc((size_t)(sh * sw * phases.planeRows * phases.planeWidth), sizeof(float));
  if (phases.planes && padded) {
    unpadded = (Unpadded){rows, columns, inH, 0, 0};
    phases.topDiv = phases.topMod = phases.leftDiv = phases.leftMod = 0;
  }
  float *plane = NULL;
  if (!padded && !phases.planes && (plane = calloc((size_t)(rows * columns), sizeof(float))))
    inH = columns;
  Shape s = {kh, kw, oh, ow, sh, sw, dh, dw, inH};
  float scratch[SCRATCH];
  int narrow = sw == 1 && sh == 1 && ow < 2 * VL && oh > 1 && inH <= SCRATCH;
  int clamps = init && (lo > -INFINITY || hi < INFINITY);
  /* The taps' offsets in the layout the channels are read from. */
  int64_t taps = kh * kw, stackOffsets[MAX_TAPS];
  int64_t *offset = taps <= MAX_TAPS ? stackOffsets : malloc((size_t)taps * sizeof(int64_t));
  enum { PHASES, NARROW, ROWS, SCALAR } path =
      !offset || (!padded && !plane && !phases.planes) ? SCALAR
      : phases.planes                                  ? PHASES
      : narrow                                         ? NARROW
      : sw == 1                                        ? ROWS
                                                       : SCALAR;
  if (path == PHASES)
    phaseOffsets(&s, phases.planeRows, phases.planeWidth, offset);
  else if (path == NARROW || path == ROWS)
    rowOffsets(&s, inH, offset);
  for (int64_t g = 0; g < groups; ++g) {
    const float *gi = in + g * inC, *gw = w + g * kh * kw;
    float *go = out + g * outF;
    Start start = {init != 0, clamps, init && bias ? bias[g] : 0.0f, lo, hi};
    if (path == PHASES) {
      copyIntoPhases(&phases, &s, rows, columns, gi, &unpadded);
      channelRuns(&s, phases.planes, offset, phases.planeWidth, gw, go, outH, scratch, &start);
      continue;
    }
    if (!padded && !plane) {
      channelScalarUnpadded(&s, gi, &unpadded, gw, go, outH, &start);
      continue;
    }
    if (plane) {
      copyIntoPlane(plane, rows, columns, gi, &unpadded);
      gi = plane;
    }
    switch (path) {
    case NARROW:
      channelRuns(&s, gi, offset, inH, gw, go, outH, scratch, &start);
      break;
    case ROWS:
      channelUnitStride(&s, gi, offset, gw, go, outH, &start);
      break;
    default:
      channelScalar(&s, gi, gw, go, outH, &start);
      break;
    }
  }
  if (offset != stackOffsets)
    free(offset);
  free(plane);
  free(phases.planes);
}
