#!/usr/bin/env bash
# Dev call 1 (session 3): fa1 split-column tiles (hd256 64x128.w8, hd128 64x256.w8) --
# fa-check on every fa1 variant (full suite), then fa1 tiles vs fa2 default, paper-fwd hd128/256.
set -uo pipefail
B=.devbuild/s3a; R=$OUT/run; mkdir -p $R
pack() { echo "== $1 exit $2 $(date -u +%T)" | tee -a $R/steps.log; tar -czf $OUT/run.tar.gz -C $OUT run; }
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv > $R/gpu.csv 2>&1
timeout -s INT -k 5 100 $B/fa-check --backend cuda --kernels 'fa1.*' \
  --json $R/check.json --csv $R/check.csv > $R/check.md 2> $R/check.err; pack check $?
timeout -s INT -k 5 230 $B/fa-bench sweep --config configs/paper-fwd.json --backend cuda --seqlen 512:16384:x2 \
  --head-dim 128,256 --kernels fa1,fa2 --block 64x128,64x256,128x32,128x64 --max-seconds 0.2 --min-samples 10 \
  --max-check-rows 256 --json $R/fa1.json --csv $R/fa1.csv > $R/fa1.md 2> $R/fa1.err; pack fa1 $?
tail -3 $R/check.md; tail -3 $R/check.err; grep -c . $R/check.csv
python3 - $R/fa1.csv <<'PY'
import csv, sys, collections
rows = list(csv.DictReader(open(sys.argv[1])))
key = lambda r: (r['head_dim'], r['causal'], int(r['seqlen_q']))
dflt = lambda r: (r['block_m'], r['block_n'], r['warps']) == ('128', '64', '4' if r['head_dim'] == '128' else '8')
fa2 = {key(r): float(r['tflops']) for r in rows if r['family'] == 'fa2' and r['tflops'] and dflt(r)}
for r in sorted(rows, key=lambda r: (r['kernel'], key(r))):
    if r['family'] != 'fa1' or not r['tflops']: continue
    f = fa2.get(key(r))
    print(r['kernel'], *key(r), r['tflops'], f, round(float(r['tflops']) / f, 3) if f else '', r['status'], r['reason'][:60])
PY
