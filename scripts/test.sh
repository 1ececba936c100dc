#!/usr/bin/env bash
# Install dependencies, build, and run the whole test suite. GPU tests carry
# the ctest label `gpu` and report as skipped where no device is present.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
FA_JOBS=${FA_JOBS:-2} scripts/build.sh
ctest --test-dir build --output-on-failure -j "${FA_JOBS:-2}" "$@"
