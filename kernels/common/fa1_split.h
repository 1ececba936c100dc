// How FA1 spreads the paper's Algorithm 1 over a GPU. Plain C++: the CUDA kernel,
// the CPU back end and the traffic model all follow this one rule.
//
// Algorithm 1 runs once per (batch, head): outer loop over K/V blocks j, inner loop
// over Q blocks i. With few heads that is a handful of CTAs on a 132-SM GPU (16 at
// hd128, seqlen 16384, batch 1), so, like flash-attention v1's own implementation
// (its forward grid is batch x heads x num_splits), the inner loop's Q blocks are
// dealt out to `splits` CTAs per head, in rounds of `splits` consecutive blocks,
// every other round mirrored: split s runs Algorithm 1 over Q blocks
// s, 2*splits-1-s, 2*splits+s, 4*splits-1-s, ... The Q blocks of the inner loop are
// independent given K_j and V_j, so no arithmetic changes; each split loads K/V for
// itself (the traffic model counts that). Dealt rather than contiguous ranges, so
// under a causal mask every split gets short and long rows alike; mirrored rounds
// because under a causal mask block i is visited ~i*B_r/B_c + 1 times, so a plain
// stride (s, s+splits, ...) gives the last split the most visits of all in every
// round (at seqlen 16384, ~3 % above the mean), and the kernel lasts as long
// as its slowest CTA. A mirrored pair of rounds gives every split the same sum.
//
// The rule is device-independent on purpose (the model and the CPU back end must
// reproduce the kernel's loop exactly): enough splits to bring the grid up to
// kFa1TargetWarps, the H200's 132 SMs times the 8 warps one FA1 CTA of 8 warps
// fills (its ~250 registers per thread allow one such CTA per SM; a 4-warp tile
// fits two). Never more splits than Q blocks. warps = 0 (CPU tiles) counts as 8.
#pragma once
#include <cstdint>

namespace fa {

constexpr int64_t kFa1TargetWarps = 132 * 8;

constexpr int64_t fa1_splits(int64_t batch_heads, int64_t q_blocks, int warps) {
  const int64_t target_ctas = kFa1TargetWarps / (warps > 0 ? warps : 8);
  int64_t splits = batch_heads >= target_ctas ? 1 : target_ctas / batch_heads;
  if (splits > q_blocks) splits = q_blocks;
  return splits < 1 ? 1 : splits;
}

// The helpers below are templates so that the kernel computes in int, the CPU
// back end and the traffic model in int64_t.

// Split `split`'s n-th Q block (n = 0, 1, ...; increasing in n).
template <typename I>
constexpr I fa1_split_block(I split, I splits, I n) {
  return n * splits + ((n & 1) ? splits - 1 - split : split);
}

// fa1_split_block(split, splits, n + 1) - fa1_split_block(split, splits, n).
template <typename I>
constexpr I fa1_split_stride(I split, I splits, I n) {
  return (n & 1) ? 2 * split + 1 : 2 * (splits - split) - 1;
}

// How many of the q_blocks Q blocks split `split` runs.
template <typename I>
constexpr I fa1_split_count(I split, I splits, I q_blocks) {
  const I rounds = q_blocks / splits;  // full rounds; the next one may be partial
  return rounds + (fa1_split_block(split, splits, rounds) < q_blocks ? 1 : 0);
}

// The first n whose block is >= first_block (first_block >= 0).
template <typename I>
constexpr I fa1_split_first(I split, I splits, I first_block) {
  const I n = first_block / splits;
  return fa1_split_block(split, splits, n) >= first_block ? n : n + 1;
}

// The split that runs Q block i.
template <typename I>
constexpr I fa1_split_of(I i, I splits) {
  const I n = i / splits, offset = i % splits;
  return (n & 1) ? splits - 1 - offset : offset;
}

}  // namespace fa
