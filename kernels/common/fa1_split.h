// How FA1 spreads the paper's Algorithm 1 over a GPU. Plain C++: the CUDA kernel,
// the CPU back end and the traffic model all follow this one rule.
//
// Algorithm 1 runs once per (batch, head): outer loop over K/V blocks j, inner loop
// over Q blocks i. With few heads that is a handful of CTAs on a 132-SM GPU (16 at
// hd128, seqlen 16384, batch 1), so, like flash-attention v1's own implementation
// (its forward grid is batch x heads x num_splits), the inner loop's Q blocks are
// dealt out to `splits` CTAs per head: split s runs Algorithm 1 over Q blocks
// s, s + splits, s + 2*splits, ... The Q blocks of the inner loop are independent
// given K_j and V_j, so no arithmetic changes; each split loads K/V for itself
// (the traffic model counts that). Strided rather than contiguous ranges, so under
// a causal mask every split gets short and long rows alike.
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

}  // namespace fa
