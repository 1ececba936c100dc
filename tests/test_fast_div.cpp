// FastDiv (kernels/common/fast_div.h), the multiply-shift division the fa3
// forward's tile walk uses: equal to '/' and '%' for every divisor and dividend
// it can meet, and at the edges of the method (powers of two and their
// neighbours, d = 1, n near 2^31).
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "common/fast_div.h"

namespace fa {
namespace {

void expect_divides(int32_t d, int32_t n) {
  const FastDiv f(d);
  const int32_t q = f.div(n);
  ASSERT_EQ(q, n / d) << n << " / " << d;
  ASSERT_EQ(f.mod(n, q), n % d) << n << " % " << d;
}

TEST(FastDiv, EveryDividendBelow4096ForEveryDivisorBelow1024) {
  for (int32_t d = 1; d < 1024; ++d)
    for (int32_t n = 0; n < 4096; ++n) expect_divides(d, n);
}

TEST(FastDiv, EdgesOfTheMethod) {
  std::vector<int32_t> divisors = {1, 2, 3, 5, 7, 132, 1000003, INT32_MAX - 1, INT32_MAX};
  for (int s = 1; s < 31; ++s)
    for (int32_t k : {-1, 0, 1}) divisors.push_back(int32_t((int64_t(1) << s) + k));
  std::vector<int32_t> dividends = {0, 1, 2, INT32_MAX, INT32_MAX - 1, 1 << 30, (1 << 30) - 1, (1 << 30) + 1};
  for (int32_t d : divisors) {
    for (int32_t n : dividends) expect_divides(d, n);
    // Around multiples of d, where a quotient one off would show.
    for (int64_t m = 1; m * d < INT32_MAX && m < 4096; m = m * 3 + 1)
      for (int64_t k : {-1, 0, 1})
        if (m * d + k >= 0 && m * d + k <= INT32_MAX) expect_divides(d, int32_t(m * d + k));
  }
}

TEST(FastDiv, RandomPairs) {
  std::mt19937_64 rng(12345);
  std::uniform_int_distribution<int32_t> any(0, INT32_MAX), small(1, 1 << 16);
  for (int i = 0; i < 2000000; ++i) expect_divides(i % 2 ? any(rng) | 1 : small(rng), any(rng));
}

TEST(FastDiv, NonPositiveDivisorBecomesOne) {
  // The schedule never builds one (plan() gives every divisor >= 1); a default
  // or a bad value must still not divide by zero.
  EXPECT_EQ(FastDiv(0).div(77), 77);
  EXPECT_EQ(FastDiv().div(77), 77);
}

}  // namespace
}  // namespace fa
