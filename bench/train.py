#!/usr/bin/env python3
"""Train-step benchmark: Kiln against PyTorch (eager and torch.compile) and JAX (jit), on the CPU.

Each framework runs the same step on the same model, weights and batch: forward, loss, backward
and a plain SGD update of every weight. The models are bench/graphs.py's MLP, LeNet-5 and
transformer layer (their ONNX files give Kiln its model and the peers their weights), and
torchvision's ResNet-18 (exported to ONNX for Kiln; PyTorch trains the torchvision module, JAX a
jax.numpy ResNet-18 with the export's weights). Each framework runs in its own process, pinned to
the same CPUs with the same thread count, one after the other.

    python3 bench/train.py                        # every graph, 2 threads
    python3 bench/train.py --graphs lenet --frameworks kiln,torch
    python3 bench/train.py --graphs resnet18 --rounds 3   # interleaved rounds on a busy machine

Needs numpy and onnx, plus torch and jax[cpu] for the peers (a missing peer is reported and
skipped). Kiln's kilnc and kiln-run come from build/bin (--kiln-bin). Writes
bench/out/train/results.md and .json.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import graphs  # noqa: E402

LEARNING_RATE = 0.01
# Peak resident memory of the process that ran the steps, KiB (kiln: kiln-run's).
PEAK_KIB = [0]
FRAMEWORKS = ["kiln", "torch", "torch-compile", "jax"]

# How each graph trains: the loss on its output, and which initializers are weights.
TRAINING = {
    "mlp_b64": dict(loss="softmax-cross-entropy", classes=10, trainable=".*"),
    "mlp_b256": dict(loss="softmax-cross-entropy", classes=10, trainable=".*"),
    "lenet": dict(loss="softmax-cross-entropy", classes=10, trainable=".*"),
    # Its constants (reshape shapes, sqrt(d)) are not weights.
    "transformer_layer": dict(loss="mse", trainable=".*_[wbg]"),
    # torchvision's ResNet-18 (10 classes) on a batch of 8 images of 112x112, exported with its
    # batch normalizations (which train with batch statistics in every framework).
    "resnet18": dict(loss="softmax-cross-entropy", classes=10, trainable=".*",
                     torchvision="resnet18", input=(8, 3, 112, 112)),
}


def torchvision_model(spec):
    import torch
    import torchvision
    torch.manual_seed(0)
    return getattr(torchvision.models, spec["torchvision"])(num_classes=spec["classes"])


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--graphs", default=",".join(TRAINING), help="comma-separated graph names")
    p.add_argument("--frameworks", default=",".join(FRAMEWORKS))
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=50, help="timed steps per framework")
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--rounds", type=int, default=1,
                   help="run every framework this many times, interleaved, and report the median "
                        "of the rounds' medians (a shared machine's load moves single runs)")
    p.add_argument("--kiln-bin", default=str(HERE.parent / "build" / "bin"))
    p.add_argument("--out", default=str(HERE / "out" / "train"))
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--graph", help=argparse.SUPPRESS)
    return p.parse_args()


def pin(threads):
    cpus = sorted(os.sched_getaffinity(0))[:threads]
    os.sched_setaffinity(0, set(cpus))
    os.environ["OMP_NUM_THREADS"] = str(threads)


def prepare(graph_name, out):
    """Writes the model, a batch and its labels; returns (dir, weights, inputs, labels)."""
    spec = TRAINING[graph_name]
    directory = out / graph_name
    if "torchvision" in spec:
        import torch
        model = torchvision_model(spec).eval()
        (directory / "inputs").mkdir(parents=True, exist_ok=True)
        x = np.random.default_rng(3).standard_normal(spec["input"], dtype=np.float32)
        np.save(directory / "inputs" / "x.npy", x)
        # No constant folding: it would fold each batch normalization into its convolution.
        torch.onnx.export(model, (torch.tensor(x),), str(directory / "model.onnx"), dynamo=False,
                          opset_version=17, input_names=["x"], output_names=["logits"],
                          do_constant_folding=False)
        paths = {"x": directory / "inputs" / "x.npy"}
    else:
        paths = graphs.generate(graphs.GRAPHS[graph_name], directory)
    inputs = {name: np.load(path) for name, path in paths.items()}
    weights = graphs.load_weights(directory / "model.onnx")
    import re
    trainable = {k: v for k, v in weights.items()
                 if v.dtype == np.float32 and v.ndim > 0 and re.fullmatch(spec["trainable"], k)
                 and "running_" not in k}
    rng = np.random.default_rng(7)
    import onnx
    model = onnx.load(str(directory / "model.onnx"))
    out_dims = [d.dim_value for d in model.graph.output[0].type.tensor_type.shape.dim]
    if spec["loss"] == "mse":
        labels = rng.standard_normal(out_dims, dtype=np.float32)
    else:
        labels = rng.integers(0, spec["classes"], out_dims[0]).astype(np.int64)
    np.save(directory / "labels.npy", labels)
    return directory, weights, trainable, inputs, labels


def timed(step, steps, warmup):
    for _ in range(warmup):
        step()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        times.append((time.perf_counter() - start) * 1e3)
    return times


# ---- workers ----------------------------------------------------------------------------------

def worker_kiln(args, directory, weights, trainable, inputs, labels):
    spec = TRAINING[args.graph]
    step = directory / "step.kiln"
    kilnc = Path(args.kiln_bin) / "kilnc"
    start = time.perf_counter()
    subprocess.run([str(kilnc), str(directory / "model.onnx"), "--train", f"--loss={spec['loss']}",
                    f"--trainable={spec['trainable']}", f"--learning-rate={LEARNING_RATE}",
                    "-o", str(step)], check=True, capture_output=True, text=True)
    compile_s = time.perf_counter() - start
    info = subprocess.run([str(Path(args.kiln_bin) / "kiln-run"), str(step), "--info"],
                          check=True, capture_output=True, text=True).stdout
    # As a training program runs it: the state (weights, the step counter) stays in the
    # runtime, set by the artifact's init entry to the model's initializers, and each run is the
    # next step, updating it in place where kilnc proved that safe (`--info` says `in-place`).
    cmd = [str(Path(args.kiln_bin) / "kiln-run"), str(step), "--resident-state"]
    for line in info.splitlines():
        fields = line.split()
        if not fields or fields[0] != "input" or any(f.startswith("state=") for f in fields):
            continue
        name = fields[1]
        if name in inputs:
            path = directory / "inputs" / f"{name}.npy"
        elif name == "labels":
            path = directory / "labels.npy"
        else:
            raise SystemExit(f"kiln: the train step has an input '{name}' the benchmark has no data for")
        cmd += ["--input", f"{name}={path}"]
    timing = directory / "kiln-timing.json"
    cmd += ["--repeat", str(args.steps), "--warmup", str(args.warmup), "--threads", str(args.threads),
            "--timing-json", str(timing)]
    # wait4 gives this child's own peak RSS (not kilnc's).
    process = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit("kiln-run failed: " + process.stderr.read().decode()[-500:])
    PEAK_KIB[0] = usage.ru_maxrss
    return json.loads(timing.read_text())["run_ms"], compile_s


def worker_torch(args, directory, weights, trainable, inputs, labels, compiled):
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(args.threads)
    spec = TRAINING[args.graph]
    if "torchvision" in spec:
        module = torchvision_model(spec).train()
        params = list(module.parameters())

        def forward(x):
            return (module(x),)
    else:
        w = {k: torch.tensor(v, requires_grad=k in trainable) for k, v in weights.items()}
        params = [w[k] for k in trainable]
        forward = graphs.GRAPHS[args.graph].torch_fn(w)
    x = [torch.tensor(inputs[name]) for name in inputs]
    y = torch.tensor(labels)
    mse = TRAINING[args.graph]["loss"] == "mse"

    def loss_fn(*x):
        out = forward(*x)[0]
        return F.mse_loss(out, y) if mse else F.cross_entropy(out, y)
    if compiled:
        loss_fn = torch.compile(loss_fn)

    def step():
        loss = loss_fn(*x)
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for p, g in zip(params, grads):
                p.sub_(LEARNING_RATE * g)
    start = time.perf_counter()
    step()  # torch.compile compiles here
    return timed(step, args.steps, args.warmup), time.perf_counter() - start


# BasicBlocks per stage of the torchvision ResNets the JAX worker writes out.
RESNET_BLOCKS = {"resnet18": (2, 2, 2, 2)}


def onnx_aliases(model_path):
    """{name: initializer} for each Identity node that renames an initializer.

    The exporter stores equal initializers once (every fresh batch normalization's ones and
    zeros) and gives the other names through Identity nodes."""
    import onnx
    model = onnx.load(str(model_path))
    stored = {t.name for t in model.graph.initializer}
    return {n.output[0]: n.input[0] for n in model.graph.node
            if n.op_type == "Identity" and n.input[0] in stored}


def resnet_jax(spec, weights, aliases):
    """torchvision's BasicBlock ResNet in jax.numpy: NCHW, batch normalizations in training mode.

    Returns (params, stats, forward). params (what SGD trains) and stats (the running means and
    variances) map torchvision's state-dict names to the ONNX export's initializers of those
    names; forward(params, stats, x) -> (logits, updated stats), the stats updated as PyTorch
    does (momentum 0.1, the running variance unbiased)."""
    import jax
    import jax.numpy as jnp
    blocks = RESNET_BLOCKS[spec["torchvision"]]
    eps, momentum = 1e-5, 0.1
    convs, norms = ["conv1"], ["bn1"]
    for i, count in enumerate(blocks):
        for b in range(count):
            name = f"layer{i + 1}.{b}"
            convs += [f"{name}.conv1", f"{name}.conv2"]
            norms += [f"{name}.bn1", f"{name}.bn2"]
            if i > 0 and b == 0:
                convs.append(f"{name}.downsample.0")
                norms.append(f"{name}.downsample.1")

    def get(name):
        return jnp.asarray(weights[aliases.get(name, name)])
    params = {f"{n}.weight": get(f"{n}.weight") for n in convs}
    params.update({f"{n}.{k}": get(f"{n}.{k}") for n in norms for k in ("weight", "bias")})
    params.update({k: get(k) for k in ("fc.weight", "fc.bias")})
    stats = {f"{n}.{k}": get(f"{n}.{k}") for n in norms for k in ("running_mean", "running_var")}

    def forward(p, s, x):
        new = {}

        def conv(t, name, stride, pad):
            return jax.lax.conv_general_dilated(t, p[f"{name}.weight"], (stride, stride), [(pad, pad)] * 2,
                                                dimension_numbers=("NCHW", "OIHW", "NCHW"))

        def norm(t, name):
            mean = jnp.mean(t, axis=(0, 2, 3))
            centered = t - mean[:, None, None]
            var = jnp.mean(jnp.square(centered), axis=(0, 2, 3))
            scale = jax.lax.rsqrt(var + eps) * p[f"{name}.weight"]
            n = t.size // t.shape[1]
            mean, var = jax.lax.stop_gradient(mean), jax.lax.stop_gradient(var)
            new[f"{name}.running_mean"] = (1 - momentum) * s[f"{name}.running_mean"] + momentum * mean
            new[f"{name}.running_var"] = ((1 - momentum) * s[f"{name}.running_var"]
                                          + momentum * var * (n / (n - 1)))
            return centered * scale[:, None, None] + p[f"{name}.bias"][:, None, None]

        t = jax.nn.relu(norm(conv(x, "conv1", 2, 3), "bn1"))
        t = jax.lax.reduce_window(t, -jnp.inf, jax.lax.max, (1, 1, 3, 3), (1, 1, 2, 2),
                                  ((0, 0), (0, 0), (1, 1), (1, 1)))
        for i, count in enumerate(blocks):
            for b in range(count):
                name = f"layer{i + 1}.{b}"
                stride = 2 if i > 0 and b == 0 else 1
                out = jax.nn.relu(norm(conv(t, f"{name}.conv1", stride, 1), f"{name}.bn1"))
                out = norm(conv(out, f"{name}.conv2", 1, 1), f"{name}.bn2")
                if f"{name}.downsample.0.weight" in p:
                    t = norm(conv(t, f"{name}.downsample.0", stride, 0), f"{name}.downsample.1")
                t = jax.nn.relu(out + t)
        t = jnp.mean(t, axis=(2, 3))
        return t @ p["fc.weight"].T + p["fc.bias"], new
    return params, stats, forward


def worker_jax(args, directory, weights, trainable, inputs, labels):
    import jax
    import jax.numpy as jnp
    spec = TRAINING[args.graph]
    if "torchvision" in spec:
        # Every weight of the torchvision module trains, as in the PyTorch worker.
        params, stats, forward = resnet_jax(spec, weights, onnx_aliases(directory / "model.onnx"))
    else:
        graph = graphs.GRAPHS[args.graph]
        frozen = {k: jnp.asarray(v) for k, v in weights.items() if k not in trainable}
        params = {k: jnp.asarray(v) for k, v in trainable.items()}
        stats = {}

        def forward(p, s, *x):
            return graph.jax_fn({**frozen, **p})(*x)[0], s
    x = [jnp.asarray(inputs[name]) for name in inputs]
    y = jnp.asarray(labels)
    mse = spec["loss"] == "mse"

    def loss_fn(p, s, *x):
        out, s = forward(p, s, *x)
        if mse:
            return jnp.mean((out - y) ** 2), s
        logp = jax.nn.log_softmax(out, axis=1)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=1)), s

    @jax.jit
    def update(p, s, *x):
        (loss, s), grads = jax.value_and_grad(loss_fn, has_aux=True)(p, s, *x)
        return loss, jax.tree_util.tree_map(lambda a, g: a - LEARNING_RATE * g, p, grads), s

    state = [params, stats]

    def step():
        loss, state[0], state[1] = update(*state, *x)
        loss.block_until_ready()
    start = time.perf_counter()
    step()
    return timed(step, args.steps, args.warmup), time.perf_counter() - start


def run_worker(args):
    pin(args.threads)
    out = Path(args.out)
    prepared = prepare(args.graph, out)
    if args.worker == "kiln":
        times, compile_s = worker_kiln(args, *prepared)
    elif args.worker in ("torch", "torch-compile"):
        times, compile_s = worker_torch(args, *prepared, compiled=args.worker == "torch-compile")
    else:
        times, compile_s = worker_jax(args, *prepared)
    import resource
    peak = PEAK_KIB[0] or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"times_ms": times, "compile_s": compile_s, "peak_rss_kib": peak}))


# ---- driver -----------------------------------------------------------------------------------

def versions():
    found = {}
    for module in ("torch", "jax", "numpy", "onnx"):
        try:
            found[module] = __import__(module).__version__
        except Exception:
            found[module] = "not installed"
    return found


def main():
    args = parse_args()
    if args.worker:
        return run_worker(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    selected = args.frameworks.split(",")
    rows, everything = [], {}
    for graph_name in args.graphs.split(","):
        results = {}
        # Rounds interleave the frameworks (each round starting one later), so
        # that a shared machine's slow minutes fall on all of them alike.
        for round_index in range(args.rounds):
            order = selected[round_index % len(selected):] + selected[:round_index % len(selected)]
            for framework in order:
                if "error" in results.get(framework, {}):
                    continue
                cmd = [sys.executable, __file__, "--worker", framework, "--graph", graph_name,
                       "--threads", str(args.threads), "--steps", str(args.steps), "--warmup",
                       str(args.warmup), "--kiln-bin", args.kiln_bin, "--out", args.out]
                done = subprocess.run(cmd, capture_output=True, text=True)
                if done.returncode != 0:
                    reason = (done.stderr.strip().splitlines() or ["failed"])[-1]
                    results[framework] = {"error": reason[:200]}
                    print(f"{graph_name}: {framework} failed: {reason[:200]}", file=sys.stderr)
                    continue
                result = json.loads(done.stdout.strip().splitlines()[-1])
                rounds = results.get(framework, {}).get("round_medians_ms", [])
                rounds.append(statistics.median(result["times_ms"]))
                result["round_medians_ms"] = rounds
                result["median_ms"] = statistics.median(rounds)
                results[framework] = result
                print(f"{graph_name}: {framework} {rounds[-1]:.3f} ms/step (round {round_index + 1})",
                      file=sys.stderr)
        everything[graph_name] = results
        rows.append((graph_name, results))

    peers = [f for f in selected if f != "kiln"]
    header = ["graph"] + [f"{f} ms" for f in selected] + ([f"kiln vs {p}" for p in peers] if "kiln" in selected else [])
    header += ["kiln vs best peer"] if "kiln" in selected and peers else []
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for graph_name, results in rows:
        cells = [graph_name]
        for f in selected:
            r = results.get(f, {})
            cells.append(f"{r['median_ms']:.3f}" if "median_ms" in r else f"error: {r.get('error', '?')}")
        kiln = results.get("kiln", {}).get("median_ms")
        best = None
        for p in peers:
            m = results.get(p, {}).get("median_ms")
            if "kiln" in selected:
                cells.append(f"{m / kiln:.2f}x" if kiln and m else "-")
            if m:
                best = m if best is None else min(best, m)
        if "kiln" in selected and peers:
            cells.append(f"{best / kiln:.2f}x" if kiln and best else "-")
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Peak resident memory of the process that ran the steps (MiB; Kiln: kiln-run, "
              "the peers: the Python process with its framework loaded), and compile time (s):", "",
              "| graph | " + " | ".join(f"{f} MiB" for f in selected) + " | "
              + " | ".join(f"{f} compile s" for f in selected) + " |",
              "|" + "---|" * (1 + 2 * len(selected))]
    for graph_name, results in rows:
        mem = [f"{results[f]['peak_rss_kib'] / 1024:.0f}" if "peak_rss_kib" in results.get(f, {}) else "-"
               for f in selected]
        comp = [f"{results[f]['compile_s']:.2f}" if "compile_s" in results.get(f, {}) else "-" for f in selected]
        lines.append("| " + " | ".join([graph_name] + mem + comp) + " |")
    command = "python3 bench/train.py " + " ".join(sys.argv[1:])
    meta = (f"Command: `{command}`  \n{time.strftime('%Y-%m-%d %H:%M')}, {platform.processor() or platform.machine()}, "
            f"{args.threads} threads, {args.steps} timed steps after {args.warmup} warm-ups"
            + (f", the median of {args.rounds} interleaved rounds' medians" if args.rounds > 1 else "")
            + f", load {os.getloadavg()[0]:.2f}; versions {versions()}.  \n"
            f"A ratio above 1 means Kiln's step is faster. Each step: forward, loss, backward, SGD update.")
    text = meta + "\n\n" + "\n".join(lines) + "\n"
    (out / "results.md").write_text(text)
    (out / "results.json").write_text(json.dumps(everything, indent=1))
    print(text)


if __name__ == "__main__":
    main()
