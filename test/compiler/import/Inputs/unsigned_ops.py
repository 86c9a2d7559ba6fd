"""Writes small models of ONNX ops on unsigned integers and of the
quantization ops into the folder argv[1], with inputs as .npy files and
references computed here with NumPy (the semantics ONNX's reference gives)."""
import os

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

from single_node import info, out, save


def npy(name, array):
    np.save(os.path.join(out, name + ".npy"), array)


# Division, maximum and comparison read uint8 as unsigned: 200 / 3 is 66, not
# -56 / 3 (the signed reading of the same bits).
a = np.array([200, 7, 255, 0, 129], np.uint8)
b = np.array([3, 2, 254, 5, 0], np.uint8)
npy("a_u8", a)
npy("b_u8", b)
u8 = lambda name: info(name, [5], T.UINT8)
save("div_u8", h.make_node("Div", ["a", "b"], ["y"]), [u8("a"), u8("b")], [u8("y")])
# Kiln defines x / 0 = 0 (ONNX leaves it undefined).
npy("div_u8_ref", np.where(b == 0, 0, a // np.maximum(b, 1)).astype(np.uint8))
save("max_u8", h.make_node("Max", ["a", "b"], ["y"]), [u8("a"), u8("b")], [u8("y")])
npy("max_u8_ref", np.maximum(a, b))
save("less_u8", h.make_node("Less", ["a", "b"], ["y"]), [u8("a"), u8("b")],
     [info("y", [5], T.BOOL)])
save("cast_u8", h.make_node("Cast", ["a"], ["y"], to=T.FLOAT), [u8("a")], [info("y", [5])])
npy("cast_u8_ref", a.astype(np.float32))
save("shift_u8", h.make_node("BitShift", ["a", "b"], ["y"], direction="RIGHT"),
     [u8("a"), u8("b")], [u8("y")])

# uint64 beyond int64's range.
big = np.array([2**64 - 1, 2**63, 5], np.uint64)
npy("big_u64", big)
npy("small_u64", np.array([2**63, 2, 2**64 - 1], np.uint64))
u64 = lambda name: info(name, [3], T.UINT64)
save("mod_u64", h.make_node("Mod", ["a", "b"], ["y"]), [u64("a"), u64("b")], [u64("y")])
npy("mod_u64_ref", big % np.array([2**63, 2, 2**64 - 1], np.uint64))

# Constants fold with the unsigned reading too.
c = nh.from_array(np.array([250, 3], np.uint8), "c")
d = nh.from_array(np.array([5, 200], np.uint8), "d")
save("fold_u8", h.make_node("Min", ["c", "d"], ["y"]), [], [info("y", [2], T.UINT8)], inits=[c, d])

# Ops without unsigned semantics are refused by name.
save("abs_u8", h.make_node("Abs", ["a"], ["y"]), [u8("a")], [u8("y")])
save("reduce_max_u8", h.make_node("ReduceMax", ["a"], ["y"], keepdims=0), [u8("a")],
     [info("y", [], T.UINT8)])
save("shift_signed", h.make_node("BitShift", ["a", "b"], ["y"], direction="LEFT"),
     [info("a", [5], T.INT8), info("b", [5], T.INT8)], [info("y", [5], T.INT8)])

# Quantization: per-channel QuantizeLinear to uint8, DequantizeLinear from
# int8, MatMulInteger with zero points.
x = np.array([[-1.0, 0.25, 3.7], [100.0, -7.5, 0.5]], np.float32)
scale = np.array([0.5, 0.05, 0.1], np.float32)
zero = np.array([10, 128, 250], np.uint8)
npy("quantize_x", x)
save("quantize", h.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], axis=1),
     [info("x", [2, 3])], [info("y", [2, 3], T.UINT8)],
     inits=[nh.from_array(scale, "s"), nh.from_array(zero, "z")])
npy("quantize_ref", np.clip(np.rint(x / scale) + zero, 0, 255).astype(np.uint8))
q = np.array([-128, -1, 0, 127], np.int8)
npy("dequantize_x", q)
save("dequantize", h.make_node("DequantizeLinear", ["x", "s", "z"], ["y"]),
     [info("x", [4], T.INT8)], [info("y", [4])],
     inits=[nh.from_array(np.array(0.25, np.float32), "s"), nh.from_array(np.array(-3, np.int8), "z")])
npy("dequantize_ref", ((q.astype(np.float32) + 3) * 0.25).astype(np.float32))
ma = np.array([[255, 0, 17], [1, 128, 200]], np.uint8)
mb = np.array([[-128, 127], [5, -5], [0, 100]], np.int8)
npy("matmul_integer_a", ma)
npy("matmul_integer_b", mb)
save("matmul_integer", h.make_node("MatMulInteger", ["a", "b", "za", "zb"], ["y"]),
     [info("a", [2, 3], T.UINT8), info("b", [3, 2], T.INT8)], [info("y", [2, 2], T.INT32)],
     inits=[nh.from_array(np.array([3, 250], np.uint8), "za"),
            nh.from_array(np.array(-2, np.int8), "zb")])
npy("matmul_integer_ref", ((ma.astype(np.int32) - np.array([[3], [250]])) @
                           (mb.astype(np.int32) + 2)).astype(np.int32))

# A graph to split over two devices.
graph_nodes = [h.make_node("Div", ["a", "b"], ["t"]), h.make_node("Max", ["t", "b"], ["u"]),
               h.make_node("Add", ["u", "a"], ["y"])]
g = h.make_graph(graph_nodes, "split_u8", [u8("a"), u8("b")], [u8("y"), u8("t")])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 17)], ir_version=8),
          os.path.join(out, "split_u8.onnx"))

# Zero points and scales of the wrong shape are refused by name.
save("matmul_integer_bad_zero", h.make_node("MatMulInteger", ["a", "b", "za", "zb"], ["y"]),
     [info("a", [2, 3], T.UINT8), info("b", [3, 2], T.INT8)], [info("y", [2, 2], T.INT32)],
     inits=[nh.from_array(np.array([3, 250], np.uint8), "za"),
            nh.from_array(np.zeros(18, np.int8), "zb")])
save("qlinear_matmul_bad_zero", h.make_node(
    "QLinearMatMul", ["a", "sa", "za", "b", "sb", "zb", "sy", "zy"], ["y"]),
     [info("a", [2, 3], T.UINT8), info("b", [3, 2], T.UINT8)], [info("y", [2, 2], T.UINT8)],
     inits=[nh.from_array(np.array(0.5, np.float32), "sa"), nh.from_array(np.array(1, np.uint8), "za"),
            nh.from_array(np.array(0.5, np.float32), "sb"), nh.from_array(np.array(2, np.uint8), "zb"),
            nh.from_array(np.array(0.25, np.float32), "sy"), nh.from_array(np.array([1, 2], np.uint8), "zy")])
