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

TEST(Throttle, FlagsARowTimedBelowTheMaximumClock) {
  EXPECT_EQ(throttle_reason(1980, 1980, 1980), "");
  EXPECT_EQ(throttle_reason(1950, 1965, 1980), "");  // within 5 % of the maximum
  const std::string low = throttle_reason(1635, 1695, 1980);  // already capped, steady
  EXPECT_NE(low.find("1635"), std::string::npos);
  EXPECT_NE(low.find("1980 MHz maximum"), std::string::npos);
  EXPECT_NE(throttle_reason(1725, 1965, 1980), "");  // recovering during the row
  EXPECT_EQ(throttle_reason(1635, 1695, -1), "");     // maximum unknown: only a fall is seen
  EXPECT_NE(throttle_reason(1980, 1605, 1980).find("fell from 1980 to 1605"), std::string::npos);
}

TEST(Throttle, UnreadableClocksNeverFlag) {
  EXPECT_EQ(throttle_reason(-1, 1605), "");
  EXPECT_EQ(throttle_reason(1980, -1), "");
}

}  // namespace
}  // namespace fa
