#!/usr/bin/env python3
# GPU benchmark: Kiln's CUDA artifacts against JAX/XLA and PyTorch on the same GPU, same graphs,
# same inputs, in one run. See bench/README.md ("GPU").
#
#   bench/gpu.py prepare OUT [--graphs a,b] [--kiln-bin build/bin] [--target cuda:sm_90]
#   python3 OUT/gpu.py run OUT [--graphs a,b] [--results DIR]
#
# Two steps because the compiler and the GPU may be on different machines: `prepare` (numpy,
# onnx, kilnc) writes each graph's model.onnx and model.kiln into OUT and copies kiln-run,
# graphs.py and this script there; `run` (numpy, onnx, jax and torch with CUDA, a GPU) needs only
# OUT. Inputs are regenerated from each graph's seed where the benchmark runs, so 8192x8192
# tensors never travel.

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

SMALL = ["mlp_b64", "mlp_b256", "cnn_block", "lenet", "transformer_layer", "softmax", "layernorm", "gelu"]
# Memory-bound graphs whose achieved bandwidth is reported against the card's.
BANDWIDTH = ["softmax_8k", "layernorm_8k", "gelu_8k"]
GEMM = ["gemm_4096"]
DEFAULT = SMALL + BANDWIDTH + GEMM

# Datasheet memory bandwidth (bytes/s) by the name the driver reports.
SPEC_BANDWIDTH = {"H100 80GB HBM3": 3.35e12, "H100 PCIe": 2.0e12, "H100 NVL": 3.9e12, "H200": 4.8e12,
                  "A100-SXM4-80GB": 2.039e12, "A100-SXM4-40GB": 1.555e12, "A100 80GB PCIe": 1.935e12,
                  "L40S": 0.864e12}

TOLERANCE = 1e-3  # |got - ref| <= TOLERANCE + TOLERANCE * |ref|, as bench/run.py
ROUNDS = 5
ROUND_SECONDS = 0.2


def log(msg=""):
    print(msg, file=sys.stderr, flush=True)


def need_numpy_onnx():
    try:
        import numpy  # noqa: F401
        import onnx  # noqa: F401
    except ImportError:
        venv = HERE / ".venv" / "bin" / "python"
        if venv.exists() and Path(sys.executable).resolve() != venv.resolve():
            os.execv(str(venv), [str(venv), str(Path(__file__).resolve())] + sys.argv[1:])
        sys.exit("error: gpu.py needs numpy and onnx: run bench/run.sh once (it creates bench/.venv) "
                 "or install them")


def graph_names(text, known):
    names = DEFAULT if not text else [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown:
        sys.exit(f"error: unknown graph(s) {', '.join(unknown)}; known: {', '.join(known)}")
    return names


# ---- prepare (where kilnc is) ----------------------------------------------------------------

def prepare(args):
    need_numpy_onnx()
    import onnx
    sys.path.insert(0, str(HERE))
    import graphs as G
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    kilnc = Path(args.kiln_bin) / "kilnc"
    kiln_run = Path(args.kiln_bin) / "kiln-run"
    for tool in (kilnc, kiln_run):
        if not tool.exists():
            sys.exit(f"error: no {tool}; build Kiln first (ninja -C build kilnc kiln-run)")
    prepared = {"target": args.target, "graphs": {}}
    for name in graph_names(args.graphs, G.GPU_GRAPHS):
        gdir = out / name
        gdir.mkdir(exist_ok=True)
        model, _ = G.GPU_GRAPHS[name].build(G._rng(name))
        onnx.save(model, str(gdir / "model.onnx"))
        cmd = [str(kilnc), str(gdir / "model.onnx"), f"--target={args.target}", "--buffer-stats",
               "-o", str(gdir / "model.kiln")]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        entry = {"kilnc_seconds": round(time.perf_counter() - t0, 2), "ok": proc.returncode == 0,
                 "stats": [l for l in proc.stderr.splitlines() if "GPU program" in l]}
        if proc.returncode != 0:
            entry["error"] = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"
        prepared["graphs"][name] = entry
        log(f"{name}: {'compiled' if entry['ok'] else entry['error']} ({entry['kilnc_seconds']} s)")
    shutil.copy2(kiln_run, out / "kiln-run")
    for f in ("graphs.py", "gpu.py", "gpu_gemm.cu"):
        shutil.copy2(HERE / f, out / f)
    (out / "prepared.json").write_text(json.dumps(prepared, indent=1))
    log(f"prepared {out}")


# ---- workers (one process per framework and graph) -------------------------------------------

def timed_rounds(step, sync, probe_steps=3):
    """Median over ROUNDS of the mean time of back-to-back steps, one sync per round: how every
    framework is timed. The step count per round is sized to about ROUND_SECONDS."""
    for _ in range(probe_steps):
        step()
    sync()
    t0 = time.perf_counter()
    step()
    sync()
    one = max(time.perf_counter() - t0, 1e-6)
    steps = max(10, min(2000, int(ROUND_SECONDS / one)))
    rounds = []
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        sync()
        rounds.append((time.perf_counter() - t0) * 1e3 / steps)
    return {"step_ms": statistics.median(rounds), "rounds_ms": rounds, "steps": steps}


def worker(args):
    import numpy as np
    sys.path.insert(0, str(HERE))
    import graphs as G
    gdir = Path(args.dir) / args.graph
    graph = G.GPU_GRAPHS.get(args.graph)
    weights = G.load_weights(gdir / "model.onnx") if graph else {}
    result = {}
    if args.mode != "copy":
        import onnx
        model = onnx.load(str(gdir / "model.onnx"))
        inputs = [np.load(gdir / "inputs" / f"{i.name}.npy") for i in model.graph.input]
        out_names = [o.name for o in model.graph.output]
        save = gdir / f"{args.mode}_out"
        save.mkdir(exist_ok=True)
    if args.mode == "jax":
        import jax
        jax.config.update("jax_default_matmul_precision", "highest")  # full f32, as Kiln and PyTorch
        w = {k: jax.device_put(v) for k, v in weights.items()}
        xs = [jax.device_put(x) for x in inputs]
        fn = jax.jit(graph.jax_fn(w)).lower(*xs).compile()
        outs = fn(*xs)
        jax.block_until_ready(outs)
        for n, o in zip(out_names, outs):
            np.save(save / f"{n}.npy", np.asarray(o))
        holder = {}
        result = timed_rounds(lambda: holder.__setitem__("y", fn(*xs)),
                              lambda: jax.block_until_ready(holder["y"]))
        result["version"] = jax.__version__
        result["device"] = str(jax.devices()[0])
    elif args.mode == "torch":
        import torch
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        dev = torch.device("cuda")
        w = {k: torch.from_numpy(np.ascontiguousarray(v)).to(dev) for k, v in weights.items()}
        xs = [torch.from_numpy(x).to(dev) for x in inputs]
        fn = graph.torch_fn(w)
        if args.compile:
            fn = torch.compile(fn)
        with torch.inference_mode():
            outs = fn(*xs)
            torch.cuda.synchronize()
            for n, o in zip(out_names, outs):
                np.save(save / f"{n}.npy", o.cpu().numpy())
            result = timed_rounds(lambda: fn(*xs), torch.cuda.synchronize)
        result["version"] = torch.__version__
        result["device"] = torch.cuda.get_device_name()
    elif args.mode == "copy":
        # The card's achievable bandwidth: a 1 GiB device-to-device copy, bytes read + written.
        import torch
        n = 1 << 28
        x = torch.randn(n, device="cuda")
        y = torch.empty_like(x)
        result = timed_rounds(lambda: y.copy_(x), torch.cuda.synchronize)
        result["bytes_per_s"] = 2 * 4 * n / (result["step_ms"] / 1e3)
        result["device"] = torch.cuda.get_device_name()
    Path(args.result).write_text(json.dumps(result))


def run_worker(mode, graph, dir_, compile_=False, timeout=900):
    result = Path(dir_) / (graph or ".") / f"{mode}{'_compiled' if compile_ else ''}.json"
    cmd = [sys.executable, str(Path(__file__).resolve()), "worker", mode, "--dir", str(dir_),
           "--graph", graph or "", "--result", str(result)] + (["--compile"] if compile_ else [])
    env = dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false", TF_CPP_MIN_LOG_LEVEL="2")
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"timed out after {timeout} s"}
    if proc.returncode != 0 or not result.exists():
        tail = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        return {"ok": False, "error": tail[:200]}
    data = json.loads(result.read_text())
    data["ok"] = True
    return data


# ---- run (where the GPU is) -------------------------------------------------------------------

def run_kiln(gdir, order):
    """kiln-run on gpu:0: a probe sizes the step count like the peers', then --repeat N gives the
    wall time per run (copies included) and rounds of N back-to-back steps on device data."""
    kiln_run = gdir.parent / "kiln-run"
    base = [str(kiln_run), str(gdir / "model.kiln"), "--device=gpu:0"]
    base += [f"--input={n}={gdir / 'inputs' / (n + '.npy')}" for n in order]
    probe = subprocess.run(base + ["--repeat", "3", "--timing-json", str(gdir / "kiln_probe.json")],
                           capture_output=True, text=True, timeout=900)
    if probe.returncode != 0:
        return {"ok": False, "error": (probe.stderr.strip().splitlines() or ["kiln-run failed"])[-1][:200]}
    one = max(statistics.median(json.loads((gdir / "kiln_probe.json").read_text())["step_ms"]) / 1e3, 1e-6)
    steps = max(10, min(2000, int(ROUND_SECONDS / one)))
    out_dir = gdir / "kiln_out"
    shutil.rmtree(out_dir, ignore_errors=True)
    proc = subprocess.run(base + ["--repeat", str(steps), "--warmup", "3", "--output-dir", str(out_dir),
                                  "--timing-json", str(gdir / "kiln_timing.json")],
                          capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        return {"ok": False, "error": (proc.stderr.strip().splitlines() or ["kiln-run failed"])[-1][:200]}
    timing = json.loads((gdir / "kiln_timing.json").read_text())
    return {"ok": True, "step_ms": statistics.median(timing["step_ms"]), "rounds_ms": timing["step_ms"],
            "steps": steps, "run_ms": statistics.median(timing["run_ms"]),
            "device_ms": statistics.median(timing["device_ms"]), "cuda_graph": timing["cuda_graph"]}


def compare(ref_dir, test_dir, names):
    import numpy as np
    worst = 0.0
    for n in names:
        ref, got = ref_dir / f"{n}.npy", test_dir / f"{n}.npy"
        if not ref.exists() or not got.exists():
            return f"missing {n}"
        a, b = np.load(ref).astype(np.float64), np.load(got).astype(np.float64)
        if a.shape != b.shape:
            return f"{n}: shape {b.shape} vs {a.shape}"
        excess = np.abs(b - a) - (TOLERANCE + TOLERANCE * np.abs(a))
        if np.isnan(b).any() != np.isnan(a).any() or (excess > 0).any():
            i = int(np.nanargmax(excess))
            return f"{n}: got {b.flat[i]:.6g}, want {a.flat[i]:.6g} at {i}"
        worst = max(worst, float(np.nanmax(np.abs(b - a))))
    return f"match (max |diff| {worst:.2g})"


def gemm_direct(dir_, n=4096):
    """cuBLASLt's f32 GEMM called directly (gpu_gemm.cu, built with nvcc here)."""
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    binary = Path(dir_) / "gpu_gemm"
    build = subprocess.run([nvcc, "-O2", "-arch=sm_90", str(Path(dir_) / "gpu_gemm.cu"), "-lcublasLt", "-o",
                            str(binary)], capture_output=True, text=True)
    if build.returncode != 0:
        return {"ok": False, "error": f"nvcc: {(build.stderr.strip().splitlines() or ['failed'])[-1][:150]}"}
    proc = subprocess.run([str(binary), str(n)], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        return {"ok": False, "error": proc.stderr.strip()[:200]}
    return {"ok": True, **json.loads(proc.stdout)}


def fmt(v, digits=4):
    return "n/a" if v is None else f"{v:.{digits}g}"


def run(args):
    need_numpy_onnx()
    import numpy as np
    import onnx
    sys.path.insert(0, str(HERE))
    import graphs as G
    dir_ = Path(args.dir).resolve()
    prepared = json.loads((dir_ / "prepared.json").read_text())
    names = graph_names(args.graphs, [n for n in G.GPU_GRAPHS if n in prepared["graphs"]])
    results_dir = Path(args.results or dir_ / "results")
    results_dir.mkdir(parents=True, exist_ok=True)
    report = {"graphs": {}, "date": time.strftime("%Y-%m-%d %H:%M")}

    copy = run_worker("copy", None, dir_)
    report["copy"] = copy
    peak = copy.get("bytes_per_s") if copy.get("ok") else None
    device_name = copy.get("device", "")
    spec = next((v for k, v in SPEC_BANDWIDTH.items() if k in device_name), None)
    log(f"device {device_name}: copy {fmt(peak / 1e12 if peak else None)} TB/s measured, "
        f"{fmt(spec / 1e12 if spec else None)} TB/s datasheet")

    for name in names:
        gdir = dir_ / name
        model = onnx.load(str(gdir / "model.onnx"))
        order = [i.name for i in model.graph.input]
        out_names = [o.name for o in model.graph.output]
        _, inputs = G.GPU_GRAPHS[name].build(G._rng(name))
        (gdir / "inputs").mkdir(exist_ok=True)
        for n, a in inputs.items():
            np.save(gdir / "inputs" / f"{n}.npy", np.ascontiguousarray(a, dtype=np.float32))
        entry = {"kiln": run_kiln(gdir, order) if prepared["graphs"][name]["ok"] else
                 {"ok": False, "error": prepared["graphs"][name].get("error", "not compiled")}}
        entry["torch"] = run_worker("torch", name, dir_)
        entry["jax"] = run_worker("jax", name, dir_)
        if args.torch_compile:
            entry["torch_compile"] = run_worker("torch", name, dir_, compile_=True)
        # PyTorch in full f32 is the reference; JAX is checked against it too.
        ref = gdir / "torch_out"
        for fw, out in (("kiln", gdir / "kiln_out"), ("jax", gdir / "jax_out")):
            if entry[fw].get("ok"):
                entry[fw]["check"] = compare(ref, out, out_names)
        moved = sum(a.nbytes for a in inputs.values()) + sum(
            4 * math.prod(d.dim_value for d in o.type.tensor_type.shape.dim) for o in model.graph.output)
        moved += sum(int(np.prod(t.dims)) * 4 for t in model.graph.initializer)
        entry["bytes"] = moved
        report["graphs"][name] = entry
        shutil.rmtree(gdir / "inputs", ignore_errors=True)  # 8192x8192 inputs do not need keeping
        k = entry["kiln"]
        log(f"{name}: kiln {fmt(k.get('step_ms'))} ms ({k.get('check', k.get('error', ''))}), "
            f"jax {fmt(entry['jax'].get('step_ms'))} ms, torch {fmt(entry['torch'].get('step_ms'))} ms")

    if any(n in GEMM for n in names):
        report["gemm_direct"] = gemm_direct(dir_)
    report["versions"] = {fw: next((e[fw].get("version") for e in report["graphs"].values()
                                    if e.get(fw, {}).get("version")), None) for fw in ("jax", "torch")}
    (results_dir / "results.json").write_text(json.dumps(report, indent=1))
    text = render(report, names, peak, spec, device_name)
    (results_dir / "results.md").write_text(text)
    print(text)


def render(report, names, peak, spec, device_name):
    lines = [f"GPU: {device_name}; {report['date']}; jax {report['versions'].get('jax')}, "
             f"torch {report['versions'].get('torch')}; every framework in full f32, timed as the "
             f"median of {ROUNDS} rounds of back-to-back steps on data kept on the GPU.", ""]
    cols = ["graph", "Kiln ms", "JAX ms", "PyTorch ms", "Kiln vs XLA", "Kiln vs PyTorch", "Kiln check",
            "JAX check"]
    has_compile = any("torch_compile" in report["graphs"][n] for n in names)
    if has_compile:
        cols.insert(4, "torch.compile ms")
    lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for n in names:
        e = report["graphs"][n]
        k, j, t = (e[f].get("step_ms") for f in ("kiln", "jax", "torch"))
        row = [n, fmt(k) if k else e["kiln"].get("error", "n/a"), fmt(j) if j else e["jax"].get("error", "n/a"),
               fmt(t) if t else e["torch"].get("error", "n/a"),
               f"{j / k:.2f}x" if j and k else "n/a", f"{t / k:.2f}x" if t and k else "n/a",
               e["kiln"].get("check", "n/a"), e["jax"].get("check", "n/a")]
        if has_compile:
            c = e.get("torch_compile", {}).get("step_ms")
            row.insert(4, fmt(c) if c else e.get("torch_compile", {}).get("error", "n/a"))
        lines.append("| " + " | ".join(row) + " |")
    bw = [n for n in names if n in BANDWIDTH or n in ("softmax", "layernorm", "gelu")]
    if bw:
        lines += ["", "Achieved bandwidth (inputs + outputs + weights, once each, over the step time):", "",
                  "| graph | MB moved | Kiln GB/s | % of copy | % of datasheet | JAX GB/s | PyTorch GB/s |",
                  "|---|---|---|---|---|---|---|"]
        for n in bw:
            e = report["graphs"][n]
            def gbs(fw):
                ms = e[fw].get("step_ms")
                return e["bytes"] / (ms / 1e3) / 1e9 if ms else None
            kg = gbs("kiln")
            lines.append(f"| {n} | {e['bytes'] / 1e6:.0f} | {fmt(kg)} | "
                         f"{fmt(100 * kg * 1e9 / peak, 3) if kg and peak else 'n/a'} | "
                         f"{fmt(100 * kg * 1e9 / spec, 3) if kg and spec else 'n/a'} | {fmt(gbs('jax'))} | "
                         f"{fmt(gbs('torch'))} |")
        lines.append(f"\nCopy: a 1 GiB device-to-device copy moved {fmt(peak / 1e9 if peak else None)} GB/s; "
                     f"datasheet {fmt(spec / 1e9 if spec else None)} GB/s.")
    if "gemm_direct" in report:
        g = report["gemm_direct"]
        lines += ["", "GEMM 4096x4096x4096 f32 (TFLOP/s):", ""]
        def tf(ms):
            return 2 * 4096 ** 3 / (ms / 1e3) / 1e12 if ms else None
        e = report["graphs"].get("gemm_4096", {})
        lines.append(f"| Kiln (cuBLASLt record) | cuBLASLt direct | PyTorch | JAX |\n|---|---|---|---|\n"
                     f"| {fmt(tf(e.get('kiln', {}).get('step_ms')))} | "
                     f"{fmt(tf(g.get('ms'))) if g.get('ok') else g.get('error')} | "
                     f"{fmt(tf(e.get('torch', {}).get('step_ms')))} | {fmt(tf(e.get('jax', {}).get('step_ms')))} |")
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)
    pp = sub.add_parser("prepare", help="write models and Kiln artifacts into OUT (where kilnc is)")
    pp.add_argument("out")
    pp.add_argument("--graphs", default="")
    pp.add_argument("--kiln-bin", default=str(HERE.parent / "build" / "bin"))
    pp.add_argument("--target", default="cuda:sm_90")
    pr = sub.add_parser("run", help="benchmark the prepared OUT on this machine's GPU")
    pr.add_argument("dir")
    pr.add_argument("--graphs", default="")
    pr.add_argument("--results", default="", help="where results.md/json go (default DIR/results)")
    pr.add_argument("--torch-compile", action="store_true", help="also time torch.compile (slow to compile)")
    pw = sub.add_parser("worker")
    pw.add_argument("mode", choices=["jax", "torch", "copy"])
    pw.add_argument("--dir", required=True)
    pw.add_argument("--graph", default="")
    pw.add_argument("--result", required=True)
    pw.add_argument("--compile", action="store_true")
    args = p.parse_args()
    {"prepare": prepare, "run": run, "worker": worker}[args.command](args)


if __name__ == "__main__":
    main()
