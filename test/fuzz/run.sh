#!/usr/bin/env bash
# Runs Kiln's libFuzzer targets: test/fuzz/run.sh SECONDS [TARGET...]
#
# Each target (all five by default) runs for SECONDS, starting from seeds gathered here and the
# inputs saved in test/fuzz/regressions/TARGET. It builds nothing: the binaries come from
# $KILN_FUZZ_BUILD/bin (default build-asan, which test/sanitize.sh builds). Seeds, corpora, logs
# and crash reproducers go under $KILN_FUZZ_WORK (default $KILN_FUZZ_BUILD/fuzz); reproducers
# stay in results/TARGET until the next run. With KILN_FUZZ_RUNS=N a target also stops after N
# executions beyond its seeds (ctest's brief runs). The manifest target's seeds include the
# manifest of an artifact that $KILN_KILNC (default: kilnc of the same build) compiles. Exits
# non-zero if any target crashed; the last lines are one summary per target.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
seconds=${1:?usage: test/fuzz/run.sh SECONDS [TARGET...]}
shift
targets=("$@")
((${#targets[@]})) || targets=(fuzz-onnx-import fuzz-npy fuzz-tensorproto fuzz-manifest fuzz-artifact)
build=$(cd "${KILN_FUZZ_BUILD:-$root/build-asan}" && pwd)
work=${KILN_FUZZ_WORK:-$build/fuzz}
node_tests=/usr/share/libonnx-testdata/data/node
source "$root/test/sanitizer-options.sh"

# The longest input each target reads; its seeds over that are left out.
max_len() {
  case $1 in
    fuzz-onnx-import) echo 65536 ;;
    fuzz-tensorproto) echo 16384 ;;
    fuzz-artifact) echo 65536 ;;
    *) echo 4096 ;;
  esac
}

# Copies the files named on stdin (NUL-separated) into DIR, named after their paths.
copy_seeds() {
  local dir=$1 max=$2 file name
  while IFS= read -r -d '' file; do
    (($(stat -c %s "$file") <= max)) || continue
    name=${file#"$node_tests"/}
    name=${name#"$root"/}
    cp "$file" "$dir/${name//\//_}"
  done
}

seed_onnx() {
  { find "$node_tests" -name model.onnx -print0 2>/dev/null
    find "$root/examples" "$root/test" \( -name '*.onnx' -o -name '*.onnxtxt' \) -print0; } |
    copy_seeds "$1" "$2"
}

seed_tensorproto() {
  { find "$node_tests" -path '*/test_data_set_0/*.pb' -print0 2>/dev/null
    find "$root/examples" "$root/test" -path '*/test_data_set_*/*.pb' -print0; } |
    copy_seeds "$1" "$2"
}

# NumPy's own files for every dtype Kiln reads (and a few it refuses), plus those in test/.
seed_npy() {
  find "$root/test" -name '*.npy' -print0 | copy_seeds "$1" "$2"
  python3 - "$1" <<'PY' || echo "run.sh: no NumPy; the .npy seeds are test/'s only" >&2
import os, sys
import numpy as np
out = sys.argv[1]
arrays = {"scalar_f64": np.array(3.5), "empty_i64": np.zeros((0,), "<i8"),
          "zero_dim_i32": np.zeros((2, 0, 3), "<i4"), "bool": np.array([True, False, True]),
          "fortran_f32": np.asfortranarray(np.arange(6, dtype="<f4").reshape(2, 3)),
          "big_endian_f32": np.arange(3, dtype=">f4"), "complex": np.ones(2, "<c8")}
for code in ["f2", "f4", "f8", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8"]:
    arrays[code] = (np.arange(12) - 4).astype("<" + code).reshape(3, 4)
for name, array in arrays.items():
    np.save(os.path.join(out, name + ".npy"), array)
for version in [(2, 0), (3, 0)]:
    with open(os.path.join(out, "version%d.npy" % version[0]), "wb") as f:
        np.lib.format.write_array(f, arrays["f4"], version=version)
PY
}

# The manifest kilnc writes into a CPU artifact, and the hand-written ones in seeds/manifest
# (GPU, partitioned and train-step records, which a CPU-only compile does not write).
seed_manifest() {
  cp "$root"/test/fuzz/seeds/manifest/* "$1"/
  local artifact=$work/seeds/cnn.kiln
  if "${KILN_KILNC:-$build/bin/kilnc}" "$root/examples/cnn/model.onnx" -o "$artifact" \
    >"$work/seeds/kilnc.log" 2>&1; then
    python3 - "$artifact" "$1/cnn.txt" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
start = data.index(b"kiln-artifact ")
open(sys.argv[2], "wb").write(data[start:data.index(b"\0", start)])
PY
  else
    echo "run.sh: kilnc could not compile examples/cnn (see $work/seeds/kilnc.log);" \
         "the manifest seeds are seeds/manifest's only" >&2
  fi
}

# Whole artifacts that kilnc compiles: a one-node model and examples/cnn (a few KB and 30 KB).
seed_artifact() {
  local kilnc=${KILN_KILNC:-$build/bin/kilnc} model
  for model in "$root/test/tools/Inputs/affine.onnxtxt" "$root/examples/cnn/model.onnx"; do
    local name
    name=$(basename "$(dirname "$model")")-$(basename "${model%.*}")
    "$kilnc" "$model" -o "$1/$name.kiln" >>"$work/seeds/kilnc.log" 2>&1 ||
      echo "run.sh: kilnc could not compile $model (see $work/seeds/kilnc.log)" >&2
  done
}

summary=()
status=0
for target in "${targets[@]}"; do
  binary=$build/bin/$target
  if [[ ! -x $binary ]]; then
    summary+=("$target: not built ($binary; configure with -DKILN_BUILD_FUZZERS=ON)")
    status=1
    continue
  fi
  seeds=$work/seeds/$target corpus=$work/corpus/$target results=$work/results/$target
  log=$work/$target.log
  rm -rf "$seeds" "$corpus" "$results"
  mkdir -p "$seeds" "$corpus" "$results"
  len=$(max_len "$target")
  case $target in
    fuzz-onnx-import) seed_onnx "$seeds" "$len" ;;
    fuzz-tensorproto) seed_tensorproto "$seeds" "$len" ;;
    fuzz-npy) seed_npy "$seeds" "$len" ;;
    fuzz-manifest) seed_manifest "$seeds" "$len" ;;
    fuzz-artifact) seed_artifact "$seeds" ;;
  esac
  dirs=("$corpus" "$seeds")
  [[ -d $root/test/fuzz/regressions/$target ]] && dirs+=("$root/test/fuzz/regressions/$target")
  count=$(find "${dirs[@]}" -type f | wc -l)
  runs=-1
  [[ -n ${KILN_FUZZ_RUNS:-} ]] && runs=$((count + KILN_FUZZ_RUNS))
  echo "run.sh: $target for ${seconds}s from $count seeds (log: $log)"
  rc=0
  "$binary" -max_total_time="$seconds" -runs="$runs" -timeout=10 -rss_limit_mb=4096 \
    -max_len="$len" -print_final_stats=1 -artifact_prefix="$results/" "${dirs[@]}" \
    >"$log" 2>&1 || rc=$?
  execs=$(grep -oP 'stat::number_of_executed_units:\s+\K[0-9]+' "$log" | tail -1 || true)
  rate=$(grep -oP 'stat::average_exec_per_sec:\s+\K[0-9]+' "$log" | tail -1 || true)
  found=$(find "$results" -type f | head -1)
  if ((rc != 0)) || [[ -n $found ]]; then
    status=1
    grep -E '^(==[0-9]+==ERROR|SUMMARY:|.*runtime error:)' "$log" | head -5 >&2 || true
    summary+=("$target: CRASH (exit $rc) after ${execs:-?} executions; reproducer: ${found:-none}; log: $log")
  else
    summary+=("$target: ${execs:-?} executions, ${rate:-?}/s, no crash")
  fi
done
printf '%s\n' "${summary[@]}"
exit "$status"
