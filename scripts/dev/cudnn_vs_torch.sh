#!/usr/bin/env bash
# Our cudnn entry vs PyTorch's SDPA cuDNN back end, same shapes, same GPU, one
# run: correctness + timings of ours (tests/gpu/standalone/cudnn_check), then
# torch's, then the ratio table (exit 1 if any ratio is under 0.95).
#   scripts/dev/cudnn_vs_torch.sh BIN_DIR OUT_DIR
# BIN_DIR holds a built cudnn_check; run it with the cuDNN torch loads
# (LD_LIBRARY_PATH at torch's nvidia/cudnn/lib) so both sides use one library.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:?BIN_DIR}
out=${2:?OUT_DIR}
mkdir -p "$out"
"$bin/cudnn_check" quick time "--csv=$out/ours.csv" 2>&1 | tee "$out/ours.log"
ours_rc=$?
python3 "$here/cudnn_vs_torch.py" --out "$out/torch.csv" 2>&1 | tee "$out/torch.log"
python3 "$here/cudnn_vs_torch.py" --compare "$out/ours.csv" "$out/torch.csv" | tee "$out/ratio.md"
ratio_rc=$?
[ "$ours_rc" -eq 0 ] && [ "$ratio_rc" -eq 0 ]
