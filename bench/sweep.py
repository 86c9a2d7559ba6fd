#!/usr/bin/env python3
"""Shape sweeps: one-node Conv and Gemm/MatMul models over many sizes, Kiln against ONNX Runtime.

Every point is a one-node ONNX model with constant weights (as in a real network), compiled
by kilnc and timed by `kiln-run --repeat`, then timed in ONNX Runtime in this process with the
same thread count, one after the other on the same input file. The ratio is ORT's median over
Kiln's (above 1: Kiln is faster). A cliff shows up as a point far below the others.

    bench/sweep.py                         # every family, every size (about an hour)
    bench/sweep.py --family conv3x3 --sizes 7-32
    bench/sweep.py --family gemm_nt --quick
    bench/sweep.py --family conv3x3_256 --sizes 43,59 --rounds 5
    bench/sweep.py --family conv1x1 --quick --kilnc-arg=--blocked-layout=all
    bench/sweep.py --list

On a shared machine one timing of each runtime can swing by a third from one moment to the next;
--rounds N times each point N times, alternating the runtimes, and takes each one's median.

Results go to bench/out/sweep/<family>.json and, with matplotlib, a plot per family in
bench/out/sweep/<family>.png (`--plot-dir docs/images` to refresh the committed plots). Run it
with the benchmark venv's Python (bench/.venv/bin/python, made by bench/run.sh) or any Python
with numpy, onnx and onnxruntime.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from selection import choose

HERE = Path(__file__).resolve().parent
MEDIAN_RE = re.compile(r"(\d+) runs?: median ([0-9.eE+-]+) ms per run")

# Families: (description, sizes swept, builder(size) -> (nodes, weights, input shape)).
# Convolutions sweep the output size (height = width); channel counts are those of the stages of
# ResNet-50, MobileNetV2 and Inception-v3 that use each filter shape.


def conv(cin, cout, k, stride=1, group=1, kw=None):
    kh, kw = (k, k) if kw is None else (k, kw)

    def build(out):
        ih, iw = (out - 1) * stride + kh - 2 * (kh // 2), (out - 1) * stride + kw - 2 * (kw // 2)
        attrs = dict(kernel_shape=[kh, kw], strides=[stride, stride], group=group,
                     pads=[kh // 2, kw // 2, kh // 2, kw // 2])
        return ("Conv", attrs, [1, cin, ih, iw], [(cout, cin // group, kh, kw), (cout,)])
    return build


def gemm(n, k, trans_b):
    def build(m):
        b = (n, k) if trans_b else (k, n)
        return ("Gemm", dict(transB=1) if trans_b else {}, [m, k], [b, (n,)])
    return build


def matmul(n, k):
    def build(m):
        return ("MatMul", {}, [m, k], [(k, n)])
    return build


OUT_SIZES = list(range(7, 81))
M_SIZES = list(range(1, 65))
FAMILIES = {
    "conv1x1": ("1x1 256->64, stride 1 (ResNet bottleneck)", OUT_SIZES, conv(256, 64, 1)),
    "conv1x1_wide": ("1x1 512->1000 (SqueezeNet classifier)", OUT_SIZES, conv(512, 1000, 1)),
    "conv3x3": ("3x3 64->64, stride 1, pad 1 (ResNet stage 1)", OUT_SIZES, conv(64, 64, 3)),
    "conv3x3_256": ("3x3 256->256, stride 1, pad 1 (ResNet stage 3, VGG)", OUT_SIZES, conv(256, 256, 3)),
    "conv3x3_s2": ("3x3 64->128, stride 2, pad 1", OUT_SIZES, conv(64, 128, 3, stride=2)),
    "conv1x1_s2": ("1x1 256->512, stride 2 (ResNet downsample)", OUT_SIZES, conv(256, 512, 1, stride=2)),
    "conv5x5": ("5x5 48->64, pad 2 (Inception-v3)", OUT_SIZES, conv(48, 64, 5)),
    "conv7x1": ("7x1 128->128, pad 3,0 (Inception-v3)", OUT_SIZES, conv(128, 128, 7, kw=1)),
    "conv1x7": ("1x7 128->128, pad 0,3 (Inception-v3)", OUT_SIZES, conv(128, 128, 1, kw=7)),
    "dw3x3": ("depthwise 3x3, 144 channels (MobileNetV2)", OUT_SIZES, conv(144, 144, 3, group=144)),
    "dw3x3_s2": ("depthwise 3x3 stride 2, 96 channels", OUT_SIZES, conv(96, 96, 3, stride=2, group=96)),
    "dw5x5": ("depthwise 5x5, 240 channels (EfficientNet-B0)", OUT_SIZES, conv(240, 240, 5, group=240)),
    "gemm_nt": ("Gemm transB=1, K 768 N 768 (BERT projection)", M_SIZES, gemm(768, 768, True)),
    "gemm_nt_fc": ("Gemm transB=1, K 2048 N 1000 (ResNet-50 classifier)", M_SIZES, gemm(1000, 2048, True)),
    "gemm_nn": ("Gemm, K 768 N 3072 (BERT FFN up)", M_SIZES, gemm(3072, 768, False)),
    "matmul": ("MatMul, K 3072 N 768 (BERT FFN down)", M_SIZES, matmul(768, 3072)),
    "gemm_vgg": ("Gemm transB=1, K 25088 N 4096 (VGG fc6)", [1, 2, 4, 8, 16], gemm(4096, 25088, True)),
}


def make_model(path, op, attrs, in_shape, weight_shapes, rng):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    names = ["x"] + [f"w{i}" for i in range(len(weight_shapes))]
    inits = [numpy_helper.from_array((rng.standard_normal(s) * (1.0 / np.sqrt(np.prod(s[1:]) or 1)))
                                     .astype(np.float32), names[i + 1])
             for i, s in enumerate(weight_shapes)]
    node = helper.make_node(op, names, ["y"], **attrs)
    graph = helper.make_graph([node], "sweep", [helper.make_tensor_value_info("x", TensorProto.FLOAT, in_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    onnx.save(model, str(path))


def ort_session(model_path, x, threads):
    """An ONNX Runtime session of the model, warmed up, and its output."""
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    sess = ort.InferenceSession(str(model_path), opts, providers=["CPUExecutionProvider"])
    out = sess.run(None, {"x": x})[0]
    for _ in range(3):
        sess.run(None, {"x": x})
    return sess, out


def time_ort(sess, x, budget):
    times, start = [], time.perf_counter()
    while len(times) < 5 or (time.perf_counter() - start < budget and len(times) < 10000):
        t0 = time.perf_counter()
        sess.run(None, {"x": x})
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def compile_kiln(bin_dir, work, extra_args=()):
    t0 = time.perf_counter()
    r = subprocess.run([str(bin_dir / "kilnc"), str(work / "model.onnx"), "-o", str(work / "model.kiln"),
                        *extra_args], capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": (r.stderr or r.stdout).strip().splitlines()[-1]}
    return {"compile_s": time.perf_counter() - t0}


def time_kiln(bin_dir, work, threads, ort_ms, budget):
    # Aim for `budget` seconds of timed runs, guessing Kiln's time from ORT's.
    reps = int(min(2000, max(5, budget * 1e3 / max(ort_ms, 1e-3))))
    r = subprocess.run([str(bin_dir / "kiln-run"), str(work / "model.kiln"), str(work / "x.npy"), "--repeat",
                        str(reps), "--warmup", str(max(2, reps // 10)), "--threads", str(threads),
                        "--output-dir", str(work / "out")], capture_output=True, text=True)
    m = MEDIAN_RE.search(r.stdout)
    if r.returncode != 0 or not m:
        return {"error": (r.stderr or r.stdout).strip()[-200:]}
    return {"ms": float(m.group(2)), "y": np.load(work / "out" / "y.npy")}


def parse_sizes(text, default):
    if not text:
        return default
    sizes = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        sizes += list(range(int(lo), int(hi or lo) + 1))
    return sizes


def plot(family, desc, points, path, xlabel):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("  (matplotlib not installed: no plot)")
        return
    ok = [p for p in points if "kiln_ms" in p]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 5.5), sharex=True,
                                      gridspec_kw={"height_ratios": [3, 2]})
    xs = [p["size"] for p in ok]
    top.plot(xs, [p["kiln_ms"] for p in ok], "o-", ms=3, label="Kiln")
    top.plot(xs, [p["ort_ms"] for p in ok], "s-", ms=3, label="ONNX Runtime")
    top.set_yscale("log")
    top.set_ylabel("ms per run")
    top.legend()
    top.set_title(f"{family}: {desc}")
    bottom.plot(xs, [p["ort_ms"] / p["kiln_ms"] for p in ok], "o-", ms=3, color="C2")
    bottom.axhline(1.0, color="gray", lw=0.8)
    bottom.axhline(1 / 1.2, color="C3", lw=0.8, ls="--", label="1.2x slower")
    bottom.set_yscale("log")
    bottom.set_ylabel("ORT ms / Kiln ms")
    bottom.set_xlabel(xlabel)
    bottom.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--family", default="all", help="comma-separated families (default all; --list)")
    p.add_argument("--sizes", help="sizes to sweep, e.g. 7-32,56 (default: the family's)")
    p.add_argument("--quick", action="store_true", help="every 4th size only")
    p.add_argument("--threads", type=int, default=2, help="threads for both runtimes (default 2)")
    p.add_argument("--budget", type=float, default=0.3, help="seconds of timed runs per point and runtime")
    p.add_argument("--rounds", type=int, default=1,
                   help="times each point is timed, the runtimes alternating; each one's median counts (default 1)")
    p.add_argument("--kiln-bin", type=Path, default=HERE.parent / "build" / "bin")
    p.add_argument("--kilnc-arg", action="append", default=[], metavar="ARG",
                   help="an extra kilnc argument, e.g. --kilnc-arg=--blocked-layout=all (repeatable); "
                        "recorded in the JSON, and the plot is named for it")
    p.add_argument("--out", type=Path, default=HERE / "out" / "sweep")
    p.add_argument("--plot-dir", type=Path, help="where the plots go (default: --out)")
    p.add_argument("--list", action="store_true", help="list the families and exit")
    args = p.parse_args(argv)
    if args.list:
        for name, (desc, sizes, _) in FAMILIES.items():
            print(f"{name:14} {desc}  [{sizes[0]}..{sizes[-1]}]")
        return 0
    families = choose(args.family, FAMILIES, "family", p)
    args.out.mkdir(parents=True, exist_ok=True)
    plot_dir = args.plot_dir or args.out
    if args.rounds < 1:
        p.error("--rounds must be at least 1")
    print(f"# bench/sweep.py {' '.join(argv)}  (load average {os.getloadavg()[0]:.2f}, {args.threads} threads)")
    worst = []
    for family in families:
        desc, default_sizes, build = FAMILIES[family]
        sizes = parse_sizes(args.sizes, default_sizes)
        if args.quick:
            sizes = sizes[::4]
        print(f"\n{family}: {desc}")
        print(f"{'size':>5} {'kiln ms':>10} {'ort ms':>10} {'ort/kiln':>9} {'compile s':>9}")
        points = []
        for size in sizes:
            work = args.out / family / str(size)
            shutil.rmtree(work, ignore_errors=True)
            work.mkdir(parents=True)
            rng = np.random.default_rng(size)
            op, attrs, in_shape, weights = build(size)
            make_model(work / "model.onnx", op, attrs, in_shape, weights, rng)
            x = rng.standard_normal(in_shape).astype(np.float32)
            np.save(work / "x.npy", x)
            sess, ref = ort_session(work / "model.onnx", x, args.threads)
            k = compile_kiln(args.kiln_bin, work, args.kilnc_arg)
            ort_times, kiln_times = [], []
            for _ in range(args.rounds):
                ort_times.append(time_ort(sess, x, args.budget))
                if "error" in k:
                    break
                run = time_kiln(args.kiln_bin, work, args.threads, ort_times[-1], args.budget)
                if "error" in run:
                    k = run
                    break
                kiln_times.append(run["ms"])
                k["y"] = run["y"]
            del sess
            ort_ms = statistics.median(ort_times)
            point = {"size": size, "ort_ms": ort_ms}
            if "error" in k:
                point["error"] = k["error"]
                print(f"{size:>5} {'error':>10} {ort_ms:>10.4f}  {k['error']}")
            else:
                err = float(np.max(np.abs(k["y"] - ref)) / (np.max(np.abs(ref)) + 1e-30))
                k["ms"] = statistics.median(kiln_times)
                point.update(kiln_ms=k["ms"], compile_s=k["compile_s"], rel_err=err)
                flag = "  WRONG" if err > 1e-3 else ""
                print(f"{size:>5} {k['ms']:>10.4f} {ort_ms:>10.4f} {ort_ms / k['ms']:>9.2f} "
                      f"{k['compile_s']:>9.2f}{flag}", flush=True)
            points.append(point)
            shutil.rmtree(work, ignore_errors=True)
        (args.out / f"{family}.json").write_text(json.dumps({"family": family, "desc": desc, "threads":
                                                              args.threads, "rounds": args.rounds,
                                                              "kilnc_args": args.kilnc_arg,
                                                              "points": points}, indent=1))
        xlabel = "M (rows)" if family.startswith(("gemm", "matmul")) else "output height = width"
        # A configuration's plot is named for it and never replaces the default's.
        suffix = "".join("_" + re.sub(r"[^A-Za-z0-9]+", "-", a).strip("-") for a in args.kilnc_arg)
        title = desc + "".join(f" [kilnc {a}]" for a in args.kilnc_arg)
        plot(family, title, points, plot_dir / f"sweep-{family}{suffix}.png", xlabel)
        ok = [pt for pt in points if "kiln_ms" in pt]
        if ok:
            low = min(ok, key=lambda pt: pt["ort_ms"] / pt["kiln_ms"])
            worst.append((family, low["size"], low["ort_ms"] / low["kiln_ms"],
                          sum(pt["ort_ms"] / pt["kiln_ms"] < 1 / 1.2 for pt in ok), len(ok),
                          len(points) - len(ok)))
    print("\nfamily          worst size  ort/kiln  points >1.2x slower  errors")
    for family, size, r, slow, n, errors in worst:
        print(f"{family:15} {size:>10} {r:>9.2f} {slow:>12}/{n:<6} {errors:>6}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
