#!/usr/bin/env bash
# The ONNX node tests with several nodes (the *_expanded ones), compiled with every node whose
# index is odd placed on /cpu:1 and the rest following its inputs, so most models are split over
# two CPU devices with transfers both ways; they must pass against ONNX's reference outputs as the
# unsplit models do, and enough of them must really be split for that to mean something.
# usage: split.sh KILNC KILN_CONFORMANCE KILN_RUN NODE_TESTS EXPECTED WORK_DIR
set -euo pipefail
kilnc=$1 conformance=$2 run=$3 tests=$4 expected=$5 work=$6
rm -rf "$work"
"$conformance" --kilnc "$kilnc" --kiln-run "$run" --data-dir "$tests" --expected "$expected" \
  --filter '_expanded$' --work-dir "$work" --keep \
  '--kilnc-arg=--place=.*#[0-9]*[13579]( .*)?=/cpu:1'
split=$(grep -l -a '^devices partitioned' "$work"/*.kiln | wc -l)
echo "split over cpu:0 and cpu:1: $split artifacts"
if [ "$split" -lt 20 ]; then
  echo "error: only $split artifacts were split over two devices (expected at least 20)" >&2
  exit 1
fi
