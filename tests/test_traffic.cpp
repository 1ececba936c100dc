// The traffic model's closed forms on shapes small enough to add up by hand,
// and the scaling laws the papers state (standard ~ N^2, FA2 K/V ~ N^2 d / B_r).
#include <gtest/gtest.h>

#include "common/fa1_split.h"
#include "measure/executor.h"
#include "measure/traffic.h"

namespace fa {
namespace {

AttnProblem shape(int nq, int nk, int d, bool causal, DType dt) {
  AttnProblem p;
  p.batch = 2, p.heads = 3, p.heads_kv = 3, p.seqlen_q = nq, p.seqlen_k = nk, p.head_dim = d;
  p.causal = causal;
  p.dtype = dt;
  return p;
}

TEST(Traffic, StandardByHand) {
  const AttnProblem p = shape(100, 200, 64, false, DType::bf16);  // s = 2
  const Traffic t = traffic_model(Family::standard, p, {});
  const int64_t bh = 6;
  // read Q, K, S, P, V; write S, P, LSE (4 bytes), O.
  EXPECT_EQ(t.read_bytes, bh * 2 * (100 * 64 + 200 * 64 + 100 * 200 * 2 + 200 * 64));
  EXPECT_EQ(t.write_bytes, bh * (2 * (100 * 200 * 2 + 100 * 64) + 100 * 4));
}

TEST(Traffic, Fa2NonCausalByHand) {
  const AttnProblem p = shape(100, 200, 64, false, DType::f16);
  const Traffic t = traffic_model(Family::fa2, p, {64, 32, 0, 0});
  const int64_t bh = 6, tr = 2;  // Q blocks of 64 and 36 rows
  EXPECT_EQ(t.read_bytes, bh * (100 * 64 * 2 + tr * 2 * 200 * 64 * 2));
  EXPECT_EQ(t.write_bytes, bh * (100 * 64 * 2 + 100 * 4));
}

TEST(Traffic, Fa2CausalSkipsBlocksAboveTheDiagonal) {
  // seqlen 128, tile 64x64: block 0 sees K block 0, block 1 sees both.
  const AttnProblem p = shape(128, 128, 32, true, DType::bf16);
  const Traffic t = traffic_model(Family::fa2, p, {64, 64, 0, 0});
  EXPECT_EQ(t.read_bytes, 6 * (128 * 32 * 2 + (1 + 2) * 2 * 64 * 32 * 2));
  // Bottom-right alignment: seqlen_q 64 < seqlen_k 128 makes the one Q block see all keys.
  const AttnProblem q = shape(64, 128, 32, true, DType::bf16);
  EXPECT_EQ(traffic_model(Family::fa2, q, {64, 64, 0, 0}).read_bytes,
            6 * (64 * 32 * 2 + 2 * 2 * 64 * 32 * 2));
}

TEST(Traffic, Fa1ByHand) {
  const AttnProblem p = shape(100, 50, 16, false, DType::bf16);
  const Traffic t = traffic_model(Family::fa1, p, {32, 32, 0, 0});
  // Tr = 4 (32,32,32,4 rows), Tc = 2: every Q row is visited twice. 6 heads are far
  // from 132 CTAs, so each Q block is its own split and each split loads all of K/V.
  const int64_t per_row_visit_read = 16 * 2 + 16 * 4 + 8, per_row_visit_write = 16 * 4 + 8;
  // The second (last) visit writes the output instead: O in bf16 and the LSE.
  const int64_t read = 2 * 100 * per_row_visit_read + 4 * (2 * 50 * 16 * 2);
  const int64_t write = 100 * 16 * 4 + 100 * 8 + 100 * per_row_visit_write + 100 * (16 * 2 + 4);
  EXPECT_EQ(t.read_bytes, 6 * read);
  EXPECT_EQ(t.write_bytes, 6 * write);
}

TEST(Traffic, Fa1SplitsFillTheGpuAndCountTheirKvLoads) {
  // batch*heads below 132: the Q blocks are dealt to enough splits to reach ~132 CTAs.
  EXPECT_EQ(fa1_splits(16, 128, 8), 8);   // hd128, seqlen 16384, batch 1: 128 CTAs
  EXPECT_EQ(fa1_splits(32, 128, 8), 4);
  EXPECT_EQ(fa1_splits(16, 256, 4), 16);  // 4-warp CTAs: two per SM, 256 CTAs
  EXPECT_EQ(fa1_splits(128, 16, 8), 1);   // already fills the GPU
  EXPECT_EQ(fa1_splits(1, 3, 0), 3);      // never more splits than Q blocks
  // Non-causal: the split changes only the K/V reads, once per split.
  const AttnProblem one = shape(1024, 1024, 64, false, DType::bf16);  // 6 heads: 8 Q blocks, 8 splits
  AttnProblem many = one;
  many.batch = 132;  // 132*3 heads: one split
  const Traffic a = traffic_model(Family::fa1, one, {128, 128, 0, 0});
  const Traffic b = traffic_model(Family::fa1, many, {128, 128, 0, 0});
  const int64_t kv_once = 2 * 1024 * 64 * 2;
  EXPECT_EQ(a.write_bytes / (one.batch * one.heads), b.write_bytes / (many.batch * many.heads));
  EXPECT_EQ(a.read_bytes / (one.batch * one.heads) - b.read_bytes / (many.batch * many.heads), 7 * kv_once);
}

TEST(Traffic, DefaultsAndFamiliesSharingTheFa2Formula) {
  const AttnProblem p = shape(1000, 1000, 128, true, DType::bf16);
  EXPECT_EQ(traffic_model(Family::fa2, p, {}).total(), traffic_model(Family::fa2, p, {64, 64, 0, 0}).total());
  EXPECT_EQ(traffic_model(Family::fa1, p, {}).total(), traffic_model(Family::fa1, p, {64, 64, 0, 0}).total());
  EXPECT_EQ(traffic_model(Family::fa3, p, {}).total(), traffic_model(Family::fa2, p, {128, 128, 0, 0}).total());
  EXPECT_EQ(traffic_model(Family::cudnn, p, {}).total(), traffic_model(Family::fa2, p, {128, 128, 0, 0}).total());
  EXPECT_EQ(traffic_model(Family::fa3, p, {128, 64, 2, 0}).total(), traffic_model(Family::fa2, p, {128, 64, 0, 0}).total());
}

// fa3's e4m3 split tail at hd128 non-causal 8192 (batch 2, 16 heads) on 132 SMs,
// the 192x128 tile: 43 Q blocks per head (42 of 192 rows, the last of 128), 1376
// tiles, 1376 % 132 = 56 in the last round; 64 K/V blocks. Halves end it in half a
// round (quarters: also half, not 5 % better; thirds: two thirds), so tiles 1320..1375
// run as 2 pieces. Of those, m_block = idx % 43 is 42 (128 rows) at 1332 and 1375.
TEST(Traffic, Fa3E4m3SplitTailByHand) {
  AttnProblem p = shape(8192, 8192, 128, false, DType::e4m3);
  p.batch = 2, p.heads = 16, p.heads_kv = 16;
  const Tile tile{192, 128, 16, 2};
  const Traffic none = traffic_model(Family::fa3, p, tile);
  const Traffic split = traffic_model(Family::fa3, p, tile, std::nullopt, {132, Fp8Settings{}});
  const int64_t partial = 192 * 2 * (128 / 2 + 4) * 4;  // one piece's O, m, l: 104448 bytes
  const int64_t q_again = (54 * 192 + 2 * 128) * 128;   // the second piece's Q rows
  EXPECT_EQ(split.read_bytes - none.read_bytes, q_again + 56 * partial);
  EXPECT_EQ(split.write_bytes - none.write_bytes, 2 * 56 * partial);
  // No split: causal, per-block descales, an unknown device, a tile count the grid
  // divides, and short queries (V transposed in the kernel, no pre-pass).
  AttnProblem causal = p;
  causal.causal = true;
  EXPECT_EQ(traffic_model(Family::fa3, causal, tile, std::nullopt, {132, Fp8Settings{}}).total(),
            traffic_model(Family::fa3, causal, tile).total());
  const Fp8Settings block{Fp8Scaling::block, false};
  EXPECT_EQ(traffic_model(Family::fa3, p, tile, std::nullopt, {132, block}).total(), none.total());
  EXPECT_EQ(traffic_model(Family::fa3, p, tile, std::nullopt, {0, Fp8Settings{}}).total(), none.total());
  EXPECT_EQ(traffic_model(Family::fa3, p, tile, std::nullopt, {1376, Fp8Settings{}}).total(), none.total());
  AttnProblem short_q = p;
  short_q.seqlen_q = 1024;
  EXPECT_EQ(traffic_model(Family::fa3, short_q, tile, std::nullopt, {132, Fp8Settings{}}).total(),
            traffic_model(Family::fa3, short_q, tile).total());
}

// fa3's e4m3 causal walk moves its Q blocks up by causal_row_shift rows: 320
// rows on 192-row tiles (320 = 192 + 128) shift by 64, so the blocks hold rows
// 0..127 and 128..319 instead of 0..191 and 192..319. K/V blocks of 128 keys,
// seqlen_k = seqlen_q: block 0 sees keys to 127 (1 block; unshifted: to 191, 2),
// block 1 to 319 (3 blocks of 128, the last ragged: 320 keys; unshifted the same).
TEST(Traffic, Fa3E4m3CausalShiftedBlocksByHand) {
  const AttnProblem p = shape(320, 320, 64, true, DType::e4m3);  // s = 1, bf16 O
  const Tile tile{192, 128, 16, 2};
  const int64_t bh = 6, d = 64;
  const Traffic t = traffic_model(Family::fa3, p, tile);
  EXPECT_EQ(t.read_bytes, bh * (128 * d + 2 * 128 * d + 192 * d + 2 * 320 * d));
  EXPECT_EQ(t.write_bytes, bh * (320 * d * 2 + 320 * 4));
  // Unshifted (the bf16 kernel's walk on the same tile): 192 rows see 256 keys.
  AttnProblem bf = p;
  bf.dtype = DType::bf16;
  EXPECT_EQ(traffic_model(Family::fa3, bf, tile).read_bytes, bh * 2 * (192 * d + 2 * 256 * d + 128 * d + 2 * 320 * d));
  // Non-causal: no shift, every block reads every key.
  AttnProblem nc = p;
  nc.causal = false;
  EXPECT_EQ(traffic_model(Family::fa3, nc, tile).read_bytes, bh * (320 * d + 2 * 2 * 320 * d));
}

TEST(Traffic, DeviceSmCountFromTheExecutorsDetails) {
  DeviceInfo d;
  EXPECT_EQ(d.sm_count(), 0);  // the cpu back end has none: no split counted
  d.details["sm_count"] = "132";
  EXPECT_EQ(d.sm_count(), 132);
}

TEST(Traffic, ScalingLaws) {
  // Standard: the N^2 terms dominate, so doubling N nearly quadruples traffic.
  const double s1 = double(traffic_model(Family::standard, shape(4096, 4096, 64, false, DType::bf16), {}).total());
  const double s2 = double(traffic_model(Family::standard, shape(8192, 8192, 64, false, DType::bf16), {}).total());
  EXPECT_NEAR(s2 / s1, 4.0, 0.1);
  // FA2: K/V re-read N / B_r times, so a taller Q tile halves it; causal about halves it.
  const AttnProblem p = shape(8192, 8192, 128, false, DType::bf16);
  const double a = double(traffic_model(Family::fa2, p, {64, 64, 0, 0}).read_bytes);
  const double b = double(traffic_model(Family::fa2, p, {128, 64, 0, 0}).read_bytes);
  EXPECT_NEAR(a / b, 2.0, 0.05);
  AttnProblem c = p;
  c.causal = true;
  EXPECT_NEAR(double(traffic_model(Family::fa2, c, {128, 64, 0, 0}).read_bytes) / b, 0.5, 0.02);
  // FA1 moves more than FA2 (O, l, m round trips: Theta(N^2 d / B_c)). It beats
  // standard only when B_c is large against d (the paper's Theta(N^2 d^2 / M)):
  // at d 128 with 64-wide blocks its float32 O round trips exceed standard's S and P.
  const double f1 = double(traffic_model(Family::fa1, p, {64, 64, 0, 0}).total());
  EXPECT_GT(f1, double(traffic_model(Family::fa2, p, {64, 64, 0, 0}).total()));
  EXPECT_GT(f1, double(traffic_model(Family::standard, p, {}).total()));
  const AttnProblem q = shape(8192, 8192, 64, false, DType::bf16);
  EXPECT_LT(double(traffic_model(Family::fa1, q, {128, 128, 0, 0}).total()),
            double(traffic_model(Family::standard, q, {}).total()));
}

}  // namespace
}  // namespace fa
