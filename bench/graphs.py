# Benchmark graphs: each as an ONNX model (opset 17) and as the same computation in jax.numpy.
#
# A graph's ONNX model holds every weight as an initializer; the JAX worker reads the weights
# back out of that same model file, so both frameworks compute with identical numbers. Weights
# and inputs come from a generator seeded by the graph's name, so every run of the harness
# benchmarks byte-identical models on byte-identical inputs.

import math
import zlib
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

OPSET = 17


@dataclass
class Graph:
    name: str
    summary: str
    # build(rng) -> (onnx.ModelProto, {input name: array})
    build: Callable
    # jax_fn(w) -> f(*inputs in graph-input order) returning a tuple of outputs in graph-output
    # order; w maps initializer names to jax arrays. Called only in the JAX worker.
    jax_fn: Callable
    notes: list = field(default_factory=list)
    # torch_fn(w) -> f(*inputs) like jax_fn, with w mapping initializer names to torch tensors
    # on the GPU. Called only in the GPU benchmark's PyTorch worker.
    torch_fn: Callable = None


def _rng(name):
    return np.random.default_rng(zlib.crc32(name.encode()))


def _dense(rng, fan_in, fan_out):
    # He-style scaling keeps activations O(1) through the ReLU stacks, so an absolute tolerance
    # of ~1e-3 is meaningful for the comparison.
    w = rng.standard_normal((fan_in, fan_out), dtype=np.float32) * np.float32(math.sqrt(2.0 / fan_in))
    b = rng.standard_normal(fan_out, dtype=np.float32) * np.float32(0.1)
    return w, b


class _Builder:
    """Collects nodes and initializers; names every node so Kiln's diagnostics can point at it."""

    def __init__(self, name):
        import onnx  # noqa: F401  (imported here so --list works without the venv)
        self.name = name
        self.nodes = []
        self.inits = []
        self.count = 0

    def init(self, name, array):
        from onnx import numpy_helper
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def node(self, op, inputs, outputs=None, **attrs):
        from onnx import helper
        self.count += 1
        node_name = f"{op.lower()}_{self.count}"
        if outputs is None:
            outputs = [node_name]
        self.nodes.append(helper.make_node(op, inputs, outputs, name=node_name, **attrs))
        return outputs[0] if len(outputs) == 1 else outputs

    def model(self, inputs, outputs):
        import onnx
        from onnx import helper, TensorProto

        def vi(name, shape):
            return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))

        graph = helper.make_graph(self.nodes, self.name, [vi(n, s) for n, s in inputs],
                                  [vi(n, s) for n, s in outputs], initializer=self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="kiln-bench")
        # Keep the IR version ONNX Runtime and Kiln's ONNX both read, whatever onnx pip ships.
        model.ir_version = 8
        onnx.checker.check_model(model, full_check=True)
        return model


def _gelu_onnx(b, x):
    # GELU in its exact erf form, as exporters write it: x * 0.5 * (1 + erf(x / sqrt(2))).
    t = b.node("Div", [x, b.init(f"sqrt2_{b.count}", np.array(math.sqrt(2.0), np.float32))])
    t = b.node("Erf", [t])
    t = b.node("Add", [t, b.init(f"one_{b.count}", np.array(1.0, np.float32))])
    t = b.node("Mul", [x, t])
    return b.node("Mul", [t, b.init(f"half_{b.count}", np.array(0.5, np.float32))])


def _jnp():
    import jax.numpy as jnp
    return jnp


def _gelu_jax(x):
    import jax.numpy as jnp
    from jax.scipy.special import erf
    return x * 0.5 * (1.0 + erf(x / jnp.float32(math.sqrt(2.0))))


def _layernorm_jax(x, scale, bias, eps=1e-5):
    # ONNX LayerNormalization (axis=-1): biased variance, epsilon inside the square root.
    jnp = _jnp()
    mean = jnp.mean(x, axis=-1, keepdims=True)
    var = jnp.mean(jnp.square(x - mean), axis=-1, keepdims=True)
    return (x - mean) * (1.0 / jnp.sqrt(var + eps)) * scale + bias


def _softmax_jax(x):
    jnp = _jnp()
    e = jnp.exp(x - jnp.max(x, axis=-1, keepdims=True))
    return e / jnp.sum(e, axis=-1, keepdims=True)


def _torch():
    import torch
    return torch


def _gelu_torch(x):
    torch = _torch()
    return x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0)))


def _layernorm_torch(x, scale, bias, eps=1e-5):
    # Written out like the JAX and ONNX forms; torch.nn.functional.layer_norm computes the
    # same function with its own fused kernel, which is what the PyTorch row uses.
    torch = _torch()
    return torch.nn.functional.layer_norm(x, x.shape[-1:], scale, bias, eps)


def _softmax_torch(x):
    return _torch().softmax(x, dim=-1)


def _conv_torch(x, w, b, pad):
    return _torch().nn.functional.conv2d(x, w, b, padding=pad)


# ---- MLP 784-1024-1024-10 -------------------------------------------------------------------

def _mlp(batch):
    name = f"mlp_b{batch}"

    def build(rng):
        b = _Builder(name)
        h = "x"
        sizes = [784, 1024, 1024, 10]
        for i in range(3):
            w, bias = _dense(rng, sizes[i], sizes[i + 1])
            h = b.node("Gemm", [h, b.init(f"w{i}", w), b.init(f"b{i}", bias)])
            if i < 2:
                h = b.node("Relu", [h])
        b.nodes[-1].output[0] = "logits"
        model = b.model([("x", (batch, 784))], [("logits", (batch, 10))])
        return model, {"x": rng.standard_normal((batch, 784), dtype=np.float32)}

    def jax_fn(w):
        jnp = _jnp()

        def f(x):
            h = jnp.maximum(x @ w["w0"] + w["b0"], 0.0)
            h = jnp.maximum(h @ w["w1"] + w["b1"], 0.0)
            return (h @ w["w2"] + w["b2"],)
        return f

    def torch_fn(w):
        torch = _torch()

        def f(x):
            h = torch.relu(torch.addmm(w["b0"], x, w["w0"]))
            h = torch.relu(torch.addmm(w["b1"], h, w["w1"]))
            return (torch.addmm(w["b2"], h, w["w2"]),)
        return f

    return Graph(name, f"MLP 784-1024-1024-10, batch {batch}: Gemm+Relu, Gemm+Relu, Gemm (no softmax)",
                 build, jax_fn, torch_fn=torch_fn)


# ---- ResNet basic block ---------------------------------------------------------------------

CNN_SHAPE = (1, 64, 56, 56)  # a ResNet-18/34 stage-1 block at batch 1: ~0.9 GFLOP


def _conv_weights(rng, cout, cin, k):
    fan_in = cin * k * k
    w = rng.standard_normal((cout, cin, k, k), dtype=np.float32) * np.float32(math.sqrt(2.0 / fan_in))
    b = rng.standard_normal(cout, dtype=np.float32) * np.float32(0.1)
    return w, b


def _conv_jax(x, w, b, pad):
    import jax
    y = jax.lax.conv_general_dilated(x, w, window_strides=(1, 1), padding=[(pad, pad), (pad, pad)],
                                     dimension_numbers=("NCHW", "OIHW", "NCHW"))
    return y + b.reshape(1, -1, 1, 1)


def _cnn_block():
    n, c, h, wd = CNN_SHAPE

    def build(rng):
        b = _Builder("cnn_block")
        w1, b1 = _conv_weights(rng, c, c, 3)
        w2, b2 = _conv_weights(rng, c, c, 3)
        conv = dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1])
        t = b.node("Conv", ["x", b.init("w1", w1), b.init("b1", b1)], **conv)
        t = b.node("Relu", [t])
        t = b.node("Conv", [t, b.init("w2", w2), b.init("b2", b2)], **conv)
        t = b.node("Add", [t, "x"])
        b.node("Relu", [t], ["y"])
        model = b.model([("x", CNN_SHAPE)], [("y", CNN_SHAPE)])
        return model, {"x": rng.standard_normal(CNN_SHAPE, dtype=np.float32)}

    def jax_fn(w):
        jnp = _jnp()

        def f(x):
            t = jnp.maximum(_conv_jax(x, w["w1"], w["b1"], 1), 0.0)
            t = _conv_jax(t, w["w2"], w["b2"], 1)
            return (jnp.maximum(t + x, 0.0),)
        return f

    def torch_fn(w):
        torch = _torch()

        def f(x):
            t = torch.relu(_conv_torch(x, w["w1"], w["b1"], 1))
            t = _conv_torch(t, w["w2"], w["b2"], 1)
            return (torch.relu(t + x),)
        return f

    return Graph("cnn_block", f"ResNet basic block on {'x'.join(map(str, CNN_SHAPE))}: Conv3x3+bias, Relu, "
                 "Conv3x3+bias, + input, Relu", build, jax_fn, torch_fn=torch_fn)


def _lenet():
    batch = 64

    def build(rng):
        b = _Builder("lenet")
        c1w, c1b = _conv_weights(rng, 6, 1, 5)
        c2w, c2b = _conv_weights(rng, 16, 6, 5)
        f1w, f1b = _dense(rng, 400, 120)
        f2w, f2b = _dense(rng, 120, 84)
        f3w, f3b = _dense(rng, 84, 10)
        pool = dict(kernel_shape=[2, 2], strides=[2, 2])
        t = b.node("Conv", ["x", b.init("c1w", c1w), b.init("c1b", c1b)], kernel_shape=[5, 5], pads=[2, 2, 2, 2])
        t = b.node("MaxPool", [b.node("Relu", [t])], **pool)
        t = b.node("Conv", [t, b.init("c2w", c2w), b.init("c2b", c2b)], kernel_shape=[5, 5])
        t = b.node("MaxPool", [b.node("Relu", [t])], **pool)
        t = b.node("Flatten", [t], axis=1)
        t = b.node("Relu", [b.node("Gemm", [t, b.init("f1w", f1w), b.init("f1b", f1b)])])
        t = b.node("Relu", [b.node("Gemm", [t, b.init("f2w", f2w), b.init("f2b", f2b)])])
        b.node("Gemm", [t, b.init("f3w", f3w), b.init("f3b", f3b)], ["logits"])
        model = b.model([("x", (batch, 1, 28, 28))], [("logits", (batch, 10))])
        return model, {"x": rng.standard_normal((batch, 1, 28, 28), dtype=np.float32)}

    def jax_fn(w):
        import jax
        jnp = _jnp()

        def pool(t):
            return jax.lax.reduce_window(t, -jnp.inf, jax.lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")

        def f(x):
            t = pool(jnp.maximum(_conv_jax(x, w["c1w"], w["c1b"], 2), 0.0))
            t = pool(jnp.maximum(_conv_jax(t, w["c2w"], w["c2b"], 0), 0.0))
            t = t.reshape(t.shape[0], -1)
            t = jnp.maximum(t @ w["f1w"] + w["f1b"], 0.0)
            t = jnp.maximum(t @ w["f2w"] + w["f2b"], 0.0)
            return (t @ w["f3w"] + w["f3b"],)
        return f

    def torch_fn(w):
        torch = _torch()
        pool = torch.nn.functional.max_pool2d

        def f(x):
            t = pool(torch.relu(_conv_torch(x, w["c1w"], w["c1b"], 2)), 2)
            t = pool(torch.relu(_conv_torch(t, w["c2w"], w["c2b"], 0)), 2)
            t = t.reshape(t.shape[0], -1)
            t = torch.relu(torch.addmm(w["f1b"], t, w["f1w"]))
            t = torch.relu(torch.addmm(w["f2b"], t, w["f2w"]))
            return (torch.addmm(w["f3b"], t, w["f3w"]),)
        return f

    return Graph("lenet", f"LeNet-5 on {batch}x1x28x28: Conv5x5(pad 2)+Relu+MaxPool, Conv5x5+Relu+MaxPool, "
                 "Flatten, Gemm 400-120-84-10 with Relu", build, jax_fn, torch_fn=torch_fn)


# ---- Transformer encoder layer --------------------------------------------------------------

SEQ, HIDDEN, HEADS, FFN = 128, 256, 4, 1024


def _transformer_layer():
    dh = HIDDEN // HEADS

    def build(rng):
        b = _Builder("transformer_layer")
        x = "x"

        def linear(inp, prefix, fan_in, fan_out):
            w, bias = _dense(rng, fan_in, fan_out)
            # Attention-style init (1/sqrt(fan_in)) keeps softmax inputs moderate.
            w *= np.float32(math.sqrt(0.5))
            t = b.node("MatMul", [inp, b.init(f"{prefix}_w", w)])
            return b.node("Add", [t, b.init(f"{prefix}_b", bias)])

        heads_shape = b.init("heads_shape", np.array([1, SEQ, HEADS, dh], np.int64))
        hidden_shape = b.init("hidden_shape", np.array([1, SEQ, HIDDEN], np.int64))
        q = b.node("Transpose", [b.node("Reshape", [linear(x, "q", HIDDEN, HIDDEN), heads_shape])], perm=[0, 2, 1, 3])
        k = b.node("Transpose", [b.node("Reshape", [linear(x, "k", HIDDEN, HIDDEN), heads_shape])], perm=[0, 2, 3, 1])
        v = b.node("Transpose", [b.node("Reshape", [linear(x, "v", HIDDEN, HIDDEN), heads_shape])], perm=[0, 2, 1, 3])
        s = b.node("MatMul", [q, k])                                     # [1, H, S, S]
        s = b.node("Div", [s, b.init("sqrt_dh", np.array(math.sqrt(dh), np.float32))])
        p = b.node("Softmax", [s], axis=-1)
        ctx = b.node("MatMul", [p, v])                                   # [1, H, S, dh]
        ctx = b.node("Reshape", [b.node("Transpose", [ctx], perm=[0, 2, 1, 3]), hidden_shape])
        attn = linear(ctx, "o", HIDDEN, HIDDEN)
        h = b.node("Add", [attn, x])
        h = b.node("LayerNormalization", [h, b.init("ln1_g", 1 + 0.1 * rng.standard_normal(HIDDEN, dtype=np.float32)),
                                          b.init("ln1_b", 0.1 * rng.standard_normal(HIDDEN, dtype=np.float32))],
                   axis=-1, epsilon=1e-5)
        f = _gelu_onnx(b, linear(h, "ffn1", HIDDEN, FFN))
        f = linear(f, "ffn2", FFN, HIDDEN)
        y = b.node("Add", [f, h])
        b.node("LayerNormalization", [y, b.init("ln2_g", 1 + 0.1 * rng.standard_normal(HIDDEN, dtype=np.float32)),
                                      b.init("ln2_b", 0.1 * rng.standard_normal(HIDDEN, dtype=np.float32))],
               ["y"], axis=-1, epsilon=1e-5)
        model = b.model([("x", (1, SEQ, HIDDEN))], [("y", (1, SEQ, HIDDEN))])
        return model, {"x": rng.standard_normal((1, SEQ, HIDDEN), dtype=np.float32)}

    def jax_fn(w):
        jnp = _jnp()

        def lin(t, p):
            return t @ w[f"{p}_w"] + w[f"{p}_b"]

        def f(x):
            q = lin(x, "q").reshape(1, SEQ, HEADS, dh).transpose(0, 2, 1, 3)
            k = lin(x, "k").reshape(1, SEQ, HEADS, dh).transpose(0, 2, 3, 1)
            v = lin(x, "v").reshape(1, SEQ, HEADS, dh).transpose(0, 2, 1, 3)
            p = _softmax_jax((q @ k) / jnp.float32(math.sqrt(dh)))
            ctx = (p @ v).transpose(0, 2, 1, 3).reshape(1, SEQ, HIDDEN)
            h = _layernorm_jax(lin(ctx, "o") + x, w["ln1_g"], w["ln1_b"])
            ff = lin(_gelu_jax(lin(h, "ffn1")), "ffn2")
            return (_layernorm_jax(ff + h, w["ln2_g"], w["ln2_b"]),)
        return f

    def torch_fn(w):
        def lin(t, p):
            return t @ w[f"{p}_w"] + w[f"{p}_b"]

        def f(x):
            q = lin(x, "q").reshape(1, SEQ, HEADS, dh).permute(0, 2, 1, 3)
            k = lin(x, "k").reshape(1, SEQ, HEADS, dh).permute(0, 2, 3, 1)
            v = lin(x, "v").reshape(1, SEQ, HEADS, dh).permute(0, 2, 1, 3)
            p = _softmax_torch((q @ k) / math.sqrt(dh))
            ctx = (p @ v).permute(0, 2, 1, 3).reshape(1, SEQ, HIDDEN)
            h = _layernorm_torch(lin(ctx, "o") + x, w["ln1_g"], w["ln1_b"])
            ff = lin(_gelu_torch(lin(h, "ffn1")), "ffn2")
            return (_layernorm_torch(ff + h, w["ln2_g"], w["ln2_b"]),)
        return f

    return Graph("transformer_layer",
                 f"post-LN encoder layer, batch 1, seq {SEQ}, hidden {HIDDEN}, {HEADS} heads, FFN {FFN}: "
                 "Q/K/V MatMul+Add, Reshape/Transpose, QK^T, Div sqrt(d), Softmax, PV, output projection, "
                 "residual, LayerNormalization, FFN with erf GELU, residual, LayerNormalization", build, jax_fn,
                 torch_fn=torch_fn)


# ---- Single-op chains over a large tensor ---------------------------------------------------

ROWS, COLS = 4096, 1024


def _softmax(rows=ROWS, cols=COLS, name="softmax"):
    def build(rng):
        b = _Builder(name)
        b.node("Softmax", ["x"], ["y"], axis=-1)
        model = b.model([("x", (rows, cols))], [("y", (rows, cols))])
        return model, {"x": 3 * rng.standard_normal((rows, cols), dtype=np.float32)}

    def jax_fn(w):
        return lambda x: (_softmax_jax(x),)

    def torch_fn(w):
        return lambda x: (_softmax_torch(x),)

    return Graph(name, f"Softmax over the last axis of {rows}x{cols}", build, jax_fn, torch_fn=torch_fn)


def _layernorm(rows=ROWS, cols=COLS, name="layernorm"):
    def build(rng):
        b = _Builder(name)
        g = b.init("gamma", 1 + 0.1 * rng.standard_normal(cols, dtype=np.float32))
        beta = b.init("beta", 0.1 * rng.standard_normal(cols, dtype=np.float32))
        b.node("LayerNormalization", ["x", g, beta], ["y"], axis=-1, epsilon=1e-5)
        model = b.model([("x", (rows, cols))], [("y", (rows, cols))])
        return model, {"x": 1 + 2 * rng.standard_normal((rows, cols), dtype=np.float32)}

    def jax_fn(w):
        return lambda x: (_layernorm_jax(x, w["gamma"], w["beta"]),)

    def torch_fn(w):
        return lambda x: (_layernorm_torch(x, w["gamma"], w["beta"]),)

    return Graph(name, f"LayerNormalization (axis -1, scale and bias) of {rows}x{cols}", build, jax_fn,
                 torch_fn=torch_fn)


def _gelu(rows=ROWS, cols=COLS, name="gelu"):
    def build(rng):
        b = _Builder(name)
        y = _gelu_onnx(b, "x")
        b.nodes[-1].output[0] = "y"
        del y
        model = b.model([("x", (rows, cols))], [("y", (rows, cols))])
        return model, {"x": 2 * rng.standard_normal((rows, cols), dtype=np.float32)}

    def jax_fn(w):
        return lambda x: (_gelu_jax(x),)

    def torch_fn(w):
        return lambda x: (_gelu_torch(x),)

    return Graph(name, f"GELU as x*0.5*(1+Erf(x/sqrt(2))) (Div, Erf, Add, Mul, Mul) on {rows}x{cols}", build,
                 jax_fn, torch_fn=torch_fn)


def _gemm(n):
    # Both operands are graph inputs, so the model stays small and the inputs are generated where
    # the benchmark runs.
    name = f"gemm_{n}"

    def build(rng):
        b = _Builder(name)
        b.node("MatMul", ["a", "b"], ["c"])
        model = b.model([("a", (n, n)), ("b", (n, n))], [("c", (n, n))])
        scale = np.float32(1 / math.sqrt(n))
        return model, {"a": rng.standard_normal((n, n), dtype=np.float32) * scale,
                       "b": rng.standard_normal((n, n), dtype=np.float32) * scale}

    def jax_fn(w):
        return lambda a, b: (a @ b,)

    def torch_fn(w):
        return lambda a, b: (a @ b,)

    return Graph(name, f"MatMul {n}x{n} by {n}x{n}, f32", build, jax_fn, torch_fn=torch_fn)


GRAPHS = {g.name: g for g in [_mlp(64), _mlp(256), _cnn_block(), _lenet(), _transformer_layer(),
                              _softmax(), _layernorm(), _gelu()]}

# The GPU benchmark runs GRAPHS and these: memory-bound chains large enough that launch costs
# vanish (8192x8192 f32: 256 MiB in, 256 MiB out), and a square GEMM.
BIG = 8192
GPU_GRAPHS = {**GRAPHS, **{g.name: g for g in [
    _softmax(BIG, BIG, "softmax_8k"), _layernorm(BIG, BIG, "layernorm_8k"), _gelu(BIG, BIG, "gelu_8k"),
    _gemm(4096)]}}


def generate(graph, out_dir):
    """Writes OUT/model.onnx and OUT/inputs/<name>.npy; returns {input name: path}."""
    import onnx
    out_dir.mkdir(parents=True, exist_ok=True)
    model, inputs = graph.build(_rng(graph.name))
    onnx.save(model, str(out_dir / "model.onnx"))
    (out_dir / "inputs").mkdir(exist_ok=True)
    paths = {}
    for name, array in inputs.items():
        path = out_dir / "inputs" / f"{name}.npy"
        np.save(path, np.ascontiguousarray(array, dtype=np.float32))
        paths[name] = path
    return paths


def load_weights(model_path):
    """The model's initializers as NumPy arrays (what the JAX function computes with)."""
    import onnx
    from onnx import numpy_helper
    model = onnx.load(str(model_path))
    return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}


def naive_peak_bytes(model_path):
    """Peak live bytes of the graph as written, run node by node in file order.

    Each node's outputs are allocated when it runs and freed after their last consumer; graph
    inputs, outputs and initializers are not counted, nothing is computed in place. A reference
    point for what an unplanned executor needs, not a measurement of any framework.
    """
    import onnx
    model = onnx.shape_inference.infer_shapes(onnx.load(str(model_path)), strict_mode=True)
    g = model.graph
    sizes = {}
    for vi in list(g.value_info) + list(g.output):
        t = vi.type.tensor_type
        elem = np.dtype(onnx.helper.tensor_dtype_to_np_dtype(t.elem_type)).itemsize
        sizes[vi.name] = elem * int(np.prod([d.dim_value for d in t.shape.dim]))
    external = {i.name for i in g.input} | {i.name for i in g.initializer} | {o.name for o in g.output}
    last_use = {}
    for idx, node in enumerate(g.node):
        for name in node.input:
            last_use[name] = idx
    live, peak = 0, 0
    for idx, node in enumerate(g.node):
        for name in node.output:
            if name not in external:
                live += sizes[name]
        peak = max(peak, live)
        for name in set(node.input):
            if name not in external and last_use.get(name) == idx:
                live -= sizes[name]
    return peak
