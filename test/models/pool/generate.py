#!/usr/bin/env python3
"""Writes a model of pools and concatenations between convolutions (ResNet's stem, VGG's
stages, Inception's branches).

With the models-blocked test and kilnc's default, the pools whose image comes
from a blocked convolution run on the blocked image (kiln.max_pool and
kiln.average_pool of N x C/16 x H x W x 16) and the next convolution reads
their result as it is; with --blocked-layout=off (models-nchw) every pool runs
on NCHW images. Both must give the references below.

Outputs of one model, all on fixed pseudo-random data:
  y_stem:   an RGB stem (Conv 3x3 stride 2, 3->32, pad 1) on 1x3x33x33, Relu,
            MaxPool 3x3 stride 2 pad 1 (ResNet's), then Conv 1x1 32->32;
  y_vgg:    Conv 3x3 32->32 pad 1, Relu, MaxPool 2x2 stride 2 on 1x32x18x18,
            then Conv 3x3 32->32 pad 1 (a VGG stage boundary);
  y_ceil:   MaxPool 3x3 stride 2 in ceil mode after a Conv 1x1 32->32 on
            1x32x16x16, then Conv 1x1 (windows that start inside the input
            and reach past it);
  y_avg:    Conv 1x1 24->24 (channels in a padded block of 32) on 1x24x9x9,
            AveragePool 2x2 stride 2 with end pads 1 (count_include_pad 0),
            then Conv 1x1 24->24: padding lanes stay zero;
  y_avg_inc: the same pool counting the pads (count_include_pad 1);
  y_pool_out: MaxPool 2x2 stride 2 of a Conv 3x3 32->32 on 1x32x12x12 whose
            result is a graph output (reordered back to NCHW);
  y_concat: Conv 1x1 32->32 and Relu(Conv 3x3 32->16, pad 1) of one 1x32x10x10
            image, joined along the channels (whole blocks: joined blocked),
            then Conv 1x1 48->16.
The references are computed here in float64. All values are multiples of
1/32 and the divisors powers of two, so float32 arithmetic in any order gives
the references exactly. Needs numpy and onnx:
    bench/.venv/bin/python test/models/pool/generate.py
"""
import os
import sys

import numpy as np
from onnx import helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import model_files  # noqa: E402

rng = np.random.default_rng(20261129)


def tensor(shape, scale=1.0):
    return model_files.tensor(rng, shape, scale)


def conv(x, w, b=None, pads=(0, 0, 0, 0), strides=(1, 1)):
    """Direct convolution in float64; pads are [top, left, bottom, right]."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    n, c, h, wd = x.shape
    f, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh = (h + pads[0] + pads[2] - kh) // strides[0] + 1
    ow = (wd + pads[1] + pads[3] - kw) // strides[1] + 1
    y = np.zeros((n, f, oh, ow))
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i:i + strides[0] * (oh - 1) + 1:strides[0],
                       j:j + strides[1] * (ow - 1) + 1:strides[1]]
            y += np.einsum("nchw,fc->nfhw", patch, w[:, :, i, j])
    if b is not None:
        y += b.astype(np.float64)[None, :, None, None]
    return y


def pool(x, kernel, strides, pads, mode, ceil=False, include_pad=False):
    """2-D max or average pool in float64, as ONNX defines them."""
    n, c, h, w = x.shape
    size = []
    for d, extent in enumerate((h, w)):
        span = extent + pads[d] + pads[2 + d] - kernel[d]
        steps = -(-span // strides[d]) if ceil else span // strides[d]
        if ceil and steps * strides[d] >= extent + pads[d]:
            steps -= 1  # a last window starting in the end padding is dropped
        size.append(steps + 1)
    y = np.zeros((n, c, size[0], size[1]))
    for i in range(size[0]):
        for j in range(size[1]):
            r0, c0 = i * strides[0] - pads[0], j * strides[1] - pads[1]
            rows = [r for r in range(r0, r0 + kernel[0]) if 0 <= r < h]
            cols = [q for q in range(c0, c0 + kernel[1]) if 0 <= q < w]
            window = x[:, :, rows][:, :, :, cols]
            if mode == "max":
                y[:, :, i, j] = window.max(axis=(2, 3))
            else:
                r1 = min(r0 + kernel[0], h + pads[2]) if include_pad else None
                c1 = min(c0 + kernel[1], w + pads[3]) if include_pad else None
                count = ((r1 - r0) * (c1 - c0)) if include_pad else len(rows) * len(cols)
                y[:, :, i, j] = window.sum(axis=(2, 3)) / count
    return y


relu = lambda v: np.maximum(v, 0.0)  # noqa: E731

x_stem = tensor((1, 3, 33, 33))
w_stem, b_stem = tensor((32, 3, 3, 3), 0.3), tensor((32,), 0.1)
w_after = tensor((32, 32, 1, 1), 0.1)
x_vgg = tensor((1, 32, 18, 18))
w_vgg1, b_vgg1 = tensor((32, 32, 3, 3), 0.1), tensor((32,), 0.1)
w_vgg2 = tensor((32, 32, 3, 3), 0.05)
x_ceil = tensor((1, 32, 16, 16))
w_ceil1, w_ceil2 = tensor((32, 32, 1, 1), 0.1), tensor((32, 32, 1, 1), 0.1)
x_avg = tensor((1, 24, 9, 9))
w_avg1, b_avg1 = tensor((24, 24, 1, 1), 0.1), tensor((24,), 0.1)
w_avg2 = tensor((24, 24, 1, 1), 0.1)
x_out = tensor((1, 32, 12, 12))
w_out = tensor((32, 32, 3, 3), 0.1)
x_cat = tensor((1, 32, 10, 10))
w_cat1, w_cat3 = tensor((32, 32, 1, 1), 0.1), tensor((16, 32, 3, 3), 0.1)
w_join = tensor((16, 48, 1, 1), 0.1)

stem = pool(relu(conv(x_stem, w_stem, b_stem, (1, 1, 1, 1), (2, 2))), (3, 3), (2, 2), (1, 1, 1, 1), "max")
y_stem = conv(stem, w_after)
vgg = pool(relu(conv(x_vgg, w_vgg1, b_vgg1, (1, 1, 1, 1))), (2, 2), (2, 2), (0, 0, 0, 0), "max")
y_vgg = conv(vgg, w_vgg2, None, (1, 1, 1, 1))
ceil = pool(conv(x_ceil, w_ceil1), (3, 3), (2, 2), (0, 0, 0, 0), "max", ceil=True)
y_ceil = conv(ceil, w_ceil2)
avg_in = conv(x_avg, w_avg1, b_avg1)
y_avg = conv(pool(avg_in, (2, 2), (2, 2), (0, 0, 1, 1), "avg"), w_avg2)
y_avg_inc = conv(pool(avg_in, (2, 2), (2, 2), (0, 0, 1, 1), "avg", include_pad=True), w_avg2)
y_pool_out = pool(conv(x_out, w_out, None, (1, 1, 1, 1)), (2, 2), (2, 2), (0, 0, 0, 0), "max")
joined = np.concatenate([conv(x_cat, w_cat1), relu(conv(x_cat, w_cat3, None, (1, 1, 1, 1)))], axis=1)
y_concat = conv(joined, w_join)

N = helper.make_node
nodes = [
    N("Conv", ["x_stem", "w_stem", "b_stem"], ["stem_c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
      strides=[2, 2]),
    N("Relu", ["stem_c"], ["stem_r"]),
    N("MaxPool", ["stem_r"], ["stem_p"], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
    N("Conv", ["stem_p", "w_after"], ["y_stem"], kernel_shape=[1, 1]),
    N("Conv", ["x_vgg", "w_vgg1", "b_vgg1"], ["vgg_c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    N("Relu", ["vgg_c"], ["vgg_r"]),
    N("MaxPool", ["vgg_r"], ["vgg_p"], kernel_shape=[2, 2], strides=[2, 2]),
    N("Conv", ["vgg_p", "w_vgg2"], ["y_vgg"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    N("Conv", ["x_ceil", "w_ceil1"], ["ceil_c"], kernel_shape=[1, 1]),
    N("MaxPool", ["ceil_c"], ["ceil_p"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
    N("Conv", ["ceil_p", "w_ceil2"], ["y_ceil"], kernel_shape=[1, 1]),
    N("Conv", ["x_avg", "w_avg1", "b_avg1"], ["avg_c"], kernel_shape=[1, 1]),
    N("AveragePool", ["avg_c"], ["avg_p"], kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 1, 1]),
    N("Conv", ["avg_p", "w_avg2"], ["y_avg"], kernel_shape=[1, 1]),
    N("AveragePool", ["avg_c"], ["avg_pi"], kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 1, 1],
      count_include_pad=1),
    N("Conv", ["avg_pi", "w_avg2"], ["y_avg_inc"], kernel_shape=[1, 1]),
    N("Conv", ["x_out", "w_out"], ["out_c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    N("MaxPool", ["out_c"], ["y_pool_out"], kernel_shape=[2, 2], strides=[2, 2]),
    N("Conv", ["x_cat", "w_cat1"], ["cat_a"], kernel_shape=[1, 1]),
    N("Conv", ["x_cat", "w_cat3"], ["cat_b"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    N("Relu", ["cat_b"], ["cat_r"]),
    N("Concat", ["cat_a", "cat_r"], ["cat_j"], axis=1),
    N("Conv", ["cat_j", "w_join"], ["y_concat"], kernel_shape=[1, 1]),
]
model_files.save(
    HERE, "pools_concat", nodes,
    inputs=[("x_stem", x_stem), ("x_vgg", x_vgg), ("x_ceil", x_ceil), ("x_avg", x_avg),
            ("x_out", x_out), ("x_cat", x_cat)],
    outputs=[("y_stem", y_stem), ("y_vgg", y_vgg), ("y_ceil", y_ceil), ("y_avg", y_avg),
             ("y_avg_inc", y_avg_inc), ("y_pool_out", y_pool_out), ("y_concat", y_concat)],
    initializers=[("w_stem", w_stem), ("b_stem", b_stem), ("w_after", w_after),
                  ("w_vgg1", w_vgg1), ("b_vgg1", b_vgg1), ("w_vgg2", w_vgg2),
                  ("w_ceil1", w_ceil1), ("w_ceil2", w_ceil2), ("w_avg1", w_avg1),
                  ("b_avg1", b_avg1), ("w_avg2", w_avg2), ("w_out", w_out), ("w_cat1", w_cat1),
                  ("w_cat3", w_cat3), ("w_join", w_join)])
