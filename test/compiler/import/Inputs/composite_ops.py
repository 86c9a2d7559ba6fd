"""Writes small models of the ONNX ops Kiln imports as compositions of its
own ops (DepthToSpace, OneHot, LRN, windows, MaxPool's Indices, MaxUnpool,
MelWeightMatrix, ...) into the folder argv[1], with NumPy references."""
import os

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

from single_node import info, out, save


def y(*shape, elem=T.FLOAT):
    return [h.make_tensor_value_info("y", elem, list(shape))]


x = info("x", [1, 8, 2, 3])
save("depth_to_space_dcr", h.make_node("DepthToSpace", ["x"], ["y"], blocksize=2), [x], y(1, 2, 4, 6))
save("depth_to_space_crd", h.make_node("DepthToSpace", ["x"], ["y"], blocksize=2, mode="CRD"),
     [x], y(1, 2, 4, 6))
save("depth_to_space_channels", h.make_node("DepthToSpace", ["x"], ["y"], blocksize=3), [x], y(1, 1, 6, 9))
save("depth_to_space_mode", h.make_node("DepthToSpace", ["x"], ["y"], blocksize=2, mode="XYZ"),
     [x], y(1, 2, 4, 6))
save("space_to_depth", h.make_node("SpaceToDepth", ["x"], ["y"], blocksize=2),
     [info("x", [1, 2, 4, 6])], y(1, 8, 2, 3))
save("space_to_depth_size", h.make_node("SpaceToDepth", ["x"], ["y"], blocksize=4),
     [info("x", [1, 2, 4, 6])], y(1, 32, 1, 1))
save("eye_like", h.make_node("EyeLike", ["x"], ["y"], k=1, dtype=T.INT32),
     [info("x", [2, 3])], y(2, 3, elem=T.INT32))
save("hardmax", h.make_node("Hardmax", ["x"], ["y"], axis=1), [info("x", [2, 5, 3])], y(2, 5, 3))
save("hardmax_axis", h.make_node("Hardmax", ["x"], ["y"], axis=3), [info("x", [2, 5, 3])], y(2, 5, 3))
save("one_hot", h.make_node("OneHot", ["i", "depth", "values"], ["y"], axis=1),
     [info("i", [3], T.INT64)], y(3, 4),
     [nh.from_array(np.array(4, np.int64), "depth"),
      nh.from_array(np.array([0, 5], np.float32), "values")])
save("one_hot_depth_input", h.make_node("OneHot", ["i", "depth", "values"], ["y"]),
     [info("i", [3], T.INT64), info("depth", [], T.INT64)], y(3, 4),
     [nh.from_array(np.array([0, 5], np.float32), "values")])
save("one_hot_values", h.make_node("OneHot", ["i", "depth", "values"], ["y"]),
     [info("i", [3], T.INT64)], y(3, 4),
     [nh.from_array(np.array(4, np.int64), "depth"),
      nh.from_array(np.array([0, 5, 6], np.float32), "values")])
save("shrink", h.make_node("Shrink", ["x"], ["y"], lambd=1.5, bias=0.5), [info("x", [5])], y(5))
save("instance_norm", h.make_node("InstanceNormalization", ["x", "s", "b"], ["y"]),
     [info("x", [2, 3, 4, 4]), info("s", [3]), info("b", [3])], y(2, 3, 4, 4))
save("instance_norm_scale", h.make_node("InstanceNormalization", ["x", "s", "b"], ["y"]),
     [info("x", [2, 3, 4, 4]), info("s", [4]), info("b", [3])], y(2, 3, 4, 4))
save("mvn", h.make_node("MeanVarianceNormalization", ["x"], ["y"]), [info("x", [2, 3, 4, 4])], y(2, 3, 4, 4))
save("lrn", h.make_node("LRN", ["x"], ["y"], size=3), [info("x", [1, 4, 2, 2])], y(1, 4, 2, 2))
save("lrn_size", h.make_node("LRN", ["x"], ["y"], size=0), [info("x", [1, 4, 2, 2])], y(1, 4, 2, 2))
save("hann_window", h.make_node("HannWindow", ["n"], ["y"], periodic=0), [], y(5),
     [nh.from_array(np.array(5, np.int32), "n")])
# A Range whose limit is computed from a graph input: the error names the
# input to freeze.
graph = h.make_graph(
    [h.make_node("Add", ["n", "one"], ["limit"]),
     h.make_node("Range", ["zero", "limit", "one"], ["y"])],
    "range_from_input", [info("n", [], T.INT64)], y(3, elem=T.INT64),
    [nh.from_array(np.array(0, np.int64), "zero"), nh.from_array(np.array(1, np.int64), "one")])
onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 17)], ir_version=8),
          os.path.join(out, "range_from_input.onnx"))

np.save(os.path.join(out, "shrink_x.npy"), np.array([-3, -1, 0, 1, 3], np.float32))
np.save(os.path.join(out, "one_hot_i.npy"), np.array([1, -1, 7], np.int64))
save("hann_window_huge", h.make_node("HannWindow", ["n"], ["y"]), [], y(1 << 25),
     [nh.from_array(np.array(1 << 25, np.int64), "n")])
save("det3", h.make_node("Det", ["x"], ["y"]), [info("x", [2, 3, 3])], y(2))
save("det4", h.make_node("Det", ["x"], ["y"]), [info("x", [4, 4])], y())
# det [[2, 0, 1], [1, 3, 2], [1, 1, 1]] = 2 (3 - 2) - 0 + 1 (1 - 3) = 0, and
# det [[1, 2, 3], [0, 1, 4], [5, 6, 0]] = 1.
np.save(os.path.join(out, "det3_x.npy"),
        np.array([[[2, 0, 1], [1, 3, 2], [1, 1, 1]], [[1, 2, 3], [0, 1, 4], [5, 6, 0]]],
                 np.float32))


def max_pool_indices(x, kernel, strides, pads, dilations, ceil, column_major):
    """MaxPool's Indices by the definition: each window's first maximum (in
    row-major tap order), as a position in the flattened input."""
    n, c, height, width = x.shape

    def size(i, extent):
        span = extent + pads[i] + pads[2 + i] - (kernel[i] - 1) * dilations[i] - 1
        count = -(-span // strides[i]) if ceil else span // strides[i]
        if ceil and count * strides[i] >= extent + pads[i]:
            count -= 1
        return count + 1

    oh, ow = size(0, height), size(1, width)
    values, indices = np.zeros((n, c, oh, ow), x.dtype), np.zeros((n, c, oh, ow), np.int64)
    for b, ch, i, j in np.ndindex(n, c, oh, ow):
        best = None
        for ki, kj in np.ndindex(*kernel):
            r = i * strides[0] + ki * dilations[0] - pads[0]
            s = j * strides[1] + kj * dilations[1] - pads[1]
            if 0 <= r < height and 0 <= s < width and (best is None or x[b, ch, r, s] > best[0]):
                within = s * height + r if column_major else r * width + s
                best = (x[b, ch, r, s], (b * c + ch) * height * width + within)
        values[b, ch, i, j], indices[b, ch, i, j] = best
    return values, indices


# MaxPool's Indices: pads, strides, dilations, ceil mode, both storage
# orders; small integers, so windows hold ties.
rng = np.random.default_rng(5)
pool_x = rng.integers(-3, 4, (2, 3, 7, 8)).astype(np.float32)
np.save(os.path.join(out, "pool_x.npy"), pool_x)
for name, attrs in (("max_pool_indices", dict(kernel_shape=[3, 2], strides=[2, 2],
                                               pads=[1, 0, 1, 1], dilations=[1, 2])),
                    ("max_pool_indices_columns", dict(kernel_shape=[2, 3], strides=[2, 3],
                                                      ceil_mode=1, storage_order=1))):
    ref_y, ref_i = max_pool_indices(pool_x, attrs["kernel_shape"], attrs["strides"],
                                    attrs.get("pads", [0] * 4), attrs.get("dilations", [1, 1]),
                                    attrs.get("ceil_mode", 0), attrs.get("storage_order", 0))
    save(name, h.make_node("MaxPool", ["x"], ["y", "i"], **attrs), [info("x", list(pool_x.shape))],
         [info("y", list(ref_y.shape)), info("i", list(ref_i.shape), T.INT64)])
    np.save(os.path.join(out, name + "_y.npy"), ref_y)
    np.save(os.path.join(out, name + "_i.npy"), ref_i)
save("max_pool_indices_3d", h.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2, 2]),
     [info("x", [1, 1, 3, 3, 3])],
     [info("y", [1, 1, 2, 2, 2]), info("i", [1, 1, 2, 2, 2], T.INT64)])

# MaxUnpool of MaxPool's values and indices: each value back at its place,
# zeros elsewhere; with an output_shape larger than the unpooled one, held
# at its start.
unpool_attrs = dict(kernel_shape=[2, 2], strides=[2, 2])
unpool_x = pool_x[:, :, :6, :]
np.save(os.path.join(out, "unpool_x.npy"), unpool_x)
pooled, where = max_pool_indices(unpool_x, [2, 2], [2, 2], [0] * 4, [1, 1], 0, 0)
unpooled = np.zeros(unpool_x.size, np.float32)
unpooled[where.reshape(-1)] = pooled.reshape(-1)
wide = np.zeros(unpool_x.shape[:2] + (7, 9), np.float32)
wide[:, :, :6, :8] = unpooled.reshape(unpool_x.shape)
np.save(os.path.join(out, "max_unpool_ref.npy"), wide)
graph = h.make_graph(
    [h.make_node("MaxPool", ["x"], ["p", "i"], **unpool_attrs),
     h.make_node("MaxUnpool", ["p", "i", "shape"], ["y"], **unpool_attrs)],
    "max_unpool", [info("x", list(unpool_x.shape))], [info("y", list(wide.shape))],
    [nh.from_array(np.array(wide.shape, np.int64), "shape")])
onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 11)], ir_version=8),
          os.path.join(out, "max_unpool.onnx"))
save("max_unpool_small", h.make_node("MaxUnpool", ["p", "i", "shape"], ["y"], **unpool_attrs),
     [info("p", [1, 1, 2, 2]), info("i", [1, 1, 2, 2], T.INT64)], [info("y", [1, 1, 3, 3])],
     [nh.from_array(np.array([1, 1, 3, 3], np.int64), "shape")])


def mel_weight_matrix(bands, length, rate, lower, upper):
    """The triangular mel filters, as ONNX defines them."""
    edges = np.arange(bands + 2) * (2595 * np.log10(1 + upper / 700) -
                                   2595 * np.log10(1 + lower / 700)) / (bands + 2)
    edges = 700 * (10 ** ((edges + 2595 * np.log10(1 + lower / 700)) / 2595) - 1)
    edges = ((length + 1) * edges // rate).astype(int)
    w = np.zeros((length // 2 + 1, bands))
    for b in range(bands):
        left, center, right = edges[b:b + 3]
        w[center, b] = 1
        for j in range(left, center):
            w[j, b] = (j - left) / (center - left)
        for j in range(center + 1, right):
            w[j, b] = (right - j) / (right - center)
    return w


scalars = [nh.from_array(np.array(v, t), name) for name, v, t in
           (("bands", 10, np.int64), ("length", 128, np.int64), ("rate", 16000, np.int64),
            ("lower", 50.0, np.float32), ("upper", 7000.0, np.float32))]
mel_inputs = ["bands", "length", "rate", "lower", "upper"]
save("mel_weight_matrix", h.make_node("MelWeightMatrix", mel_inputs, ["y"]), [],
     [info("y", [65, 10])], scalars)
np.save(os.path.join(out, "mel_weight_matrix_ref.npy"),
        mel_weight_matrix(10, 128, 16000, 50.0, 7000.0).astype(np.float32))
scalars[4] = nh.from_array(np.array(20000.0, np.float32), "upper")
save("mel_weight_matrix_edges", h.make_node("MelWeightMatrix", mel_inputs, ["y"]), [],
     [info("y", [65, 10])], scalars)
save("max_unpool_rank2", h.make_node("MaxUnpool", ["p", "i"], ["y"], kernel_shape=[2]),
     [info("p", [2, 2]), info("i", [2, 2], T.INT64)], [info("y", [2, 2])])
save("max_unpool_overflow", h.make_node("MaxUnpool", ["p", "i"], ["y"], kernel_shape=[2, 2],
                                        strides=[2**62, 2]),
     [info("p", [1, 1, 3, 3]), info("i", [1, 1, 3, 3], T.INT64)], [info("y", [1, 1, 6, 6])])
