#!/usr/bin/env bash
# Builds the Kiln tools an example needs (its arguments: ninja targets), installing what the
# build needs first (./setup.sh). A fresh build leaves the tests out; an existing one keeps its
# setting (a developer's build with tests must not be switched off under them).
#
#   ./examples/build.sh kilnc kiln-run
set -euo pipefail
cd "$(dirname "$0")/.."
./setup.sh
tests=(-DKILN_BUILD_TESTS=OFF)
[[ -f build/CMakeCache.txt ]] && tests=()
cmake -S . -B build -G Ninja "${tests[@]}" >/dev/null
ninja -C build "$@"
