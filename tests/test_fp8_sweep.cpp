// e4m3 in the sweep: the dtype's name, the fp8 settings and their refusals,
// the quantized inputs (the reference sees the dequantized values; the
// unquantized ones give the second figure), the descales' layout per scaling
// mode, and the FP8 tolerance rule's pieces on small shapes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "core/e4m3.h"
#include "fa3/fa3_fp8_defaults.h"
#include "check/fp8_inputs.h"
#include "check/hadamard.h"
#include "check/inputs.h"
#include "check/metrics.h"
#include "check/validate.h"
#include "core/errors.h"
#include "measure/cpu_executor.h"
#include "measure/traffic.h"
#include "reference/reference.h"
#include "registry/cpu_kernels.h"
#include "sweep/config.h"

namespace fa {
namespace {

AttnProblem fp8_problem(int seqlen = 96, int head_dim = 64, bool causal = false) {
  AttnProblem p;
  p.batch = 2, p.heads = 4, p.heads_kv = 2, p.seqlen_q = seqlen, p.seqlen_k = seqlen, p.head_dim = head_dim;
  p.causal = causal;
  p.dtype = DType::e4m3;
  return p;
}

SweepConfig resolve(std::vector<std::pair<std::string, std::string>> flags) {
  ConfigSource src;
  for (auto& [k, v] : flags) apply_override(src, k, v, "--" + k);
  return resolve_config(src);
}

TEST(Fp8Dtype, OneNameEverywhere) {
  EXPECT_EQ(parse_dtype("e4m3"), DType::e4m3);
  EXPECT_EQ(to_string(DType::e4m3), "e4m3");
  EXPECT_FALSE(parse_dtype("fp8").has_value());
  EXPECT_EQ(dtype_bytes(DType::e4m3), 1);
  EXPECT_EQ(output_dtype(DType::e4m3), DType::bf16);
  EXPECT_EQ(output_dtype(DType::f16), DType::f16);
  EXPECT_EQ(fp8_problem().describe(), "b2 h4/2 q96 k96 d64 e4m3");
}

TEST(Fp8Config, SettingsResolveAndRoundTrip) {
  const SweepConfig c = resolve({{"dtype", "bf16,e4m3"}, {"fp8_scaling", "head"}, {"fp8_hadamard", "true"}});
  EXPECT_EQ(c.dtype, (std::vector<DType>{DType::bf16, DType::e4m3}));
  EXPECT_EQ(c.fp8_scaling, Fp8Scaling::head);
  EXPECT_TRUE(c.fp8_hadamard);
  const SweepConfig back = resolve_config(config_from_json(c.to_json(), "test"));
  EXPECT_EQ(back.fp8_scaling, Fp8Scaling::head);
  EXPECT_TRUE(back.fp8_hadamard);
  // Without e4m3 the keys are not written (and would be refused if they were).
  EXPECT_FALSE(resolve({{"dtype", "bf16"}}).to_json().contains("fp8_scaling"));
}

TEST(Fp8Config, BadSettingsAreUsageErrors) {
  EXPECT_THROW(resolve({{"dtype", "e4m3"}, {"fp8_scaling", "rows"}}), UsageError);
  EXPECT_THROW(resolve({{"dtype", "bf16"}, {"fp8_scaling", "tensor"}}), UsageError);
  EXPECT_THROW(resolve({{"fp8_hadamard", "true"}}), UsageError);
  EXPECT_THROW(resolve({{"dtype", "e4m3"}, {"pass", "fwd,bwd"}}), UsageError);
  EXPECT_THROW(resolve({{"dtype", "e4m3"}, {"head_dim", "80"}, {"fp8_hadamard", "true"}}), UsageError);
  EXPECT_NO_THROW(resolve({{"dtype", "e4m3"}, {"head_dim", "80"}}));
}

TEST(Fp8Inputs, TheReferenceSeesTheDequantizedValuesAndTheOriginalsAreKept) {
  const AttnProblem p = fp8_problem();
  const HostInputs generated = generate_inputs(p, Distribution::normal, 5);
  // Generated in float, not rounded to a 16-bit dtype: some value is not a bf16.
  EXPECT_TRUE(std::any_of(generated.q.begin(), generated.q.end(), [](float x) {
    std::vector<float> v{x};
    round_to_dtype(v, DType::bf16);
    return v[0] != x;
  }));
  HostInputs in = generated;
  const HostInputs original = quantize_inputs(p, in, Fp8Settings{}, 5);
  EXPECT_EQ(original.q, generated.q);
  EXPECT_EQ(original.v, generated.v);
  const Fp8Tensor q = quantize_e4m3(generated.q, BshdShape{p.batch, p.seqlen_q, p.heads, p.head_dim}, Fp8Scaling::tensor);
  EXPECT_EQ(in.q, dequantize(q));
  EXPECT_EQ(in.q8.codes, q.codes);
  EXPECT_NE(in.q, generated.q);
  for (size_t i = 0; i < in.k.size(); ++i)
    ASSERT_EQ(in.k[i], decode_e4m3(in.k8.codes[i]) * in.k8.descales[0]) << i;
}

TEST(Fp8Inputs, DescalesPerScalingMode) {
  const AttnProblem p = fp8_problem(300);
  const HostInputs generated = generate_inputs(p, Distribution::normal, 9);
  HostInputs t = generated, h = generated, b = generated;
  quantize_inputs(p, t, Fp8Settings{Fp8Scaling::tensor, false}, 9);
  quantize_inputs(p, h, Fp8Settings{Fp8Scaling::head, false}, 9);
  quantize_inputs(p, b, Fp8Settings{Fp8Scaling::block, false}, 9);
  EXPECT_EQ(t.q8.descales.size(), 1u);
  EXPECT_EQ(t.q8.batch_stride + t.q8.head_stride + t.q8.block_rows, 0);
  EXPECT_EQ(h.q8.descales.size(), size_t(p.batch * p.heads));
  EXPECT_EQ(h.k8.descales.size(), size_t(p.batch * p.heads_kv));
  EXPECT_EQ(h.k8.batch_stride, p.heads_kv);
  EXPECT_EQ(h.k8.head_stride, 1);
  EXPECT_EQ(b.q8.block_rows, kFp8BlockRows);
  const int64_t blocks = (300 + kFp8BlockRows - 1) / kFp8BlockRows;  // 3, the last ragged
  EXPECT_EQ(b.q8.descales.size(), size_t(p.batch * p.heads * blocks));
  EXPECT_EQ(b.q8.head_stride, blocks);
  EXPECT_EQ(b.q8.batch_stride, p.heads * blocks);
  // Every element's code times the descale its strides name is the dequantized value.
  for (const HostInputs* in : {&t, &h, &b}) {
    const E4m3Codes& c = in->v8;
    for (int64_t bi = 0; bi < p.batch; ++bi)
      for (int64_t s = 0; s < p.seqlen_k; ++s)
        for (int64_t hk = 0; hk < p.heads_kv; ++hk) {
          const int64_t g = bi * c.batch_stride + hk * c.head_stride + (c.block_rows ? s / c.block_rows : 0);
          const size_t i = size_t(((bi * p.seqlen_k + s) * p.heads_kv + hk) * p.head_dim);
          ASSERT_EQ(in->v[i], decode_e4m3(c.codes[i]) * c.descales[size_t(g)]);
        }
  }
  // Finer groups fit their values better: a head's amax is at most the tensor's.
  for (float d : h.q8.descales) EXPECT_LE(d, t.q8.descales[0]);
}

TEST(Fp8Inputs, HadamardRotatesQAndKButKeepsTheScores) {
  const AttnProblem p = fp8_problem(64, 64);
  const HostInputs generated = generate_inputs(p, Distribution::outliers, 4);
  HostInputs plain = generated, rotated = generated;
  quantize_inputs(p, plain, Fp8Settings{}, 4);
  const HostInputs original = quantize_inputs(p, rotated, Fp8Settings{Fp8Scaling::tensor, true}, 4);
  EXPECT_EQ(original.q, generated.q);  // the unquantized figure compares with the unrotated inputs
  EXPECT_EQ(rotated.v, plain.v);       // V is not rotated
  EXPECT_NE(rotated.q, plain.q);
  const ReferenceOutputs exact = reference_forward(p, original, {}, 1);
  const ReferenceOutputs with = reference_forward(p, rotated, {}, 1);
  const ReferenceOutputs without = reference_forward(p, plain, {}, 1);
  double err_with = 0, err_without = 0;
  for (size_t i = 0; i < exact.lse.size(); ++i) {
    err_with = std::max(err_with, std::abs(with.lse[i] - exact.lse[i]));
    err_without = std::max(err_without, std::abs(without.lse[i] - exact.lse[i]));
  }
  EXPECT_LT(err_with, err_without);  // outlier channels spread out: less quantization error
}

TEST(Fp8Check, ThePointKeepsTheReferenceOnTheUnquantizedInputs) {
  const AttnProblem p = fp8_problem(200, 32, true);
  HostInputs in = generate_inputs(p, Distribution::normal, 2);
  const HostInputs original = quantize_inputs(p, in, Fp8Settings{}, 2);
  EXPECT_THROW(check_point(p, in, 64, 64, 2, 1), std::logic_error);  // no unquantized inputs
  const PointCheck c = check_point(p, in, 64, 64, 2, 1, std::nullopt, nullptr, &original);
  ASSERT_TRUE(c.unquantized_ref.has_value());
  EXPECT_EQ(c.unquantized_ref->rows, c.ref.rows);
  EXPECT_EQ(c.ref.rows.size(), 64u);  // sampled, on the host
  const ReferenceOutputs direct = reference_forward(p, original, c.ref.rows, 1);
  EXPECT_EQ(c.unquantized_ref->o, direct.o);
  EXPECT_NE(c.unquantized_ref->o, c.ref.o);
}

// A float32 attention on the dequantized inputs passes the FP8 rule; its error
// against the unquantized reference is what quantization cost, far larger;
// the same output with V's descale applied twice fails.
TEST(Fp8Check, KernelErrorAndQuantizationErrorAreSeparateFigures) {
  const AttnProblem p = fp8_problem(96, 32, true);
  HostInputs in = generate_inputs(p, Distribution::normal, 8);
  const HostInputs original = quantize_inputs(p, in, Fp8Settings{Fp8Scaling::head, false}, 8);
  const PointCheck c = check_point(p, in, 4096, 64, 8, 1, std::nullopt, nullptr, &original);
  std::unique_ptr<Executor> ex = make_cpu_executor(1, 0);
  ex->prepare(p, in);
  KernelVariant v = make_cpu_variant(Family::standard, Tile{});
  EXPECT_FALSE(v.supports(p).ok);  // the registered one refuses e4m3
  v.refuse = nullptr;              // here: a float32 stand-in for an exact FP8 kernel
  ex->reserve_workspace(v.workspace_bytes ? v.workspace_bytes(p) : 0);
  HostOutputs out;
  const Validation val = validate_variant(v, p, *ex, c, 8, [&](const HostOutputs& o) { out = o; });
  EXPECT_TRUE(val.passed) << val.why;
  ASSERT_TRUE(val.errors_vs_unquantized.has_value());
  EXPECT_GT(val.errors_vs_unquantized->o_max_abs, 10 * val.errors.o_max_abs);
  EXPECT_GT(val.errors_vs_unquantized->o_rel_l2, 0);

  // V's descale applied twice: O scaled by it (per (batch, kv head) here).
  HostOutputs twice = out;
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t s = 0; s < p.seqlen_q; ++s)
      for (int64_t h = 0; h < p.heads; ++h) {
        const float d = in.v8.descales[size_t(b * in.v8.batch_stride + h / (p.heads / p.heads_kv) * in.v8.head_stride)];
        for (int64_t e = 0; e < p.head_dim; ++e) twice.o[size_t(((b * p.seqlen_q + s) * p.heads + h) * p.head_dim + e)] *= d;
      }
  EXPECT_FALSE(passes(compare_outputs(p, twice, c.ref), c.tolerances));
}

// The FP8 standard's scores are the tensor cores' (check/fp8_mma.h): with one
// key, LSE is the score, so the standard's LSE error, and the tolerance twice
// it, is exactly what the emulated accumulation loses. 256 beside 31 products
// of 2^-6 in one k-step: each small product is truncated away (the H200 gives
// 256, tests/gpu/standalone/fp8_accum_probe.cu), float32 would keep 31/64.
TEST(Fp8Tolerance, TheStandardAddsScoresUpAsTheTensorCoresDo) {
  AttnProblem p = fp8_problem(1, 64, false);
  p.batch = 1, p.heads = 1, p.heads_kv = 1, p.seqlen_k = 1;
  HostInputs in;
  std::vector<float> q(64, 0.f), k(64, 1.f), v(64, 0.5f);
  q[0] = 256.f;
  for (int c = 1; c < 32; ++c) q[size_t(c)] = 0x1p-6f;
  auto codes = [](const std::vector<float>& x) {
    E4m3Codes c;
    for (float e : x) c.codes.push_back(encode_e4m3(e));
    c.descales = {1.f};
    return c;
  };
  in.q = q, in.k = k, in.v = v;
  in.q8 = codes(q), in.k8 = codes(k), in.v8 = codes(v);
  const ReferenceOutputs ref = reference_forward(p, in, {}, 1);
  const double lost = 31.0 / 64 * p.scale_f64();  // the exact score is 256 + 31/64
  EXPECT_NEAR(ref.lse[0], (256.0 + 31.0 / 64) * p.scale_f64(), 1e-12);
  const Tolerances t = tolerances_for(p, in, ref);
  EXPECT_NEAR(t.lse_tolerance, 1e-3 + 2 * lost, 1e-6);
  // A float32 point on the same values adds up in float32: only rounding is left.
  AttnProblem f32 = p;
  f32.dtype = DType::f32;
  EXPECT_LT(tolerances_for(f32, in, ref).lse_tolerance, 1e-3 + 1e-4);
}

// P in e4m3 (3 mantissa bits) costs more than P in bf16 (7): on the same
// dequantized inputs the FP8 rule's O tolerance is the larger.
TEST(Fp8Tolerance, TheStandardRoundsPToE4m3) {
  AttnProblem p = fp8_problem(128, 64, false);
  HostInputs in = generate_inputs(p, Distribution::normal, 12);
  quantize_inputs(p, in, Fp8Settings{}, 12);
  const ReferenceOutputs ref = reference_forward(p, in, {}, 1);
  const double fp8 = o_tolerance(p, in, ref);
  AttnProblem as_bf16 = p;
  as_bf16.dtype = DType::bf16;
  const double bf16 = o_tolerance(as_bf16, in, ref);
  EXPECT_GT(fp8, bf16);
  EXPECT_GE(fp8, dtype_floor(DType::bf16));
  EXPECT_EQ(dtype_floor(DType::e4m3), dtype_floor(DType::bf16));  // O is bf16
}

TEST(Fp8Traffic, OneBytePerInputTwoPerOutputAndTheVtPrePassWhereItRuns) {
  const Tile tile{128, 128, 12, 2};
  const int64_t d = 128;
  for (int64_t n : {256, 4096}) {
    AttnProblem p = fp8_problem(int(n), int(d), false);
    p.heads_kv = p.heads;
    const Traffic cudnn_like = traffic_model(Family::fa2, p, tile);
    const int64_t bh = int64_t(p.batch) * p.heads;
    // Q once, K and V once per Q block (n / 128 blocks); O in bf16 and LSE.
    EXPECT_EQ(cudnn_like.read_bytes, bh * (n * d + n / 128 * 2 * n * d));
    EXPECT_EQ(cudnn_like.write_bytes, bh * (n * d * 2 + n * 4));
    const Traffic fa3 = traffic_model(Family::fa3, p, tile);
    // 256 queries: V transposed inside the kernel, no more bytes; 4096: the
    // pre-pass reads V and writes V^T (no padding at these lengths).
    const int64_t pre_pass = n <= fp8_vt_in_kernel_max_seqlen_q(int(d), false) ? 0 : bh * n * d;
    EXPECT_EQ(fa3.read_bytes - cudnn_like.read_bytes, pre_pass) << n;
    EXPECT_EQ(fa3.write_bytes - cudnn_like.write_bytes, pre_pass) << n;
    EXPECT_EQ(pre_pass == 0, n == 256);
  }
}

}  // namespace
}  // namespace fa
