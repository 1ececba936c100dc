#!/usr/bin/env bash
# A/B of backward kernel builds with tests/gpu/standalone/bwd_check, in one run:
# each build's `check` first (its kernels must pass before they are timed), then
# `time` for every build in turn, twice (A B C .. A B C ..), so clock and heat drift
# fall on all alike. Prints, per entry and point, each build's mean TFLOP/s over
# the two passes divided by the first build's.
#   scripts/dev/ab_bwd_check.sh OUT_DIR BWD_CHECK_A BWD_CHECK_B [BWD_CHECK_C ...]
# Environment (defaults in brackets): FAMILIES [fa3,cudnn] timed, CHECK_FAMILIES [fa3]
# checked, HD [64,128,256],
# SEQLENS [2048,4096,8192,16384] T_CHECK [120] T_TIME [100] seconds per step.
set -uo pipefail
out=${1:?OUT_DIR}
shift
[ $# -ge 2 ] || { echo "usage: $0 OUT_DIR BWD_CHECK_A BWD_CHECK_B [...]" >&2; exit 2; }
mkdir -p "$out"
fams=${FAMILIES:-fa3,cudnn}
hd=${HD:-64,128,256}
seqlens=${SEQLENS:-2048,4096,8192,16384}
i=0
for bin in "$@"; do
  timeout "${T_CHECK:-120}" "$bin" check families="${CHECK_FAMILIES:-fa3}" hd="$hd" seed=5 > "$out/check.$i.txt" 2>&1
  echo "check $i ($bin) exit $?, $(grep -c ' ok$' "$out/check.$i.txt") ok lines"
  i=$((i + 1))
done
for pass in 1 2; do
  i=0
  for bin in "$@"; do
    timeout "${T_TIME:-100}" "$bin" time families="$fams" hd="$hd" seqlens="$seqlens" csv="$out/time.$i.$pass.csv" \
      > "$out/time.$i.$pass.txt" 2>&1
    echo "time $i.$pass exit $?"
    i=$((i + 1))
  done
done
python3 - "$out" "$#" <<'PY'
import csv, sys
out, n = sys.argv[1], int(sys.argv[2])
def load(path):
    return {(r['kernel'], r['head_dim'], r['causal'], r['seqlen'], r['deterministic']): float(r['tflops'])
            for r in csv.DictReader(open(path))}
runs = [[load(f"{out}/time.{i}.{p}.csv") for p in (1, 2)] for i in range(n)]
print("entry | hd | causal | seqlen | det | " + " | ".join(f"TFLOP/s {i}" for i in range(n)) + " | "
      + " | ".join(f"{i}/0" for i in range(1, n)))
for key in sorted(runs[0][0], key=lambda k: (k[0], int(k[1]), k[2], k[4], int(k[3]))):
    means = [(r[0][key] + r[1][key]) / 2 if key in r[0] and key in r[1] else float('nan') for r in runs]
    print(" | ".join(key[:1] + key[1:]) + " | " + " | ".join(f"{m:.0f}" for m in means) + " | "
          + " | ".join(f"{m / means[0]:.3f}" for m in means[1:]))
PY
