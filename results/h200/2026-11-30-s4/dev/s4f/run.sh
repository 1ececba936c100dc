#!/usr/bin/env bash
# Dev call 6 (session 4, last 4 device minutes): fa1 Q K^T in two accumulator chains where a
# warp's S slice is narrow (hd256 32x128.w8). new/ = 69ed950 + the change, old/ = 48972af.
# fa-check on fa1 hd256, then hd256 paper-fwd 4096-16384 (both masks), old, new, old, new.
set -uo pipefail
B=.devbuild/s4f; R=$OUT/run; mkdir -p $R
pack() { echo "== $1 exit $2 $(date -u +%T)" | tee -a $R/steps.log; tar -czf $OUT/run.tar.gz -C $OUT run; }
timeout -s INT -k 5 40 $B/new/fa-check --backend cuda --kernels 'fa1.*hd256.*' \
  --json $R/check.json --csv $R/check.csv > $R/check.md 2> $R/check.err; pack check $?
run() {
  timeout -s INT -k 5 40 $B/$2/fa-bench sweep --config configs/paper-fwd.json --backend cuda --seqlen 4096:16384:x2 \
    --head-dim 256 --kernels fa1 --max-seconds 0.2 --min-samples 10 --max-check-rows 256 \
    --json $R/$1.json --csv $R/$1.csv > $R/$1.md 2> $R/$1.err; pack $1 $?
}
run old1 old; run new1 new; run old2 old; run new2 new
tail -1 $R/check.md
python3 - $R <<'PY'
import csv, sys, os
R = sys.argv[1]; t = {}
for v in ('old1', 'new1', 'old2', 'new2'):
    if not os.path.exists(f'{R}/{v}.csv'): continue
    for r in csv.DictReader(open(f'{R}/{v}.csv')):
        if r['status'] == 'ok': t.setdefault((r['causal'], int(r['seqlen_q'])), {})[v] = float(r['tflops'])
for k in sorted(t):
    d = t[k]; o = (d.get('old1', 0) + d.get('old2', 0)) / 2; n = (d.get('new1', 0) + d.get('new2', 0)) / 2
    print(*k, *[round(d.get(v, 0), 1) for v in ('old1', 'new1', 'old2', 'new2')], round(n / o, 3) if o else '')
PY
