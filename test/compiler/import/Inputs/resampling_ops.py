"""Writes small models of Pad, Resize, Upsample, CumSum and GatherND, good
and bad, and their inputs, into the folder argv[1]."""
import os

import numpy as np
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

from single_node import info, out, save


def ints(name, values):
    return nh.from_array(np.array(values, np.int64), name)


def floats(name, values):
    return nh.from_array(np.array(values, np.float32), name)


x4 = info("x", [4])
save("pad_reflect", h.make_node("Pad", ["x", "pads"], ["y"], mode="reflect"), [x4],
     [info("y", [7])], [ints("pads", [2, 1])])
save("pad_value", h.make_node("Pad", ["x", "pads", "value"], ["y"]),
     [info("x", [2, 3])], [info("y", [2, 6])],
     [ints("pads", [0, 1, 0, 2]), floats("value", 7)])
save("pad_count", h.make_node("Pad", ["x", "pads"], ["y"]), [x4], [info("y", [7])],
     [ints("pads", [2, 1, 0])])
save("pad_reflect_far", h.make_node("Pad", ["x", "pads"], ["y"], mode="reflect"), [x4],
     [info("y", [9])], [ints("pads", [4, 1])])
save("pad_input", h.make_node("Pad", ["x", "pads"], ["y"]), [x4, info("pads", [2], T.INT64)],
     [info("y", [7])])
save("pad_opset2", h.make_node("Pad", ["x"], ["y"], mode="edge", pads=[1, 2]), [x4],
     [info("y", [7])], opset=2)

img = info("x", [1, 1, 1, 2])
save("resize_linear", h.make_node("Resize", ["x", "", "", "sizes"], ["y"], mode="linear",
                                  coordinate_transformation_mode="align_corners"),
     [img], [info("y", [1, 1, 1, 4])], [ints("sizes", [1, 1, 1, 4])])
save("resize_nearest", h.make_node("Resize", ["x", "", "scales"], ["y"],
                                   coordinate_transformation_mode="asymmetric"),
     [img], [info("y", [1, 1, 1, 6])], [floats("scales", [1, 1, 1, 3.0])])
save("resize_both", h.make_node("Resize", ["x", "", "scales", "sizes"], ["y"]), [img],
     [info("y", [1, 1, 1, 4])], [floats("scales", [1, 1, 1, 2]), ints("sizes", [1, 1, 1, 4])])
save("resize_scale_zero", h.make_node("Resize", ["x", "", "scales"], ["y"]), [img],
     [info("y", [1, 1, 1, 1])], [floats("scales", [1, 1, 1, 0.25])])
save("resize_sizes_input", h.make_node("Resize", ["x", "", "", "sizes"], ["y"]),
     [img, info("sizes", [4], T.INT64)], [info("y", [1, 1, 1, 4])])
save("upsample", h.make_node("Upsample", ["x", "scales"], ["y"]), [img],
     [info("y", [1, 1, 2, 6])], [floats("scales", [1, 1, 2, 3])], opset=9)

save("cumsum", h.make_node("CumSum", ["x", "axis"], ["y"], exclusive=1, reverse=1), [x4],
     [info("y", [4])], [nh.from_array(np.array(0, np.int32), "axis")])
save("cumsum_axis", h.make_node("CumSum", ["x", "axis"], ["y"]), [x4], [info("y", [4])],
     [nh.from_array(np.array(1, np.int32), "axis")])

save("gather_nd", h.make_node("GatherND", ["x", "i"], ["y"], batch_dims=1),
     [info("x", [2, 3])], [info("y", [2])], [ints("i", [[2], [-1]])])
save("gather_nd_bad", h.make_node("GatherND", ["x", "i"], ["y"]),
     [info("x", [2, 3])], [info("y", [2])], [ints("i", [[1, 2], [0, 3]])])

np.save(os.path.join(out, "x4.npy"), np.array([1, 2, 3, 4], np.float32))
np.save(os.path.join(out, "x12.npy"), np.array([[[[0, 3]]]], np.float32))
np.save(os.path.join(out, "x23.npy"), np.array([[1, 2, 3], [4, 5, 6]], np.float32))
