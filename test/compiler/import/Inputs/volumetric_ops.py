"""Writes 3-D Conv, MaxPool, AveragePool and ConvTranspose models into the
folder argv[1], with inputs and references computed here by the
definitions, in NumPy (float64, window by window)."""
import itertools
import os

import numpy as np
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

from single_node import info, out, save

rng = np.random.default_rng(3)


def npy(name, array):
    np.save(os.path.join(out, name + ".npy"), array)


def out_size(size, k, s, d, p0, p1, ceil=False):
    span = size + p0 + p1 - (k - 1) * d - 1
    n = -(-span // s) if ceil else span // s
    if ceil and n * s >= size + p0:  # a window must start inside the input or left padding
        n -= 1
    return n + 1


def conv3d(x, w, b, strides, pads, dilations, group):
    n, c = x.shape[:2]
    cout, cg = w.shape[:2]
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pads[i], pads[3 + i]) for i in range(3)])
    outs = [out_size(x.shape[2 + i], w.shape[2 + i], strides[i], dilations[i], pads[i], pads[3 + i])
            for i in range(3)]
    y = np.zeros((n, cout) + tuple(outs))
    per = cout // group
    for o in itertools.product(*[range(v) for v in outs]):
        for g in range(group):
            ws = w[g * per:(g + 1) * per]
            for k in itertools.product(*[range(v) for v in w.shape[2:]]):
                at = tuple(o[i] * strides[i] + k[i] * dilations[i] for i in range(3))
                patch = xp[:, g * cg:(g + 1) * cg, at[0], at[1], at[2]]
                y[(slice(None), slice(g * per, (g + 1) * per)) + o] += patch @ ws[(slice(None), slice(None)) + k].T
    if b is not None:
        y += b.reshape(1, -1, 1, 1, 1)
    return y


def pool3d(x, kernel, strides, pads, dilations, ceil, mode, count_pads):
    outs = [out_size(x.shape[2 + i], kernel[i], strides[i], dilations[i], pads[i], pads[3 + i], ceil)
            for i in range(3)]
    y = np.zeros(x.shape[:2] + tuple(outs))
    for o in itertools.product(*[range(v) for v in outs]):
        vals, padded = [], 0
        for k in itertools.product(*[range(v) for v in kernel]):
            at = [o[i] * strides[i] + k[i] * dilations[i] - pads[i] for i in range(3)]
            inside = all(0 <= at[i] < x.shape[2 + i] for i in range(3))
            in_pads = all(-pads[i] <= at[i] < x.shape[2 + i] + pads[3 + i] for i in range(3))
            if inside:
                vals.append(x[:, :, at[0], at[1], at[2]])
            elif in_pads:
                padded += 1
        stack = np.stack(vals)
        if mode == "max":
            y[(slice(None), slice(None)) + o] = stack.max(0)
        else:
            y[(slice(None), slice(None)) + o] = stack.sum(0) / (len(vals) + (padded if count_pads else 0))
    return y


x = rng.standard_normal((2, 4, 5, 6, 7)).astype(np.float32)
npy("x", x)
w = rng.standard_normal((6, 2, 3, 2, 3)).astype(np.float32)
b = rng.standard_normal(6).astype(np.float32)
attrs = dict(strides=[2, 1, 2], pads=[1, 0, 1, 1, 1, 0], dilations=[1, 2, 1], group=2)
ref = conv3d(x.astype(np.float64), w.astype(np.float64), b.astype(np.float64), **attrs)
save("conv3d", h.make_node("Conv", ["x", "w", "b"], ["y"], **attrs), [info("x", list(x.shape))],
     [info("y", list(ref.shape))], [nh.from_array(w, "w"), nh.from_array(b, "b")])
npy("conv3d_ref", ref.astype(np.float32))

for name, op, mode, extra in (
        ("maxpool3d", "MaxPool", "max", dict(ceil_mode=1)),
        ("avgpool3d", "AveragePool", "avg", dict(count_include_pad=0)),
        ("avgpool3d_pads", "AveragePool", "avg", dict(count_include_pad=1, ceil_mode=1))):
    window = dict(kernel_shape=[2, 3, 2], strides=[2, 2, 1], pads=[1, 1, 0, 0, 1, 1])
    if op == "MaxPool":
        window["dilations"] = [1, 1, 2]
    ref = pool3d(x.astype(np.float64), window["kernel_shape"], window["strides"], window["pads"],
                 window.get("dilations", [1, 1, 1]), extra.get("ceil_mode", 0), mode,
                 extra.get("count_include_pad", 0))
    save(name, h.make_node(op, ["x"], ["y"], **window, **extra), [info("x", list(x.shape))],
         [info("y", list(ref.shape))])
    npy(name + "_ref", ref.astype(np.float32))

# Errors name the node.
save("conv3d_too_deep", h.make_node("Conv", ["x", "w"], ["y"]), [info("x", list(x.shape))],
     [info("y", [2, 6, 1, 5, 5])], [nh.from_array(np.zeros((6, 4, 7, 2, 3), np.float32), "w")])
save("pool3d_kernel", h.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2]),
     [info("x", list(x.shape))], [info("y", [2, 4, 4, 5, 7])])

# 1-D convolution (a row of the 2-D one), checked against NumPy.
x1 = rng.standard_normal((2, 4, 11)).astype(np.float32)
w1 = rng.standard_normal((6, 2, 3)).astype(np.float32)
npy("x1", x1)
attrs1 = dict(strides=[2], pads=[2, 1], dilations=[2], group=2)
ref1 = conv3d(x1.astype(np.float64)[:, :, None, None, :], w1.astype(np.float64)[:, :, None, None, :],
              None, strides=[1, 1, 2], pads=[0, 0, 2, 0, 0, 1], dilations=[1, 1, 2], group=2)
ref1 = ref1[:, :, 0, 0, :]
save("conv1d", h.make_node("Conv", ["x", "w"], ["y"], **attrs1), [info("x", list(x1.shape))],
     [info("y", list(ref1.shape))], [nh.from_array(w1, "w")])
npy("conv1d_ref", ref1.astype(np.float32))


def conv_transpose3d(x, w, strides, pads, dilations, output_padding, group):
    """The definition: every input element spreads its filter, scaled, into
    the output at stride * position + dilation * tap - pad."""
    n, c = x.shape[:2]
    per_in, per_out = c // group, w.shape[1]
    outs = [strides[i] * (x.shape[2 + i] - 1) + output_padding[i]
            + (w.shape[2 + i] - 1) * dilations[i] + 1 - pads[i] - pads[3 + i] for i in range(3)]
    y = np.zeros((n, per_out * group) + tuple(outs))
    for i in itertools.product(*[range(v) for v in x.shape[2:]]):
        for k in itertools.product(*[range(v) for v in w.shape[2:]]):
            at = [i[d] * strides[d] + k[d] * dilations[d] - pads[d] for d in range(3)]
            if not all(0 <= at[d] < outs[d] for d in range(3)):
                continue
            for g in range(group):
                patch = x[(slice(None), slice(g * per_in, (g + 1) * per_in)) + i]
                taps = w[(slice(g * per_in, (g + 1) * per_in), slice(None)) + k]
                y[:, g * per_out:(g + 1) * per_out, at[0], at[1], at[2]] += patch @ taps
    return y


# 3-D transposed convolution: strides, pads, dilations and output_padding
# all different per dimension, two groups.
xt = rng.standard_normal((2, 4, 3, 4, 3)).astype(np.float32)
wt = rng.standard_normal((4, 3, 2, 3, 2)).astype(np.float32)
npy("xt", xt)
attrs_t = dict(strides=[2, 1, 3], pads=[1, 0, 1, 0, 1, 0], dilations=[1, 2, 1],
               output_padding=[1, 0, 2], group=2)
ref_t = conv_transpose3d(xt.astype(np.float64), wt.astype(np.float64), **attrs_t)
save("conv_transpose3d", h.make_node("ConvTranspose", ["x", "w"], ["y"], **attrs_t),
     [info("x", list(xt.shape))], [info("y", list(ref_t.shape))], [nh.from_array(wt, "w")])
npy("conv_transpose3d_ref", ref_t.astype(np.float32))
