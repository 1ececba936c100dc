#!/usr/bin/env bash
# Dev call 5 (session 3): fa3 cross-tile overlap (a tile's last P V issued with the next tile's
# first Q K^T) -- fa-check on every fa3 variant (full suite), then paper-fwd fa3 + cudnn with the
# new binary and fa3 with the session-2 binary (old/, commit 57d8677), alternating, same call.
set -uo pipefail
B=.devbuild/s3e; R=$OUT/run; mkdir -p $R
export LD_LIBRARY_PATH=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:${LD_LIBRARY_PATH:-}
pack() { echo "== $1 exit $2 $(date -u +%T)" | tee -a $R/steps.log; tar -czf $OUT/run.tar.gz -C $OUT run; }
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv > $R/gpu.csv 2>&1
timeout -s INT -k 5 100 $B/new/fa-check --backend cuda --kernels 'fa3.*' \
  --json $R/check.json --csv $R/check.csv > $R/check.md 2> $R/check.err; pack check $?
for v in new old; do
  k=fa3; [[ $v == new ]] && k=fa3,cudnn
  timeout -s INT -k 5 150 $B/$v/fa-bench sweep --config configs/paper-fwd.json --backend cuda --seqlen 512:16384:x2 \
    --kernels $k --max-seconds 0.2 --min-samples 10 --max-check-rows 256 \
    --json $R/$v.json --csv $R/$v.csv > $R/$v.md 2> $R/$v.err; pack $v $?
done
tail -3 $R/check.md; tail -2 $R/check.err
python3 - $R <<'PY'
import csv, sys
R = sys.argv[1]; t = {}
for v in ('new', 'old'):
    for r in csv.DictReader(open(f'{R}/{v}.csv')):
        if r['status'] != 'ok': print(v, r['kernel'], r['status'], r['reason'][:80]); continue
        t.setdefault((int(r['head_dim']), r['causal'], int(r['seqlen_q'])), {})[(v, r['family'])] = (float(r['tflops']), 'T' if 'throttled' in r['reason'] else '')
print('hd causal seqlen fa3_new fa3_old cudnn new/old new/cudnn old/cudnn')
for k in sorted(t):
    d = t[k]; n = d.get(('new', 'fa3'), (0, ''))[0]; o = d.get(('old', 'fa3'), (0, ''))[0]; c = d.get(('new', 'cudnn'), (0, ''))[0]
    fl = ''.join(x[1] for x in d.values())
    print(*k, round(n, 1), round(o, 1), round(c, 1), round(n / o, 3) if o else '', round(n / c, 3) if c else '', round(o / c, 3) if c else '', fl)
PY
