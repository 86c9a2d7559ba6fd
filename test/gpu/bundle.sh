#!/usr/bin/env bash
# Packs the GPU checks for a machine that has an NVIDIA GPU but not the compiler (no LLVM, no
# Debian packages): the runtime, kiln-train and the test binaries with the shared libraries they
# need beyond the C and C++ runtimes, GPU train steps compiled here (the PyTorch reference
# models, LeNet-5 plain and data-parallel), a slice of Fashion-MNIST and, with --bench, the GPU
# train-step benchmark's models. test/gpu/device-check.sh runs it there.
#
#   test/gpu/bundle.sh OUT [--bench]        (after ./test/run.sh or a build in build/)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:?usage: test/gpu/bundle.sh OUT [--bench]}
bench=${2:-}
build=$root/build
python=python3
[[ -x /usr/bin/python3 ]] && python=/usr/bin/python3 # Debian's, with python3-onnx

rm -rf "$out"
mkdir -p "$out"/bin "$out"/lib "$out"/artifacts "$out"/build/lib "$out"/build/bin "$out"/data
bins=(kiln-run kiln-train kiln-launch kiln-runtime-tests kiln-training-tests)
for b in "${bins[@]}"; do
  cp "$build/bin/$b" "$out/bin/"
  strip "$out/bin/$b" 2>/dev/null || true
done
# Shared libraries the binaries need beyond what every Linux has.
for b in "${bins[@]}"; do ldd "$build/bin/$b"; done | awk '/=>/ {print $3}' | sort -u | while read -r lib; do
  case $(basename "$lib") in
  libc.so* | libm.so* | libstdc++.so* | libgcc_s.so* | ld-linux* | libdl.so* | libpthread.so* | librt.so*) ;;
  *) cp -L "$lib" "$out/lib/" ;;
  esac
done
# The runtime tests' artifacts and the kiln-run they start, at the build tree's paths
# (device-check.sh links them there).
cp "$build"/lib/*.kiln "$build"/lib/libkiln_fake_cuda.so "$out/build/lib/"
cp "$out/bin/kiln-run" "$out/build/bin/"

kilnc=$build/bin/kilnc
for model in mlp lenet batchnorm transformer; do
  ref=$root/test/training/reference/$model
  "$kilnc" "$ref/model.onnx" --train --train-config="$ref/train.cfg" --target=cuda:sm_90 \
    -o "$out/artifacts/$model.kiln"
done

# LeNet-5 of the training demo, for the GPU and (to compare with) the CPU run made here.
"$python" "$root/examples/train/lenet.py" "$out/artifacts/lenet5.onnx"
for variant in plain dp; do
  flags=(--train --train-config="$root/examples/train/lenet.cfg" --target=cuda:sm_90)
  [[ $variant == dp ]] && flags+=(--data-parallel=true)
  "$kilnc" "$out/artifacts/lenet5.onnx" "${flags[@]}" -o "$out/artifacts/lenet5-$variant.kiln"
done
# The same 300 steps on the CPU here, for device-check.sh to compare the GPU's losses with.
"$kilnc" "$out/artifacts/lenet5.onnx" --train --train-config="$root/examples/train/lenet.cfg" \
  -o "$out/lenet5-cpu.kiln"
rm "$out/artifacts/lenet5.onnx"
# The first 10000 training and 2000 test images of Fashion-MNIST, as gzip'd IDX files (the
# bundle travels whole, within 64 MiB).
"$python" - "$out/data" <<'PY'
import gzip, struct, sys
src, dst = "/usr/share/datasets/fashion-mnist", sys.argv[1]
for prefix, count in (("train", 10000), ("t10k", 2000)):
    with gzip.open(f"{src}/{prefix}-images-idx3-ubyte.gz") as f:
        magic, n, rows, cols = struct.unpack(">IIII", f.read(16))
        images = f.read(count * rows * cols)
    with gzip.open(f"{dst}/{prefix}-images-idx3-ubyte.gz", "wb") as f:
        f.write(struct.pack(">IIII", magic, count, rows, cols) + images)
    with gzip.open(f"{src}/{prefix}-labels-idx1-ubyte.gz") as f:
        magic, n = struct.unpack(">II", f.read(8))
        labels = f.read(count)
    with gzip.open(f"{dst}/{prefix}-labels-idx1-ubyte.gz", "wb") as f:
        f.write(struct.pack(">II", magic, count) + labels)
PY
"$build/bin/kiln-train" "$out/lenet5-cpu.kiln" --data "$out/data" --epochs 2 --progress off \
  --print-every 1000 --eval-every 0 --metrics "$out/lenet-cpu.csv" >/dev/null
rm "$out/lenet5-cpu.kiln"
# One batch for profiling a step (device-check.sh runs Nsight Compute on it where it is).
"$python" - "$out/data" <<'PY'
import sys
import numpy as np
rng = np.random.default_rng(0)
np.save(f"{sys.argv[1]}/x.npy", rng.random((100, 1, 28, 28), dtype=np.float32))
np.save(f"{sys.argv[1]}/labels.npy", rng.integers(0, 10, 100).astype(np.int64))
PY
cp "$root/test/gpu/device-check.sh" "$root/test/gpu/step.sh" "$out/"
if [[ $bench == --bench ]]; then
  "$python" "$root/bench/train_gpu.py" prepare "$out/bench" --kiln-bin "$build/bin" \
    --graphs mlp_b256,lenet,transformer_layer
fi
du -sh "$out"
