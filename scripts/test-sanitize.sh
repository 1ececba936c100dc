#!/usr/bin/env bash
# The CPU back end under AddressSanitizer + UndefinedBehaviorSanitizer: builds
# fa-bench, fa-check and the test binary into their own folder (preset
# `sanitize`, -O1 -g) and runs every CPU test that exercises them, the hostile
# corpus (tests/data/hostile/) included. Any sanitizer report fails the test
# that produced it (UB aborts; the corpus runner also scans stderr).
#
#   scripts/test-sanitize.sh            (FA_JOBS=N for the build, default 2)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${FA_SANITIZE_BUILD_DIR:-build-sanitize}
jobs=${FA_JOBS:-2}
start=$(date +%s)
cmake -S . -B "$build" -G Ninja -DFA_BENCH_CUDA=OFF -DFA_BENCH_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g" >/dev/null
cmake --build "$build" -j "$jobs" --target fa-bench fa-check fa_tests >&2
built=$(date +%s)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
# Scripts that never run our binaries, fa-gbench and the benchmarks are left to
# the normal build: they add build time here and nothing for the sanitizers.
rc=0
ctest --test-dir "$build" --output-on-failure -j "$jobs" -L cpu \
  -E '^(summarize_table|sm_clock_rule|ab_table|results_tables|sass_stalls|plot_figures|fa_gbench_smoke)$' || rc=$?
echo "test-sanitize: build $(( built - start )) s, tests $(( $(date +%s) - built )) s ($build)" >&2
exit "$rc"
