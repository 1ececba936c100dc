#!/usr/bin/env bash
# Session 5, dev call 2: where fa3's time goes at seqlen 512 (0.69-0.93 of cuDNN there).
# Nsight Compute (clock control off) on our fa3 and on cuDNN's kernel at three short points
# of paper-fwd (bf16, batch 32, hidden 2048): hd256 causal, hd128 non-causal, hd64 causal.
# First a listing pass (kernel names and durations of one cudnn sweep) so cuDNN's kernel
# is found even if its name misses the regex below. Binaries: .devbuild/s5final (deb3351).
set -uo pipefail
B=.devbuild/s5final; R=$OUT/prof; mkdir -p $R
export LD_LIBRARY_PATH=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:${LD_LIBRARY_PATH:-}
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
pack() { echo "== $1 exit $2 $(date -u +%T)" | tee -a $R/steps.log; tar -czf $OUT/prof.tar.gz -C $OUT prof; }
point() { echo --config configs/paper-fwd.json --backend cuda --seqlen 512 --head-dim $1 --causal $2 \
  --max-seconds 0.02 --min-samples 1 --warmup 0 --max-check-rows 64; }
timeout -k 5 60 $NCU --clock-control none --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size \
  --launch-count 40 $B/fa-bench sweep $(point 256 true) --kernels cudnn > $R/list_cudnn.txt 2>&1; pack list $?
for hc in "256 true" "128 false" "64 true"; do
  set -- $hc
  for k in fa3 cudnn; do
    re='fa3_fwd'; [ $k = cudnn ] && re='sdpa|fmha|fprop|flash|attn'
    timeout -k 5 75 $NCU --clock-control none --kernel-name regex:"$re" --launch-count 1 \
      --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats \
      --section SchedulerStats --section MemoryWorkloadAnalysis \
      --metrics 'sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_active.min,sm__cycles_elapsed.max,regex:sm__pipe_tensor.*cycles_active\.avg\.pct_of_peak_sustained_(active|elapsed),regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' \
      $B/fa-bench sweep $(point $1 $2) --kernels $k > $R/ncu_${k}_hd$1_$2.txt 2>&1; pack ncu_${k}_hd$1_$2 $?
  done
done
grep -E '^\s+[a-zA-Z_].*\(|gpu__time_duration' $R/list_cudnn.txt | head -40
for f in $R/ncu_*.txt; do echo "=== $(basename $f)"
  grep -E '^  [a-zA-Z_]+.*\(|Duration|Grid Size|Block Size|Registers Per|Waves Per SM|Compute \(SM\) Throughput|Memory Throughput|Eligible Warps|No Eligible|sm__cycles_active|sm__cycles_elapsed.max|pipe_tensor' $f | head -24
  grep -E 'issue_stalled' $f | awk '{print $NF, $1}' | sort -gr | head -6; done
