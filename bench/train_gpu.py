#!/usr/bin/env python3
"""GPU train-step benchmark: Kiln against PyTorch (eager and torch.compile) and JAX (jit) on one GPU.

Each framework runs the same step on the same model, weights and batch: forward, loss, backward
and a plain SGD update of every weight (bench/train.py's models, losses, trainable weights and
learning rate, on the GPU in full f32). Two steps, because the compiler and the GPU need not be on
one machine:

    bench/.venv/bin/python bench/train_gpu.py prepare OUT [--graphs a,b] [--target cuda:sm_90]
    python3 OUT/train_gpu.py run OUT [--graphs a,b] [--steps 200] [--results DIR]

`prepare` (numpy, onnx, build/bin/kilnc; torch and torchvision for resnet18, which is skipped
without them) writes each graph's batch (inputs/x.npy, labels.npy), the peers' initial weights
(weights.npz; resnet18's are made by `run` from torchvision's model and train.py's seed) and the
train step that `kilnc --train --target=...` compiles (step.kiln) into OUT/<graph>/, and copies
kiln-run, train.py, graphs.py and this script into OUT. `run` (numpy, torch with CUDA, jax with
CUDA, a GPU; no kilnc) needs only OUT: it times kiln-run --resident-state (state kept on the GPU,
CUDA graph replays), PyTorch eager, torch.compile and JAX, each in a process of its own, as
rounds of back-to-back steps with one wait per round, and checks each framework's loss after one
update against PyTorch's. A framework that fails on a graph is reported in its cell and the run
goes on. Writes DIR/results.md and results.json (DIR: OUT/results).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

FRAMEWORKS = ["kiln", "torch", "torch-compile", "jax"]
PEERS = FRAMEWORKS[1:]
OPTIMIZER = "sgd"
ROUNDS = 5  # rounds of back-to-back steps, as kiln-run --repeat times them on a GPU
LOSS_TOLERANCE = 1e-3  # |loss - torch's| <= tol + tol * |torch's| after one update
START = time.perf_counter()


def log(msg=""):
    print(f"[{time.perf_counter() - START:6.1f} s] {msg}", file=sys.stderr, flush=True)


def need_numpy(onnx=False):
    try:
        import numpy  # noqa: F401
        if onnx:
            import onnx as _  # noqa: F401
    except ImportError:
        venv = HERE / ".venv" / "bin" / "python"
        if venv.exists() and Path(sys.executable).resolve() != venv.resolve():
            os.execv(str(venv), [str(venv), str(Path(__file__).resolve())] + sys.argv[1:])
        sys.exit(f"error: train_gpu.py needs numpy{' and onnx' if onnx else ''}: run bench/run.sh once "
                 "(it creates bench/.venv) or install them")


def import_train():
    """bench/train.py (TRAINING, LEARNING_RATE, the ResNet-18 of both peers), from beside this file."""
    sys.path.insert(0, str(HERE))
    import train
    return train


def graph_names(text, known):
    names = list(known) if not text else [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown:
        sys.exit(f"error: unknown or unprepared graph(s) {', '.join(unknown)}; known: {', '.join(known)}")
    return names


def last_line(text, fallback):
    lines = [l for l in (text or "").strip().splitlines() if l.strip()]
    return (lines[-1] if lines else fallback).strip()[:300]


def kilnc_flags(spec, learning_rate):
    """The training flags bench/train.py's Kiln worker compiles with (sgd is kilnc's default)."""
    return ["--train", f"--loss={spec['loss']}", f"--trainable={spec['trainable']}",
            f"--optimizer={OPTIMIZER}", f"--learning-rate={learning_rate}"]


# ---- prepare (where kilnc is) ----------------------------------------------------------------

def prepare(args):
    need_numpy(onnx=True)
    import numpy as np
    train = import_train()
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    kilnc = Path(args.kiln_bin) / "kilnc"
    kiln_run = Path(args.kiln_bin) / "kiln-run"
    for tool in (kilnc, kiln_run):
        if not tool.exists():
            sys.exit(f"error: no {tool}; build Kiln first (ninja -C build kilnc kiln-run)")
    prepared = {"target": args.target, "learning_rate": train.LEARNING_RATE, "optimizer": OPTIMIZER,
                "graphs": {}, "skipped": {}}
    for name in graph_names(args.graphs, train.TRAINING):
        spec = train.TRAINING[name]
        if "torchvision" in spec:
            try:
                import torch  # noqa: F401
                import torchvision  # noqa: F401
            except ImportError as e:
                prepared["skipped"][name] = f"no torch/torchvision where prepare ran ({e})"
                log(f"{name}: skipped: exporting it needs torch and torchvision ({e})")
                continue
        gdir = out / name
        shutil.rmtree(gdir, ignore_errors=True)
        # train.prepare writes model.onnx, inputs/<input>.npy and labels.npy, as on the CPU.
        _, weights, _, inputs, _ = train.prepare(name, out)
        if "torchvision" not in spec:
            np.savez(gdir / "weights.npz", **weights)
        cmd = [str(kilnc), str(gdir / "model.onnx"), f"--target={args.target}"]
        cmd += kilnc_flags(spec, train.LEARNING_RATE) + ["-o", str(gdir / "step.kiln")]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        (gdir / "kilnc.log").write_text(" ".join(cmd) + "\n" + proc.stdout + proc.stderr)
        entry = {"ok": proc.returncode == 0, "kilnc_seconds": round(time.perf_counter() - t0, 2),
                 "kilnc": " ".join(cmd[:1] + ["model.onnx"] + cmd[2:-1] + ["step.kiln"]),
                 "inputs": list(inputs)}
        if proc.returncode != 0:
            entry["error"] = last_line(proc.stderr, f"kilnc exit {proc.returncode}")
        elif not args.keep_onnx:
            (gdir / "model.onnx").unlink()  # step.kiln and weights.npz hold what run needs
        prepared["graphs"][name] = entry
        log(f"{name}: {'compiled' if entry['ok'] else 'kilnc failed: ' + entry['error']} "
            f"({entry['kilnc_seconds']} s)")
    shutil.copy2(kiln_run, out / "kiln-run")
    for f in ("train_gpu.py", "train.py", "graphs.py"):
        shutil.copy2(HERE / f, out / f)
    (out / "prepared.json").write_text(json.dumps(prepared, indent=1))
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    log(f"prepared {out} ({size / 2**20:.1f} MiB); on the GPU machine: python3 {out}/train_gpu.py run {out}")


# ---- workers (one process per framework and graph) -------------------------------------------

def timed_rounds(step, sync, steps):
    """Median over ROUNDS of the mean time of `steps` back-to-back steps, one wait per round."""
    rounds = []
    for _ in range(ROUNDS):
        sync()
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        sync()
        rounds.append((time.perf_counter() - t0) * 1e3 / steps)
    return rounds


def measure(args, step, loss_of, sync):
    """Two steps whose losses are checked (the first one compiles), warm-ups, a probe that caps
    the step count so the timed rounds take about --max-seconds, then the rounds."""
    t0 = time.perf_counter()
    losses = [loss_of(step())]
    compile_s = time.perf_counter() - t0
    losses.append(loss_of(step()))
    for _ in range(args.warmup):
        step()
    sync()
    t0 = time.perf_counter()
    for _ in range(3):
        step()
    sync()
    one = max((time.perf_counter() - t0) / 3, 1e-6)
    steps = max(min(10, args.steps), min(args.steps, int(args.max_seconds / (ROUNDS * one))))
    rounds = timed_rounds(step, sync, steps)
    return {"step_ms": statistics.median(rounds), "rounds_ms": rounds, "steps": steps,
            "warmup": args.warmup, "compile_s": compile_s, "losses": losses}


def load_batch(gdir, prepared_graph):
    import numpy as np
    inputs = [np.load(gdir / "inputs" / f"{n}.npy") for n in prepared_graph["inputs"]]
    return inputs, np.load(gdir / "labels.npy")


def trainable_names(spec, weights):
    """The weights SGD updates, chosen as bench/train.py's prepare chooses them."""
    import re
    import numpy as np
    return [k for k, v in weights.items()
            if v.dtype == np.float32 and v.ndim > 0 and re.fullmatch(spec["trainable"], k)
            and "running_" not in k]


def worker_torch(args, train, spec, gdir, inputs, labels, compiled):
    import numpy as np
    import torch
    import torch.nn.functional as F
    torch.backends.cuda.matmul.allow_tf32 = False  # full f32 everywhere, as Kiln and JAX
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = True  # fixed shapes: let cuDNN pick its fastest algorithms
    dev = torch.device("cuda")
    if "torchvision" in spec:
        module = train.torchvision_model(spec)
        module.load_state_dict({k: torch.from_numpy(v) for k, v in np.load(gdir / "weights.npz").items()})
        module = module.to(dev).train()  # batch statistics, as Kiln's step
        params = list(module.parameters())

        def forward(*x):
            return module(*x)
    else:
        import graphs
        weights = dict(np.load(gdir / "weights.npz"))
        trainable = set(trainable_names(spec, weights))
        w = {k: torch.tensor(v, device=dev, requires_grad=k in trainable) for k, v in weights.items()}
        params = [w[k] for k in weights if k in trainable]
        fn = graphs.GRAPHS[args.graph].torch_fn(w)

        def forward(*x):
            return fn(*x)[0]
    xs = [torch.from_numpy(x).to(dev) for x in inputs]
    y = torch.from_numpy(labels).to(dev)
    mse = spec["loss"] == "mse"

    def loss_fn(y, *x):
        out = forward(*x)
        return F.mse_loss(out, y) if mse else F.cross_entropy(out, y)
    if compiled:
        loss_fn = torch.compile(loss_fn)
    opt = torch.optim.SGD(params, lr=train.LEARNING_RATE)  # foreach update on CUDA

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(y, *xs)
        loss.backward()
        opt.step()
        return loss
    result = measure(args, step, lambda loss: float(loss), torch.cuda.synchronize)
    result["peak_mib"] = torch.cuda.max_memory_allocated() / 2**20
    result["version"] = torch.__version__
    result["device"] = torch.cuda.get_device_name()
    return result


def worker_jax(args, train, spec, gdir, inputs, labels):
    import numpy as np
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_default_matmul_precision", "highest")  # full f32, as Kiln and PyTorch
    if "torchvision" in spec:
        # train.py's jax.numpy ResNet, its batch normalizations in training mode, on the weights
        # PyTorch's module starts from.
        params, stats, forward = train.resnet_jax(spec, dict(np.load(gdir / "weights.npz")), {})
    else:
        import graphs
        weights = dict(np.load(gdir / "weights.npz"))
        trainable = trainable_names(spec, weights)
        frozen = {k: jnp.asarray(v) for k, v in weights.items() if k not in trainable}
        params = {k: jnp.asarray(weights[k]) for k in trainable}
        stats = {}
        graph = graphs.GRAPHS[args.graph]

        def forward(p, s, *x):
            return graph.jax_fn({**frozen, **p})(*x)[0], s
    xs = [jax.device_put(x) for x in inputs]
    y = jax.device_put(labels)
    mse = spec["loss"] == "mse"

    def loss_fn(p, s, y, *x):
        out, s = forward(p, s, *x)
        if mse:
            return jnp.mean((out - y) ** 2), s
        logp = jax.nn.log_softmax(out, axis=1)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None].astype(jnp.int32), axis=1)), s

    def update(p, s, y, *x):
        (loss, s), grads = jax.value_and_grad(loss_fn, has_aux=True)(p, s, y, *x)
        return loss, jax.tree_util.tree_map(lambda a, g: a - train.LEARNING_RATE * g, p, grads), s

    # The old weights are donated: XLA updates them in place, as Kiln and PyTorch do.
    update = jax.jit(update, donate_argnums=(0, 1))
    state = [jax.device_put(params), jax.device_put(stats)]

    def step():
        loss, state[0], state[1] = update(state[0], state[1], y, *xs)
        return loss
    result = measure(args, step, lambda loss: float(loss), lambda: jax.block_until_ready(state))
    try:
        peak = jax.local_devices()[0].memory_stats().get("peak_bytes_in_use")
        result["peak_mib"] = peak / 2**20 if peak else None
    except Exception:
        pass
    result["version"] = jax.__version__
    result["device"] = str(jax.devices()[0])
    return result


def torchvision_weights(train, spec, gdir):
    """The initial state of torchvision's model, from train.py's seed, for both peers (weights.npz;
    Kiln's step starts from the export of the same model where prepare ran)."""
    import numpy as np
    module = train.torchvision_model(spec)
    np.savez(gdir / "weights.npz", **{k: v.detach().numpy() for k, v in module.state_dict().items()})
    return {"version": __import__("torchvision").__version__}


def worker(args):
    need_numpy()
    train = import_train()
    dir_ = Path(args.dir)
    prepared = json.loads((dir_ / "prepared.json").read_text())
    gdir = dir_ / args.graph
    spec = train.TRAINING[args.graph]
    inputs, labels = load_batch(gdir, prepared["graphs"][args.graph])
    if args.framework == "weights":
        result = torchvision_weights(train, spec, gdir)
    elif args.framework == "jax":
        result = worker_jax(args, train, spec, gdir, inputs, labels)
    else:
        result = worker_torch(args, train, spec, gdir, inputs, labels, compiled=args.framework == "torch-compile")
    Path(args.result).write_text(json.dumps(result))


def run_worker(framework, graph, args):
    dir_ = Path(args.dir).resolve()
    result = dir_ / graph / f"{framework}.json"
    result.unlink(missing_ok=True)
    cmd = [sys.executable, str(Path(__file__).resolve()), "worker", framework, "--dir", str(dir_),
           "--graph", graph, "--result", str(result), "--steps", str(args.steps), "--warmup",
           str(args.warmup), "--max-seconds", str(args.max_seconds)]
    env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false", TF_CPP_MIN_LOG_LEVEL="2",
               PYTHONUNBUFFERED="1")
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"timed out after {args.timeout} s"}
    (dir_ / graph / f"{framework}.log").write_text(proc.stdout + proc.stderr)
    if proc.returncode != 0 or not result.exists():
        return {"ok": False, "error": last_line(proc.stderr, f"exit {proc.returncode}")}
    data = json.loads(result.read_text())
    data["ok"] = True
    return data


# ---- Kiln (kiln-run) -------------------------------------------------------------------------

NP_DTYPES = {"f32": "float32", "f16": "float16", "bf16": "uint16", "f64": "float64", "i64": "int64",
             "i32": "int32", "i16": "int16", "i8": "int8", "u8": "uint8", "u16": "uint16",
             "u32": "uint32", "u64": "uint64", "bool": "bool"}


def batch_inputs(gdir, info):
    """--input NAME=FILE for each input of the step that is not state (`kiln-run --info` lines
    `input    NAME TYPE [state=KIND]`): the prepared batch, or random data of its type."""
    import numpy as np
    bindings = []
    for line in info.splitlines():
        fields = line.split()
        if len(fields) < 3 or fields[0] != "input" or any(f.startswith("state=") for f in fields[3:]):
            continue
        name, type_ = fields[1], fields[2]
        path = gdir / "labels.npy" if name == "labels" else gdir / "inputs" / f"{name}.npy"
        if not path.exists():
            dtype, dims = type_.split("[", 1)
            dims = dims.rstrip("]")
            shape = () if dims == "scalar" else tuple(int(d) for d in dims.split("x"))
            rng = np.random.default_rng(11)
            np_dtype = np.dtype(NP_DTYPES.get(dtype, "float32"))
            value = (rng.integers(0, 10, shape) if np_dtype.kind in "iub" else rng.standard_normal(shape))
            path = gdir / "batch" / f"{name.replace('/', '_')}.npy"
            path.parent.mkdir(exist_ok=True)
            np.save(path, value.astype(np_dtype))
        bindings += ["--input", f"{name}={path}"]
    return bindings


def run_kiln(graph, args, prepared_graph):
    """kiln-run --resident-state on gpu:0: two steps whose loss is checked (and whose rounds size
    the step count), then --repeat N --warmup W: the wall time per run (the batch copied in, the
    loss and outputs copied out) and 5 rounds of N back-to-back steps on the GPU."""
    import numpy as np
    if not prepared_graph["ok"]:
        error = prepared_graph.get("error", "not compiled")
        return {"ok": False, "error": error if error.startswith("kilnc") else "kilnc: " + error}
    dir_ = Path(args.dir).resolve()
    gdir = dir_ / graph
    base = [str(dir_ / "kiln-run"), str(gdir / "step.kiln")]
    log_text = []

    def kiln_run(extra):
        cmd = base + extra
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"timed out after {args.timeout} s")
        log_text.append(" ".join(cmd) + "\n" + proc.stdout + proc.stderr)
        (gdir / "kiln.log").write_text("\n".join(log_text))
        if proc.returncode != 0:
            reason = last_line(proc.stderr, f"kiln-run exit {proc.returncode}")
            raise RuntimeError(reason.replace(f"{gdir / 'step.kiln'}: ", "").replace("kiln-run: error: ", "kiln-run: "))
        return proc.stdout

    try:
        info = kiln_run(["--info", "--device", "gpu:0"])
        device = "--device", "gpu:0"
        bound = [*device, "--resident-state"] + batch_inputs(gdir, info)
        check_dir = gdir / "kiln_check"
        shutil.rmtree(check_dir, ignore_errors=True)
        kiln_run(bound + ["--repeat", "2", "--output-dir", str(check_dir), "--timing-json",
                          str(gdir / "kiln_check.json")])
        losses = [float(np.load(check_dir / "loss.npy"))] if (check_dir / "loss.npy").exists() else []
        one = max(statistics.median(json.loads((gdir / "kiln_check.json").read_text())["step_ms"]) / 1e3, 1e-6)
        # Warm-ups, the host loop and the 5 rounds: about (ROUNDS + 1) * steps + warmup steps.
        steps = max(min(10, args.steps), min(args.steps, int(args.max_seconds / ((ROUNDS + 1) * one))))
        timing_file = gdir / "kiln_timing.json"
        kiln_run(bound + ["--repeat", str(steps), "--warmup", str(args.warmup), "--timing-json", str(timing_file)])
    except RuntimeError as e:
        return {"ok": False, "error": str(e)}
    timing = json.loads(timing_file.read_text())
    return {"ok": True, "step_ms": statistics.median(timing["step_ms"]), "rounds_ms": timing["step_ms"],
            "run_ms": statistics.median(timing["run_ms"]),
            "device_ms": statistics.median(timing["device_ms"]) if timing.get("device_ms") else None,
            "steps": steps, "warmup": args.warmup, "cuda_graph": timing.get("cuda_graph"),
            "device": timing.get("device"), "losses": [None] + losses}


# ---- run (where the GPU is) -------------------------------------------------------------------

def gpu_name():
    try:
        proc = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30)
        return proc.stdout.strip().splitlines()[0] if proc.returncode == 0 and proc.stdout.strip() else None
    except (OSError, subprocess.TimeoutExpired):
        return None


def check_losses(entry, frameworks):
    """The loss each framework reports for its second step (after one update) against PyTorch
    eager's (JAX's when PyTorch failed)."""
    def loss2(fw):
        r = entry.get(fw, {})
        return r["losses"][1] if r.get("ok") and len(r.get("losses") or []) > 1 else None
    ref_fw = next((fw for fw in ("torch", "jax") if loss2(fw) is not None), None)
    ref = loss2(ref_fw) if ref_fw else None
    for fw in frameworks:
        got = loss2(fw)
        if not entry.get(fw, {}).get("ok"):
            continue
        if got is None:
            entry[fw]["check"] = "no loss"
        elif ref is None or fw == ref_fw:
            entry[fw]["check"] = "reference" if fw == ref_fw else "n/a"
        elif abs(got - ref) <= LOSS_TOLERANCE + LOSS_TOLERANCE * abs(ref):
            entry[fw]["check"] = "ok"
        else:
            entry[fw]["check"] = f"differs from {ref_fw}'s {ref:.6g}"


def fmt(v, digits=4):
    return "n/a" if v is None else f"{v:.{digits}g}"


def cell(result, key="step_ms"):
    if result is None:
        return "-"
    if not result.get("ok"):
        reason = result.get("error", "?").replace("|", "/")
        return "failed: " + (reason if len(reason) <= 90 else reason[:87] + "...")
    return fmt(result.get(key))


def run(args):
    need_numpy()
    dir_ = Path(args.dir).resolve()
    prepared = json.loads((dir_ / "prepared.json").read_text())
    names = graph_names(args.graphs, list(prepared["graphs"]))
    frameworks = [f.strip() for f in args.frameworks.split(",") if f.strip()]
    unknown = [f for f in frameworks if f not in FRAMEWORKS]
    if unknown:
        sys.exit(f"error: unknown framework(s) {', '.join(unknown)}; known: {', '.join(FRAMEWORKS)}")
    results_dir = Path(args.results or dir_ / "results")
    results_dir.mkdir(parents=True, exist_ok=True)
    report = {"date": time.strftime("%Y-%m-%d %H:%M"), "gpu": gpu_name(), "target": prepared["target"],
              "learning_rate": prepared["learning_rate"], "optimizer": prepared["optimizer"],
              "steps": args.steps, "warmup": args.warmup, "max_seconds": args.max_seconds,
              "skipped": prepared.get("skipped", {}), "graphs": {}}
    log(f"GPU {report['gpu'] or 'unknown'}; graphs {', '.join(names)}; frameworks {', '.join(frameworks)}")
    train = import_train()
    text = write_results(report, results_dir, frameworks)
    for name in names:
        entry = {}
        weights = {"ok": True}
        if "torchvision" in train.TRAINING[name] and any(fw in PEERS for fw in frameworks):
            log(f"{name}: the peers' initial weights (torchvision) ...")
            weights = run_worker("weights", name, args)
        for fw in frameworks:
            if fw != "kiln" and not weights["ok"]:
                entry[fw] = {"ok": False, "error": "initial weights: " + weights["error"]}
                continue
            log(f"{name}: {fw} ...")
            entry[fw] = run_kiln(name, args, prepared["graphs"][name]) if fw == "kiln" else run_worker(fw, name, args)
            r = entry[fw]
            if r.get("ok"):
                extra = f", host loop {fmt(r['run_ms'])} ms" if fw == "kiln" else f", first step {r['compile_s']:.1f} s"
                log(f"{name}: {fw} {fmt(r['step_ms'])} ms/step ({r['steps']} steps x {ROUNDS} rounds{extra})")
            else:
                log(f"{name}: {fw} failed: {r.get('error')}")
        check_losses(entry, frameworks)
        report["graphs"][name] = entry
        text = write_results(report, results_dir, frameworks)  # after every graph: a cut-off run leaves some
    print(text, flush=True)
    log(f"wrote {results_dir / 'results.md'} and results.json")


def write_results(report, results_dir, frameworks):
    done = list(report["graphs"])
    report["versions"] = {fw: next((e[fw].get("version") for e in report["graphs"].values()
                                    if e.get(fw, {}).get("version")), None) for fw in ("torch", "jax")}
    if not report["gpu"]:
        report["gpu"] = next((e[fw].get("device") for e in report["graphs"].values()
                              for fw in ("torch", "torch-compile") if e.get(fw, {}).get("device")), None)
    (results_dir / "results.json").write_text(json.dumps(report, indent=1))
    text = render(report, done, frameworks)
    (results_dir / "results.md").write_text(text)
    return text


def render(report, names, frameworks):
    peers = [fw for fw in PEERS if fw in frameworks]
    lines = [f"GPU: {report['gpu']}; {report['date']}; target {report['target']}; torch "
             f"{report['versions'].get('torch')}, jax {report['versions'].get('jax')}. One train step: "
             f"forward, loss, backward, SGD update (learning rate {report['learning_rate']}), full f32 "
             f"everywhere. ms/step: median of {ROUNDS} rounds of up to {report['steps']} back-to-back steps "
             f"on data kept on the GPU, one wait per round, after {report['warmup']} warm-up steps (Kiln: "
             f"kiln-run --resident-state, CUDA graph replays; `kiln (host loop)`: kiln-run's wall time per run, "
             f"the batch copied in and the loss and outputs out). Ratio: the best peer's time over Kiln's; "
             f"above 1 Kiln is faster.", ""]
    cols = ["graph"] + (["kiln ms/step", "kiln (host loop)"] if "kiln" in frameworks else [])
    cols += peers + (["best peer", "ratio"] if peers else [])
    lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for n in names:
        e = report["graphs"][n]
        row = [n]
        if "kiln" in frameworks:
            row += [cell(e["kiln"]), cell(e["kiln"], "run_ms") if e["kiln"].get("ok") else "-"]
        row += [cell(e[fw]) for fw in peers]
        if peers:
            ok = [(e[fw]["step_ms"], fw) for fw in peers if e[fw].get("ok")]
            best = min(ok) if ok else None
            row.append(f"{fmt(best[0])} ({best[1]})" if best else "n/a")
            k = e.get("kiln", {}).get("step_ms")
            row.append(f"{best[0] / k:.2f}x" if best and k else "n/a")
        lines.append("| " + " | ".join(row) + " |")
    lines += ["", "Loss after one update (the second step's), checked against PyTorch eager's "
              f"(|diff| <= {LOSS_TOLERANCE} + {LOSS_TOLERANCE}*|ref|); peak GPU memory allocated (MiB; "
              "PyTorch's caching allocator, XLA's peak in use; not measured for Kiln); first step (s, "
              "compilation included); steps per round:", ""]
    cols = ["graph"] + [f"{fw} loss" for fw in frameworks] + [f"{fw} MiB" for fw in peers]
    cols += [f"{fw} first step s" for fw in peers] + ["steps/round"]
    lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for n in names:
        e = report["graphs"][n]
        row = [n]
        for fw in frameworks:
            r = e[fw]
            loss = r["losses"][1] if r.get("ok") and len(r.get("losses") or []) > 1 else None
            row.append("-" if not r.get("ok") else f"{fmt(loss, 6)} ({r.get('check', 'n/a')})")
        row += [fmt(e[fw].get("peak_mib"), 5) if e[fw].get("ok") else "-" for fw in peers]
        row += [f"{e[fw]['compile_s']:.2f}" if e[fw].get("ok") else "-" for fw in peers]
        row.append(", ".join(f"{fw} {e[fw]['steps']}" for fw in frameworks if e[fw].get("ok")) or "-")
        lines.append("| " + " | ".join(row) + " |")
    for n, why in report["skipped"].items():
        lines.append(f"\n{n}: not prepared ({why}).")
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    pp = sub.add_parser("prepare", help="write batches, weights and Kiln train steps into OUT (where kilnc is)")
    pp.add_argument("out")
    pp.add_argument("--graphs", default="", help="comma-separated (default: train.py's graphs: mlp_b64, mlp_b256, "
                    "lenet, transformer_layer, resnet18)")
    pp.add_argument("--kiln-bin", default=str(HERE.parent / "build" / "bin"))
    pp.add_argument("--target", default="cuda:sm_90", help="kilnc --target (default cuda:sm_90)")
    pp.add_argument("--keep-onnx", action="store_true", help="keep OUT/<graph>/model.onnx (run does not need it)")
    pr = sub.add_parser("run", help="benchmark the prepared OUT on this machine's GPU")
    pr.add_argument("dir")
    pr.add_argument("--graphs", default="", help="comma-separated (default: every prepared graph)")
    pr.add_argument("--frameworks", default=",".join(FRAMEWORKS))
    pr.add_argument("--steps", type=int, default=200, help="steps per timed round, at most (default 200)")
    pr.add_argument("--warmup", type=int, default=10, help="warm-up steps (default 10)")
    pr.add_argument("--max-seconds", type=float, default=6.0,
                    help="fewer steps per round where the rounds would take longer (default 6)")
    pr.add_argument("--timeout", type=int, default=300, help="seconds allowed per process (default 300)")
    pr.add_argument("--results", default="", help="where results.md/json go (default DIR/results)")
    pw = sub.add_parser("worker")
    pw.add_argument("framework", choices=PEERS + ["weights"])
    pw.add_argument("--dir", required=True)
    pw.add_argument("--graph", required=True)
    pw.add_argument("--result", required=True)
    pw.add_argument("--steps", type=int, default=200)
    pw.add_argument("--warmup", type=int, default=10)
    pw.add_argument("--max-seconds", type=float, default=6.0)
    args = p.parse_args()
    {"prepare": prepare, "run": run, "worker": worker}[args.command](args)


if __name__ == "__main__":
    main()
