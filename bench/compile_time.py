#!/usr/bin/env python3
"""Compile time against graph size: kilnc on chains of n nodes, and on real models.

    bench/compile_time.py                          # chains of 250 .. 10000 nodes
    bench/compile_time.py --sizes 1000,4000 --model bench/out/models/resnet50_b1/model.onnx

A chain alternates MatMul by a constant 64x64 matrix, Add of a constant and Relu on a 32x64
tensor (`--kind elementwise`: Add, Mul and Relu, which fuse into kernels of up to 64 ops), so
every node reaches code generation, one kernel per MatMul and its epilogue. For each graph the table
gives kilnc's wall time and the phases `kilnc -v` reports; the growth exponent between
successive sizes (log time ratio / log size ratio) is 1 for linear growth. `--mlir-timing`
(passed through with --pass-timing) prints MLIR's per-pass times for the largest graph.
Needs numpy and onnx.
"""
import argparse
import math
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
PHASE_RE = re.compile(r"kilnc: (.+?) \(([0-9.]+) s\)")


def chain(path, n, ops):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(n)
    nodes, inits, prev = [], [], "x"
    for i in range(n):
        kind = ops[i % 3]
        out = f"t{i}"
        if kind == "Relu":
            nodes.append(helper.make_node("Relu", [prev], [out], name=f"n{i}"))
        else:
            c = f"c{i}"
            shape = (64, 64) if kind == "MatMul" else (1, 64)
            value = rng.uniform(0.5, 1.5, shape).astype(np.float32) / (64 if kind == "MatMul" else 1)
            inits.append(numpy_helper.from_array(value, c))
            nodes.append(helper.make_node(kind, [prev, c], [out], name=f"n{i}"))
        prev = out
    graph = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [32, 64])],
                              [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [32, 64])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(path))


def compile_once(kilnc, model, out, extra=()):
    t0 = time.perf_counter()
    r = subprocess.run([str(kilnc), str(model), "-o", str(out), "-v", *extra], capture_output=True, text=True)
    secs = time.perf_counter() - t0
    phases = {m.group(1).split(" ")[0]: float(m.group(2)) for m in PHASE_RE.finditer(r.stderr)}
    return r.returncode, secs, phases, r.stderr


def main(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="250,500,1000,2000,4000,10000", help="chain lengths")
    p.add_argument("--kind", choices=["matmul", "elementwise"], default="matmul", help="what the chain is made of")
    p.add_argument("--model", action="append", default=[], help="also time this ONNX model (repeatable)")
    p.add_argument("--kiln-bin", type=Path, default=HERE.parent / "build" / "bin")
    p.add_argument("--out", type=Path, default=HERE / "out" / "compile_time")
    p.add_argument("--pass-timing", action="store_true", help="print MLIR's pass timing for the largest chain")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    kilnc = args.kiln_bin / "kilnc"
    print(f"# bench/compile_time.py {' '.join(argv)}")
    print(f"{'graph':>28} {'seconds':>8} {'growth':>7}  phases")
    last = None
    sizes = [int(s) for s in args.sizes.split(",")]
    for n in sizes:
        model = args.out / f"chain{n}.onnx"
        chain(model, n, ("MatMul", "Add", "Relu") if args.kind == "matmul" else ("Add", "Mul", "Relu"))
        extra = ["--mlir-timing"] if args.pass_timing and n == sizes[-1] else []
        rc, secs, phases, err = compile_once(kilnc, model, args.out / f"chain{n}.kiln", extra)
        growth = f"{math.log(secs / last[1]) / math.log(n / last[0]):.2f}" if last and rc == 0 else ""
        shown = ", ".join(f"{k} {v:.2f}" for k, v in phases.items())
        print(f"{'chain of ' + str(n):>28} {secs:8.2f} {growth:>7}  {shown if rc == 0 else 'FAILED: ' + err[-200:]}",
              flush=True)
        if extra:
            print(err)
        last = (n, secs)
    for m in args.model:
        rc, secs, phases, err = compile_once(kilnc, m, args.out / (Path(m).parent.name + ".kiln"))
        shown = ", ".join(f"{k} {v:.2f}" for k, v in phases.items())
        print(f"{Path(m).parent.name:>28} {secs:8.2f} {'':>7}  {shown if rc == 0 else 'FAILED: ' + err[-200:]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
