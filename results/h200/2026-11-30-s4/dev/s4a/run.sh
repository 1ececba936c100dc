#!/usr/bin/env bash
# Dev call 1 (session 4): fa1 K_{j+1} prefetch and serpentine inner loop.
# new/  = working tree (both on), kref/ = same with FA1_SERPENTINE=0, old/ = 48972af.
# fa-check on every fa1 variant with new/, then paper-fwd 2048-16384 fa1 sweeps alternating
# old, new, kref, new (fa2 beside the first new as the ratio's control), then DRAM counters.
set -uo pipefail
B=.devbuild/s4a; R=$OUT/run; mkdir -p $R
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
run kref1 kref fa1 2048:16384:x2
run new2 new fa1 2048:16384:x2
run old2 old fa1 2048:16384:x2
run cnt_new new fa1 16384 --counters
run cnt_old old fa1 16384 --counters
tail -3 $R/check.md; tail -2 $R/check.err
python3 - $R <<'PY'
import csv, sys, os
R = sys.argv[1]; t = {}; cnt = {}
for v in ('old1', 'new1', 'kref1', 'new2', 'old2', 'cnt_new', 'cnt_old'):
    if not os.path.exists(f'{R}/{v}.csv'): continue
    for r in csv.DictReader(open(f'{R}/{v}.csv')):
        if r['status'] != 'ok': print(v, r['kernel'], r['status'], r['reason'][:80]); continue
        k = (int(r['head_dim']), r['causal'], int(r['seqlen_q']))
        if v.startswith('cnt'):
            cnt.setdefault(k, {})[v] = (r['traffic_model_read_bytes'], r['traffic_model_write_bytes'], r['traffic_measured_read_bytes'], r['traffic_measured_write_bytes'])
            continue
        name = v if r['family'] == 'fa1' else r['family']
        t.setdefault(k, {})[name] = (float(r['tflops']), 'T' if 'throttled' in r['reason'] else '')
cols = ['old1', 'old2', 'kref1', 'new1', 'new2', 'fa2']
print('hd causal seqlen', *cols, 'new/old kref/old new/fa2 flags')
for k in sorted(t):
    d = t[k]; g = lambda c: d.get(c, (0, ''))[0]
    old = (g('old1') + g('old2')) / 2; new = (g('new1') + g('new2')) / 2
    print(*k, *[round(g(c), 1) for c in cols], round(new / old, 3) if old else '', round(g('kref1') / old, 3) if old else '',
          round(new / g('fa2'), 3) if g('fa2') else '', ''.join(x[1] for x in d.values()))
print('counters (model rd, model wr, measured rd, measured wr) GB')
for k in sorted(cnt):
    for v, x in cnt[k].items(): print(*k, v, *[round(int(y) / 1e9, 3) if y else '' for y in x])
PY
