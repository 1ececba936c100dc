// The cudnn entries' refusals that need no GPU: shapes cuDNN's fused attention
// does not take are refused, with the reason, before any device or cuDNN call,
// so these hold on the development machine and on the GPU machine alike.
// Skipped in a build without the cudnn family.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "common/attn_params.h"
#include "common/gpu_entry.h"

namespace {

const fa::GpuKernelEntry* cudnn_entry(const char* pass) {
  for (const auto& e : fa::gpu_kernel_entries())
    if (std::strcmp(e.family, "cudnn") == 0 && std::strcmp(e.pass, pass) == 0 && e.dtype == fa::ElemType::bf16)
      return &e;
  return nullptr;
}

fa::AttnParams params(int seqlen_q, int seqlen_k, int head_dim, bool causal) {
  fa::AttnParams p;
  p.batch = 2, p.heads = 8, p.heads_kv = 2;
  p.seqlen_q = seqlen_q, p.seqlen_k = seqlen_k, p.head_dim = head_dim;
  p.causal = causal;
  p.dtype = fa::ElemType::bf16;
  fa::set_contiguous_strides(p);
  p.softmax_scale = 0.125f;
  return p;
}

std::string reason(const fa::GpuKernelEntry& e, const fa::AttnParams& p) {
  const char* why = e.unsupported(p);
  return why ? why : "";
}

class CudnnRefusals : public ::testing::Test {
 protected:
  void SetUp() override {
    fwd_ = cudnn_entry("fwd");
    bwd_ = cudnn_entry("bwd");
    if (!fwd_ || !bwd_) GTEST_SKIP() << "this build has no cudnn forward and backward entries";
  }
  const fa::GpuKernelEntry* fwd_ = nullptr;
  const fa::GpuKernelEntry* bwd_ = nullptr;
};

TEST_F(CudnnRefusals, BothPassesRefuseRowsThatSeeNoKey) {
  const auto p = params(640, 512, 128, /*causal=*/true);
  for (const auto* e : {fwd_, bwd_})
    EXPECT_NE(reason(*e, p).find("seqlen_q <= seqlen_k"), std::string::npos) << e->pass;
}

TEST_F(CudnnRefusals, BothPassesRefuseHeadDimsCudnnDoesNotTake) {
  for (int d : {100, 264})
    for (const auto* e : {fwd_, bwd_})
      EXPECT_NE(reason(*e, params(128, 128, d, false)).find("head_dim"), std::string::npos) << e->pass << " d" << d;
}

TEST_F(CudnnRefusals, TheBackwardRefusesOneQueryAndOneKey) {
  const auto p = params(1, 1, 64, false);
  EXPECT_NE(reason(*bwd_, p).find("seqlen_q = seqlen_k = 1"), std::string::npos);
  EXPECT_EQ(reason(*fwd_, p).find("seqlen_q = seqlen_k = 1"), std::string::npos);  // the forward takes it
}

TEST_F(CudnnRefusals, TheBackwardChecksTheGradientStrides) {
  auto p = params(128, 128, 64, false);
  p.do_row_stride += 4;  // dO rows no longer 16-byte aligned
  EXPECT_NE(reason(*bwd_, p).find("strides must be multiples of 8"), std::string::npos);
  EXPECT_EQ(reason(*fwd_, p).find("strides"), std::string::npos);  // dO is not the forward's
}

TEST_F(CudnnRefusals, AnEntryRefusesTheOtherDtype) {
  auto p = params(128, 128, 64, false);
  p.dtype = fa::ElemType::f16;
  EXPECT_NE(reason(*bwd_, p).find("another dtype"), std::string::npos);
  p.dtype = fa::ElemType::f32;
  EXPECT_NE(reason(*bwd_, p).find("another dtype"), std::string::npos);
}

}  // namespace
