// The forward's causal balance model (kernels/fa3/fa3_causal_balance.h): the
// busiest block's work under the snake deal, worked by hand on small lists, and
// the group size the scheduler picks with it at the paper's shapes.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

#include "fa3/fa3_causal_balance.h"

namespace fa::fa3 {
namespace {

// Work per m_block as the scheduler counts it (half blocks): causal, square
// block_m = block_n tiles, m_block m visits m + 1 K/V blocks, plus 1.5 blocks.
std::vector<int64_t> square_causal_cost(int num_m_blocks) {
  std::vector<int64_t> c(static_cast<size_t>(num_m_blocks));
  for (int m = 0; m < num_m_blocks; ++m) c[size_t(m)] = 2 * (m + 1) + 3;
  return c;
}

TEST(Fa3CausalBalance, BusiestBlockByHand) {
  // Costs {1, 2}, 3 pairs in one group: list 2 2 2 1 1 1. Two blocks, snake:
  // round 0 b0 b1, round 1 b1 b0, round 2 b0 b1 -> b0 2 + 1 + 1, b1 2 + 2 + 1.
  EXPECT_EQ(busiest_block_work({1, 2}, 3, 3, 2), 5);
  // Groups of 2 then 1: list 2 2 1 1 | 2 1 -> b0 2 + 1 + 2, b1 2 + 1 + 1.
  EXPECT_EQ(busiest_block_work({1, 2}, 3, 2, 2), 5);
  // Costs {1, 4}, 2 pairs in one group: list 4 4 1 1 -> 5 each. One pair a
  // group: 4 1 4 1, and the snake turns round 1 (b1 takes the second 4):
  // 5 each again, where a plain round-robin would give b0 4 + 4.
  EXPECT_EQ(busiest_block_work({1, 4}, 2, 2, 2), 5);
  EXPECT_EQ(busiest_block_work({1, 4}, 2, 1, 2), 5);
  // Three blocks, costs {1, 4}, 2 pairs in one group: 4 4 1 | 1, round 1
  // turned (its one tile to b2) -> b0 4, b1 4, b2 1 + 1.
  EXPECT_EQ(busiest_block_work({1, 4}, 2, 2, 3), 4);
}

TEST(Fa3CausalBalance, OneBlockCarriesAllAndManyBlocksOneTileEach) {
  const std::vector<int64_t> c = square_causal_cost(6);
  const int64_t total = 7 * std::accumulate(c.begin(), c.end(), int64_t(0));
  EXPECT_EQ(busiest_block_work(c, 7, 3, 1), total);
  EXPECT_EQ(busiest_block_work(c, 7, 3, 1000), c.back());  // every tile on a block of its own
}

TEST(Fa3CausalBalance, NothingToChooseKeepsTheGroup) {
  const std::vector<int64_t> c = square_causal_cost(4);
  EXPECT_EQ(balanced_group(c, 512, 1, 132), 1);
  EXPECT_EQ(balanced_group(c, 512, 512, 132), 512);  // one group holds every pair
  EXPECT_EQ(balanced_group(c, 512, 132, 132, /*max_steps=*/1000), 132);
}

TEST(Fa3CausalBalance, PaperShapesGetAnEvenerGroupWithinHalfOfTheirs) {
  // hd128 causal 512: 512 pairs, 4 m_blocks, group 132 on 132 blocks;
  // hd128 causal 4096: 64 pairs, 32 m_blocks, group 17 (CausalOrder::group_size).
  struct Case { int num_m_blocks; int64_t pairs, group, expect; };
  for (const Case& k : {Case{4, 512, 132, 88}, Case{32, 64, 17, 11}}) {
    const std::vector<int64_t> c = square_causal_cost(k.num_m_blocks);
    const int64_t g = balanced_group(c, k.pairs, k.group, 132);
    EXPECT_EQ(g, k.expect);
    EXPECT_GE(g, k.group / 2);
    const int64_t before = busiest_block_work(c, k.pairs, k.group, 132);
    const int64_t after = busiest_block_work(c, k.pairs, g, 132);
    EXPECT_LT(after, before);
    for (int64_t other = k.group / 2; other <= k.group; ++other)  // no candidate does better
      EXPECT_GE(busiest_block_work(c, k.pairs, other, 132), after) << other;
    const int64_t total = k.pairs * std::accumulate(c.begin(), c.end(), int64_t(0));
    EXPECT_GE(after * 132, total);  // never below the mean
  }
}

// causal_row_shift: the remainder of seqlen_q / block_m moved to the first tile
// in whole 64-row warpgroup slices.
TEST(Fa3CausalBalance, RowShiftMovesTheRemainderToTheFirstTile) {
  EXPECT_EQ(causal_row_shift(true, 4096, 192), 128);  // 21 x 192 + 64: two empty slices
  EXPECT_EQ(causal_row_shift(true, 8192, 192), 64);   // 42 x 192 + 128: one
  EXPECT_EQ(causal_row_shift(true, 4032, 192), 0);    // whole tiles
  EXPECT_EQ(causal_row_shift(true, 4096, 128), 0);
  EXPECT_EQ(causal_row_shift(true, 300, 192), 64);    // 192 + 108: 84 empty rows, one whole slice
  EXPECT_EQ(causal_row_shift(true, 100, 128), 0);     // 28 empty rows: no whole slice
  EXPECT_EQ(causal_row_shift(true, 1, 192), 128);
  EXPECT_EQ(causal_row_shift(true, 0, 192), 0);
  EXPECT_EQ(causal_row_shift(false, 4096, 192), 0);  // no mask: every tile costs the same
  // The shifted tiles [m * bm - shift, (m + 1) * bm - shift), m < ceil(n / bm),
  // cover rows 0 .. n - 1, start on a whole slice, and leave fewer than 64 empty
  // rows after the last.
  for (const int bm : {64, 128, 192}) {
    for (int n = 1; n <= 1000; ++n) {
      const int shift = causal_row_shift(true, n, bm), tiles = (n + bm - 1) / bm;
      ASSERT_EQ(shift % 64, 0);
      ASSERT_GE(shift, 0);
      ASSERT_LT(shift, bm);
      ASSERT_GE(tiles * bm - shift, n) << "n " << n << " bm " << bm;
      ASSERT_LT(tiles * bm - shift - n, 64) << "n " << n << " bm " << bm;
    }
  }
}

}  // namespace
}  // namespace fa::fa3
