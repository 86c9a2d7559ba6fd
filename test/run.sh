#!/usr/bin/env bash
# Builds Kiln and runs every test: lit (dialect, importer, codegen, tools),
# GoogleTest (runtime), and the ONNX backend node tests through the whole
# compile-and-run path; then the runtime's and importer's tests and fuzz targets under
# AddressSanitizer and UBSan. Works on a fresh Debian bookworm machine.
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

# What reads untrusted files once more under AddressSanitizer and UndefinedBehaviorSanitizer: the
# runtime, the tools and the ONNX importer (a build of its own without the back ends), their tests,
# and the four fuzz targets for KILN_FUZZ_SECONDS each (default 20). test/sanitize.sh without
# --quick covers the whole compiler, in most of an hour on two cores.
sanitize_log=build/sanitize.log
KILN_KILNC=$root/build/bin/kilnc test/sanitize.sh --quick "${KILN_FUZZ_SECONDS:-20}" 2>&1 |
  tee "$sanitize_log" || status=1
if [[ $(tail -1 "$sanitize_log") =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
  passed=$((passed + BASH_REMATCH[1]))
  failed=$((failed + BASH_REMATCH[2]))
else
  echo "run.sh: test/sanitize.sh --quick printed no summary"
  failed=$((failed + 1))
  status=1
fi
((failed == 0)) || status=1
echo "$passed passed, $failed failed"
exit "$status"
