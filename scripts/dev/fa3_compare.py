#!/usr/bin/env python3
"""Same-run comparison table: fa3_check timing logs against torch_cudnn_ref.py.

    fa3_compare.py cudnn.log label=time.log [label=time.log ...]

For each (head_dim, causal, seqlen) prints cuDNN's TFLOP/s and, per labelled
log, the best fa3 tile's TFLOP/s, that tile, and the ratio to cuDNN (bf16 only).
"""
import re
import sys
from collections import defaultdict


def read_cudnn(path):
    out = {}
    for line in open(path):
        f = line.split()
        if len(f) == 6 and f[0] == "CUDNN" and f[1].isdigit():
            out[(int(f[1]), int(f[2]), int(f[3]))] = float(f[5])
    return out


def read_fa3(path):
    best = defaultdict(lambda: (0.0, ""))
    for line in open(path):
        f = line.split()
        if len(f) == 9 and f[0] == "TIME" and f[1].startswith("fa3.bf16"):
            hd = int(re.search(r"\.hd(\d+)\.", f[1]).group(1))
            key = (hd, int(f[2]), int(f[3]))
            tf = float(f[8])
            if tf > best[key][0]:
                best[key] = (tf, f[1].split(".", 3)[3])
    return best


def main():
    cudnn = read_cudnn(sys.argv[1])
    runs = [(a.split("=", 1)[0], read_fa3(a.split("=", 1)[1])) for a in sys.argv[2:]]
    head = f"{'hd':>3} {'c':>1} {'seqlen':>6} {'cudnn':>6}"
    for label, _ in runs:
        head += f" | {label:>10} {'tile':>14} {'ratio':>5}"
    print(head)
    for key in sorted(cudnn):
        row = f"{key[0]:>3} {key[1]:>1} {key[2]:>6} {cudnn[key]:>6.0f}"
        for _, r in runs:
            tf, tile = r.get(key, (0.0, "-"))
            row += f" | {tf:>10.0f} {tile:>14} {tf / cudnn[key]:>5.2f}"
        print(row)


if __name__ == "__main__":
    main()
