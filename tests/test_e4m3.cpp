// The e4m3 codec: every code, ties to even, saturation, subnormals.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/e4m3.h"

namespace fa {
namespace {

// The value of a code from the format's definition, written independently of
// decode_e4m3: (-1)^s * 2^(E-7) * (1 + M/8), or 2^-6 * M/8 when E = 0.
double value_of(int code) {
  const int s = code >> 7, e = (code >> 3) & 15, m = code & 7;
  const double mag = e == 0 ? std::ldexp(m / 8.0, -6) : std::ldexp(1.0 + m / 8.0, e - 7);
  return s ? -mag : mag;
}

TEST(E4m3, EveryCodeDecodesToItsValueAndEncodesBack) {
  int nans = 0;
  for (int c = 0; c < 256; ++c) {
    const float v = decode_e4m3(uint8_t(c));
    if ((c & 0x7F) == 0x7F) {
      EXPECT_TRUE(std::isnan(v)) << c;
      EXPECT_EQ(encode_e4m3(v), c) << "NaN keeps its sign";
      ++nans;
      continue;
    }
    EXPECT_EQ(double(v), value_of(c)) << c;
    EXPECT_EQ(encode_e4m3(v), c) << c << " = " << v;  // -0 included: 0x80
  }
  EXPECT_EQ(nans, 2);
  EXPECT_EQ(decode_e4m3(0x7E), 448.0f);
  EXPECT_EQ(decode_e4m3(0x01), std::ldexp(1.0f, -9));  // smallest subnormal
  EXPECT_EQ(decode_e4m3(0x08), std::ldexp(1.0f, -6));  // smallest normal
}

// Halfway between two neighbours goes to the one with an even mantissa; just
// off the midpoint goes to the nearer one. Checked in the subnormals, across
// the subnormal/normal edge, and in low, middle and top binades.
TEST(E4m3, RoundsToNearestTiesToEven) {
  for (int c : {0x00, 0x01, 0x02, 0x07, 0x08, 0x09, 0x30, 0x33, 0x38, 0x3F, 0x50, 0x77, 0x7C, 0x7D}) {
    const double lo = value_of(c), hi = value_of(c + 1);
    const double mid = 0.5 * (lo + hi);
    const int even = (c & 1) == 0 ? c : c + 1;
    EXPECT_EQ(encode_e4m3(float(mid)), even) << "tie between codes " << c << " and " << c + 1;
    EXPECT_EQ(encode_e4m3(-float(mid)), even | 0x80) << c;
    const float below = std::nextafter(float(mid), 0.0f), above = std::nextafter(float(mid), 1e9f);
    EXPECT_EQ(encode_e4m3(below), c) << c;
    EXPECT_EQ(encode_e4m3(above), c + 1) << c;
  }
  // Explicit ties: 1.0625 lies between 1 (m=0) and 1.125 (m=1) -> 1; 1.1875 between
  // 1.125 and 1.25 -> 1.25 (m=2); 2^-10 between 0 and 2^-9 -> 0; 3*2^-10 -> 2*2^-9.
  EXPECT_EQ(decode_e4m3(encode_e4m3(1.0625f)), 1.0f);
  EXPECT_EQ(decode_e4m3(encode_e4m3(1.1875f)), 1.25f);
  EXPECT_EQ(decode_e4m3(encode_e4m3(std::ldexp(1.0f, -10))), 0.0f);
  EXPECT_EQ(decode_e4m3(encode_e4m3(3 * std::ldexp(1.0f, -10))), std::ldexp(2.0f, -9));
  // A mantissa that rounds up carries into the next binade: 15.5 (between 15 and 16) -> 16.
  EXPECT_EQ(decode_e4m3(encode_e4m3(15.5f)), 16.0f);
}

TEST(E4m3, SaturatesInsteadOfOverflowing) {
  const float inf = std::numeric_limits<float>::infinity();
  for (float x : {448.0f, 449.0f, 464.0f, 480.0f, 1e6f, 3.0e38f, inf}) {
    EXPECT_EQ(encode_e4m3(x), 0x7E) << x;
    EXPECT_EQ(encode_e4m3(-x), 0xFE) << x;
  }
  EXPECT_EQ(encode_e4m3(std::ldexp(1.0f, -20)), 0x00);  // underflows to zero
  EXPECT_EQ(encode_e4m3(-std::ldexp(1.0f, -20)), 0x80);
  EXPECT_EQ(encode_e4m3(std::numeric_limits<float>::quiet_NaN()), 0x7F);
}

// The nearest code to a >= 0 by the values of the codes alone (value_of), ties
// to the even code, 448 and beyond saturating: the rule, written without the
// codec's arithmetic.
int nearest_code(double a) {
  if (a >= 448.0) return 0x7E;
  int lo = 0, hi = 0x7E;  // value_of(lo) <= a < value_of(hi)
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    (value_of(mid) <= a ? lo : hi) = mid;
  }
  const double below = a - value_of(lo), above = value_of(hi) - a;
  if (below != above) return below < above ? lo : hi;
  return lo % 2 == 0 ? lo : hi;
}

// Every float whose bits are a multiple of 2^12, and its two neighbours, up to
// 480, both signs: 0.8 M values, among them every midpoint between two codes
// (at most 5 significant bits) and the floats on either side of it.
TEST(E4m3, EncodesAsTheNearestCodeOnADenseSetOfFloats) {
  int checked = 0;
  for (uint32_t p = 0; p <= 0x43F00000u; p += 1u << 12)
    for (uint32_t bits : {p - 1u, p, p + 1u}) {
      if (bits > 0x43F00000u) continue;  // p - 1 at p = 0 wraps
      const float x = std::bit_cast<float>(bits);
      const int want = nearest_code(double(x));
      ASSERT_EQ(encode_e4m3(x), want) << std::hexfloat << x;
      ASSERT_EQ(encode_e4m3(-x), want | 0x80) << std::hexfloat << -x;
      ++checked;
    }
  EXPECT_GT(checked, 800000);
}

// round_e4m3 is the round trip through a code, bit for bit (NaNs as decode_e4m3
// gives them): on the dense set above, the float range's ends, subnormal
// floats and the special values. (Every one of the 2^32 floats was compared
// once, outside the tests: the same bits.)
TEST(E4m3, RoundIsTheRoundTripThroughACode) {
  auto round_trip = [](float x) { return std::bit_cast<uint32_t>(decode_e4m3(encode_e4m3(x))); };
  std::vector<uint32_t> all = {0u, 1u, 0x007FFFFFu, 0x00800000u, 0x3B800000u, 0x3C7FFFFFu, 0x3C800000u,
                               0x43E00000u, 0x43E7FFFFu, 0x43E80000u, 0x43F00000u, 0x7F7FFFFFu, 0x7F800000u,
                               0x7F800001u, 0x7FC00000u, 0x7FFFFFFFu};
  for (uint32_t p = 0; p <= 0x44000000u; p += 1u << 12)
    for (uint32_t bits : {p - 1u, p, p + 1u}) all.push_back(bits);
  for (uint32_t bits : all)
    for (uint32_t sign : {0u, 0x80000000u}) {
      const float x = std::bit_cast<float>(bits ^ sign);
      ASSERT_EQ(std::bit_cast<uint32_t>(round_e4m3(x)), round_trip(x)) << std::hex << (bits ^ sign);
    }
}

TEST(E4m3, UlpIsTheSpacingOfNeighbours) {
  for (int c = 0; c < 0x7E; ++c) {
    const double v = value_of(c), next = value_of(c + 1);
    EXPECT_EQ(e4m3_ulp(v), next - v) << c;
  }
}

}  // namespace
}  // namespace fa
