#!/usr/bin/env bash
# The main job on a fresh machine: install dependencies, build, run the smoke
# sweep — on the GPU when one is present (every GPU kernel, bf16 and fp16),
# otherwise on the CPU back end, saying which — and write out/smoke.{json,csv}.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
mkdir -p out
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 \
   && build/fa-bench list --backend cuda --kernels cuda 2>/dev/null | grep -q "| yes |"; then
  echo "quickstart: GPU found: smoke sweep on the cuda back end" >&2
  set -- --backend cuda --kernels cuda --block auto --dtype bf16,fp16 "$@"
else
  echo "quickstart: no usable GPU: smoke sweep on the CPU back end" >&2
  set -- --backend cpu "$@"
fi
exec build/fa-bench sweep --config configs/smoke.json --json out/smoke.json --csv out/smoke.csv "$@"
