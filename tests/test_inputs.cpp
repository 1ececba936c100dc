// Seeded inputs: deterministic per seed, different across seeds, rounded to the
// dtype exactly (RNE), and the adversarial case really is adversarial.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>

#include "check/half.h"
#include "check/inputs.h"

namespace fa {
namespace {

AttnProblem shape(DType dt) {
  AttnProblem p;
  p.batch = 2, p.heads = 4, p.heads_kv = 2, p.seqlen_q = 33, p.seqlen_k = 70, p.head_dim = 64;
  p.dtype = dt;
  return p;
}

TEST(Inputs, DeterministicPerSeedDifferentAcrossSeeds) {
  for (Distribution d : {Distribution::normal, Distribution::uniform, Distribution::adversarial,
                         Distribution::outliers}) {
    const AttnProblem p = shape(DType::bf16);
    const HostInputs a = generate_inputs(p, d, 123), b = generate_inputs(p, d, 123);
    const HostInputs c = generate_inputs(p, d, 124);
    EXPECT_EQ(a.q, b.q);
    EXPECT_EQ(a.k, b.k);
    EXPECT_EQ(a.v, b.v);
    EXPECT_NE(a.q, c.q) << to_string(d);
    EXPECT_NE(a.v, c.v) << to_string(d);
    EXPECT_EQ(a.q.size(), size_t(2 * 33 * 4 * 64));
    EXPECT_EQ(a.k.size(), size_t(2 * 70 * 2 * 64));
  }
}

// Values are made in fixed 65536-element chunks, each from its own generator
// keyed by (seed, tensor, chunk), in parallel: a value depends on the seed and
// its index only — not on the tensor's total size or on which thread ran it —
// and chunks do not repeat one stream.
TEST(Inputs, ChunkedGenerationIsIndependentOfSizeAndThreads) {
  AttnProblem big = shape(DType::f32), small = shape(DType::f32);
  big.seqlen_q = 1100, big.seqlen_k = 1100;  // q: 2*1100*4*64 = 563200 values, 9 chunks
  small.seqlen_q = 10, small.seqlen_k = 10;
  const HostInputs b1 = generate_inputs(big, Distribution::normal, 42);
  const HostInputs b2 = generate_inputs(big, Distribution::normal, 42);
  const HostInputs s = generate_inputs(small, Distribution::normal, 42);
  EXPECT_EQ(b1.q, b2.q);  // run twice on a thread pool: same values
  ASSERT_GT(b1.q.size(), size_t(3) << 16);
  for (size_t i = 0; i < s.q.size(); ++i) ASSERT_EQ(s.q[i], b1.q[i]) << i;
  const std::vector<float> c0(b1.q.begin(), b1.q.begin() + 64), c1(b1.q.begin() + 65536, b1.q.begin() + 65600);
  EXPECT_NE(c0, c1);
  EXPECT_NE(std::vector<float>(b1.q.begin(), b1.q.begin() + 64), std::vector<float>(b1.k.begin(), b1.k.begin() + 64));
}

TEST(Inputs, MomentsOfNormalAndUniform) {
  AttnProblem p = shape(DType::f32);
  p.seqlen_q = 2000;
  const HostInputs n = generate_inputs(p, Distribution::normal, 5);
  double mean = 0, var = 0;
  for (float x : n.q) mean += x;
  mean /= double(n.q.size());
  for (float x : n.q) var += (x - mean) * (x - mean);
  var /= double(n.q.size());
  EXPECT_NEAR(mean, 0.0, 0.01);
  EXPECT_NEAR(var, 1.0, 0.02);
  const HostInputs u = generate_inputs(p, Distribution::uniform, 5);
  float lo = 1, hi = -1;
  for (float x : u.q) lo = std::min(lo, x), hi = std::max(hi, x);
  EXPECT_GE(lo, -1.f);
  EXPECT_LT(hi, 1.f);
  EXPECT_LT(lo, -0.99f);
  EXPECT_GT(hi, 0.99f);
}

TEST(Inputs, RoundingToNearestEvenKnownValues) {
  // bf16 keeps 8 significant bits: 1 + 2^-8 is a tie between 1 and 1 + 2^-7 -> even (1).
  EXPECT_EQ(round_bf16(1.0f + 0x1p-8f), 1.0f);
  EXPECT_EQ(round_bf16(1.0f + 0x1p-7f + 0x1p-8f), 1.0f + 0x1p-6f);  // tie, odd -> up
  EXPECT_EQ(round_bf16(1.0f + 0x1p-8f + 0x1p-20f), 1.0f + 0x1p-7f);  // above the tie
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bf16_bits(-2.0f), 0xC000);
  EXPECT_TRUE(std::isinf(round_bf16(3.4e38f)));  // rounds past the largest bf16
  EXPECT_TRUE(std::isnan(round_bf16(NAN)));
  // fp16 keeps 11 significant bits.
  EXPECT_EQ(round_f16(1.0f + 0x1p-11f), 1.0f);                     // tie -> even
  EXPECT_EQ(round_f16(1.0f + 0x1p-10f + 0x1p-11f), 1.0f + 0x1p-9f); // tie, odd -> up
  EXPECT_EQ(float_to_f16_bits(1.0f), 0x3C00);
  EXPECT_EQ(float_to_f16_bits(65504.f), 0x7BFF);
  EXPECT_EQ(float_to_f16_bits(65520.f), 0x7C00);  // halfway to 2^16 rounds to inf
  EXPECT_EQ(float_to_f16_bits(0x1p-24f), 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_f16_bits(0x1p-25f), 0x0000);  // tie with 0 -> even (0)
  EXPECT_EQ(float_to_f16_bits(0x1.8p-24f), 0x0002);  // 1.5 units -> 2 (even)
  EXPECT_EQ(f16_bits_to_float(0x0001), 0x1p-24f);
  EXPECT_EQ(f16_bits_to_float(0xC000), -2.0f);
  EXPECT_TRUE(std::isinf(f16_bits_to_float(0x7C00)));
  // Every fp16 bit pattern round-trips (NaNs stay NaN).
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const float f = f16_bits_to_float(uint16_t(b));
    if (std::isnan(f)) EXPECT_TRUE(std::isnan(f16_bits_to_float(float_to_f16_bits(f))));
    else ASSERT_EQ(float_to_f16_bits(f), b) << std::hex << b;
  }
}

TEST(Inputs, GeneratedValuesAreRepresentableInTheDtype) {
  const HostInputs b = generate_inputs(shape(DType::bf16), Distribution::normal, 9);
  for (float x : b.q) ASSERT_EQ(std::bit_cast<uint32_t>(x) & 0xFFFFu, 0u);
  const HostInputs h = generate_inputs(shape(DType::f16), Distribution::normal, 9);
  for (float x : h.k) ASSERT_EQ(round_f16(x), x);
  const HostInputs f = generate_inputs(shape(DType::f32), Distribution::normal, 9);
  int not_bf16 = 0;
  for (float x : f.q) not_bf16 += round_bf16(x) != x;
  EXPECT_GT(not_bf16, int(f.q.size()) / 2);  // fp32 inputs are not silently rounded
}

TEST(Inputs, AdversarialScoresOverflowANaiveFp16SoftmaxLate) {
  AttnProblem p = shape(DType::bf16);
  p.heads_kv = 4, p.seqlen_q = 16, p.seqlen_k = 256, p.head_dim = 128;
  const HostInputs in = generate_inputs(p, Distribution::adversarial, 77);
  const int d = p.head_dim;
  for (int h = 0; h < p.heads; ++h)
    for (int i = 0; i < p.seqlen_q; ++i) {
      double best = -1e30, lowest = 1e30;
      int argmax = -1;
      for (int j = 0; j < p.seqlen_k; ++j) {
        double s = 0;
        for (int e = 0; e < d; ++e)
          s += double(in.q[(i * p.heads + h) * d + e]) * in.k[(j * p.heads_kv + h) * d + e];
        s *= p.scale();
        if (s > best) best = s, argmax = j;
        lowest = std::min(lowest, s);
      }
      // exp(s) overflows fp16 past ln(65504) = 11.09; the peak is far beyond it.
      EXPECT_GT(best, 40.0) << "head " << h << " row " << i;
      EXPECT_LT(best, 80.0);  // still finite for exp in float32 (88.7)
      EXPECT_LT(lowest, -15.0);  // large magnitude both ways
      EXPECT_GE(argmax, p.seqlen_k * 7 / 8) << "row max should arrive late";
      EXPECT_TRUE(std::isinf(round_f16(float(std::exp(best)))));
    }
}

TEST(Inputs, DistributionNames) {
  for (Distribution d : {Distribution::normal, Distribution::uniform, Distribution::adversarial,
                         Distribution::outliers})
    EXPECT_EQ(parse_distribution(to_string(d)), d);
  EXPECT_FALSE(parse_distribution("gaussian"));
  EXPECT_EQ(distribution_names(), "normal, uniform, adversarial, outliers");
}

// outliers: head_dim / 64 channels of Q and K, the same in every row of both,
// about 30x the others' spread; V is normal's V of the same seed, bit for bit.
TEST(Inputs, OutliersAreAFewFixedLargeChannelsOfQAndK) {
  AttnProblem p = shape(DType::f32);
  p.head_dim = 128;
  p.seqlen_q = p.seqlen_k = 256;
  const HostInputs in = generate_inputs(p, Distribution::outliers, 9);
  const HostInputs normal = generate_inputs(p, Distribution::normal, 9);
  EXPECT_EQ(in.v, normal.v);
  for (const std::vector<float>* t : {&in.q, &in.k}) {
    std::vector<double> sq(size_t(p.head_dim), 0.0);
    for (size_t i = 0; i < t->size(); ++i) sq[i % size_t(p.head_dim)] += double((*t)[i]) * (*t)[i];
    const double rows = double(t->size() / size_t(p.head_dim));
    int large = 0;
    for (double s : sq) {
      const double rms = std::sqrt(s / rows);
      if (rms > 10) {
        ++large;
        EXPECT_NEAR(rms, 30.0, 3.0);
      } else {
        EXPECT_NEAR(rms, 1.0, 0.1);
      }
    }
    EXPECT_EQ(large, p.head_dim / 64);
  }
  // The same channels in Q and K: one draw per seed.
  auto channels = [&](const std::vector<float>& t) {
    std::vector<int> out;
    for (int c = 0; c < p.head_dim; ++c)
      if (std::fabs(t[size_t(c)]) + std::fabs(t[size_t(p.head_dim + c)]) + std::fabs(t[size_t(2 * p.head_dim + c)]) > 15)
        out.push_back(c);
    return out;
  };
  EXPECT_EQ(channels(in.q), channels(in.k));
}

}  // namespace
}  // namespace fa
