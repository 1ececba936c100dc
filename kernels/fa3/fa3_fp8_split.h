// The split tail of the e4m3 fa3 forward on a non-causal problem: which tiles
// of the persistent list become pieces over a share of the K/V blocks, and the
// workspace their merge needs (fa3_fp8_kernel.cuh, combine_pieces). No CUDA
// types, so that a CPU test holds the plan (tests/test_fa3_fp8_split.cpp).
//
// With num_tiles equal tiles on grid persistent blocks, the last round runs
// tail = num_tiles % grid tiles while the other blocks idle: at hd128 and 8192
// tokens, 1376 tiles on 132 SMs take 11 rounds for 10.4 rounds of work. Each of
// the last tail tiles becomes k pieces, each over 1/k of the K/V blocks, so the
// last rounds run tail * k pieces: the k (2..4) that ends soonest, counting a
// round of pieces as 1/k of a round, where it saves at least 5 % of a round and
// leaves every piece 4 K/V blocks or more. docs/PERF_NOTES.md fa3-fp8-split-tail.
#pragma once
#include <cstdint>

namespace fa {

struct Fp8SplitPlan {
  int k = 1;           // pieces per split tile; 1: no split
  int split_from = 0;  // first split tile, and the list index of its first piece
  int tail = 0;        // split tiles
  int num_items = 0;   // list length: split_from + tail * k
};

inline Fp8SplitPlan fp8_split_plan(int num_tiles, int grid, int kv_blocks) {
  Fp8SplitPlan sp;
  sp.split_from = sp.num_items = num_tiles;
  if (grid <= 0 || num_tiles <= 0) return sp;
  const int tail = num_tiles % grid;
  if (tail == 0) return sp;
  double best = 1.0;  // rounds the tail takes, in rounds of whole tiles
  for (int k = 2; k <= 4 && kv_blocks / k >= 4; ++k) {
    const double rounds = double((tail * k + grid - 1) / grid) / k;
    if (rounds < best - 0.05) best = rounds, sp.k = k;
  }
  if (sp.k > 1) {
    sp.tail = tail;
    sp.split_from = num_tiles - tail;
    sp.num_items = sp.split_from + tail * sp.k;
  }
  return sp;
}

// The split tail of a problem on a block_m x block_n tile and `grid` blocks:
// the plan above over its tiles and K/V blocks. None where causal (that list
// runs longest tiles first and fa3_causal_balance.h evens its rounds) or with
// descales per block of rows (O is then in per-block V units, which the merge
// does not carry). The kernel's (fa3_fp8_fwd.cuh) and the traffic model's
// (src/measure/traffic.cpp).
inline Fp8SplitPlan fp8_split_plan(int batch, int heads, int seqlen_q, int seqlen_k, bool causal, bool block_scaled,
                                   int grid, int block_m, int block_n) {
  const int tiles = (seqlen_q + block_m - 1) / block_m * heads * batch;
  if (causal || block_scaled) return fp8_split_plan(tiles, 0, 0);  // k = 1
  return fp8_split_plan(tiles, grid, (seqlen_k + block_n - 1) / block_n);
}

// One piece's partial in the workspace: per consumer thread of the tile
// (block_m / 64 warpgroups of 128), head_dim / 2 + 4 floats: O, m[2], l[2].
inline int64_t fp8_split_piece_bytes(int block_m, int head_dim) {
  return int64_t(block_m / 64 * 128) * (head_dim / 2 + 4) * 4;
}

// The split workspace: one count per split tile and consumer warp (block_m / 16
// of them; zeroed by the V^T pre-pass before each launch, since the workspace
// may hold anything), padded to 256 bytes; then, per piece and consumer thread
// of a split tile, head_dim / 2 + 4 floats: O, m[2], l[2]. 0 bytes without a split.
inline int fp8_split_counts(const Fp8SplitPlan& sp, int block_m) { return sp.k > 1 ? sp.tail * (block_m / 16) : 0; }
inline int64_t fp8_split_counts_bytes(const Fp8SplitPlan& sp, int block_m) {
  return (int64_t(fp8_split_counts(sp, block_m)) * 4 + 255) / 256 * 256;
}
inline int64_t fp8_split_bytes(const Fp8SplitPlan& sp, int block_m, int head_dim) {
  if (sp.k == 1) return 0;
  return fp8_split_counts_bytes(sp, block_m) + int64_t(sp.tail) * sp.k * fp8_split_piece_bytes(block_m, head_dim);
}

}  // namespace fa
