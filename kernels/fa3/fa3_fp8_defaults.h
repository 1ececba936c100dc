// The e4m3 fa3 forward's default tile per head_dim, and its exponentials: the
// tiles kernels/fa3/instances.cmake marks with '*' (the registry's default
// tiles) and fp8_check's `base` variant. No CUDA types, so that a CPU test
// holds the registry to them (tests/test_fa3_fp8_entries.cpp).
// docs/PERF_NOTES.md: fa3-fp8-three-warpgroups (hd128 192 x 128, three consumer
// warpgroups), fa3-fp8-exp2-on-fma (hd64: a quarter of the exponentials on the
// FMA pipe), fa3-fp8-tiles (hd64 128 x 256, hd256 128 x 128). 2 stages everywhere.
// And where V is transposed: inside the kernel (Fa3Fp8Traits::kTransposeV) for
// short queries; for longer ones, up to fp8_vt_shared_max_seqlen_q, on tiles
// with three consumer warpgroups (hd128) by the kernel's producer warps once per
// launch (Fa3Fp8Traits::kShareVt); elsewhere by the pre-pass (transpose_v_kernel).
#pragma once

namespace fa {

constexpr int fp8_default_block_m(int head_dim) { return head_dim == 128 ? 192 : 128; }
constexpr int fp8_default_block_n(int head_dim) { return head_dim == 64 ? 256 : 128; }
constexpr int fp8_default_poly_every(int head_dim) { return head_dim == 64 ? 4 : 0; }

// The longest seqlen_q whose forward transposes V inside the kernel. Same-run
// A/B on the H200 (PERF_NOTES fa3-fp8-vt-in-kernel): in-kernel 4-20 % faster
// up to these lengths, where the pre-pass is a large share of the row; up to 29 %
// slower beyond (hd256 most: 32 KiB to transpose per block), where transposing
// every block a tile reads beside its GEMMs costs more than one pass over V. By
// seqlen_q, since the pre-pass's share falls with the queries that reuse each V
// block (decoding, one query row, always transposes in the kernel). hd128's
// three-warpgroup tile transposes with every unit unrolled (PERF_NOTES
// fa3-fp8-vt-unrolled): on an H100, 3-5 % faster than the pre-pass at
// non-causal 2048 and 1-3 % at causal 4096, 2.4 % slower at non-causal 4096;
// against V^T made by the producer warps (PERF_NOTES fa3-fp8-vt-team) level at
// non-causal 2048, 1-2 % slower at causal 4096: hence 2048 for both masks.
constexpr int fp8_vt_in_kernel_max_seqlen_q(int head_dim, bool causal) {
  return head_dim == 256 ? 512 : head_dim == 128 ? 2048 : (causal ? 2048 : 1024);
}
constexpr bool fp8_vt_in_kernel(int head_dim, bool causal, int seqlen_q) {
  return seqlen_q <= fp8_vt_in_kernel_max_seqlen_q(head_dim, causal);
}

// The longest seqlen_q whose V^T, past the in-kernel lengths, the producer
// warps of a three-warpgroup tile make (fa3_fp8_entry.cuh); beyond it the
// pre-pass. Same-run A/B in the sweep on an H100 (PERF_NOTES
// fa3-fp8-vt-queue): 0.7-1.8 % faster than the pre-pass at 4096 and causal
// 8192, level at non-causal 8192 and causal 16384, 0.6-1.1 % slower at
// non-causal 16384, where the pre-pass is about 1 % of the row.
constexpr int kFp8VtSharedMaxSeqlenQ = 8192;

// Keys per block of the V^T pre-pass (transpose_v_kernel); V^T's rows are
// seqlen_k rounded up to a multiple of it, zeros past seqlen_k. Here so that the
// traffic model (src/measure/traffic.cpp) pads as the pass does. 128 keys, whole
// 128-byte lines of each V^T row per block, made the pass 5-11 % slower on the
// H200 (PERF_NOTES fa3-fp8-vt-pass-lines).
constexpr int kFp8VtKeys = 64;
constexpr int fp8_vt_seqlen(int seqlen_k) { return (seqlen_k + kFp8VtKeys - 1) / kFp8VtKeys * kFp8VtKeys; }

}  // namespace fa
