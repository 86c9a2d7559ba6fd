#!/usr/bin/env bash
# Builds and runs bench/gemm/gemm_libraries.cpp (see the comment at its top).
#   bench/gemm/run.sh            build, then table x2 and interaction x2 per config (~4-5 min)
#   bench/gemm/run.sh build      build only
#   NICE=-20 bench/gemm/run.sh   run the benchmarks under `nice -n -20` (root only), so other
#                                work on a shared machine disturbs them less
# Binaries go to bench/gemm/.bin/. Needs: g++, clang (any; only for the libomp
# part), libopenblas-dev, libdnnl-dev, libomp-22-dev.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$here/gemm_libraries.cpp
bin=$here/.bin
mkdir -p "$bin"
# libomp: /usr/lib/llvm-22/lib/libomp.so.5 is a symlink to /usr/lib/x86_64-linux-gnu/libomp.so.5
# (the same file), so link it from the default path. Do NOT add -L/-rpath /usr/lib/llvm-22/lib:
# that directory also has libgomp.so(.1) -> libomp.so.5, which silently replaces libgomp.
libgomp=/usr/lib/x86_64-linux-gnu/libgomp.so.1
clangxx=$(command -v clang++-22 || command -v /usr/lib/llvm-22/bin/clang++ || command -v clang++)

g++ -O3 -march=native -DPART_NAIVE -c "$src" -o "$bin/naive.o"
# clang emits __kmpc_* calls (libomp), like MLIR's OpenMP lowering; g++ -fopenmp would use libgomp.
"$clangxx" -O2 -march=native -fopenmp -DPART_OMP -c "$src" -o "$bin/omp.o"
g++ -O2 -march=native -c "$src" -o "$bin/main.o"
objs=("$bin/main.o" "$bin/naive.o" "$bin/omp.o")
common=(-Wl,--no-as-needed)
# sep: oneDNN's GOMP_* calls go to libgomp (as it was built): two OpenMP runtimes in the process.
g++ "${objs[@]}" -o "$bin/gemm_sep" "${common[@]}" -lopenblas -ldnnl "$libgomp" -lomp -ldl -lpthread
# uni: libomp comes first in the global scope, so its GOMP_* compatibility entry points
# serve oneDNN as well: one OpenMP runtime (libomp) for oneDNN and our loops.
g++ "${objs[@]}" -o "$bin/gemm_uni" "${common[@]}" -lomp -lopenblas -ldnnl -ldl -lpthread
echo "built: $bin/gemm_sep $bin/gemm_uni  (compiler for the libomp part: $clangxx)"
[[ ${1:-} == build ]] && exit 0
run=()
[[ -n ${NICE:-} ]] && run=(nice -n "$NICE")

echo "== $(date -u +%FT%TZ) $(nproc) CPUs, nice ${NICE:-0}, load: $(cut -d' ' -f1-3 /proc/loadavg)"
for pass in 1 2; do
  echo; echo "=================== table, pass $pass (gemm_sep) ==================="
  "${run[@]}" "$bin/gemm_sep" table --time 0.2
done
for pass in 1 2; do
  echo; echo "=================== interaction, pass $pass ==================="
  echo "--- sep (oneDNN on libgomp, our loop on libomp), default spin settings"
  "${run[@]}" "$bin/gemm_sep" interact --time 0.2
  echo "--- uni (oneDNN and our loop both on libomp), default spin settings"
  "${run[@]}" "$bin/gemm_uni" interact --time 0.2
  echo "--- sep, passive waiting: OMP_WAIT_POLICY=passive KMP_BLOCKTIME=0 OPENBLAS_THREAD_TIMEOUT=4"
  OMP_WAIT_POLICY=passive KMP_BLOCKTIME=0 OPENBLAS_THREAD_TIMEOUT=4 "${run[@]}" "$bin/gemm_sep" interact --time 0.2
done
echo "== done $(date -u +%FT%TZ), load: $(cut -d' ' -f1-3 /proc/loadavg)"
