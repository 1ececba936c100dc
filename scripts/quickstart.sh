#!/usr/bin/env bash
# The main job on a fresh machine: install dependencies, build, run the smoke
# sweep (on the GPU when one is present, otherwise on the CPU back end, saying
# which), and write results to out/smoke.{json,csv}.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
mkdir -p out
exec build/fa-bench sweep --config configs/smoke.json --backend auto \
  --json out/smoke.json --csv out/smoke.csv "$@"
