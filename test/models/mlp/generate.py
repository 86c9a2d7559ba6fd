#!/usr/bin/env python3
"""Writes a two-layer perceptron whose weights are constants (initializers).

  h = Relu(x . w1 + b1): 64x96 . 96x512, 32768 outputs, so the kernel is
      split into column tiles run on different threads; each tile multiplies
      by its own slice of w1 (kiln_matmul_constant_b packs each slice once);
  y = h . w2 + b2:       64x512 . 512x40, small, one call;
  p = img . w3 + b3:     a pointwise layer on a 1x7x7x64 channels-last image
      (ConvNeXt's), a stack of 7 matrices of 7 rows times one 64x256
      matrix: lowered as one product of 49 rows.
The references are computed here in float64. All values are multiples of
1/32 and small, so float32 arithmetic in any order gives the reference
exactly (checked below). Layout as in ONNX's backend tests, so
kiln-conformance checks it. Needs numpy and onnx (bench/.venv has both):
    bench/.venv/bin/python test/models/mlp/generate.py
"""
import os
import sys

import numpy as np
from onnx import helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import model_files  # noqa: E402

rng = np.random.default_rng(20261123)


def tensor(shape, scale=1.0):
    return model_files.tensor(rng, shape, scale)


x = tensor((64, 96))
w1, b1 = tensor((96, 512), 0.25), tensor((512,), 0.5)
w2, b2 = tensor((512, 40), 0.125), tensor((40,), 0.5)

h = np.maximum(x.astype(np.float64) @ w1.astype(np.float64) + b1, 0.0)
y = h @ w2.astype(np.float64) + b2
# Exact in float32 whatever the order: the float32 products match bit for bit.
h32 = np.maximum(x @ w1 + b1, np.float32(0))
assert np.array_equal(h32.astype(np.float64), h)
assert np.array_equal((h32 @ w2 + b2).astype(np.float64), y)
img = tensor((1, 7, 7, 64))
w3, b3 = tensor((64, 256), 0.25), tensor((256,), 0.5)
p = img.astype(np.float64) @ w3.astype(np.float64) + b3
assert np.array_equal((img @ w3 + b3).astype(np.float64), p)

nodes = [
    helper.make_node("MatMul", ["x", "w1"], ["xw1"], name="layer1"),
    helper.make_node("Add", ["xw1", "b1"], ["z1"], name="bias1"),
    helper.make_node("Relu", ["z1"], ["h"], name="relu1"),
    helper.make_node("MatMul", ["h", "w2"], ["hw2"], name="layer2"),
    helper.make_node("Add", ["hw2", "b2"], ["y"], name="bias2"),
    helper.make_node("MatMul", ["img", "w3"], ["imgw3"], name="pointwise"),
    helper.make_node("Add", ["imgw3", "b3"], ["p"], name="bias3"),
]
model_files.save(HERE, "mlp_constant_weights", nodes, [("x", x), ("img", img)],
                 [("h", h), ("y", y), ("p", p)],
                 [("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2), ("w3", w3), ("b3", b3)])
