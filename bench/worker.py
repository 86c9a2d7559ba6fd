# One framework's measurement of one graph, in a process of its own (run.py starts it).
#
#   worker.py ort|jax|ort-mem --graph NAME --dir GRAPH_DIR --result FILE [timing options]
#
# Writes a JSON object to --result: {"ok": true, ...} or {"ok": false, "error": "..."}; the
# outputs of one run go to --save-outputs DIR as <output name>.npy for run.py to compare.
#
# Thread limits. ONNX Runtime: intra_op_num_threads=T, inter_op_num_threads=1. Kiln: kiln-run
# --threads T (OMP_NUM_THREADS). JAX/XLA: only the CPU affinity mask works. In jaxlib 0.10.2
# the CPU client sizes its intra-op Eigen pool (threads named tf_XLAEigen) with
# tsl::port::MaxParallelism(), i.e. the number of CPUs in sched_getaffinity(). Checked here:
# "intra_op_parallelism_threads=T" in XLA_FLAGS is not an XLA flag (without "--" it is silently
# ignored, with "--" XLA aborts with "Unknown flag in XLA_FLAGS"), and
# --xla_cpu_multi_thread_eigen=false left two pool threads busy on a 2-CPU machine; pinned to
# one CPU, no pool thread does any work. So every process is pinned to the same T CPUs (run.py
# does it before exec, and pin() below again for a worker started by hand), before jax loads;
# run_jax reports how many pool threads did work, to show the limit held.

import argparse
import json
import os
import statistics
import sys
import time
import traceback
from pathlib import Path


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["ort", "jax", "ort-mem"])
    p.add_argument("--graph", required=True)
    p.add_argument("--dir", required=True, type=Path)
    p.add_argument("--result", required=True, type=Path)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--cpus", default="", help="comma-separated CPU ids to pin to")
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--warmup-budget", type=float, default=2.0)
    p.add_argument("--budget", type=float, default=1.5, help="seconds of timed runs")
    p.add_argument("--min-reps", type=int, default=10)
    p.add_argument("--max-reps", type=int, default=5000)
    p.add_argument("--reps", type=int, default=0, help="fixed repetition count (overrides --budget)")
    p.add_argument("--save-outputs", type=Path)
    return p.parse_args()


def pin(cpus):
    if cpus:
        os.sched_setaffinity(0, {int(c) for c in cpus.split(",")})


def plan_counts(args, first_runs):
    """Warm-up and timed repetition counts from the first (untimed-for-results) runs' times.

    Every framework gets the same warm-up count and the same time budget; a framework whose runs
    are slow gets fewer runs (never fewer than --min-reps), which keeps the whole benchmark
    bounded when one framework is 100x slower than another. The median does not depend on how
    many runs it is taken over, only on having enough of them.
    """
    est = statistics.median(first_runs)
    warmup = max(1, min(args.warmup, int(args.warmup_budget / max(est, 1e-9)) + 1))
    if args.reps:
        reps = args.reps
    else:
        reps = max(args.min_reps, min(args.max_reps, int(args.budget / max(est, 1e-9)) + 1))
    return warmup, reps


def measure(run_once, args):
    # Two probe runs (the first pays one-time costs such as page faults and thread start-up)
    # size the warm-up and the timed loop; they count towards the warm-up.
    probes = []
    for _ in range(2):
        t0 = time.perf_counter()
        run_once()
        probes.append(time.perf_counter() - t0)
    warmup, reps = plan_counts(args, probes[1:])
    for _ in range(max(0, warmup - len(probes))):
        run_once()
    times = []
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for _ in range(reps):
        t0 = time.perf_counter()
        run_once()
        times.append(time.perf_counter() - t0)
    cpu_per_wall = (time.process_time() - cpu0) / (time.perf_counter() - wall0)
    times.sort()
    return {
        "median_ms": statistics.median(times) * 1e3,
        "min_ms": times[0] * 1e3,
        "max_ms": times[-1] * 1e3,
        "reps": reps,
        "warmup": max(warmup, len(probes)),
        "cpu_per_wall": cpu_per_wall,
    }


def load_inputs(graph_dir, names):
    import numpy as np
    return {n: np.load(graph_dir / "inputs" / f"{n}.npy") for n in names}


def save_outputs(directory, outputs):
    import numpy as np
    if directory is None:
        return
    directory.mkdir(parents=True, exist_ok=True)
    for name, array in outputs.items():
        np.save(directory / f"{name}.npy", np.asarray(array))


# ---- ONNX Runtime -----------------------------------------------------------------------------

def ort_session(args, model_path, arena=True):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL  # ORT's default
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    so.enable_cpu_mem_arena = arena
    so.log_severity_level = 3
    return ort.InferenceSession(str(model_path), so, providers=["CPUExecutionProvider"])


def ort_bound(sess, inputs):
    """An IOBinding with the inputs and preallocated, already-touched output buffers.

    Like kiln-run, which allocates its outputs once and runs into them, so neither side's timing
    includes allocating and copying the outputs.
    """
    import numpy as np
    binding = sess.io_binding()
    for name, array in inputs.items():
        binding.bind_cpu_input(name, array)
    outputs = {}
    for o in sess.get_outputs():
        shape = [int(d) for d in o.shape]
        dtype = {"tensor(float)": np.float32, "tensor(double)": np.float64}[o.type]
        buf = np.full(shape, np.nan, dtype)  # np.full touches every page (np.empty would not)
        binding.bind_output(o.name, "cpu", 0, dtype, shape, buf.ctypes.data)
        outputs[o.name] = buf
    return binding, outputs


def run_ort(args):
    import onnxruntime as ort
    model_path = args.dir / "model.onnx"
    sess = ort_session(args, model_path)
    inputs = load_inputs(args.dir, [i.name for i in sess.get_inputs()])
    binding, outputs = ort_bound(sess, inputs)

    def run_once():
        sess.run_with_iobinding(binding)

    result = measure(run_once, args)
    # A last run from NaN-filled buffers, so a kernel that skipped an output cannot pass.
    for buf in outputs.values():
        buf.fill(float("nan"))
    run_once()
    save_outputs(args.save_outputs, outputs)
    result["version"] = ort.__version__
    result["providers"] = sess.get_providers()
    return result


def rss_kib():
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key = line.split(":")[0]
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(line.split()[1])
    return out


def run_ort_mem(args):
    """Peak intermediate memory of ONNX Runtime runs: heap bytes a run allocates above its start.

    The session runs with its CPU memory arena off (every tensor is then its own malloc, freed
    after its last use, following ORT's allocation plan) and everything else default, memory
    patterns included. Inputs and outputs are bound through IOBinding to buffers allocated
    beforehand, weights and pre-packed weights are allocated when the session is created, so
    what a run allocates is intermediates plus kernel scratch (im2col, GEMM packing buffers).

    With bench/out/memtrack.so preloaded (run.py builds it from memtrack.c), every malloc-family
    call is counted exactly: peak live heap bytes during a run minus live bytes before it. The
    first run allocates tensor by tensor while ORT records its memory pattern; later runs
    allocate the recorded pattern as one block, which is ORT's steady state.

    Without the shim (no C compiler), the fallback is the kernel's peak-RSS counter, reset
    through /proc/self/clear_refs before the run, on a session whose code pages a twin session
    has already faulted in; the kernel keeps RSS in per-CPU batches, so that figure is only good
    to a few hundred KiB.
    """
    import ctypes
    import gc
    model_path = args.dir / "model.onnx"
    shim = os.environ.get("KILN_BENCH_MEMTRACK")
    lib = None
    if shim and shim in os.environ.get("LD_PRELOAD", ""):
        lib = ctypes.CDLL(shim)
        lib.memtrack_live.restype = ctypes.c_long
        lib.memtrack_peak.restype = ctypes.c_long

    if lib is None:
        warm = ort_session(args, model_path, arena=False)
        inputs = load_inputs(args.dir, [i.name for i in warm.get_inputs()])
        wb, _ = ort_bound(warm, inputs)
        warm.run_with_iobinding(wb)
    sess = ort_session(args, model_path, arena=False)
    inputs = load_inputs(args.dir, [i.name for i in sess.get_inputs()])
    binding, outputs = ort_bound(sess, inputs)
    gc.collect()
    gc.disable()
    runs = []
    for _ in range(4 if lib else 1):
        if lib:
            lib.memtrack_reset_peak()
            before = lib.memtrack_live()
            sess.run_with_iobinding(binding)
            runs.append(lib.memtrack_peak() - before)
        else:
            before = rss_kib()["VmRSS"]
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            sess.run_with_iobinding(binding)
            runs.append((rss_kib()["VmHWM"] - before) * 1024)
    gc.enable()
    return {
        "method": "heap" if lib else "rss",
        "first_run_bytes": runs[0],
        "steady_bytes": runs[-1] if lib else None,
        "per_run_bytes": runs,
        "output_bytes": sum(int(b.nbytes) for b in outputs.values()),
    }


# ---- JAX / XLA --------------------------------------------------------------------------------

def run_jax(args):
    import numpy as np
    import jax
    import jax.numpy as jnp

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import graphs
    import onnx

    model = onnx.load(str(args.dir / "model.onnx"), load_external_data=False)
    input_names = [i.name for i in model.graph.input]
    output_names = [o.name for o in model.graph.output]
    del model

    device = jax.devices("cpu")[0]
    # Weights are closed over, so XLA sees them as compile-time constants, as Kiln (initializers
    # become kiln.constant) and ONNX Runtime (constant folding, weight pre-packing) do.
    weights = {k: jax.device_put(jnp.asarray(v), device) for k, v in graphs.load_weights(args.dir / "model.onnx").items()}
    inputs = load_inputs(args.dir, input_names)
    args_dev = [jax.device_put(inputs[n], device) for n in input_names]
    fn = graphs.GRAPHS[args.graph].jax_fn(weights)

    t0 = time.perf_counter()
    compiled = jax.jit(fn).lower(*args_dev).compile()
    compile_s = time.perf_counter() - t0
    temp_bytes = None
    try:
        temp_bytes = int(compiled.memory_analysis().temp_size_in_bytes)
    except Exception:  # noqa: BLE001 - not every backend/version reports it
        pass

    def run_once():
        jax.block_until_ready(compiled(*args_dev))

    result = measure(run_once, args)
    outs = compiled(*args_dev)
    save_outputs(args.save_outputs, {n: np.asarray(o) for n, o in zip(output_names, outs)})
    result.update(version=jax.__version__, compile_s=compile_s, xla_temp_bytes=temp_bytes,
                  busy_threads=_xla_threads())
    return result


def _xla_threads():
    # The number of XLA intra-op pool threads that did work, to confirm the affinity limit held.
    tck = os.sysconf("SC_CLK_TCK")
    busy = 0
    for tid in os.listdir("/proc/self/task"):
        try:
            stat = open(f"/proc/self/task/{tid}/stat").read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        if "XLAEigen" in name and (int(fields[11]) + int(fields[12])) / tck >= 0.02:
            busy += 1
    return busy


def main():
    args = parse_args()
    pin(args.cpus)
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    try:
        result = {"ort": run_ort, "jax": run_jax, "ort-mem": run_ort_mem}[args.mode](args)
        result["ok"] = True
    except ImportError as e:
        result = {"ok": False, "import_error": True, "error": f"import failed: {e}"}
    except Exception as e:  # noqa: BLE001 - reported to run.py, which prints it in the table
        traceback.print_exc()
        result = {"ok": False, "error": f"{type(e).__name__}: {e}".strip()}
    result["affinity"] = sorted(os.sched_getaffinity(0))
    args.result.write_text(json.dumps(result))


if __name__ == "__main__":
    main()
