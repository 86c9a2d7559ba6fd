#!/usr/bin/env python3
"""Writes a two-layer perceptron whose weights are constants (initializers).

  h = Relu(x . w1 + b1): 64x96 . 96x512, 32768 outputs, so the kernel is
      split into column tiles run on different threads; each tile multiplies
      by its own slice of w1 (kiln_matmul_constant_b packs each slice once);
  y = h . w2 + b2:       64x512 . 512x40, small, one call.
The references are computed here in float64. All values are multiples of
1/32 and small, so float32 arithmetic in any order gives the reference
exactly (checked below). Layout as in ONNX's backend tests, so
kiln-conformance checks it. Needs numpy and onnx (bench/.venv has both):
    bench/.venv/bin/python test/models/mlp/generate.py
"""
import os

import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(20261123)


def tensor(shape, scale=1.0):
    """Multiples of 1/32 in [-scale, scale]."""
    steps = int(round(scale * 32))
    return (rng.integers(-steps, steps + 1, size=shape) / 32.0).astype(np.float32)


x = tensor((64, 96))
w1, b1 = tensor((96, 512), 0.25), tensor((512,), 0.5)
w2, b2 = tensor((512, 40), 0.125), tensor((40,), 0.5)

h = np.maximum(x.astype(np.float64) @ w1.astype(np.float64) + b1, 0.0)
y = h @ w2.astype(np.float64) + b2
# Exact in float32 whatever the order: the float32 products match bit for bit.
h32 = np.maximum(x @ w1 + b1, np.float32(0))
assert np.array_equal(h32.astype(np.float64), h)
assert np.array_equal((h32 @ w2 + b2).astype(np.float64), y)

nodes = [
    helper.make_node("MatMul", ["x", "w1"], ["xw1"], name="layer1"),
    helper.make_node("Add", ["xw1", "b1"], ["z1"], name="bias1"),
    helper.make_node("Relu", ["z1"], ["h"], name="relu1"),
    helper.make_node("MatMul", ["h", "w2"], ["hw2"], name="layer2"),
    helper.make_node("Add", ["hw2", "b2"], ["y"], name="bias2"),
]
inits = [numpy_helper.from_array(a, n) for n, a in [("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2)]]


def vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))


graph = helper.make_graph(nodes, "mlp_constant_weights", [vi("x", x.shape)],
                          [vi("h", h.shape), vi("y", y.shape)], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                          producer_name="kiln-test")
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, os.path.join(HERE, "model.onnx"))

data = os.path.join(HERE, "test_data_set_0")
os.makedirs(data, exist_ok=True)
with open(os.path.join(data, "input_0.pb"), "wb") as f:
    f.write(numpy_helper.from_array(x, "x").SerializeToString())
for i, (name, a) in enumerate([("h", h), ("y", y)]):
    with open(os.path.join(data, f"output_{i}.pb"), "wb") as f:
        f.write(numpy_helper.from_array(a.astype(np.float32), name).SerializeToString())
