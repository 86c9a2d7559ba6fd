"""Writes small models of the ONNX ops Kiln imports as compositions of its
own ops (DepthToSpace, OneHot, LRN, windows, ...) into the folder argv[1]."""
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
