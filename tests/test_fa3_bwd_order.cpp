// The FA3 backward's tile order (kernels/fa3/fa3_bwd_order.h): every tile once,
// each pair's K/V blocks in increasing order (the deterministic mode's dQ order),
// groups of group_bh pairs n_block-major, and a short group first, never last.
#include <gtest/gtest.h>

#include <vector>

#include "fa3/fa3_bwd_order.h"

namespace fa::fa3 {
namespace {

TEST(Fa3BwdOrder, EveryTileOnceEachPairInBlockOrder) {
  for (int pairs : {1, 2, 3, 7, 16, 32})
    for (int n : {1, 5, 64, 128})
      for (int group : {1, 2, 3, 7, 16}) {
        if (group > pairs) continue;
        std::vector<int> seen(size_t(pairs * n), 0), last(size_t(pairs), -1);
        for (int idx = 0; idx < pairs * n; ++idx) {
          const BwdOrder o = bwd_order_at(idx, pairs, n, group);
          ASSERT_GE(o.pair, 0);
          ASSERT_LT(o.pair, pairs);
          ASSERT_GE(o.n_block, 0);
          ASSERT_LT(o.n_block, n);
          ++seen[size_t(o.pair * n + o.n_block)];
          EXPECT_EQ(o.n_block, last[size_t(o.pair)] + 1) << pairs << " pairs, n " << n << ", group " << group;
          last[size_t(o.pair)] = o.n_block;
        }
        for (int c : seen) ASSERT_EQ(c, 1);
      }
}

// 16 pairs in groups of 3 (hd256 causal 8192 on the H200): the one leftover pair
// goes first, so the grid ends with a whole group's short tiles.
TEST(Fa3BwdOrder, TheShortGroupGoesFirst) {
  const int pairs = 16, n = 128, group = 3;
  for (int idx = 0; idx < n; ++idx) EXPECT_EQ(bwd_order_at(idx, pairs, n, group).pair, 0);
  // The last 3 * n tiles belong to the last three pairs, n_block-major.
  for (int k = 0; k < 3 * n; ++k) {
    const BwdOrder o = bwd_order_at(pairs * n - 3 * n + k, pairs, n, group);
    EXPECT_EQ(o.pair, 13 + k % 3);
    EXPECT_EQ(o.n_block, k / 3);
  }
  // Whole groups: the order of the groups is unchanged.
  EXPECT_EQ(bwd_order_at(0, 15, n, 3).pair, 0);
  EXPECT_EQ(bwd_order_at(1, 15, n, 3).pair, 1);
  EXPECT_EQ(bwd_order_at(3, 15, n, 3).n_block, 1);
}

TEST(Fa3BwdOrder, OnePairPerGroupIsPairMajor) {
  for (int idx = 0; idx < 4 * 10; ++idx) {
    const BwdOrder o = bwd_order_at(idx, 4, 10, 1);
    EXPECT_EQ(o.pair, idx / 10);
    EXPECT_EQ(o.n_block, idx % 10);
  }
}

}  // namespace
}  // namespace fa::fa3
