#!/usr/bin/env python3
"""Training to an accuracy: Kiln's kiln-train against PyTorch (eager and torch.compile) and JAX (jit).

Every framework trains the LeNet-5 of examples/train/lenet.py (batch 100, seed 0) on
Fashion-MNIST with the recipe of examples/train/lenet.cfg: the same initial weights (the ONNX
model's initializers), the same example order per epoch (kiln-train's seeded SplitMix64 shuffle,
replicated here), the same images (u8 * (1/255) in double, rounded to f32), plain SGD with the
staircase-decayed learning rate, L2 on the fully connected layers and an exponential moving
average of the weights, with which the 10,000 test images are classified every --eval-every
steps and at the end. Each framework runs in its own process, pinned to the same CPUs with the
same thread count, one after the other. Reported: the time to reach --target test accuracy,
the test accuracy after the same number of steps (and its difference to PyTorch's), and
kiln-train's loop overhead (the share of its time spent in the step itself).

    /tmp/torchenv/bin/python bench/fashion_mnist.py --epochs 4 --threads 2
    /tmp/torchenv/bin/python bench/fashion_mnist.py --epochs 1 --eval-every 300 --frameworks kiln,torch

Needs numpy and onnx, plus torch and jax[cpu] for the peers (a peer that cannot be imported or
compiled is reported and skipped); any Python with those works, the command above names the
interpreter it was written against. Kiln's kilnc and kiln-train come from build/bin
(--kiln-bin). Prints a Markdown table (for docs/benchmarks.md) with the command and versions;
--json FILE writes every number. Models and logs go to --work (build/bench/fashion_mnist).
"""
import argparse
import gzip
import json
import os
import platform
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

from run import cpu_model, git_state  # bench/run.py: the same report header

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
FRAMEWORKS = ["kiln", "torch", "torch-compile", "jax"]
DATA = Path("/usr/share/datasets/fashion-mnist")
BATCH = 100
MODEL_SEED = 0
CLASSES = 10
# The training keys of --config this script replicates in the peers (kilnc's defaults otherwise).
CONFIG_DEFAULTS = {"optimizer": "sgd", "learning-rate": "0.01", "lr-schedule": "constant",
                   "decay-rate": "0.95", "decay-steps": "1000", "staircase": "false", "l2": "0",
                   "l2-weights": ".*", "ema-decay": "0", "trainable": ".*",
                   "loss": "softmax-cross-entropy"}
# Keys that change what the step returns or what its inputs are called, not what it computes.
CONFIG_IGNORED = {"gradient-outputs", "labels", "loss-output"}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--frameworks", default=",".join(FRAMEWORKS))
    p.add_argument("--epochs", type=int, default=4, help="epochs of 600 steps (default 4)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--eval-every", type=int, default=600, help="steps between evaluations (and at the end)")
    p.add_argument("--target", type=float, default=0.89, help="test accuracy to time (default 0.89)")
    p.add_argument("--seed", type=int, default=0, help="seed of the example order (kiln-train --seed)")
    p.add_argument("--print-every", type=int, default=100, help="steps between training-loss records")
    p.add_argument("--data", default=str(DATA))
    p.add_argument("--config", default=str(ROOT / "examples" / "train" / "lenet.cfg"))
    p.add_argument("--kiln-bin", default=str(ROOT / "build" / "bin"))
    p.add_argument("--work", default=str(ROOT / "build" / "bench" / "fashion_mnist"))
    p.add_argument("--json", help="also write every number to this file")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--result", help=argparse.SUPPRESS)
    return p.parse_args()


def log(message):
    print(message, file=sys.stderr, flush=True)


# ---- the recipe -------------------------------------------------------------------------------

def read_config(path):
    """kilnc's --train-config format: `key = value` lines, '#' comments."""
    values = dict(CONFIG_DEFAULTS)
    for raw in Path(path).read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip()
    unsupported = {k: v for k, v in values.items() if k not in CONFIG_DEFAULTS and k not in CONFIG_IGNORED}
    if unsupported or values["optimizer"] != "sgd" or values["loss"] != "softmax-cross-entropy" \
            or values["lr-schedule"] not in ("constant", "exponential", "step"):
        raise SystemExit(f"{path}: the peers replicate plain SGD with a constant, exponential or step "
                         f"schedule, softmax cross-entropy, l2 and ema-decay; this config also has "
                         f"{unsupported or {k: values[k] for k in ('optimizer', 'loss', 'lr-schedule')}}")
    return {"learning_rate": float(values["learning-rate"]), "schedule": values["lr-schedule"],
            "decay_rate": float(values["decay-rate"]), "decay_steps": int(values["decay-steps"]),
            "staircase": values["staircase"].lower() in ("true", "1", "yes", "on"),
            "l2": float(values["l2"]), "l2_weights": values["l2-weights"],
            "ema_decay": float(values["ema-decay"]), "trainable": values["trainable"],
            "gradient_outputs": values.get("gradient-outputs", "false").lower() in ("true", "1", "yes", "on")}


def schedule_scalars(recipe, step):
    """The learning rate and 1 - EMA decay of the update made after `step` updates, computed in
    f32 as Kiln's train step does (passes/TrainStep.cpp)."""
    f = np.float32
    s = f(step)
    lr = f(recipe["learning_rate"])
    if recipe["schedule"] != "constant":
        exponent = s / f(recipe["decay_steps"])
        if recipe["staircase"] or recipe["schedule"] == "step":
            exponent = np.floor(exponent)
        lr = f(lr * np.power(f(recipe["decay_rate"]), f(exponent)))
    keep = f(0)
    if recipe["ema_decay"] > 0:  # TensorFlow's ExponentialMovingAverage, num_updates = step
        d = min(f(recipe["ema_decay"]), f((s + f(1)) / (s + f(10))))
        keep = f(f(1) - d)
    return lr, keep


M64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def epoch_order_reference(count, seed, epoch):
    """kiln::train::epochOrder (runtime/lib/train/Dataset.cpp), in plain Python."""
    order = list(range(count))
    state = (seed + epoch * GOLDEN) & M64
    for i in range(count - 1, 0, -1):
        state = (state + GOLDEN) & M64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        z ^= z >> 31
        j = (z * (i + 1)) >> 64
        order[i], order[j] = order[j], order[i]
    return order


def epoch_order(count, seed, epoch):
    """The same order: the SplitMix64 draws and their bounded indices vectorized in uint64
    (wrapping as C++ does), the Fisher-Yates swaps in a loop."""
    if count < 2:
        return np.arange(count, dtype=np.int64)
    u = np.uint64
    k = np.arange(1, count, dtype=np.uint64)  # the k-th draw
    with np.errstate(over="ignore"):
        z = u((seed + epoch * GOLDEN) & M64) + k * u(GOLDEN)
        z = (z ^ (z >> u(30))) * u(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> u(27))) * u(0x94D049BB133111EB)
        z ^= z >> u(31)
        bound = np.arange(count, 1, -1, dtype=np.uint64)  # i + 1 for i = count-1 .. 1
        # (z * bound) >> 64 for bound < 2^32, from 32-bit halves without overflow.
        high, low = z >> u(32), z & u(0xFFFFFFFF)
        j = (high * bound + ((low * bound) >> u(32))) >> u(32)
    order = list(range(count))
    for i, jj in zip(range(count - 1, 0, -1), j.tolist()):
        order[i], order[jj] = order[jj], order[i]
    return np.array(order, dtype=np.int64)


def check_order():
    expected = {(10, 0, 0): [4, 9, 2, 5, 1, 7, 6, 0, 3, 8],  # test/train/DatasetTest.cpp
                (10, 42, 3): [5, 9, 8, 2, 7, 4, 1, 6, 0, 3]}
    for (n, seed, epoch), want in expected.items():
        for fn in (epoch_order_reference, epoch_order):
            got = list(map(int, fn(n, seed, epoch)))
            if got != want:
                raise SystemExit(f"{fn.__name__}({n}, {seed}, {epoch}) = {got}, expected {want}")
    for n, seed, epoch in ((1000, 7, 1), (60000, 0, 3)):
        if list(epoch_order(n, seed, epoch)) != epoch_order_reference(n, seed, epoch):
            raise SystemExit(f"epoch_order({n}, {seed}, {epoch}) differs from the reference")


def read_idx(path):
    with gzip.open(path, "rb") if str(path).endswith(".gz") else open(path, "rb") as f:
        data = f.read()
    if data[:2] != b"\0\0" or data[2] != 0x08:
        raise SystemExit(f"{path}: not an IDX file of u8")
    rank = data[3]
    shape = tuple(int.from_bytes(data[4 + 4 * d:8 + 4 * d], "big") for d in range(rank))
    return np.frombuffer(data, np.uint8, offset=4 + 4 * rank).reshape(shape)


def data_file(directory, stem):
    path = Path(directory) / stem
    gz = path.with_name(stem + ".gz")
    return gz if gz.exists() else path


def load_data(directory):
    """(train images, train labels, test images, test labels): images f32 [n, 1, 28, 28] as
    kiln-train converts them (u8 * (1.0 / 255.0) in double, then rounded to f32), labels i64."""
    table = (np.arange(256, dtype=np.float64) * (1.0 / 255.0)).astype(np.float32)
    out = []
    for split in ("train", "t10k"):
        images = read_idx(data_file(directory, f"{split}-images-idx3-ubyte"))
        labels = read_idx(data_file(directory, f"{split}-labels-idx1-ubyte"))
        out += [table[images].reshape(len(images), 1, 28, 28), labels.astype(np.int64)]
    return out


def load_weights(model_path):
    import onnx
    from onnx import numpy_helper
    model = onnx.load(str(model_path))
    return {t.name: numpy_helper.to_array(t).copy() for t in model.graph.initializer}


def pin(threads):
    cpus = sorted(os.sched_getaffinity(0))[:threads]
    os.sched_setaffinity(0, set(cpus))
    os.environ["OMP_NUM_THREADS"] = str(threads)
    return cpus


# ---- the peers --------------------------------------------------------------------------------

class Recorder:
    """Times since the start of data loading, evaluations and training losses, as a peer trains."""

    def __init__(self, args):
        self.args = args
        self.start = time.perf_counter()
        self.result = {"evals": [], "losses": [], "steps": 0}

    def now(self):
        return time.perf_counter() - self.start

    def evaluation(self, step, correct, loss_sum, count):
        seconds = self.now()
        self.result["evals"].append({"step": step, "accuracy": correct / count,
                                     "loss": loss_sum / count, "time_s": seconds})
        log(f"step {step}, eval: accuracy = {100 * correct / count:.2f}%, loss = {loss_sum / count:.4f} "
            f"({seconds:.1f} s)")


def run_peer(args, recipe, framework, model_path):
    __import__("jax" if framework == "jax" else "torch")  # before the clock starts
    rec = Recorder(args)
    x_train, y_train, x_test, y_test = load_data(args.data)
    weights = load_weights(model_path)
    names = [k for k in weights if re.fullmatch(recipe["trainable"], k)]
    l2_names = [k for k in names if re.fullmatch(recipe["l2_weights"], k)]
    per_epoch = len(x_train) // BATCH
    total = args.epochs * per_epoch
    if framework == "jax":
        make = make_jax
    else:
        make = make_torch
    step_fn, eval_fn, finish = make(args, recipe, framework, weights, names, l2_names,
                                    x_train, y_train, x_test, y_test)
    rec.result["setup_s"] = rec.now()
    order, order_epoch = None, -1
    for s in range(total):
        epoch = s // per_epoch
        if epoch != order_epoch:
            order, order_epoch = epoch_order(len(x_train), args.seed, epoch), epoch
        rows = order[(s % per_epoch) * BATCH:(s % per_epoch + 1) * BATCH]
        lr, keep = schedule_scalars(recipe, s)
        first = s == 0
        if first:
            t0 = time.perf_counter()
        loss = step_fn(rows, lr, keep, first or (s + 1) % args.print_every == 0)
        if first:
            rec.result["first_step_s"] = time.perf_counter() - t0
        at = s + 1
        if loss is not None:
            rec.result["losses"].append({"step": at, "loss": loss})
            if at % args.print_every == 0:
                log(f"step {at}, loss = {loss:.4f} ({rec.now():.1f} s)")
        if (args.eval_every > 0 and at % args.eval_every == 0) or at == total:
            t0 = time.perf_counter()
            correct, loss_sum = eval_fn()
            if "first_eval_s" not in rec.result:
                rec.result["first_eval_s"] = time.perf_counter() - t0
            rec.evaluation(at, correct, loss_sum, len(x_test))
        rec.result["steps"] = at
    rec.result["total_s"] = rec.now()
    rec.result.update(finish())
    return rec.result


def make_torch(args, recipe, framework, weights, names, l2_names, x_train, y_train, x_test, y_test):
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(args.threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # already set in this process
        pass
    compiled = framework == "torch-compile"
    l2 = recipe["l2"]
    xs, ys = torch.from_numpy(x_train), torch.from_numpy(y_train)
    xt, yt = torch.from_numpy(x_test), torch.from_numpy(y_test)

    def forward(p, x):
        x = F.max_pool2d(F.relu(F.conv2d(x, p["conv1.w"], p["conv1.b"], padding=2)), 2, 2)
        x = F.max_pool2d(F.relu(F.conv2d(x, p["conv2.w"], p["conv2.b"], padding=2)), 2, 2)
        x = F.relu(F.linear(x.flatten(1), p["fc1.w"], p["fc1.b"]))
        return F.linear(x, p["fc2.w"], p["fc2.b"])

    def objective(p, x, y):
        loss = F.cross_entropy(forward(p, x), y)
        for k in l2_names:  # (l2 / 2) sum(w^2), as kilnc's l2
            loss = loss + (l2 / 2) * (p[k] * p[k]).sum()
        return loss

    def evaluate_batch(p, x, y):
        logits = forward(p, x)
        nll = F.cross_entropy(logits, y, reduction="sum")
        return (logits.argmax(1) == y).sum(), nll

    fixed = {k: torch.from_numpy(v) for k, v in weights.items() if k not in names}
    if compiled:
        # torch.compile falls back to eager on torch.autograd.grad (a graph break), so the
        # compiled step is the functional form: torch.func's gradient, the update and the
        # average as new tensors, one graph (fullgraph=True fails rather than break).
        state = {"p": {k: torch.from_numpy(weights[k]).clone() for k in names},
                 "ema": {k: torch.from_numpy(weights[k]).clone() for k in names}}

        def train_step(p, ema, x, y, lr, keep):
            grads, loss = torch.func.grad_and_value(lambda q: objective({**fixed, **q}, x, y))(p)
            new = {k: p[k] - lr * grads[k] for k in p}
            avg = {k: ema[k] - keep * (ema[k] - new[k]) for k in p}
            return new, avg, loss

        train_step = torch.compile(train_step, fullgraph=True)
        evaluate_batch = torch.compile(evaluate_batch, fullgraph=True)

        def step(rows, lr, keep, want_loss):
            idx = torch.from_numpy(rows)
            state["p"], state["ema"], loss = train_step(state["p"], state["ema"], xs[idx], ys[idx],
                                                        torch.tensor(lr), torch.tensor(keep))
            return float(loss) if want_loss else None

        def eval_weights():
            return {**fixed, **state["ema"]}
    else:
        params = {k: torch.from_numpy(weights[k]).clone().requires_grad_(True) for k in names}
        ema = {k: torch.from_numpy(weights[k]).clone() for k in names}
        plist = [params[k] for k in names]

        def step(rows, lr, keep, want_loss):
            idx = torch.from_numpy(rows)
            loss = objective({**fixed, **params}, xs[idx], ys[idx])
            grads = torch.autograd.grad(loss, plist)
            lr_t, keep_t = torch.tensor(lr), torch.tensor(keep)
            with torch.no_grad():
                for k, g in zip(names, grads):
                    params[k].sub_(lr_t * g)
                    ema[k].sub_(keep_t * (ema[k] - params[k]))
            return float(loss.detach()) if want_loss else None

        def eval_weights():
            return {**fixed, **ema}

    def evaluate():
        p = eval_weights()
        correct, loss_sum = 0, 0.0
        with torch.no_grad():
            for first in range(0, len(xt), BATCH):
                c, nll = evaluate_batch(p, xt[first:first + BATCH], yt[first:first + BATCH])
                correct += int(c)
                loss_sum += float(nll)
        return correct, loss_sum

    def finish():
        return {"threads": torch.get_num_threads()}
    return step, evaluate, finish


def make_jax(args, recipe, framework, weights, names, l2_names, x_train, y_train, x_test, y_test):
    import jax
    import jax.numpy as jnp
    from jax import lax
    l2 = recipe["l2"]
    xs, ys = jnp.asarray(x_train), jnp.asarray(y_train)
    xt, yt = jnp.asarray(x_test), jnp.asarray(y_test)
    fixed = {k: jnp.asarray(v) for k, v in weights.items() if k not in names}

    def conv(x, w, b):
        y = lax.conv_general_dilated(x, w, (1, 1), ((2, 2), (2, 2)),
                                     dimension_numbers=("NCHW", "OIHW", "NCHW"))
        return y + b[None, :, None, None]

    def pool(x):
        return lax.reduce_window(x, -jnp.inf, lax.max, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")

    def forward(p, x):
        x = pool(jax.nn.relu(conv(x, p["conv1.w"], p["conv1.b"])))
        x = pool(jax.nn.relu(conv(x, p["conv2.w"], p["conv2.b"])))
        x = jax.nn.relu(x.reshape(x.shape[0], -1) @ p["fc1.w"].T + p["fc1.b"])
        return x @ p["fc2.w"].T + p["fc2.b"]

    def nll(logits, y):
        return -jnp.take_along_axis(jax.nn.log_softmax(logits, axis=1), y[:, None], axis=1)[:, 0]

    def objective(p, x, y):
        loss = jnp.mean(nll(forward({**fixed, **p}, x), y))
        for k in l2_names:
            loss = loss + (l2 / 2) * jnp.sum(p[k] * p[k])
        return loss

    @jax.jit
    def train_step(p, ema, rows, lr, keep):
        x, y = xs[rows], ys[rows]  # the gather inside the step: no host copy per batch
        loss, grads = jax.value_and_grad(objective)(p, x, y)
        new = {k: p[k] - lr * grads[k] for k in p}
        avg = {k: ema[k] - keep * (ema[k] - new[k]) for k in p}
        return new, avg, loss

    @jax.jit
    def evaluate_batch(p, x, y):
        logits = forward({**fixed, **p}, x)
        return jnp.sum(jnp.argmax(logits, axis=1) == y), jnp.sum(nll(logits, y))

    state = {"p": {k: jnp.asarray(weights[k]) for k in names},
             "ema": {k: jnp.asarray(weights[k]) for k in names}}

    def step(rows, lr, keep, want_loss):
        state["p"], state["ema"], loss = train_step(state["p"], state["ema"], rows, lr, keep)
        if want_loss:
            return float(loss)
        return None

    def evaluate():
        correct, loss_sum = 0, 0.0
        for first in range(0, len(xt), BATCH):
            c, s = evaluate_batch(state["ema"], xt[first:first + BATCH], yt[first:first + BATCH])
            correct += int(c)
            loss_sum += float(s)
        return correct, loss_sum

    def finish():
        return {"devices": str(jax.devices())}
    return step, evaluate, finish


# ---- Kiln ---------------------------------------------------------------------------------------

EVAL_LINE = re.compile(r"step (\d+), eval: accuracy = ([\d.]+)%, loss = ([\d.naif]+)")
LOSS_LINE = re.compile(r"step (\d+), loss = ([\d.naif]+) ")
END_LINE = re.compile(r"kiln-train: (\d+) steps in .*\(([\d.]+) examples/sec; the step itself (\d+)% of the time\)")


def run_kiln(args, recipe, model_path, work):
    bin_dir = Path(args.kiln_bin)
    artifact = work / "lenet-train.kiln"
    compile_cmd = [str(bin_dir / "kilnc"), str(model_path), "--train", f"--train-config={args.config}",
                   "-o", str(artifact)]
    t0 = time.perf_counter()
    done = subprocess.run(compile_cmd, capture_output=True, text=True)
    compile_s = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit("kilnc failed: " + (done.stderr.strip() or done.stdout.strip())[-500:])
    train_cmd = [str(bin_dir / "kiln-train"), str(artifact), "--data", args.data, "--epochs",
                 str(args.epochs), "--eval-every", str(args.eval_every), "--print-every",
                 str(args.print_every), "--progress", "off", "--threads", str(args.threads),
                 "--seed", str(args.seed)]
    result = {"evals": [], "losses": [], "compile_s": compile_s,
              "commands": [" ".join(compile_cmd), " ".join(train_cmd)]}
    lines = []
    start = time.perf_counter()
    process = subprocess.Popen(train_cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               bufsize=1)
    errors = []
    drain = threading.Thread(target=lambda: errors.extend(process.stderr), daemon=True)
    drain.start()
    for line in process.stdout:
        seconds = time.perf_counter() - start
        line = line.rstrip("\n")
        lines.append(line)
        if "setup_s" not in result and "steps per epoch" in line:
            result["setup_s"] = seconds  # printed once the data is loaded and the state set
        if m := EVAL_LINE.match(line):
            result["evals"].append({"step": int(m[1]), "accuracy": float(m[2]) / 100,
                                    "loss": float(m[3]), "time_s": seconds})
            log(f"{line} ({seconds:.1f} s)")
        elif m := LOSS_LINE.match(line):
            result["losses"].append({"step": int(m[1]), "loss": float(m[2])})
            log(f"{line} ({seconds:.1f} s)")
        elif m := END_LINE.match(line):
            result.update(steps=int(m[1]), kiln_examples_per_s=float(m[2]), step_share=int(m[3]) / 100)
            log(line)
    # wait4: kiln-train's own peak resident memory (not kilnc's).
    _, status, usage = os.wait4(process.pid, 0)
    result["total_s"] = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    result["peak_rss_kib"] = usage.ru_maxrss
    drain.join()
    (work / "kiln-train.log").write_text("\n".join(lines) + "\n" + "".join(errors))
    if process.returncode != 0:
        raise SystemExit(f"kiln-train exited with {process.returncode}: "
                         + ("".join(errors).strip() or "\n".join(lines[-3:]))[-500:])
    if "step_share" not in result:
        raise SystemExit("kiln-train's last line (the step itself NN% of the time) is missing; see "
                         + str(work / "kiln-train.log"))
    return result


def run_worker(args):
    cpus = pin(args.threads)
    recipe = read_config(args.config)
    work = Path(args.work)
    model_path = work / "lenet.onnx"
    if args.worker == "kiln":
        result = run_kiln(args, recipe, model_path, work)
    elif args.worker in ("torch", "torch-compile", "jax"):
        result = run_peer(args, recipe, args.worker, model_path)
    else:
        raise SystemExit(f"unknown framework '{args.worker}' (known: {', '.join(FRAMEWORKS)})")
    import resource
    result["cpus"] = cpus
    if "peak_rss_kib" not in result:  # the peers: this process, with its framework loaded
        result["peak_rss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    Path(args.result).write_text(json.dumps(result))


# ---- driver -----------------------------------------------------------------------------------

def versions():
    found = {"python": platform.python_version()}
    for module in ("numpy", "onnx", "torch", "jax", "jaxlib"):
        try:
            found[module] = __import__(module).__version__
        except Exception:
            found[module] = "not installed"
    return found


def run_framework(args, framework):
    result_path = Path(args.work) / f"{framework}.json"
    result_path.unlink(missing_ok=True)
    cmd = [sys.executable, __file__, "--worker", framework, "--result", str(result_path)]
    for flag in ("epochs", "threads", "eval_every", "seed", "print_every", "data", "config", "kiln_bin", "work"):
        cmd += ["--" + flag.replace("_", "-"), str(getattr(args, flag))]
    # No on-disk compile caches: torch.compile compiles from scratch in every run, as JAX and
    # kilnc do (Inductor would otherwise reuse the kernels an earlier run left in /tmp).
    env = dict(os.environ, JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="2", PYTHONUNBUFFERED="1",
               TORCHINDUCTOR_FORCE_DISABLE_CACHES="1")
    log(f"== {framework}")
    process = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    tail = []
    with open(Path(args.work) / f"{framework}.log", "w") as logfile:
        for line in process.stdout:
            logfile.write(line)
            tail = (tail + [line.rstrip()])[-20:]
            if line.startswith(("step ", "kiln-train: ")):
                log(f"  {framework}: {line.rstrip()}")
    process.wait()
    if process.returncode != 0 or not result_path.exists():
        lines = [t for t in tail if t.strip()]
        reason = lines[-1] if lines else f"exit status {process.returncode}"  # the exception's line
        log(f"  {framework} failed: {reason}")
        return {"error": reason[:300]}
    return json.loads(result_path.read_text())


def fmt_time(seconds):
    return f"{seconds:.1f}" if seconds is not None else "-"


def report(args, recipe, results, selected, command):
    total = args.epochs * 60000 // BATCH  # Fashion-MNIST: 60,000 training images
    base = results.get("torch", {})
    base_acc = base["evals"][-1]["accuracy"] if base.get("evals") else None
    target = args.target
    lines = [f"| framework | test accuracy after {total} steps | vs PyTorch (pp) | time to {100 * target:g}% "
             f"(s, step) | total time (s) | examples/s overall | load (s) | compile (s) | peak RSS (MiB) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for fw in selected:
        r = results[fw]
        if "error" in r:
            lines.append(f"| {fw} | failed: {r['error'].replace('|', '/')} | | | | | | | |")
            continue
        final = r["evals"][-1] if r["evals"] else None
        reached = next((e for e in r["evals"] if e["accuracy"] >= target), None)
        r["time_to_target_s"] = reached["time_s"] if reached else None
        r["step_to_target"] = reached["step"] if reached else None
        acc = f"{100 * final['accuracy']:.2f}%" if final and final["step"] == total else \
            (f"{100 * final['accuracy']:.2f}% (step {final['step']})" if final else "-")
        delta = f"{100 * (final['accuracy'] - base_acc):+.2f}" if final and base_acc is not None else "-"
        to_target = f"{reached['time_s']:.1f} (step {reached['step']})" if reached else "not reached"
        if fw == "kiln":
            compile_s = fmt_time(r["compile_s"])
        elif fw == "torch":
            compile_s = "none"
        else:
            compile_s = fmt_time(r.get("first_step_s", 0) + r.get("first_eval_s", 0))
        lines.append(f"| {fw} | {acc} | {delta} | {to_target} | {fmt_time(r['total_s'])} | "
                     f"{r['steps'] * BATCH / r['total_s']:.0f} | {fmt_time(r.get('setup_s'))} | "
                     f"{compile_s} | {r['peak_rss_kib'] / 1024:.0f} |")
    ok = [fw for fw in selected if "error" not in results[fw]]
    steps = sorted({e["step"] for fw in ok for e in results[fw]["evals"]})
    accuracy = [f"| step | " + " | ".join(ok) + " |", "|---|" + "---|" * len(ok)]
    for s in steps:
        cells = []
        for fw in ok:
            e = next((e for e in results[fw]["evals"] if e["step"] == s), None)
            cells.append(f"{100 * e['accuracy']:.2f}% ({e['loss']:.4f})" if e else "-")
        accuracy.append(f"| {s} | " + " | ".join(cells) + " |")
    kiln = results.get("kiln", {})
    notes = []
    if "step_share" in kiln:
        notes.append(f"kiln-train's loop overhead: the step itself {100 * kiln['step_share']:.0f}% of its time "
                     f"(kiln-train's own count, from the first step to the end, data loading excluded: "
                     f"{kiln['kiln_examples_per_s']:.1f} examples/s); the rest is gathering the "
                     f"batches, scoring each batch's logits, the evaluations and printing.")
    if "kiln" in ok and "torch" in ok and base_acc is not None:
        diff = 100 * (kiln["evals"][-1]["accuracy"] - base_acc)
        notes.append(f"Kiln vs PyTorch after {total} steps: {diff:+.2f} percentage points "
                     f"({'within' if abs(diff) <= 0.5 else 'NOT within'} the 0.5 pp goal).")
    meta = (f"Command: `{command}`  \n"
            f"{time.strftime('%Y-%m-%d %H:%M')}, {cpu_model()}, {os.cpu_count()} logical CPUs, "
            f"{args.threads} threads (each framework pinned to CPUs "
            f"{next((results[f]['cpus'] for f in ok), '?')}), load {os.getloadavg()[0]:.2f}; "
            f"Kiln {git_state()}; versions {versions()}.  \n"
            f"LeNet-5 (examples/train/lenet.py, batch {BATCH}, seed {MODEL_SEED}) on Fashion-MNIST, "
            f"{args.epochs} epoch{'s' if args.epochs != 1 else ''} of {60000 // BATCH} steps, recipe {Path(args.config).name}: "
            f"SGD, lr {recipe['learning_rate']:g} x {recipe['decay_rate']:g}^(step/{recipe['decay_steps']}"
            f"{', floored' if recipe['staircase'] else ''}), l2 {recipe['l2']:g} on `{recipe['l2_weights']}`, "
            f"EMA {recipe['ema_decay']:g}{' (Kiln step also returns the gradients: gradient-outputs)' if recipe['gradient_outputs'] else ''}; example order seed {args.seed}; evaluation of the 10,000 test "
            f"images with the moving average every {args.eval_every} steps and at the end.  \n"
            f"Times from the start of data loading (Kiln: from launching kiln-train; the peers: after "
            f"importing the framework) to the evaluation that reached the target / to the end; they "
            f"include data loading, the evaluations, and for torch.compile and JAX their compilation. "
            f"Load: from that start to the first step (reading the gzip IDX files, the weights). "
            f"Compile: Kiln's kilnc (before, not in the total); torch.compile and JAX: their first "
            f"train step plus first evaluation, where they compile (in the total). Examples/s overall: "
            f"steps x {BATCH} / total time. PyTorch eager steps with autograd and in-place updates; "
            f"torch.compile compiles the whole step (torch.func gradient, update, average) as one "
            f"graph; JAX jits the same step.")
    text = meta + "\n\n" + "\n".join(lines) + "\n" + ("\n" + "\n\n".join(notes) + "\n" if notes else "")
    if ok:
        text += "\nTest accuracy (loss) at each evaluation:\n\n" + "\n".join(accuracy) + "\n"
    return text


def main():
    args = parse_args()
    if args.worker:
        return run_worker(args)
    check_order()
    recipe = read_config(args.config)
    selected = [f for f in args.frameworks.split(",") if f]
    unknown = [f for f in selected if f not in FRAMEWORKS]
    if unknown:
        raise SystemExit(f"unknown framework(s) {unknown}; known: {', '.join(FRAMEWORKS)}")
    if "kiln" in selected:
        for tool in ("kilnc", "kiln-train"):
            if not (Path(args.kiln_bin) / tool).exists():
                raise SystemExit(f"{Path(args.kiln_bin) / tool} not found; build Kiln or pass --kiln-bin")
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(ROOT / "examples" / "train"))
    import onnx
    import lenet
    onnx.save(lenet.build(BATCH, MODEL_SEED), str(work / "lenet.onnx"))
    results = {fw: run_framework(args, fw) for fw in selected}
    command = " ".join([Path(sys.executable).as_posix(), "bench/fashion_mnist.py"] + sys.argv[1:])
    text = report(args, recipe, results, selected, command)
    if args.json:
        Path(args.json).write_text(json.dumps({"command": command, "versions": versions(),
                                               "recipe": recipe, "args": vars(args),
                                               "results": results}, indent=1))
    print(text)
    return 0 if all("error" not in results[f] for f in selected) else 1


if __name__ == "__main__":
    sys.exit(main())
