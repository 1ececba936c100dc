#!/usr/bin/env bash
# One run on a GPU machine that checks, then times: the paper-fwd sweep, the
# PyTorch SDPA peers on the same points, the same points' backward (ours and
# PyTorch's), fa-check on every cuda kernel (forward and backward), the memory
# sweep up to `oom`, GPT-2 medium (fwd, bwd, fwd+bwd) with DRAM counters, and a
# SIGINT check.
# From the repository root:
#   scripts/gpu_run.sh BIN_DIR OUT_DIR
# BIN_DIR holds fa-bench and fa-check (built there or on another machine:
# docs/DEVICE_RUN.md). Every log, JSON and CSV goes to OUT_DIR/run; after each
# step the folder is also packed into OUT_DIR/run.tar.gz (ARCHIVE=0: not), one
# file to copy back that holds every finished step even if a later one is cut.
# Each step has a time limit in seconds (T_SWEEP, T_TORCH, T_BWD, T_CHECK,
# T_MEMORY, T_GPT2, T_INTERRUPT) so one slow step cannot starve the rest; the
# sweeps' files hold every finished row when cut. STEPS picks steps (default:
# all, in this order): sweep torch bwd check memory gpt2 interrupt (BWD_KERNELS
# picks bwd's kernels [fa2,fa3,cudnn,fa1,standard]). One more,
# not in the default list since it needs two GPUs or more: devices (the
# paper-fwd sweep on one GPU, then with --devices all; T_DEVICES caps each,
# DEVICES_KERNELS picks the kernels [fa1,fa2,fa3,cudnn,standard], BASELINE_BIN
# names another build whose one-GPU run of the same sweep comes first); and
# fp8 (the paper-fwd sweep in e4m3 with fa3 and cudnn, whose cudnn.e4m3 is
# cuDNN's FP8 forward validated and timed in the sweep; the same forward timed on
# its own by cudnn_fp8_check from BIN_DIR, the cross-check; fa-check on the e4m3
# kernels, and the FP8 error table: normal and outlier inputs, per-tensor,
# per-head and per-block descales, with and without the Hadamard rotation;
# FP8_ERROR_SCALINGS picks the table's columns [tensor head head-hadamard block
# block-hadamard]; FP8_STEPS picks the parts [sweep peer check table]; T_FP8 caps
# the sweep).
# cuDNN: CUDNN_LIB_DIR is put first on LD_LIBRARY_PATH; by default it is the
# copy inside PyTorch's environment (nvidia/cudnn/lib), so our cudnn peer and
# torch.cudnn run the same library; CUDNN_LIB_DIR= (empty) keeps the system's.
set -uo pipefail
BIN=$1
OUT=$2
R=$OUT/run
mkdir -p "$R"
if [ -z "${CUDNN_LIB_DIR+set}" ]; then
  CUDNN_LIB_DIR=$(python3 -c 'import os, nvidia.cudnn; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib"))' 2>/dev/null) ||
    CUDNN_LIB_DIR=
fi
if [ -n "$CUDNN_LIB_DIR" ]; then
  export LD_LIBRARY_PATH=$CUDNN_LIB_DIR:${LD_LIBRARY_PATH:-}
fi
export PYTHONUNBUFFERED=1
STEPS=" ${STEPS:-sweep torch bwd check memory gpt2 interrupt} "
want() { [[ "$STEPS" == *" $1 "* ]]; }
step() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$R/steps.log" >&2; }
pack() {
  echo "   $1 exit $2" | tee -a "$R/steps.log" >&2
  [ "${ARCHIVE:-1}" = 0 ] || tar -czf "$OUT/run.tar.gz" -C "$OUT" run
}

step "device"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw \
  --format=csv > "$R/gpu.csv" 2>&1
"$BIN/fa-bench" --version > "$R/version.txt" 2>&1
if [ -n "$CUDNN_LIB_DIR" ]; then
  echo "   cuDNN first on LD_LIBRARY_PATH: $CUDNN_LIB_DIR ($(cd "$CUDNN_LIB_DIR" 2>/dev/null && ls libcudnn.so* | tr '\n' ' '))"
else
  echo "   cuDNN: the system loader's choice"
fi | tee -a "$R/steps.log" >&2
pack device 0

if want sweep; then
step "paper-fwd sweep (bf16, batch*seqlen 16384, hidden 2048): validate then time"
timeout -s INT -k 10 "${T_SWEEP:-170}" "$BIN/fa-bench" sweep --config configs/paper-fwd.json --backend cuda \
  --seqlen "${PAPER_SEQLEN:-512:16384:x2}" --kernels fa1,fa2,fa3,cudnn,standard --max-seconds 0.2 --min-samples 10 \
  --json "$R/paper-fwd.json" --csv "$R/paper-fwd.csv" > "$R/paper-fwd.md" 2> "$R/paper-fwd.err"
pack paper-fwd $?
fi

# The peers' points: configs/paper-fwd.json with the sweeps' seqlen axis.
points() {
  python3 -c "import json,sys; c=json.load(open('configs/paper-fwd.json')); c['seqlen']=sys.argv[1]; json.dump(c,open('$R/paper-fwd-points.json','w'))" \
    "${PAPER_SEQLEN:-512:16384:x2}"
}

if want torch; then
step "PyTorch SDPA peers (flash, cudnn) on the same points"
points
timeout -s INT -k 10 "${T_TORCH:-50}" python3 scripts/torch_peers.py "$R/paper-fwd-points.json" \
  --out "$R/torch-paper-fwd.csv" --backends flash,cudnn --max-seconds 0.2 > "$R/torch.log" 2>&1
pack torch_peers $?
fi

if want bwd; then
step "paper-fwd points, backward: validate (float64 gradients) then time; PyTorch's backward on the same points"
timeout -s INT -k 10 "${T_BWD:-600}" "$BIN/fa-bench" sweep --config configs/paper-fwd.json --backend cuda --pass bwd \
  --seqlen "${PAPER_SEQLEN:-512:16384:x2}" --kernels "${BWD_KERNELS:-fa2,fa3,cudnn,fa1,standard}" --max-seconds 0.2 --min-samples 10 \
  --json "$R/paper-bwd.json" --csv "$R/paper-bwd.csv" > "$R/paper-bwd.md" 2> "$R/paper-bwd.err"
pack paper-bwd $?
points
timeout -s INT -k 10 "${T_TORCH:-50}" python3 scripts/torch_peers.py "$R/paper-fwd-points.json" --pass bwd \
  --out "$R/torch-paper-bwd.csv" --backends flash,cudnn --max-seconds 0.2 > "$R/torch-bwd.log" 2>&1
pack torch_peers_bwd $?
fi

if want check; then
step "fa-check on every cuda kernel, forward and backward"
timeout -s INT -k 10 "${T_CHECK:-300}" "$BIN/fa-check" --backend cuda --kernels cuda ${FA_CHECK_FLAGS:-} \
  --json "$R/check.json" --csv "$R/check.csv" > "$R/check.md" 2> "$R/check.err"
pack fa-check $?
fi

if want memory; then
step "memory sweep (fp16, batch 1, 32 heads, hd128)"
timeout -s INT -k 10 "${T_MEMORY:-150}" "$BIN/fa-bench" sweep --config configs/memory.json --backend cuda \
  --seqlen "${MEMORY_SEQLEN:-512:65536:x2}" --kernels "${MEMORY_KERNELS:-standard,fa1,fa2,fa3,cudnn}" \
  --max-seconds 0.1 --min-samples 3 --warmup 1 --max-check-rows 256 \
  --json "$R/memory.json" --csv "$R/memory.csv" > "$R/memory.md" 2> "$R/memory.err"
pack memory $?
fi

if want gpt2; then
step "GPT-2 medium, fwd, bwd and fwd+bwd, with DRAM counters"
timeout -s INT -k 10 "${T_GPT2:-120}" "$BIN/fa-bench" sweep --config configs/paper-gpt2-medium.json --backend cuda \
  --max-seconds 0.2 --max-check-rows 256 \
  --json "$R/gpt2.json" --csv "$R/gpt2.csv" > "$R/gpt2.md" 2> "$R/gpt2.err"
pack gpt2 $?
fi

if want devices; then
step "paper-fwd sweep on GPU 0, then on every GPU (--devices all): wall time ratio and the compare gate"
dev_sweep() {  # NAME BIN_DIR [flags]: the same sweep and seed each time, wall seconds to $R/NAME.seconds
  local name=$1 bin=$2 t0 rc
  shift 2
  t0=$(date +%s.%N)
  timeout -s INT -k 10 "${T_DEVICES:-600}" "$bin/fa-bench" sweep --config configs/paper-fwd.json --backend cuda \
    --seqlen "${PAPER_SEQLEN:-512:16384:x2}" --kernels "${DEVICES_KERNELS:-fa1,fa2,fa3,cudnn,standard}" \
    --max-seconds 0.2 --min-samples 10 \
    --seed 1234 "$@" --json "$R/$name.json" --csv "$R/$name.csv" > "$R/$name.md" 2> "$R/$name.err"
  rc=$?
  python3 -c "import sys,time; print(f'{time.time() - float(sys.argv[1]):.1f}')" "$t0" > "$R/$name.seconds"
  return $rc
}
if [ -n "${BASELINE_BIN:-}" ]; then
  dev_sweep devices-baseline "$BASELINE_BIN"
  echo "   baseline ($BASELINE_BIN) on one GPU: exit $?, $(cat "$R/devices-baseline.seconds") s" | tee -a "$R/steps.log"
fi
dev_sweep devices-one "$BIN"
rc_one=$?
dev_sweep devices-all "$BIN" --devices all
rc_all=$?
"$BIN/fa-bench" compare "$R/devices-one.json" "$R/devices-all.json" --md "$R/devices-compare.md" \
  > /dev/null 2> "$R/devices-compare.err"
rc_cmp=$?
python3 -c "
import json, sys
one, both = (float(open(f'{sys.argv[1]}/devices-{n}.seconds').read()) for n in ('one', 'all'))
gpus = len(json.load(open(f'{sys.argv[1]}/devices-all.json'))['metadata'].get('devices', []))
print(f'   one GPU {one:.1f} s (exit {sys.argv[2]}), {gpus} GPUs {both:.1f} s (exit {sys.argv[3]}): '
      f'{both / one:.2f}x the wall time; compare exit {sys.argv[4]}')" "$R" "$rc_one" "$rc_all" "$rc_cmp" 2>&1 |
  tee -a "$R/steps.log"
pack devices $(( rc_one || rc_all || rc_cmp ))
fi

if want fp8; then
step "paper-fwd sweep in e4m3 (fa3, cudnn), cuDNN's FP8 forward on its own, fa-check e4m3, the FP8 error table"
FP8_STEPS=" ${FP8_STEPS:-sweep peer check table} "
fp8_want() { [[ "$FP8_STEPS" == *" $1 "* ]]; }
if fp8_want sweep; then
# 420 s: the sweep's host side alone (quantized inputs, the float64 reference, validation)
# took 287 s of the 300 that cut c6cc081's published run short (67 of 72 rows).
timeout -s INT -k 10 "${T_FP8:-420}" "$BIN/fa-bench" sweep --config configs/paper-fwd.json --backend cuda --dtype e4m3 \
  --seqlen "${PAPER_SEQLEN:-512:16384:x2}" --kernels fa3,cudnn --max-seconds 0.2 --min-samples 10 \
  --json "$R/paper-fwd-e4m3.json" --csv "$R/paper-fwd-e4m3.csv" > "$R/paper-fwd-e4m3.md" 2> "$R/paper-fwd-e4m3.err"
pack paper-fwd-e4m3 $?
fi
if fp8_want peer; then
# The cross-check: cuDNN's FP8 forward in its own process, at the paper's shapes
# with the L2 flushed before each sample; its times should match the sweep's
# cudnn.e4m3 rows (which scripts/summarize.py and plot.py prefer where both exist).
timeout -s INT -k 10 "${T_FP8_PEER:-150}" "$BIN/cudnn_fp8_check" time --csv="$R/cudnn-fp8.csv" > "$R/cudnn-fp8.txt" 2>&1
pack cudnn_fp8_check $?
fi
if fp8_want check; then
timeout -s INT -k 10 "${T_CHECK:-300}" "$BIN/fa-check" --backend cuda --kernels 'fa3.e4m3.*,cudnn.e4m3' \
  --json "$R/check-e4m3.json" --csv "$R/check-e4m3.csv" > "$R/check-e4m3.md" 2> "$R/check-e4m3.err"
pack fa-check-e4m3 $?
fi
fp8_want table &&
for dist in normal outliers; do
  for scaling in ${FP8_ERROR_SCALINGS:-tensor head head-hadamard block block-hadamard}; do
    flags="--fp8-scaling ${scaling%-hadamard}"
    [[ "$scaling" == *-hadamard ]] && flags="$flags --fp8-hadamard"
    # shellcheck disable=SC2086
    timeout -s INT -k 10 60 "$BIN/fa-bench" sweep --config configs/paper-fwd.json --backend cuda --dtype e4m3 \
      --kernels fa3 --head-dim 128 --seqlen 4096 --distribution "$dist" $flags --max-seconds 0.02 --seed 1234 \
      --json "$R/fp8-error-$dist-$scaling.json" --csv "$R/fp8-error-$dist-$scaling.csv" \
      > "$R/fp8-error-$dist-$scaling.md" 2> "$R/fp8-error-$dist-$scaling.err"
    pack "fp8-error-$dist-$scaling" $?
  done
done
fi

if want interrupt; then
step "SIGINT during a GPU sweep: files stay valid, run_status says interrupted"
timeout -s INT -k 10 "${T_INTERRUPT:-8}" "$BIN/fa-bench" sweep --config configs/paper-fwd.json --backend cuda \
  --kernels fa2 --json "$R/interrupt.json" --csv "$R/interrupt.csv" > "$R/interrupt.md" 2> "$R/interrupt.err"
rc=$?
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print('   exit', sys.argv[2], 'run_status', d['metadata']['run_status'], 'rows', len(d['results']))" \
  "$R/interrupt.json" "$rc" 2>&1 | tee -a "$R/steps.log"
pack interrupt $rc
fi

echo
tail -4 "$R/check.md" 2>/dev/null
if [[ -f "$R/paper-fwd.csv" ]]; then
  python3 scripts/summarize.py "$R/paper-fwd.csv" "$R/torch-paper-fwd.csv" \
    --ratio fa2/torch.flash --ratio fa3/cudnn --ratio cudnn/torch.cudnn --ratio fa1/fa2
fi
if [[ -f "$R/paper-bwd.csv" ]]; then
  echo
  python3 scripts/summarize.py "$R/paper-bwd.csv" "$R/torch-paper-bwd.csv" --pass bwd \
    --ratio fa2/torch.flash --ratio fa3/cudnn --ratio cudnn/torch.cudnn --ratio fa1/fa2 --ratio fa3/fa2
fi
if [[ -f "$R/gpt2.csv" ]]; then
  echo
  python3 scripts/tables.py gpt2 "$R/gpt2.csv"
fi
