#!/usr/bin/env python3
"""Where one model's time goes: Kiln's kernels against ONNX Runtime's nodes, node by node.

Compiles the model with `kilnc --profile`, times it with `kiln-run --profile --timing-json`,
runs ONNX Runtime (CPU provider, all graph optimizations, same threads, same input) under its
own profiler, and lines the two up by the ONNX nodes each kernel or node covers:

    bench/nodes.py bench/out/models/resnet50_b1            # a folder from bench/models.py
    bench/nodes.py model.onnx --input input.npy --top 20
    bench/nodes.py bench/out/models/densenet121_b1 --by-op # totals per ONNX op type only

Both sides fuse, differently. A Kiln kernel lists the nodes it computes. ONNX Runtime names a
fused node after the tensor it writes (`/layer1/relu/Relu_output_0_nchwc` is a Conv with its
Relu), so each of its nodes is taken to cover the producer of that tensor and the nodes back
along first inputs to the op it reports running (the Conv). Kernels and nodes that share an
ONNX node form one group; each row is a group, its time per run on each side and the
difference, largest loss first. Times are per run, averaged over the profiled runs of each
side; the profilers add a little to every kernel, so compare rows, not the totals with
bench/models.py's.

Needs onnx, onnxruntime and numpy (bench/requirements-models.txt's environment).
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def ort_times(model, feeds, threads, runs, workdir):
    """{ORT node name: (op type, ms per run)} from ONNX Runtime's profiler."""
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.enable_profiling = True
    opts.profile_file_prefix = str(Path(workdir) / "ort")
    session = ort.InferenceSession(str(model), opts, providers=["CPUExecutionProvider"])
    for _ in range(runs):
        session.run(None, feeds)
    events = json.loads(Path(session.end_profiling()).read_text())
    times = {}
    suffix = "_kernel_time"
    for e in events:
        if e.get("cat") != "Node" or not e["name"].endswith(suffix):
            continue
        name = e["name"][: -len(suffix)]
        op, total = times.get(name, (e["args"].get("op_name", "?"), 0.0))
        times[name] = (op, total + e["dur"] / 1000.0 / runs)
    return times


def compile_kiln(args, model, workdir):
    """The artifact kilnc --profile makes of the model."""
    artifact = Path(workdir) / "model.kiln"
    compile_cmd = [str(args.kiln_bin / "kilnc"), str(model), "--profile", "-o", str(artifact)]
    r = subprocess.run(compile_cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"nodes.py: kilnc failed:\n{r.stderr}")
    return artifact


def kiln_times(args, artifact, inputs, workdir):
    """{kernel id: (ONNX node names, kind, ms per run)} from kiln-run --profile."""
    timing = Path(workdir) / "timing.json"
    run_cmd = [str(args.kiln_bin / "kiln-run"), str(artifact)]
    run_cmd += [f"--input={name}={path}" for name, path in inputs.items()]
    run_cmd += ["--repeat", str(args.runs), "--warmup", "5", "--threads", str(args.threads),
                "--profile", "--timing-json", str(timing)]
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    r = subprocess.run(run_cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"nodes.py: kiln-run failed:\n{r.stderr}")
    kernels = json.loads(timing.read_text())["kernels"]
    return {(k["function"], k["id"]):
            ([n.strip() for n in k["nodes"].split(",") if n.strip()], k["kind"], k["ms_per_run"])
            for k in kernels}


def labels(graph):
    """Each ONNX node's name as Kiln's profile gives it, by the node's first output (or its
    name where it has none): its own name, or for an unnamed node `Op#index -> output`."""
    return {(n.output[0] if n.output else n.name):
            n.name or f"{n.op_type}#{i} -> {n.output[0] if n.output else ''}"
            for i, n in enumerate(graph.node)}


def node_key(node):
    return node.output[0] if node.output else node.name


def ort_coverage(nodes, producer, label, name, op):
    """The ONNX nodes (by label) an ORT node covers (see the module's description); `nodes`
    maps names to nodes and `producer` tensors to the nodes that write them."""
    if not name:
        return [f"(unnamed {op} of onnxruntime)"]
    base = name[: -len("_nchwc")] if name.endswith("_nchwc") else name
    node = nodes.get(base) or producer.get(base)
    if node is None:
        return [name]
    covered = [label[node_key(node)]]
    # Walk back along first inputs to the op ORT says it ran (a Conv fused with what follows).
    walk = node
    for _ in range(4):
        if walk.op_type == op or not walk.input or walk.input[0] not in producer:
            break
        walk = producer[walk.input[0]]
        covered.append(label[node_key(walk)])
    return covered if walk.op_type == op else [label[node_key(node)]]


class Groups:
    """Union-find over ONNX node names."""

    def __init__(self):
        self.parent = {}

    def find(self, x):
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def join(self, names):
        roots = [self.find(n) for n in names]
        for r in roots[1:]:
            self.parent[r] = roots[0]
        return roots[0]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", type=Path, help="an .onnx file, or a bench/models.py folder "
                   "(its model.onnx and inputs.npz)")
    p.add_argument("--input", action="append", default=[], metavar="[NAME=]FILE.npy",
                   help="an input (repeatable; a lone file feeds the model's only input)")
    p.add_argument("--threads", type=int, default=2, help="threads for both (default 2)")
    p.add_argument("--runs", type=int, default=30, help="profiled runs on each side (default 30)")
    p.add_argument("--rounds", type=int, default=3,
                   help="alternated rounds of both; medians per kernel and node (default 3)")
    p.add_argument("--top", type=int, default=40, help="rows to print (default 40; 0: all)")
    p.add_argument("--by-op", action="store_true", help="only the totals per ONNX op type")
    p.add_argument("--kiln-bin", type=Path, default=HERE.parent / "build" / "bin")
    p.add_argument("--json", type=Path, help="also write the rows here")
    args = p.parse_args()

    import numpy as np
    import onnx

    model = args.model / "model.onnx" if args.model.is_dir() else args.model
    if not model.is_file():
        p.error(f"no model at {model}")
    graph = onnx.load(str(model), load_external_data=False).graph
    initializers = {i.name for i in graph.initializer}
    input_names = [i.name for i in graph.input if i.name not in initializers]

    with tempfile.TemporaryDirectory(prefix="kiln-nodes-") as workdir:
        inputs = {}
        if args.model.is_dir() and not args.input and (args.model / "inputs.npz").is_file():
            archive = np.load(args.model / "inputs.npz")
            for name in archive.files:
                inputs[name] = Path(workdir) / f"{len(inputs)}.npy"
                np.save(inputs[name], archive[name])
        for spec in args.input:
            name, _, path = spec.rpartition("=")
            if not name:
                if len(input_names) != 1:
                    p.error(f"--input {spec}: the model has {len(input_names)} inputs; name it")
                name = input_names[0]
            inputs[name] = Path(path)
        missing = [n for n in input_names if n not in inputs]
        if missing:
            p.error(f"no data for input(s) {', '.join(missing)} (--input NAME=FILE.npy)")
        feeds = {name: np.load(path) for name, path in inputs.items()}

        # Rounds alternate the two, and each kernel or node keeps its median over the rounds,
        # so that a burst of load on a shared machine moves neither side alone.
        artifact = compile_kiln(args, model, workdir)
        kiln_rounds, ort_rounds = [], []
        for _ in range(args.rounds):
            kiln_rounds.append(kiln_times(args, artifact, inputs, workdir))
            ort_rounds.append(ort_times(model, feeds, args.threads, args.runs, workdir))
        kiln = [(nodes, kind, statistics.median(r.get(key, (nodes, kind, 0.0))[2] for r in kiln_rounds))
                for key, (nodes, kind, _) in kiln_rounds[0].items()]
        ort = {name: (op, statistics.median(r.get(name, (op, 0.0))[1] for r in ort_rounds))
               for name, (op, _) in ort_rounds[0].items()}

    label = labels(graph)
    op_of = {label[node_key(n)]: n.op_type for n in graph.node}
    groups = Groups()
    kiln_rows = []
    for nodes, kind, ms in kiln:
        kiln_rows.append((groups.join(nodes or [f"(kiln kernel {len(kiln_rows)})"]), nodes, ms))
    nodes = {n.name: n for n in graph.node if n.name}
    producer = {out: n for n in graph.node for out in n.output}
    ort_rows = []
    for name, (op, ms) in ort.items():
        covered = ort_coverage(nodes, producer, label, name, op)
        ort_rows.append((groups.join(covered), covered, op, ms))

    rows = collections.defaultdict(lambda: {"nodes": set(), "kiln_ms": 0.0, "ort_ms": 0.0,
                                            "kiln_kernels": 0, "ort_nodes": 0})
    for root, nodes, ms in kiln_rows:
        row = rows[groups.find(root)]
        row["nodes"].update(nodes)
        row["kiln_ms"] += ms
        row["kiln_kernels"] += 1
    for root, nodes, op, ms in ort_rows:
        row = rows[groups.find(root)]
        row["nodes"].update(nodes)
        row["ort_ms"] += ms
        row["ort_nodes"] += 1

    kiln_total = sum(r["kiln_ms"] for r in rows.values())
    ort_total = sum(r["ort_ms"] for r in rows.values())
    print(f"{model}: {args.threads} threads, {args.rounds} alternated rounds of "
          f"{args.runs} profiled runs each, medians")
    print(f"kiln kernels {kiln_total:.3f} ms per run ({len(kiln)} kernels); "
          f"onnxruntime nodes {ort_total:.3f} ms ({len(ort)} nodes); "
          f"onnxruntime / kiln {ort_total / kiln_total:.2f}x")

    by_op = collections.defaultdict(lambda: [0.0, 0.0, 0])
    for row in rows.values():
        ops = sorted({op_of.get(n, "?") for n in row["nodes"]})
        key = "+".join(ops)
        by_op[key][0] += row["kiln_ms"]
        by_op[key][1] += row["ort_ms"]
        by_op[key][2] += 1
    print(f"\n{'ONNX ops of a group':40s} {'groups':>6s} {'kiln ms':>9s} {'ORT ms':>9s} {'diff':>8s}")
    for key, (k, o, n) in sorted(by_op.items(), key=lambda kv: -(kv[1][0] - kv[1][1])):
        print(f"{key[:40]:40s} {n:6d} {k:9.3f} {o:9.3f} {k - o:+8.3f}")

    table = sorted(rows.values(), key=lambda r: -(r["kiln_ms"] - r["ort_ms"]))
    if not args.by_op:
        shown = table if args.top == 0 else table[: args.top]
        print(f"\n{'group (first ONNX node)':58s} {'kiln ms':>9s} {'ORT ms':>9s} {'diff':>8s}")
        for row in shown:
            first = min(row["nodes"])
            more = f" +{len(row['nodes']) - 1}" if len(row["nodes"]) > 1 else ""
            print(f"{(first + more)[-58:]:58s} {row['kiln_ms']:9.3f} {row['ort_ms']:9.3f} "
                  f"{row['kiln_ms'] - row['ort_ms']:+8.3f}")
        if len(shown) < len(table):
            print(f"... {len(table) - len(shown)} more groups (--top 0 prints all)")
    if args.json:
        args.json.write_text(json.dumps([dict(r, nodes=sorted(r["nodes"])) for r in table], indent=1))


if __name__ == "__main__":
    main()
