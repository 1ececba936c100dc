#!/usr/bin/env bash
# Session 5, dev call 3. (1) S5-3: fa3 with the short-causal tile order (new/, fa3-only
# build of branch fa3-short-causal) against deb3351 (.devbuild/s5final): fa-check fa3.*,
# then paper-fwd 512-4096 fa3 alternating old, new, old, new (non-causal too: unchanged
# code, a control for the noise). (2) ncu DRAM bytes and SM-active spread at hd256 causal
# 512, old and new. (3) ncu per-SASS-instruction stall samples of fa3 at hd128
# non-causal 512 (where fa3 is 0.85 of cuDNN with the same DRAM bytes).
set -uo pipefail
tar -xzf .devbuild/s5c/bins.tar.gz -C .devbuild  # binaries travel packed (carry limit)
O=.devbuild/s5final; N=.devbuild/s5c/new; R=$OUT/c; mkdir -p $R
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
pack() { echo "== $1 exit $2 $(date -u +%T)" | tee -a $R/steps.log; tar -czf $OUT/c.tar.gz -C $OUT c; }
KERNELS=fa3 CHECK_KERNELS='fa3.*' SEQLEN=512:4096:x2 T_RUN=80 bash scripts/dev/ab_sweep.sh $O $N $R/ab; pack ab $?
point() { echo --config configs/paper-fwd.json --backend cuda --seqlen 512 --head-dim $1 --causal $2 \
  --kernels fa3 --max-seconds 0.02 --min-samples 1 --warmup 0 --max-check-rows 64; }
for v in old new; do b=$O; [ $v = new ] && b=$N
  timeout -k 5 60 $NCU --clock-control none --kernel-name regex:fa3_fwd --launch-count 1 \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_active.min \
    $b/fa-bench sweep $(point 256 true) > $R/ncu_dram_$v.txt 2>&1; pack ncu_dram_$v $?
done
timeout -k 5 90 $NCU --clock-control none --kernel-name regex:fa3_fwd --launch-count 1 --import-source no \
  --section SourceCounters --section WarpStateStats -o $R/src_hd128 $N/fa-bench sweep $(point 128 false) > $R/src_hd128.log 2>&1
pack src_profile $?
$NCU --import $R/src_hd128.ncu-rep --page source --csv --print-source sass > $R/src_hd128_sass.csv 2> $R/src_hd128_sass.err
pack src_csv $?
$NCU --help | grep -A4 -E 'print-source|--page' > $R/ncu_help.txt 2>&1
rm -f $R/src_hd128.ncu-rep; pack done 0
cat $R/ab/ab.md
for v in old new; do echo "== $v"; grep -E 'gpu__time|dram__bytes|hit_rate|cycles_active' $R/ncu_dram_$v.txt; done
wc -l $R/src_hd128_sass.csv; head -c 600 $R/src_hd128_sass.csv; tail -3 $R/src_hd128_sass.err
