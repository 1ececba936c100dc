// The fa3 backward instantiations as the registry sees them, without a GPU:
// which problems each refuses (and why), and a workspace that holds at least the
// float32 dQ accumulator. Skips (with the reason) when the build has no CUDA or
// no fa3 backward instantiation.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/attn_params.h"
#include "common/gpu_entry.h"

namespace {

std::vector<const fa::GpuKernelEntry*> fa3_bwd_entries() {
  std::vector<const fa::GpuKernelEntry*> out;
  for (const auto& e : fa::gpu_kernel_entries())
    if (std::string(e.family) == "fa3" && std::string(e.pass) == "bwd") out.push_back(&e);
  return out;
}

// A problem this entry is built for, contiguous BSHD, with distinct 16-byte
// aligned (never dereferenced) tensor addresses.
fa::AttnParams params_for(const fa::GpuKernelEntry& e, int seqlen_q = 300, int seqlen_k = 200) {
  fa::AttnParams p;
  p.batch = 2;
  p.heads = 4;
  p.heads_kv = 2;
  p.seqlen_q = seqlen_q;
  p.seqlen_k = seqlen_k;
  p.head_dim = e.head_dim;
  p.dtype = e.dtype;
  p.softmax_scale = 0.125f;
  p.softmax_scale_log2 = 0.125f * 1.4426950408889634f;
  fa::set_contiguous_strides(p);
  auto addr = [](uintptr_t i) { return reinterpret_cast<void*>(uintptr_t(1) << 20 | i << 12); };
  p.q = addr(1);
  p.k = addr(2);
  p.v = addr(3);
  p.o = addr(4);
  p.lse = static_cast<float*>(addr(5));
  p.dout = addr(6);
  p.dq = addr(7);
  p.dk = addr(8);
  p.dv = addr(9);
  return p;
}

// nullptr, or a reason that is about the machine, not the problem.
bool accepted_or_no_device(const char* why) {
  if (why == nullptr) return true;
  const std::string w = why;
  return w.find("CUDA device") != std::string::npos || w.find("sm_90") != std::string::npos;
}

class Fa3BwdEntries : public ::testing::Test {
 protected:
  void SetUp() override {
#ifndef FA_BENCH_HAVE_CUDA
    GTEST_SKIP() << "built without CUDA (FA_BENCH_CUDA=OFF)";
#else
    entries_ = fa3_bwd_entries();
    if (entries_.empty()) GTEST_SKIP() << "no fa3 backward instantiation in this build";
#endif
  }
  std::vector<const fa::GpuKernelEntry*> entries_;
};

TEST_F(Fa3BwdEntries, AcceptsItsOwnShapesRaggedAndGqa) {
  for (const auto* e : entries_) {
    for (auto [sq, sk] : {std::pair{300, 200}, std::pair{1, 4097}, std::pair{4097, 1}, std::pair{128, 128}}) {
      const fa::AttnParams p = params_for(*e, sq, sk);
      const char* why = e->unsupported(p);
      EXPECT_TRUE(accepted_or_no_device(why)) << "hd" << e->head_dim << " " << e->block_m << "x" << e->block_n
                                              << " q" << sq << " k" << sk << ": " << why;
    }
  }
}

TEST_F(Fa3BwdEntries, RefusesWhatItCannotRunWithTheReason) {
  for (const auto* e : entries_) {
    const fa::AttnParams good = params_for(*e);
    auto reason = [&](auto&& change) {
      fa::AttnParams p = good;
      change(p);
      const char* why = e->unsupported(p);
      return std::string(why ? why : "");
    };
    EXPECT_NE(reason([](fa::AttnParams& p) { p.head_dim = p.head_dim == 64 ? 128 : 64; }).find("head_dim"),
              std::string::npos);
    EXPECT_NE(reason([](fa::AttnParams& p) {
                p.dtype = p.dtype == fa::ElemType::bf16 ? fa::ElemType::f16 : fa::ElemType::bf16;
              }).find("dtype"),
              std::string::npos);
    EXPECT_NE(reason([](fa::AttnParams& p) { p.heads_kv = 3; }).find("heads_kv"), std::string::npos);
    EXPECT_NE(reason([](fa::AttnParams& p) { p.seqlen_k = 0; }).find("seqlen"), std::string::npos);
    EXPECT_NE(reason([](fa::AttnParams& p) { p.do_row_stride += 4; }).find("strides"), std::string::npos);
    EXPECT_NE(reason([](fa::AttnParams& p) { p.dk_head_stride += 2; }).find("strides"), std::string::npos);
    EXPECT_NE(reason([](fa::AttnParams& p) { p.dv = static_cast<char*>(p.dv) + 8; }).find("aligned"),
              std::string::npos);
    EXPECT_NE(reason([](fa::AttnParams& p) { p.dout = nullptr; }).find("dO"), std::string::npos);
    EXPECT_NE(reason([](fa::AttnParams& p) { p.lse = nullptr; }).find("LSE"), std::string::npos);
    EXPECT_NE(reason([](fa::AttnParams& p) { p.dq = nullptr; }).find("dQ"), std::string::npos);
  }
}

// The dQ accumulator alone is batch * heads * seqlen_q * head_dim floats; the
// workspace grows with seqlen_q and does not depend on seqlen_k.
TEST_F(Fa3BwdEntries, WorkspaceHoldsTheDqAccumulator) {
  for (const auto* e : entries_) {
    for (int sq : {1, 300, 4096}) {
      const fa::AttnParams p = params_for(*e, sq, 777);
      const int64_t need = int64_t(p.batch) * p.heads * sq * p.head_dim * 4;
      EXPECT_GE(e->workspace_bytes(p), need) << "hd" << e->head_dim << " q" << sq;
      EXPECT_EQ(e->workspace_bytes(p), e->workspace_bytes(params_for(*e, sq, 5)));
    }
    EXPECT_LT(e->workspace_bytes(params_for(*e, 300)), e->workspace_bytes(params_for(*e, 4096)));
  }
}

}  // namespace
