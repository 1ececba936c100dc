#!/usr/bin/env python3
"""PyTorch's SDPA cuDNN back end at the FlashAttention papers' forward shapes,
timed the way tests/gpu/standalone/cudnn_check.cu times our cudnn entry, and the
ratio table between the two.

  cudnn_vs_torch.py --out torch.csv            time torch (needs a GPU)
  cudnn_vs_torch.py --compare ours.csv torch.csv   print the ratio table

Shapes: bf16, batch*seqlen = 16384, heads = 2048/head_dim, head_dim 64/128,
seqlen 1024..16384, causal and not. Inputs are BSHD buffers (the layout fa-bench
uses) handed to torch as [b, h, s, d] views. Timing: 3 warm-up calls, then 30
samples, each after zeroing a buffer of 2x the L2 size, CUDA events around the
call, median.
"""
import argparse
import csv
import statistics
import sys

HEAD_DIMS = (64, 128)
SEQLENS = (1024, 2048, 4096, 8192, 16384)


def time_torch(out_path):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(dev)
    flush = torch.empty(2 * props.L2_cache_size, dtype=torch.uint8, device=dev)
    print(f"torch {torch.__version__} cudnn {torch.backends.cudnn.version()} {props.name}", flush=True)
    rows = []
    for hd in HEAD_DIMS:
        for n in SEQLENS:
            b, h = 16384 // n, 2048 // hd
            gen = torch.Generator(device=dev).manual_seed(n * 1000 + hd)
            q, k, v = (torch.randn(b, n, h, hd, device=dev, dtype=torch.bfloat16, generator=gen).transpose(1, 2)
                       for _ in range(3))
            for causal in (False, True):
                with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                    run = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                    for _ in range(3):
                        run()
                    samples = []
                    for i in range(30):
                        flush.fill_(i & 0xFF)
                        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                        e0.record()
                        run()
                        e1.record()
                        e1.synchronize()
                        samples.append(e0.elapsed_time(e1))
                ms = statistics.median(samples)
                flops = 4 * b * h * n * n * hd * (0.5 if causal else 1.0)
                tf = flops / (ms * 1e-3) / 1e12
                rows.append(("torch_cudnn", "bf16", int(causal), hd, n, b, h, f"{ms:.4f}", f"{tf:.1f}"))
                print(f"torch cudnn hd{hd} causal={int(causal)} seqlen {n}: {ms:.4f} ms {tf:.1f} TFLOP/s", flush=True)
    with open(out_path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["impl", "dtype", "causal", "hdim", "seqlen", "batch", "heads", "ms", "tflops"])
        w.writerows(rows)


def load(path):
    with open(path) as f:
        return {(int(r["hdim"]), int(r["causal"]), int(r["seqlen"])): float(r["tflops"]) for r in csv.DictReader(f)}


def compare(ours_path, torch_path):
    ours, theirs = load(ours_path), load(torch_path)
    print("| head_dim | causal | seqlen | ours cudnn TFLOP/s | torch cudnn TFLOP/s | ratio | within 5% |")
    print("|---|---|---|---|---|---|---|")
    worst = None
    for key in sorted(set(ours) | set(theirs)):
        a, t = ours.get(key), theirs.get(key)
        if a is None or t is None:
            print(f"| {key[0]} | {key[1]} | {key[2]} | {a} | {t} | - | missing |")
            worst = 0.0
            continue
        r = a / t
        worst = r if worst is None else min(worst, r)
        print(f"| {key[0]} | {key[1]} | {key[2]} | {a:.1f} | {t:.1f} | {r:.3f} | {'yes' if r >= 0.95 else 'NO'} |")
    print(f"lowest ratio: {worst:.3f}" if worst is not None else "no rows")
    return 0 if worst is not None and worst >= 0.95 else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="time torch and write this CSV")
    ap.add_argument("--compare", nargs=2, metavar=("OURS_CSV", "TORCH_CSV"))
    args = ap.parse_args()
    if args.out:
        time_torch(args.out)
    if args.compare:
        return compare(*args.compare)
    if not args.out:
        ap.error("give --out and/or --compare")
    return 0


if __name__ == "__main__":
    sys.exit(main())
