#!/usr/bin/env bash
# Dev call 2 (session 4): fa1 K_{j+1} load from step j's last block (one K site in the loop)
# and the serpentine order that starts each step one block back. v2/ = working tree,
# v2ns/ = same with FA1_SERPENTINE=0, old/ = 48972af. fa-check on every fa1 variant with v2,
# paper-fwd 4096-16384 fa1 sweeps alternating old, v2ns, v2, old, v2 (fa2 beside the first v2),
# then Nsight Compute on old and v2 at hd256 causal 16384 (stall reasons).
set -uo pipefail
B=.devbuild/s4b; R=$OUT/run; mkdir -p $R
pack() { echo "== $1 exit $2 $(date -u +%T)" | tee -a $R/steps.log; tar -czf $OUT/run.tar.gz -C $OUT run; }
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv > $R/gpu.csv 2>&1
timeout -s INT -k 5 90 $B/v2/fa-check --backend cuda --kernels 'fa1.*' \
  --json $R/check.json --csv $R/check.csv > $R/check.md 2> $R/check.err; pack check $?
run() {  # name binary kernels seqlen [extra flags]
  local n=$1 b=$2 k=$3 s=$4; shift 4
  timeout -s INT -k 5 100 $B/$b/fa-bench sweep --config configs/paper-fwd.json --backend cuda --seqlen $s \
    --kernels $k --max-seconds 0.2 --min-samples 10 --max-check-rows 256 "$@" \
    --json $R/$n.json --csv $R/$n.csv > $R/$n.md 2> $R/$n.err; pack $n $?
}
run old1 old fa1 4096:16384:x2
run v2ns1 v2ns fa1 4096:16384:x2
run v21 v2 fa1,fa2 4096:16384:x2
run old2 old fa1 4096:16384:x2
run v22 v2 fa1 4096:16384:x2
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for v in old v2; do
  timeout -k 5 90 $NCU --clock-control none --kernel-name regex:fa1_fwd --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
    --section ComputeWorkloadAnalysis --section LaunchStats --section Occupancy \
    --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' \
    $B/$v/fa-bench sweep --config configs/paper-fwd.json --backend cuda --seqlen 16384 --head-dim 256 --causal true \
    --kernels fa1 --max-seconds 0.05 --min-samples 1 --warmup 0 --max-check-rows 64 > $R/ncu_$v.txt 2>&1; pack ncu_$v $?
done
tail -3 $R/check.md; tail -2 $R/check.err
python3 - $R <<'PY'
import csv, sys, os
R = sys.argv[1]; t = {}
runs = ('old1', 'v2ns1', 'v21', 'old2', 'v22')
for v in runs:
    if not os.path.exists(f'{R}/{v}.csv'): continue
    for r in csv.DictReader(open(f'{R}/{v}.csv')):
        if r['status'] != 'ok': print(v, r['kernel'], r['status'], r['reason'][:80]); continue
        k = (int(r['head_dim']), r['causal'], int(r['seqlen_q']))
        name = v if r['family'] == 'fa1' else r['family']
        t.setdefault(k, {})[name] = (float(r['tflops']), 'T' if 'throttled' in r['reason'] else '')
cols = list(runs) + ['fa2']
print('hd causal seqlen', *cols, 'v2/old v2ns/old v2/fa2 flags')
for k in sorted(t):
    d = t[k]; g = lambda c: d.get(c, (0, ''))[0]
    old = (g('old1') + g('old2')) / 2; v2 = (g('v21') + g('v22')) / 2
    print(*k, *[round(g(c), 1) for c in cols], round(v2 / old, 3) if old else '', round(g('v2ns1') / old, 3) if old else '',
          round(v2 / g('fa2'), 3) if g('fa2') else '', ''.join(x[1] for x in d.values()))
PY
for v in old v2; do echo "=== ncu $v"; grep -E 'Duration|Throughput|Eligible|No Eligible|Warp Cycles Per Issued|Executed Ipc A|L2 Hit|Mem Busy|Max Bandwidth' $R/ncu_$v.txt | head -16
  grep -E 'issue_stalled' $R/ncu_$v.txt | awk '{print $NF, $1}' | sort -gr | head -10; done
