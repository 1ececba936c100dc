#!/usr/bin/env bash
# Dev call 3 (session 4): fa1 K_{j+1} load issued at step j's last block before its P V
# (no serpentine), and the new hd256 tile 32x128.w16 (one 16-warp CTA per SM; fa1_splits
# now gives 16-warp CTAs 132 CTAs, not 66). new/ = working tree, old/ = 48972af.
# fa-check on every fa1 variant with new/, then paper-fwd 4096-16384 alternating old, new
# (fa1 default tiles; fa2 beside the first new), w16 at hd256, twice; ncu on w16.
set -uo pipefail
B=.devbuild/s4c; R=$OUT/run; mkdir -p $R
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
W16=fa1.bf16.hd256.32x128.w16.s2
run old1 old fa1 4096:16384:x2
run new1 new fa1,fa2 4096:16384:x2
run w161 new $W16 2048:16384:x2 --head-dim 256
run old2 old fa1 4096:16384:x2
run new2 new fa1 4096:16384:x2
run w162 new $W16 2048:16384:x2 --head-dim 256
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
timeout -k 5 60 $NCU --clock-control none --kernel-name regex:fa1_fwd --launch-count 1 \
  --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
  --section ComputeWorkloadAnalysis --section LaunchStats --section Occupancy \
  --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' \
  $B/new/fa-bench sweep --config configs/paper-fwd.json --backend cuda --seqlen 16384 --head-dim 256 --causal true \
  --kernels $W16 --max-seconds 0.05 --min-samples 1 --warmup 0 --max-check-rows 64 > $R/ncu_w16.txt 2>&1; pack ncu_w16 $?
tail -3 $R/check.md; tail -2 $R/check.err
python3 - $R <<'PY'
import csv, sys, os
R = sys.argv[1]; t = {}
runs = ('old1', 'new1', 'w161', 'old2', 'new2', 'w162')
for v in runs:
    if not os.path.exists(f'{R}/{v}.csv'): continue
    for r in csv.DictReader(open(f'{R}/{v}.csv')):
        if r['status'] != 'ok': print(v, r['kernel'], r['status'], r['reason'][:80]); continue
        k = (int(r['head_dim']), r['causal'], int(r['seqlen_q']))
        name = v if r['family'] == 'fa1' else r['family']
        t.setdefault(k, {})[name] = (float(r['tflops']), 'T' if 'throttled' in r['reason'] else '')
cols = list(runs) + ['fa2']
print('hd causal seqlen', *cols, 'new/old w16/old new/fa2 w16/fa2 flags')
for k in sorted(t):
    d = t[k]; g = lambda c: d.get(c, (0, ''))[0]
    old = (g('old1') + g('old2')) / 2; new = (g('new1') + g('new2')) / 2; w = (g('w161') + g('w162')) / 2
    r = lambda a, b: round(a / b, 3) if a and b else ''
    print(*k, *[round(g(c), 1) for c in cols], r(new, old), r(w, old), r(new, g('fa2')), r(w, g('fa2')), ''.join(x[1] for x in d.values()))
PY
echo "=== ncu w16"; grep -E 'Duration|Throughput|Eligible|No Eligible|Executed Ipc A|L2 Hit|Registers Per|Achieved Occ' $R/ncu_w16.txt | head -16
grep -E 'issue_stalled' $R/ncu_w16.txt | awk '{print $NF, $1}' | sort -gr | head -8
