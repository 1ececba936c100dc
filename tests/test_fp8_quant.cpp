// e4m3 quantization with descales: round-trip error, the groups of each
// scaling mode, zero groups, bad values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "core/e4m3.h"
#include "check/fp8_quant.h"
#include "core/errors.h"

namespace fa {
namespace {

const BshdShape kShape{2, 37, 3, 16};  // 37 rows: the last block of 8 is short

std::vector<float> normal_tensor(const BshdShape& sh, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> n;
  std::vector<float> x(size_t(sh.elements()));
  for (float& v : x) v = n(gen);
  return x;
}

size_t index(const BshdShape& sh, int64_t b, int64_t s, int64_t h, int64_t c) {
  return size_t(((b * sh.seqlen + s) * sh.heads + h) * sh.head_dim + c);
}

// Largest |x - dequantized| / bound over a tensor, where the bound is half an
// e4m3 ulp of the scaled value times the descale, plus a few float roundings
// of |x| (the scaled value and the dequantizing product are rounded to float).
double worst_error_over_bound(const std::vector<float>& x, const Fp8Tensor& t) {
  const std::vector<float> y = dequantize(t);
  double worst = 0;
  size_t i = 0;
  for (int64_t b = 0; b < t.shape.batch; ++b)
    for (int64_t s = 0; s < t.shape.seqlen; ++s)
      for (int64_t h = 0; h < t.shape.heads; ++h)
        for (int64_t c = 0; c < t.shape.head_dim; ++c, ++i) {
          const double d = t.descales[size_t(fp8_group_of(t.shape, t.scaling, t.block_rows, b, s, h))];
          const double bound = 0.5 * e4m3_ulp(double(x[i]) / d) * d + 4 * 0x1.0p-24 * std::fabs(x[i]) + 1e-30;
          worst = std::max(worst, std::fabs(double(x[i]) - double(y[i])) / bound);
        }
  return worst;
}

TEST(Fp8Quant, RoundTripWithinHalfAnUlpTimesDescaleInEveryMode) {
  const std::vector<float> x = normal_tensor(kShape, 1);
  for (Fp8Scaling m : {Fp8Scaling::tensor, Fp8Scaling::head, Fp8Scaling::block}) {
    const Fp8Tensor t = quantize_e4m3(x, kShape, m, 8);
    ASSERT_EQ(t.codes.size(), x.size());
    const double w = worst_error_over_bound(x, t);
    EXPECT_LE(w, 1.0) << to_string(m);
    EXPECT_GT(w, 0.5) << to_string(m) << ": the bound is nearly reached, so it is the right size";
  }
}

TEST(Fp8Quant, EachGroupsAmaxMapsTo448) {
  const std::vector<float> x = normal_tensor(kShape, 2);
  for (Fp8Scaling m : {Fp8Scaling::tensor, Fp8Scaling::head, Fp8Scaling::block}) {
    const Fp8Tensor t = quantize_e4m3(x, kShape, m, 8);
    std::vector<int> top(t.descales.size(), 0);
    size_t i = 0;
    for (int64_t b = 0; b < kShape.batch; ++b)
      for (int64_t s = 0; s < kShape.seqlen; ++s)
        for (int64_t h = 0; h < kShape.heads; ++h)
          for (int64_t c = 0; c < kShape.head_dim; ++c, ++i) {
            const int64_t g = fp8_group_of(kShape, m, 8, b, s, h);
            top[size_t(g)] = std::max(top[size_t(g)], int(t.codes[i] & 0x7F));
          }
    for (size_t g = 0; g < top.size(); ++g) EXPECT_EQ(top[g], 0x7E) << to_string(m) << " group " << g;
  }
}

TEST(Fp8Quant, DescaleCountAndLayoutPerMode) {
  EXPECT_EQ(fp8_group_count(kShape, Fp8Scaling::tensor, 0), 1);
  EXPECT_EQ(fp8_group_count(kShape, Fp8Scaling::head, 0), 2 * 3);
  EXPECT_EQ(fp8_group_count(kShape, Fp8Scaling::block, 8), 2 * 3 * 5);   // ceil(37 / 8) = 5
  EXPECT_EQ(fp8_group_count(kShape, Fp8Scaling::block, 37), 2 * 3);
  EXPECT_EQ(fp8_group_count(kShape, Fp8Scaling::block, 1000), 2 * 3);
  EXPECT_EQ(fp8_group_count(kShape, Fp8Scaling::block, 1), 2 * 3 * 37);
  const std::vector<float> x = normal_tensor(kShape, 3);
  EXPECT_EQ(quantize_e4m3(x, kShape, Fp8Scaling::block, 8).descales.size(), size_t(30));
  // [batch, heads, block]: batch 1, head 2, row 36 is in the last block of the last head.
  EXPECT_EQ(fp8_group_of(kShape, Fp8Scaling::block, 8, 1, 36, 2), 29);
  EXPECT_EQ(fp8_group_of(kShape, Fp8Scaling::block, 8, 0, 8, 0), 1);
  EXPECT_EQ(fp8_group_of(kShape, Fp8Scaling::head, 0, 1, 36, 0), 3);
}

// An outlier in one group coarsens that group's codes only: every other group
// quantizes exactly as without it.
TEST(Fp8Quant, GroupsAreIndependent) {
  const std::vector<float> x = normal_tensor(kShape, 4);
  std::vector<float> spiked = x;
  spiked[index(kShape, 1, 10, 1, 5)] = 1000.0f;  // batch 1, head 1, block 1 of 8-row blocks
  for (Fp8Scaling m : {Fp8Scaling::head, Fp8Scaling::block}) {
    const Fp8Tensor a = quantize_e4m3(x, kShape, m, 8), b = quantize_e4m3(spiked, kShape, m, 8);
    const int64_t spiked_group = fp8_group_of(kShape, m, 8, 1, 10, 1);
    for (size_t g = 0; g < a.descales.size(); ++g) {
      if (int64_t(g) == spiked_group) EXPECT_GT(b.descales[g], 100 * a.descales[g]);
      else EXPECT_EQ(a.descales[g], b.descales[g]) << to_string(m) << " group " << g;
    }
    size_t i = 0, other = 0;
    for (int64_t bb = 0; bb < kShape.batch; ++bb)
      for (int64_t s = 0; s < kShape.seqlen; ++s)
        for (int64_t h = 0; h < kShape.heads; ++h)
          for (int64_t c = 0; c < kShape.head_dim; ++c, ++i)
            if (fp8_group_of(kShape, m, 8, bb, s, h) != spiked_group) {
              ASSERT_EQ(a.codes[i], b.codes[i]) << to_string(m) << " element " << i;
              ++other;
            }
    EXPECT_GT(other, x.size() / 2);
  }
  // With one scale for the tensor, the spike coarsens every element instead.
  const Fp8Tensor a = quantize_e4m3(x, kShape, Fp8Scaling::tensor), b = quantize_e4m3(spiked, kShape, Fp8Scaling::tensor);
  EXPECT_GT(b.descales[0], 100 * a.descales[0]);
}

TEST(Fp8Quant, ZeroGroupHasDescaleOneAndZeroCodes) {
  std::vector<float> x = normal_tensor(kShape, 5);
  for (int64_t s = 0; s < kShape.seqlen; ++s)
    for (int64_t c = 0; c < kShape.head_dim; ++c) x[index(kShape, 0, s, 2, c)] = 0.0f;  // batch 0, head 2
  const Fp8Tensor t = quantize_e4m3(x, kShape, Fp8Scaling::head);
  EXPECT_EQ(t.descales[2], 1.0f);
  EXPECT_NE(t.descales[0], 1.0f);
  const std::vector<float> y = dequantize(t);
  for (int64_t s = 0; s < kShape.seqlen; ++s)
    for (int64_t c = 0; c < kShape.head_dim; ++c) {
      EXPECT_EQ(t.codes[index(kShape, 0, s, 2, c)], 0);
      EXPECT_EQ(y[index(kShape, 0, s, 2, c)], 0.0f);
    }
  const Fp8Tensor z = quantize_e4m3(std::vector<float>(x.size(), 0.0f), kShape, Fp8Scaling::tensor);
  EXPECT_EQ(z.descales, std::vector<float>{1.0f});
}

TEST(Fp8Quant, BadValuesAreUsageErrors) {
  const std::vector<float> x = normal_tensor(kShape, 6);
  for (int64_t rows : {0, -1})
    EXPECT_THROW(quantize_e4m3(x, kShape, Fp8Scaling::block, rows), UsageError) << rows;
  EXPECT_NO_THROW(quantize_e4m3(x, kShape, Fp8Scaling::head, 0));  // block_rows is block scaling's alone
  EXPECT_THROW(quantize_e4m3(std::vector<float>(10), kShape, Fp8Scaling::tensor), UsageError);
  EXPECT_THROW(quantize_e4m3({}, BshdShape{0, 1, 1, 1}, Fp8Scaling::tensor), UsageError);
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                    -std::numeric_limits<float>::infinity()}) {
    std::vector<float> y = x;
    y[index(kShape, 1, 20, 2, 7)] = bad;
    try {
      quantize_e4m3(y, kShape, Fp8Scaling::tensor);
      ADD_FAILURE() << "no error for " << bad;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("[batch 1, row 20, head 2, channel 7]"), std::string::npos) << e.what();
    }
  }
}

// The quantizer runs in tasks of sequence rows on every thread: a tensor of
// several tasks (1000 rows, two batches) gives, in every mode, the descales and
// codes of a plain loop over its elements.
TEST(Fp8Quant, ThreadedQuantizationEqualsOneLoop) {
  const BshdShape sh{2, 1000, 3, 16};
  std::mt19937 rng(9);
  std::normal_distribution<float> nd(0.f, 2.f);
  std::vector<float> x(size_t(sh.elements()));
  for (float& e : x) e = nd(rng);
  x[size_t(sh.elements() - 5)] = 900.f;  // one group's amax far in the last task
  for (Fp8Scaling mode : {Fp8Scaling::tensor, Fp8Scaling::head, Fp8Scaling::block}) {
    const Fp8Tensor t = quantize_e4m3(x, sh, mode, 128);
    std::vector<double> amax(t.descales.size(), 0.0);
    std::vector<int64_t> group(x.size());
    for (int64_t b = 0, i = 0; b < sh.batch; ++b)
      for (int64_t s = 0; s < sh.seqlen; ++s)
        for (int64_t h = 0; h < sh.heads; ++h)
          for (int64_t c = 0; c < sh.head_dim; ++c, ++i) {
            group[size_t(i)] = fp8_group_of(sh, mode, 128, b, s, h);
            amax[size_t(group[size_t(i)])] = std::max(amax[size_t(group[size_t(i)])], std::fabs(double(x[size_t(i)])));
          }
    for (size_t g = 0; g < amax.size(); ++g) ASSERT_EQ(t.descales[g], float(amax[g] / 448.0)) << "group " << g;
    for (size_t i = 0; i < x.size(); ++i)
      ASSERT_EQ(t.codes[i], encode_e4m3(float(double(x[i]) * (448.0 / amax[size_t(group[i])])))) << "element " << i;
  }
}

TEST(Fp8Quant, ScalingNamesRoundTrip) {
  for (Fp8Scaling m : {Fp8Scaling::tensor, Fp8Scaling::head, Fp8Scaling::block})
    EXPECT_EQ(parse_fp8_scaling(to_string(m)), m);
  EXPECT_FALSE(parse_fp8_scaling("row").has_value());
}

}  // namespace
}  // namespace fa
