#!/usr/bin/env python3
"""What Kiln's safety checks cost: run-time index checks and the artifact seal.

    bench/checks.py                 # all three tables
    bench/checks.py --repeat 200

Index checks: embedding lookups as BERT and GPT-2 make them (a Gather of B*S token ids from a
30522x768 or 50257x768 table, alone and followed by the position-embedding Add), and one graph
for each of the other checked ops (GatherElements, GatherND, ScatterElements, ScatterND), all
compiled with and without `kilnc --no-index-checks`, each run `--repeat` times by kiln-run in
the same session, alternating; the tables give each median and the ratio.

Seal: kiln-run opening artifacts of 1 MB to 400 MB of weights with and without `--trusted`
(the seal check reads the whole file once); median wall time of `kiln-run --info`-free runs.
Needs numpy and onnx; uses build/bin.
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / "build" / "bin"


def save(path, nodes, inputs, outputs, inits):
    import onnx
    from onnx import helper
    graph = helper.make_graph(nodes, path.stem, inputs, outputs, inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))


def embedding(path, vocab, tokens, with_add):
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)
    table = numpy_helper.from_array(rng.standard_normal((vocab, 768), dtype=np.float32), "table")
    nodes = [helper.make_node("Gather", ["table", "ids"], ["e"], name="embed")]
    inits = [table]
    out = "e"
    if with_add:
        pos = numpy_helper.from_array(rng.standard_normal((tokens, 768), dtype=np.float32), "pos")
        inits.append(pos)
        nodes.append(helper.make_node("Add", ["e", "pos"], ["y"]))
        out = "y"
    save(path, nodes, [helper.make_tensor_value_info("ids", TensorProto.INT64, [tokens])],
         [helper.make_tensor_value_info(out, TensorProto.FLOAT, [tokens, 768])], inits)


# The other ops with run-time index checks, one graph each at sizes their real uses have:
# (label, ONNX op, attributes, {input: (shape, dtype, index bound or None)}, output shape).
INDEXED_OPS = [
    ("GatherElements, axis 1 (per-row selection)", "GatherElements", {"axis": 1},
     {"data": ((1024, 1000), np.float32, None), "indices": ((1024, 256), np.int64, 1000)},
     (1024, 256)),
    ("GatherND, 4096 rows of a 30522x768 table", "GatherND", {},
     {"data": ((30522, 768), np.float32, None), "indices": ((4096, 1), np.int64, 30522)},
     (4096, 768)),
    ("ScatterElements, axis 1", "ScatterElements", {"axis": 1},
     {"data": ((1024, 1000), np.float32, None), "indices": ((1024, 256), np.int64, 1000),
      "updates": ((1024, 256), np.float32, None)}, (1024, 1000)),
    ("ScatterND, 512 rows into 4096x768", "ScatterND", {},
     {"data": ((4096, 768), np.float32, None), "indices": ((512, 1), np.int64, 4096),
      "updates": ((512, 768), np.float32, None)}, (4096, 768)),
]


def indexed_op(path, work, op, attributes, inputs, output):
    """A one-node model of `op` whose operands are all graph inputs; returns kiln-run's flags."""
    from onnx import TensorProto, helper
    rng = np.random.default_rng(3)
    infos, flags = [], []
    for name, (shape, dtype, bound) in inputs.items():
        if bound is None:
            value = rng.standard_normal(shape, dtype=np.float32)
        elif op == "ScatterND":
            # Distinct rows: ScatterND leaves the result of repeated indices unspecified.
            value = rng.permutation(bound)[:shape[0]].reshape(shape).astype(dtype)
        elif op == "ScatterElements":
            value = np.stack([rng.permutation(bound)[:shape[1]] for _ in range(shape[0])]).astype(dtype)
        else:
            value = rng.integers(0, bound, shape, dtype=dtype)
        np.save(work / f"{name}.npy", value)
        flags += ["--input", f"{name}={work / (name + '.npy')}"]
        elem = TensorProto.INT64 if dtype == np.int64 else TensorProto.FLOAT
        infos.append(helper.make_tensor_value_info(name, elem, list(shape)))
    node = helper.make_node(op, list(inputs), ["y"], **attributes)
    save(path, [node], infos, [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(output))], [])
    return flags


def checked_against_unchecked(args, work, model, inputs):
    """Medians of the checked and unchecked builds of `model`, alternating, in ms."""
    kilnc(model, work / "checked.kiln")
    kilnc(model, work / "unchecked.kiln", "--no-index-checks")
    times = {"checked": [], "unchecked": []}
    for _ in range(args.rounds):
        for kind in times:
            times[kind].append(median_run_ms(work / f"{kind}.kiln", inputs, args.repeat, work))
    return statistics.median(times["checked"]), statistics.median(times["unchecked"])


def indexed_ops(args, work):
    print()
    print("| graph | checked (ms) | unchecked (ms) | checked / unchecked |")
    print("|---|---:|---:|---:|")
    for label, op, attributes, inputs, output in INDEXED_OPS:
        model = work / "op.onnx"
        flags = indexed_op(model, work, op, attributes, inputs, output)
        c, u = checked_against_unchecked(args, work, model, flags)
        print(f"| {label} | {c:.4f} | {u:.4f} | {c / u:.3f} |", flush=True)


def weights(path, megabytes):
    from onnx import TensorProto, helper, numpy_helper
    n = megabytes * (1 << 20) // 4 // 256
    # Random, so that nothing folds the product away.
    w = numpy_helper.from_array(np.random.default_rng(2).standard_normal((256, n), dtype=np.float32), "w")
    save(path, [helper.make_node("MatMul", ["x", "w"], ["y"])],
         [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 256])],
         [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, n])], [w])


def kilnc(model, out, *flags):
    subprocess.run([str(BIN / "kilnc"), str(model), "-o", str(out), *flags], check=True)


def median_run_ms(artifact, inputs, repeat, work):
    timing = work / "t.json"
    subprocess.run([str(BIN / "kiln-run"), str(artifact), *inputs, "--repeat", str(repeat), "--warmup", "5",
                    "--timing-json", str(timing)], check=True, capture_output=True)
    return statistics.median(json.loads(timing.read_text())["run_ms"])


def index_checks(args, work):
    print("| graph | tokens | checked (ms) | unchecked (ms) | checked / unchecked |")
    print("|---|---:|---:|---:|---:|")
    for vocab, name in [(30522, "BERT"), (50257, "GPT-2")]:
        for tokens in (128, 512, 4096):
            for with_add in (False, True):
                model = work / "m.onnx"
                embedding(model, vocab, tokens, with_add)
                ids = work / "ids.npy"
                np.save(ids, np.random.default_rng(1).integers(0, vocab, tokens, dtype=np.int64))
                c, u = checked_against_unchecked(args, work, model, ["--input", f"ids={ids}"])
                label = f"{name} embedding{' + position Add' if with_add else ''}"
                print(f"| {label} | {tokens} | {c:.4f} | {u:.4f} | {c / u:.3f} |", flush=True)


def seal(args, work):
    print()
    print("| weights | open + run, sealed (ms) | --trusted (ms) | difference (ms) |")
    print("|---:|---:|---:|---:|")
    x = work / "x.npy"
    np.save(x, np.zeros((1, 256), np.float32))
    for mb in (1, 50, 400):
        model = work / "w.onnx"
        weights(model, mb)
        kilnc(model, work / "w.kiln")
        times = {"sealed": [], "trusted": []}
        for _ in range(args.rounds * 3):
            for kind in times:
                flags = ["--trusted"] if kind == "trusted" else []
                t0 = time.perf_counter()
                subprocess.run([str(BIN / "kiln-run"), str(work / "w.kiln"), str(x), *flags], check=True,
                               capture_output=True)
                times[kind].append((time.perf_counter() - t0) * 1000)
        s, t = statistics.median(times["sealed"]), statistics.median(times["trusted"])
        print(f"| {mb} MB | {s:.1f} | {t:.1f} | {s - t:.1f} |", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeat", type=int, default=100, help="runs per kiln-run call (default 100)")
    p.add_argument("--rounds", type=int, default=3, help="alternating kiln-run calls per variant (default 3)")
    p.add_argument("--only", choices=["index", "ops", "seal"], help="one table only")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if args.only in (None, "index"):
            index_checks(args, work)
        if args.only in (None, "ops"):
            indexed_ops(args, work)
        if args.only in (None, "seal"):
            seal(args, work)


if __name__ == "__main__":
    sys.exit(main())
