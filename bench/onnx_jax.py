"""ONNX -> JAX converter for the benchmarks, which time JAX/XLA on the same ONNX models as Kiln.
`convert(path)` turns an ONNX graph (opset 17 semantics) into `fn(params, *inputs)`, a function of
jax.numpy and jax.lax calls for `jax.jit`: the float initializers (the weights) are `params`, an
argument, so they live in device buffers instead of being baked into the program, while integer
and boolean initializers and everything computed from them and from shapes alone stay numpy
arrays, evaluated with numpy during tracing, which folds the exporters' shape arithmetic away.
Convolutions and matrix products run in full f32 (`Precision.HIGHEST`). It covers the ops of
bench/models.py's models as torch.onnx exports them: Conv, BatchNormalization, MaxPool,
AveragePool and GlobalAveragePool for the CNNs (ResNet, MobileNetV2, EfficientNet, SqueezeNet,
DenseNet, Inception, VGG, ConvNeXt); MatMul, Gemm, Softmax, LayerNormalization, Erf and Tanh
for the transformers (ViT, BERT, GPT-2); the activations (Relu, Clip, Sigmoid, ...), elementwise
arithmetic and comparisons, and the shape and indexing ops (Shape, Reshape, Transpose, Gather,
Slice, Split, Concat, Expand, Where, Cast, ...) around them. Any other op raises
NotImplementedError from `convert`.
"""
import math
from collections.abc import Callable
from functools import reduce

import jax
import jax.numpy as jnp
import numpy as np
import onnx
from jax import lax
from onnx import helper, numpy_helper

HIGHEST = lax.Precision.HIGHEST


# ---------------------------------------------------------------------------------------------
# Helpers. Every op is `op(xp, ins, at)`: `xp` is numpy when all inputs are static numpy arrays
# and jax.numpy otherwise, `ins` the inputs (None for an omitted one), `at` the attributes. Ops
# that never take part in shape arithmetic (Conv, pooling, Softmax, Erf, ...) always use jax.

def _opt(ins, k):
    return ins[k] if len(ins) > k else None


def _ints(v):
    return tuple(int(x) for x in np.asarray(v).reshape(-1))


def _axes(ins, at):
    """The axes of Squeeze, Unsqueeze and the reductions: the second input, or else the attribute."""
    return at.get("axes") if _opt(ins, 1) is None else _ints(ins[1])


def _exact(xp):
    """Keyword arguments asking jax.numpy for full f32 products (numpy needs none)."""
    return {} if xp is np else {"precision": HIGHEST}


def _pads(at, spatial, kernel, strides, dilations):
    """ONNX pads / auto_pad as [(begin, end)] per spatial axis."""
    mode, n = at.get("auto_pad", "NOTSET"), len(kernel)
    if mode in ("SAME_UPPER", "SAME_LOWER"):
        pads = []
        for size, k, s, d in zip(spatial, kernel, strides, dilations):
            total = max(0, (-(-size // s) - 1) * s + (k - 1) * d + 1 - size)
            begin = total // 2 if mode == "SAME_UPPER" else total - total // 2
            pads.append((begin, total - begin))
        return pads
    p = at.get("pads", (0,) * 2 * n) if mode == "NOTSET" else (0,) * 2 * n
    return list(zip(p[:n], p[n:]))


def _window(x, at):
    """A pooling window: its lax.reduce_window arguments, the explicit pads, and the extra end
    padding ceil_mode adds (windows starting in the end padding are dropped, as in PyTorch)."""
    k = tuple(at["kernel_shape"])
    n = len(k)
    s, d = tuple(at.get("strides", (1,) * n)), tuple(at.get("dilations", (1,) * n))
    pads = _pads(at, x.shape[2:], k, s, d)
    extra = [0] * n
    if at.get("ceil_mode"):
        for j, (size, (lo, hi)) in enumerate(zip(x.shape[2:], pads)):
            span = (k[j] - 1) * d[j] + 1
            out = -(-(size + lo + hi - span) // s[j]) + 1
            if (out - 1) * s[j] >= size + lo:
                out -= 1
            extra[j] = max(0, (out - 1) * s[j] + span - (size + lo + hi))
    window = dict(window_dimensions=(1, 1) + k, window_strides=(1, 1) + s, window_dilation=(1, 1) + d)
    return window, pads, extra


# ---------------------------------------------------------------------------------------------
# Ops with some logic of their own.

def _constant(xp, ins, at):
    if "value" in at:
        return at["value"]
    for key, dtype in (("value_float", np.float32), ("value_floats", np.float32),
                       ("value_int", np.int64), ("value_ints", np.int64)):
        if key in at:
            return np.array(at[key], dtype)
    raise NotImplementedError(f"onnx_jax: Constant with {sorted(at)}")


def _constant_of_shape(xp, ins, at):
    value = at.get("value", np.zeros(1, np.float32))
    return np.full(_ints(ins[0]), value.reshape(-1)[0], value.dtype)


def _cast(xp, ins, at, dtype=None):
    dtype = np.dtype(dtype or helper.tensor_dtype_to_np_dtype(at["to"]))
    return ins[0].astype(dtype if xp is np else jax.dtypes.canonicalize_dtype(dtype))


def _div(xp, ins, at):
    a, b = ins
    if np.issubdtype(a.dtype, np.integer):  # ONNX integer division truncates toward zero
        return xp.sign(a) * xp.sign(b) * (xp.abs(a) // xp.abs(b))
    return a / b


def _pow(xp, ins, at):
    a, b = ins
    if (xp is not np and isinstance(b, np.ndarray) and b.size == 1 and b.ndim <= a.ndim
            and float(b.flat[0]).is_integer()):
        return lax.integer_pow(a, int(b.flat[0]))  # x ** 3 as multiplications, like JAX code would
    return xp.power(a, b).astype(a.dtype)


def _clip(xp, ins, at):
    x, lo, hi = ins[0], _opt(ins, 1), _opt(ins, 2)
    lo = at.get("min") if lo is None else lo
    hi = at.get("max") if hi is None else hi
    if lo is not None:
        x = xp.maximum(x, lo)
    return x if hi is None else xp.minimum(x, hi)


def _conv(xp, ins, at):
    x, w, b = ins[0], ins[1], _opt(ins, 2)
    k = w.shape[2:]
    n = len(k)
    s, d = tuple(at.get("strides", (1,) * n)), tuple(at.get("dilations", (1,) * n))
    y = lax.conv_general_dilated(x, w, s, _pads(at, x.shape[2:], k, s, d), rhs_dilation=d,
                                 feature_group_count=at.get("group", 1), precision=HIGHEST)
    return y if b is None else y + b.reshape((-1,) + (1,) * n)


def _batch_norm(xp, ins, at):
    x, scale, bias, mean, var = ins[:5]
    shape = (-1,) + (1,) * (x.ndim - 2)
    k = scale / xp.sqrt(var + at.get("epsilon", 1e-5))
    return (x - mean.reshape(shape)) * k.reshape(shape) + bias.reshape(shape)


def _max_pool(xp, ins, at):
    x = ins[0]
    window, pads, extra = _window(x, at)
    padding = [(0, 0), (0, 0)] + [(lo, hi + e) for (lo, hi), e in zip(pads, extra)]
    return lax.reduce_window(x, np.array(-np.inf, x.dtype), lax.max, padding=padding, **window)


def _average_pool(xp, ins, at):
    x = ins[0]
    window, pads, extra = _window(x, at)
    padding = [(0, 0), (0, 0)] + [(lo, hi + e) for (lo, hi), e in zip(pads, extra)]
    total = lax.reduce_window(x, np.array(0, x.dtype), lax.add, padding=padding, **window)
    ones = np.ones((1, 1) + x.shape[2:], x.dtype)
    if at.get("count_include_pad"):  # the explicit pads count, the ceil_mode extra does not
        ones = np.pad(ones, [(0, 0), (0, 0)] + pads, constant_values=1)
        padding = [(0, 0), (0, 0)] + [(0, e) for e in extra]
    count = lax.reduce_window(ones, np.array(0, x.dtype), lax.add, padding=padding, **window)
    return total / count


def _global_pool(reducer):
    def op(xp, ins, at):
        return getattr(xp, reducer)(ins[0], axis=tuple(range(2, ins[0].ndim)), keepdims=True)
    return op


def _gemm(xp, ins, at):
    a, b, c = ins[0], ins[1], _opt(ins, 2)
    a = a.T if at.get("transA") else a
    b = b.T if at.get("transB") else b
    y = xp.matmul(a, b, **_exact(xp))
    if at.get("alpha", 1.0) != 1.0:
        y = at["alpha"] * y
    if c is not None:
        y = y + (c if at.get("beta", 1.0) == 1.0 else at["beta"] * c)
    return y


def _layer_norm(xp, ins, at):
    x, scale, bias = ins[0], ins[1], _opt(ins, 2)
    axes = tuple(range(at.get("axis", -1) % x.ndim, x.ndim))
    mean = xp.mean(x, axis=axes, keepdims=True)
    centred = x - mean
    inv_std = 1 / xp.sqrt(xp.mean(centred * centred, axis=axes, keepdims=True) + at.get("epsilon", 1e-5))
    y = centred * inv_std * scale
    return (y if bias is None else y + bias), mean, inv_std


def _reduce(reducer):
    def op(xp, ins, at):
        x, axes = ins[0], _axes(ins, at)
        if axes is None or len(axes) == 0:
            if at.get("noop_with_empty_axes"):
                return x
            axes = range(x.ndim)
        return getattr(xp, reducer)(x, axis=_ints(axes), keepdims=bool(at.get("keepdims", 1)))
    return op


def _reshape(xp, ins, at):
    x, shape = ins[0], _ints(ins[1])
    if not at.get("allowzero"):
        shape = tuple(x.shape[i] if s == 0 else s for i, s in enumerate(shape))
    return xp.reshape(x, shape)


def _flatten(xp, ins, at):
    x = ins[0]
    axis = at.get("axis", 1)
    axis += x.ndim if axis < 0 else 0
    return xp.reshape(x, (math.prod(x.shape[:axis]), math.prod(x.shape[axis:])))


def _gather(xp, ins, at):
    x, idx = ins
    axis = at.get("axis", 0)
    idx = xp.where(idx < 0, idx + x.shape[axis], idx)
    if xp is np:
        return np.take(x, idx, axis=axis)
    return jnp.take(x, idx, axis=axis, mode="clip")


def _slice(xp, ins, at):
    x, starts, ends = ins[:3]
    axes = _ints(ins[3]) if _opt(ins, 3) is not None else range(len(starts))
    steps = _ints(ins[4]) if _opt(ins, 4) is not None else (1,) * len(starts)
    index = [slice(None)] * x.ndim
    for start, end, axis, step in zip(_ints(starts), _ints(ends), axes, steps):
        dim = x.shape[axis]
        start, end = start + dim if start < 0 else start, end + dim if end < 0 else end
        if step > 0:
            start, end = min(max(start, 0), dim), min(max(end, 0), dim)
        else:  # end -1 is "past the first element", which a Python slice spells None
            start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
        index[axis] = slice(start, None if end < 0 else end, step)
    return x[tuple(index)]


def _split(xp, ins, at):
    x, sizes = ins[0], _opt(ins, 1)
    axis = at.get("axis", 0)
    sizes = at.get("split") if sizes is None else _ints(sizes)
    if sizes is None:  # num_outputs parts, the last one smaller when the axis does not divide
        n, dim = at["num_outputs"], x.shape[axis]
        part = -(-dim // n)
        sizes = (part,) * (n - 1) + (dim - part * (n - 1),)
    return tuple(xp.split(x, np.cumsum(sizes)[:-1].tolist(), axis=axis))


def _trilu(xp, ins, at):
    k = _opt(ins, 1)
    k = 0 if k is None else int(k)
    return (xp.triu if at.get("upper", 1) else xp.tril)(ins[0], k)


def _pad(xp, ins, at):
    x, pads, value, axes = ins[0], _ints(ins[1]), _opt(ins, 2), _opt(ins, 3)
    axes = range(x.ndim) if axes is None else [a % x.ndim for a in _ints(axes)]
    widths = [(0, 0)] * x.ndim
    for j, axis in enumerate(axes):
        widths[axis] = (pads[j], pads[j + len(axes)])
    mode = at.get("mode", "constant")
    if mode == "constant":
        return xp.pad(x, widths, constant_values=0 if value is None else value.reshape(()))
    return xp.pad(x, widths, mode=mode)


def _same(name):
    """An op that is the numpy / jax.numpy function `name` of its inputs."""
    return lambda xp, ins, at: getattr(xp, name)(*ins)


def _variadic(name):
    return lambda xp, ins, at: reduce(getattr(xp, name), ins)


SAME_AS_NUMPY = {
    "Add": "add", "Sub": "subtract", "Mul": "multiply", "Equal": "equal", "Less": "less",
    "LessOrEqual": "less_equal", "Greater": "greater", "GreaterOrEqual": "greater_equal",
    "Not": "logical_not", "And": "logical_and", "Or": "logical_or", "Where": "where",
    "Tanh": "tanh", "Sqrt": "sqrt", "Exp": "exp", "Log": "log", "Neg": "negative", "Abs": "abs",
    "Floor": "floor", "Ceil": "ceil", "Reciprocal": "reciprocal",
}


# ---------------------------------------------------------------------------------------------

OPS = {
    **{op: _same(name) for op, name in SAME_AS_NUMPY.items()},
    # Elementwise.
    "Div": _div,
    "Pow": _pow,
    "Mod": lambda xp, i, a: (xp.fmod if a.get("fmod") else xp.mod)(i[0], i[1]),
    "Max": _variadic("maximum"),
    "Min": _variadic("minimum"),
    "Sum": _variadic("add"),
    "Cast": _cast,
    "CastLike": lambda xp, i, a: _cast(xp, i, a, i[1].dtype),
    "Relu": lambda xp, i, a: xp.maximum(i[0], 0),
    "LeakyRelu": lambda xp, i, a: xp.where(i[0] >= 0, i[0], a.get("alpha", 0.01) * i[0]),
    "Clip": _clip,
    "Sigmoid": lambda xp, i, a: 1 / (1 + np.exp(-i[0])) if xp is np else jax.nn.sigmoid(i[0]),
    "HardSigmoid": lambda xp, i, a: xp.clip(a.get("alpha", 0.2) * i[0] + a.get("beta", 0.5), 0, 1),
    "HardSwish": lambda xp, i, a: i[0] * xp.clip(i[0] * (1 / 6) + 0.5, 0, 1),
    "Erf": lambda xp, i, a: lax.erf(i[0]),
    "Identity": lambda xp, i, a: i[0],
    "Dropout": lambda xp, i, a: i[0],
    # Convolution, normalization, pooling, products.
    "Conv": _conv,
    "BatchNormalization": _batch_norm,
    "LayerNormalization": _layer_norm,
    "MaxPool": _max_pool,
    "AveragePool": _average_pool,
    "GlobalAveragePool": _global_pool("mean"),
    "GlobalMaxPool": _global_pool("max"),
    "MatMul": lambda xp, i, a: xp.matmul(i[0], i[1], **_exact(xp)),
    "Gemm": _gemm,
    "Einsum": lambda xp, i, a: xp.einsum(a["equation"], *i, **_exact(xp)),
    "Softmax": lambda xp, i, a: jax.nn.softmax(i[0], axis=a.get("axis", -1)),
    "LogSoftmax": lambda xp, i, a: jax.nn.log_softmax(i[0], axis=a.get("axis", -1)),
    "ReduceMean": _reduce("mean"),
    "ReduceSum": _reduce("sum"),
    "ReduceMax": _reduce("max"),
    "ReduceMin": _reduce("min"),
    "ReduceProd": _reduce("prod"),
    # Shapes, layout and indexing.
    "Constant": _constant,
    "ConstantOfShape": _constant_of_shape,
    "Shape": lambda xp, i, a: np.array(i[0].shape[a.get("start", 0):a.get("end")], np.int64),
    "Size": lambda xp, i, a: np.array(math.prod(i[0].shape), np.int64),
    "Range": lambda xp, i, a: np.arange(*(v.item() for v in i)).astype(i[0].dtype),
    "Reshape": _reshape,
    "Flatten": _flatten,
    "Transpose": lambda xp, i, a: xp.transpose(i[0], a.get("perm")),
    "Squeeze": lambda xp, i, a: xp.squeeze(i[0], axis=_axes(i, a)),
    "Unsqueeze": lambda xp, i, a: xp.expand_dims(i[0], _axes(i, a)),
    "Expand": lambda xp, i, a: xp.broadcast_to(i[0], np.broadcast_shapes(i[0].shape, _ints(i[1]))),
    "Tile": lambda xp, i, a: xp.tile(i[0], _ints(i[1])),
    "Concat": lambda xp, i, a: xp.concatenate(i, axis=a["axis"]),
    "Split": _split,
    "Slice": _slice,
    "Gather": _gather,
    "Trilu": _trilu,
    "Pad": _pad,
}


def _attributes(node):
    at = {}
    for attr in node.attribute:
        value = helper.get_attribute_value(attr)
        if isinstance(value, bytes):
            value = value.decode()
        elif isinstance(value, onnx.TensorProto):
            value = numpy_helper.to_array(value)
        elif isinstance(value, list):
            value = tuple(value)
        at[attr.name] = value
    if node.op_type == "Split":
        at.setdefault("num_outputs", len(node.output))
    return at


def convert(path: str) -> tuple[Callable, dict[str, np.ndarray]]:
    """fn, params = convert("model.onnx"); outs = fn(params, *inputs) -> tuple of the graph's
    outputs (in graph output order). `params` maps the float initializers' names to numpy arrays;
    `inputs` are the graph inputs that are not initializers, in graph order."""
    graph = onnx.load(path).graph
    params, static = {}, {}
    for init in graph.initializer:
        value = numpy_helper.to_array(init)
        (params if np.issubdtype(value.dtype, np.floating) else static)[init.name] = value
    input_names = [i.name for i in graph.input if i.name not in params and i.name not in static]
    output_names = [o.name for o in graph.output]
    nodes = []
    for node in graph.node:
        if node.op_type not in OPS or node.domain not in ("", "ai.onnx"):
            raise NotImplementedError(f"onnx_jax: no conversion for {node.op_type} (node {node.name})")
        nodes.append((OPS[node.op_type], list(node.input), list(node.output), _attributes(node)))

    def fn(weights, *inputs):
        if len(inputs) != len(input_names):
            raise TypeError(f"onnx_jax: {len(input_names)} inputs expected ({', '.join(input_names)}), "
                            f"{len(inputs)} given")
        env = {**static, **weights, **dict(zip(input_names, inputs))}
        for op, ins, outs, at in nodes:
            args = [env[name] if name else None for name in ins]
            static_args = all(isinstance(a, np.ndarray) for a in args if a is not None)
            results = op(np if static_args else jnp, args, at)
            for name, value in zip(outs, results if isinstance(results, tuple) else (results,)):
                if name:
                    env[name] = np.asarray(value) if isinstance(value, np.generic) else value
        return tuple(env[name] for name in output_names)

    return fn, params
