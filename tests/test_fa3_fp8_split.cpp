// The e4m3 fa3 forward's split tail (kernels/fa3/fa3_fp8_split.h): which tiles
// become pieces, how many, and the workspace their merge reads. Host code only;
// fp8_check's `split` variant and fa-check run the kernel side.
#include <gtest/gtest.h>

#include "fa3/fa3_fp8_split.h"

namespace fa {
namespace {

// hd128 at 8192 or 16384 tokens (192-row tiles): 1376 tiles on 132 SMs end in a
// round of 56; in halves they take half a round.
TEST(Fa3Fp8Split, HalvesALastRoundThatHalvesFit) {
  const Fp8SplitPlan sp = fp8_split_plan(1376, 132, 64);
  EXPECT_EQ(sp.k, 2);
  EXPECT_EQ(sp.tail, 56);
  EXPECT_EQ(sp.split_from, 1320);
  EXPECT_EQ(sp.num_items, 1320 + 112);
}

// hd128 at 4096 tokens: a last round of 88 tiles; halves need two rounds of
// halves (no gain), thirds two rounds of thirds.
TEST(Fa3Fp8Split, ThirdsWhereHalvesWouldStillTakeTwoRounds) {
  const Fp8SplitPlan sp = fp8_split_plan(1408, 132, 32);
  EXPECT_EQ(sp.k, 3);
  EXPECT_EQ(sp.tail, 88);
  EXPECT_EQ(sp.num_items, 1320 + 264);
}

TEST(Fa3Fp8Split, NoSplitWhereRoundsAreFullOrNothingIsSaved) {
  EXPECT_EQ(fp8_split_plan(1320, 132, 64).k, 1);  // ten full rounds
  const Fp8SplitPlan none = fp8_split_plan(1320 + 130, 132, 64);  // 130 of 132: pieces need whole rounds too
  EXPECT_EQ(none.k, 1);
  EXPECT_EQ(none.split_from, 1450);
  EXPECT_EQ(none.num_items, 1450);
  EXPECT_EQ(fp8_split_plan(100, 0, 64).k, 1);  // no grid known
}

// A problem of fewer tiles than SMs: every tile is split, as far as pieces keep
// 4 K/V blocks.
TEST(Fa3Fp8Split, SmallProblemsSplitEveryTileWhilePiecesKeepFourBlocks) {
  const Fp8SplitPlan sp = fp8_split_plan(48, 132, 8);
  EXPECT_EQ(sp.k, 2);  // thirds and quarters would leave fewer than 4 blocks
  EXPECT_EQ(sp.split_from, 0);
  EXPECT_EQ(sp.num_items, 96);
  EXPECT_EQ(fp8_split_plan(2, 132, 33).k, 4);    // one head of 4097 keys: quarters
  EXPECT_EQ(fp8_split_plan(48, 132, 7).k, 1);    // halves of 3 blocks: not worth a merge
}

TEST(Fa3Fp8Split, WorkspaceHoldsPaddedCountsThenEachPiecesPartials) {
  const Fp8SplitPlan sp = fp8_split_plan(1376, 132, 64);  // 56 tiles in halves
  EXPECT_EQ(fp8_split_counts(sp, 192), 56 * 12);         // one per consumer warp
  EXPECT_EQ(fp8_split_counts_bytes(sp, 192), 2816);        // 2688 bytes, to 256
  // per piece: 384 consumer threads x (64 + 4) floats
  EXPECT_EQ(fp8_split_bytes(sp, 192, 128), 2816 + int64_t(112) * 384 * 68 * 4);
  EXPECT_EQ(fp8_split_bytes(fp8_split_plan(1320, 132, 64), 192, 128), 0);
}

}  // namespace
}  // namespace fa
