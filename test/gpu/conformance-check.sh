#!/usr/bin/env bash
# Runs what test/gpu/conformance-bundle.sh packed, on a machine with an NVIDIA GPU, from the root
# of a checkout of the same commit (for the expected lists and test/exported's data): every
# expected node test on gpu:0, the exported models on gpu:0 (ONNX Runtime's outputs, atol 1e-5),
# the _expanded tests split over cpu:0 and gpu:0, and with compute-sanitizer where it is
# installed, a sample of the node tests (one or two per GPU lowering) under its memcheck tool.
# Each step's output goes to LOGDIR; its last lines to stdout.
#
#   bash BUNDLE/conformance-check.sh BUNDLE LOGDIR
set -uo pipefail
bundle=$(cd "${1:?usage: conformance-check.sh BUNDLE LOGDIR}" && pwd)
logs=${2:?usage: conformance-check.sh BUNDLE LOGDIR}
mkdir -p "$logs"
root=$(pwd)
jobs=$(nproc)
source "$bundle/step.sh"
TAIL=2

kc=("$bundle/bin/kiln-conformance" --kiln-run "$bundle/bin/kiln-run" --jobs "$jobs")
step node-tests "${kc[@]}" --prebuilt "$bundle/node" --kiln-run-arg=--device=gpu:0 \
  --data-dir "$bundle/data/node" --expected "$root/test/conformance/expected-pass.txt"
step exported-models "${kc[@]}" --prebuilt "$bundle/exported" --kiln-run-arg=--device=gpu:0 \
  --data-dir "$root/test/exported" --expected "$root/test/exported/expected-pass.txt" --atol 1e-5
step split "${kc[@]}" --prebuilt "$bundle/split" --filter '_expanded$' \
  --data-dir "$bundle/data/node" --expected "$root/test/conformance/expected-pass.txt"
split=$(grep -l -a '^partition gpu:0' "$bundle"/split/*.kiln | wc -l)
echo "split over cpu:0 and gpu:0: $split artifacts"

if command -v compute-sanitizer >/dev/null; then
  wrapper=$(mktemp -d)/kiln-run-memcheck
  printf '#!/bin/sh\nexec compute-sanitizer --tool memcheck --error-exitcode 99 --print-limit 5 "%s" "$@"\n' \
    "$bundle/bin/kiln-run" >"$wrapper"
  chmod +x "$wrapper"
  sample='^test_(resize_upsample_scales_linear|resize_downsample_scales_cubic|convtranspose_pads|convtranspose_dilations'
  sample+='|lstm_batchwise|gru_seq_length|rnn_seq_length|gathernd_example_int32|scatternd|scatter_elements_with_duplicate_indices'
  sample+='|gather_elements_1|top_k|cumsum_2d_axis_1|einsum_batch_matmul|constant_pad|reflect_pad|edge_pad|conv_with_strides_padding'
  sample+='|maxpool_3d_default|averagepool_3d_default|layer_normalization_4d_axis1|softmax_axis_1|argmax_default_axis_example'
  sample+='|matmul_4d|gemm_all_attributes|dft|onehot_with_axis|tril|loop11|scan9_sum|if)$'
  step memcheck "$bundle/bin/kiln-conformance" --kiln-run "$wrapper" --jobs "$jobs" --timeout 300 \
    --prebuilt "$bundle/node" --kiln-run-arg=--device=gpu:0 --data-dir "$bundle/data/node" --filter "$sample"
fi
echo "== $failures step(s) failed"
exit $((failures > 0))
