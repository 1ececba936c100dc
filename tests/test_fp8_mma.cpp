// The FP8 tensor cores' accumulation as check/fp8_mma.h models it: the H200's
// answers on crafted dot products (measured by tests/gpu/standalone/
// fp8_accum_probe.cu through fa3's e4m3 forward), and the vectorized form
// against the one-score form.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "core/e4m3.h"
#include "check/fp8_mma.h"

namespace fa {
namespace {

// 256 in channel 0, `value` in channels [from, to) of a 128-long q; k = 1.
float dot_beside_256(float value, int from, int to) {
  std::vector<float> q(128, 0.f), k(128, 1.f);
  q[0] = 256.f;
  for (int c = from; c < to; ++c) q[size_t(c)] = value;
  return fp8_mma_dot(q.data(), k.data(), 128);
}

TEST(Fp8Mma, ReproducesTheH200OnCraftedScores) {
  // 13 bits below 2^8 survive, the 14th does not.
  EXPECT_EQ(dot_beside_256(0x1p-5f, 1, 2), 256.03125f);
  EXPECT_EQ(dot_beside_256(0x1p-6f, 1, 2), 256.f);
  // A negative addend is truncated toward zero, not toward -inf.
  EXPECT_EQ(dot_beside_256(-0x1p-6f, 1, 2), 256.f);
  EXPECT_EQ(dot_beside_256(-0x1p-5f, 1, 2), 255.96875f);
  // Each product is truncated on its own: 31 x 2^-6 would be 0.484375 together.
  EXPECT_EQ(dot_beside_256(0x1p-6f, 1, 32), 256.f);
  EXPECT_EQ(dot_beside_256(0x1p-5f, 1, 32), 256.96875f);
  // The running sum is one of a step's addends: a later step's small products
  // are truncated against it (96 x 2^-9 over three steps: all lost).
  EXPECT_EQ(dot_beside_256(0x1p-6f, 32, 64), 256.f);
  EXPECT_EQ(dot_beside_256(0x1p-9f, 32, 128), 256.f);
  EXPECT_EQ(dot_beside_256(0x1p-4f, 32, 128), 262.f);
}

// The grid follows the products' exponent fields, not their magnitudes: 1.75 x
// 1.75 = 3.06 aligns at 2^0, so a product of 2^-13 beside it survives (on the
// H200 this model reproduced 341 of 512 random scores bit for bit at head_dim
// 128, the magnitude model 233).
TEST(Fp8Mma, TheGridFollowsTheExponentFields) {
  std::vector<float> q(32, 0.f), k(32, 0.f);
  q[0] = 1.75f, k[0] = 1.75f;
  q[1] = 0x1p-7f, k[1] = 0x1p-6f;
  EXPECT_EQ(fp8_mma_dot(q.data(), k.data(), 32), 3.0625f + 0x1p-13f);
  q[1] = 0x1p-8f;  // 2^-14: below the grid
  EXPECT_EQ(fp8_mma_dot(q.data(), k.data(), 32), 3.0625f);
  // A subnormal's exponent field is that of 2^-6 (the model's reading of the
  // format; the probe's random rows hold few subnormals): 2^-9 x 2^8 = 0.5
  // aligns at 2^2, so the grid is 2^-11 and a product of 2^-12 is lost.
  std::vector<float> a(32, 0.f), b(32, 0.f);
  a[0] = 0x1p-9f, b[0] = 256.f;
  a[1] = 0x1p-6f, b[1] = 0x1p-6f;
  EXPECT_EQ(fp8_mma_dot(a.data(), b.data(), 32), 0.5f);
}

TEST(Fp8Mma, ExactWhenNothingFallsBelowTheGrid) {
  // Small integers: every product and partial sum within 13 bits of the largest.
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> v(-3, 3);
  for (int d : {32, 64, 128, 256}) {
    const size_t n = static_cast<size_t>(d);
    std::vector<float> q(n), k(n);
    double exact = 0;
    for (int i = 0; i < d; ++i) {
      q[size_t(i)] = float(v(rng)), k[size_t(i)] = float(v(rng));
      exact += double(q[size_t(i)]) * k[size_t(i)];
    }
    EXPECT_EQ(fp8_mma_dot(q.data(), k.data(), d), float(exact)) << "head_dim " << d;
  }
}

TEST(Fp8Mma, KeysAtOnceEqualOneScoreAtATime) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.f, 1.f);
  auto e4m3 = [&](float scale) { return decode_e4m3(encode_e4m3(normal(rng) * scale)); };
  for (int d : {32, 64, 96, 128, 256}) {
    const int rows = 3;
    const int64_t n_keys = 37;  // not a multiple of kFp8MmaKeys
    const size_t n = static_cast<size_t>(d);
    std::vector<float> q(rows * n), keys(n * static_cast<size_t>(n_keys)), out(rows * static_cast<size_t>(n_keys));
    for (size_t i = 0; i < q.size(); ++i) q[i] = e4m3(i % n == 3 ? 60.f : 1.f);  // one outlier channel
    for (size_t i = 0; i < keys.size(); ++i) keys[i] = e4m3(i % n == 3 ? 40.f : 1.f);
    const std::vector<float> kb = fp8_keys_blocked(keys.data(), n_keys, d, d);
    fp8_mma_scores(q.data(), rows, d, kb.data(), n_keys, out.data());
    int lossy = 0;
    for (int r = 0; r < rows; ++r)
      for (int64_t j = 0; j < n_keys; ++j) {
        const float* qr = q.data() + r * d;
        const float* kj = keys.data() + j * d;
        double exact = 0;
        for (int i = 0; i < d; ++i) exact += double(qr[i]) * kj[i];
        const float got = out[size_t(r * n_keys + j)];
        EXPECT_EQ(got, fp8_mma_dot(qr, kj, d)) << "head_dim " << d << " row " << r << " key " << j;
        lossy += double(got) != exact;
      }
    EXPECT_GT(lossy, 0) << "head_dim " << d << ": the outlier channel should push small products below the grid";
  }
}

TEST(Fp8Mma, DescalesFollowTheTensorsGroups) {
  E4m3Codes c;
  c.descales = {1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(descale_at(c, 1, 5, 1), 1.f);  // one descale per tensor
  c.batch_stride = 2, c.head_stride = 1;    // per (batch, head), 2 heads
  EXPECT_EQ(descale_at(c, 1, 500, 1), 4.f);
  c.batch_stride = 4, c.head_stride = 2, c.block_rows = 128;  // 2 blocks of 128 rows per head
  EXPECT_EQ(descale_at(c, 1, 130, 1), 8.f);
  EXPECT_EQ(descale_at(c, 0, 127, 1), 3.f);
}

}  // namespace
}  // namespace fa
