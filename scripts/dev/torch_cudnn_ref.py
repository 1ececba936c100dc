#!/usr/bin/env python3
"""cuDNN's attention forward (through PyTorch SDPA) at the paper's forward shapes,
timed the way tests/gpu/standalone/fa3_check.cu times fa3, for same-run ratios.

batch * seqlen = 16384, heads = 2048 / head_dim, bf16, causal and not; L2 flushed
by a memset of 2 x L2 before each sample; CUDA events; median of --samples.
Prints lines `CUDNN <head_dim> <causal> <seqlen> <median_ms> <TFLOP/s>`.
"""
import argparse

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel


def time_ms(fn, flush, samples):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for i in range(samples):
        flush.fill_(i & 0xFF)  # cold L2 for every sample
        beg, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        beg.record()
        fn()
        end.record()
        end.synchronize()
        times.append(beg.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--head-dims", default="64,128,256")
    ap.add_argument("--samples", type=int, default=20)
    args = ap.parse_args()
    props = torch.cuda.get_device_properties(0)
    flush = torch.empty(2 * props.L2_cache_size, dtype=torch.uint8, device="cuda")
    print(f"torch {torch.__version__} cudnn {torch.backends.cudnn.version()} {props.name}")
    print(f"CUDNN {'head_dim':>8} {'causal':>6} {'seqlen':>6} {'median_ms':>10} {'TFLOP/s':>9}")
    gen = torch.Generator(device="cuda").manual_seed(1234)
    for d in (int(x) for x in args.head_dims.split(",")):
        for causal in (0, 1):
            seqlen = 512
            while seqlen <= 16384:
                b, h = 16384 // seqlen, 2048 // d
                q, k, v = (torch.rand(b, h, seqlen, d, device="cuda", dtype=torch.bfloat16, generator=gen) * 2 - 1
                           for _ in range(3))
                with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                    ms = time_ms(lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=bool(causal)),
                                 flush, args.samples)
                flops = 4 * b * h * seqlen * seqlen * d / (2 if causal else 1)
                print(f"CUDNN {d:>8} {causal:>6} {seqlen:>6} {ms:>10.4f} {flops / ms / 1e9:>9.1f}", flush=True)
                seqlen *= 2


if __name__ == "__main__":
    main()
