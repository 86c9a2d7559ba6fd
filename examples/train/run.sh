#!/usr/bin/env bash
# The training demo: builds Kiln, writes LeNet-5 (examples/train/lenet.py), compiles its
# train step with the recipe in examples/train/lenet.cfg, trains it on Fashion-MNIST
# (Debian's dataset-fashion-mnist) with kiln-train, then compiles the exported trained
# model for inference and classifies test images with it. Training takes about a minute and a
# half on 2 cores (90.3 % test accuracy), after the build.
#
#   ./examples/train/run.sh [kiln-train flags...]    e.g. --epochs 2, --threads 4
#
# Everything lands in build/examples/train/. An interrupted run continues from its last
# checkpoint when started again; delete the folder to start over.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

./examples/build.sh kilnc kiln-train kiln-run

python=python3
[[ -x /usr/bin/python3 ]] && python=/usr/bin/python3 # Debian's, with python3-onnx
data=/usr/share/datasets/fashion-mnist
out=build/examples/train
mkdir -p "$out"

echo "== LeNet-5 with seeded initial weights: $out/lenet.onnx"
[[ -f $out/lenet.onnx ]] || "$python" examples/train/lenet.py "$out/lenet.onnx"
echo "== kilnc --train: $out/lenet-train.kiln"
build/bin/kilnc "$out/lenet.onnx" --train --train-config=examples/train/lenet.cfg \
  -o "$out/lenet-train.kiln"
echo "== kiln-train on $data"
build/bin/kiln-train "$out/lenet-train.kiln" --data "$data" --epochs 4 --eval-every 600 \
  --print-every 100 --checkpoint-dir "$out/checkpoints" --resume --logdir "$out/logs" \
  --metrics "$out/metrics.csv" --predictions "$out/predictions.npy" \
  --export "$out/lenet-trained.onnx" --model "$out/lenet.onnx" "$@"
echo "== kilnc (inference): $out/lenet-trained.kiln"
build/bin/kilnc "$out/lenet-trained.onnx" -o "$out/lenet-trained.kiln"
echo "== classify test images"
KILN_RUN=build/bin/kiln-run "$python" examples/train/classify.py "$out/lenet-trained.kiln" \
  "$data" "$out/predictions.npy" "$out/classified"
echo "== TensorBoard logs in $out/logs (tensorboard --logdir $out/logs)"
