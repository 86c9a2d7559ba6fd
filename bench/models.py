#!/usr/bin/env python3
"""Real models from the standard libraries, Kiln against the CPU runtimes people use.

Exports each model from torchvision, timm or transformers with random weights (never
downloaded ones) to ONNX (opset 17, static shapes), then times, in one run, with the same
number of threads and the same input:

    kiln          kilnc + kiln-run --repeat
    onnxruntime   CPU provider, all graph optimizations
    openvino      CPU plugin, f32 inference precision, latency hint
    torch         PyTorch eager on the original module
    torch.compile inductor on the original module
    jax           JAX/XLA on the ONNX graph converted by bench/onnx_jax.py, jit-compiled
    iree          IREE: iree-import-onnx, iree-compile for llvm-cpu (host CPU), local-task

and, only when --frameworks names it, a diagnostic configuration:

    onnxruntime-nchw  ONNX Runtime without its layout transformer (ORT_ENABLE_EXTENDED): the
                      convolutions stay in NCHW rather than in the blocked NCHWc layout kept
                      from layer to layer, so its time against onnxruntime's is what that
                      layout is worth on the model
    kiln-onednn       Kiln's artifact run with KILN_DIRECT_CONV=0: on a CPU with AVX2 but
                      not AVX-512, its convolution tiles and products of few rows by
                      oneDNN's kernels instead of Kiln's own, so its time against kiln's
                      is what those kernels are worth (elsewhere the two are the same)
    kiln-nowinograd   Kiln's artifact run with KILN_WINOGRAD=0: on a CPU with AVX2 but not
                      AVX-512, its 3x3 convolutions on blocked images by oneDNN's direct
                      kernels instead of Kiln's Winograd kernel (elsewhere the same)

and checks Kiln's outputs against ONNX Runtime's. Each framework runs in its own process, one
after another. Batch-norm statistics are calibrated on random batches before export, so the
activations are not degenerate (with the default running statistics a deep ResNet's output is
all but constant).

    bench/models.py                               # every model, batch 1 and 8, 2 threads
    bench/models.py --models resnet50,bert --batches 1
    bench/models.py --rounds 3                    # every framework three times, interleaved
    bench/models.py --list

Needs torch, torchvision, timm, transformers, onnx, onnxruntime, openvino, jax and IREE
(`pip install -r bench/requirements-models.txt`); a missing peer is reported and skipped.
Writes bench/out/models/results.md and results.json; the exported models stay in
bench/out/models/<model>_b<batch>/.
"""
import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from selection import choose

HERE = Path(__file__).resolve().parent
MEDIAN_RE = re.compile(r"(\d+) runs?: median ([0-9.eE+-]+) ms per run")
FRAMEWORKS = ["kiln", "onnxruntime", "openvino", "torch", "torch.compile", "jax", "iree"]
# Run only when named: not a peer users choose, a measure of what a peer's layout is worth.
DIAGNOSTICS = ["onnxruntime-nchw", "kiln-onednn", "kiln-nowinograd"]
# Kiln configurations: the environment each runs the same artifact with.
KILN_CONFIGS = {"kiln": {}, "kiln-onednn": {"KILN_DIRECT_CONV": "0"},
                "kiln-nowinograd": {"KILN_WINOGRAD": "0"}}


def _vision(lib, name, size=224):
    def build(batch):
        if lib == "torchvision":
            import torchvision
            model = getattr(torchvision.models, name)(weights=None)
        else:
            import timm
            model = timm.create_model(name, pretrained=False)
        return model, (("input", (batch, 3, size, size), "float32"),)
    return build


def _keywords(model, names, output):
    """`model` called with its inputs by name (positional order differs between transformers
    versions), returning one output tensor."""
    import torch

    class Keywords(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, *args):
            return getattr(self.model(**dict(zip(names, args))), output)
    return Keywords()


def _bert(batch, seq=128):
    from transformers import BertConfig, BertModel
    config = BertConfig(hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                        intermediate_size=3072, attn_implementation="eager")
    spec = (("input_ids", (batch, seq), "int64"), ("attention_mask", (batch, seq), "int64"),
            ("token_type_ids", (batch, seq), "int64"))
    model = BertModel(config, add_pooling_layer=False)
    return _keywords(model, [name for name, _, _ in spec], "last_hidden_state"), spec


def _gpt2(batch, seq=128):
    from transformers import GPT2Config, GPT2LMHeadModel
    config = GPT2Config(n_embd=768, n_layer=12, n_head=12, use_cache=False, attn_implementation="eager")
    spec = (("input_ids", (batch, seq), "int64"), ("attention_mask", (batch, seq), "int64"))
    return _keywords(GPT2LMHeadModel(config), [name for name, _, _ in spec], "logits"), spec


MODELS = {
    "resnet50": ("torchvision ResNet-50, 224x224", _vision("torchvision", "resnet50")),
    "mobilenet_v2": ("torchvision MobileNetV2, 224x224", _vision("torchvision", "mobilenet_v2")),
    "efficientnet_b0": ("timm EfficientNet-B0, 224x224", _vision("timm", "efficientnet_b0")),
    "vit_small": ("timm ViT-S/16, 224x224", _vision("timm", "vit_small_patch16_224")),
    "bert": ("transformers BERT-base encoder (12 layers, 768), sequence 128", _bert),
    "gpt2": ("transformers GPT-2 small decoder (12 layers, 768) with LM head, sequence 128", _gpt2),
    "squeezenet": ("torchvision SqueezeNet 1.0, 224x224", _vision("torchvision", "squeezenet1_0")),
    "densenet121": ("torchvision DenseNet-121, 224x224", _vision("torchvision", "densenet121")),
    "inception_v3": ("torchvision Inception-v3, 299x299", _vision("torchvision", "inception_v3", 299)),
    "vgg11": ("torchvision VGG-11, 224x224", _vision("torchvision", "vgg11")),
    "convnext_tiny": ("torchvision ConvNeXt-T, 224x224", _vision("torchvision", "convnext_tiny")),
}


def inputs_for(spec, seed):
    import numpy as np
    rng = np.random.default_rng(seed)
    feeds = {}
    for name, shape, dtype in spec:
        if dtype == "float32":
            feeds[name] = rng.standard_normal(shape).astype(np.float32)
        elif name == "attention_mask":
            feeds[name] = np.ones(shape, np.int64)
        elif name == "token_type_ids":
            feeds[name] = (np.arange(shape[1])[None, :] >= shape[1] // 2).astype(np.int64).repeat(shape[0], 0)
        else:
            feeds[name] = rng.integers(0, 1000, shape).astype(np.int64)
    return feeds


def calibrate_batch_norms(model, shape):
    """Sets the running statistics of every batch norm in `model` to those of random inputs
    of `shape` (batch size aside) through the random network: a cumulative average over a
    few batches of 8 (momentum None). With the default statistics a deep network's output is
    all but constant."""
    import torch
    bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return
    for bn in bns:
        bn.reset_running_stats()
        bn.momentum = None
    model.train()
    with torch.no_grad():
        for _ in range(4):
            model(torch.randn((8,) + tuple(shape[1:])))


def build_model(name, batch):
    """The module (eval mode, random weights, calibrated batch norms) and its input spec."""
    import torch
    torch.manual_seed(0)
    model, spec = MODELS[name][1](batch)
    calibrate_batch_norms(model, spec[0][1])
    model.eval()
    return model, spec


def torch_inputs(feeds):
    import torch
    return tuple(torch.from_numpy(v) for v in feeds.values())


# ---------------------------------------------------------------------------------------------
# Workers: each runs in its own process and prints one JSON line.

def time_loop(run, budget, min_runs=5, warmup=3):
    for _ in range(warmup):
        run()
    times, start = [], time.perf_counter()
    while len(times) < min_runs or (time.perf_counter() - start < budget and len(times) < 1000):
        t0 = time.perf_counter()
        run()
        times.append((time.perf_counter() - t0) * 1e3)
    return {"median_ms": statistics.median(times), "min_ms": min(times), "runs": len(times)}


def worker_export(args, mdir):
    import numpy as np
    import torch
    model, spec = build_model(args.model, args.batch)
    feeds = inputs_for(spec, 0)
    np.savez(mdir / "inputs.npz", **feeds)
    for name, value in feeds.items():
        np.save(mdir / f"{name}.npy", value)
    t0 = time.perf_counter()
    with torch.no_grad():
        torch.onnx.export(model, torch_inputs(feeds), str(mdir / "model.onnx"), opset_version=17,
                          input_names=list(feeds), output_names=["output"], dynamo=False)
    return {"export_s": time.perf_counter() - t0}


def worker_onnxruntime(args, mdir, nchwc=True):
    """ONNX Runtime with every graph optimization, whose output the others are checked against;
    without `nchwc`, every one but the layout transformer, checked like the others."""
    import numpy as np
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = args.threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    if not nchwc:
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    t0 = time.perf_counter()
    sess = ort.InferenceSession(str(mdir / "model.onnx"), opts, providers=["CPUExecutionProvider"])
    setup = time.perf_counter() - t0
    feeds = dict(np.load(mdir / "inputs.npz"))
    out = sess.run(None, feeds)[0]
    if nchwc:
        np.save(mdir / "ort_output.npy", out)
    res = time_loop(lambda: sess.run(None, feeds), args.budget)
    res["setup_s"] = setup
    if not nchwc:
        res["rel_err"] = rel_err(out, np.load(mdir / "ort_output.npy"))
    return res


def worker_openvino(args, mdir):
    import numpy as np
    import openvino as ov
    core = ov.Core()
    t0 = time.perf_counter()
    compiled = core.compile_model(str(mdir / "model.onnx"), "CPU", {
        "INFERENCE_NUM_THREADS": args.threads, "INFERENCE_PRECISION_HINT": "f32",
        "PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": 1})
    setup = time.perf_counter() - t0
    request = compiled.create_infer_request()
    feeds = dict(np.load(mdir / "inputs.npz"))
    out = request.infer(feeds)[compiled.output(0)]
    err = rel_err(out, np.load(mdir / "ort_output.npy"))
    res = time_loop(lambda: request.infer(feeds), args.budget)
    res.update(setup_s=setup, rel_err=err)
    return res


def worker_torch(args, mdir, compiled):
    import numpy as np
    import torch
    torch.set_num_threads(args.threads)
    model, spec = build_model(args.model, args.batch)
    feeds = dict(np.load(mdir / "inputs.npz"))
    inputs = torch_inputs(feeds)
    t0 = time.perf_counter()
    if compiled:
        model = torch.compile(model)
    with torch.no_grad():
        out = model(*inputs)
        setup = time.perf_counter() - t0
        if not isinstance(out, torch.Tensor):
            out = out[0] if isinstance(out, (tuple, list)) else next(iter(out.values()))
        err = rel_err(out.numpy(), np.load(mdir / "ort_output.npy"))
        res = time_loop(lambda: model(*inputs), args.budget)
    res.update(setup_s=setup, rel_err=err)
    return res


def worker_jax(args, mdir):
    # XLA's CPU thread pool has no size setting: the process is confined to `threads` CPUs.
    cpus = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, cpus[:args.threads])
    import numpy as np
    import jax
    sys.path.insert(0, str(HERE))
    import onnx_jax
    jax.config.update("jax_default_matmul_precision", "highest")  # full f32, as the others
    feeds = dict(np.load(mdir / "inputs.npz"))
    t0 = time.perf_counter()
    fn, weights = onnx_jax.convert(str(mdir / "model.onnx"))
    xs = [jax.device_put(v) for v in feeds.values()]
    w = jax.device_put(weights)
    compiled = jax.jit(fn).lower(w, *xs).compile()
    out = np.asarray(jax.block_until_ready(compiled(w, *xs))[0])  # the first output, as the others
    setup = time.perf_counter() - t0
    err = rel_err(out, np.load(mdir / "ort_output.npy"))
    res = time_loop(lambda: jax.block_until_ready(compiled(w, *xs)), args.budget)
    res.update(setup_s=setup, rel_err=err, version=jax.__version__)
    return res


def worker_iree(args, mdir):
    import numpy as np
    import iree.compiler  # noqa: F401  (the tools below come with it)
    import iree.runtime as rt
    t0 = time.perf_counter()
    def tool(name):  # beside this Python (a virtual environment's bin/), else on PATH
        return shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name) or name
    mlir, vmfb = mdir / "iree.mlir", mdir / "iree.vmfb"
    for cmd in ([tool("iree-import-onnx"), str(mdir / "model.onnx"), "-o", str(mlir)],
                [tool("iree-compile"), str(mlir), "--iree-hal-target-device=local",
                 "--iree-hal-local-target-device-backends=llvm-cpu", "--iree-llvmcpu-target-cpu=host",
                 "-o", str(vmfb)]):
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
        if r.returncode != 0:
            tail = (r.stderr or r.stdout).strip().splitlines() or ["?"]
            error = next((line for line in tail if "error" in line), tail[-1])
            raise RuntimeError(f"{Path(cmd[0]).name}: {error[:200]}")
    setup = time.perf_counter() - t0
    rt.flags.parse_flags(f"--task_topology_max_group_count={args.threads}")
    config = rt.Config("local-task")
    ctx = rt.SystemContext(config=config)
    module = rt.VmModule.copy_buffer(ctx.instance, vmfb.read_bytes())
    ctx.add_vm_module(module)
    entry = next(n for n in module.function_names if not n.startswith("__") and "$" not in n)
    main = ctx.modules[module.name][entry]
    feeds = list(dict(np.load(mdir / "inputs.npz")).values())
    device_feeds = [rt.asdevicearray(config.device, v) for v in feeds]
    out = main(*device_feeds)
    out = out[0] if isinstance(out, (tuple, list)) else out
    err = rel_err(np.asarray(out.to_host()), np.load(mdir / "ort_output.npy"))

    def run():
        y = main(*device_feeds)
        (y[0] if isinstance(y, (tuple, list)) else y).to_host()
    res = time_loop(run, args.budget)
    res.update(setup_s=setup, rel_err=err)
    return res


def rel_err(got, want):
    import numpy as np
    if got.shape != want.shape:
        return float("inf")
    return float(np.max(np.abs(got.astype(np.float64) - want)) / (np.max(np.abs(want)) + 1e-30))


def worker_main(args):
    mdir = Path(args.work)
    try:
        if args.worker == "export":
            res = worker_export(args, mdir)
        elif args.worker == "onnxruntime":
            res = worker_onnxruntime(args, mdir)
        elif args.worker == "onnxruntime-nchw":
            res = worker_onnxruntime(args, mdir, nchwc=False)
        elif args.worker == "openvino":
            res = worker_openvino(args, mdir)
        elif args.worker == "jax":
            res = worker_jax(args, mdir)
        elif args.worker == "iree":
            res = worker_iree(args, mdir)
        else:
            res = worker_torch(args, mdir, compiled=args.worker == "torch.compile")
        res["ok"] = True
    except ImportError as e:
        res = {"ok": False, "error": f"not installed ({e.name})"}
    except Exception as e:  # a peer's failure is a row entry, not the end of the run
        res = {"ok": False, "error": f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"}
    print("RESULT " + json.dumps(res))
    return 0


# ---------------------------------------------------------------------------------------------
# Driver.

def env_for(threads):
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = str(threads)
    env["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
    return env


def run_worker(kind, args, mdir, model, batch):
    cmd = [sys.executable, __file__, "--worker", kind, "--model", model, "--batch", str(batch),
           "--work", str(mdir), "--threads", str(args.threads), "--budget", str(args.budget)]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, env=env_for(args.threads))
    except subprocess.TimeoutExpired:
        return {"ok": False, "error": f"timed out after {args.timeout} s"}
    (mdir / f"{kind}.log").write_text(r.stdout + r.stderr)
    for line in r.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    tail = (r.stderr or r.stdout).strip().splitlines()
    return {"ok": False, "error": f"exit {r.returncode}: {tail[-1][:160] if tail else ''}"}


def compile_kiln(args, mdir):
    """Compiles the model to mdir/model.kiln: (None, seconds), or the failure as a result entry
    and the seconds."""
    artifact = mdir / "model.kiln"
    artifact.unlink(missing_ok=True)
    t0 = time.perf_counter()
    r = subprocess.run([str(args.kiln_bin / "kilnc"), str(mdir / "model.onnx"), "-o", str(artifact)],
                       capture_output=True, text=True, timeout=args.timeout)
    compile_s = time.perf_counter() - t0
    (mdir / "kilnc.log").write_text(r.stdout + r.stderr)
    if r.returncode != 0:
        lines = [l for l in r.stderr.splitlines() if "error" in l] or r.stderr.splitlines() or ["?"]
        return {"ok": False, "error": "kilnc: " + lines[0][:200], "compile_s": compile_s}, compile_s
    return None, compile_s


def run_kiln(args, mdir, compile_s, config="kiln"):
    import numpy as np
    artifact = mdir / "model.kiln"
    names = [n for n in np.load(mdir / "inputs.npz").files]
    ort_ms = args.ort_ms or 50.0
    reps = int(min(1000, max(5, args.budget * 1e3 / max(ort_ms, 1e-3))))
    cmd = [str(args.kiln_bin / "kiln-run"), str(artifact)] + [f"--input={n}={mdir / (n + '.npy')}" for n in names]
    cmd += ["--repeat", str(reps), "--warmup", "3", "--threads", str(args.threads),
            "--output-dir", str(mdir / "kiln_out")]
    env = env_for(args.threads)
    env.update(KILN_CONFIGS[config])
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, env=env)
    (mdir / "kiln-run.log").write_text(r.stdout + r.stderr)
    m = MEDIAN_RE.search(r.stdout)
    if r.returncode != 0 or not m:
        return {"ok": False, "error": "kiln-run: " + (r.stderr.strip().splitlines() or ["?"])[-1][:200],
                "compile_s": compile_s}
    outs = sorted((mdir / "kiln_out").glob("*.npy"))
    err = rel_err(np.load(outs[0]), np.load(mdir / "ort_output.npy")) if outs else float("inf")
    return {"ok": True, "median_ms": float(m.group(2)), "runs": int(m.group(1)), "compile_s": compile_s,
            "rel_err": err}


def combine_rounds(tries):
    """One framework's result over its rounds: the first successful one, its median the median
    of the rounds' medians, which are kept in `round_ms`; or the first failure."""
    ok = [t for t in tries if t.get("ok")]
    if not ok:
        return tries[0]
    res = dict(ok[0])
    medians = sorted(t["median_ms"] for t in ok)
    mid = len(medians) // 2
    res["median_ms"] = medians[mid] if len(medians) % 2 else (medians[mid - 1] + medians[mid]) / 2
    res["round_ms"] = [t["median_ms"] for t in ok]
    return res


def main(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default="all", help="comma-separated model names (default all; --list)")
    p.add_argument("--batches", default="1,8", help="batch sizes (default 1,8: latency and throughput)")
    p.add_argument("--threads", type=int, default=2, help="threads for every framework (default 2)")
    p.add_argument("--frameworks", default=",".join(FRAMEWORKS),
                   help="subset of " + ",".join(FRAMEWORKS + DIAGNOSTICS) + " (default: all but " +
                        ",".join(DIAGNOSTICS) + ")")
    p.add_argument("--budget", type=float, default=2.0, help="seconds of timed runs per measurement")
    p.add_argument("--rounds", type=int, default=1,
                   help="time every framework this many times, the rounds interleaved (each in "
                        "a rotated order) so that a change in the machine's load meets them "
                        "all; the median of the rounds' medians is reported (default 1)")
    p.add_argument("--timeout", type=int, default=900, help="seconds allowed per step")
    p.add_argument("--kiln-bin", type=Path, default=HERE.parent / "build" / "bin")
    p.add_argument("--out", type=Path, default=HERE / "out" / "models")
    p.add_argument("--list", action="store_true")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--model", help=argparse.SUPPRESS)
    p.add_argument("--batch", type=int, help=argparse.SUPPRESS)
    p.add_argument("--work", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        return worker_main(args)
    if args.list:
        for name, (desc, _) in MODELS.items():
            print(f"{name:16} {desc}")
        return 0
    models = choose(args.models, MODELS, "model", p)
    frameworks = args.frameworks.split(",")
    unknown = [fw for fw in frameworks if fw not in FRAMEWORKS + DIAGNOSTICS]
    if unknown:
        p.error(f"unknown framework {', '.join(unknown)} (known: {', '.join(FRAMEWORKS + DIAGNOSTICS)})")
    batches = [int(b) for b in args.batches.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    command = "bench/models.py " + " ".join(argv)
    load_before = os.getloadavg()
    print(f"# {command}\n# {time.strftime('%Y-%m-%d %H:%M')}, {args.threads} threads, "
          f"load average {load_before[0]:.2f}", flush=True)
    results = []
    for model in models:
        for batch in batches:
            mdir = args.out / f"{model}_b{batch}"
            shutil.rmtree(mdir, ignore_errors=True)
            mdir.mkdir(parents=True)
            row = {"model": model, "batch": batch}
            exp = run_worker("export", args, mdir, model, batch)
            if not exp.get("ok"):
                row["error"] = "export: " + exp.get("error", "?")
                print(f"{model} b{batch}: {row['error']}", flush=True)
                results.append(row)
                continue
            # ONNX Runtime first: its output is the reference, its time sizes Kiln's runs.
            order = ["onnxruntime"] + [fw for fw in frameworks if fw != "onnxruntime"]
            kiln_failed, compile_s = (compile_kiln(args, mdir)
                                      if set(KILN_CONFIGS) & set(frameworks) else (None, 0.0))
            rounds = {fw: [] for fw in order}
            args.ort_ms = None
            for r in range(max(1, args.rounds)):
                for fw in order[r % len(order):] + order[:r % len(order)]:
                    if fw in KILN_CONFIGS:
                        res = kiln_failed or run_kiln(args, mdir, compile_s, config=fw)
                    else:
                        res = run_worker(fw, args, mdir, model, batch)
                    if fw == "onnxruntime" and res.get("ok") and not args.ort_ms:
                        args.ort_ms = res["median_ms"]
                    rounds[fw].append(res)
            for fw, tries in rounds.items():
                row[fw] = combine_rounds(tries)
            results.append(row)
            print(summary_line(row, frameworks), flush=True)
    load_after = os.getloadavg()
    (args.out / "results.json").write_text(json.dumps(results, indent=1))
    md = render(results, frameworks, command, args, load_before, load_after)
    (args.out / "results.md").write_text(md)
    print("\n" + md)
    return 0


def fmt(res):
    if not res:
        return "-"
    if not res.get("ok"):
        return "fails"
    return f"{res['median_ms']:.2f}"


def summary_line(row, frameworks):
    parts = [f"{fw} {fmt(row.get(fw))}" for fw in frameworks]
    return f"{row['model']} b{row['batch']}: " + ", ".join(parts)


def render(results, frameworks, command, args, load_before, load_after):
    peers = [f for f in frameworks if f != "kiln"]
    lines = [f"Command: `{command}`", "",
             f"{time.strftime('%Y-%m-%d')}, {platform.processor() or platform.machine()}, {args.threads} threads, "
             f"load average {load_before[0]:.2f} before and {load_after[0]:.2f} after.", "",
             ("Median ms per run" if args.rounds <= 1 else
              f"Median over {args.rounds} interleaved rounds of each round's median ms per run") +
             "; `x` columns are the peer's time over Kiln's (above 1: Kiln is faster). "
             "`best peer` is the fastest peer and Kiln's ratio to it (diagnostic configurations such as "
             "onnxruntime-nchw, kiln-onednn and kiln-nowinograd are not peers).", ""]
    header = ["model", "batch", "kiln ms"] + [f"{p} ms" for p in peers] + [f"vs {p}" for p in peers] + ["best peer", "kiln compile s"]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---|" * len(header))
    errors = []
    for row in results:
        if "error" in row:
            errors.append(f"- {row['model']} b{row['batch']}: {row['error']}")
            continue
        kiln = row.get("kiln") or {}
        cells = [row["model"], str(row["batch"]), fmt(kiln)]
        cells += [fmt(row.get(p)) for p in peers]
        for p in peers:
            pr = row.get(p) or {}
            cells.append(f"{pr['median_ms'] / kiln['median_ms']:.2f}x" if pr.get("ok") and kiln.get("ok") else "-")
        ok_peers = [(row[p]["median_ms"], p) for p in peers
                    if p not in DIAGNOSTICS and (row.get(p) or {}).get("ok")]
        if ok_peers and kiln.get("ok"):
            best_ms, best = min(ok_peers)
            cells.append(f"{best} ({best_ms / kiln['median_ms']:.2f}x)")
        else:
            cells.append("-")
        cells.append(f"{kiln['compile_s']:.1f}" if "compile_s" in kiln else "-")
        lines.append("| " + " | ".join(cells) + " |")
        for fw in frameworks:
            r = row.get(fw) or {}
            if r and not r.get("ok"):
                errors.append(f"- {row['model']} b{row['batch']} {fw}: {r.get('error')}")
            elif r.get("rel_err", 0) > 1e-3:
                errors.append(f"- {row['model']} b{row['batch']} {fw}: output differs from ONNX Runtime's "
                              f"(max error {r['rel_err']:.1e} of the largest value)")
    if errors:
        lines += ["", "Failures and mismatches:", ""] + errors
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
