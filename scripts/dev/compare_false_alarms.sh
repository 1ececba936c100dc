#!/bin/sh
# How often the regression gate calls identical code a regression on this host:
# RUNS identical CPU sweeps of configs/smoke.json (one seed), then
# `fa-bench compare` on every ordered pair. Prints each failing pair and the
# totals quoted in docs/COMPARE.md.
#
#   scripts/dev/compare_false_alarms.sh [BUILD_DIR] [RUNS]    (default: build 8)
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
bin="$here/${1:-build}/fa-bench"
runs=${2:-8}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
i=1
while [ "$i" -le "$runs" ]; do
  "$bin" sweep --config "$here/configs/smoke.json" --backend cpu --seed 7 --json "$out/run$i.json" >/dev/null 2>&1
  i=$((i + 1))
done
pairs=0 failed=0 slower=0 rows=0
for a in $(seq 1 "$runs"); do
  for b in $(seq 1 "$runs"); do
    [ "$a" = "$b" ] && continue
    pairs=$((pairs + 1))
    rc=0
    "$bin" compare "$out/run$a.json" "$out/run$b.json" >"$out/report.md" 2>"$out/err.txt" || rc=$?
    summary=$(grep -o '^[0-9]* pairs: [0-9]* regressions, [0-9]* slower' "$out/report.md")
    n=$(echo "$summary" | cut -d' ' -f1)
    s=$(echo "$summary" | awk '{print $5}')
    rows=$((rows + n))
    slower=$((slower + s))
    if [ "$rc" -ne 0 ]; then
      failed=$((failed + 1))
      echo "run$a -> run$b: exit $rc, $s rows slower $(cat "$out/err.txt")"
    fi
  done
done
echo "identical reruns: $failed of $pairs ordered pairs fail; $slower of $rows row pairs called slower"
