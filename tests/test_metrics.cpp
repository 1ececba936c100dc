// Error metrics on planted differences, and the tolerance rule.
#include <gtest/gtest.h>

#include <cmath>

#include "check/inputs.h"
#include "check/metrics.h"
#include "check/sampling.h"
#include "reference/reference.h"

namespace fa {
namespace {

AttnProblem shape(int nq, int nk, bool causal, DType dt) {
  AttnProblem p;
  p.batch = 2, p.heads = 2, p.heads_kv = 1, p.seqlen_q = nq, p.seqlen_k = nk, p.head_dim = 8;
  p.causal = causal;
  p.dtype = dt;
  return p;
}

// The reference itself, as float32 outputs (what a perfect kernel would return).
HostOutputs as_outputs(const AttnProblem& p, const ReferenceOutputs& r) {
  HostOutputs o;
  o.o.assign(r.o.begin(), r.o.end());
  o.lse.assign(r.lse.begin(), r.lse.end());
  (void)p;
  return o;
}

size_t o_index(const AttnProblem& p, int b, int row, int h, int e) {
  return ((size_t(b) * p.seqlen_q + row) * p.heads + h) * p.head_dim + e;
}

TEST(Metrics, PlantedDifferences) {
  const AttnProblem p = shape(10, 12, false, DType::f32);
  const HostInputs in = generate_inputs(p, Distribution::normal, 4);
  const ReferenceOutputs ref = reference_forward(p, in);
  HostOutputs out = as_outputs(p, ref);
  const ErrorMetrics clean = compare_outputs(p, out, ref);
  EXPECT_LT(clean.o_max_abs, 1e-6);  // float32 rounding of the reference only
  EXPECT_EQ(clean.rows_checked, 10);
  EXPECT_FALSE(clean.sampled);

  const size_t i = o_index(p, 1, 7, 1, 3);
  const double r = ref.o[i];
  out.o[i] = float(r + 0.25);
  out.lse[(1 * p.heads + 0) * p.seqlen_q + 2] += 0.125f;
  const ErrorMetrics m = compare_outputs(p, out, ref);
  EXPECT_NEAR(m.o_max_abs, 0.25, 1e-6);
  EXPECT_NEAR(m.o_max_rel, 0.25 / (std::abs(r) + rel_eps), 1e-5);
  EXPECT_NEAR(m.lse_max_abs, 0.125, 1e-5);
  double ref2 = 0;
  for (double x : ref.o) ref2 += x * x;
  EXPECT_NEAR(m.o_rel_l2, 0.25 / std::sqrt(ref2), 1e-6);
  EXPECT_EQ(m.nonfinite, 0);

  out.o[o_index(p, 0, 0, 0, 0)] = NAN;
  out.o[o_index(p, 0, 1, 0, 0)] = INFINITY;
  out.lse[3] = NAN;
  EXPECT_EQ(compare_outputs(p, out, ref).nonfinite, 3);
}

TEST(Metrics, RowsThatSeeNoKey) {
  const AttnProblem p = shape(8, 4, true, DType::f32);  // rows 0..3 see nothing
  const HostInputs in = generate_inputs(p, Distribution::normal, 4);
  const ReferenceOutputs ref = reference_forward(p, in);
  HostOutputs out = as_outputs(p, ref);
  ErrorMetrics m = compare_outputs(p, out, ref);
  EXPECT_EQ(m.nonfinite, 0);  // -inf against -inf is equal
  EXPECT_LT(m.lse_max_abs, 1e-6);
  out.lse[1] = 0.f;  // a finite LSE where the row sees no key is wrong
  m = compare_outputs(p, out, ref);
  EXPECT_TRUE(std::isinf(m.lse_max_abs));
  EXPECT_FALSE(passes(m, Tolerances{1, 0}));
}

TEST(Metrics, SampledRowsOnly) {
  const AttnProblem p = shape(50, 50, true, DType::f32);
  const HostInputs in = generate_inputs(p, Distribution::normal, 4);
  const ReferenceOutputs ref = reference_forward(p, in, {0, 13, 49});
  HostOutputs out = as_outputs(p, reference_forward(p, in));
  out.o[o_index(p, 0, 20, 0, 0)] += 5.f;  // a row not in the sample: not seen
  ErrorMetrics m = compare_outputs(p, out, ref);
  EXPECT_EQ(m.rows_checked, 3);
  EXPECT_TRUE(m.sampled);
  EXPECT_LT(m.o_max_abs, 1e-6);
  out.o[o_index(p, 1, 13, 1, 7)] += 5.f;  // one that is
  EXPECT_NEAR(compare_outputs(p, out, ref).o_max_abs, 5.0, 1e-5);
}

TEST(Metrics, ToleranceRule) {
  EXPECT_EQ(dtype_floor(DType::f32), 1e-5);
  EXPECT_EQ(dtype_floor(DType::f16), 1e-3);
  EXPECT_EQ(dtype_floor(DType::bf16), 4e-3);
  AttnProblem p = shape(64, 64, true, DType::bf16);
  p.head_dim = 64;
  const HostInputs in = generate_inputs(p, Distribution::normal, 8);
  const ReferenceOutputs ref = reference_forward(p, in);
  const double bf16 = o_tolerance(p, in, ref);
  // The bf16 standard rounds P and O to 8 bits: its error is of the order of
  // 2^-9 |O|, so the tolerance sits clearly above the floor, but not wildly.
  EXPECT_GT(bf16, dtype_floor(DType::bf16) + 1e-4);
  EXPECT_LT(bf16, 0.05);
  AttnProblem p16 = p;
  p16.dtype = DType::f16;  // same values (bf16-representable), finer rounding of P and O
  EXPECT_LT(o_tolerance(p16, in, ref), bf16);
  AttnProblem p32 = p;
  p32.dtype = DType::f32;
  const double f32 = o_tolerance(p32, in, ref);
  EXPECT_GT(f32, 1e-5);
  EXPECT_LT(f32, 1e-5 + 1e-5);  // float32 standard error is ~1e-7

  ErrorMetrics m;
  const Tolerances t = tolerances_for(p, in, ref);
  EXPECT_DOUBLE_EQ(t.tolerance, bf16);
  // The bf16 standard stores S in bf16: its LSE is off by up to about
  // max|S| * 2^-9 (~1e-2 for normal inputs), so the LSE bound is 1e-3 plus
  // twice that; in fp32 the floor dominates.
  EXPECT_GT(t.lse_tolerance, 2e-3);
  EXPECT_LT(t.lse_tolerance, 3e-2);
  const Tolerances t32 = tolerances_for(p32, in, ref);
  EXPECT_GE(t32.lse_tolerance, 1e-3);
  EXPECT_LT(t32.lse_tolerance, 1.1e-3);
  m.o_max_abs = t.tolerance;  // at the bound: pass
  EXPECT_TRUE(passes(m, t));
  m.o_max_abs = t.tolerance * 1.01;
  EXPECT_FALSE(passes(m, t));
  m.o_max_abs = 0;
  m.lse_max_abs = t.lse_tolerance * 1.01;
  EXPECT_FALSE(passes(m, t));
  m.lse_max_abs = 0;
  m.nonfinite = 1;
  EXPECT_FALSE(passes(m, t));
}

TEST(Sampling, AllRowsOrABoundarySample) {
  AttnProblem p = shape(100, 100, false, DType::bf16);
  EXPECT_EQ(sample_rows(p, 100, 64, 1).size(), 100u);
  EXPECT_EQ(sample_rows(p, 0, 64, 1).size(), 100u);  // 0 = no limit
  p.seqlen_q = p.seqlen_k = 65536;
  const auto rows = sample_rows(p, 256, 128, 7);
  EXPECT_GE(rows.size(), 200u);
  EXPECT_LE(rows.size(), 300u);
  EXPECT_TRUE(std::is_sorted(rows.begin(), rows.end()));
  EXPECT_EQ(std::adjacent_find(rows.begin(), rows.end()), rows.end());
  EXPECT_EQ(rows.front(), 0);
  EXPECT_EQ(rows.back(), 65535);
  // Every sampled row's block has both edges in the sample.
  for (int64_t r : rows) {
    const int64_t first = r / 128 * 128;
    EXPECT_TRUE(std::binary_search(rows.begin(), rows.end(), first)) << r;
    EXPECT_TRUE(std::binary_search(rows.begin(), rows.end(), first + 127)) << r;
  }
  EXPECT_EQ(sample_rows(p, 256, 128, 7), rows);   // seeded
  EXPECT_NE(sample_rows(p, 256, 128, 8), rows);
  // Causal with seqlen_q > seqlen_k: the last blind row and the first seeing row.
  p.causal = true;
  p.seqlen_k = 1000;
  const auto c = sample_rows(p, 64, 128, 3);
  EXPECT_TRUE(std::binary_search(c.begin(), c.end(), 65536 - 1000 - 1));
  EXPECT_TRUE(std::binary_search(c.begin(), c.end(), 65536 - 1000));
}

}  // namespace
}  // namespace fa
