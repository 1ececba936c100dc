#!/usr/bin/env bash
# Dev call 4 (session 4): fa1 Q blocks dealt to splits in mirrored rounds (balances causal work),
# K_{j+1} from step j's last block only for 32-row tiles. new/ = working tree, old/ = 48972af.
# fa-check on every fa1 variant with new/, then paper-fwd 2048-16384 alternating old, new
# (fa1 default tiles; fa2 beside the first new).
set -uo pipefail
B=.devbuild/s4d; R=$OUT/run; mkdir -p $R
pack() { echo "== $1 exit $2 $(date -u +%T)" | tee -a $R/steps.log; tar -czf $OUT/run.tar.gz -C $OUT run; }
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv > $R/gpu.csv 2>&1
timeout -s INT -k 5 90 $B/new/fa-check --backend cuda --kernels 'fa1.*' \
  --json $R/check.json --csv $R/check.csv > $R/check.md 2> $R/check.err; pack check $?
run() {  # name binary kernels seqlen [extra flags]
  local n=$1 b=$2 k=$3 s=$4; shift 4
  timeout -s INT -k 5 100 $B/$b/fa-bench sweep --config configs/paper-fwd.json --backend cuda --seqlen $s \
    --kernels $k --max-seconds 0.2 --min-samples 10 --max-check-rows 256 "$@" \
    --json $R/$n.json --csv $R/$n.csv > $R/$n.md 2> $R/$n.err; pack $n $?
}
run old1 old fa1 2048:16384:x2
run new1 new fa1,fa2 2048:16384:x2
run old2 old fa1 2048:16384:x2
run new2 new fa1 2048:16384:x2
tail -3 $R/check.md; tail -2 $R/check.err
python3 - $R <<'PY'
import csv, sys, os
R = sys.argv[1]; t = {}
runs = ('old1', 'new1', 'old2', 'new2')
for v in runs:
    if not os.path.exists(f'{R}/{v}.csv'): continue
    for r in csv.DictReader(open(f'{R}/{v}.csv')):
        if r['status'] != 'ok': print(v, r['kernel'], r['status'], r['reason'][:80]); continue
        k = (int(r['head_dim']), r['causal'], int(r['seqlen_q']))
        name = v if r['family'] == 'fa1' else r['family']
        t.setdefault(k, {})[name] = (float(r['tflops']), 'T' if 'throttled' in r['reason'] else '')
cols = list(runs) + ['fa2']
print('hd causal seqlen', *cols, 'new/old new/fa2 old/fa2 flags')
for k in sorted(t):
    d = t[k]; g = lambda c: d.get(c, (0, ''))[0]
    old = (g('old1') + g('old2')) / 2; new = (g('new1') + g('new2')) / 2
    r = lambda a, b: round(a / b, 3) if a and b else ''
    print(*k, *[round(g(c), 1) for c in cols], r(new, old), r(new, g('fa2')), r(old, g('fa2')), ''.join(x[1] for x in d.values()))
PY
