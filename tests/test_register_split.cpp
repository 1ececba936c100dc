// The setmaxnreg split rule (kernels/common/register_split.h): a split fits the
// registers the block holds at launch, not the register file.
#include <gtest/gtest.h>

#include "common/register_split.h"

namespace fa {
namespace {

TEST(RegisterSplit, LaunchAllocationIsTheFileOverTheThreadsInGranulesOf8) {
  EXPECT_EQ(launch_regs_per_thread(256), 256);
  EXPECT_EQ(launch_regs_per_thread(384), 168);  // 170.7 rounded down to 8
  EXPECT_EQ(launch_regs_per_thread(512), 128);
}

TEST(RegisterSplit, TheFa3SplitsFitAndTheOneThatHungDoesNot) {
  EXPECT_TRUE(register_split_fits(1, 56, 240));
  EXPECT_TRUE(register_split_fits(2, 24, 240));   // 504 of 3 x 168
  EXPECT_TRUE(register_split_fits(3, 32, 160));   // 512 of 4 x 128
  EXPECT_FALSE(register_split_fits(2, 32, 240));  // 512 > 504: the consumers' setmaxnreg.inc waited forever
  EXPECT_FALSE(register_split_fits(3, 40, 160));
}

}  // namespace
}  // namespace fa
