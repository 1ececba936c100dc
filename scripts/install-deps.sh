#!/usr/bin/env bash
# Installs what fa-bench builds and tests with, from Debian's packages (and one
# PyPI package for the SASS check). Idempotent; quick when everything is there.
# The CUDA toolkit (nvcc, cuBLAS, cuDNN, CUPTI) is expected from the machine;
# without nvcc the build falls back to the CPU back end (scripts/build.sh says so).
set -euo pipefail
pkgs=(cmake ninja-build g++ libcli11-dev libfmt-dev nlohmann-json3-dev libeigen3-dev
      libbenchmark-dev libgtest-dev python3-matplotlib python3-numpy
      chromium)  # chromium: the HTML report's headless-browser test (ctest report_browser)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}" >&2
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# cuobjdump (and the nvdisasm that --dump-sass calls) for the fa3 SASS check;
# the toolkit here ships without them. The wheels put them in
# site-packages/nvidia/cu13/bin, where the test looks.
if ! command -v cuobjdump >/dev/null 2>&1 && ! [[ -x /usr/local/cuda/bin/cuobjdump ]]; then
  for w in nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm; do
    if ! python3 -m pip show -q "$w" >/dev/null 2>&1; then
      echo "install-deps: pip install $w" >&2
      python3 -m pip install -q "$w" >/dev/null 2>&1 \
        || echo "install-deps: $w not installed; the fa3 SASS check will skip" >&2
    fi
  done
fi
