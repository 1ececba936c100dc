#!/usr/bin/env bash
# One device call that checks, then times, everything the GPU issues ask for.
# Run on the H200 machine from the repository root:
#   scripts/h200_run.sh BIN_DIR OUT_DIR
# BIN_DIR holds fa-bench and fa-check built here (sm_90a); OUT_DIR gets every
# log, JSON and CSV, packed into run.tar.gz (the device tool returns <= 8 files),
# and a short table is printed last.
set -uo pipefail
BIN=$1
OUT=$2
mkdir -p "$OUT/run"
R=$OUT/run
# The same cuDNN (9.19) PyTorch uses, so the cudnn peer and torch.cudnn compare like for like.
export LD_LIBRARY_PATH=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1
step() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$R/steps.log" >&2; }

step "device"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
  --format=csv > "$R/gpu.csv" 2>&1
git rev-parse HEAD > "$R/commit.txt" 2>/dev/null || true
"$BIN/fa-bench" --version >> "$R/commit.txt" 2>&1

step "fa-check on every cuda kernel"
"$BIN/fa-check" --backend cuda --kernels cuda ${FA_CHECK_FLAGS:---quick} \
  --json "$R/check.json" --csv "$R/check.csv" > "$R/check.md" 2> "$R/check.err"
echo "fa-check exit $?" | tee -a "$R/steps.log"

step "paper-fwd sweep (bf16, batch*seqlen 16384, hidden 2048)"
"$BIN/fa-bench" sweep --config configs/paper-fwd.json --backend cuda \
  --kernels fa1,fa2,fa3,cudnn,standard --max-seconds 0.3 --min-samples 10 \
  --json "$R/paper-fwd.json" --csv "$R/paper-fwd.csv" > "$R/paper-fwd.md" 2> "$R/paper-fwd.err"
echo "paper-fwd exit $?" | tee -a "$R/steps.log"

step "PyTorch SDPA peers on the same points"
python3 scripts/torch_peers.py configs/paper-fwd.json --out "$R/torch-paper-fwd.csv" \
  --backends flash,cudnn --max-seconds 0.3 > "$R/torch.log" 2>&1
echo "torch_peers exit $?" | tee -a "$R/steps.log"

step "memory sweep (fp16, batch 1, 32 heads, hd128, seqlen 512..65536)"
"$BIN/fa-bench" sweep --config configs/memory.json --backend cuda --kernels standard,fa2,fa3,cudnn \
  --max-seconds 0.2 --min-samples 5 --max-check-rows 256 \
  --json "$R/memory.json" --csv "$R/memory.csv" > "$R/memory.md" 2> "$R/memory.err"
echo "memory exit $?" | tee -a "$R/steps.log"

step "GPT-2 medium with DRAM counters"
"$BIN/fa-bench" sweep --config configs/paper-gpt2-medium.json --backend cuda \
  --max-seconds 0.3 --max-check-rows 256 \
  --json "$R/gpt2.json" --csv "$R/gpt2.csv" > "$R/gpt2.md" 2> "$R/gpt2.err"
echo "gpt2 exit $?" | tee -a "$R/steps.log"

step "pack"
tar -czf "$OUT/run.tar.gz" -C "$OUT" run
echo
grep -E "passed|failed|FAIL" "$R/check.md" | tail -3
python3 scripts/summarize.py "$R/paper-fwd.csv" "$R/torch-paper-fwd.csv" \
  --ratio fa2/torch.flash --ratio fa3/cudnn --ratio cudnn/torch.cudnn --ratio fa1/fa2
