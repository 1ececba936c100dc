// How evenly the forward's static tile walk spreads a causal problem's work,
// and the group size (CausalOrder, fa3_scheduler.cuh) that spreads it best. On
// the host only (the scheduler's plan and the tests); no CUDA types.
//
// The causal list is grouped: group_bh (batch, head) pairs at a time, each
// group's tiles longest first (m_block from the last down). The walk deals the
// list out in rounds of `grid` tiles, block b taking position b in even rounds
// and grid - 1 - b in odd ones (the snake of StaticPersistentScheduler::
// tile_index). Where a group's tiles do not fill whole rounds, the next group
// restarts the lengths mid-round, and some blocks carry a long tile more than
// others: at hd128 causal 4096 (64 pairs in groups of 17) the busiest block had
// 9 % more work than the mean (docs/PERF_NOTES.md fa3-causal-balanced-groups).
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

namespace fa::fa3 {

// Rows by which a causal tile walk moves every tile up (0 without a mask, whose
// tiles all cost the same): tile m_block covers rows
// [m_block * block_m - shift, (m_block + 1) * block_m - shift). Where
// seqlen_q is not a multiple of block_m, the plain walk's last tile holds the
// remainder, and its consumer warpgroups with no rows still compute: on the
// causal diagonal that is the longest tile (hd128's 192-row tile at 4096 =
// 21 x 192 + 64: two of its three warpgroups run all 32 K/V blocks on empty
// rows, 5 % of the head's work). Shifted, the remainder lands in the first,
// shortest tile, whose empty warpgroups hold rows before 0 (TMA reads them as
// zeros; nothing is stored). Whole 64-row warpgroup slices only, so each
// warpgroup's rows stay inside one block of per-block Q descales.
inline int causal_row_shift(bool causal, int seqlen_q, int block_m) {
  if (!causal || block_m <= 0 || seqlen_q <= 0) return 0;
  return (block_m - seqlen_q % block_m) % block_m / 64 * 64;
}

// The work of the busiest block when the list of `pairs` pairs in groups of
// `group` is dealt to `grid` blocks; cost[m] is the work of a tile at m_block m.
inline int64_t busiest_block_work(const std::vector<int64_t>& cost, int64_t pairs, int64_t group, int grid) {
  const int num_m_blocks = int(cost.size());
  std::vector<int64_t> load(size_t(grid), 0);
  int64_t idx = 0;
  for (int64_t first = 0; first < pairs; first += group) {
    const int64_t in_group = std::min(group, pairs - first);
    for (int q = 0; q < num_m_blocks; ++q)  // longest first: m_block num_m_blocks - 1 - q
      for (int64_t j = 0; j < in_group; ++j, ++idx) {
        const int64_t round = idx / grid, pos = idx - round * grid;
        load[size_t((round & 1) ? grid - 1 - pos : pos)] += cost[size_t(num_m_blocks - 1 - q)];
      }
  }
  return *std::max_element(load.begin(), load.end());
}

// Of the group sizes from half of `group` up to it (no more pairs' K/V in
// flight than `group` allows), the one whose busiest block has the least work;
// ties keep the larger group. `group` itself where there is nothing to choose
// or the search would take more than max_steps tile visits.
inline int64_t balanced_group(const std::vector<int64_t>& cost, int64_t pairs, int64_t group, int grid,
                              int64_t max_steps = int64_t(1) << 24) {
  const int64_t lo = std::max<int64_t>(group / 2, 1);
  if (group <= 1 || group >= pairs || grid <= 0 || cost.empty() ||
      (group - lo + 1) * pairs * int64_t(cost.size()) > max_steps)
    return group;
  int64_t best = group, best_work = busiest_block_work(cost, pairs, group, grid);
  for (int64_t g = group - 1; g >= lo; --g) {
    const int64_t work = busiest_block_work(cost, pairs, g, grid);
    if (work < best_work) best = g, best_work = work;
  }
  return best;
}

}  // namespace fa::fa3
