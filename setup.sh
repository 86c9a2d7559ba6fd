#!/usr/bin/env bash
# Installs every Debian package Kiln's build and tests need. Safe to run again.
set -euo pipefail

packages=(
  # Build tools.
  cmake ninja-build ccache gcc g++ git coreutils
  # Compiler infrastructure: LLVM/MLIR 22 with lit and FileCheck.
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools liblld-22-dev
  # Graph format: ONNX protobuf schema, checker, shape inference; the node tests.
  libonnx-dev libonnx-testdata libprotobuf-dev protobuf-compiler
  # CPU back end: OpenMP runtime for the generated kernels' threads, and the
  # GEMM libraries the back end and its benchmarks compare.
  libomp-22-dev libopenblas-dev libdnnl-dev
  # kiln-train: gzip-compressed IDX data sets; the demo's data (Fashion-MNIST) and the
  # script that writes its model.
  zlib1g-dev dataset-fashion-mnist python3-numpy python3-onnx
  # Collectives among data-parallel replicas (Gloo over TCP).
  libgloo-dev
  # The sanitizer build and the fuzz targets (test/sanitize.sh): clang with its
  # ASan, UBSan and libFuzzer runtimes.
  clang-22 libclang-rt-22-dev
  # Unit tests; headless Chromium renders kilnc's HTML placement report.
  libgtest-dev chromium
  # lit runs on Python.
  python3
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present"
fi
