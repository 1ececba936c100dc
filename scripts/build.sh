#!/usr/bin/env bash
# Configures and builds fa-bench into build/ (or $FA_BUILD_DIR). With nvcc the
# CUDA kernels are built too (no GPU needed to build); without it, the CPU
# back end only, and it says so.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${FA_BUILD_DIR:-build}
jobs=${FA_JOBS:-$(nproc)}
args=(-S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release)
if ! command -v nvcc >/dev/null 2>&1 && ! [[ -x /usr/local/cuda/bin/nvcc ]]; then
  echo "build: no nvcc found: building the CPU back end only (FA_BENCH_CUDA=OFF)" >&2
  args+=(-DFA_BENCH_CUDA=OFF)
elif ! command -v nvcc >/dev/null 2>&1; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
start=$(date +%s)
cmake "${args[@]}" "$@" >/dev/null
cmake --build "$build" -j "$jobs" >&2  # progress on stderr: stdout is the results
echo "build: done in $(( $(date +%s) - start )) s ($build)" >&2
