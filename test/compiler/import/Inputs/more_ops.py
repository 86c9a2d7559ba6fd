"""Writes models of ONNX's training-domain optimizers, Compress,
ReverseSequence, 1-D pooling and ConvTranspose, good and bad, into the
folder argv[1]."""
import os

import numpy as np
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

from single_node import info, out, save

training = dict(opset=None, domains=[("ai.onnx.preview.training", 1)])
scalars = [info("R", []), info("T", [], T.INT64)]
save("momentum", h.make_node("Momentum", ["R", "T", "X", "G", "V"], ["X_new", "V_new"],
                             domain="ai.onnx.preview.training", alpha=0.9, beta=1.0,
                             mode="nesterov", norm_coefficient=0.0),
     scalars + [info("X", [3]), info("G", [3]), info("V", [3])],
     [info("X_new", [3]), info("V_new", [3])], **training)
save("momentum_mode", h.make_node("Momentum", ["R", "T", "X", "G", "V"], ["X_new", "V_new"],
                                  domain="ai.onnx.preview.training", alpha=0.9, beta=1.0,
                                  mode="heavy", norm_coefficient=0.0),
     scalars + [info("X", [3]), info("G", [3]), info("V", [3])],
     [info("X_new", [3]), info("V_new", [3])], **training)
save("adam_groups", h.make_node("Adam", ["R", "T", "X", "G", "V"], ["X_new"],
                                domain="ai.onnx.preview.training"),
     scalars + [info("X", [3]), info("G", [3]), info("V", [3])], [info("X_new", [3])],
     **training)
save("adagrad_absent", h.make_node("Adagrad", ["R", "T", "X", "", "H"], ["X_new", "H_new"],
                                   domain="ai.onnx.preview.training"),
     scalars + [info("X", [3]), info("H", [3])], [info("X_new", [3]), info("H_new", [3])],
     **training)
save("compress", h.make_node("Compress", ["x", "c"], ["y"], axis=1), [info("x", [2, 4])],
     [info("y", [2, 2])], [nh.from_array(np.array([True, False, False, True]), "c")])
save("compress_input", h.make_node("Compress", ["x", "c"], ["y"]),
     [info("x", [2, 4]), info("c", [8], T.BOOL)], [info("y", [2])])
save("reverse_sequence", h.make_node("ReverseSequence", ["x", "lens"], ["y"], batch_axis=0,
                                     time_axis=1),
     [info("x", [2, 4]), info("lens", [2], T.INT64)], [info("y", [2, 4])])
save("max_pool_1d", h.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3], strides=[2],
                                pads=[1, 1]),
     [info("x", [1, 2, 9])], [info("y", [1, 2, 5])])
# ConvTranspose with strides 2 and a group of 2: the input spread, padded
# and convolved with the flipped, channel-swapped filter.
save("conv_transpose", h.make_node("ConvTranspose", ["x", "w"], ["y"], strides=[2, 2], group=2,
                                   pads=[1, 1, 1, 1]),
     [info("x", [1, 4, 3, 3]), info("w", [4, 3, 3, 3])], [info("y", [1, 6, 5, 5])])
save("conv_transpose_4d", h.make_node("ConvTranspose", ["x", "w"], ["y"]),
     [info("x", [1, 1, 2, 2, 2, 2])], [info("y", [1, 1, 3, 3, 3, 3])],
     [nh.from_array(np.ones((1, 1, 2, 2, 2, 2), np.float32), "w")])
save("conv_transpose_group", h.make_node("ConvTranspose", ["x", "w"], ["y"], group=3),
     [info("x", [1, 4, 3, 3])], [info("y", [1, 3, 5, 5])],
     [nh.from_array(np.ones((4, 1, 3, 3), np.float32), "w")])

# A Loop whose condition depends on an input cannot be unrolled; an empty
# graph input asks to be frozen.
body = h.make_graph(
    [h.make_node("Less", ["y_in", "limit"], ["cond_out"]),
     h.make_node("Add", ["y_in", "one"], ["y_out"])],
    "count", [info("i", [], T.INT64), info("cond_in", [], T.BOOL), info("y_in", [])],
    [info("cond_out", [], T.BOOL), info("y_out", [])])
save("loop_run_time", h.make_node("Loop", ["m", "", "y0"], ["y"], body=body),
     [info("y0", []), info("limit", [])], [info("y", [])],
     [nh.from_array(np.array(10, np.int64), "m"), nh.from_array(np.array(1, np.float32), "one")],
     opset=16)

# ScatterElements with run-time indices: an index out of range fails the
# run naming the node (and is ignored with --no-index-checks).
save("scatter_runtime", h.make_node("ScatterElements", ["d", "i", "u"], ["y"], axis=0,
                                    name="put"),
     [info("d", [4]), info("i", [2], T.INT64), info("u", [2])], [info("y", [4])], opset=13)
np.save(os.path.join(out, "scatter_d.npy"), np.zeros(4, np.float32))
np.save(os.path.join(out, "scatter_u.npy"), np.array([5, 6], np.float32))
np.save(os.path.join(out, "scatter_good.npy"), np.array([3, -4], np.int64))
np.save(os.path.join(out, "scatter_bad.npy"), np.array([1, 9], np.int64))

# TopK: ties keep their order, NaN is above every number.
topk_x = np.array([[3, 1, 3, np.nan, -2, 7]], np.float32)
np.save(os.path.join(out, "topk_x.npy"), topk_x)
for name, largest in (("topk_largest", 1), ("topk_smallest", 0)):
    save(name, h.make_node("TopK", ["x", "k"], ["v", "i"], axis=1, largest=largest),
         [info("x", [1, 6])], [info("v", [1, 4]), info("i", [1, 4], T.INT64)],
         [nh.from_array(np.array([4], np.int64), "k")])
save("topk_too_many", h.make_node("TopK", ["x", "k"], ["v", "i"]),
     [info("x", [1, 6])], [info("v", [1, 7]), info("i", [1, 7], T.INT64)],
     [nh.from_array(np.array([7], np.int64), "k")])
save("topk_input_k", h.make_node("TopK", ["x", "k"], ["v", "i"]),
     [info("x", [1, 6]), info("k", [1], T.INT64)], [info("v", [1, 2]), info("i", [1, 2], T.INT64)])

# GatherND and ScatterND by run-time indices: each coordinate is checked
# against its own dimension of data [3, 5].
save("gather_nd_runtime", h.make_node("GatherND", ["d", "i"], ["y"], name="pick"),
     [info("d", [3, 5]), info("i", [2, 2], T.INT64)], [info("y", [2])], opset=13)
save("scatter_nd_runtime", h.make_node("ScatterND", ["d", "i", "u"], ["y"], name="place"),
     [info("d", [3, 5]), info("i", [2, 2], T.INT64), info("u", [2])], [info("y", [3, 5])], opset=13)
np.save(os.path.join(out, "nd_d.npy"), np.arange(15, dtype=np.float32).reshape(3, 5))
np.save(os.path.join(out, "nd_u.npy"), np.array([-1, -2], np.float32))
np.save(os.path.join(out, "nd_good.npy"), np.array([[2, 4], [-1, -5]], np.int64))
# 4 is in range for the second coordinate (5) but not for the first (3).
np.save(os.path.join(out, "nd_bad.npy"), np.array([[0, 1], [4, 2]], np.int64))
scatter_good = np.arange(15, dtype=np.float32).reshape(3, 5)
scatter_good[2, 4], scatter_good[2, 0] = -1, -2
np.save(os.path.join(out, "nd_scatter_good_ref.npy"), scatter_good)
scatter_unchecked = np.arange(15, dtype=np.float32).reshape(3, 5)
scatter_unchecked[0, 1] = -1  # the row [4, 2] writes nothing
np.save(os.path.join(out, "nd_scatter_unchecked_ref.npy"), scatter_unchecked)
