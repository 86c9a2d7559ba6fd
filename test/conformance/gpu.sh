#!/usr/bin/env bash
# The ONNX node tests for NVIDIA GPUs, as ctest runs them:
#   gpu.sh compile KILNC KILN_CONFORMANCE DATA EXPECTED WORK [ARGS...]
#     every expected test compiled for cuda:sm_90, ptxas accepting all of it (no GPU needed);
#   gpu.sh run KILNC KILN_CONFORMANCE KILN_RUN DATA EXPECTED WORK [ARGS...]
#     the same tests run on gpu:0 and checked against ONNX's outputs;
#     ARGS go to kiln-conformance as they are (e.g. --atol 1e-5);
#   gpu.sh split-compile KILNC KILN_CONFORMANCE DATA EXPECTED WORK
#   gpu.sh split-run KILNC KILN_CONFORMANCE KILN_RUN DATA EXPECTED WORK
#     the multi-node (_expanded) tests split over cpu:0 and gpu:0 (every odd-numbered node on the
#     GPU), compiled with the runtime's load checks, or run; at least 20 must really be split.
# Exits 77 (ctest: skipped) with the reason when there is no CUDA toolkit, or no GPU to run on.
set -euo pipefail
mode=$1
shift

toolkit=""
for root in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda; do
  if [[ -n $root && -x $root/bin/ptxas && -f $root/nvvm/libdevice/libdevice.10.bc ]]; then
    toolkit=$root
    break
  fi
done
if [[ -z $toolkit ]]; then
  echo "SKIP: no CUDA toolkit (ptxas and libdevice) under \$CUDA_HOME, \$CUDA_PATH or /usr/local/cuda"
  exit 77
fi

# The split runs: the placement rule, and the check that enough artifacts were split.
split_args=(--filter '_expanded$' --keep --kilnc-arg=--target=cpu,cuda:sm_90
            '--kilnc-arg=--place=.*#[0-9]*[13579]( .*)?=/gpu:0')
check_split() {
  local split
  split=$(grep -l -a '^partition gpu:0' "$1"/*.kiln | wc -l)
  echo "split over cpu:0 and gpu:0: $split artifacts"
  if [[ $split -lt 20 ]]; then
    echo "error: only $split artifacts were split over cpu:0 and gpu:0 (expected at least 20)" >&2
    exit 1
  fi
}

case $mode in
split-compile)
  kilnc=$1 conformance=$2 data=$3 expected=$4 work=$5
  rm -rf "$work"
  "$conformance" --kilnc "$kilnc" --compile-only "${split_args[@]}" \
    --data-dir "$data" --expected "$expected" --work-dir "$work"
  check_split "$work"
  ;;
split-run)
  kilnc=$1 conformance=$2 run=$3 data=$4 expected=$5 work=$6
  if ! { command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; } && [[ ! -e /dev/nvidia0 ]]; then
    echo "SKIP: no NVIDIA GPU on this machine (nvidia-smi -L lists none, no /dev/nvidia0)"
    exit 77
  fi
  rm -rf "$work"
  "$conformance" --kilnc "$kilnc" --kiln-run "$run" "${split_args[@]}" \
    --data-dir "$data" --expected "$expected" --work-dir "$work"
  check_split "$work"
  ;;
compile)
  kilnc=$1 conformance=$2 data=$3 expected=$4 work=$5
  shift 5
  rm -rf "$work"
  exec "$conformance" --kilnc "$kilnc" --compile-only --kilnc-arg=--target=cuda:sm_90 \
    --data-dir "$data" --expected "$expected" --work-dir "$work" "$@"
  ;;
run)
  kilnc=$1 conformance=$2 run=$3 data=$4 expected=$5 work=$6
  shift 6
  if ! { command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; } && [[ ! -e /dev/nvidia0 ]]; then
    echo "SKIP: no NVIDIA GPU on this machine (nvidia-smi -L lists none, no /dev/nvidia0)"
    exit 77
  fi
  rm -rf "$work"
  exec "$conformance" --kilnc "$kilnc" --kiln-run "$run" --kilnc-arg=--target=cuda:sm_90 \
    --kiln-run-arg=--device=gpu:0 --data-dir "$data" --expected "$expected" --work-dir "$work" "$@"
  ;;
*)
  echo "usage: gpu.sh compile|run ..." >&2
  exit 2
  ;;
esac
