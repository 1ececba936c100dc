// cuDNN's FP8 forward as a registry kernel, the parts that run without a GPU:
// an e4m3 O read back (dequantized) and its scale, the tolerance term O's
// rounding to e4m3 adds, the registry's variant (listed for e4m3, O in e4m3,
// one byte an O element in the traffic model) and the refusals of settings
// cuDNN's graph cannot express, made before any device or cuDNN call.
// tests/gpu/test_gpu_cudnn_fp8.cpp runs it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "check/fp8_inputs.h"
#include "check/inputs.h"
#include "check/metrics.h"
#include "common/gpu_entry.h"
#include "common/problem_params.h"
#include "core/e4m3.h"
#include "core/errors.h"
#include "measure/cpu_executor.h"
#include "process_util.h"
#include "measure/executor.h"
#include "reference/reference.h"
#include "registry/kernel.h"

namespace fa {
namespace {

constexpr const char* kName = "cudnn.e4m3";

AttnProblem e4m3_problem(int sq = 200, int sk = 200, int d = 64) {
  AttnProblem p;
  p.batch = 1, p.heads = 2, p.heads_kv = 1, p.seqlen_q = sq, p.seqlen_k = sk, p.head_dim = d;
  p.dtype = DType::e4m3;
  return p;
}

TEST(E4m3O, DequantizeMultipliesEveryCodeByTheDescale) {
  std::vector<uint8_t> codes(256);
  for (int c = 0; c < 256; ++c) codes[size_t(c)] = uint8_t(c);
  const std::vector<float> o = dequantize_e4m3(codes, 0.25f);
  ASSERT_EQ(o.size(), codes.size());
  for (int c = 0; c < 256; ++c) {
    const float want = decode_e4m3(uint8_t(c)) * 0.25f;
    if (std::isnan(want)) EXPECT_TRUE(std::isnan(o[size_t(c)])) << c;  // the poison code stays visible
    else EXPECT_EQ(o[size_t(c)], want) << c;
  }
  EXPECT_EQ(o[0x7E], 448.f * 0.25f);
}

TEST(E4m3O, ScaledRoundTripStaysWithinHalfAnUlpAndTheSubnormalFloor) {
  const float scale = 448.f / (kE4m3OHeadroom * 3.f);  // |O| <= 3
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> u(-3.f, 3.f);
  std::vector<float> x(4096);
  for (float& v : x) v = u(gen);
  x[0] = 1e-6f;  // deep in the subnormals once scaled
  std::vector<uint8_t> codes;
  for (float v : x) codes.push_back(encode_e4m3(v * scale));
  const std::vector<float> back = dequantize_e4m3(codes, 1.f / scale);
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_LE(std::abs(double(back[i]) - x[i]), std::ldexp(std::abs(double(x[i])), -4) + std::ldexp(1.0, -10) / scale)
        << x[i];
}

TEST(E4m3O, ScaleLeavesHeadroomBelow448) {
  EXPECT_FLOAT_EQ(e4m3_o_scale({0.5f, -2.f, 1.f}) * 2.f * kE4m3OHeadroom, kE4m3Max);
  EXPECT_EQ(e4m3_o_scale({0.f, 0.f}), 1.f);
  // quantize_inputs sets it from the dequantized V the kernels see.
  const AttnProblem p = e4m3_problem(64, 64);
  HostInputs in = generate_inputs(p, Distribution::normal, 3);
  quantize_inputs(p, in, Fp8Settings{}, 3);
  EXPECT_EQ(in.o_scale, e4m3_o_scale(in.v));
  EXPECT_GT(in.o_scale, 0.f);
}

TEST(E4m3OTolerance, FloorIsHalfAnUlpOfTheLargestOPlusHalfTheSubnormalSpacing) {
  EXPECT_DOUBLE_EQ(e4m3_o_floor(2.0, 64.f), 2.0 / 16 + 1.0 / 1024 / 64);
  EXPECT_DOUBLE_EQ(e4m3_o_floor(0.0, 0.5f), 1.0 / 512);
  EXPECT_THROW(e4m3_o_floor(1.0, 0.f), KernelError);
}

// An e4m3 point's two sets of tolerances from one pass of the standard.
struct E4m3Point {
  AttnProblem p;
  HostInputs in;
  ReferenceOutputs ref;
  Tolerances bf16_o, e4m3_o;
};

E4m3Point e4m3_point(uint64_t seed) {
  E4m3Point e;
  e.p = e4m3_problem(128, 128);
  e.in = generate_inputs(e.p, Distribution::normal, seed);
  quantize_inputs(e.p, e.in, Fp8Settings{}, seed);
  e.ref = reference_forward(e.p, e.in);
  e.bf16_o = tolerances_for(e.p, e.in, e.ref, &e.e4m3_o);
  return e;
}

// O as a kernel exact but for writing it in e4m3 would give it, times `factor`.
HostOutputs rounded_reference(const E4m3Point& e, double factor) {
  HostOutputs out;
  std::vector<uint8_t> codes;
  for (double r : e.ref.o) codes.push_back(encode_e4m3(float(r * factor) * e.in.o_scale));
  out.o = dequantize_e4m3(codes, 1.f / e.in.o_scale);
  out.lse.assign(e.ref.lse.begin(), e.ref.lse.end());
  return out;
}

TEST(E4m3OTolerance, AnOThatOnlyRoundingTouchedPassesAndAScaledOneFails) {
  const E4m3Point e = e4m3_point(7);
  double r_max = 0;
  for (double r : e.ref.o) r_max = std::max(r_max, std::abs(r));
  const double floor = e4m3_o_floor(r_max, e.in.o_scale);
  const ErrorMetrics exact = compare_outputs(e.p, rounded_reference(e, 1.0), e.ref);
  EXPECT_GT(exact.o_max_abs, 0.0);
  EXPECT_LE(exact.o_max_abs, floor);  // the floor bounds O's rounding alone
  EXPECT_GE(e.e4m3_o.tolerance, floor);
  EXPECT_TRUE(passes(exact, e.e4m3_o)) << exact.o_max_abs << " vs " << e.e4m3_o.tolerance;
  // O twice what it should be (P descaled by 1/224, not 1/448) fails; a descale forgotten is worse.
  const ErrorMetrics off = compare_outputs(e.p, rounded_reference(e, 2.0), e.ref);
  EXPECT_FALSE(passes(off, e.e4m3_o)) << off.o_max_abs << " vs " << e.e4m3_o.tolerance;
  EXPECT_EQ(e.e4m3_o.lse_tolerance, e.bf16_o.lse_tolerance);  // the LSE stays float32 in both forms
  EXPECT_NE(e.e4m3_o.tolerance, e.bf16_o.tolerance);
}

TEST(E4m3OTolerance, NeedsOsScale) {
  E4m3Point e = e4m3_point(9);
  e.in.o_scale = 0;
  Tolerances t;
  EXPECT_THROW(tolerances_for(e.p, e.in, e.ref, &t), KernelError);
  EXPECT_NO_THROW(tolerances_for(e.p, e.in, e.ref));  // the bf16-O form needs none
}

TEST(E4m3O, TheCpuBackEndRefusesAnE4m3O) {
  auto ex = make_cpu_executor(1);
  const AttnProblem p = [] {
    AttnProblem q = e4m3_problem(8, 8);
    q.dtype = DType::bf16;
    return q;
  }();
  ex->prepare(p, generate_inputs(p, Distribution::normal, 1));
  EXPECT_NO_THROW(ex->set_o_dtype(DType::bf16));
  EXPECT_THROW(ex->set_o_dtype(DType::e4m3), KernelError);
}

const GpuKernelEntry* cudnn_e4m3_entry() {
  for (const auto& e : gpu_kernel_entries())
    if (std::strcmp(e.family, "cudnn") == 0 && e.dtype == ElemType::e4m3) return &e;
  return nullptr;
}

class CudnnFp8Entry : public ::testing::Test {
 protected:
  void SetUp() override {
    entry_ = cudnn_e4m3_entry();
    variant_ = Registry::instance().find(kName);
    if (!entry_ && !variant_) GTEST_SKIP() << "this build has no cudnn family";
  }
  std::string why(const AttnParams& a) const {
    const char* w = entry_->unsupported(a);
    return w ? w : "";
  }
  AttnParams params(const AttnProblem& p) const {
    AttnParams a = make_params(p, ElemType::e4m3);
    a.o_dtype = ElemType::e4m3;
    return a;
  }
  const GpuKernelEntry* entry_ = nullptr;
  const KernelVariant* variant_ = nullptr;
};

TEST_F(CudnnFp8Entry, IsListedForE4m3AsAForwardThatWritesE4m3) {
  ASSERT_NE(entry_, nullptr);
  ASSERT_NE(variant_, nullptr);
  EXPECT_STREQ(entry_->pass, "fwd");
  EXPECT_EQ(entry_->head_dim, 0);  // any head_dim cuDNN takes
  EXPECT_EQ(entry_->o_dtype(), ElemType::e4m3);
  EXPECT_EQ(variant_->family, Family::cudnn);
  EXPECT_EQ(variant_->pass, Pass::fwd);
  EXPECT_EQ(variant_->dtypes, std::vector{DType::e4m3});
  ASSERT_TRUE(variant_->o_dtype);
  EXPECT_EQ(*variant_->o_dtype, DType::e4m3);
  EXPECT_EQ(o_dtype_of(*variant_, e4m3_problem()), DType::e4m3);
  // A family selection of an e4m3 sweep picks it; fa3's e4m3 forwards keep a bf16 O.
  bool found = false;
  for (const KernelVariant* v : Registry::instance().select("cudnn")) found |= v->name == kName;
  EXPECT_TRUE(found);
  for (const KernelVariant& v : Registry::instance().all())
    if (v.family == Family::fa3 && v.dtypes == std::vector{DType::e4m3}) EXPECT_FALSE(v.o_dtype) << v.name;
}

TEST_F(CudnnFp8Entry, FaBenchListShowsItForE4m3) {
  auto dir = test::temp_dir("cudnn_fp8_list");
  const test::ProcResult r = test::run_fa_bench({"list", "--kernels", "cudnn"}, dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("| cudnn.e4m3 | cudnn | cuda | fwd | - | e4m3 | any |"), std::string::npos) << r.out;
}

TEST_F(CudnnFp8Entry, TrafficWritesOneByteAnOElement) {
  ASSERT_NE(variant_, nullptr);
  const AttnProblem p = e4m3_problem(1000, 1000, 128);
  const std::optional<Traffic> t = variant_->traffic(p);
  ASSERT_TRUE(t);
  const Traffic bf16_o = traffic_model(Family::cudnn, p, variant_->tile);
  EXPECT_EQ(t->read_bytes, bf16_o.read_bytes);
  EXPECT_EQ(bf16_o.write_bytes - t->write_bytes, int64_t(p.batch) * p.seqlen_q * p.heads * p.head_dim);
}

TEST_F(CudnnFp8Entry, RefusesDescalesThatAreNotOnePerTensor) {
  ASSERT_NE(entry_, nullptr);
  const AttnProblem p = e4m3_problem();
  AttnParams head = params(p);  // --fp8-scaling head: one per (batch, head)
  head.q_descale.batch_stride = p.heads, head.q_descale.head_stride = 1;
  EXPECT_NE(why(head).find("one descale per tensor"), std::string::npos) << why(head);
  AttnParams block = params(p);  // --fp8-scaling block
  block.v_descale.block_rows = 128;
  EXPECT_NE(why(block).find("one descale per tensor"), std::string::npos) << why(block);
  // The runner asks the same through refuse_buffers, with the executor's params.
  ASSERT_TRUE(variant_->refuse_buffers);
  EXPECT_NE(variant_->refuse_buffers(head).find("--fp8-scaling tensor"), std::string::npos);
  EXPECT_EQ(entry_->workspace_bytes(head), 0);
}

TEST_F(CudnnFp8Entry, RefusesA16BitOAndOtherInputs) {
  ASSERT_NE(entry_, nullptr);
  AttnParams bf16_o = params(e4m3_problem());
  bf16_o.o_dtype = ElemType::bf16;
  EXPECT_NE(why(bf16_o).find("e4m3 only"), std::string::npos) << why(bf16_o);
  AttnParams bf16_in = params(e4m3_problem());
  bf16_in.dtype = ElemType::bf16;
  EXPECT_NE(why(bf16_in).find("e4m3 inputs"), std::string::npos) << why(bf16_in);
  // What it takes is refused here only for want of a Hopper device or of cuDNN.
  const std::string fine = why(params(e4m3_problem()));
  EXPECT_TRUE(fine.empty() || fine.find("device") != std::string::npos ||
              fine.find("compute capability") != std::string::npos || fine.find("cuDNN") != std::string::npos)
      << fine;
  // The registry asks with the O dtype the entry writes: no refusal for the O.
  ASSERT_TRUE(variant_->refuse);
  EXPECT_EQ(variant_->refuse(e4m3_problem()).find("e4m3 only"), std::string::npos);
}

TEST_F(CudnnFp8Entry, ALaunchWithoutOScaleOrDescalesIsInvalid) {
  ASSERT_NE(entry_, nullptr);
  AttnParams a = params(e4m3_problem());  // no O scale, no descales: refused before any CUDA call
  EXPECT_NE(entry_->launch(a, nullptr), 0);
}

}  // namespace
}  // namespace fa
