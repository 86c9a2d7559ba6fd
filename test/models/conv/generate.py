#!/usr/bin/env python3
"""Writes a convolution model that exercises every way Kiln tiles a convolution.

The paths named below are those of NCHW images (the models-nchw test, kilnc
--blocked-layout=off). With --blocked-layout=all (the models-blocked test), the
convolutions whose input and output channels are multiples of 16 (y_wino,
y_dw_dilated, y_1x1, y_direct_5x5, y_direct_s2, y_direct_7x1, y_direct_1x7 and
any other such below) run as kiln.blocked_conv on images in blocks of 16
channels instead; kilnc's default leaves most of them, alone between NCHW
images, on the paths below (the models test). On a CPU with AVX2 but not
AVX-512 the blocks are of 8 channels, and the 3x3 convolutions at stride 1 of
16 or more input channels (y_wino, y_wino_odd, y_wino_silu), blocked then by
kilnc's default too, run Kiln's Winograd F(4x4, 3x3), whose transforms
multiply by 1/6 and 1/24: those outputs are then within a few ulp of the
largest partial sums rather than exact. The models and models-blocked tests
therefore run with KILN_WINOGRAD=0 (oneDNN's kernels, exact), and
models-winograd runs the Winograd kernel with an absolute tolerance of 1e-5.

Outputs of one model, all on fixed pseudo-random data:
  y_rows:   Relu(Conv 3x3, pad 1) on 1x8x40x40 -> 1x16x40x40: one image, so the
            kernel is split into bands of output rows (im2col + sgemm per band);
  y_groups: Conv 3x3, 2 groups, dilation 2, pad 2 on 2x4x32x32 -> 2x8x32x32:
            one tile per (image, group);
  y_plain:  Conv 3x3, pad 1, no epilogue, on 1x8x40x40 -> 1x16x40x40: bands
            written straight into the output (strided matrix rows);
  y_stride: Conv 5x5, stride 2, asymmetric pads, no bias on 1x8x40x40 ->
            1x4x19x20: small, so untiled, still im2col + sgemm;
  y_wino:   Relu(Conv 3x3, pad 1 + input) on 1x32x24x48: 32 channels in and
            out, so bands of rows call oneDNN's Winograd F(2x2, 3x3), whose
            transforms only add, subtract and halve, exact on these values;
  y_odd:    Conv 3x3, pad 1 on 1x8x37x37: bands of rows that do not divide 37,
            so the last band is shorter (im2col + sgemm with a run-time size);
  y_wino_odd: Conv 3x3, pad 1 on 1x32x23x47: Winograd bands, the last one
            shorter, so its call site meets two shapes;
  y_dw_small: depthwise Conv 3x3, pad 1 on 1x40x14x14: tiles of groups through
            kiln_depthwise_conv2d, the last tile with fewer groups;
  y_dw_large: depthwise Conv 3x3 stride 2, pad 1 on 1x24x65x65: rows split into
            even and odd columns;
  y_dw_5x5: depthwise Conv 5x5, pad 2 on 2x24x7x7: rows narrower than a vector,
            read as one run over the padded width; two images;
  y_dw_dilated: depthwise Conv 3x3, dilation 2, pad 2 on 1x16x33x33: rows that
            end in a partial vector;
  y_dw_rect: depthwise Conv 3x5, strides 2x1, pads 1,2 on 1x8x21x40;
  y_dw_s3:  depthwise Conv 3x3, stride 3, pad 1 on 1x8x29x31: rows split into
            three planes;
  y_dw_9x9: depthwise Conv 9x9, pad 4 on 1x8x20x20: 81 taps, summed in passes;
  y_1x1:    Conv 1x1 48->32 on 1x48x30x30: the image read in place as the
            sgemm's B, no column buffer;
  y_direct_5x5: Conv 5x5, pad 2, 32->32 on 1x32x24x24: bands of rows through
            oneDNN's direct convolution (kiln_conv2d_constant_w);
  y_direct_s2: Relu(Conv 3x3, stride 2, pad 1, 32->64 on 1x32x41x41): the
            same call with strides 2, the last band shorter;
  y_direct_7x1, y_direct_1x7: Conv 7x1 and 1x7 (pads 3, 0 and 0, 3), 48->48
            on 1x48x24x24: windows one tap wide, whose folded unit loop the
            call restores;
  y_1x1_7x7: Relu(Conv 1x1 96->80 + bias) on 1x96x7x7: 49 positions, the
            transposed product with the filters packed
            (kiln_matmul_constant_a);
  y_1x1_s2: Conv 1x1, stride 2, 64->48 on 1x64x13x13: the same from the
            column buffer of the strided image (7x7 positions);
  y_dw_silu, y_1x1_silu: SiLU (x * Sigmoid(x), as PyTorch exports it; the
            product's operands either way round) of a depthwise Conv 3x3, pad
            1, on 1x32x14x14 and of a Conv 1x1 32->48 on 1x32x10x10
            (EfficientNet's): a loop over the convolution's result, or in
            blocks the convolution's fused swish, applied after oneDNN's
            primitive;
  y_wino_silu: SiLU(Conv 3x3, pad 1, 24->24 + input) on 1x24x12x20: in blocks
            of 8, Winograd's tiles apply the swish after the residual sum;
  y_1x1_hswish: HardSwish(Conv 1x1 16->40) on 1x16x9x9 (MobileNetV3's):
            the fused hard swish, 40 channels in a padded block of 16.
The references are computed here in float64 with a direct loop convolution,
independently of Kiln. All values are multiples of 1/32, so float32 arithmetic
in any order gives the reference exactly (see tensor()), up to the rounding of
the sigmoid in the SiLU outputs and of the division by 6 in the HardSwish. Layout as in ONNX's backend tests, so kiln-conformance
checks it. Needs numpy and onnx (bench/.venv has both):
    bench/.venv/bin/python test/models/conv/generate.py
"""
import os
import sys

import numpy as np
from onnx import helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import model_files  # noqa: E402

rng = np.random.default_rng(20261122)


def conv_reference(x, w, b, pads, strides=(1, 1), dilations=(1, 1), group=1):
    """Direct convolution in float64; pads are [top, left, bottom, right]."""
    x = x.astype(np.float64)
    w = w.astype(np.float64)
    n, c, h, wd = x.shape
    f, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh = (h + pads[0] + pads[2] - dilations[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (wd + pads[1] + pads[3] - dilations[1] * (kw - 1) - 1) // strides[1] + 1
    fg = f // group
    y = np.zeros((n, f, oh, ow))
    for g in range(group):
        for i in range(kh):
            for j in range(kw):
                rows = slice(i * dilations[0], i * dilations[0] + strides[0] * (oh - 1) + 1, strides[0])
                cols = slice(j * dilations[1], j * dilations[1] + strides[1] * (ow - 1) + 1, strides[1])
                patch = xp[:, g * cg:(g + 1) * cg, rows, cols]          # n, cg, oh, ow
                wij = w[g * fg:(g + 1) * fg, :, i, j]                   # fg, cg
                y[:, g * fg:(g + 1) * fg] += np.einsum("nchw,fc->nfhw", patch, wij)
    if b is not None:
        y += b.astype(np.float64)[None, :, None, None]
    return y


def tensor(shape, scale=1.0):
    """Multiples of 1/32 in [-scale, scale]: every product and partial sum of these
    convolutions is exact in float32, so the result does not depend on the
    summation order and must match the float64 reference exactly."""
    return model_files.tensor(rng, shape, scale)


x1 = tensor((1, 8, 40, 40))
x2 = tensor((2, 4, 32, 32))
w_rows, b_rows = tensor((16, 8, 3, 3), 0.3), tensor((16,), 0.1)
w_groups, b_groups = tensor((8, 2, 3, 3), 0.3), tensor((8,), 0.1)
w_stride = tensor((4, 8, 5, 5), 0.2)
w_plain, b_plain = tensor((16, 8, 3, 3), 0.3), tensor((16,), 0.1)
x3 = tensor((1, 32, 24, 48))
w_wino, b_wino = tensor((32, 32, 3, 3), 0.3), tensor((32,), 0.1)
x4 = tensor((1, 8, 37, 37))
w_odd, b_odd = tensor((16, 8, 3, 3), 0.3), tensor((16,), 0.1)
x5 = tensor((1, 32, 23, 47))
w_wino_odd = tensor((32, 32, 3, 3), 0.3)
x6 = tensor((1, 40, 14, 14))
w_dw_small, b_dw_small = tensor((40, 1, 3, 3), 0.3), tensor((40,), 0.1)
x7 = tensor((1, 24, 65, 65))
w_dw_large = tensor((24, 1, 3, 3), 0.3)
x8 = tensor((1, 48, 30, 30))
w_1x1, b_1x1 = tensor((32, 48, 1, 1), 0.3), tensor((32,), 0.1)
x9 = tensor((2, 24, 7, 7))
w_dw_5x5, b_dw_5x5 = tensor((24, 1, 5, 5), 0.3), tensor((24,), 0.1)
x10 = tensor((1, 16, 33, 33))
w_dw_dilated = tensor((16, 1, 3, 3), 0.3)
x11 = tensor((1, 8, 21, 40))
w_dw_rect, b_dw_rect = tensor((8, 1, 3, 5), 0.3), tensor((8,), 0.1)
x12 = tensor((1, 8, 29, 31))
w_dw_s3 = tensor((8, 1, 3, 3), 0.3)
x13 = tensor((1, 8, 20, 20))
w_dw_9x9 = tensor((8, 1, 9, 9), 0.25)
x14 = tensor((1, 32, 24, 24))
w_direct_5x5, b_direct_5x5 = tensor((32, 32, 5, 5), 0.2), tensor((32,), 0.1)
x15 = tensor((1, 32, 41, 41))
w_direct_s2, b_direct_s2 = tensor((64, 32, 3, 3), 0.3), tensor((64,), 0.1)
x16 = tensor((1, 48, 24, 24))
w_direct_7x1, w_direct_1x7 = tensor((48, 48, 7, 1), 0.2), tensor((48, 48, 1, 7), 0.2)
x17 = tensor((1, 96, 7, 7))
w_1x1_7x7, b_1x1_7x7 = tensor((80, 96, 1, 1), 0.3), tensor((80,), 0.1)
x18 = tensor((1, 64, 13, 13))
w_1x1_s2 = tensor((48, 64, 1, 1), 0.3)
x19 = tensor((1, 32, 14, 14))
w_dw_silu, b_dw_silu = tensor((32, 1, 3, 3), 0.3), tensor((32,), 0.1)
x20 = tensor((1, 32, 10, 10))
w_1x1_silu, b_1x1_silu = tensor((48, 32, 1, 1), 0.3), tensor((48,), 0.1)
x21 = tensor((1, 24, 12, 20))
w_wino_silu, b_wino_silu = tensor((24, 24, 3, 3), 0.2), tensor((24,), 0.1)
x22 = tensor((1, 16, 9, 9))
w_1x1_hswish, b_1x1_hswish = tensor((40, 16, 1, 1), 1.0), tensor((40,), 2.0)

nodes = [
    helper.make_node("Conv", ["x1", "w_rows", "b_rows"], ["c_rows"], name="conv_rows",
                     kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    helper.make_node("Relu", ["c_rows"], ["y_rows"], name="relu_rows"),
    helper.make_node("Conv", ["x2", "w_groups", "b_groups"], ["y_groups"], name="conv_groups",
                     kernel_shape=[3, 3], pads=[2, 2, 2, 2], dilations=[2, 2], group=2),
    helper.make_node("Conv", ["x1", "w_plain", "b_plain"], ["y_plain"], name="conv_plain",
                     kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    helper.make_node("Conv", ["x1", "w_stride"], ["y_stride"], name="conv_stride",
                     kernel_shape=[5, 5], pads=[1, 2, 0, 1], strides=[2, 2]),
    helper.make_node("Conv", ["x3", "w_wino", "b_wino"], ["c_wino"], name="conv_wino",
                     kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    helper.make_node("Add", ["c_wino", "x3"], ["s_wino"], name="add_wino"),
    helper.make_node("Relu", ["s_wino"], ["y_wino"], name="relu_wino"),
    helper.make_node("Conv", ["x4", "w_odd", "b_odd"], ["y_odd"], name="conv_odd",
                     kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    helper.make_node("Conv", ["x5", "w_wino_odd"], ["y_wino_odd"], name="conv_wino_odd",
                     kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    helper.make_node("Conv", ["x6", "w_dw_small", "b_dw_small"], ["y_dw_small"], name="conv_dw_small",
                     kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=40),
    helper.make_node("Conv", ["x7", "w_dw_large"], ["y_dw_large"], name="conv_dw_large",
                     kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2], group=24),
    helper.make_node("Conv", ["x8", "w_1x1", "b_1x1"], ["y_1x1"], name="conv_1x1", kernel_shape=[1, 1]),
    helper.make_node("Conv", ["x9", "w_dw_5x5", "b_dw_5x5"], ["y_dw_5x5"], name="conv_dw_5x5",
                     kernel_shape=[5, 5], pads=[2, 2, 2, 2], group=24),
    helper.make_node("Conv", ["x10", "w_dw_dilated"], ["y_dw_dilated"], name="conv_dw_dilated",
                     kernel_shape=[3, 3], pads=[2, 2, 2, 2], dilations=[2, 2], group=16),
    helper.make_node("Conv", ["x11", "w_dw_rect", "b_dw_rect"], ["y_dw_rect"], name="conv_dw_rect",
                     kernel_shape=[3, 5], pads=[1, 2, 1, 2], strides=[2, 1], group=8),
    helper.make_node("Conv", ["x12", "w_dw_s3"], ["y_dw_s3"], name="conv_dw_s3",
                     kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[3, 3], group=8),
    helper.make_node("Conv", ["x13", "w_dw_9x9"], ["y_dw_9x9"], name="conv_dw_9x9",
                     kernel_shape=[9, 9], pads=[4, 4, 4, 4], group=8),
    helper.make_node("Conv", ["x14", "w_direct_5x5", "b_direct_5x5"], ["y_direct_5x5"],
                     name="conv_direct_5x5", kernel_shape=[5, 5], pads=[2, 2, 2, 2]),
    helper.make_node("Conv", ["x15", "w_direct_s2", "b_direct_s2"], ["c_direct_s2"],
                     name="conv_direct_s2", kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2]),
    helper.make_node("Relu", ["c_direct_s2"], ["y_direct_s2"], name="relu_direct_s2"),
    helper.make_node("Conv", ["x16", "w_direct_7x1"], ["y_direct_7x1"], name="conv_direct_7x1",
                     kernel_shape=[7, 1], pads=[3, 0, 3, 0]),
    helper.make_node("Conv", ["x16", "w_direct_1x7"], ["y_direct_1x7"], name="conv_direct_1x7",
                     kernel_shape=[1, 7], pads=[0, 3, 0, 3]),
    helper.make_node("Conv", ["x17", "w_1x1_7x7", "b_1x1_7x7"], ["c_1x1_7x7"], name="conv_1x1_7x7",
                     kernel_shape=[1, 1]),
    helper.make_node("Relu", ["c_1x1_7x7"], ["y_1x1_7x7"], name="relu_1x1_7x7"),
    helper.make_node("Conv", ["x18", "w_1x1_s2"], ["y_1x1_s2"], name="conv_1x1_s2",
                     kernel_shape=[1, 1], strides=[2, 2]),
    helper.make_node("Conv", ["x19", "w_dw_silu", "b_dw_silu"], ["c_dw_silu"], name="conv_dw_silu",
                     kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=32),
    helper.make_node("Sigmoid", ["c_dw_silu"], ["s_dw_silu"], name="sigmoid_dw_silu"),
    helper.make_node("Mul", ["c_dw_silu", "s_dw_silu"], ["y_dw_silu"], name="mul_dw_silu"),
    helper.make_node("Conv", ["x20", "w_1x1_silu", "b_1x1_silu"], ["c_1x1_silu"], name="conv_1x1_silu",
                     kernel_shape=[1, 1]),
    helper.make_node("Sigmoid", ["c_1x1_silu"], ["s_1x1_silu"], name="sigmoid_1x1_silu"),
    helper.make_node("Mul", ["s_1x1_silu", "c_1x1_silu"], ["y_1x1_silu"], name="mul_1x1_silu"),
    helper.make_node("Conv", ["x21", "w_wino_silu", "b_wino_silu"], ["c_wino_silu"],
                     name="conv_wino_silu", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
    helper.make_node("Add", ["c_wino_silu", "x21"], ["a_wino_silu"], name="add_wino_silu"),
    helper.make_node("Sigmoid", ["a_wino_silu"], ["s_wino_silu"], name="sigmoid_wino_silu"),
    helper.make_node("Mul", ["a_wino_silu", "s_wino_silu"], ["y_wino_silu"], name="mul_wino_silu"),
    helper.make_node("Conv", ["x22", "w_1x1_hswish", "b_1x1_hswish"], ["c_1x1_hswish"],
                     name="conv_1x1_hswish", kernel_shape=[1, 1]),
    helper.make_node("HardSwish", ["c_1x1_hswish"], ["y_1x1_hswish"], name="hswish_1x1"),
]
y_rows = np.maximum(conv_reference(x1, w_rows, b_rows, [1, 1, 1, 1]), 0.0)
y_groups = conv_reference(x2, w_groups, b_groups, [2, 2, 2, 2], dilations=(2, 2), group=2)
y_plain = conv_reference(x1, w_plain, b_plain, [1, 1, 1, 1])
y_stride = conv_reference(x1, w_stride, None, [1, 2, 0, 1], strides=(2, 2))
y_wino = np.maximum(conv_reference(x3, w_wino, b_wino, [1, 1, 1, 1]) + x3, 0.0)
y_odd = conv_reference(x4, w_odd, b_odd, [1, 1, 1, 1])
y_wino_odd = conv_reference(x5, w_wino_odd, None, [1, 1, 1, 1])
y_dw_small = conv_reference(x6, w_dw_small, b_dw_small, [1, 1, 1, 1], group=40)
y_dw_large = conv_reference(x7, w_dw_large, None, [1, 1, 1, 1], strides=(2, 2), group=24)
y_1x1 = conv_reference(x8, w_1x1, b_1x1, [0, 0, 0, 0])
y_dw_5x5 = conv_reference(x9, w_dw_5x5, b_dw_5x5, [2, 2, 2, 2], group=24)
y_dw_dilated = conv_reference(x10, w_dw_dilated, None, [2, 2, 2, 2], dilations=(2, 2), group=16)
y_dw_rect = conv_reference(x11, w_dw_rect, b_dw_rect, [1, 2, 1, 2], strides=(2, 1), group=8)
y_dw_s3 = conv_reference(x12, w_dw_s3, None, [1, 1, 1, 1], strides=(3, 3), group=8)
y_dw_9x9 = conv_reference(x13, w_dw_9x9, None, [4, 4, 4, 4], group=8)
y_direct_5x5 = conv_reference(x14, w_direct_5x5, b_direct_5x5, [2, 2, 2, 2])
y_direct_s2 = np.maximum(conv_reference(x15, w_direct_s2, b_direct_s2, [1, 1, 1, 1], strides=(2, 2)), 0.0)
y_direct_7x1 = conv_reference(x16, w_direct_7x1, None, [3, 0, 3, 0])
y_direct_1x7 = conv_reference(x16, w_direct_1x7, None, [0, 3, 0, 3])
y_1x1_7x7 = np.maximum(conv_reference(x17, w_1x1_7x7, b_1x1_7x7, [0, 0, 0, 0]), 0.0)
y_1x1_s2 = conv_reference(x18, w_1x1_s2, None, [0, 0, 0, 0], strides=(2, 2))


def silu(v):
    return v / (1.0 + np.exp(-v))


y_dw_silu = silu(conv_reference(x19, w_dw_silu, b_dw_silu, [1, 1, 1, 1], group=32))
y_1x1_silu = silu(conv_reference(x20, w_1x1_silu, b_1x1_silu, [0, 0, 0, 0]))
y_wino_silu = silu(conv_reference(x21, w_wino_silu, b_wino_silu, [1, 1, 1, 1]) + x21)
c_1x1_hswish = conv_reference(x22, w_1x1_hswish, b_1x1_hswish, [0, 0, 0, 0])
y_1x1_hswish = c_1x1_hswish * np.clip(c_1x1_hswish / 6.0 + 0.5, 0.0, 1.0)

model_files.save(HERE, "conv_tiles", nodes,
                 [("x1", x1), ("x2", x2), ("x3", x3), ("x4", x4), ("x5", x5), ("x6", x6), ("x7", x7),
                  ("x8", x8), ("x9", x9), ("x10", x10), ("x11", x11), ("x12", x12), ("x13", x13),
                  ("x14", x14), ("x15", x15), ("x16", x16),
                  ("x17", x17), ("x18", x18), ("x19", x19), ("x20", x20), ("x21", x21),
                  ("x22", x22)],
                 [("y_rows", y_rows), ("y_groups", y_groups), ("y_plain", y_plain),
                  ("y_stride", y_stride), ("y_wino", y_wino), ("y_odd", y_odd),
                  ("y_wino_odd", y_wino_odd), ("y_dw_small", y_dw_small),
                  ("y_dw_large", y_dw_large), ("y_1x1", y_1x1), ("y_dw_5x5", y_dw_5x5),
                  ("y_dw_dilated", y_dw_dilated), ("y_dw_rect", y_dw_rect), ("y_dw_s3", y_dw_s3),
                  ("y_dw_9x9", y_dw_9x9), ("y_direct_5x5", y_direct_5x5),
                  ("y_direct_s2", y_direct_s2), ("y_direct_7x1", y_direct_7x1),
                  ("y_direct_1x7", y_direct_1x7), ("y_1x1_7x7", y_1x1_7x7),
                  ("y_1x1_s2", y_1x1_s2), ("y_dw_silu", y_dw_silu), ("y_1x1_silu", y_1x1_silu),
                  ("y_wino_silu", y_wino_silu), ("y_1x1_hswish", y_1x1_hswish)],
                 [("w_rows", w_rows), ("b_rows", b_rows), ("w_groups", w_groups),
                  ("b_groups", b_groups), ("w_stride", w_stride), ("w_plain", w_plain),
                  ("b_plain", b_plain), ("w_wino", w_wino), ("b_wino", b_wino),
                  ("w_odd", w_odd), ("b_odd", b_odd), ("w_wino_odd", w_wino_odd),
                  ("w_dw_small", w_dw_small), ("b_dw_small", b_dw_small),
                  ("w_dw_large", w_dw_large), ("w_1x1", w_1x1), ("b_1x1", b_1x1),
                  ("w_dw_5x5", w_dw_5x5), ("b_dw_5x5", b_dw_5x5), ("w_dw_dilated", w_dw_dilated),
                  ("w_dw_rect", w_dw_rect), ("b_dw_rect", b_dw_rect), ("w_dw_s3", w_dw_s3),
                  ("w_dw_9x9", w_dw_9x9), ("w_direct_5x5", w_direct_5x5),
                  ("b_direct_5x5", b_direct_5x5), ("w_direct_s2", w_direct_s2),
                  ("b_direct_s2", b_direct_s2), ("w_direct_7x1", w_direct_7x1),
                  ("w_direct_1x7", w_direct_1x7), ("w_1x1_7x7", w_1x1_7x7),
                  ("b_1x1_7x7", b_1x1_7x7), ("w_1x1_s2", w_1x1_s2), ("w_dw_silu", w_dw_silu),
                  ("b_dw_silu", b_dw_silu), ("w_1x1_silu", w_1x1_silu), ("b_1x1_silu", b_1x1_silu),
                  ("w_wino_silu", w_wino_silu), ("b_wino_silu", b_wino_silu),
                  ("w_1x1_hswish", w_1x1_hswish), ("b_1x1_hswish", b_1x1_hswish)])
