// The standard and fa1 backward instantiations as the generated table presents
// them: which exist, how much workspace they ask for, what they refuse. Host code
// only (no device needed); the gradients themselves are checked on a GPU by the
// backward check program.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/attn_params.h"
#include "common/gpu_entry.h"

namespace fa {
namespace {

bool is(const GpuKernelEntry& e, const char* family, const char* pass) {
  return std::strcmp(e.family, family) == 0 && std::strcmp(e.pass, pass) == 0;
}

std::vector<const GpuKernelEntry*> entries(const char* family, const char* pass) {
  std::vector<const GpuKernelEntry*> out;
  for (const auto& e : gpu_kernel_entries())
    if (is(e, family, pass)) out.push_back(&e);
  return out;
}

int64_t round_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

// Contiguous BSHD tensors at 256-byte aligned fake addresses (never dereferenced).
AttnParams problem(ElemType dt, int batch, int heads, int heads_kv, int sq, int sk, int d) {
  AttnParams p;
  p.batch = batch;
  p.heads = heads;
  p.heads_kv = heads_kv;
  p.seqlen_q = sq;
  p.seqlen_k = sk;
  p.head_dim = d;
  p.dtype = dt;
  set_contiguous_strides(p);
  auto at = [](uintptr_t a) { return reinterpret_cast<void*>(a); };
  p.q = at(0x10000);
  p.k = at(0x20000);
  p.v = at(0x30000);
  p.o = at(0x40000);
  p.dout = at(0x50000);
  p.dq = at(0x60000);
  p.dk = at(0x70000);
  p.dv = at(0x80000);
  return p;
}

TEST(BwdEntries, EveryForwardHeadDimOfFa1HasABackwardInBothDtypes) {
  if (entries("fa1", "fwd").empty()) GTEST_SKIP() << "fa1 not built";
  std::set<std::pair<int, ElemType>> fwd, bwd;
  for (const auto* e : entries("fa1", "fwd")) fwd.insert({e->head_dim, e->dtype});
  for (const auto* e : entries("fa1", "bwd")) bwd.insert({e->head_dim, e->dtype});
  for (const auto& k : fwd)
    EXPECT_TRUE(bwd.count(k)) << "no fa1 backward at head_dim " << k.first;
}

TEST(BwdEntries, StandardBackwardExistsInBothDtypes) {
  if (entries("standard", "fwd").empty()) GTEST_SKIP() << "standard not built";
  std::set<ElemType> dts;
  for (const auto* e : entries("standard", "bwd")) dts.insert(e->dtype);
  EXPECT_EQ(dts, (std::set<ElemType>{ElemType::bf16, ElemType::f16}));
}

// standard_bwd.cuh: pointer arrays (7 per query head, 2 per KV head), two 16-bit
// N^2 buffers, and with GQA two float32 dK/dV accumulators.
TEST(BwdEntries, StandardWorkspaceHoldsTwoScoreBuffersAndTheGqaSums) {
  const auto es = entries("standard", "bwd");
  if (es.empty()) GTEST_SKIP() << "standard not built";
  for (const auto* e : es) {
    const AttnParams mha = problem(e->dtype, 2, 4, 4, 1000, 600, 64);
    const int64_t scores = round_up(2 * 2 * 4 * 1000 * 600, 256);
    EXPECT_EQ(e->workspace_bytes(mha), round_up(8 * (7 * 8 + 2 * 8), 256) + 2 * scores);
    const AttnParams gqa = problem(e->dtype, 2, 4, 2, 1000, 600, 64);
    EXPECT_EQ(e->workspace_bytes(gqa),
              round_up(8 * (7 * 8 + 2 * 4), 256) + 2 * scores + 2 * 4 * (2 * 2) * 600 * 64);
    // Quadratic in the sequence: doubling both lengths nearly quadruples it.
    const AttnParams twice = problem(e->dtype, 2, 4, 4, 2000, 1200, 64);
    EXPECT_GT(e->workspace_bytes(twice), 3.9 * double(e->workspace_bytes(mha)));
  }
}

// fa1_bwd.cuh: the float32 dQ accumulator, and with p.deterministic one turn
// counter per (batch, head, Q block) and the dispatch ticket.
TEST(BwdEntries, Fa1WorkspaceIsTheDqAccumulatorAndTheTurnCounters) {
  const auto es = entries("fa1", "bwd");
  if (es.empty()) GTEST_SKIP() << "fa1 not built";
  for (const auto* e : es) {
    AttnParams p = problem(e->dtype, 3, 4, 2, 1000, 700, e->head_dim);
    const int64_t dq = round_up(4LL * 3 * 4 * 1000 * e->head_dim, 256);
    EXPECT_EQ(e->workspace_bytes(p), dq);
    p.deterministic = true;
    const int64_t m_blocks = (1000 + e->block_m - 1) / e->block_m;
    EXPECT_EQ(e->workspace_bytes(p), dq + 4LL * (3 * 4 * m_blocks + 1));
  }
}

TEST(BwdEntries, Fa1RefusesWhatItCannotRunAndSaysWhy) {
  const auto es = entries("fa1", "bwd");
  if (es.empty()) GTEST_SKIP() << "fa1 not built";
  for (const auto* e : es) {
    const AttnParams ok = problem(e->dtype, 2, 8, 2, 333, 517, e->head_dim);
    EXPECT_EQ(e->unsupported(ok), nullptr);
    AttnParams p = ok;
    p.dq = static_cast<char*>(p.dq) + 8;
    ASSERT_NE(e->unsupported(p), nullptr);
    EXPECT_STREQ(e->unsupported(p), "gradient tensors must be 16-byte aligned");
    p = ok;
    p.dk_row_stride += 4;
    ASSERT_NE(e->unsupported(p), nullptr);
    EXPECT_STREQ(e->unsupported(p), "gradient strides must be multiples of 8 elements");
    p = ok;
    p.head_dim = e->head_dim == 64 ? 128 : 64;
    EXPECT_NE(e->unsupported(p), nullptr);
    p = ok;
    p.dtype = e->dtype == ElemType::bf16 ? ElemType::f16 : ElemType::bf16;
    EXPECT_NE(e->unsupported(p), nullptr);
  }
}

}  // namespace
}  // namespace fa
