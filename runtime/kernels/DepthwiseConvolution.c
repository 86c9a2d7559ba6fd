/*===- DepthwiseConvolution.c - Depthwise 2-D convolution tiles, NCHW -------===
 *
 * A depthwise convolution (one input and one output channel per group) of a
 * tile of Kiln's: `groups` channels of an image already padded, in plain
 * NCHW, by filters [groups][kh][kw]; the result is added to the output
 * (which holds the bias). Kiln's generated loops ran these 2 to 6 times
 * slower than ONNX Runtime, and oneDNN's depthwise kernels want channels
 * innermost, so every call reordered the image there and back.
 *
 * Each window position (tap) is a sequence read at unit stride along the
 * output row, so a block of output vectors takes per tap one broadcast
 * weight and one load and one multiply-add per vector:
 *   - stride 1: the tap's sequence is the input row, shifted;
 *   - stride s: the input rows a row of outputs reads are first split into s
 *     planes of every s-th column, and each tap reads one plane, shifted;
 *   - narrow outputs at stride 1 (images of 7 to 31 columns): the rows are
 *     read as one sequence over the padded width and the columns past the
 *     output's are dropped, so a 7x7 image fills whole vectors.
 * The last, partial vector of a row overlaps the one before it and is
 * computed from the output's values as they were before the row began, so
 * every output is the same sum, in the same order, whichever vector wrote it.
 *
 * This file is compiled once per vector width (KILN_VECTOR_BYTES, with the
 * matching -m flags) under the name KILN_DEPTHWISE_NAME; the entry point in
 * DepthwiseDispatch.c picks the widest the CPU runs.
 *
 *===----------------------------------------------------------------------===*/
#include <stdint.h>
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

/* What a band of output rows sums: out[r][x] += sum over t of
 * w[t] * tap[t][r * rowStep + x], r < rows, x < n. */
typedef struct Band {
  float *out;
  int64_t outH, rows, n;
  const float *const *tap;
  const float *w;
  int64_t taps, rowStep;
} Band;

/* R rows from `y` times V vectors from `x`, starting from the outputs (or,
 * V being 1, from `start`, one vector per row). */
INLINE void tile(const Band *b, int64_t y, int64_t x, int R, int V, const Vector *start) {
  Vector acc[ACCUMULATORS];
  float *out = b->out + y * b->outH + x;
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < V; ++j)
      acc[r * V + j] = start ? start[r] : load(out + r * b->outH + j * VL);
  int64_t offset = y * b->rowStep + x;
  for (int64_t t = 0; t < b->taps; ++t) {
    float wt = b->w[t]; /* broadcast once, by the scalar-vector product */
    const float *p = b->tap[t] + offset;
    for (int r = 0; r < R; ++r)
      for (int j = 0; j < V; ++j)
        acc[r * V + j] += wt * load(p + r * b->rowStep + j * VL);
  }
  for (int r = 0; r < R; ++r)
    for (int j = 0; j < V; ++j)
      store(out + r * b->outH + j * VL, acc[r * V + j]);
}

/* Rows y..y+R: tiles of V vectors, the vectors left over as one tile, and
 * a last partial vector overlapping the one before it, computed from the
 * outputs' values before the rows began (so the lanes both write get the
 * same sum); rows shorter than a vector are summed one output at a time. */
INLINE void rows(const Band *b, int64_t y, int R, int V) {
  int64_t n = b->n;
  if (n < VL) {
    for (int r = 0; r < R; ++r)
      for (int64_t x = 0; x < n; ++x) {
        float *o = b->out + (y + r) * b->outH + x;
        float acc = *o;
        for (int64_t t = 0; t < b->taps; ++t)
          acc += b->w[t] * b->tap[t][(y + r) * b->rowStep + x];
        *o = acc;
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
    tile(b, y, n - VL, R, 1, before);
}

/* The band in tiles of ACCUMULATORS vectors: along the row when it has that
 * many, else over several rows of fewer vectors each. */
static void accumulate(const Band *b) {
  int64_t vectors = b->n / VL, y = 0;
  if (vectors < 2)
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

/* accumulate() in passes of at most MAX_TAPS taps, taken from the window
 * (ky, kx) by `tapOf`. */
typedef const float *TapFn(const void *context, int64_t ky, int64_t kx);
static void accumulateWindow(Band b, int64_t kh, int64_t kw, const float *w, TapFn *tapOf,
                             const void *context) {
  const float *tap[MAX_TAPS];
  b.tap = tap;
  for (int64_t t0 = 0; t0 < kh * kw; t0 += MAX_TAPS) {
    b.taps = kh * kw - t0 < MAX_TAPS ? kh * kw - t0 : MAX_TAPS;
    for (int64_t t = 0; t < b.taps; ++t)
      tap[t] = tapOf(context, (t0 + t) / kw, (t0 + t) % kw);
    b.w = w + t0;
    accumulate(&b);
  }
}

typedef struct Shape {
  int64_t kh, kw, oh, ow, sh, sw, dh, dw, inH;
} Shape;

typedef struct Window {
  const float *origin;
  int64_t rowStride, dh, dw, sw, planeWidth;
} Window;

/* Unit stride along the row: the tap reads the input row, shifted. */
static const float *shiftedRow(const void *context, int64_t ky, int64_t kx) {
  const Window *v = context;
  return v->origin + ky * v->dh * v->rowStride + kx * v->dw;
}

/* Stride sw: the tap reads plane (kx * dw) % sw of its row, shifted. */
static const float *shiftedPlane(const void *context, int64_t ky, int64_t kx) {
  const Window *v = context;
  int64_t column = kx * v->dw;
  return v->origin + ky * v->dh * v->rowStride + (column % v->sw) * v->planeWidth +
         column / v->sw;
}

/* One channel, unit stride along the row. */
static void channelUnitStride(const Shape *s, const float *in, const float *w, float *out,
                              int64_t outH) {
  Window window = {in, s->inH, s->dh, s->dw, 1, 0};
  Band band = {out, outH, s->oh, s->ow, NULL, NULL, 0, s->sh * s->inH};
  accumulateWindow(band, s->kh, s->kw, w, shiftedRow, &window);
}

/* One channel, unit strides, rows narrower than two vectors: runs of rows
 * read as one row over the padded width into `scratch`, the columns past
 * the output's dropped. */
static void channelNarrow(const Shape *s, const float *in, const float *w, float *out,
                          int64_t outH, float *scratch) {
  int64_t runRows = SCRATCH / s->inH;
  for (int64_t y0 = 0; y0 < s->oh; y0 += runRows) {
    int64_t rowsHere = s->oh - y0 < runRows ? s->oh - y0 : runRows;
    int64_t n = (rowsHere - 1) * s->inH + s->ow;
    memset(scratch, 0, n * sizeof(float));
    Window window = {in + y0 * s->inH, s->inH, s->dh, s->dw, 1, 0};
    Band band = {scratch, 0, 1, n, NULL, NULL, 0, 0};
    accumulateWindow(band, s->kh, s->kw, w, shiftedRow, &window);
    for (int64_t y = 0; y < rowsHere; ++y) {
      float *o = out + (y0 + y) * outH;
      const float *r = scratch + y * s->inH;
      for (int64_t x = 0; x < s->ow; ++x)
        o[x] += r[x];
    }
  }
}

/* Rows of outputs at stride sw > 1 per band that fits the scratch, or 0. */
static int64_t stridedBandRows(const Shape *s, int64_t planeWidth) {
  int64_t inputRows = SCRATCH / (planeWidth * s->sw);
  int64_t reach = (s->kh - 1) * s->dh + 1;
  return inputRows < reach ? 0 : (inputRows - reach) / s->sh + 1;
}

/* One channel at stride sw > 1 along the row, in bands of output rows: the
 * band's input rows are split into sw planes each (plane p holds columns
 * p, p + sw, ...), so that every tap reads a plane at unit stride. */
static void channelStrided(const Shape *s, const float *in, const float *w, float *out,
                           int64_t outH, float *scratch, int64_t planeWidth,
                           int64_t bandRows) {
  int64_t rowFloats = planeWidth * s->sw;
  int64_t inWidth = (s->ow - 1) * s->sw + (s->kw - 1) * s->dw + 1;
  for (int64_t y0 = 0; y0 < s->oh; y0 += bandRows) {
    int64_t rowsHere = s->oh - y0 < bandRows ? s->oh - y0 : bandRows;
    int64_t inputRows = (rowsHere - 1) * s->sh + (s->kh - 1) * s->dh + 1;
    for (int64_t r = 0; r < inputRows; ++r) {
      const float *row = in + (y0 * s->sh + r) * s->inH;
      float *planes = scratch + r * rowFloats;
      if (s->sw == 2) {
        /* The common case, with a constant stride that vectorizes. */
        float *restrict even = planes, *restrict odd = planes + planeWidth;
        int64_t i = 0;
        for (; 2 * i + 1 < inWidth; ++i) {
          even[i] = row[2 * i];
          odd[i] = row[2 * i + 1];
        }
        if (2 * i < inWidth)
          even[i] = row[2 * i];
        continue;
      }
      for (int64_t p = 0; p < s->sw; ++p)
        for (int64_t i = 0; i * s->sw + p < inWidth; ++i)
          planes[p * planeWidth + i] = row[i * s->sw + p];
    }
    Window window = {scratch, rowFloats, s->dh, s->dw, s->sw, planeWidth};
    Band band = {out + y0 * outH, outH, rowsHere, s->ow, NULL, NULL, 0, s->sh * rowFloats};
    accumulateWindow(band, s->kh, s->kw, w, shiftedPlane, &window);
  }
}

/* Any shape, one output at a time. */
static void channelScalar(const Shape *s, const float *in, const float *w, float *out,
                          int64_t outH) {
  for (int64_t y = 0; y < s->oh; ++y)
    for (int64_t x = 0; x < s->ow; ++x) {
      float acc = out[y * outH + x];
      for (int64_t ky = 0; ky < s->kh; ++ky)
        for (int64_t kx = 0; kx < s->kw; ++kx)
          acc += w[ky * s->kw + kx] * in[(y * s->sh + ky * s->dh) * s->inH + x * s->sw + kx * s->dw];
      out[y * outH + x] = acc;
    }
}

void KILN_DEPTHWISE_NAME(int64_t groups, int64_t kh, int64_t kw, int64_t oh, int64_t ow,
                         int64_t sh, int64_t sw, int64_t dh, int64_t dw, const float *in,
                         int64_t inC, int64_t inH, const float *w, float *out, int64_t outF,
                         int64_t outH) {
  if (groups <= 0 || oh <= 0 || ow <= 0 || kh <= 0 || kw <= 0 || sh <= 0 || sw <= 0 ||
      dh <= 0 || dw <= 0)
    return;
  Shape s = {kh, kw, oh, ow, sh, sw, dh, dw, inH};
  float scratch[SCRATCH];
  int64_t planeWidth = ow + (kw - 1) * dw / sw + 1;
  int64_t bandRows = sw > 1 ? stridedBandRows(&s, planeWidth) : 0;
  int narrow = sw == 1 && sh == 1 && ow < 2 * VL && oh > 1 && inH <= SCRATCH;
  for (int64_t g = 0; g < groups; ++g) {
    const float *gi = in + g * inC, *gw = w + g * kh * kw;
    float *go = out + g * outF;
    if (narrow)
      channelNarrow(&s, gi, gw, go, outH, scratch);
    else if (sw == 1)
      channelUnitStride(&s, gi, gw, go, outH);
    else if (bandRows > 0)
      channelStrided(&s, gi, gw, go, outH, scratch, planeWidth, bandRows);
    else
      channelScalar(&s, gi, gw, go, outH);
  }
}
