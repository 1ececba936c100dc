// fa3's e4m3 forward as the generated table and the registry present it: one
// variant per built head_dim, its V^T workspace, what it refuses (asked before
// any buffer exists, as the registry asks), its traffic with the pre-pass where
// the pre-pass runs. Host code only; tests/gpu/test_gpu_fp8_sweep.cpp runs it.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/gpu_entry.h"
#include "common/problem_params.h"
#include "fa3/fa3_fp8_defaults.h"
#include "fa3/fa3_fp8_split.h"
#include "fa3/fa3_fp8_vt_tasks.h"
#include "registry/kernel.h"

namespace fa {
namespace {

std::vector<const GpuKernelEntry*> fp8_entries() {
  std::vector<const GpuKernelEntry*> out;
  for (const auto& e : gpu_kernel_entries())
    if (std::strcmp(e.family, "fa3") == 0 && e.dtype == ElemType::e4m3) out.push_back(&e);
  return out;
}

AttnProblem e4m3(int d, int sq = 1000, int sk = 1000) {
  AttnProblem p;
  p.batch = 2, p.heads = 8, p.heads_kv = 2, p.seqlen_q = sq, p.seqlen_k = sk, p.head_dim = d;
  p.dtype = DType::e4m3;
  return p;
}

// The registered e4m3 forwards: name -> (block_m, block_n, warps, default tile).
struct Fp8Tile {
  int head_dim, block_m, block_n, warps;
  bool default_tile;
  std::string name() const {
    return "fa3.e4m3.hd" + std::to_string(head_dim) + "." + std::to_string(block_m) + "x" + std::to_string(block_n) +
           ".w" + std::to_string(warps) + ".s2";
  }
};
// hd64: 128x256 (PERF_NOTES fa3-fp8-tiles); hd128: three consumer warpgroups by
// default and the two-warpgroup tile for short causal rows (fa3-fp8-three-warpgroups).
const Fp8Tile kFp8Tiles[] = {
    {64, 128, 256, 12, true}, {128, 192, 128, 16, true}, {128, 128, 128, 12, false}, {256, 128, 128, 12, true}};

TEST(Fa3Fp8Entries, TheRegisteredTilesAndOneDefaultPerHeadDim) {
  const auto entries = fp8_entries();
  if (entries.empty()) GTEST_SKIP() << "fa3 not built";
  size_t expected = 0;
  for (const Fp8Tile& t : kFp8Tiles) {
    bool built = false;
    for (const GpuKernelEntry* e : entries) built |= e->head_dim == t.head_dim;
    if (!built) continue;  // FA_BENCH_HEAD_DIMS
    ++expected;
    const GpuKernelEntry* found = nullptr;
    for (const GpuKernelEntry* e : entries)
      if (e->head_dim == t.head_dim && e->block_m == t.block_m && e->block_n == t.block_n) found = e;
    ASSERT_NE(found, nullptr) << t.name();
    EXPECT_STREQ(found->pass, "fwd");
    EXPECT_EQ(found->default_tile, t.default_tile) << t.name();
    // The registry's default is the tile fp8_check times as `base`.
    const bool is_default_shape = t.block_m == fp8_default_block_m(t.head_dim) &&
                                  t.block_n == fp8_default_block_n(t.head_dim);
    EXPECT_EQ(found->default_tile, is_default_shape) << t.name() << ": fa3_fp8_defaults.h names another default";
    EXPECT_EQ(found->warps, t.warps) << t.name();
    const KernelVariant* v = Registry::instance().find(t.name());
    ASSERT_NE(v, nullptr) << t.name();
    EXPECT_EQ(v->dtypes, std::vector{DType::e4m3});
  }
  EXPECT_EQ(entries.size(), expected);
}

// The words by which the producer warps of three-warpgroup tiles share the V^T
// they make (fa3_fp8_vt_tasks.h), up to kFp8VtSharedMaxSeqlenQ queries: batch
// 2 x 2 kv heads, seqlen_k keys.
int64_t shared_vt_words(const GpuKernelEntry* e, int seqlen_q, int seqlen_k) {
  const bool shared = fp8_tile_can_share_vt(e->block_m, false) && seqlen_q <= kFp8VtSharedMaxSeqlenQ;
  return shared ? fp8_vt_sync_bytes(2 * 2, (seqlen_k + e->block_n - 1) / e->block_n) : 0;
}

// Beyond fp8_vt_in_kernel's lengths: V^T (and, on three-warpgroup tiles up to
// kFp8VtSharedMaxSeqlenQ queries, the words that share it); up to them, none.
// 16 SMs: every tile count here is a multiple, so no split tail is planned.
TEST(Fa3Fp8Entries, WorkspaceHoldsVTransposedWithKeysPaddedTo64OnlyBeyondTheInKernelLengths) {
  for (const GpuKernelEntry* e : fp8_entries()) {
    for (int sq : {4096, 4 * kFp8VtSharedMaxSeqlenQ}) {
      AttnParams beyond = make_params(e4m3(e->head_dim, sq, 1000), ElemType::e4m3);
      beyond.num_sms = 16;
      EXPECT_EQ(e->workspace_bytes(beyond), int64_t(2) * 2 * e->head_dim * 1024 + shared_vt_words(e, sq, 1000))
          << e->head_dim << " " << e->block_m << " " << sq;
    }
    AttnParams in_kernel = make_params(e4m3(e->head_dim, 512, 1000), ElemType::e4m3);
    in_kernel.num_sms = 16;
    EXPECT_EQ(e->workspace_bytes(in_kernel), 0) << e->head_dim;
  }
}

// The producer warps make V^T past the in-kernel lengths and up to the shared
// limit: a range that exists at hd128, the one head dim with a three-warpgroup tile.
TEST(Fa3Fp8Entries, SharedVTransposedStartsWhereTheInKernelTransposeEnds) {
  EXPECT_LT(fp8_vt_in_kernel_max_seqlen_q(128, false), kFp8VtSharedMaxSeqlenQ);
  EXPECT_LT(fp8_vt_in_kernel_max_seqlen_q(128, true), kFp8VtSharedMaxSeqlenQ);
}

// With a last round to split (132 SMs: 17 m_blocks x 16 heads leave 8 tiles;
// at least 2176 queries, past every in-kernel transpose's non-causal lengths),
// the split tail's workspace follows V^T and the words (fa3_fp8_split.h); causal rows do not split.
TEST(Fa3Fp8Entries, WorkspaceAddsTheSplitTailAfterVTransposed) {
  for (const GpuKernelEntry* e : fp8_entries()) {
    AttnProblem prob = e4m3(e->head_dim, 17 * e->block_m, 4096);
    ASSERT_FALSE(fp8_vt_in_kernel(e->head_dim, false, prob.seqlen_q)) << e->head_dim;
    AttnParams p = make_params(prob, ElemType::e4m3);
    p.num_sms = 132;
    const Fp8SplitPlan sp = fp8_split_plan(17 * 16, 132, 4096 / e->block_n);
    ASSERT_GT(sp.k, 1) << e->block_m;
    const int64_t vt = int64_t(2) * 2 * e->head_dim * 4096 + shared_vt_words(e, prob.seqlen_q, 4096);
    EXPECT_EQ(e->workspace_bytes(p), vt + fp8_split_bytes(sp, e->block_m, e->head_dim)) << e->head_dim;
    prob.causal = true;
    AttnParams causal = make_params(prob, ElemType::e4m3);
    causal.num_sms = 132;
    EXPECT_EQ(e->workspace_bytes(causal), fp8_vt_in_kernel(e->head_dim, true, prob.seqlen_q) ? 0 : vt)
        << e->head_dim;
  }
}

TEST(Fa3Fp8Entries, VTransposedInTheKernelUpToLengthsThatGrowWithTheMask) {
  for (int d : {64, 128, 256}) {
    const int n = fp8_vt_in_kernel_max_seqlen_q(d, false);
    EXPECT_TRUE(fp8_vt_in_kernel(d, false, 1)) << d;  // decoding
    EXPECT_TRUE(fp8_vt_in_kernel(d, false, n)) << d;
    EXPECT_FALSE(fp8_vt_in_kernel(d, false, n + 1)) << d;
    // Causal rows do half the work per query: the pre-pass's share is larger.
    EXPECT_GE(fp8_vt_in_kernel_max_seqlen_q(d, true), n) << d;
  }
}

TEST(Fa3Fp8Entries, RefusesWhatItCannotRunWithTheReason) {
  const auto entries = fp8_entries();
  if (entries.empty()) GTEST_SKIP() << "fa3 not built";
  for (const GpuKernelEntry* e : entries) {
    const AttnProblem p = e4m3(e->head_dim);
    auto why = [&](const AttnParams& a) { return std::string(e->unsupported(a) ? e->unsupported(a) : ""); };
    AttnParams bf16 = make_params(p, ElemType::bf16);
    EXPECT_NE(why(bf16).find("e4m3"), std::string::npos);
    AttnParams other = make_params(e4m3(e->head_dim == 64 ? 128 : 64), ElemType::e4m3);
    EXPECT_NE(why(other).find("head_dim"), std::string::npos);
    // Descales per block of 128 rows: whole K/V blocks at hd128 and hd256 (128
    // keys), two blocks per 256-key block at hd64, which refuses them (Q's only
    // need whole 64-row warpgroup slices); K blocks of 64 rows hold no whole K/V
    // block anywhere.
    AttnParams blocks = make_params(p, ElemType::e4m3);
    blocks.q_descale.block_rows = blocks.k_descale.block_rows = blocks.v_descale.block_rows = 128;
    const std::string why_blocks = why(blocks);
    if (e->head_dim == 64)
      EXPECT_NE(why_blocks.find("descale blocks"), std::string::npos) << why_blocks;
    else
      EXPECT_TRUE(why_blocks.empty() || why_blocks.find("device") != std::string::npos ||
                  why_blocks.find("sm_90") != std::string::npos)
          << why_blocks;
    AttnParams small_blocks = make_params(p, ElemType::e4m3);
    small_blocks.k_descale.block_rows = 64;
    EXPECT_NE(why(small_blocks).find("descale blocks"), std::string::npos) << e->head_dim;
    AttnParams o_fp16 = make_params(p, ElemType::e4m3);
    o_fp16.o_dtype = ElemType::f16;
    EXPECT_NE(why(o_fp16).find("bf16"), std::string::npos);
    // A shape it runs is refused here only for want of a Hopper device.
    const std::string fine = why(make_params(p, ElemType::e4m3));
    EXPECT_TRUE(fine.empty() || fine.find("device") != std::string::npos || fine.find("sm_90") != std::string::npos)
        << fine;
  }
}

TEST(Fa3Fp8Entries, TrafficCountsThePrePassWhereItRuns) {
  for (const GpuKernelEntry* e : fp8_entries()) {
    const Fp8Tile tile{e->head_dim, e->block_m, e->block_n, e->warps, e->default_tile};
    const KernelVariant* v = Registry::instance().find(tile.name());
    ASSERT_NE(v, nullptr);
    const AttnProblem p = e4m3(e->head_dim, 4096, 1000);
    const std::optional<Traffic> t = v->traffic(p);
    ASSERT_TRUE(t);
    const Traffic loop = traffic_model(Family::fa2, p, v->tile);
    const int64_t kv_heads = int64_t(p.batch) * p.heads_kv;
    EXPECT_EQ(t->read_bytes - loop.read_bytes, kv_heads * 1000 * e->head_dim);
    EXPECT_EQ(t->write_bytes - loop.write_bytes, kv_heads * 1024 * e->head_dim);
    const AttnProblem short_q = e4m3(e->head_dim, 512, 1000);
    const std::optional<Traffic> ts = v->traffic(short_q);
    ASSERT_TRUE(ts);
    const Traffic short_loop = traffic_model(Family::fa2, short_q, v->tile);
    EXPECT_EQ(ts->read_bytes, short_loop.read_bytes);
    EXPECT_EQ(ts->write_bytes, short_loop.write_bytes);
  }
}

}  // namespace
}  // namespace fa
