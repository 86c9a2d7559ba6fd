#!/usr/bin/env python3
"""Data-parallel training throughput: Kiln (kiln-launch + kiln-train) against PyTorch DDP (gloo).

Both train the same model (bench/graphs.py's MLP 784-1024-1024-10 or LeNet-5) with plain SGD
on the same synthetic data, at 1 and at 2 processes on this host, each process with its share of
the cores (cores / processes threads) and the same per-replica batch. Reported per framework
and process count: steps per second of the whole group, examples per second, and the speed-up
from 1 to 2 processes; for Kiln also the all-reduce time per step and the share of it that the
bucket overlap hides behind the backward pass (kiln-train's own measurement).

    /tmp/torchenv/bin/python bench/data_parallel.py --model mlp --batch 32 --steps 300

Needs numpy and onnx, and torch for the peer. Prints a Markdown table (for docs/benchmarks.md)
with the command; models, data and logs go to --work (build/bench/data_parallel).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import graphs  # noqa: E402
from run import cpu_model, git_state  # noqa: E402

GRAPH = {"mlp": "mlp_b64", "lenet": "lenet"}
EXAMPLE = {"mlp": (784,), "lenet": (1, 28, 28)}


def kiln(args, work, procs):
    """Steps per second of kiln-launch with `procs` processes, and the overlap line."""
    cores = os.cpu_count()
    bin_dir = Path(args.kiln_bin)
    model = work / "model.onnx"
    artifact = work / f"kiln_b{args.batch}.kiln"
    if not artifact.exists():
        dims = "x".join(str(d) for d in (args.batch, *EXAMPLE[args.model]))
        subprocess.run([bin_dir / "kilnc", model, "--train", "--optimizer=sgd", "--learning-rate=0.001",
                        "--data-parallel=true", f"--input-shape=x={dims}", "-o", artifact], check=True)
    cmd = [bin_dir / "kiln-launch", "--nproc-per-node", str(procs), "--", bin_dir / "kiln-train", artifact,
           "--train-data", work / "x.npy", "--train-labels", work / "y.npy", "--steps", str(args.steps),
           "--print-every", str(args.steps), "--eval-every", "0", "--threads", str(max(1, cores // procs))]
    out = subprocess.run([str(c) for c in cmd], check=True, capture_output=True, text=True).stdout
    m = re.search(r"kiln-train: (\d+) steps in .*?\(([\d.]+) examples/sec", out)
    examples = float(m.group(2))
    overlap = re.search(r"all-reduce ([\d.]+) ms per step in ([\d.]+) buckets, (\d+)% of it hidden", out)
    return examples / (args.batch * procs), overlap.groups() if overlap else None


TORCH_WORKER = r"""
import os, sys, time, numpy as np, torch, torch.distributed as dist, torch.nn as nn
rank, world, store, model_kind, batch, steps, threads = sys.argv[1:8]
rank, world, batch, steps, threads = int(rank), int(world), int(batch), int(steps), int(threads)
torch.set_num_threads(threads)
dist.init_process_group("gloo", init_method="file://" + store, rank=rank, world_size=world)
torch.manual_seed(0)
if model_kind == "mlp":
    net = nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
else:
    net = nn.Sequential(nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
                        nn.MaxPool2d(2), nn.Flatten(), nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                        nn.Linear(84, 10))
model = nn.parallel.DistributedDataParallel(net)
opt = torch.optim.SGD(model.parameters(), lr=0.001)
x = torch.from_numpy(np.load(os.environ["X"]))
y = torch.from_numpy(np.load(os.environ["Y"]))
n = x.shape[0]
def step(s):
    first = ((s * world + rank) * batch) % (n - batch)
    opt.zero_grad(set_to_none=True)
    loss = nn.functional.cross_entropy(model(x[first:first + batch]), y[first:first + batch])
    loss.backward()
    opt.step()
for s in range(5):
    step(s)
dist.barrier()
t0 = time.perf_counter()
for s in range(steps):
    step(s)
dist.barrier()
if rank == 0:
    print(steps / (time.perf_counter() - t0))
"""


def torch_ddp(args, work, procs):
    cores = os.cpu_count()
    script = work / "ddp_worker.py"
    script.write_text(TORCH_WORKER)
    store = tempfile.mktemp(prefix="ddp-store-", dir=work)
    env = dict(os.environ, X=str(work / "x.npy"), Y=str(work / "y.npy"))
    workers = [subprocess.Popen([sys.executable, str(script), str(r), str(procs), store, args.model,
                                 str(args.batch), str(args.steps), str(max(1, cores // procs))],
                                stdout=subprocess.PIPE, text=True, env=env) for r in range(procs)]
    outs = [w.communicate()[0] for w in workers]
    if any(w.returncode for w in workers):
        raise RuntimeError("a DDP worker failed")
    return float(outs[0].strip())


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", choices=sorted(GRAPH), default="mlp")
    p.add_argument("--batch", type=int, default=32, help="examples per replica per step")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--procs", default="1,2", help="process counts to run")
    p.add_argument("--kiln-bin", default=str(HERE.parent / "build" / "bin"))
    p.add_argument("--work", default=str(HERE.parent / "build" / "bench" / "data_parallel"))
    args = p.parse_args()
    work = Path(args.work) / f"{args.model}_b{args.batch}"
    work.mkdir(parents=True, exist_ok=True)
    import onnx
    graph = graphs.GRAPHS[GRAPH[args.model]]
    model, _ = graph.build(graphs._rng(graph.name))
    onnx.save(model, str(work / "model.onnx"))
    rng = np.random.default_rng(0)
    count = args.batch * 2 * 64
    np.save(work / "x.npy", rng.random((count, *EXAMPLE[args.model]), dtype=np.float32))
    np.save(work / "y.npy", rng.integers(0, 10, count).astype(np.int64))

    rows = []
    base = {}
    for procs in [int(v) for v in args.procs.split(",")]:
        k, overlap = kiln(args, work, procs)
        t = torch_ddp(args, work, procs)
        base.setdefault("kiln", k)
        base.setdefault("torch", t)
        comm = f"{overlap[0]} ms in {overlap[1]} buckets, {overlap[2]}% hidden" if overlap else "none (1 process)"
        rows.append(f"| {procs} | {k:.1f} | {k * args.batch * procs:.0f} | {k / base['kiln']:.2f}x | "
                    f"{t:.1f} | {t * args.batch * procs:.0f} | {t / base['torch']:.2f}x | {k / t:.2f}x | {comm} |")
    print(f"`{' '.join(sys.argv)}` ({git_state()}; {cpu_model()}, {os.cpu_count()} cores; "
          f"{args.model}, batch {args.batch} per replica, {args.steps} steps)\n")
    print("| processes | Kiln steps/s | Kiln examples/s | Kiln scaling | DDP steps/s | DDP examples/s | "
          "DDP scaling | Kiln / DDP | Kiln all-reduce per step |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
