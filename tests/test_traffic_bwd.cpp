// The FA2 backward traffic model's formula on shapes small enough to add up by hand.
#include <gtest/gtest.h>

#include <stdexcept>

#include "measure/traffic_bwd.h"

namespace fa {
namespace {

AttnProblem shape(int h, int hkv, int nq, int nk, int d, bool causal, DType dt) {
  AttnProblem p;
  p.batch = 2, p.heads = h, p.heads_kv = hkv, p.seqlen_q = nq, p.seqlen_k = nk, p.head_dim = d;
  p.causal = causal;
  p.dtype = dt;
  return p;
}

// Per query head: pre-pass (read O, dO; write D, zero the float32 accumulator),
// per visited (Q block, K/V block) pair (read Q_i, dO_i, LSE_i, D_i and the
// accumulator; write it back), conversion (read the accumulator, write dQ).
// Per KV head: read K, V of the visited blocks once; write dK, dV.
int64_t q_read(int64_t s, int64_t nq, int64_t d, int64_t pair_rows) {
  return 2 * s * nq * d + pair_rows * (2 * s * d + 2 * 4 + 4 * d) + 4 * nq * d;
}
int64_t q_write(int64_t s, int64_t nq, int64_t d, int64_t pair_rows) {
  return 4 * nq + 4 * nq * d + pair_rows * 4 * d + s * nq * d;
}

// The model of p at `tile`, with pair_rows = sum_i V_i r_i and kv_keys keys of K/V read.
void expect_model(const AttnProblem& p, const Tile& tile, int64_t pair_rows, int64_t kv_keys) {
  const int64_t s = dtype_bytes(p.dtype), d = p.head_dim, nq = p.seqlen_q;
  const int64_t bh = int64_t(p.batch) * p.heads, bhk = int64_t(p.batch) * p.heads_kv;
  const Traffic t = traffic_model_bwd(Family::fa2, p, tile);
  EXPECT_EQ(t.read_bytes, bh * q_read(s, nq, d, pair_rows) + bhk * 2 * s * kv_keys * d) << p.describe();
  EXPECT_EQ(t.write_bytes, bh * q_write(s, nq, d, pair_rows) + bhk * 2 * s * p.seqlen_k * d)
      << p.describe();
}

TEST(TrafficBwd, Fa2NonCausalByHand) {
  // Q blocks of 64 and 36 rows, each visiting all 7 K/V blocks: 700 pair rows.
  expect_model(shape(3, 3, 100, 200, 64, false, DType::f16), {64, 32, 0, 0}, 700, 200);
}

TEST(TrafficBwd, Fa2CausalSkipsBlocksAboveTheDiagonal) {
  // 128 x 128, tile 64x64: Q block 0 visits K/V block 0, block 1 both: 64 + 128 pair rows.
  expect_model(shape(3, 3, 128, 128, 32, true, DType::bf16), {64, 64, 0, 0}, 192, 128);
  // seqlen_q 130 > seqlen_k 40: block 0 (rows 0..63) sees no key; blocks 1 and 2
  // (64 and 2 rows) visit the single K/V block.
  expect_model(shape(3, 3, 130, 40, 32, true, DType::bf16), {64, 64, 0, 0}, 66, 40);
  // seqlen_q 10 < seqlen_k 300, tile 8x64: rows 0..7 see keys up to 297 (5 blocks),
  // rows 8..9 all 300 keys (5 blocks): every block read.
  expect_model(shape(1, 1, 10, 300, 16, true, DType::f32), {8, 64, 0, 0}, 50, 300);
}

TEST(TrafficBwd, GqaReadsAndWritesKvOncePerKvHead) {
  const AttnProblem mha = shape(4, 4, 256, 256, 64, false, DType::bf16);
  const AttnProblem gqa = shape(4, 1, 256, 256, 64, false, DType::bf16);
  const Traffic a = traffic_model_bwd(Family::fa2, mha, {}), b = traffic_model_bwd(Family::fa2, gqa, {});
  const int64_t kv = 2 * 2 * 256 * 64;  // K and V (read) or dK and dV (written), one KV head
  EXPECT_EQ(a.read_bytes - b.read_bytes, 2 * 3 * kv);
  EXPECT_EQ(a.write_bytes - b.write_bytes, 2 * 3 * kv);
  EXPECT_EQ(traffic_model_bwd(Family::fa2, mha, {}).total(),
            traffic_model_bwd(Family::fa2, mha, {64, 64, 0, 0}).total());  // the default tile
}

TEST(TrafficBwd, OtherFamiliesHaveNoModelYet) {
  const AttnProblem p = shape(2, 2, 64, 64, 64, false, DType::bf16);
  for (Family f : {Family::standard, Family::fa1, Family::fa3, Family::cudnn})
    EXPECT_THROW(traffic_model_bwd(f, p, {}), std::invalid_argument) << to_string(f);
}

}  // namespace
}  // namespace fa
