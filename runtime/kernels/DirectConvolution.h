/*===- DirectConvolution.h - Dense convolution tiles in AVX2 registers -----===
 *
 * The direct convolution kernel that kiln_conv2d_constant_w
 * (PackedConvolution.c) runs on CPUs with AVX2 and FMA but not AVX-512,
 * and the product of few rows that kiln_matmul_constant_b (PackedMatmul.c)
 * runs there; see DirectConvolution.c. Internal to runtime/kernels.
 *
 *===----------------------------------------------------------------------===*/
#ifndef KILN_RUNTIME_KERNELS_DIRECTCONVOLUTION_H
#define KILN_RUNTIME_KERNELS_DIRECTCONVOLUTION_H
#include <stdint.h>

/* Floats of `f` filters of `taps` taps (input channels x window) packed. */
int64_t kilnDirectConvPackedFloats(int64_t f, int64_t taps);

/* Packs the dense filters `w` [f][taps] into `packed` (64-byte aligned,
 * kilnDirectConvPackedFloats of them). */
void kilnDirectConvPack(const float *w, int64_t f, int64_t taps, float *packed);

/* The offset of each tap (input channel k, window row i, column j, in that
 * order) from its output position's input element: k * inC + i * dh * inH +
 * j * dw, into `offset` (c x kh x kw of them). Returns 0 when one does not
 * fit in 32 bits. */
int kilnDirectConvOffsets(int64_t c, int64_t kh, int64_t kw, int64_t dh, int64_t dw, int64_t inC,
                          int64_t inH, int32_t *offset);

/* out[o][y][x] += sum over t < taps of w[o][t] * in[y * sh * inH + x * sw +
 * offset[t]], for o < f, y < oh, x < ow: `in` the padded image (rows inH
 * apart), `packed` the filters as kilnDirectConvPack leaves them, `out`
 * with strides (outF, outH, 1). Needs AVX2 and FMA. */
void kilnDirectConv2dAvx2(int64_t taps, int64_t oh, int64_t ow, int64_t sh, int64_t sw,
                          const float *in, int64_t inH, const int32_t *offset,
                          const float *packed, int64_t f, float *out, int64_t outF,
                          int64_t outH);

/* Packs B (k x n, row-major with leading dimension ldb; stored transposed,
 * n x k, when `transB`) for kilnSmallMatmulAvx2: kilnDirectConvPackedFloats(n,
 * k) floats at `packed`, 64-byte aligned. */
void kilnSmallMatmulPack(const float *b, int64_t n, int64_t k, int64_t ldb, int transB,
                         float *packed);

/* C = A B, or C += A B with `accumulate`, for A m x k (leading dimension
 * lda), B packed by kilnSmallMatmulPack and C m x n (ldc): products of few
 * rows (batch-1 and small-batch inference), 6 rows at a time with every
 * block of 16 columns, B streamed once per 6 rows. Needs AVX2 and FMA. */
void kilnSmallMatmulAvx2(int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                         const float *packed, float *c, int64_t ldc, int accumulate);

#endif /* KILN_RUNTIME_KERNELS_DIRECTCONVOLUTION_H */
