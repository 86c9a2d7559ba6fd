"""Writes ONNX models that are wrong in one way each (bad attributes, bad
shapes, aliasing outputs, extreme Slice bounds) into the folder argv[1]."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
I64_MAX, I64_MIN = np.iinfo(np.int64).max, np.iinfo(np.int64).min


def info(name, shape, elem=T.FLOAT):
    v = h.make_tensor_value_info(name, elem, None)
    dims = v.type.tensor_type.shape.dim
    for d in shape:
        dims.add().dim_value = d if isinstance(d, int) else 0
        if isinstance(d, str):
            dims[-1].ClearField("dim_value")
            dims[-1].dim_param = d
    return v


def ints(name, values):
    return nh.from_array(np.array(values, np.int64), name)


def save(name, nodes, inputs, outputs, inits=()):
    graph = h.make_graph(nodes, name, inputs, outputs, list(inits))
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 13)], ir_version=7)
    onnx.save(model, os.path.join(out, name + ".onnx"))


x23 = info("x", [2, 3])
img = info("x", [1, 3, 8, 8])
any4 = [info("y", ["n", "c", "h", "w"])]
any2 = [info("y", ["a", "b"])]
w = nh.from_array(np.ones((4, 3, 3, 3), np.float32), "w")

# Outputs that alias: one value listed under two names, and an op that
# simplifies to its operand next to that operand.
save("identity_output", [h.make_node("Relu", ["x"], ["y"]), h.make_node("Identity", ["y"], ["z"])],
     [x23], [info("y", [2, 3]), info("z", [2, 3])])
save("folded_output", [h.make_node("Relu", ["x"], ["t"]), h.make_node("Mul", ["t", "one"], ["y"])],
     [x23], [info("t", [2, 3]), info("y", [2, 3])],
     [nh.from_array(np.array(1.0, np.float32), "one")])
save("output_twice", [h.make_node("Relu", ["x"], ["y"])], [x23], [info("y", [2, 3]), info("y", [2, 3])])

# Attributes that no shape satisfies.
conv = lambda name, **attrs: save(name, [h.make_node("Conv", ["x", "w"], ["y"], **attrs)], [img], any4, [w])
conv("conv_stride0", strides=[0, 1])
conv("conv_dilation0", dilations=[1, 0])
conv("conv_negative_pad", pads=[-1, 0, 0, 0])
conv("conv_same_stride0", strides=[0, 1], auto_pad="SAME_UPPER")
conv("conv_group", group=2)
save("conv_channels", [h.make_node("Conv", ["x", "w"], ["y"])], [img], any4,
     [nh.from_array(np.ones((4, 2, 3, 3), np.float32), "w")])
save("pool_stride0", [h.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[0, 1])], [img], any4)
save("pool_kernel0", [h.make_node("AveragePool", ["x"], ["y"], kernel_shape=[0, 2])], [img], any4)
save("transpose_perm", [h.make_node("Transpose", ["x"], ["y"], perm=[0, 0])], [x23], any2)
save("concat_axis", [h.make_node("Concat", ["x", "x"], ["y"], axis=-9)], [x23], any2)
save("flatten_axis", [h.make_node("Flatten", ["x"], ["y"], axis=9)], [x23], any2)
save("gather_axis", [h.make_node("Gather", ["x", "i"], ["y"], axis=3)], [x23], any2, [ints("i", [0])])
save("matmul_shapes", [h.make_node("MatMul", ["x", "x"], ["y"])], [x23], any2)
save("add_broadcast", [h.make_node("Add", ["x", "b"], ["y"])], [x23], any2,
     [nh.from_array(np.ones(4, np.float32), "b")])
save("tile_negative", [h.make_node("Tile", ["x", "r"], ["y"])], [x23], any2, [ints("r", [-1, 2])])
save("tile_overflow", [h.make_node("Tile", ["x", "r"], ["y"])], [x23], any2, [ints("r", [2**62, 2])])
split = lambda name, sizes, outputs=2: save(
    name, [h.make_node("Split", ["x", "s"], [f"y{i}" for i in range(outputs)], axis=1)], [x23],
    [info(f"y{i}", ["a", "b"]) for i in range(outputs)], [ints("s", sizes)])
split("split_negative", [-1, 4])
split("split_overflow", [2**62 + 3, 2**62, 2**62, 2**62], outputs=4)
# A recurrent layer over a sequence of no steps.
save("gru_no_steps", [h.make_node("GRU", ["x", "w", "r"], ["y"], hidden_size=2)],
     [info("x", [0, 1, 3])], [info("y", [0, 1, 1, 2])],
     [nh.from_array(np.ones((1, 6, 3), np.float32), "w"),
      nh.from_array(np.ones((1, 6, 2), np.float32), "r")])
save("huge_input", [h.make_node("Relu", ["x"], ["y"])], [info("x", [2**40, 2**40])], any2)
save("huge_expand", [h.make_node("Expand", ["x", "s"], ["y"])], [x23], any2, [ints("s", [2**50, 2, 3])])

# Slices whose bounds and steps are the int64 extremes exporters write for
# "to the end": one element each.
x10 = info("x", [10])
slice_inputs = lambda s, e, st: [ints("s", [s]), ints("e", [e]), ints("a", [0]), ints("st", [st])]
save("slice_int64_max", [h.make_node("Slice", ["x", "s", "e", "a", "st"], ["y"])], [x10], [info("y", [1])],
     slice_inputs(0, I64_MAX, I64_MAX))
save("slice_int64_min", [h.make_node("Slice", ["x", "s", "e", "a", "st"], ["y"])], [x10], [info("y", [1])],
     slice_inputs(-1, I64_MIN, I64_MIN))
np.save(os.path.join(out, "x23.npy"), np.arange(6, dtype=np.float32).reshape(2, 3) - 2)
np.save(os.path.join(out, "x10.npy"), np.arange(10, dtype=np.float32))

# Gather: constant indices are checked at compile time, others at run time.
emb = nh.from_array(np.arange(20, dtype=np.float32).reshape(5, 4), "emb")
save("gather_constant_index", [h.make_node("Gather", ["emb", "i"], ["y"])], [x23], [info("y", [2, 4])],
     [emb, ints("i", [1, 5])])
save("gather_embedding", [h.make_node("Gather", ["emb", "i"], ["y"], name="embed")],
     [info("i", [3], T.INT64)], [info("y", [3, 4])], [emb])
np.save(os.path.join(out, "good_ids.npy"), np.array([0, 4, -5], np.int64))
np.save(os.path.join(out, "bad_ids.npy"), np.array([0, 7, 2], np.int64))
