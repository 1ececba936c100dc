// The backward traffic models' formulas on shapes small enough to add up by hand.
#include <gtest/gtest.h>


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
  const Traffic t = *traffic_model_bwd(Family::fa2, p, tile);
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
  const Traffic a = *traffic_model_bwd(Family::fa2, mha, {}), b = *traffic_model_bwd(Family::fa2, gqa, {});
  const int64_t kv = 2 * 2 * 256 * 64;  // K and V (read) or dK and dV (written), one KV head
  EXPECT_EQ(a.read_bytes - b.read_bytes, 2 * 3 * kv);
  EXPECT_EQ(a.write_bytes - b.write_bytes, 2 * 3 * kv);
  EXPECT_EQ(traffic_model_bwd(Family::fa2, mha, {})->total(),
            traffic_model_bwd(Family::fa2, mha, {64, 64, 0, 0})->total());  // the default tile
}

TEST(TrafficBwd, Fa3MovesWhatFa2DoesAtItsOwnTile) {
  for (bool causal : {false, true}) {
    const AttnProblem p = shape(4, 2, 300, 200, 64, causal, DType::bf16);
    for (const Tile t : {Tile{64, 128, 12, 2}, Tile{128, 64, 12, 3}}) {
      const Traffic a = *traffic_model_bwd(Family::fa3, p, t), b = *traffic_model_bwd(Family::fa2, p, t);
      EXPECT_EQ(a.read_bytes, b.read_bytes) << p.describe();
      EXPECT_EQ(a.write_bytes, b.write_bytes) << p.describe();
    }
    // Without a tile fa3 is modelled at 128 x 128, fa2 at the CPU table's 64 x 64.
    EXPECT_EQ(traffic_model_bwd(Family::fa3, p, {})->total(), traffic_model_bwd(Family::fa2, p, {128, 128, 0, 0})->total());
  }
}

// FA1 (Algorithm 4): no pre-pass; per pair Q_i, O_i, dO_i and LSE_i (D_i computed
// there) and the accumulator's round trip; zeroing and conversion as FA2's.
TEST(TrafficBwd, Fa1ReadsOInTheInnerLoop) {
  const AttnProblem p = shape(4, 2, 100, 200, 64, false, DType::f16);
  const Tile tile{64, 32, 8, 2};
  const int64_t s = 2, d = 64, nq = 100, nk = 200, pair_rows = 700;  // 2 Q blocks x 7 K/V blocks
  const int64_t bh = 2 * 4, bhk = 2 * 2;
  const Traffic t = *traffic_model_bwd(Family::fa1, p, tile);
  EXPECT_EQ(t.read_bytes, bh * (pair_rows * (3 * s * d + 4 + 4 * d) + 4 * nq * d) + bhk * 2 * s * nk * d);
  EXPECT_EQ(t.write_bytes, bh * (4 * nq * d + pair_rows * 4 * d + s * nq * d) + bhk * 2 * s * nk * d);
  // Against FA2 at the same tile: O_i per pair instead of D_i, and no pre-pass.
  const Traffic f2 = *traffic_model_bwd(Family::fa2, p, tile);
  EXPECT_EQ(t.read_bytes - f2.read_bytes, bh * (pair_rows * (s * d - 4) - 2 * s * nq * d));
  EXPECT_EQ(f2.write_bytes - t.write_bytes, bh * 4 * nq);
}

// Standard: six N^2 reads and four N^2 writes per query head whatever the mask;
// with GQA, dK and dV go through float32 sums over the group.
TEST(TrafficBwd, StandardMovesItsScoresThroughHbm) {
  const int64_t s = 2, d = 32, nq = 48, nk = 80;
  const int64_t q_read = s * (6 * nq * d + 3 * nk * d) + 4 * nq + 6 * s * nq * nk;
  const int64_t q_write = 4 * s * nq * nk + s * nq * d;
  for (bool causal : {false, true}) {
    const Traffic mha = *traffic_model_bwd(Family::standard, shape(3, 3, nq, nk, d, causal, DType::bf16), {});
    EXPECT_EQ(mha.read_bytes, 2 * 3 * q_read);
    EXPECT_EQ(mha.write_bytes, 2 * 3 * (q_write + 2 * s * nk * d));
    // Three query heads per KV head: each dK/dV GEMM writes a float32 sum, all but
    // the first read it back, one pass reads it and writes the dtype.
    const Traffic gqa = *traffic_model_bwd(Family::standard, shape(3, 1, nq, nk, d, causal, DType::bf16), {});
    // Per (batch, KV head), each of dK and dV: 2 read-backs and the conversion's read.
    EXPECT_EQ(gqa.read_bytes, 2 * 3 * q_read + 2 * 2 * (3 * 4 * nk * d));
    EXPECT_EQ(gqa.write_bytes, 2 * 3 * q_write + 2 * 2 * (3 * 4 * nk * d + s * nk * d));
  }
}

TEST(TrafficBwd, CudnnIsNotModelled) {
  EXPECT_FALSE(traffic_model_bwd(Family::cudnn, shape(2, 2, 64, 64, 64, false, DType::bf16), {}).has_value());
}

}  // namespace
}  // namespace fa
