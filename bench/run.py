#!/usr/bin/env python3
# Benchmark harness: Kiln vs ONNX Runtime vs JAX/XLA on the CPU, same graphs, inputs and threads.
#
# Usage: bench/run.sh [--graphs a,b] [--threads T] [--kiln-bin DIR] [--reps-scale F] [--list]
# See bench/README.md. Creates bench/.venv on first use, writes bench/out/results.md.

import argparse
import datetime
import hashlib
import json
import os
import platform
import resource
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
VENV = BENCH / ".venv"
OUT = BENCH / "out"
REQUIREMENTS = BENCH / "requirements.txt"
INSTALL_STAMP = VENV / "bench-install.json"
PEERS = ("onnxruntime", "jax")
RTOL = ATOL = 1e-3


def log(msg=""):
    print(msg, file=sys.stderr, flush=True)


# ---- virtual environment ----------------------------------------------------------------------

def _in_venv():
    return Path(sys.prefix).resolve() == VENV.resolve()


def _requirement_lines():
    return [l.split("#")[0].strip() for l in REQUIREMENTS.read_text().splitlines() if l.split("#")[0].strip()]


def _requirement_name(line):
    return re.match(r"[A-Za-z0-9_.-]+", line).group(0).lower()


def _pip_error(stderr):
    lines = [l.strip() for l in stderr.splitlines() if l.strip()]
    # pip's last ERROR line is the verdict ("No matching distribution found for ..."); earlier
    # ones such as "Ignored the following versions ..." are context.
    errors = [l for l in lines if l.startswith("ERROR:") and not l.startswith("ERROR: Ignored")]
    return (errors[-1] if errors else (lines[-1] if lines else "unknown error"))[:300]


def _install(python):
    """pip-installs requirements.txt; on failure, each line alone, so one bad peer costs only itself."""
    log(f"Installing {REQUIREMENTS.relative_to(ROOT)} into {VENV.relative_to(ROOT)} (pip log: bench/out/pip.log) ...")
    OUT.mkdir(exist_ok=True)
    pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    with open(OUT / "pip.log", "w") as pip_log:
        proc = subprocess.run(pip + ["-r", str(REQUIREMENTS)], capture_output=True, text=True)
        pip_log.write(proc.stdout + proc.stderr)
        failures = {}
        if proc.returncode != 0:
            log("  installing them together failed; trying each one alone")
            for line in _requirement_lines():
                one = subprocess.run(pip + [line], capture_output=True, text=True)
                pip_log.write(f"\n--- {line}\n{one.stdout}{one.stderr}")
                if one.returncode != 0:
                    failures[_requirement_name(line)] = _pip_error(one.stderr)
                    log(f"  {line}: FAILED ({failures[_requirement_name(line)]})")
    return failures


def bootstrap(argv):
    """Re-executes this script with bench/.venv's python, creating and filling the venv first."""
    python = VENV / "bin" / "python"
    if not python.exists():
        log(f"Creating {VENV} ...")
        proc = subprocess.run([sys.executable, "-m", "venv", str(VENV)], capture_output=True, text=True)
        if proc.returncode != 0:
            sys.exit(f"error: cannot create {VENV}: {proc.stderr.strip()}\n"
                     "  (on Debian/Ubuntu: apt-get install python3-venv)")
    req_hash = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()
    stamp = json.loads(INSTALL_STAMP.read_text()) if INSTALL_STAMP.exists() else {}
    if stamp.get("requirements_sha256") != req_hash or "--reinstall" in argv:
        failures = _install(python)
        INSTALL_STAMP.write_text(json.dumps({"requirements_sha256": req_hash, "failures": failures}, indent=1))
    if _in_venv():
        return
    os.environ.setdefault("KILN_BENCH_ARGV0", sys.argv[0])
    os.execv(str(python), [str(python), str(Path(__file__).resolve())] + argv)


def install_failures():
    if INSTALL_STAMP.exists():
        return json.loads(INSTALL_STAMP.read_text()).get("failures", {})
    return {}


def package_version(name):
    from importlib import metadata
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


# ---- machine facts ----------------------------------------------------------------------------

def cpu_model():
    """The model name and the vector extensions that matter for these kernels."""
    model, flags = platform.processor() or "unknown", set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
            elif line.startswith("flags"):
                flags = set(line.split(":", 1)[1].split())
                break
    except OSError:
        pass
    isa = [name for flag, name in (("avx2", "AVX2"), ("fma", "FMA"), ("avx512f", "AVX-512F"),
                                   ("avx512_bf16", "AVX512-BF16"), ("amx_tile", "AMX")) if flag in flags]
    return model + (f" ({', '.join(isa)})" if isa else "")


def loadavg():
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "n/a"


def git_state():
    def git(*args):
        proc = subprocess.run(["git", "--no-optional-locks", "-C", str(ROOT), *args], capture_output=True, text=True)
        return proc.stdout.strip() if proc.returncode == 0 else None
    head = git("rev-parse", "--short", "HEAD")
    if head is None:
        return "not a git checkout"
    dirty = git("status", "--porcelain", "--untracked-files=no")
    n = len(dirty.splitlines()) if dirty else 0
    return f"{head}" + (f" + {n} modified tracked file{'s' if n != 1 else ''}" if n else "")


# ---- subprocesses -----------------------------------------------------------------------------

def child_env(threads):
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = str(threads)
    env["JAX_PLATFORMS"] = "cpu"
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    env.pop("PYTHONPATH", None)
    return env


def run_child(cmd, cpus, env, timeout, log_path=None):
    """Runs cmd pinned to cpus; returns (returncode or None on timeout, stdout, stderr, seconds)."""
    def pin():
        os.sched_setaffinity(0, cpus)
        os.setsid()
    t0 = time.perf_counter()
    usage0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=pin)
    try:
        out, err = proc.communicate(timeout=timeout)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        rc = None
    except KeyboardInterrupt:
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    secs = time.perf_counter() - t0
    usage1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    # Children run one at a time, so the difference is this child's CPU time.
    run_child.last_cpu = (usage1.ru_utime + usage1.ru_stime) - (usage0.ru_utime + usage0.ru_stime)
    if log_path is not None:
        with open(log_path, "a") as f:
            f.write(f"$ {shlex.join(cmd)}\n# exit {rc}, {secs:.2f} s\n{out}{err}\n")
    return rc, out, err, secs


def exit_text(rc):
    if rc is None:
        return "timed out"
    if rc < 0:
        try:
            return f"crashed ({signal.Signals(-rc).name})"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit {rc}"


def first_error(text, path=None):
    """The most telling line of a tool's output, without the tool's prefix and the model's path."""
    if path is not None:
        text = text.replace(f"{path}: ", "")
    text = re.sub(r"^(kilnc|kiln-run): error: ", "", text, flags=re.MULTILINE)
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    for pattern in (r"\berror\b", r"ERROR", r"unsupported|not supported"):
        for l in lines:
            if re.search(pattern, l, re.IGNORECASE if pattern != "ERROR" else 0):
                return l[:400]
    return lines[0][:400] if lines else "(no message)"


# ---- Kiln -------------------------------------------------------------------------------------

class Kiln:
    def __init__(self, bin_dir, snapshot_dir):
        bin_dir = bin_dir.resolve()
        self.source = bin_dir
        self.broken = None
        for tool in ("kilnc", "kiln-run"):
            if not os.access(bin_dir / tool, os.X_OK):
                sys.exit(f"error: {bin_dir / tool} not found or not executable.\n"
                         f"  build Kiln first: cmake -S {ROOT} -B {ROOT}/build -G Ninja && ninja -C {ROOT}/build\n"
                         "  (or point --kiln-bin at the directory holding kilnc and kiln-run)")
        # Others may rebuild build/bin while this runs; a private copy keeps one version of the
        # tools for the whole run (they find their libraries by absolute RUNPATH).
        snapshot_dir.mkdir(parents=True, exist_ok=True)
        self.mtimes = {}
        for tool in ("kilnc", "kiln-run"):
            src = bin_dir / tool
            self.mtimes[tool] = src.stat().st_mtime
            shutil.copy2(src, snapshot_dir / tool)
        self.kilnc = snapshot_dir / "kilnc"
        self.kiln_run = snapshot_dir / "kiln-run"
        help_run = subprocess.run([str(self.kiln_run), "--help"], capture_output=True, text=True).stdout
        help_c = subprocess.run([str(self.kilnc), "--help"], capture_output=True, text=True).stdout
        self.has_warmup = "--warmup" in help_run
        self.has_threads = "--threads" in help_run
        self.has_stats = re.search(r"^\s*--buffer-stats\b", help_c, re.MULTILINE) is not None

    def sanity_check(self, work_dir, cpus, env):
        """Compiles a one-Relu model, to tell a broken kilnc from graphs it does not support.

        The tensor is large enough that parallel or tiled code paths, not only scalar ones, run.
        """
        import onnx
        from onnx import helper, TensorProto
        work_dir.mkdir(parents=True, exist_ok=True)
        vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, [256, 1024])
        model = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "relu",
                                                    [vi("x")], [vi("y")]), opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        onnx.save(model, str(work_dir / "relu.onnx"))
        rc, out, err, _ = run_child([str(self.kilnc), str(work_dir / "relu.onnx"), "-o", str(work_dir / "relu.kiln")],
                                    cpus, env, 300, work_dir / "kilnc.log")
        self.broken = None if rc == 0 else (
            f"kilnc fails even on a one-Relu model ({exit_text(rc)}: {first_error(err + out, work_dir / 'relu.onnx')}): Kiln's build is "
            "broken right now, not the benchmark graphs (log: bench/out/sanity/kilnc.log)")

    def changed_since_start(self):
        return [t for t, m in self.mtimes.items()
                if not (self.source / t).exists() or (self.source / t).stat().st_mtime != m]

    def describe(self):
        when = datetime.datetime.fromtimestamp(self.mtimes["kilnc"]).strftime("%Y-%m-%d %H:%M:%S")
        flags = ", ".join(f"{f}: {'yes' if ok else 'no'}" for f, ok in
                          (("kiln-run --warmup", self.has_warmup), ("kiln-run --threads", self.has_threads),
                           ("kilnc --buffer-stats", self.has_stats)))
        return f"{self.source} (kilnc built {when}); {flags}"


PEAK_RE = re.compile(r"peak intermediate memory: (\d+) bytes")
MEDIAN_RE = re.compile(r"(\d+) runs?: median ([0-9.eE+-]+) ms per run \(min ([0-9.eE+-]+) ms, max ([0-9.eE+-]+) ms\)")


def kiln_compile(kiln, gdir, cpus, env, timeout):
    """Compiles gdir/model.onnx; returns a dict with ok, error, seconds and peak (bytes or None)."""
    artifact = gdir / "model.kiln"
    artifact.unlink(missing_ok=True)
    cmd = [str(kiln.kilnc), str(gdir / "model.onnx"), "-o", str(artifact)] + (["--buffer-stats"] if kiln.has_stats else [])
    rc, out, err, secs = run_child(cmd, cpus, env, timeout, gdir / "kilnc.log")
    res = {"seconds": secs, "rc": rc, "peak": None}
    m = PEAK_RE.search(err) or PEAK_RE.search(out)
    if m:
        res["peak"] = int(m.group(1))
    if rc == 0 and artifact.exists():
        res["ok"] = True
    else:
        res["ok"] = False
        what = "unsupported" if rc == 3 else exit_text(rc)
        res["error"] = f"kilnc {what}: {first_error(err + out, gdir / 'model.onnx')}"
        res["stderr"] = err.strip()
    return res


def kiln_run(kiln, gdir, inputs, cpus, env, timeout, repeat, warmup, threads, output_dir=None):
    cmd = [str(kiln.kiln_run), str(gdir / "model.kiln")]
    cmd += [f"--input={name}={path}" for name, path in inputs.items()]
    if output_dir is not None:
        shutil.rmtree(output_dir, ignore_errors=True)
        cmd += ["--output-dir", str(output_dir)]
    if kiln.has_warmup:
        cmd += ["--repeat", str(repeat)] + (["--warmup", str(warmup)] if warmup else [])
    else:
        cmd += ["--repeat", str(repeat + warmup)]  # warm-up runs then sit in the median
    if kiln.has_threads:
        cmd += ["--threads", str(threads)]  # without it, OMP_NUM_THREADS in env does the same
    rc, out, err, secs = run_child(cmd, cpus, env, timeout, gdir / "kiln-run.log")
    cpu_per_wall = run_child.last_cpu / secs if secs > 0 else None
    if rc != 0:
        return {"ok": False, "error": f"kiln-run {exit_text(rc)}: {first_error(err + out)}"}
    m = MEDIAN_RE.search(out)
    if not m:
        return {"ok": False, "error": f"cannot parse kiln-run's timing line from: {out.strip()[:200]!r}"}
    return {"ok": True, "reps": int(m.group(1)), "median_ms": float(m.group(2)), "min_ms": float(m.group(3)),
            "max_ms": float(m.group(4)), "warmup": warmup if kiln.has_warmup else 0,
            "cpu_per_wall": cpu_per_wall}


def probe_ops(kiln, model_path, work_dir, cpus, env, timeout):
    """Compiles every distinct (op, attributes) of a model as a one-node model; returns the refusals.

    kilnc stops at the first op it refuses; this lists all of them at once.
    """
    import onnx
    from onnx import helper
    model = onnx.shape_inference.infer_shapes(onnx.load(str(model_path)), strict_mode=True)
    g = model.graph
    types = {vi.name: vi for vi in list(g.input) + list(g.value_info) + list(g.output)}
    inits = {t.name: t for t in g.initializer}
    shutil.rmtree(work_dir, ignore_errors=True)
    work_dir.mkdir(parents=True)
    seen, refusals = set(), []
    for node in g.node:
        key = (node.op_type, str(sorted((a.name, str(helper.get_attribute_value(a))) for a in node.attribute)))
        if key in seen:
            continue
        seen.add(key)
        used = list(dict.fromkeys(n for n in node.input if n))  # an input used twice is one graph input
        ins = [types[n] for n in used if n not in inits]
        node_inits = [inits[n] for n in used if n in inits]
        one = helper.make_model(helper.make_graph([node], f"probe_{node.name}", ins, [types[o] for o in node.output],
                                                  initializer=node_inits),
                                opset_imports=model.opset_import)
        one.ir_version = model.ir_version
        path = work_dir / f"{node.name}.onnx"
        onnx.save(one, str(path))
        rc, out, err, _ = run_child([str(kiln.kilnc), str(path), "-o", str(path.with_suffix(".kiln"))],
                                    cpus, env, timeout, work_dir / "probe.log")
        if rc != 0:
            attrs = ", ".join(f"{a.name}={_attr_text(helper.get_attribute_value(a))}" for a in node.attribute)
            what = "refused" if rc == 3 else exit_text(rc)
            refusals.append(f"{node.op_type}({attrs}) [node {node.name}]: {what}: {first_error(err + out, path)}")
    return refusals


def _attr_text(value):
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    if isinstance(value, list):
        return "[" + ", ".join(_attr_text(v) for v in value) + "]"
    return str(value) if not hasattr(value, "name") else f"<{type(value).__name__} {value.name}>"


# ---- peers ------------------------------------------------------------------------------------

def run_worker(mode, graph, gdir, cpus, env, args, extra=(), outputs=None):
    result_file = gdir / f"{mode}.result.json"
    result_file.unlink(missing_ok=True)
    cmd = [sys.executable, str(BENCH / "worker.py"), mode, "--graph", graph, "--dir", str(gdir),
           "--result", str(result_file), "--threads", str(args.threads), "--cpus", ",".join(map(str, sorted(cpus))),
           "--warmup", str(args.warmup), "--budget", str(args.budget), "--min-reps", str(args.min_reps),
           "--reps", str(args.reps), *extra]
    if outputs is not None:
        shutil.rmtree(outputs, ignore_errors=True)
        cmd += ["--save-outputs", str(outputs)]
    rc, out, err, _ = run_child(cmd, cpus, env, args.timeout, gdir / f"{mode}.log")
    if result_file.exists():
        return json.loads(result_file.read_text())
    return {"ok": False, "error": f"{mode} worker {exit_text(rc)}: {first_error(err + out)}"}


def compare(ref_dir, test_dir, names):
    """Returns (ok, text): every output within ATOL + RTOL*|ref| of the reference, elementwise."""
    import numpy as np
    worst = 0.0
    for name in names:
        ref_path = ref_dir / f"{name}.npy"
        test_path = test_dir / f"{name}.npy"
        if not test_path.exists():
            return False, f"output '{name}' was not written"
        ref, got = np.load(ref_path), np.load(test_path)
        if ref.shape != got.shape:
            return False, f"output '{name}' has shape {got.shape}, expected {ref.shape}"
        if not np.isfinite(got).all() and np.isfinite(ref).all():
            return False, f"output '{name}' has {int((~np.isfinite(got)).sum())} non-finite values"
        err = np.abs(got.astype(np.float64) - ref.astype(np.float64))
        bad = err > ATOL + RTOL * np.abs(ref)
        worst = max(worst, float(err.max()) if err.size else 0.0)
        if bad.any():
            idx = np.unravel_index(int(np.argmax(np.where(bad, err, -1))), err.shape)
            return False, (f"output '{name}': {int(bad.sum())} of {err.size} elements differ; max abs err "
                           f"{float(err.max()):.3g}; at {tuple(int(i) for i in idx)} got {float(got[idx]):.6g}, expected {float(ref[idx]):.6g}")
    return True, f"max abs err {worst:.2g}"


def memory_env(env, problems):
    """The environment for the ORT memory worker: memtrack.so preloaded, or the RSS fallback's."""
    shim = OUT / "memtrack.so"
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc:
        OUT.mkdir(exist_ok=True)
        proc = subprocess.run([cc, "-O2", "-shared", "-fPIC", str(BENCH / "memtrack.c"), "-o", str(shim)],
                              capture_output=True, text=True)
        if proc.returncode == 0:
            return dict(env, LD_PRELOAD=str(shim), KILN_BENCH_MEMTRACK=str(shim))
        problems.append(f"cannot build memtrack.so ({first_error(proc.stderr)}); ORT memory falls back to peak RSS")
    else:
        problems.append("no C compiler for memtrack.c; ORT memory falls back to peak RSS (good to a few hundred KiB)")
    # Big blocks straight from mmap and back, so RSS follows live tensors rather than the heap's high water.
    return dict(env, MALLOC_MMAP_THRESHOLD_="131072", MALLOC_TRIM_THRESHOLD_="131072")


# ---- formatting -------------------------------------------------------------------------------

def fmt_ms(v):
    if v is None:
        return "-"
    return f"{v:.3f}" if v < 1 else f"{v:.2f}" if v < 100 else f"{v:.1f}"


def fmt_bytes(n):
    if n is None:
        return "n/a"
    return f"{n / 2**20:.2f} MiB" if n >= 2**20 else f"{n / 2**10:.1f} KiB" if n >= 1024 else f"{n} B"


def ratio(peer, kiln):
    if peer is None or kiln is None or kiln <= 0:
        return "-"
    r = peer / kiln
    return f"{r:.3f}x" if r < 0.1 else f"{r:.2f}x"


def shorten(text, n=48):
    return text if len(text) <= n else text[:n - 1] + "…"


def text_table(header, rows):
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    line = lambda r: "  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(r, widths)))
    return "\n".join([line(header), "  ".join("-" * w for w in widths)] + [line(r) for r in rows])


def md_table(header, rows, align=None):
    align = align or ["---"] + ["--:"] * (len(header) - 1)
    esc = lambda c: str(c).replace("|", "\\|")
    return "\n".join(["| " + " | ".join(map(esc, header)) + " |", "|" + "|".join(align) + "|"] +
                     ["| " + " | ".join(map(esc, r)) + " |" for r in rows])


# ---- main -------------------------------------------------------------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(prog="bench/run.sh", description="Kiln vs ONNX Runtime vs JAX/XLA on the CPU.")
    p.add_argument("--graphs", help="comma-separated subset of the graphs (see --list); default: all")
    p.add_argument("--threads", type=int, default=2, help="threads every framework may use (default 2)")
    p.add_argument("--kiln-bin", type=Path, default=BENCH / ".." / "build" / "bin",
                   help="directory with kilnc and kiln-run (default ../build/bin relative to bench/)")
    p.add_argument("--reps-scale", type=float, default=1.0,
                   help="scale the time spent per measurement (1.0: ~1.5 s of timed runs each)")
    p.add_argument("--reps", type=int, default=0, help="fixed number of timed runs for every framework (no calibration)")
    p.add_argument("--warmup", type=int, default=10, help="warm-up runs before timing (default 10)")
    p.add_argument("--rounds", type=int, default=3,
                   help="time every framework this many times in turn and report the median of the round "
                        "medians, so that a load change on a shared machine hits all of them (default 3)")
    p.add_argument("--frameworks", default="kiln,onnxruntime,jax", help="subset of kiln,onnxruntime,jax")
    p.add_argument("--no-memory", action="store_true", help="skip the peak-memory measurements")
    p.add_argument("--timeout", type=float, default=900, help="seconds allowed per subprocess (default 900)")
    p.add_argument("--list", action="store_true", help="list the graphs and exit")
    p.add_argument("--reinstall", action="store_true", help="re-run pip install -r requirements.txt first")
    args = p.parse_args(argv)
    args.budget = 1.5 * args.reps_scale
    args.warmup_budget = 2.0
    args.min_reps = max(3, int(round(10 * min(1.0, args.reps_scale))))
    args.max_reps = 5000
    return args


def main(argv):
    bootstrap(argv)
    args = parse_args(argv)
    started = time.perf_counter()
    command = shlex.join([os.environ.get("KILN_BENCH_ARGV0", sys.argv[0])] + argv)
    failures = install_failures()
    try:
        import numpy  # noqa: F401
        import onnx  # noqa: F401
    except ImportError as e:
        sys.exit(f"error: {e}; numpy and onnx are required to build the graphs "
                 f"(see bench/out/pip.log, or rerun with --reinstall)")
    sys.path.insert(0, str(BENCH))
    import graphs
    import onnx
    import worker

    if args.list:
        for g in graphs.GRAPHS.values():
            print(f"{g.name:18} {g.summary}")
        return 0

    names = list(graphs.GRAPHS) if not args.graphs else [n.strip() for n in args.graphs.split(",") if n.strip()]
    unknown = [n for n in names if n not in graphs.GRAPHS]
    if unknown:
        sys.exit(f"error: unknown graph(s) {', '.join(unknown)}; known: {', '.join(graphs.GRAPHS)}")
    frameworks = [f.strip() for f in args.frameworks.split(",")]
    if set(frameworks) - {"kiln", "onnxruntime", "jax"}:
        sys.exit("error: --frameworks takes a subset of kiln,onnxruntime,jax")
    if args.threads < 1:
        sys.exit("error: --threads must be at least 1")

    # Every framework runs pinned to the same T CPUs, on top of its own thread setting.
    available = sorted(os.sched_getaffinity(0))
    problems = []
    if args.threads > len(available):
        problems.append(f"--threads {args.threads} exceeds the {len(available)} CPUs available; threads will share CPUs")
        cpus = set(available)
    else:
        cpus = set(available[:args.threads])
    env = child_env(args.threads)

    kiln = Kiln(args.kiln_bin, OUT / "bin") if "kiln" in frameworks else None
    if kiln:
        kiln.sanity_check(OUT / "sanity", cpus, child_env(args.threads))
        if kiln.broken:
            problems.append(kiln.broken)
            log(kiln.broken)

    # Peers: report what is missing, skip its column, go on.
    peer_state = {}
    for peer, dist, fw in (("onnxruntime", "onnxruntime", "onnxruntime"), ("jax", "jax", "jax")):
        version = package_version(dist)
        if fw not in frameworks:
            peer_state[peer] = "not selected (--frameworks)"
        elif version is None:
            why = f"pip error: {failures[peer]}" if peer in failures else "not in bench/.venv"
            peer_state[peer] = f"not installed ({why}); its column is skipped"
        else:
            peer_state[peer] = None
    for peer, state in peer_state.items():
        if state:
            log(f"{peer}: {state}")
            if "not installed" in state:
                problems.append(f"{peer}: {state}")
    use_ort = peer_state["onnxruntime"] is None
    use_jax = peer_state["jax"] is None

    mem_env = memory_env(env, problems) if use_ort and not args.no_memory else env
    load_before = loadavg()
    try:
        busy = float(load_before.split()[0])
    except ValueError:
        busy = 0.0
    if busy > 0.5 * len(available):
        problems.append(f"load average {busy:.1f} on {len(available)} CPUs when the run started: other processes "
                        "competed for the CPUs, so medians are noisy (compare the min columns); rerun on a quiet "
                        "machine for numbers to quote")
    log(f"Kiln: {kiln.describe() if kiln else 'not selected'}")
    log(f"threads {args.threads}, pinned to CPUs {sorted(cpus)}; warm-up {args.warmup}; "
        f"~{args.budget:.1f} s of timed runs per measurement; load average {load_before}")
    if kiln and not kiln.has_warmup:
        problems.append("kiln-run has no --warmup: its warm-up runs are part of its --repeat count and median")
    if kiln and not kiln.has_threads:
        problems.append("kiln-run has no --threads: its thread count is set through OMP_NUM_THREADS")
    if kiln and not kiln.has_stats:
        problems.append("kilnc has no --buffer-stats yet: Kiln's peak intermediate memory is n/a")

    results = {}
    for i, name in enumerate(names, 1):
        graph = graphs.GRAPHS[name]
        gdir = OUT / "graphs" / name
        for stale in gdir.glob("*.log") if gdir.exists() else []:
            stale.unlink()
        inputs = graphs.generate(graph, gdir)
        output_names = [o.name for o in onnx.load(str(gdir / "model.onnx"), load_external_data=False).graph.output]
        r = results[name] = {"kiln": None, "ort": None, "jax": None, "check": [], "notes": []}
        log(f"[{i}/{len(names)}] {name}")

        if kiln:
            comp = kiln_compile(kiln, gdir, cpus, env, args.timeout)
            r["kiln_compile"] = comp
            if comp["ok"]:
                log(f"  kilnc: {comp['seconds']:.1f} s")
                # Two runs that write the outputs and size the timed run (as the workers' probes do).
                probe = kiln_run(kiln, gdir, inputs, cpus, env, args.timeout, repeat=2, warmup=0,
                                 threads=args.threads, output_dir=gdir / "kiln_outputs")
                if probe["ok"]:
                    warmup, reps = worker.plan_counts(args, [probe["median_ms"] / 1e3])
                    r["kiln"] = kiln_run(kiln, gdir, inputs, cpus, env, args.timeout, repeat=reps,
                                         warmup=warmup, threads=args.threads)
                else:
                    r["kiln"] = probe
            else:
                log(f"  {comp['error']}")
                if comp["rc"] is not None and not kiln.broken:
                    log("  compiling each op alone to list every refusal ...")
                    comp["refused"] = probe_ops(kiln, gdir / "model.onnx", gdir / "probe", cpus, env, 120)
                    for line in comp["refused"]:
                        log(f"    {line}")
                r["kiln"] = {"ok": False, "error": comp["error"]}
            k = r["kiln"]
            log(f"  kiln: {fmt_ms(k['median_ms'])} ms ({k['reps']} runs)" if k["ok"] else f"  kiln: {k['error']}")

        if use_ort:
            r["ort"] = run_worker("ort", name, gdir, cpus, env, args, outputs=gdir / "ort_outputs")
            o = r["ort"]
            log(f"  onnxruntime: {fmt_ms(o['median_ms'])} ms ({o['reps']} runs)" if o["ok"] else f"  onnxruntime: {o['error']}")
        if use_jax:
            r["jax"] = run_worker("jax", name, gdir, cpus, env, args, outputs=gdir / "jax_outputs")
            j = r["jax"]
            log(f"  jax: {fmt_ms(j['median_ms'])} ms ({j['reps']} runs, {j.get('busy_threads')} XLA pool threads busy)"
                if j["ok"] else f"  jax: {j['error']}")

        # Correctness: ONNX Runtime is the reference; JAX stands in when ORT is unavailable.
        ref = ("onnxruntime", gdir / "ort_outputs") if r["ort"] and r["ort"]["ok"] else \
              ("jax", gdir / "jax_outputs") if r["jax"] and r["jax"]["ok"] else None
        for who, key, d in (("kiln", "kiln", gdir / "kiln_outputs"), ("jax", "jax", gdir / "jax_outputs")):
            if not (r[key] and r[key]["ok"]) or ref is None or ref[0] == who:
                continue
            ok, text = compare(ref[1], d, output_names)
            r["check"].append((who, ref[0], ok, text))
            if ok:
                log(f"  {who} vs {ref[0]}: ok ({text})")
            else:
                banner = f"!!! MISMATCH: {who} vs {ref[0]} on {name}: {text}"
                log("\n" + "!" * len(banner) + "\n" + banner + "\n" + "!" * len(banner) + "\n")
                problems.append(banner.lstrip("! "))

        # Further rounds, each framework in turn, so that a change in the machine's load hits all of
        # them rather than whichever ran during it; each reports the median of its round medians.
        kiln_reps = r["kiln"]["reps"] if kiln and r["kiln"] and r["kiln"]["ok"] else 0
        for _ in range(1, args.rounds):
            if kiln_reps:
                more = kiln_run(kiln, gdir, inputs, cpus, env, args.timeout, repeat=kiln_reps,
                                warmup=warmup, threads=args.threads)
                add_round(r["kiln"], more)
            for key, mode, use in (("ort", "ort", use_ort), ("jax", "jax", use_jax)):
                if use and r[key] and r[key]["ok"]:
                    add_round(r[key], run_worker(mode, name, gdir, cpus, env, args))
        if args.rounds > 1:
            log("  over " + str(args.rounds) + " rounds: " + ", ".join(
                f"{who} {fmt_ms(r[key]['median_ms'])} ms" for who, key in (("kiln", "kiln"), ("onnxruntime", "ort"),
                                                                        ("jax", "jax")) if r[key] and r[key]["ok"]))

        if not args.no_memory and use_ort:
            r["mem_ort"] = run_worker("ort-mem", name, gdir, cpus, mem_env, args)
            m = r["mem_ort"]
            log(f"  onnxruntime peak intermediate memory: {fmt_bytes(m.get('steady_bytes') or m.get('first_run_bytes'))}"
                if m["ok"] else f"  onnxruntime memory: {m['error']}")
        r["naive_peak"] = graphs.naive_peak_bytes(gdir / "model.onnx")

    if kiln and kiln.changed_since_start():
        problems.append(f"{', '.join(kiln.changed_since_start())} in {kiln.source} changed during the run; "
                        "every result here used the copy taken at the start (bench/out/bin)")
    load_after = loadavg()
    elapsed = time.perf_counter() - started
    report = render(args, names, graphs, results, kiln, peer_state, problems, command, load_before, load_after,
                    elapsed, cpus)
    print(report["text"])
    OUT.mkdir(exist_ok=True)
    (OUT / "results.md").write_text(report["markdown"])
    (OUT / "results.json").write_text(json.dumps(results, indent=1, default=str))
    log(f"\nwrote {(OUT / 'results.md').relative_to(ROOT)} ({elapsed:.0f} s in all)")
    mismatched = any(not ok for r in results.values() for (_, _, ok, _) in r["check"])
    return 1 if mismatched else 0


def add_round(res, more):
    """Folds another timing round into `res`: the median of the round medians, the min of the mins."""
    if not more["ok"]:
        res.setdefault("failed_rounds", []).append(more["error"])
        return
    res.setdefault("round_medians", [res["median_ms"]]).append(more["median_ms"])
    res["median_ms"] = statistics.median(res["round_medians"])
    res["min_ms"] = min(res["min_ms"], more["min_ms"])
    res["reps"] += more["reps"]


def cell(res, short=True):
    if res is None:
        return "skipped"
    if not res["ok"]:
        return shorten(res["error"]) if short else res["error"]
    return fmt_ms(res["median_ms"])


def render(args, names, graphs, results, kiln, peer_state, problems, command, load_before, load_after, elapsed, cpus):
    header = ["graph", "kiln ms", "onnxruntime ms", "jax ms", "kiln vs ORT", "kiln vs XLA", "check"]
    rows = []
    for name in names:
        r = results[name]
        med = lambda k: r[k]["median_ms"] if r[k] and r[k]["ok"] else None
        kiln_cell = cell(r["kiln"]) if kiln else "skipped"
        checks = [f"{who}: {'ok' if ok else 'MISMATCH'}" for who, _, ok, _ in r["check"]]
        if r["kiln"] and r["kiln"]["ok"] and not any(c[0] == "kiln" for c in r["check"]):
            checks.append("kiln: unchecked")
        rows.append([name, kiln_cell, cell(r["ort"]) if r["ort"] else peer_cell(peer_state["onnxruntime"]),
                     cell(r["jax"]) if r["jax"] else peer_cell(peer_state["jax"]),
                     ratio(med("ort"), med("kiln")), ratio(med("jax"), med("kiln")), "; ".join(checks) or "-"])

    mem_header = ["graph", "kiln (kilnc --buffer-stats)", "ORT steady state", "ORT first run",
                  "XLA temp (planned)", "ONNX graph as written"]
    mem_rows = []
    for name in names:
        r = results[name]
        comp = r.get("kiln_compile") or {}
        if not kiln:
            kiln_mem = "skipped"
        elif comp.get("peak") is not None:
            kiln_mem = fmt_bytes(comp["peak"])
        elif not kiln.has_stats:
            kiln_mem = "n/a (no --buffer-stats)"
        else:
            kiln_mem = "n/a" if comp.get("ok") else "n/a (compile failed)"
        m = r.get("mem_ort")
        mem = lambda k: (fmt_bytes(m[k]) + ("" if m["method"] == "heap" else " (RSS)") if m and m["ok"]
                         else shorten(m["error"], 30) if m else "skipped")
        xla = fmt_bytes(r["jax"].get("xla_temp_bytes")) if r["jax"] and r["jax"]["ok"] else "skipped"
        mem_rows.append([name, kiln_mem, mem("steady_bytes"), mem("first_run_bytes"), xla, fmt_bytes(r["naive_peak"])])

    detail_header = ["graph", "framework", "median ms", "min ms", "max ms", "timed runs", "warm-up", "CPUs busy",
                     "compile s"]
    detail_rows = []
    for name in names:
        r = results[name]
        for label, key in (("kiln", "kiln"), ("onnxruntime", "ort"), ("jax", "jax")):
            res = r[key]
            if not res or not res["ok"]:
                continue
            comp = (r.get("kiln_compile") or {}).get("seconds") if key == "kiln" else res.get("compile_s")
            detail_rows.append([name, label, fmt_ms(res["median_ms"]), fmt_ms(res["min_ms"]), fmt_ms(res["max_ms"]),
                                res["reps"], res["warmup"],
                                f"{res['cpu_per_wall']:.2f}" if res.get("cpu_per_wall") is not None else "-",
                                f"{comp:.2f}" if comp is not None else "-"])

    for name in names:
        comp = results[name].get("kiln_compile") or {}
        if comp and not comp.get("ok"):
            refused = comp.get("refused")
            extra = ("; ops that fail when compiled alone: " + " | ".join(refused)) if refused else \
                    ("; every op compiles alone, so the failure is in how they combine" if refused == [] else "")
            problems.append(f"{name}: {comp['error']}{extra} (full log: bench/out/graphs/{name}/kilnc.log)")
        for k in ("ort", "jax", "mem_ort"):
            res = results[name].get(k)
            if res and not res["ok"] and not res.get("import_error"):
                problems.append(f"{name}: {k}: {res['error']}")
            elif res and res.get("import_error"):
                msg = f"{k}: {res['error']}; its column is skipped"
                if msg not in problems:
                    problems.append(msg)

    versions = {p: package_version(p) for p in ("numpy", "onnx", "onnxruntime", "jax", "jaxlib")}
    version_line = ", ".join(f"{p} {v or 'not installed'}" for p, v in versions.items()) + f", Python {platform.python_version()}"
    date = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")
    facts = [
        ("command", f"`{command}` (in {os.getcwd()})"),
        ("date", date),
        ("CPU", f"{cpu_model()}, {os.cpu_count()} logical CPUs"),
        ("threads", f"{args.threads} per framework, every process pinned to CPUs {sorted(cpus)}"),
        ("load average", f"{load_before} before, {load_after} after (a shared machine: other load makes medians noisy)"),
        ("Kiln", f"{git_state()}; {kiln.describe() if kiln else 'not selected'}"),
        ("packages", version_line),
        ("timing", f"warm-up {args.warmup} runs (at most ~2 s of them), then ~{args.budget:.1f} s of timed runs "
                   f"(at least {args.min_reps}), median; {args.rounds} rounds, the frameworks in turn, and the "
                   "median of the round medians; ratio = peer ms / kiln ms, >1 means Kiln is faster"),
        ("check", f"Kiln and JAX outputs vs ONNX Runtime's, |got - ref| <= {ATOL:g} + {RTOL:g}*|ref| per element"),
        ("full run", f"{elapsed:.0f} s"),
    ]
    mem_method = (
        "Peak intermediate memory: bytes a run needs beyond its inputs, outputs and weights. "
        "**Kiln**: the peak of the compiler's buffer plan, parsed from `kilnc --buffer-stats` "
        "(`peak intermediate memory: N bytes`). "
        "**ONNX Runtime** (measured): the session runs with its CPU arena off, so each tensor is its own "
        "allocation made and freed by ORT's allocation plan, all else default (memory patterns on); inputs and "
        "outputs are bound through IOBinding to buffers allocated beforehand, and weights are in place once the "
        "session exists. bench/memtrack.c, preloaded, counts every malloc-family call; the figure is the peak of "
        "live heap bytes during one run minus the live bytes before it: intermediates plus kernel scratch "
        "(im2col, GEMM packing). 'first run' allocates tensor by tensor while ORT records its memory pattern; "
        "'steady state' is the fourth run, which allocates that pattern as one block (what ORT's arena hands "
        "out on every run with default settings). Figures marked (RSS) come from the fallback when no C compiler "
        "is present: peak-RSS growth over the run, good to a few hundred KiB. "
        "**XLA temp**: the compiled executable's `memory_analysis().temp_size_in_bytes`, XLA's own plan. "
        "**ONNX graph as written**: every node output live from its node to its last consumer, nothing fused, "
        "nothing reused: a yardstick, not a framework.")

    notes = []
    if "transformer_layer" in names:
        mr = mem_rows[names.index("transformer_layer")]
        notes.append(f"transformer_layer peak intermediate memory: Kiln {mr[1]} vs ONNX Runtime {mr[2]} "
                     f"(steady state; {mr[3]} first run); XLA plans {mr[4]}")

    text = ["", text_table(header, rows), "", *notes, "",
            "Peak intermediate memory (method: bench/README.md, bench/out/results.md):", text_table(mem_header, mem_rows),
            "", "Details:", text_table(detail_header, detail_rows), ""]
    text += [f"{k}: {v.replace('`', '')}" for k, v in facts]
    if problems:
        text += ["", "Problems:"] + [f"  - {p}" for p in problems]
    md = ["# Kiln benchmark results", "", *[f"- **{k}**: {v}" for k, v in facts], "", "## Time per run (median, ms)", "",
          md_table(header, rows, ["---"] + ["--:"] * 5 + ["---"]),
          "", *[f"{n}." for n in notes], "", "## Peak intermediate memory", "", mem_method, "", md_table(mem_header, mem_rows),
          "", "## Details", "", md_table(detail_header, detail_rows)]
    if problems:
        md += ["", "## Problems", ""] + [f"- {p}" for p in problems]
    checks = [f"- {name}: {who} vs {ref}: {'ok' if ok else 'MISMATCH'} ({text})"
              for name in names for who, ref, ok, text in results[name]["check"]]
    if checks:
        md += ["", "## Correctness", ""] + checks
    md += ["", "## Graphs", ""] + [f"- **{n}**: {graphs.GRAPHS[n].summary}" for n in names]
    return {"text": "\n".join(text), "markdown": "\n".join(md) + "\n"}


def peer_cell(state):
    return "not installed" if state and "not installed" in state else "skipped"


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
