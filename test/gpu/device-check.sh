#!/usr/bin/env bash
# The GPU checks that test/gpu/bundle.sh packed, run on a machine with an NVIDIA GPU from the
# root of a Kiln checkout (no compiler needed there): the real-GPU runtime tests, 100 train steps
# of each PyTorch reference model on the GPU, LeNet-5 trained by kiln-train on the GPU (state on
# the device, CUDA graphs), the same through NCCL with one rank (and every GPU of the machine
# when it has several), a checkpoint resumed on the GPU, and with a bench/ folder in the bundle
# the GPU train-step benchmark (BENCH_FRAMEWORKS=kiln,jax times only those) and an Nsight
# Compute profile of each graph's step (SKIP_PROFILE=1 leaves them out); a bench-base/ folder,
# prepared by another build, is timed too, Kiln only. Every step's output goes to LOGDIR; the
# summary to stdout.
#
#   bash BUNDLE/device-check.sh BUNDLE LOGDIR
set -uo pipefail
bundle=$(cd "${1:?usage: device-check.sh BUNDLE LOGDIR}" && pwd)
logs=${2:?usage: device-check.sh BUNDLE LOGDIR}
mkdir -p "$logs"
logs=$(cd "$logs" && pwd)
here=$(pwd)
# The test binaries name their inputs by paths of the tree they were built in.
if [[ $here != /work/main ]]; then
  mkdir -p /work
  ln -sfn "$here" /work/main
fi
[[ -e /work/main/build ]] || ln -s "$bundle/build" /work/main/build
export LD_LIBRARY_PATH=$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# NCCL from the NVIDIA wheel next to PyTorch, unless the machine has it on the loader's path.
if [[ -z ${KILN_LIBNCCL:-} ]]; then
  nccl=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null)
  [[ -n $nccl && -f $nccl ]] && export KILN_LIBNCCL=$nccl
fi
bin=$bundle/bin
source "$bundle/step.sh"

nvidia-smi -L
gpus=$(nvidia-smi -L | grep -c '^GPU')
echo "KILN_LIBNCCL=${KILN_LIBNCCL:-unset}"

TAIL=30 step runtime-tests "$bin/kiln-runtime-tests" --gtest_filter='RealGpu*:GpuArtifact*'
TAIL=20 step reference env KILN_TEST_GPU_ARTIFACTS="$bundle/artifacts" "$bin/kiln-training-tests" \
  --gtest_filter='*_gpu'
grep -h "worst loss error" "$logs/reference.log"

train=("$bin/kiln-train" --data "$bundle/data" --eval-every 200 --print-every 50 --progress off)
step lenet-gpu "${train[@]}" "$bundle/artifacts/lenet5-plain.kiln" --devices gpu:0 --epochs 2 \
  --metrics "$logs/lenet-gpu.csv" --checkpoint-dir "$logs/ckpt-gpu" --checkpoint-every 200
if [[ -f $bundle/artifacts/lenet5-dp.kiln ]]; then
  step lenet-nccl "${train[@]}" "$bundle/artifacts/lenet5-dp.kiln" --devices gpu:0 --epochs 2 \
    --metrics "$logs/lenet-nccl.csv"
  # One process per GPU as kiln-launch starts them (here one): "--devices gpu" is the GPU of the
  # local rank, and the ranks meet over TCP on loopback.
  step lenet-launch "$bin/kiln-launch" --nproc-per-node 1 --rdzv 127.0.0.1:29531 -- "${train[@]}" \
    "$bundle/artifacts/lenet5-dp.kiln" --devices gpu --epochs 2 --metrics "$logs/lenet-launch.csv"
else
  echo "== lenet-nccl, lenet-launch: skipped (no lenet5-dp.kiln in the bundle)"
fi
# Resume: 150 steps, then on to the end from the checkpoint at 150, against the straight run.
step lenet-resume-a "${train[@]}" "$bundle/artifacts/lenet5-plain.kiln" --devices gpu:0 --steps 150 \
  --checkpoint-dir "$logs/ckpt-resume" --checkpoint-every 150
step lenet-resume-b "${train[@]}" "$bundle/artifacts/lenet5-plain.kiln" --devices gpu:0 --epochs 2 \
  --checkpoint-dir "$logs/ckpt-resume" --resume --metrics "$logs/lenet-resumed.csv"
if ((gpus > 1)); then
  list=$(seq -s, -f 'gpu:%g' 0 $((gpus - 1)))
  step lenet-nccl-all "${train[@]}" "$bundle/artifacts/lenet5-dp.kiln" --devices "$list" --epochs 2 \
    --metrics "$logs/lenet-nccl-all.csv"
else
  echo "== lenet-nccl-all: skipped (this machine has $gpus GPU; the several-GPU run needs two or more)"
fi
step compare python3 - "$logs" "$bundle" <<'PY'
import csv, sys
logs, bundle = sys.argv[1:3]
def losses(name):
    with open(f"{logs}/{name}.csv") as f:
        return {int(r["step"]): float(r["loss"]) for r in csv.DictReader(f)}
gpu, resumed = losses("lenet-gpu"), losses("lenet-resumed")
worst = 0.0
try:
    nccl = losses("lenet-nccl")
    worst = max(abs(gpu[s] - nccl[s]) / max(abs(gpu[s]), 1e-12) for s in gpu)
    print(f"GPU vs NCCL (one rank): {len(gpu)} steps, worst relative loss difference {worst:.3g}")
except FileNotFoundError:
    print("no NCCL run")
try:
    launched = losses("lenet-launch")
    print(f"kiln-launch (one process, NCCL over the TCP rendezvous) vs GPU: bitwise equal: "
          f"{all(launched.get(s) == gpu[s] for s in gpu)}")
except FileNotFoundError:
    print("kiln-launch wrote no metrics")
tail = [s for s in resumed if s in gpu]
same = all(resumed[s] == gpu[s] for s in tail)
print(f"resumed at 150 vs straight: steps {min(tail)}-{max(tail)}, bitwise equal: {same}")
try:
    with open(f"{bundle}/lenet-cpu.csv") as f:
        cpu = {int(r["step"]): float(r["loss"]) for r in csv.DictReader(f)}
    common = sorted(set(cpu) & set(gpu))
    first = max(abs(gpu[s] - cpu[s]) / abs(cpu[s]) for s in common[:20])
    print(f"GPU vs CPU: first 20 steps worst relative loss difference {first:.3g}; "
          f"final loss GPU {gpu[common[-1]]:.4f}, CPU {cpu[common[-1]]:.4f}")
except FileNotFoundError:
    print("no CPU metrics in the bundle")
sys.exit(0 if worst < 1e-5 and same else 1)
PY
# Where each kernel of a train step spends its time (Nsight Compute, where installed): LeNet-5,
# and with a bench/ folder each benchmark graph too.
profile() {
  local name=$1 artifact=$2
  shift 2
  TAIL=0 step "profile-$name" ncu --csv --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size \
    "$bin/kiln-run" "$artifact" --device gpu:0 --resident-state --no-cuda-graph "$@" --repeat 1
  python3 - "$logs/profile-$name.log" "$name" <<'PY'
import csv, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
if not rows:
    sys.exit(f"profile {sys.argv[2]}: no kernels measured")
head, rows = rows[0], rows[1:]
col = {k: head.index(k) for k in ("ID", "Kernel Name", "Metric Name", "Metric Value", "Metric Unit")}
scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}
kernels = {}
for r in rows:
    k = kernels.setdefault(r[col["ID"]], {"name": r[col["Kernel Name"]]})
    value = r[col["Metric Value"]].replace(",", "")
    if r[col["Metric Name"]] == "gpu__time_duration.sum":
        k["us"] = float(value) * scale.get(r[col["Metric Unit"]], 1.0)
    else:
        k[r[col["Metric Name"]].split("__")[1]] = value
times = sorted(kernels.values(), key=lambda k: -k.get("us", 0))
total = sum(k.get("us", 0) for k in times)
print(f"profile {sys.argv[2]}: {len(times)} kernels, {total:.1f} us in all; the longest:")
for k in times[:12]:
    print(f"  {k.get('us', 0):8.1f} us  grid {k.get('grid_size', '?'):>6} x {k.get('block_size', '?'):>4}  {k['name'][:80]}")
PY
}
if command -v ncu >/dev/null && [[ -z ${SKIP_PROFILE:-} ]]; then
  profile lenet5 "$bundle/artifacts/lenet5-plain.kiln" \
    --input image="$bundle/data/x.npy" --input labels="$bundle/data/labels.npy"
  for graph in "$bundle"/bench/*/; do
    [[ -f $graph/step.kiln ]] || continue
    inputs=()
    for x in "$graph"/inputs/*.npy; do inputs+=(--input "$(basename "$x" .npy)=$x"); done
    profile "$(basename "$graph")" "$graph/step.kiln" "${inputs[@]}" --input labels="$graph/labels.npy"
  done
fi
if [[ -d $bundle/bench ]]; then
  TAIL=40 step bench timeout "${BENCH_SECONDS:-240}" python3 "$bundle/bench/train_gpu.py" run "$bundle/bench" \
    --frameworks "${BENCH_FRAMEWORKS:-kiln,torch,torch-compile,jax}" --results "$logs/bench"
fi
# Kiln's train steps from another build (`train_gpu.py prepare` there, copied to bench-base/),
# timed in the same session to compare the two builds.
if [[ -d $bundle/bench-base ]]; then
  graphs=$(for g in "$bundle"/bench-base/*/step.kiln; do basename "$(dirname "$g")"; done | paste -sd,)
  TAIL=12 step bench-base timeout "${BENCH_SECONDS:-240}" python3 "$bundle/bench-base/train_gpu.py" run \
    "$bundle/bench-base" --graphs "$graphs" --frameworks kiln --results "$logs/bench-base"
fi
echo "== $failures step(s) failed"
exit $((failures > 0))
