#!/usr/bin/env bash
# Builds Kiln, compiles the example image classifier (examples/cnn/model.onnx)
# to a native artifact and runs it on the example input. Works on a fresh
# Debian bookworm machine: ./setup.sh installs what the build needs.
#
#   ./examples/run.sh [MODEL.onnx [INPUT_NAME=FILE ...]]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

./examples/build.sh kilnc kiln-run

model=${1:-examples/cnn/model.onnx}
shift || true
inputs=("$@")
((${#inputs[@]})) || inputs=(image=examples/cnn/test_data_set_0/input_0.pb)

name=$(basename "$(dirname "$model")")
artifact=build/examples/$name.kiln
mkdir -p build/examples
echo "== kilnc $model -o $artifact"
build/bin/kilnc -v "$model" -o "$artifact"
echo "== kiln-run $artifact"
args=()
for input in "${inputs[@]}"; do args+=(--input "$input"); done
build/bin/kiln-run "$artifact" "${args[@]}" --output-dir "build/examples/$name.out" --print
echo "== outputs written to build/examples/$name.out/"
