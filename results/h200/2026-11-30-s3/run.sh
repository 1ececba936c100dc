#!/usr/bin/env bash
# Second integrated call (session 3): scripts/h200_run.sh steps sweep, torch, check with the
# binaries built from a clean clone, then fa3 from the session-2 binary (old/, commit 57d8677)
# on the causal points 512-4096 (the first call's same step ran out of time before them).
set -uo pipefail
B=.devbuild/s3final2
STEPS="sweep torch check" T_SWEEP=220 T_TORCH=40 T_CHECK=40 bash scripts/h200_run.sh $B $OUT
R=$OUT/run
export LD_LIBRARY_PATH=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:${LD_LIBRARY_PATH:-}
timeout -s INT -k 5 45 $B/old/fa-bench sweep --config configs/paper-fwd.json --backend cuda --seqlen 512:4096:x2 \
  --causal true --kernels fa3 --max-seconds 0.2 --min-samples 10 \
  --json $R/fa3-s2.json --csv $R/fa3-s2.csv > $R/fa3-s2.md 2> $R/fa3-s2.err
echo "   fa3-s2 exit $?" | tee -a $R/steps.log; tar -czf $OUT/run.tar.gz -C $OUT run
cat $R/steps.log; tail -2 $R/check.md
python3 scripts/summarize.py $R/paper-fwd.csv $R/torch-paper-fwd.csv --ratio fa2/torch.flash --ratio fa3/cudnn \
  --ratio cudnn/torch.cudnn --ratio fa1/fa2 2>&1 | tail -40
