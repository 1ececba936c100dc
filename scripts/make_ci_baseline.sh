#!/bin/sh
# Records tests/data/ci/smoke-baseline.json: the CPU smoke sweep at a fixed seed.
# The ctest test `ci_gate_smoke` reruns the same sweep and compares it with
# `fa-bench compare --deterministic` (status, errors, modelled bytes; never
# timings, which differ between machines). Rerun this after a change that
# legitimately moves those fields (a new kernel, a new tolerance), and commit
# the file with the change that explains it.
#
#   scripts/make_ci_baseline.sh [BUILD_DIR]     (default: build)
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
seed=20251130  # tests/CMakeLists.txt passes the same seed to the ci_gate_smoke sweep
mkdir -p "$here/tests/data/ci"
# Short timing budget: the gate does not look at timings, and the smoke points
# stay the same. Threads 1: the numbers are the same at any thread count (every
# CPU kernel and the reference reduce each row in a fixed order), 1 is simply the
# most portable choice.
# From the repository root with relative paths: the recorded command line names no
# machine's folders.
cd "$here"
"$build/fa-bench" sweep --config configs/smoke.json --backend cpu --seed "$seed" \
  --threads 1 --max-seconds 0.02 --json tests/data/ci/smoke-baseline.json
