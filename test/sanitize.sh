#!/usr/bin/env bash
# Builds Kiln with AddressSanitizer and UndefinedBehaviorSanitizer (clang-22, in build-asan), runs
# every test under them, then each libFuzzer target for a while:
#   test/sanitize.sh [--quick] [FUZZ_SECONDS]
#     FUZZ_SECONDS  seconds per fuzz target (default 30; 0 skips fuzzing)
#     --quick       what reads untrusted files, without the compiler's back ends (in
#                   build-asan-quick; 8 minutes where the whole run takes 30): the runtime and
#                   the tools with their tests, the artifact loader and the .npy/TensorProto/
#                   manifest readers, and the ONNX importer with the dialects and graph passes
#                   it uses; then all five fuzz targets
# Without --quick (test/run.sh's way) it builds everything in build-asan and runs every test.
# A sanitizer report aborts the process it happens in, which fails its test. The last line is
# "N passed, N failed", each fuzz target counting as one test.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build=build-asan
compiler=ON
if [[ ${1:-} == --quick ]]; then
  build=build-asan-quick
  compiler=OFF
  shift
fi
fuzz_seconds=${1:-${KILN_FUZZ_SECONDS:-30}}

./setup.sh
# Objects cached by another checkout serve this one: paths relative to it, and the working
# directory (recorded by the line tables) left out of the key.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root} CCACHE_NOHASHDIR=1
cmake -S . -B "$build" -G Ninja -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
  -DKILN_SANITIZE=ON -DKILN_BUILD_TESTS=ON -DKILN_BUILD_COMPILER="$compiler" \
  -DKILN_BUILD_IMPORTER=ON >/dev/null
ninja -C "$build"
source test/sanitizer-options.sh

log=$build/ctest.log
status=0
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" 2>&1 | tee "$log" || status=$?
# ctest's summary: "97% tests passed, 1 tests failed out of 60".
summary=$(grep -E '^[0-9]+% tests passed' "$log" | tail -1 || true)
if [[ $summary =~ ([0-9]+)\ tests\ failed\ out\ of\ ([0-9]+) ]]; then
  failed=${BASH_REMATCH[1]}
  passed=$((BASH_REMATCH[2] - failed))
else
  echo "sanitize.sh: ctest printed no summary"
  passed=0 failed=1 status=1
fi

if ((fuzz_seconds > 0)); then
  fuzz_log=$build/fuzz.log
  KILN_FUZZ_BUILD=$build test/fuzz/run.sh "$fuzz_seconds" 2>&1 | tee "$fuzz_log" || status=1
  passed=$((passed + $(grep -cE '^fuzz-[a-z-]+: .*no crash$' "$fuzz_log" || true)))
  failed=$((failed + $(grep -cE '^fuzz-[a-z-]+: (CRASH|not built)' "$fuzz_log" || true)))
fi
echo "$passed passed, $failed failed"
exit "$status"
