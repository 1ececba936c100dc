// The randomized Hadamard transform: orthogonal, scores unchanged, signs from
// the seed alone, and it lowers the e4m3 error of QK^T on outlier channels.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "check/fp8_quant.h"
#include "check/hadamard.h"
#include "core/errors.h"

namespace fa {
namespace {

// The matrix H, column j = H e_j.
std::vector<std::vector<double>> matrix(const RandomizedHadamard& h) {
  const int d = h.dim();
  std::vector<std::vector<double>> cols(size_t(d), std::vector<double>(size_t(d), 0.0));
  for (int j = 0; j < d; ++j) {
    cols[size_t(j)][size_t(j)] = 1.0;
    h.apply(cols[size_t(j)].data());
  }
  return cols;
}

TEST(Hadamard, IsOrthogonal) {
  for (int d : {64, 128, 256}) {
    const auto cols = matrix(RandomizedHadamard(d, 7));
    double worst = 0;
    for (int i = 0; i < d; ++i)
      for (int j = 0; j < d; ++j) {
        double dot = 0;
        for (int k = 0; k < d; ++k) dot += cols[size_t(i)][size_t(k)] * cols[size_t(j)][size_t(k)];
        worst = std::max(worst, std::fabs(dot - (i == j ? 1.0 : 0.0)));
      }
    EXPECT_LT(worst, 1e-14) << d;
    // Every entry is +-1/sqrt(d): a Hadamard matrix, not merely some rotation.
    for (int i = 0; i < d; ++i)
      for (int k = 0; k < d; ++k) ASSERT_NEAR(std::fabs(cols[size_t(i)][size_t(k)]), 1 / std::sqrt(double(d)), 1e-15);
  }
}

std::vector<float> normal_rows(int64_t rows, int d, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> n;
  std::vector<float> x(size_t(rows * d));
  for (float& v : x) v = n(gen);
  return x;
}

// Scores of rows of q against rows of k, in double.
std::vector<double> scores(const std::vector<float>& q, const std::vector<float>& k, int d) {
  const size_t nq = q.size() / size_t(d), nk = k.size() / size_t(d);
  std::vector<double> s(nq * nk);
  for (size_t i = 0; i < nq; ++i)
    for (size_t j = 0; j < nk; ++j) {
      double acc = 0;
      for (int c = 0; c < d; ++c) acc += double(q[i * size_t(d) + size_t(c)]) * double(k[j * size_t(d) + size_t(c)]);
      s[i * nk + j] = acc;
    }
  return s;
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

TEST(Hadamard, PreservesScores) {
  for (int d : {64, 128, 256}) {
    std::vector<float> q = normal_rows(40, d, 1), k = normal_rows(50, d, 2);
    const std::vector<double> before = scores(q, k, d);
    const RandomizedHadamard h(d, 99);
    h.apply_rows(q);
    h.apply_rows(k);
    // Rows are rounded to float once after the transform: |q||k| ~ d, so each
    // score moves by about d * 2^-24 * sqrt(d) at most.
    EXPECT_LT(max_abs_diff(scores(q, k, d), before), d * std::sqrt(double(d)) * 0x1.0p-23) << d;
    EXPECT_NE(q, normal_rows(40, d, 1)) << "the rows were transformed";
  }
}

TEST(Hadamard, SignsDependOnTheSeedOnly) {
  const RandomizedHadamard a(128, 5), b(128, 5), c(128, 6);
  EXPECT_EQ(a.signs(), b.signs());
  EXPECT_NE(a.signs(), c.signs());
  int negative = 0;
  for (int8_t s : a.signs()) {
    ASSERT_TRUE(s == 1 || s == -1);
    negative += s < 0;
  }
  EXPECT_GT(negative, 32);  // about half of 128
  EXPECT_LT(negative, 96);
  // The same row gives the same result wherever it sits in the tensor.
  std::vector<float> x = normal_rows(1, 128, 3);
  x.insert(x.end(), x.begin(), x.end());
  a.apply_rows(x);
  EXPECT_TRUE(std::equal(x.begin(), x.begin() + 128, x.begin() + 128));
}

TEST(Hadamard, RefusesDimsThatAreNotPowersOfTwo) {
  for (int d : {0, -64, 1, 80, 96, 192})
    EXPECT_THROW(RandomizedHadamard(d, 1), UsageError) << d;
  std::vector<float> x(100);
  EXPECT_THROW(RandomizedHadamard(64, 1).apply_rows(x), UsageError);
}

// Q and K shaped like real activations: N(0,1) plus two channels, the same in
// every row, 30x larger. Quantized per tensor, the outliers set the scale and
// the ordinary channels lose most of their bits; rotated first, the outlier
// energy is spread over all channels and the scale is set by a far smaller amax.
// Measured max |score error| (plain / rotated): 488 / 93 here (5.3x); 4.3x to
// 6.3x over five other seeds of the data and the signs. 2.5x leaves margin.
TEST(Hadamard, LowersTheE4m3ErrorOfScoresOnOutlierChannels) {
  const int d = 128;
  const int64_t rows = 256;
  const BshdShape shape{1, rows, 1, d};
  auto with_outliers = [&](uint64_t seed) {
    std::vector<float> x = normal_rows(rows, d, seed);
    for (int64_t r = 0; r < rows; ++r)
      for (int c : {17, 90}) x[size_t(r * d + c)] *= 30.0f;
    return x;
  };
  const std::vector<float> q = with_outliers(11), k = with_outliers(12);
  const std::vector<double> exact = scores(q, k, d);
  auto quantized_error = [&](std::vector<float> qq, std::vector<float> kk) {
    return max_abs_diff(scores(dequantize(quantize_e4m3(qq, shape, Fp8Scaling::tensor)),
                               dequantize(quantize_e4m3(kk, shape, Fp8Scaling::tensor)), d),
                        exact);
  };
  const double plain = quantized_error(q, k);
  const RandomizedHadamard h(d, 3);
  std::vector<float> hq = q, hk = k;
  h.apply_rows(hq);
  h.apply_rows(hk);
  const double rotated = quantized_error(hq, hk);
  EXPECT_GT(plain, 2.5 * rotated) << "plain " << plain << ", rotated " << rotated;
}

}  // namespace
}  // namespace fa
