#!/usr/bin/env bash
# Session 5, dev call 1: two fa1 candidates, each A/B'd against 48972af in the same call.
# 1) branch fa1-load-o (compile-time trip counts for the O_i, m_i/l_i prefetch copies):
#    fa-check on every fa1 variant, then paper-fwd 2048-16384 fa1 old,new,old,new.
# 2) branch fa1-dealing (mirrored dealing of Q blocks to splits, no early K): same sweep,
#    4096-16384, fa-check on fa1 too.
# Run: bash .devbuild/s5a/run.sh, carry .devbuild/s5a (bins.tar.gz holds both branches' binaries and the 48972af one)
set -uo pipefail
tar -xzf .devbuild/s5a/bins.tar.gz -C .devbuild  # the binaries travel packed (carry limit)
L=.devbuild/fa1-load-o; D=.devbuild/fa1-dealing
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > $OUT/gpu.csv 2>&1
bash scripts/dev/ab_sweep.sh $L/old $L/new $OUT/load-o
tar -czf $OUT/load-o.tar.gz -C $OUT load-o
SEQLEN=4096:16384:x2 bash scripts/dev/ab_sweep.sh $L/old $D/new $OUT/dealing
tar -czf $OUT/dealing.tar.gz -C $OUT dealing
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,power.draw --format=csv >> $OUT/gpu.csv 2>&1
echo "=== load-o"; cat $OUT/load-o/ab.md; echo "=== dealing"; cat $OUT/dealing/ab.md
