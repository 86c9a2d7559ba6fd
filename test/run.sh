#!/usr/bin/env bash
# Builds Kiln and runs every test: lit (dialect, importer, codegen, tools),
# GoogleTest (runtime), and the ONNX backend node tests through the whole
# compile-and-run path; then all of it again, compiler included, under AddressSanitizer and
# UBSan, and the fuzz targets. Works on a fresh Debian bookworm machine.
# The last line is "N passed, N failed".
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# ccache keys on paths relative to the checkout, so that another clone reuses the objects.
export CCACHE_BASEDIR=$root

./setup.sh
cmake -S . -B build -G Ninja -DKILN_BUILD_TESTS=ON >/dev/null
ninja -C build

log=build/ctest.log
status=0
ctest --test-dir build --output-on-failure -j "$(nproc)" 2>&1 | tee "$log" || status=$?
# ctest's summary: "97% tests passed, 1 tests failed out of 60".
summary=$(grep -E '^[0-9]+% tests passed' "$log" | tail -1 || true)
passed=0
failed=1
if [[ $summary =~ ([0-9]+)\ tests\ failed\ out\ of\ ([0-9]+) ]]; then
  failed=${BASH_REMATCH[1]}
  passed=$((BASH_REMATCH[2] - failed))
else
  echo "run.sh: ctest printed no summary"
  status=1
fi

# Every test once more with the compiler, the runtime and the tools built with AddressSanitizer
# and UndefinedBehaviorSanitizer (build-asan, about 30 minutes on two cores), then each fuzz
# target for KILN_FUZZ_SECONDS (default 20).
sanitize_log=build/sanitize.log
test/sanitize.sh "${KILN_FUZZ_SECONDS:-20}" 2>&1 | tee "$sanitize_log" || status=1
if [[ $(tail -1 "$sanitize_log") =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
  passed=$((passed + BASH_REMATCH[1]))
  failed=$((failed + BASH_REMATCH[2]))
else
  echo "run.sh: test/sanitize.sh printed no summary"
  failed=$((failed + 1))
  status=1
fi
((failed == 0)) || status=1
echo "$passed passed, $failed failed"
exit "$status"
