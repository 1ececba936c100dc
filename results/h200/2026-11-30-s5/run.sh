#!/usr/bin/env bash
# Integrated call (session 5) at deb3351: every scripts/h200_run.sh step with the binaries
# built from a clean clone, then fa1 from the 48972af binary (old/) on paper-fwd 2048-16384,
# so fa1's change (S5-1) is measured against its predecessor in the same call.
set -uo pipefail
B=.devbuild/s5final
T_SWEEP=220 T_TORCH=40 T_CHECK=40 T_MEMORY=80 T_GPT2=30 bash scripts/h200_run.sh $B $OUT > $OUT/h200_run.log 2>&1
R=$OUT/run
timeout -s INT -k 5 70 $B/old/fa-bench sweep --config configs/paper-fwd.json --backend cuda --seqlen 2048:16384:x2 \
  --kernels fa1 --max-seconds 0.2 --min-samples 10 \
  --json $R/fa1-48972af.json --csv $R/fa1-48972af.csv > $R/fa1-48972af.md 2> $R/fa1-48972af.err
echo "   fa1-48972af exit $?" | tee -a $R/steps.log; tar -czf $OUT/run.tar.gz -C $OUT run
cat $R/steps.log; tail -2 $R/check.md
python3 scripts/summarize.py $R/paper-fwd.csv $R/torch-paper-fwd.csv --ratio fa2/torch.flash --ratio fa3/cudnn \
  --ratio cudnn/torch.cudnn --ratio fa1/fa2 2>&1 | tail -42
python3 - $R <<'PY'
import csv, sys
R = sys.argv[1]; t = {}
for f, tag in (('paper-fwd.csv', 'new'), ('fa1-48972af.csv', 'old')):
    for r in csv.DictReader(open(f'{R}/{f}')):
        if r['family'] in ('fa1', 'fa2') and r['status'] == 'ok':
            t.setdefault((int(r['head_dim']), r['causal'], int(r['seqlen_q'])), {})[(tag, r['family'])] = float(r['tflops'])
print('hd causal seqlen fa1_new fa1_48972af fa2 new/old new/fa2')
for k in sorted(t):
    d = t[k]; n = d.get(('new', 'fa1')); o = d.get(('old', 'fa1')); f = d.get(('new', 'fa2'))
    if n and o and f: print(*k, round(n, 1), round(o, 1), round(f, 1), round(n / o, 3), round(n / f, 3))
PY
