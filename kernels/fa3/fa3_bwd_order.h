// The order of the backward's tiles (one per K/V block of one (batch, kv head)
// pair), on the host for tests and on the device for bwd_tile_at. No CUDA types.
//
// Tiles of a pair list n_block fastest, so the blocks running together read the
// same Q and dO from L2. Causal: low n_blocks visit the most Q blocks, so within
// a group of group_bh pairs (sized at launch so their Q and dO fit in half the
// L2) the tiles go n_block-major: longest first, the short ones fill the tail.
// When the pairs do not divide into whole groups, the short group goes *first*:
// last, its longest tiles would start when the others' work is nearly done and
// run alone (at hd256 causal 8192, 16 pairs in groups of 3, one pair's 128 tiles
// at the end left 5.6 % of the SMs' cycles idle; PERF_NOTES fa3-bwd-causal-tail).
// Each pair stays in one group with its n_blocks in increasing order, which the
// deterministic mode needs (a tile adds its dQ after the previous n_block's).
#pragma once

#if defined(__CUDACC__)
#define FA3_BWD_ORDER_FN __host__ __device__ __forceinline__
#else
#define FA3_BWD_ORDER_FN inline
#endif

namespace fa::fa3 {

struct BwdOrder {
  int pair;     // batch * heads_kv + kv_head
  int n_block;  // K/V block
};

FA3_BWD_ORDER_FN BwdOrder bwd_order_at(int idx, int pairs, int num_n_blocks, int group_bh) {
  const int rem = pairs % group_bh;
  const int first = rem != 0 ? rem : group_bh;  // pairs in the first group
  int pair0, in_group, r;
  if (idx < first * num_n_blocks) {
    pair0 = 0, in_group = first, r = idx;
  } else {
    const int rest = idx - first * num_n_blocks, per_group = group_bh * num_n_blocks;
    const int grp = rest / per_group;
    pair0 = first + grp * group_bh, in_group = group_bh, r = rest - grp * per_group;
  }
  return {pair0 + r % in_group, r / in_group};
}

}  // namespace fa::fa3
