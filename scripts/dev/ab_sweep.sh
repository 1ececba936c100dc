#!/usr/bin/env bash
# A/B of two fa-bench builds in one run: fa-check on the new build's variants,
# then the same sweep with each build, alternating A B A B, so clock and heat drift
# fall on both alike. Prints per point both runs of each side and mean(B)/mean(A).
#   scripts/dev/ab_sweep.sh A_BIN_DIR B_BIN_DIR OUT_DIR
# Environment (defaults in brackets): KERNELS [fa1] the --kernels of both sweeps;
# CHECK_KERNELS [fa1.*] fa-check's selection on B (empty: no check); SEQLEN
# [2048:16384:x2]; BACKEND [cuda]; CONFIG [configs/paper-fwd.json]; EXTRA: more sweep
# flags (e.g. "--head-dim 256"); T_RUN [100] seconds per sweep, T_CHECK [90].
# Every file lands in OUT_DIR (a.1.*, b.1.*, a.2.*, b.2.*, check.*, ab.md).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
a=${1:?A_BIN_DIR}
b=${2:?B_BIN_DIR}
out=${3:?OUT_DIR}
mkdir -p "$out"
backend=${BACKEND:-cuda}
check=${CHECK_KERNELS-fa1.*}  # set but empty: no check
if [ -n "$check" ]; then
  timeout -s INT -k 5 "${T_CHECK:-90}" "$b/fa-check" --backend "$backend" --kernels "$check" \
    --json "$out/check.json" --csv "$out/check.csv" > "$out/check.md" 2> "$out/check.err"
  echo "check exit $?: $(tail -1 "$out/check.md")"
fi
for pass in 1 2; do
  for side in a b; do
    bin=$a; [ "$side" = b ] && bin=$b
    # shellcheck disable=SC2086  # EXTRA is a list of flags
    timeout -s INT -k 5 "${T_RUN:-100}" "$bin/fa-bench" sweep --config "${CONFIG:-configs/paper-fwd.json}" \
      --backend "$backend" --seqlen "${SEQLEN:-2048:16384:x2}" --kernels "${KERNELS:-fa1}" \
      --max-seconds 0.2 --min-samples 10 --max-check-rows 256 ${EXTRA:-} \
      --json "$out/$side.$pass.json" --csv "$out/$side.$pass.csv" > "$out/$side.$pass.md" 2> "$out/$side.$pass.err"
    echo "$side.$pass exit $?"
  done
done
python3 "$here/ab_table.py" "$out" | tee "$out/ab.md"
