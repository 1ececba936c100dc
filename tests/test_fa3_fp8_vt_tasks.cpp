// The e4m3 fa3 forward's own V^T (kernels/fa3/fa3_fp8_vt_tasks.h): the task
// queue's order and the words it is shared by. Host code only; fp8_check's
// `vs` variant and fa-check run the kernel side.
#include <gtest/gtest.h>

#include <set>
#include <tuple>
#include <vector>

#include "fa3/fa3_fp8_vt_tasks.h"

namespace fa {
namespace {

std::vector<Fp8VtTask> queue(int pairs, int blocks, int units, int group) {
  std::vector<Fp8VtTask> q;
  for (int t = 0; t < pairs * blocks * units; ++t) q.push_back(fp8_vt_task_at(t, pairs, blocks, units, group));
  return q;
}

// Every (pair, block, unit) exactly once, whatever the group (the last one short).
TEST(Fa3Fp8VtTasks, TheQueueHoldsEveryUnitOnce) {
  for (int group : {1, 3, 5, 6, 7}) {
    const int pairs = 7, blocks = 4, units = 4;
    std::set<std::tuple<int, int, int>> seen;
    for (const Fp8VtTask& t : queue(pairs, blocks, units, group)) {
      ASSERT_GE(t.pair, 0);
      ASSERT_LT(t.pair, pairs);
      ASSERT_GE(t.block, 0);
      ASSERT_LT(t.block, blocks);
      ASSERT_GE(t.unit, 0);
      ASSERT_LT(t.unit, units);
      EXPECT_TRUE(seen.insert({t.pair, t.block, t.unit}).second) << "group " << group;
    }
    EXPECT_EQ(seen.size(), size_t(pairs * blocks * units)) << "group " << group;
  }
}

// A group's blocks come last first, its pairs inside each block, units
// innermost: the first tasks are the last block of the first group's pairs,
// which is where every tile of the first round starts.
TEST(Fa3Fp8VtTasks, TheFirstGroupsLastBlocksComeFirst) {
  const std::vector<Fp8VtTask> q = queue(5, 3, 2, 2);  // groups {0, 1}, {2, 3}, {4}
  const Fp8VtTask want[] = {{0, 2, 0}, {0, 2, 1}, {1, 2, 0}, {1, 2, 1}, {0, 1, 0}, {0, 1, 1},
                            {1, 1, 0}, {1, 1, 1}, {0, 0, 0}, {0, 0, 1}, {1, 0, 0}, {1, 0, 1},
                            {2, 2, 0}};
  for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); ++i) {
    EXPECT_EQ(q[i].pair, want[i].pair) << i;
    EXPECT_EQ(q[i].block, want[i].block) << i;
    EXPECT_EQ(q[i].unit, want[i].unit) << i;
  }
  // The short last group (pair 4 alone) ends the queue with its block 0.
  EXPECT_EQ(q.back().pair, 4);
  EXPECT_EQ(q.back().block, 0);
  EXPECT_EQ(q.back().unit, 1);
}

// Units of the padded V^T row (a multiple of 64 keys) per block of block_n keys.
TEST(Fa3Fp8VtTasks, BlockUnitsStopAtThePaddedRow) {
  EXPECT_EQ(fp8_vt_block_units(0, 128, 4096), 4);
  EXPECT_EQ(fp8_vt_block_units(31, 128, 4096), 4);
  EXPECT_EQ(fp8_vt_block_units(1, 128, 192), 2);  // keys 128..191
  EXPECT_EQ(fp8_vt_block_units(2, 256, 576), 2);  // keys 512..575
}

// The group: the pairs of one round of the list.
TEST(Fa3Fp8VtTasks, GroupFollowsTheRoundsOfTheList) {
  // hd128 non-causal 4096 tokens: 22 tiles per head, 132 SMs: 6 heads a round.
  EXPECT_EQ(fp8_vt_task_group(false, 132, 22, 64, 1, 64), 6);
  // The same with 4 query heads per kv head: 2 kv heads.
  EXPECT_EQ(fp8_vt_task_group(false, 132, 22, 64, 4, 16), 2);
  // Causal: the list's own group.
  EXPECT_EQ(fp8_vt_task_group(true, 132, 22, 24, 1, 64), 24);
  // Never more than the pairs, never less than one.
  EXPECT_EQ(fp8_vt_task_group(false, 132, 1, 8, 1, 8), 8);
  EXPECT_EQ(fp8_vt_task_group(true, 132, 22, 0, 1, 8), 1);
}

TEST(Fa3Fp8VtTasks, SyncWordsArePaddedTo256Bytes) {
  EXPECT_EQ(fp8_vt_sync_words(64, 32), kVtCountWords + 64 * 32);
  EXPECT_EQ(fp8_vt_sync_bytes(64, 32), (int64_t(kVtCountWords + 2048) * 4 + 255) / 256 * 256);
  EXPECT_EQ(fp8_vt_sync_bytes(1, 1) % 256, 0);
}

// Only three consumer warpgroups (192 rows) reading V^T from global memory.
TEST(Fa3Fp8VtTasks, OnlyThreeWarpgroupTilesShareVt) {
  EXPECT_TRUE(fp8_tile_can_share_vt(192, false));
  EXPECT_FALSE(fp8_tile_can_share_vt(192, true));
  EXPECT_FALSE(fp8_tile_can_share_vt(128, false));
  EXPECT_FALSE(fp8_tile_can_share_vt(64, false));
}

}  // namespace
}  // namespace fa
