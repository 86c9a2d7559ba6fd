"""N data-parallel replicas of batch B against one replica of batch N * B.

Builds bench/'s MLP (784-1024-1024-10) and LeNet-5, a random data set, and
for each model and N in (2, 4) trains 100 steps three ways: one replica with
batch N * B, N replicas in one process (kiln-train --devices) and N
processes (kiln-launch). Each loss must agree to 1e-5 relative and each
final weight tensor to 1e-5 of its largest magnitude (f32: only the order of
the gradient sums differs), and a rerun of
a data-parallel run must be bitwise identical. Prints one line per check.

Plain SGD at learning rate 1e-3: the two sum their gradients in different
orders, and where a ReLU's (or a max pool's) input lands within that
rounding of its kink, the step's gradient differs by a whole term. With
momentum and a large rate such a step sends the trajectories apart, as it
would between any two summation orders (two thread counts, say); at this
rate it moves the weights by well under the tolerance.

usage: dp_equivalence.py WORK_DIR BENCH_DIR
"""
import os
import subprocess
import sys
import zipfile

import numpy as np
import onnx

work, bench = sys.argv[1], sys.argv[2]
sys.path.insert(0, bench)
import graphs  # noqa: E402

B, STEPS, RTOL = 8, 100, 1e-5
os.makedirs(work, exist_ok=True)


def run(*args):
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, timeout=600)


def kilnc(model, shape, out, data_parallel):
    args = ["kilnc", model, "--train", "--optimizer=sgd", "--learning-rate=0.001",
            f"--input-shape=x={shape}", "-o", out]
    if data_parallel:
        args.append("--data-parallel=true")
    run(*args)


def losses(path):
    return np.loadtxt(path, delimiter=",", skiprows=1)[:, 2]


def weights(directory):
    ckpt = np.load(os.path.join(directory, f"ckpt-{STEPS}.npz"))
    arrays = {k: ckpt[k] for k in ckpt.files}
    # The trained weights (optimizer slots are named kind/weight).
    return {k: v for k, v in arrays.items()
            if isinstance(v, np.ndarray) and v.dtype.kind == "f" and "/" not in k}


def relative(a, b):
    """Largest difference relative to the reference's largest magnitude (per tensor: weights
    near zero carry the absolute rounding of the sums, not a relative one)."""
    return float(np.max(np.abs(a - b)) / np.max(np.abs(a)))


failures = 0
for name, example in (("mlp_b64", (784,)), ("lenet", (1, 28, 28))):
    graph = graphs.GRAPHS[name]
    model, _ = graph.build(graphs._rng(graph.name))
    model_path = os.path.join(work, f"{name}.onnx")
    onnx.save(model, model_path)
    rng = np.random.default_rng(7)
    count = 64 * 8
    np.save(os.path.join(work, f"{name}_x.npy"), rng.random((count, *example), dtype=np.float32))
    np.save(os.path.join(work, f"{name}_y.npy"), rng.integers(0, 10, count).astype(np.int64))
    data = ["--train-data", os.path.join(work, f"{name}_x.npy"),
            "--train-labels", os.path.join(work, f"{name}_y.npy"), "--steps", str(STEPS),
            "--print-every", str(STEPS), "--checkpoint-every", str(STEPS)]
    dims = "x".join(str(d) for d in example)
    replica = os.path.join(work, f"{name}_dp.kiln")
    kilnc(model_path, f"{B}x{dims}", replica, True)
    for n in (2, 4):
        single = os.path.join(work, f"{name}_b{n * B}.kiln")
        kilnc(model_path, f"{n * B}x{dims}", single, False)
        out = {kind: os.path.join(work, f"{name}_n{n}_{kind}") for kind in ("one", "threads", "threads2", "procs")}
        run("kiln-train", single, *data, "--metrics", out["one"] + ".csv", "--checkpoint-dir", out["one"])
        devices = ",".join(f"cpu:{i}" for i in range(n))
        for kind in ("threads", "threads2"):
            run("kiln-train", replica, *data, "--devices", devices, "--metrics", out[kind] + ".csv",
                "--checkpoint-dir", out[kind])
        run("kiln-launch", "--nproc-per-node", str(n), "--", "kiln-train", replica, *data,
            "--metrics", out["procs"] + ".csv", "--checkpoint-dir", out["procs"])
        reference_loss, reference = losses(out["one"] + ".csv"), weights(out["one"])
        for kind, label in (("threads", "threads"), ("procs", "processes")):
            loss_error = relative(reference_loss, losses(out[kind] + ".csv"))
            got = weights(out[kind])
            weight_error = max(relative(reference[k], got[k]) for k in reference)
            ok = len(losses(out[kind] + ".csv")) == STEPS and loss_error <= RTOL and weight_error <= RTOL
            failures += not ok
            print(f"{name}: {n} {label} of batch {B} vs 1 of batch {n * B}: {STEPS} losses within "
                  f"{loss_error:.1e}, weights within {weight_error:.1e}: {'ok' if ok else 'FAILED'}")
        same = open(out["threads"] + ".csv").read() == open(out["threads2"] + ".csv").read() and all(
            np.array_equal(weights(out["threads"])[k], weights(out["threads2"])[k]) for k in reference)
        failures += not same
        print(f"{name}: {n} replicas rerun: {'bitwise identical' if same else 'DIFFERENT'}")
sys.exit(1 if failures else 0)
