#include <gtest/gtest.h>

#include "measure/throttle.h"

namespace fa {
namespace {

TEST(Throttle, FlagsAClockDropOfMoreThanFivePercent) {
  EXPECT_EQ(throttle_reason(1980, 1980), "");
  EXPECT_EQ(throttle_reason(1980, 1890), "");  // 4.5 %: boost jitter, not a cap
  const std::string r = throttle_reason(1980, 1605);
  EXPECT_NE(r.find("1980"), std::string::npos);
  EXPECT_NE(r.find("1605"), std::string::npos);
  EXPECT_EQ(throttle_reason(1605, 1980), "");  // rising is not throttling
}

TEST(Throttle, UnreadableClocksNeverFlag) {
  EXPECT_EQ(throttle_reason(-1, 1605), "");
  EXPECT_EQ(throttle_reason(1980, -1), "");
}

}  // namespace
}  // namespace fa
