#!/usr/bin/env bash
# The ring attention forward on a machine with 2 GPUs (docs/RING.md): tests/gpu/standalone/ring_check's
# `check` cases first (non-causal, causal, GQA, MQA with every row, one GPU without
# NCCL, and two planted faults that must fail), then `time` at 8K, 32K and 64K
# tokens per GPU, hd128, bf16, both masks, the SMs left to NCCL at 32K, and one GPU
# through the same driver (the cost of the steps and merges alone). Logs and
# timeline CSVs go to OUT_DIR; a short table is printed last.
#   scripts/dev/ring_device.sh BUILD_DIR OUT_DIR
# BUILD_DIR: the build folder (ring_check in it or in its tests/). NCCL: $NCCL_LIB if
# set, else the first libnccl.so.2 found in PyTorch's environment, the CUDA toolkit
# or the system, else the loader's own search (LD_LIBRARY_PATH).
# Environment: HEADS [16], T_CHECK [300] T_TIME [400] seconds per run.
# Exit: 0 every check case gave its expected result, 1 otherwise, 2 usage.
set -uo pipefail
build=${1:?usage: $0 BUILD_DIR OUT_DIR}
out=${2:?usage: $0 BUILD_DIR OUT_DIR}
bin=$build/ring_check
[ -x "$bin" ] || bin=$build/tests/ring_check
[ -x "$bin" ] || { echo "ring_device.sh: no ring_check in $build or $build/tests" >&2; exit 2; }
mkdir -p "$out" || exit 2
heads=${HEADS:-16}

nccl=${NCCL_LIB:-}
if [ -z "$nccl" ]; then
  py_nccl=$(python3 -c 'import os, nvidia.nccl as n; print(os.path.join(list(n.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null)
  for c in "$py_nccl" /opt/torch/.venv/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2 \
           /usr/local/cuda/lib/libnccl.so.2 /usr/local/cuda/lib64/libnccl.so.2 /usr/lib/x86_64-linux-gnu/libnccl.so.2; do
    if [ -n "$c" ] && [ -f "$c" ]; then nccl=$c; break; fi
  done
fi
nccl_args=()
[ -n "$nccl" ] && nccl_args=(--nccl-lib "$nccl")
{
  echo "ring_check: $bin"
  echo "nccl: ${nccl:-none found, so the dynamic loader searches}"
  nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm --format=csv 2>&1
  nvidia-smi topo -m 2>&1
  git -C "$(dirname "$0")" rev-parse HEAD 2>/dev/null
} > "$out/machine.txt"

status=0
checks=()
# check NAME EXPECTED_EXIT ARGS...
check() {
  local name=$1 want=$2
  shift 2
  timeout "${T_CHECK:-300}" "$bin" check "${nccl_args[@]}" "$@" > "$out/check.$name.txt" 2>&1
  local rc=$?
  local verdict=ok
  [ "$rc" -eq "$want" ] || { verdict=UNEXPECTED; status=1; }
  checks+=("| $name | $* | $want | $rc | $verdict |")
  echo "check $name: exit $rc (expected $want) $verdict"
}
check noncausal 0 --gpus 2 --seqlen-per-gpu 2048 --heads "$heads"
# The same case with NCCL's own log of its set-up: which transport (NVLink P2P,
# shared memory through the host) carries the ring's send/recv, whose bandwidth the
# timings report.
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,P2P,NET check nccl-transport 0 --gpus 2 --seqlen-per-gpu 2048 --heads "$heads"
check causal 0 --gpus 2 --seqlen-per-gpu 2048 --heads "$heads" --causal
check gqa 0 --gpus 2 --seqlen-per-gpu 2048 --heads "$heads" --kv-heads 4
check gqa-causal 0 --gpus 2 --seqlen-per-gpu 2048 --heads "$heads" --kv-heads 4 --causal
check mqa-every-row 0 --gpus 2 --seqlen-per-gpu 384 --batch 2 --heads 4 --kv-heads 1 --causal --rows 768
check long-causal 0 --gpus 2 --seqlen-per-gpu 16384 --heads 8 --causal --rows 64
check one-gpu 0 --gpus 1 --seqlen-per-gpu 2048 --heads "$heads" --causal
check fault-lse-sign 1 --gpus 2 --seqlen-per-gpu 2048 --heads "$heads" --fault lse-sign
check fault-skip-step 1 --gpus 2 --seqlen-per-gpu 2048 --heads "$heads" --causal --fault skip-step

# SM clocks, power and temperature once a second while the timings run: a
# throttled run shows there (the power cap lowers the clock on long runs).
nvidia-smi --query-gpu=timestamp,index,clocks.sm,power.draw,temperature.gpu --format=csv -lms 1000 \
  > "$out/clocks.csv" 2>&1 &
clock_logger=$!

# time NAME ARGS...
time_case() {
  local name=$1
  shift
  timeout "${T_TIME:-400}" "$bin" time "${nccl_args[@]}" --csv "$out/timeline.$name.csv" "$@" > "$out/time.$name.txt" 2>&1
  echo "time $name: exit $?"
}
for s in 8192 32768 65536; do
  for mask in noncausal causal; do
    extra=()
    [ "$mask" = causal ] && extra=(--causal)
    time_case "$mask.$s" --gpus 2 --seqlen-per-gpu "$s" --heads "$heads" "${extra[@]}"
  done
done
# One GPU through the same driver (no NCCL): what the steps and merges cost by themselves.
time_case "one-gpu-noncausal.32768" --gpus 1 --seqlen-per-gpu 32768 --heads "$heads"
time_case "one-gpu-causal.32768" --gpus 1 --seqlen-per-gpu 32768 --heads "$heads" --causal
for sms in 4 8; do
  for mask in noncausal causal; do
    extra=()
    [ "$mask" = causal ] && extra=(--causal)
    time_case "$mask.32768.comm-sms$sms" --gpus 2 --seqlen-per-gpu 32768 --heads "$heads" --comm-sms "$sms" --no-whole "${extra[@]}"
  done
done

kill "$clock_logger" 2>/dev/null

python3 - "$out" > "$out/time_table.md" <<'PY'
import glob, os, re, sys
out = sys.argv[1]
print("| run | ring ms | aggregate TFLOP/s | per-GPU TFLOP/s | fa3 1-GPU TFLOP/s | efficiency | bar | "
      "fa3 whole on GPU 0 TFLOP/s | NCCL GB/s | exposed comm ms | comm SMs |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
def key(path):
    parts = os.path.basename(path)[5:-4].split(".")
    return (parts[0], int(parts[1]), parts[2:])
for path in sorted(glob.glob(os.path.join(out, "time.*.txt")), key=key):
    name = os.path.basename(path)[5:-4]
    line = next((l for l in open(path, errors="replace") if l.startswith("summary:")), None)
    if line is None:
        print(f"| {name} | no result, see time.{name}.txt |  |  |  |  |  |  |  |  |  |")
        continue
    kv = dict(re.findall(r'(\w+)=("[^"]*"|\S+)', line))
    causal = kv["causal"] == "1"
    bar = 0.85 if causal else 0.90
    eff = float(kv["efficiency"])
    verdict = "-"
    if int(kv["seqlen_per_gpu"]) >= 32768 and kv["gpus"] != "1":
        verdict = ("meets " if eff >= bar else "BELOW ") + str(bar)
    print("| %s | %.3f | %.1f | %.1f | %.1f | %.3f | %s | %s | %s | %.3f | %s |" % (
        name, float(kv["ring_ms"]), float(kv["agg_tflops"]), float(kv["per_gpu_tflops"]),
        float(kv["single_tflops"]), eff, verdict, kv["whole_tflops"], kv["comm_gbps"],
        float(kv["exposed_comm_ms"]), kv["comm_sms"]))
PY
{
  echo
  echo "## check"
  echo "| case | arguments | expected exit | exit | verdict |"
  echo "|---|---|---|---|---|"
  printf '%s\n' "${checks[@]}"
  echo
  echo "## time (2 GPUs, hd128, bf16, h$heads; bar at >= 32K tokens per GPU: non-causal 0.90, causal 0.85)"
  cat "$out/time_table.md"
} | tee "$out/summary.md"
exit $status
