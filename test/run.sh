#!/usr/bin/env bash
# Builds Kiln and runs every test: lit (dialect, importer, codegen, tools),
# GoogleTest (runtime), and the ONNX backend node tests through the whole
# compile-and-run path. Works on a fresh Debian bookworm machine.
# The last line is "N passed, N failed".
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

./setup.sh
cmake -S . -B build -G Ninja -DKILN_BUILD_TESTS=ON >/dev/null
ninja -C build

log=build/ctest.log
status=0
ctest --test-dir build --output-on-failure -j "$(nproc)" 2>&1 | tee "$log" || status=$?
# ctest's summary: "97% tests passed, 1 tests failed out of 60".
summary=$(grep -E '^[0-9]+% tests passed' "$log" | tail -1)
if [[ $summary =~ ([0-9]+)\ tests\ failed\ out\ of\ ([0-9]+) ]]; then
  failed=${BASH_REMATCH[1]}
  total=${BASH_REMATCH[2]}
  echo "$((total - failed)) passed, $failed failed"
else
  echo "0 passed, 1 failed (ctest printed no summary)"
  status=1
fi
exit "$status"
