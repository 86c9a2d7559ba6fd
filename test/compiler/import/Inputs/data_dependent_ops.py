"""Writes NonZero and Unique models into the folder argv[1], with their
inputs (as TensorProto .pb files, to bind with --freeze-input) and NumPy's
results as references."""
import os

import numpy as np
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

from single_node import info, out, save


def npy(name, array):
    np.save(os.path.join(out, name + ".npy"), array)


def pb(name, array):
    with open(os.path.join(out, name + ".pb"), "wb") as f:
        f.write(nh.from_array(array, name).SerializeToString())


# NonZero of a constant (a NaN is not zero, -0.0 is).
c = np.array([[0, 1.5, -0.0], [np.nan, 0, 2]], np.float32)
save("nonzero_constant", h.make_node("NonZero", ["c"], ["y"]), [], [info("y", [2, 3], T.INT64)],
     [nh.from_array(c, "c")])

# NonZero of a graph input: its values give the result's shape.
x = np.array([[[1, 0, 3], [0, 0, 6]], [[0, 8, 0], [10, 0, 12]]], np.int32)
pb("x", x)
npy("nonzero_ref", np.array(np.nonzero(x), np.int64))
save("nonzero_input", h.make_node("NonZero", ["x"], ["y"]), [info("x", [2, 2, 3], T.INT32)],
     [info("y", [3, None], T.INT64)])

# Unique rows (axis 0, sorted) and unique elements in order of appearance.
u = np.array([[2, 1, 0], [1, 5, 5], [2, 1, 0], [1, 5, 4], [1, 5, 5]], np.float32)
pb("u", u)


def unique_out(y, inverse):
    return [info("y", list(y.shape)), info("indices", [len(y)], T.INT64),
            info("inverse", [inverse.size], T.INT64), info("counts", [len(y)], T.INT64)]


y, index, inverse, counts = np.unique(u, axis=0, return_index=True, return_inverse=True,
                                      return_counts=True)
save("unique_rows", h.make_node("Unique", ["u"], ["y", "indices", "inverse", "counts"], axis=0),
     [info("u", [5, 3])], unique_out(y, inverse))
for name, value in (("y", y), ("indices", index), ("inverse", inverse), ("counts", counts)):
    npy("rows_" + name + "_ref", value.reshape(-1) if name == "inverse" else value)

flat = u.reshape(-1)
values, first = np.unique(flat, return_index=True)
save("unique_unsorted", h.make_node("Unique", ["u"], ["y", "indices", "inverse", "counts"],
                                    sorted=0),
     [info("u", [5, 3])], unique_out(values, flat))
order = np.argsort(first)  # by first appearance
rank = np.empty_like(order)
rank[order] = np.arange(len(order))
npy("unsorted_y_ref", values[order])
npy("unsorted_indices_ref", first[order].astype(np.int64))
npy("unsorted_inverse_ref", rank[np.searchsorted(values, flat)].astype(np.int64))
npy("unsorted_counts_ref", np.array([np.sum(flat == v) for v in values[order]], np.int64))
