#!/usr/bin/env bash
# Packs the ONNX conformance checks for a machine that has an NVIDIA GPU but not the compiler:
# the node tests of test/conformance/expected-pass.txt compiled for cuda:sm_90, the exported
# models of test/exported compiled the same way, the multi-node (_expanded) tests split over
# cpu:0 and gpu:0, the node tests' data those need, kiln-run and kiln-conformance.
# test/gpu/conformance-check.sh runs them there, from a checkout of the same commit.
#
#   test/gpu/conformance-bundle.sh OUT        (after a build in build/)
#
# The CPU half of the split artifacts is compiled for x86-64-v3 (AVX2), not this machine's CPU,
# so that it runs on whichever x86-64 processor the GPU machine has.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:?usage: test/gpu/conformance-bundle.sh OUT}
build=$root/build
data=${KILN_ONNX_NODE_TESTS:-/usr/share/libonnx-testdata/data/node}
expected=$root/test/conformance/expected-pass.txt
conformance=(
  "$build/bin/kiln-conformance" --kilnc "$build/bin/kilnc" --compile-only --keep
  --jobs "$(nproc)"
)

rm -rf "$out"
mkdir -p "$out/bin" "$out/data/node"
cp "$build/bin/kiln-run" "$build/bin/kiln-conformance" "$out/bin/"
strip "$out"/bin/* 2>/dev/null || true

"${conformance[@]}" --kilnc-arg=--target=cuda:sm_90 --data-dir "$data" --expected "$expected" \
  --work-dir "$out/node" | tail -n 1
"${conformance[@]}" --kilnc-arg=--target=cuda:sm_90 --data-dir "$root/test/exported" \
  --expected "$root/test/exported/expected-pass.txt" --work-dir "$out/exported" | tail -n 1
"${conformance[@]}" --filter '_expanded$' --kilnc-arg=--target=cpu,cuda:sm_90 \
  '--kilnc-arg=--place=.*#[0-9]*[13579]( .*)?=/gpu:0' --kilnc-arg=--cpu=x86-64-v3 \
  --data-dir "$data" --expected "$expected" --work-dir "$out/split" | tail -n 1

# Only the artifacts travel, and only the data of the tests that have one.
find "$out/node" "$out/exported" "$out/split" -mindepth 1 ! -name '*.kiln' -exec rm -rf {} +
for artifact in "$out"/node/*.kiln "$out"/split/*.kiln; do
  test=$(basename "$artifact" .kiln)
  [[ -d $out/data/node/$test ]] || cp -r "$data/$test" "$out/data/node/"
done
cp "$root/test/gpu/conformance-check.sh" "$root/test/gpu/step.sh" "$out/"
du -sh "$out"
