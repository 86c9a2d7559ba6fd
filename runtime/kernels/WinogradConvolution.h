/*===- WinogradConvolution.h - 3x3 convolutions by Winograd on AVX2 --------===
 *
 * Winograd's F(4x4, 3x3) on images in blocks of 8 channels (nChw8c), for
 * CPUs with AVX2 and FMA but not AVX-512, where oneDNN has no Winograd
 * kernels, and in blocks of 16 (nChw16c) for a train step's computed
 * filters on CPUs with AVX-512; see WinogradConvolution.c. kiln_conv2d_blocked
 * (BlockedConvolution.c) splits a convolution into work items, each some
 * of its 4x4 output tiles by some of its filters, and runs them on its
 * threads. Internal to runtime/kernels.
 *
 *===----------------------------------------------------------------------===*/
#ifndef KILN_RUNTIME_KERNELS_WINOGRADCONVOLUTION_H
#define KILN_RUNTIME_KERNELS_WINOGRADCONVOLUTION_H
#include "ConvActivation.h"

#include <stdint.h>

/* Points of a transformed tile: 6 x 6. */
enum { KILN_WINOGRAD_POINTS = 36 };

/* A 3x3 convolution at stride 1 on dense images in blocks of `block`
 * channels (nChw8c, or nChw16c with c and f whole blocks of 16): `in` is
 * n x ceil(c/block) x ih x iw x block, its lanes past c zero; `out` holds
 * n images of ceil(f/block) x oh x ow x block, each dense, `outStride`
 * floats apart, and gets clamp(activation(conv + bias [+ out]), low, high)
 * with its lanes past f zero. The kernel works on 8 channels at a time
 * either way: a block of 16 is two halves. */
typedef struct KilnWinogradConv {
  int64_t n, c, ih, iw, f, oh, ow, padTop, padLeft, block;
  const float *in;
  /* The filters as kilnWinogradPack leaves them. */
  const float *packed;
  /* f floats, or NULL. */
  const float *bias;
  float *out;
  int64_t outStride;
  float low, high;
  /* Whether `out` holds an addend (a residual sum). */
  int accumulate;
  KilnConvActivation activation;
} KilnWinogradConv;

/* 4x4 output tiles of the convolution (over all its images). */
int64_t kilnWinogradTiles(const KilnWinogradConv *conv);

/* Floats of the transformed filters of `f` filters of `c` channels. */
int64_t kilnWinogradPackedFloats(int64_t c, int64_t f);

/* Transforms the filters `w` (f x c x 3 x 3, dense) and packs them into
 * `packed` (64-byte aligned, kilnWinogradPackedFloats of them): one
 * product's operand per point, its filters in blocks of 16. Needs AVX2
 * and FMA. */
void kilnWinogradPack(const float *w, int64_t c, int64_t f, float *packed);

/* Blocks of 16 filters that kilnWinogradPack packs. */
int64_t kilnWinogradFilterBlocks(int64_t f);

/* kilnWinogradPack for the filter blocks firstBlock .. firstBlock + blocks
 * only, so that threads can share the work. */
void kilnWinogradPackBlocks(const float *w, int64_t c, int64_t f, int64_t firstBlock,
                            int64_t blocks, float *packed);

/* Floats of scratch a work item of `tiles` tiles and `columns` filters
 * needs. */
int64_t kilnWinogradScratchFloats(const KilnWinogradConv *conv, int64_t tiles, int64_t columns);

/* Tiles firstTile .. firstTile + tiles of the output, filters firstColumn
 * .. firstColumn + columns (firstColumn a multiple of 16, columns a
 * multiple of 8 or the rest of the filters rounded up to 8), with
 * `scratch` (64-byte aligned, kilnWinogradScratchFloats of it). Needs AVX2
 * and FMA. */
void kilnWinogradConv2dAvx2(const KilnWinogradConv *conv, int64_t firstTile, int64_t tiles,
                            int64_t firstColumn, int64_t columns, float *scratch);

#endif /* KILN_RUNTIME_KERNELS_WINOGRADCONVOLUTION_H */
