// exp2_poly (kernels/common/exp2_poly.h), the FMA-pipe 2^x some FP8 softmax
// variants use: its error bound over the softmax's whole domain, and the
// values a kernel relies on at the edges (masked scores, NaN, 0).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "common/exp2_poly.h"

namespace fa {
namespace {

double rel_err(float x) {
  const double want = std::exp2(double(x));
  return std::abs(double(exp2_poly(x)) / want - 1.0);
}

TEST(Exp2Poly, RelativeErrorBelowItsBoundOverTheSoftmaxDomain) {
  // Every 2^-12 step of [-125, 0]: each integer part and the fraction's whole range.
  double worst = 0.0;
  float at = 0.f;
  for (int i = 0; i <= 125 * 4096; ++i) {
    const float x = -float(i) / 4096.f;
    const double e = rel_err(x);
    if (e > worst) worst = e, at = x;
  }
  EXPECT_LT(worst, 7.6e-5) << "at x = " << at;
  EXPECT_GT(worst, 1e-6) << "a cubic cannot be this close: is exp2_poly calling exp2?";
}

TEST(Exp2Poly, HalfIntegersAndRoundingTiesStayWithinTheBound) {
  // x = j + 1/2 is where t = x + 1.5 * 2^23 rounds to even: f is +1/2 or -1/2.
  for (int j = -124; j < 0; ++j) {  // -125.5 is clamped to -125: outside the bound by design
    EXPECT_LT(rel_err(float(j) + 0.5f), 7.6e-5) << j;
    EXPECT_LT(rel_err(float(j) - 0.5f), 7.6e-5) << j;
    EXPECT_LT(rel_err(float(j)), 7.6e-5) << j;
  }
}

TEST(Exp2Poly, MaskedScoresGiveATinyPositiveValueAndNanStaysNan) {
  const float inf = std::numeric_limits<float>::infinity();
  const float masked = exp2_poly(-inf);
  EXPECT_GT(masked, 0.f);
  EXPECT_LT(masked, 1e-37f);  // 2^-125 * c0: nothing next to a row sum of at least 1
  EXPECT_EQ(exp2_poly(-1000.f), masked);
  EXPECT_EQ(exp2_poly(-125.f), masked);
  EXPECT_TRUE(std::isnan(exp2_poly(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_NEAR(exp2_poly(0.f), 1.f, 7.6e-5f);  // the row's maximum
}

}  // namespace
}  // namespace fa
