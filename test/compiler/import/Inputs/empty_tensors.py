"""Writes models with tensors that have no elements into the folder
argv[1]: empty graph inputs and outputs, and empty values in between
(computed from a non-empty input), with inputs for kiln-run."""
import os

import numpy as np
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

from single_node import info, out

import onnx


def save(name, nodes, inputs, outputs, inits=()):
    graph = h.make_graph(nodes, name, inputs, outputs, list(inits))
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)], ir_version=8)
    onnx.save(model, os.path.join(out, name + ".onnx"))


def ints(name, values):
    return nh.from_array(np.array(values, np.int64), name)


np.save(os.path.join(out, "x.npy"), np.arange(1, 7, dtype=np.float32).reshape(2, 3))
np.save(os.path.join(out, "e.npy"), np.zeros((2, 0), np.float32))

# An empty input concatenated with a real one: the concatenation is the
# real one.
save("concat_empty_input",
     [h.make_node("Concat", ["e", "x"], ["c"], axis=1), h.make_node("Neg", ["c"], ["y"])],
     [info("e", [2, 0]), info("x", [2, 3])], [info("y", [2, 3])])

# Columns 3 to 3 of x: reductions over no element give their identities,
# a product over an empty dimension zeros, and an empty output stays one.
save("empty_between",
     [h.make_node("Slice", ["x", "s", "s", "one"], ["z"]),
      h.make_node("ReduceMax", ["z"], ["max"], axes=[1], keepdims=0),
      h.make_node("ReduceMin", ["z"], ["min"], axes=[1], keepdims=0),
      h.make_node("ReduceSum", ["z", "one"], ["sum"], keepdims=0),
      h.make_node("ReduceProd", ["z"], ["prod"], axes=[1], keepdims=0),
      h.make_node("Transpose", ["z"], ["zt"]),
      h.make_node("MatMul", ["z", "zt"], ["product"]),
      h.make_node("Sigmoid", ["z"], ["empty"])],
     [info("x", [2, 3])],
     [info("max", [2]), info("min", [2]), info("sum", [2]), info("prod", [2]),
      info("product", [2, 2]), info("empty", [2, 0])],
     [ints("s", [3]), ints("one", [1])])

# Compress keeping nothing, TopK of K = 0, and a pad that crops a dimension
# to nothing.
save("empty_results",
     [h.make_node("Compress", ["x", "none"], ["kept"], axis=1),
      h.make_node("TopK", ["x", "zero"], ["values", "indices"]),
      h.make_node("Pad", ["x", "crop"], ["cropped"]),
      h.make_node("Exp", ["x"], ["exp"])],
     [info("x", [2, 3])],
     [info("kept", [2, 0]), info("values", [2, 0]), info("indices", [2, 0], T.INT64),
      info("cropped", [0, 3]), info("exp", [2, 3])],
     [nh.from_array(np.array([False, False, False]), "none"), ints("zero", [0]),
      ints("crop", [0, 0, -2, 0])])

# ReduceSum with an empty `axes` input: all axes (noop_with_empty_axes = 0).
save("empty_axes", [h.make_node("ReduceSum", ["x", "axes"], ["y"])],
     [info("x", [2, 3]), info("axes", [0], T.INT64)], [info("y", [1, 1])])
np.save(os.path.join(out, "axes.npy"), np.zeros(0, np.int64))
