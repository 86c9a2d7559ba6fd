#!/usr/bin/env python3
"""Real models on an NVIDIA GPU: Kiln's CUDA artifacts against PyTorch eager, torch.compile and
JAX/XLA (bench/onnx_jax.py, where the graph converts), the models of bench/models.py, same
batches, same GPU, one run. See bench/README.md ("Real models on a GPU").

    bench/models_gpu.py prepare OUT [--models a,b] [--batches 1,32] [--kiln-bin build/bin]
    python3 OUT/models_gpu.py run OUT [--frameworks kiln,torch,torch.compile,jax]

Two steps because the compiler and the GPU may be on different machines. `prepare` (where kilnc
and bench/requirements-models.txt are) exports each model as bench/models.py does, compiles it
with `kilnc --target=cuda:sm_90`, and keeps ONNX Runtime's CPU output as the reference. `run`
(where the GPU is: numpy, torch with CUDA and the model libraries; jax and onnx for the JAX
column) needs only OUT.

Weights and travel. An artifact holds its weights (ResNet-50's are 100 MB, GPT-2's 650 MB), too
much to carry to a lent machine. Artifacts larger than --carry-under MB therefore travel without
their large constants: every constant of at least 64 KiB in `kiln_cuda_constants` is cut out at
prepare and refilled at run with random normal values (std 0.02), then the seal is recomputed.
Kernel times do not depend on weight values, but outputs of such a run mean nothing: those rows
are timed, not checked ("timing only"). Smaller artifacts travel whole and their GPU outputs
are checked against ONNX Runtime's. The peers build the module on the GPU machine from the same
libraries (bench/models.py's MODELS) with its own random weights.

Every framework runs in full f32 (TF32 off in PyTorch, "highest" matmul precision in JAX, Kiln
without --gpu-tf32) and is timed the same way: the median over 5 rounds of back-to-back steps
on inputs already on the GPU, one synchronization per round (kiln-run --repeat: its step_ms).
Each peer runs in a process of its own per model; they all build and compile in parallel
(torch.compile and XLA take most of the run's time there), then wait, and are timed one at a
time, each model's row in turn, so that no timing shares the GPU or the processor.
"""
import argparse
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from gpu import ROUNDS, run_kiln as gpu_run_kiln, timed_rounds  # noqa: E402  (timed as bench/gpu.py times)
FRAMEWORKS = ["kiln", "torch", "torch.compile", "jax"]
DEFAULT_MODELS = "resnet50,mobilenet_v2,efficientnet_b0,vit_small,bert,gpt2"
HOLE_MIN = 64 << 10  # constants at least this large travel as holes
TOLERANCE = 1e-3  # |kiln - ort| <= TOLERANCE * max|ort|, as bench/models.py's rel_err


def log(msg=""):
    print(msg, file=sys.stderr, flush=True)


# ---- artifacts: the constants that travel as holes -----------------------------------------

def elf_symbol_range(data, name):
    """(file offset, size) of the ELF64 symbol `name` in `data`, or None."""
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise ValueError("not an ELF64 file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    for sh in sections:
        if sh[1] not in (2, 11):  # SHT_SYMTAB, SHT_DYNSYM
            continue
        strtab = sections[sh[6]]
        for off in range(sh[4], sh[4] + sh[5], sh[9]):
            st_name, _, _, st_shndx, st_value, st_size = struct.unpack_from("<IBBHQQ", data, off)
            end = data.index(b"\0", strtab[4] + st_name)
            if data[strtab[4] + st_name:end].decode() != name or st_shndx == 0 or st_shndx >= shnum:
                continue
            sec = sections[st_shndx]
            return sec[4] + (st_value - sec[3]), st_size
    return None


def constant_holes(data):
    """The large constants of a GPU artifact as (file offset, bytes): the regions between the
    `const:OFFSET` references of its program, those of at least HOLE_MIN bytes."""
    import re
    prog = elf_symbol_range(data, "kiln_cuda_program")
    consts = elf_symbol_range(data, "kiln_cuda_constants")
    if not prog or not consts:
        return []
    text = data[prog[0]:prog[0] + prog[1]].split(b"\0")[0].decode()
    offsets = sorted({int(m) for m in re.findall(r"\bconst:(\d+)", text)} | {consts[1]})
    holes = []
    for start, end in zip(offsets, offsets[1:]):
        if end - start >= HOLE_MIN:
            holes.append((consts[0] + start, end - start))
    return holes


def strip(artifact, dest):
    """Writes `artifact` without its holes to `dest`; returns the holes."""
    data = artifact.read_bytes()
    holes = constant_holes(data)
    with open(dest, "wb") as f:
        pos = 0
        for off, size in holes:
            f.write(data[pos:off])
            pos = off + size
        f.write(data[pos:])
    return holes


def refill(stripped, holes, dest, seed=0):
    """The artifact back from `stripped`: each hole random normal f32 (std 0.02), then the seal
    (`KILNSEAL`, CRC-32 of every byte before it, 4 zero bytes) recomputed."""
    import numpy as np
    rng = np.random.default_rng(seed)
    data = stripped.read_bytes()
    parts, pos, removed = [], 0, 0
    for off, size in holes:
        cut = off - removed
        parts.append(data[pos:cut])
        parts.append((rng.standard_normal(size // 4, dtype=np.float32) * np.float32(0.02)).tobytes()
                     + b"\0" * (size % 4))
        pos, removed = cut, removed + size
    parts.append(data[pos:])
    whole = b"".join(parts)
    if whole[-16:-8] != b"KILNSEAL":
        raise ValueError(f"{stripped}: no seal at the end")
    whole = whole[:-16] + b"KILNSEAL" + struct.pack("<I", zlib.crc32(whole[:-16])) + b"\0" * 4
    dest.write_bytes(whole)


# ---- prepare (where kilnc is) ---------------------------------------------------------------

def prepare(args):
    import numpy as np
    import models as M
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    kilnc, kiln_run = Path(args.kiln_bin) / "kilnc", Path(args.kiln_bin) / "kiln-run"
    for tool in (kilnc, kiln_run):
        if not tool.exists():
            sys.exit(f"error: no {tool}; build Kiln first (ninja -C build kilnc kiln-run)")
    prepared = {"target": args.target, "entries": {}}
    margs = argparse.Namespace(threads=2, budget=0.0, timeout=args.timeout)
    for model in args.models.split(","):
        if model not in M.MODELS:
            sys.exit(f"error: unknown model {model} (bench/models.py --list)")
        for batch in (int(b) for b in args.batches.split(",")):
            key = f"{model}_b{batch}"
            mdir = out / key
            shutil.rmtree(mdir, ignore_errors=True)
            mdir.mkdir(parents=True)
            entry = prepared["entries"][key] = {"model": model, "batch": batch, "ok": False}
            exp = M.run_worker("export", margs, mdir, model, batch)
            if not exp.get("ok"):
                entry["error"] = "export: " + exp.get("error", "?")
                log(f"{key}: {entry['error']}")
                continue
            with np.load(mdir / "inputs.npz") as feeds:
                entry["inputs"] = [(n, list(feeds[n].shape), str(feeds[n].dtype)) for n in feeds.files]
            t0 = time.perf_counter()
            proc = subprocess.run([str(kilnc), str(mdir / "model.onnx"), f"--target={args.target}",
                                   "-o", str(mdir / "model.kiln")], capture_output=True, text=True,
                                  timeout=args.timeout)
            entry["kilnc_s"] = round(time.perf_counter() - t0, 2)
            if proc.returncode != 0:
                lines = [l for l in proc.stderr.splitlines() if "error" in l] or proc.stderr.splitlines() or ["?"]
                entry["error"] = "kilnc: " + lines[0][:200]
                log(f"{key}: {entry['error']}")
                continue
            size = (mdir / "model.kiln").stat().st_size
            entry["artifact_mb"] = round(size / 2**20, 1)
            travel = size + sum(f.stat().st_size for f in mdir.glob("*.npy"))
            # ONNX Runtime's output is the reference for the artifacts that travel whole.
            whole = travel <= args.carry_under * 2**20 and \
                M.run_worker("onnxruntime", margs, mdir, model, batch).get("ok")
            (mdir / "model.onnx").unlink()
            (mdir / "inputs.npz").unlink(missing_ok=True)
            if not whole:
                entry["holes"] = strip(mdir / "model.kiln", mdir / "model.kiln.stripped")
                (mdir / "model.kiln").unlink()
                for f in mdir.glob("*.npy"):  # the run regenerates the inputs: nothing to check
                    f.unlink()
            entry["ok"] = True
            log(f"{key}: compiled in {entry['kilnc_s']} s, {entry['artifact_mb']} MB"
                f"{' (travels without its weights)' if 'holes' in entry else ''}")
    shutil.copy2(kiln_run, out / "kiln-run")
    for f in ("models_gpu.py", "models.py", "selection.py", "onnx_jax.py", "gpu.py"):
        if (HERE / f).exists():
            shutil.copy2(HERE / f, out / f)
    (out / "prepared.json").write_text(json.dumps(prepared, indent=1))
    log(f"prepared {out}: {sum(f.stat().st_size for f in out.rglob('*') if f.is_file()) / 2**20:.1f} MB")


# ---- workers (one process per framework and model, where the GPU is) ----------------------

def worker(args):
    """One framework on one model: builds and compiles it, prints READY, waits for GO on stdin
    (so that every worker prepares in parallel and only the timing is serialized), times it and
    writes the result as JSON."""
    result = {}
    try:
        step, sync, result = prepare_framework(args)
        print("READY", flush=True)
        if sys.stdin.readline().strip() == "GO":
            result.update(timed_rounds(step, sync))
    except Exception as e:  # the peer's failure is a table entry, not the end of the run
        result["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
    Path(args.result).write_text(json.dumps(result))


def prepare_framework(args):
    import torch
    import models as M
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device(args.device)
    model, spec = M.build_model(args.model, args.batch)
    feeds = M.inputs_for(spec, 0)
    result = {"version": torch.__version__,
              "device": torch.cuda.get_device_name() if dev.type == "cuda" else "cpu"}
    t0 = time.perf_counter()
    if args.mode == "jax":
        import jax
        import onnx_jax
        jax.config.update("jax_default_matmul_precision", "highest")  # full f32, as the others
        onnx_path = Path(args.scratch) / "jax-model.onnx"
        with torch.no_grad():
            torch.onnx.export(model, M.torch_inputs(feeds), str(onnx_path), opset_version=17,
                              input_names=list(feeds), output_names=["output"], dynamo=False)
        del model
        fn, weights = onnx_jax.convert(str(onnx_path))
        onnx_path.unlink()
        xs = [jax.device_put(v) for v in feeds.values()]
        w = jax.device_put(weights)
        compiled = jax.jit(fn).lower(w, *xs).compile()
        jax.block_until_ready(compiled(w, *xs))
        result.update(version=jax.__version__, device=str(jax.devices()[0]))
        holder = {}
        step = lambda: holder.__setitem__("y", compiled(w, *xs))  # noqa: E731
        sync = lambda: jax.block_until_ready(holder["y"])  # noqa: E731
    else:
        model = model.to(dev)
        xs = tuple(torch.from_numpy(v).to(dev) for v in feeds.values())
        if args.mode == "torch.compile":
            model = torch.compile(model)
        sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
        torch.set_grad_enabled(False)
        model(*xs)
        sync()
        step = lambda: model(*xs)  # noqa: E731
    result["setup_s"] = time.perf_counter() - t0
    return step, sync, result


class Workers:
    """The peers' worker processes: at most `parallel` preparing at once, each then waiting for
    its turn to be timed."""

    def __init__(self, dir_, device, parallel):
        import queue
        self.dir, self.device, self.parallel = dir_, device, parallel
        self.events = queue.Queue()
        self.procs, self.pending, self.preparing, self.ready, self.late = {}, [], set(), set(), set()

    def start(self, jobs):
        self.pending = list(jobs)
        self._fill()

    def _fill(self):
        import threading
        while self.pending and len(self.preparing) < self.parallel:
            key, entry, fw = self.pending.pop(0)
            mdir = self.dir / key
            result = mdir / f"{fw}.json"
            result.unlink(missing_ok=True)
            cmd = [sys.executable, str(Path(__file__).resolve()), "worker", fw, "--model", entry["model"],
                   "--batch", str(entry["batch"]), "--device", self.device, "--result", str(result),
                   "--scratch", str(mdir)]
            log_file = open(mdir / f"{fw}.log", "w")
            # A session of its own, so that stopping it stops inductor's compile workers too.
            p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log_file, text=True,
                                 env=worker_env(self.dir), start_new_session=True)
            self.procs[(key, fw)] = p
            self.preparing.add((key, fw))

            def read(job=(key, fw), out=p.stdout):
                for line in out:
                    self.events.put((job, line.strip()))
                self.events.put((job, None))
            threading.Thread(target=read, daemon=True).start()

    def wait_prepared(self, deadline):
        import queue
        while self.preparing or self.pending:
            try:
                job, line = self.events.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                break
            if job in self.preparing and line in ("READY", None):
                self.preparing.discard(job)
                if line == "READY":
                    self.ready.add(job)
                self._fill()
        # Whatever is still preparing would compete with the timings: it is stopped.
        for job in self.preparing | {(key, fw) for key, _, fw in self.pending}:
            self.late.add(job)
            if job in self.procs:
                kill(self.procs[job])
        self.pending = []

    def time(self, key, fw, timeout):
        p = self.procs.get((key, fw))
        result = self.dir / key / f"{fw}.json"
        if (key, fw) in self.late:
            return {"ok": False, "error": "not built and compiled within --prepare-timeout"}
        try:
            if p.poll() is None:
                p.stdin.write("GO\n")
                p.stdin.flush()
            p.wait(timeout=timeout)
        except (subprocess.TimeoutExpired, BrokenPipeError):
            kill(p)
            return {"ok": False, "error": f"not done within {timeout} s"}
        if not result.exists():
            tail = [l for l in (self.dir / key / f"{fw}.log").read_text().splitlines() if l.strip()]
            return {"ok": False, "error": (tail[-1] if tail else f"exit {p.returncode}")[:200]}
        data = json.loads(result.read_text())
        return dict(data, ok="error" not in data and "step_ms" in data)

    def stop(self):
        for p in self.procs.values():
            kill(p)


def kill(p):
    """Stops worker `p` and every process it started."""
    if p.poll() is None:
        import signal
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()


def worker_env(dir_):
    return dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false", TF_CPP_MIN_LOG_LEVEL="2",
                TORCHINDUCTOR_CACHE_DIR=os.environ.get("TORCHINDUCTOR_CACHE_DIR", str(dir_ / "inductor-cache")),
                TORCHINDUCTOR_COMPILE_THREADS="2", PYTHONUNBUFFERED="1")


def run_kiln(key, entry, dir_):
    """Kiln's row: the artifact (refilled where it travelled without its weights) and the
    inputs, timed by kiln-run; whole artifacts' outputs checked against ONNX Runtime's."""
    import numpy as np
    import models as M
    mdir = dir_ / key
    inputs = mdir / "inputs"
    inputs.mkdir(exist_ok=True)
    if "holes" not in entry:
        artifact = mdir / "model.kiln"
        names = [p.stem for p in sorted(mdir.glob("*.npy")) if p.stem != "ort_output"]
        for n in names:
            shutil.copy2(mdir / f"{n}.npy", inputs / f"{n}.npy")
        return time_kiln(mdir, names, reference=mdir / "ort_output.npy")
    # The inputs models.py drew at export, drawn again from the spec that prepare recorded.
    spec = tuple((n, tuple(shape), dtype) for n, shape, dtype in entry["inputs"])
    for n, v in M.inputs_for(spec, 0).items():
        np.save(inputs / f"{n}.npy", v)
    artifact = mdir / "model.kiln"
    refill(mdir / "model.kiln.stripped", entry["holes"], artifact)
    try:
        return dict(time_kiln(mdir, [n for n, _, _ in spec]), check="timing only")
    finally:
        artifact.unlink()  # as large as the weights


def time_kiln(mdir, names, reference=None):
    """kiln-run's timing of MDIR/model.kiln as bench/gpu.py times its graphs, and with a
    `reference`, the first output checked against it."""
    import numpy as np
    res = gpu_run_kiln(mdir, names)
    if res["ok"] and reference is not None:
        outs = sorted((mdir / "kiln_out").glob("*.npy"))
        want = np.load(reference).astype(np.float64)
        got = np.load(outs[0]).astype(np.float64) if outs else None
        if got is None or got.shape != want.shape:
            res["check"] = "no output" if got is None else f"shape {got.shape} vs {want.shape}"
        else:
            err = float(np.max(np.abs(got - want)) / (np.max(np.abs(want)) + 1e-30))
            res["rel_err"] = err
            res["check"] = f"{'match' if err <= TOLERANCE else 'MISMATCH'} (max error {err:.2g} of max |ort|)"
    return res


# ---- run (where the GPU is) -----------------------------------------------------------------

def run(args):
    dir_ = Path(args.dir).resolve()
    prepared = json.loads((dir_ / "prepared.json").read_text())
    frameworks = args.frameworks.split(",")
    peers = [fw for fw in frameworks if fw != "kiln"]
    entries = {k: e for k, e in prepared["entries"].items() if e["ok"]}
    if args.models:
        entries = {k: e for k, e in entries.items() if e["model"] in args.models.split(",")}
    if args.batches:
        entries = {k: e for k, e in entries.items() if str(e["batch"]) in args.batches.split(",")}
    entries = dict(sorted(entries.items(), key=lambda kv: kv[1]["batch"]))  # batch 1 first
    device = "cuda" if not args.cpu_check else "cpu"
    results = Path(args.results or dir_ / "results")
    results.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()

    # Every peer prepares (imports, builds, compiles: torch.compile and XLA take most of the
    # time) in parallel, while --wait-pid's process (say the conformance run) goes on too;
    # only then is each framework timed, one at a time.
    workers = Workers(dir_, device, args.parallel)
    workers.start([(key, entry, fw) for key, entry in entries.items() for fw in peers])
    workers.wait_prepared(start + args.prepare_timeout)
    log(f"prepared {len(workers.ready)} of {len(entries) * len(peers)} peer runs in {time.monotonic() - start:.0f} s")
    if args.wait_pid and Path(f"/proc/{args.wait_pid}").exists():
        log(f"waiting for process {args.wait_pid} to finish before timing")
        while Path(f"/proc/{args.wait_pid}").exists():
            time.sleep(0.5)

    report = {"date": time.strftime("%Y-%m-%d %H:%M"), "entries": {}, "device": "?", "versions": {}}
    try:
        for key, entry in entries.items():
            # The load average shows whether anything else ran on the processor while the row was
            # timed (launch-bound batch-1 steps slow down with it).
            row = report["entries"][key] = {"model": entry["model"], "batch": entry["batch"],
                                            "kilnc_s": entry.get("kilnc_s"), "artifact_mb": entry.get("artifact_mb"),
                                            "load": round(os.getloadavg()[0], 1)}
            for fw in frameworks:
                if fw == "kiln":
                    row[fw] = run_kiln(key, entry, dir_) if not args.cpu_check else \
                        {"ok": False, "error": "no GPU"}
                else:
                    row[fw] = workers.time(key, fw, args.timeout)
                    if fw != "jax" and row[fw].get("device"):
                        report["device"] = row[fw]["device"]  # JAX names it differently
                    if row[fw].get("version"):
                        report["versions"].setdefault("jax" if fw == "jax" else "torch", row[fw]["version"])
            log(summary_line(key, row, frameworks))
            # Written after every model, so that a run stopped early still leaves its table.
            (results / "results.json").write_text(json.dumps(report, indent=1))
            (results / "results.md").write_text(render(report, frameworks))
    finally:
        workers.stop()
    print(render(report, frameworks))


def fmt(res):
    if not res:
        return "-"
    return f"{res['step_ms']:.3f}" if res.get("ok") else "fails"


def summary_line(key, row, frameworks):
    parts = [f"{fw} {fmt(row.get(fw))}" + ("" if (row.get(fw) or {}).get("ok") else
                                           f" ({(row.get(fw) or {}).get('error', '')})") for fw in frameworks]
    return f"{key}: " + ", ".join(parts) + f"; {(row.get('kiln') or {}).get('check', '')}"


def render(report, frameworks):
    peers = [f for f in frameworks if f != "kiln"]
    lines = [f"GPU: {report['device']}; {report['date']}; torch {report['versions'].get('torch')}, "
             f"jax {report['versions'].get('jax')}; full f32 everywhere. ms per step: median of "
             f"{ROUNDS} rounds of back-to-back steps on inputs kept on the GPU; `x` columns are "
             "the peer's time over Kiln's (above 1: Kiln is faster).", ""]
    header = ["model", "batch", "kiln ms"] + [f"{p} ms" for p in peers] + [f"vs {p}" for p in peers] + \
        ["best peer", "kiln check", "kilnc s", "CUDA graph", "load"]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    errors = []
    for key, row in report["entries"].items():
        kiln = row.get("kiln") or {}
        cells = [row["model"], str(row["batch"]), fmt(kiln)] + [fmt(row.get(p)) for p in peers]
        for p in peers:
            pr = row.get(p) or {}
            cells.append(f"{pr['step_ms'] / kiln['step_ms']:.2f}x" if pr.get("ok") and kiln.get("ok") else "-")
        ok = [(row[p]["step_ms"], p) for p in peers if (row.get(p) or {}).get("ok")]
        cells.append(f"{min(ok)[1]} ({min(ok)[0] / kiln['step_ms']:.2f}x)" if ok and kiln.get("ok") else "-")
        cells += [kiln.get("check", "-"), str(row.get("kilnc_s")), str(kiln.get("cuda_graph", "-")), str(row.get("load"))]
        lines.append("| " + " | ".join(cells) + " |")
        for fw in frameworks:
            if row.get(fw) and not row[fw].get("ok"):
                errors.append(f"- {key} {fw}: {row[fw].get('error')}")
    if errors:
        lines += ["", "Failures:", ""] + errors
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    pp = sub.add_parser("prepare", help="export, compile and pack the models (where kilnc is)")
    pp.add_argument("out")
    pp.add_argument("--models", default=DEFAULT_MODELS, help=f"bench/models.py names (default {DEFAULT_MODELS})")
    pp.add_argument("--batches", default="1,32", help="batch sizes (default 1,32: latency and throughput)")
    pp.add_argument("--kiln-bin", default=str(HERE.parent / "build" / "bin"))
    pp.add_argument("--target", default="cuda:sm_90")
    pp.add_argument("--carry-under", type=float, default=16,
                    help="artifacts that travel with their inputs in this many MB travel whole and are checked (default 16)")
    pp.add_argument("--timeout", type=int, default=900, help="seconds per export or compile")
    pr = sub.add_parser("run", help="time every framework (where the GPU is)")
    pr.add_argument("dir")
    pr.add_argument("--frameworks", default=",".join(FRAMEWORKS), help="subset of " + ",".join(FRAMEWORKS))
    pr.add_argument("--models", default="", help="only these models (default: every prepared one)")
    pr.add_argument("--batches", default="", help="only these batch sizes (default: every prepared one)")
    pr.add_argument("--results", default="", help="where results.md/json go (default DIR/results)")
    pr.add_argument("--timeout", type=int, default=120, help="seconds per timing of a framework and model")
    pr.add_argument("--prepare-timeout", type=int, default=400,
                    help="seconds for every peer to build and compile its models (default 400)")
    pr.add_argument("--parallel", type=int, default=12, help="peer processes preparing at once (default 12)")
    pr.add_argument("--wait-pid", type=int, default=0,
                    help="wait for this process to exit before timing: work that runs alongside the preparation, "
                         "never alongside a timing")
    pr.add_argument("--cpu-check", action="store_true", help=argparse.SUPPRESS)
    pw = sub.add_parser("worker", help=argparse.SUPPRESS)
    pw.add_argument("mode", choices=["torch", "torch.compile", "jax"])
    for a in ("--model", "--result", "--scratch"):
        pw.add_argument(a, required=True)
    pw.add_argument("--batch", type=int, required=True)
    pw.add_argument("--device", default="cuda")
    args = p.parse_args()
    {"prepare": prepare, "run": run, "worker": worker}[args.cmd](args)


if __name__ == "__main__":
    main()
