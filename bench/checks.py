#!/usr/bin/env python3
"""What Kiln's safety checks cost: run-time Gather index checks and the artifact seal.

    bench/checks.py                 # both tables
    bench/checks.py --repeat 200

Index checks: embedding lookups as BERT and GPT-2 make them (a Gather of B*S token ids from a
30522x768 or 50257x768 table, alone and followed by the position-embedding Add), compiled with
and without `kilnc --no-index-checks`, each run `--repeat` times by kiln-run in the same
session, alternating; the table gives each median and the ratio.

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
                kilnc(model, work / "checked.kiln")
                kilnc(model, work / "unchecked.kiln", "--no-index-checks")
                ids = work / "ids.npy"
                np.save(ids, np.random.default_rng(1).integers(0, vocab, tokens, dtype=np.int64))
                times = {"checked": [], "unchecked": []}
                for _ in range(args.rounds):
                    for kind in times:
                        times[kind].append(median_run_ms(work / f"{kind}.kiln", ["--input", f"ids={ids}"],
                                                         args.repeat, work))
                c, u = statistics.median(times["checked"]), statistics.median(times["unchecked"])
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
    p.add_argument("--only", choices=["index", "seal"], help="one table only")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if args.only != "seal":
            index_checks(args, work)
        if args.only != "index":
            seal(args, work)


if __name__ == "__main__":
    sys.exit(main())
