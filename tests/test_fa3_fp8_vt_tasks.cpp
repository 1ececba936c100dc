// The e4m3 fa3 forward's own V^T (kernels/fa3/fa3_fp8_vt_tasks.h): the task
// queue's order and the words it is shared by. Host code only; fp8_check's
// `vs` variant and fa-check run the kernel side.
#include <gtest/gtest.h>

#include <set>
#include <utility>
#include <vector>

#include "fa3/fa3_fp8_vt_tasks.h"

namespace fa {
namespace {

std::vector<Fp8VtTask> queue(int pairs, int blocks, int group) {
  std::vector<Fp8VtTask> q;
  for (int t = 0; t < pairs * blocks; ++t) q.push_back(fp8_vt_task_at(t, pairs, blocks, group));
  return q;
}

// Every (pair, block) exactly once, whatever the group (the last one short).
TEST(Fa3Fp8VtTasks, TheQueueHoldsEveryBlockOnce) {
  for (int group : {1, 3, 5, 6, 7}) {
    const int pairs = 7, blocks = 4;
    std::set<std::pair<int, int>> seen;
    for (const Fp8VtTask& t : queue(pairs, blocks, group)) {
      ASSERT_GE(t.pair, 0);
      ASSERT_LT(t.pair, pairs);
      ASSERT_GE(t.block, 0);
      ASSERT_LT(t.block, blocks);
      EXPECT_TRUE(seen.insert({t.pair, t.block}).second) << "group " << group;
    }
    EXPECT_EQ(seen.size(), size_t(pairs * blocks)) << "group " << group;
  }
}

// A group's blocks come last first, its pairs inside each block: the first
// tasks are the last block of the first group's pairs, which is where every
// tile of the first round starts.
TEST(Fa3Fp8VtTasks, TheFirstGroupsLastBlocksComeFirst) {
  const std::vector<Fp8VtTask> q = queue(5, 3, 2);  // groups {0, 1}, {2, 3}, {4}
  const Fp8VtTask want[] = {{0, 2}, {1, 2}, {0, 1}, {1, 1}, {0, 0}, {1, 0}, {2, 2}, {3, 2}, {2, 1}};
  for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); ++i) {
    EXPECT_EQ(q[i].pair, want[i].pair) << i;
    EXPECT_EQ(q[i].block, want[i].block) << i;
  }
  // The short last group (pair 4 alone) ends the queue with its blocks, last first.
  ASSERT_EQ(q.size(), 15u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(q[12 + i].pair, 4);
    EXPECT_EQ(q[12 + i].block, 2 - i);
  }
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
