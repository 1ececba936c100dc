// FA3's tile scheduler: which (m_block, head, batch) tiles each block runs, in
// what order, and on how many blocks. The kernel is written against this
// interface, and Fa3Traits names the scheduler it uses:
//
//   host    static cudaError_t plan(const AttnParams&, int block_m, int block_n,
//                                   int head_dim, TileSchedule* schedule, int* grid);
//   device  static int tile_index(int round, int grid, int block);  // list index
//           template <bool kFastDiv>
//           static TileCoord tile_at(int idx, const Args&);        // its tile
//
// A block runs tile_at(tile_index(r, gridDim.x, blockIdx.x)) for r = 0, 1, ...
// until the index reaches schedule.num_tiles; producer and consumers walk the
// same list. A dynamic scheduler (an atomic tile counter) was tried against the
// static one below and lost 4 % non-causal (docs/PERF_NOTES.md fa3-causal-l2-groups).
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#include <cuda_runtime.h>

#include "common/attn_params.h"
#include "common/fast_div.h"
#include "fa3/fa3_causal_balance.h"

// The persistent grid can be built out (-DFA3_PERSISTENT=0) for the ablation:
// one block per tile, the hardware scheduler starting each as an SM frees up
// (docs/PERF_NOTES.md fa3-persistent-grid).
#ifndef FA3_PERSISTENT
#define FA3_PERSISTENT 1
#endif

namespace fa::fa3 {

inline constexpr bool kPersistentGrid = FA3_PERSISTENT != 0;

struct TileCoord {
  int m_block, head, batch;
};

// What the device walk reads, set by plan(); a member of the kernel's Args.
struct TileSchedule {
  int num_m_blocks, num_tiles;
  int group_bh;  // causal order: (batch, head) pairs per group, see CausalOrder
  // tile_at's divisors (fast_div.h: the walk divides on every tile): heads,
  // num_m_blocks, and for the causal order a group's tiles (group_bh *
  // num_m_blocks), a full group's pairs (group_bh) and the last group's.
  FastDiv by_heads, by_m_blocks, by_group_tiles, by_group, by_last_group;
};

// Number of K/V blocks (block_n keys each) that tile m_block visits: all of
// seqlen_k, or under causal masking (bottom-right aligned: row i sees keys
// j <= i + seqlen_k - seqlen_q) only those its last valid row can see. 0: no row
// sees any key. row_shift: the tiles' rows moved up (causal_row_shift,
// fa3_causal_balance.h; the e4m3 kernel's walk). The kernels' walks (fa3_args.cuh,
// kv_blocks; fa3_fp8_args.cuh, fp8_kv_blocks) and the host's balance model below
// all count with it.
__host__ __device__ __forceinline__ int tile_kv_blocks(int m_block, int block_m, int block_n, int seqlen_q,
                                                       int seqlen_k, int causal, int row_shift = 0) {
  int n = (seqlen_k + block_n - 1) / block_n;
  if (causal) {
    const int row_last = min((m_block + 1) * block_m - row_shift, seqlen_q) - 1;
    const int col_limit = row_last + seqlen_k - seqlen_q;  // last visible key
    n = col_limit < 0 ? 0 : min(n, col_limit / block_n + 1);
  }
  return n;
}

// The causal list orders, each a group size for tile_at's longest-first listing
// (a group's tiles are listed before the next group's, longest m_blocks first):
//  - all heads in one group: longest first over the whole problem;
//  - L2 groups: enough heads for their K/V to fill half the L2, and at least 4
//    rounds of tiles per group;
//  - one head per group: the short-causal order;
// and then, of the sizes from half the chosen one up to it, the one that
// balances the blocks' work best (balanced_group).
struct CausalOrder {
  // Longest-first over all heads keeps about grid / (batch*heads) tiles of each head
  // in flight; from 3 up their K/V reads overlap enough in L2 and the plain order
  // balances best. Below that (hd128 seqlen 4096: 2 per head, 0.87x cuDNN) heads are
  // grouped: enough for their K and V (shared by kv_group() query heads) to fill half
  // the L2, and at least 4 rounds of tiles per group, because the static round-robin
  // balances only where tile lengths fall along the list, and a group restarts them
  // (docs/PERF_NOTES.md fa3-causal-l2-groups).
  static bool wants_groups(int64_t bh_count, int grid) { return int64_t(grid) < 3 * bh_count; }

  // Except for short causal problems whose grouped order would overflow the L2:
  // where the 4-round minimum asks for a group whose K/V exceed the whole L2 (hd256
  // at seqlen 512: 132 heads, 66 MB, against 60 MB; ncu read 1.6x cuDNN's DRAM bytes),
  // and a head has at most 8 m_blocks, each head's tiles are listed together, longest
  // first (group_bh = 1). A round then runs grid / num_m_blocks whole heads, each
  // head's K/V read from HBM once by its tiles at the same time. Balance: when 2 * grid
  // is a multiple of num_m_blocks, the snake gives every block m_block m in an even
  // round and num_m_blocks - 1 - m in the next, so each pair of rounds carries the
  // same work on every block. Where the group fits in the L2 (hd64, hd128) the same
  // order measured 1-4 % slower than the grouped one: its tail mixes long and short
  // tiles (docs/PERF_NOTES.md fa3-short-causal-order).
  static int64_t group_size(const AttnParams& p, int head_dim, int num_m_blocks, int grid, int l2_bytes) {
    const int64_t kv_bytes_per_bh = int64_t(p.seqlen_k) * head_dim * 2 * 2 / p.kv_group();
    const int64_t by_l2 = (int64_t(l2_bytes) / 2) / (kv_bytes_per_bh > 0 ? kv_bytes_per_bh : 1);
    const int64_t by_rounds = (4 * int64_t(grid) + num_m_blocks - 1) / num_m_blocks;
    int64_t group = by_l2 > by_rounds ? by_l2 : by_rounds;
    const bool overflows_l2 = by_rounds > 2 * by_l2;
    if (overflows_l2 && num_m_blocks <= 8 && (2 * grid) % num_m_blocks == 0) group = 1;
    return group;
  }

  // The group size in [group / 2, group] that spreads the list's work most
  // evenly over the blocks (fa3_causal_balance.h). A tile's work: its K/V blocks
  // plus 1.5 blocks of fixed cost (at 512 tokens the step between tiles issued
  // about 1.7-1.9 blocks' instructions per warp: docs/PERF_NOTES.md
  // fa3-short-vs-cudnn-profile). Found once per shape and cached: the search
  // walks the list once per candidate.
  static int64_t balanced_group(const AttnParams& p, int block_m, int block_n, int num_m_blocks, int grid,
                                int64_t group, int row_shift) {
    const int64_t pairs = int64_t(p.heads) * p.batch;
    using Key = std::tuple<int64_t, int, int, int, int, int, int64_t, int>;
    const Key key{pairs, p.seqlen_q, p.seqlen_k, block_m, block_n, grid, group, row_shift};
    static std::mutex mu;
    static std::map<Key, int64_t> known;
    {
      const std::lock_guard<std::mutex> lock(mu);
      if (auto it = known.find(key); it != known.end()) return it->second;
    }
    std::vector<int64_t> cost(static_cast<size_t>(num_m_blocks));  // in half blocks
    for (int m = 0; m < num_m_blocks; ++m)
      cost[size_t(m)] = 2 * tile_kv_blocks(m, block_m, block_n, p.seqlen_q, p.seqlen_k, 1, row_shift) + 3;
    const int64_t best = fa3::balanced_group(cost, pairs, group, grid);
    const std::lock_guard<std::mutex> lock(mu);
    known.emplace(key, best);
    return best;
  }
};

// Static persistent scheduler: at most one block per SM, each walking the list
// in a snake (below); the list is m_block-fastest without a mask, CausalOrder's
// with one. row_shift: the kernel's tiles' rows moved up (tile_kv_blocks), which
// the causal balance counts with.
struct StaticPersistentScheduler {
  static cudaError_t plan(const AttnParams& p, int block_m, int block_n, int head_dim, TileSchedule* s,
                          int* grid, int row_shift = 0) {
    s->num_m_blocks = (p.seqlen_q + block_m - 1) / block_m;
    s->num_tiles = s->num_m_blocks * p.heads * p.batch;
    cudaError_t err;
    int dev = 0, num_sms = p.num_sms;
    if ((err = cudaGetDevice(&dev)) != cudaSuccess) return err;
    if (num_sms <= 0 &&
        (err = cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, dev)) != cudaSuccess)
      return err;
    *grid = (!kPersistentGrid || s->num_tiles < num_sms) ? s->num_tiles : num_sms;

    const int64_t bh_count = int64_t(p.heads) * p.batch;
    int64_t group = bh_count;
    if (p.causal && CausalOrder::wants_groups(bh_count, *grid)) {
      int l2_bytes = 0;
      if ((err = cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, dev)) != cudaSuccess) return err;
      group = CausalOrder::group_size(p, head_dim, s->num_m_blocks, *grid, l2_bytes);
      group = CausalOrder::balanced_group(p, block_m, block_n, s->num_m_blocks, *grid, group, row_shift);
    }
    s->group_bh = int(group < 1 ? 1 : group > bh_count ? bh_count : group);
    s->by_heads = FastDiv(p.heads);
    s->by_m_blocks = FastDiv(s->num_m_blocks);
    s->by_group_tiles = FastDiv(s->group_bh * s->num_m_blocks);
    s->by_group = FastDiv(s->group_bh);
    const int64_t last = bh_count % s->group_bh;
    s->by_last_group = FastDiv(int(last == 0 ? s->group_bh : last));
    return cudaSuccess;
  }

  // Block b takes one tile per round of grid tiles, position b in even rounds and
  // grid - 1 - b in odd ones (a snake). With the causal order (longest tiles first,
  // so lengths fall along the list) a plain round-robin would give block 0 the
  // longest tile of every round, ~12% more work than the last block at seqlen 16k;
  // the snake evens that out pairwise.
  static __device__ __forceinline__ int tile_index(int round, int grid, int b) {
    return round * grid + ((round & 1) ? grid - 1 - b : b);
  }

  // Non-causal: m_block varies fastest, so the blocks running together read the
  // same K/V head (L2 reuse). Causal: the longest tiles (last m_blocks) first, so
  // the short ones fill the tail -- within groups of group_bh (batch, head) pairs
  // (CausalOrder). Longest-first over all heads at once put ~132 different heads
  // in flight at seqlen 4096 (two m_blocks each), so K/V came from HBM for almost
  // every tile.
  //
  // kFastDiv: divide through the schedule's FastDivs (fast_div.h) or with '/'
  // and '%'; the same tiles either way. The kernel's traits choose
  // (kFastDivWalk): the cheaper walk is measured per kernel. The two walks are
  // written out apart on purpose: one body with a divide helper for both compiled
  // to other SASS in every kernel and cost hd128 0.6-1 % (PERF_NOTES fa3-short-fast-div).
  template <bool kFastDiv, typename Args>
  static __device__ __forceinline__ TileCoord tile_at(int idx, const Args& a) {
    const TileSchedule& s = a.schedule;
    TileCoord t;
    int bh;
    if (!kFastDiv) {
      if (a.causal) {
        const int bh_count = a.heads * a.batch;
        const int group = idx / (s.group_bh * s.num_m_blocks);
        const int r = idx - group * s.group_bh * s.num_m_blocks;
        const int in_group = min(s.group_bh, bh_count - group * s.group_bh);
        t.m_block = s.num_m_blocks - 1 - r / in_group;
        bh = group * s.group_bh + r % in_group;
      } else {
        t.m_block = idx % s.num_m_blocks;
        bh = idx / s.num_m_blocks;
      }
      t.head = bh % a.heads;
      t.batch = bh / a.heads;
      return t;
    }
    if (a.causal) {
      const int bh_count = a.heads * a.batch;
      const int group = s.by_group_tiles.div(idx);  // every group before this one is full
      const int r = s.by_group_tiles.mod(idx, group);
      const bool full = bh_count - group * s.group_bh >= s.group_bh;  // else the last, shorter group
      const FastDiv& by_in_group = full ? s.by_group : s.by_last_group;
      const int q = by_in_group.div(r);
      t.m_block = s.num_m_blocks - 1 - q;
      bh = group * s.group_bh + by_in_group.mod(r, q);
    } else {
      bh = s.by_m_blocks.div(idx);
      t.m_block = s.by_m_blocks.mod(idx, bh);
    }
    t.batch = s.by_heads.div(bh);
    t.head = s.by_heads.mod(bh, t.batch);
    return t;
  }
};

}  // namespace fa::fa3
