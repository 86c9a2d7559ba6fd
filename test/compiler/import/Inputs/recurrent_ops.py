"""Writes RNN, GRU, LSTM, Einsum and scatter models that the ONNX node tests
do not cover (bidirectional layers, per-batch sequence lengths, both
layouts, diagonals, duplicate scatter indices) into the folder argv[1],
with their inputs and the outputs of a NumPy reference written from ONNX's
operator specifications (<model>.x<i>.npy, <model>.expected.npy)."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(7)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def save(name, node, inputs, expected, inits=(), out_elem=T.FLOAT, opset=14):
    """`inputs` are (name, array) bound at run time; `expected` is Y's value."""
    infos = [h.make_tensor_value_info(n, nh.from_array(a).data_type, a.shape) for n, a in inputs]
    outputs = [h.make_tensor_value_info(node.output[-1], out_elem, expected.shape)]
    graph = h.make_graph([node], name, infos, outputs, list(inits))
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)], ir_version=7)
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, name + ".onnx"))
    for i, (_, a) in enumerate(inputs):
        np.save(os.path.join(out, f"{name}.x{i}.npy"), a)
    np.save(os.path.join(out, name + ".expected.npy"), expected)


def run_layer(cell, x, w, r, b, lens, h0, c0, hidden, reverse, linear_before_reset=0):
    """One direction over x [T, B, I]: Y [T, B, H], final h and c [B, H]."""
    steps, batch, _ = x.shape
    hprev, cprev = h0.copy(), c0.copy()
    ys = np.zeros((steps, batch, hidden), np.float32)
    g = {"rnn": 1, "gru": 3, "lstm": 4}[cell]
    wb, rb = b[: g * hidden], b[g * hidden:]
    order = range(steps - 1, -1, -1) if reverse else range(steps)
    for t in order:
        live = (t < lens)[:, None]
        xt = x[t]
        if cell == "rnn":
            hn = np.tanh(xt @ w.T + hprev @ r.T + wb + rb)
            cn = cprev
        elif cell == "lstm":
            gates = xt @ w.T + hprev @ r.T + wb + rb
            i, o, f, c = np.split(gates, 4, axis=1)
            i, f, o = sigmoid(i), sigmoid(f), sigmoid(o)
            cn = f * cprev + i * np.tanh(c)
            hn = o * np.tanh(cn)
        else:
            wz, wr, wh = np.split(w, 3)
            rz, rr, rh = np.split(r, 3)
            bz, br, bh = np.split(wb, 3)
            rbz, rbr, rbh = np.split(rb, 3)
            z = sigmoid(xt @ wz.T + hprev @ rz.T + bz + rbz)
            rt = sigmoid(xt @ wr.T + hprev @ rr.T + br + rbr)
            if linear_before_reset:
                ht = np.tanh(xt @ wh.T + rt * (hprev @ rh.T + rbh) + bh)
            else:
                ht = np.tanh(xt @ wh.T + (rt * hprev) @ rh.T + rbh + bh)
            hn = (1 - z) * ht + z * hprev
            cn = cprev
        hprev = np.where(live, hn, hprev)
        cprev = np.where(live, cn, cprev)
        ys[t] = np.where(live, hn, 0)
    return ys, hprev, cprev


def recurrent(name, cell, steps, batch, size, hidden, layout, lens, **attrs):
    g = {"rnn": 1, "gru": 3, "lstm": 4}[cell]
    x = rng.standard_normal((steps, batch, size)).astype(np.float32)
    w = (rng.standard_normal((2, g * hidden, size)) * 0.5).astype(np.float32)
    r = (rng.standard_normal((2, g * hidden, hidden)) * 0.5).astype(np.float32)
    b = (rng.standard_normal((2, 2 * g * hidden)) * 0.1).astype(np.float32)
    h0 = rng.standard_normal((2, batch, hidden)).astype(np.float32)
    c0 = rng.standard_normal((2, batch, hidden)).astype(np.float32)
    lens = np.array(lens, np.int32)
    ys, hs = [], []
    for d in range(2):
        y, hn, _ = run_layer(cell, x, w[d], r[d], b[d], lens, h0[d], c0[d], hidden, d == 1,
                             attrs.get("linear_before_reset", 0))
        ys.append(y)
        hs.append(hn)
    y = np.stack(ys, 1)  # [T, D, B, H]
    xin, h0in, c0in = x, h0, c0
    if layout:
        y = y.transpose(2, 0, 1, 3)
        xin, h0in, c0in = x.transpose(1, 0, 2), h0.transpose(1, 0, 2), c0.transpose(1, 0, 2)
    names = ["X", "W", "R", "B", "sequence_lens", "initial_h"] + (["initial_c"] if cell == "lstm" else [])
    node = h.make_node(cell.upper(), names, ["Y"], hidden_size=hidden, direction="bidirectional",
                       layout=layout, **attrs)
    inits = [nh.from_array(v, n) for n, v in [("W", w), ("R", r), ("B", b)]]
    bound = [("X", xin), ("sequence_lens", lens), ("initial_h", h0in)]
    if cell == "lstm":
        bound.append(("initial_c", c0in))
    save(name, node, bound, y.astype(np.float32), inits)


recurrent("lstm_bidirectional", "lstm", 4, 3, 2, 3, 0, [4, 2, 3])
recurrent("gru_bidirectional_batchwise", "gru", 3, 2, 4, 5, 1, [1, 3], linear_before_reset=1)
recurrent("gru_bidirectional", "gru", 3, 2, 4, 5, 0, [3, 2])
recurrent("rnn_bidirectional", "rnn", 5, 2, 3, 4, 0, [5, 3])

a = rng.standard_normal((2, 3, 3)).astype(np.float32)
save("einsum_diagonal", h.make_node("Einsum", ["a"], ["y"], equation="...ii->...i"), [("a", a)],
     np.einsum("...ii->...i", a))
p = rng.standard_normal((3, 4)).astype(np.float32)
q = rng.standard_normal((4, 5)).astype(np.float32)
save("einsum_implicit", h.make_node("Einsum", ["p", "q"], ["y"], equation="ij,jk"),
     [("p", p), ("q", q)], np.einsum("ij,jk", p, q))
v = rng.standard_normal((2, 1, 4)).astype(np.float32)
s = rng.standard_normal((3, 4)).astype(np.float32)
save("einsum_broadcast", h.make_node("Einsum", ["v", "s"], ["y"], equation="...j,...j->..."),
     [("v", v), ("s", s)], np.einsum("...j,...j->...", v, s))

data = rng.standard_normal((3, 5)).astype(np.float32)
idx = np.array([[0, 4, 0], [-1, 2, 2]], np.int64)
upd = rng.standard_normal((2, 3)).astype(np.float32)
want = data.copy()
for i in range(2):
    for j in range(3):
        want[i, idx[i, j]] += upd[i, j]
save("scatter_elements_add", h.make_node("ScatterElements", ["d", "i", "u"], ["y"], axis=1,
                                         reduction="add"),
     [("d", data), ("i", idx), ("u", upd)], want, opset=16)
rows = np.array([[2], [0], [2]], np.int64)
slices = rng.standard_normal((3, 5)).astype(np.float32)
want = data.copy()
for k in range(3):
    want[rows[k, 0]] *= slices[k]
save("scatter_nd_mul", h.make_node("ScatterND", ["d", "i", "u"], ["y"], reduction="mul"),
     [("d", data), ("i", rows), ("u", slices)], want, opset=16)

# Refused with a reason.
x = np.zeros((2, 1, 2), np.float32)
for bad, attrs in [("lstm_input_forget", {"input_forget": 1}),
                   ("lstm_affine", {"activations": ["Affine", "Tanh", "Tanh"]})]:
    node = h.make_node("LSTM", ["X", "W", "R"], ["Y"], hidden_size=3, **attrs)
    save(bad, node, [("X", x)], np.zeros((2, 1, 1, 3), np.float32),
         [nh.from_array(np.zeros((1, 12, 2), np.float32), "W"),
          nh.from_array(np.zeros((1, 12, 3), np.float32), "R")])

# DFT and STFT against NumPy's FFT: one-sided with a longer dft_length (the
# signal padded with zeros), and an STFT with a Hann window.
sig = rng.standard_normal((2, 6, 3, 1)).astype(np.float32)
want = np.fft.rfft(sig[..., 0], n=8, axis=1)
save("dft_onesided", h.make_node("DFT", ["s", "n"], ["y"], axis=1, onesided=1), [("s", sig)],
     np.stack([want.real, want.imag], -1).astype(np.float32),
     [nh.from_array(np.array(8, np.int64), "n")], opset=17)
audio = rng.standard_normal((1, 40, 1)).astype(np.float32)
window = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(8) / 8)).astype(np.float32)
frames = np.stack([audio[0, f * 4:f * 4 + 8, 0] * window for f in range(9)])
want = np.fft.rfft(frames, axis=1)[None]
save("stft_window", h.make_node("STFT", ["a", "step", "w"], ["y"]), [("a", audio)],
     np.stack([want.real, want.imag], -1).astype(np.float32),
     [nh.from_array(np.array(4, np.int64), "step"), nh.from_array(window, "w")], opset=17)


def graph_of(nodes, name, inputs, outputs):
    return h.make_graph(nodes, name, inputs, outputs)


# If with a condition known only at run time: both branches, selected.
vec = [h.make_tensor_value_info("v", T.FLOAT, [3])]
then_g = graph_of([h.make_node("Mul", ["x", "x"], ["v"])], "square", [], vec)
else_g = graph_of([h.make_node("Neg", ["x"], ["v"])], "negate", [], vec)
xs = np.array([1, -2, 3], np.float32)
for flag in (True, False):
    save(f"if_{str(flag).lower()}", h.make_node("If", ["c"], ["y"], then_branch=then_g,
                                                 else_branch=else_g),
         [("c", np.array(flag)), ("x", xs)], xs * xs if flag else -xs)

# Loop of 4 iterations: y accumulates i * x, and each y is a scan output.
body = graph_of(
    [h.make_node("Identity", ["cond_in"], ["cond_out"]),
     h.make_node("Cast", ["i"], ["fi"], to=T.FLOAT),
     h.make_node("Mul", ["fi", "x"], ["step"]),
     h.make_node("Add", ["y_in", "step"], ["y_out"]),
     h.make_node("Identity", ["y_out"], ["scan"])],
    "accumulate",
    [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("cond_in", T.BOOL, []),
     h.make_tensor_value_info("y_in", T.FLOAT, [3])],
    [h.make_tensor_value_info("cond_out", T.BOOL, []),
     h.make_tensor_value_info("y_out", T.FLOAT, [3]),
     h.make_tensor_value_info("scan", T.FLOAT, [3])])
ys = np.cumsum([i * xs for i in range(4)], axis=0).astype(np.float32)
save("loop_scan_output", h.make_node("Loop", ["m", "", "y0"], ["y", "ys"], body=body),
     [("x", xs), ("y0", np.zeros(3, np.float32))], ys,
     [nh.from_array(np.array(4, np.int64), "m")], opset=16)

# Scan over the rows of a matrix, backwards: running sums from the end.
scan_body = graph_of(
    [h.make_node("Add", ["acc", "row"], ["acc_out"]), h.make_node("Identity", ["acc_out"], ["out"])],
    "sum", [h.make_tensor_value_info("acc", T.FLOAT, [3]),
            h.make_tensor_value_info("row", T.FLOAT, [3])],
    [h.make_tensor_value_info("acc_out", T.FLOAT, [3]), h.make_tensor_value_info("out", T.FLOAT, [3])])
rows = rng.standard_normal((5, 3)).astype(np.float32)
save("scan_reverse", h.make_node("Scan", ["init", "rows"], ["final", "sums"], body=scan_body,
                                 num_scan_inputs=1, scan_input_directions=[1]),
     [("init", np.zeros(3, np.float32)), ("rows", rows)],
     np.cumsum(rows[::-1], axis=0).astype(np.float32), opset=16)
