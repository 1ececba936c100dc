#!/usr/bin/env bash
# Dev call 4 (session 3): ablation of fa1's O_i prefetch (FA1_PREFETCH_O=0 build vs the default),
# split tiles 32x128.w8 (hd256) and 64x256.w8 (hd128), paper-fwd, alternating off/on/off/on.
set -uo pipefail
B=.devbuild/s3d; R=$OUT/run; mkdir -p $R
pack() { echo "== $1 exit $2 $(date -u +%T)" | tee -a $R/steps.log; tar -czf $OUT/run.tar.gz -C $OUT run; }
for rep in 1 2; do for v in off on; do
timeout -s INT -k 5 100 $B/$v/fa-bench sweep --config configs/paper-fwd.json --backend cuda --seqlen 512:16384:x2 \
  --head-dim 128,256 --kernels fa1 --block 32x128,64x256 --max-seconds 0.2 --min-samples 10 \
  --max-check-rows 256 --json $R/$v$rep.json --csv $R/$v$rep.csv > $R/$v$rep.md 2> $R/$v$rep.err; pack $v$rep $?
done; done
python3 - $R <<'PY'
import csv, sys, collections
R = sys.argv[1]; t = collections.defaultdict(dict)
for v in ('off1', 'on1', 'off2', 'on2'):
    for r in csv.DictReader(open(f'{R}/{v}.csv')):
        if r['status'] == 'ok':
            t[(r['kernel'], r['head_dim'], r['causal'], int(r['seqlen_q']))][v] = float(r['tflops'])
for k in sorted(t):
    d = t[k]; off = max(d.get('off1', 0), d.get('off2', 0)); on = max(d.get('on1', 0), d.get('on2', 0))
    print(*k, *(round(d.get(v, 0), 1) for v in ('off1', 'on1', 'off2', 'on2')), round(on / off, 3) if off else '')
PY
