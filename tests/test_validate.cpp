// validate_variant, the one judging path of the sweep, fa-check and fa-gbench:
// a right kernel passes with its byte counts, a kernel that leaves outputs
// unwritten fails on the poison, a wrong one fails naming its errors and the
// seed; check_point samples rows only beyond max_check_rows. And pick_executor,
// the one back-end choice of the three programs.
#include <gtest/gtest.h>

#include <algorithm>

#include "check/grad_metrics.h"
#include "check/inputs.h"
#include "check/reference_cross_check.h"
#include "check/validate.h"
#include "cli/common/backend.h"
#include "core/errors.h"
#include "measure/cpu_executor.h"
#include "registry/cpu_kernels.h"

namespace fa {
namespace {

AttnProblem problem(int seqlen) {
  AttnProblem p;
  p.batch = 1, p.heads = 2, p.heads_kv = 1, p.seqlen_q = seqlen, p.seqlen_k = seqlen, p.head_dim = 16;
  p.causal = true;
  p.dtype = DType::bf16;
  return p;
}

struct Prepared {
  AttnProblem p = problem(96);
  HostInputs in = generate_inputs(p, Distribution::normal, 11);
  std::unique_ptr<Executor> ex = make_cpu_executor(1, 0);
  PointCheck check = check_point(p, in, 4096, 32, 11, 1);
  Prepared() { ex->prepare(p, in); }
  Validation validate(const KernelVariant& v) {
    ex->reserve_workspace(v.workspace_bytes ? v.workspace_bytes(p) : 0);
    return validate_variant(v, p, *ex, check, 11);
  }
};

TEST(Validate, ARightKernelPassesAndReportsItsCounts) {
  Prepared s;
  for (Family f : {Family::standard, Family::fa1, Family::fa2}) {
    const Validation v = s.validate(make_cpu_variant(f, Tile{32, 32, 0, 0}));
    EXPECT_TRUE(v.passed) << to_string(f) << ": " << v.why;
    EXPECT_TRUE(v.why.empty());
    EXPECT_EQ(v.errors.nonfinite, 0);
    EXPECT_LE(v.errors.o_max_abs, s.check.tolerances.tolerance);
    EXPECT_GT(v.counted.counted_read_bytes, 0);
    EXPECT_GT(v.counted.counted_write_bytes, 0);
    EXPECT_GE(v.peak_extra_bytes, 0);
  }
}

TEST(Validate, UnwrittenOutputsShowThroughThePoison) {
  Prepared s;
  // Runs the real kernel first so O and LSE hold right values, then one that writes nothing:
  // only the poison between the two makes the second fail.
  ASSERT_TRUE(s.validate(make_cpu_variant(Family::fa2, Tile{32, 32, 0, 0})).passed);
  KernelVariant lazy = make_cpu_variant(Family::fa2, Tile{32, 32, 0, 0});
  lazy.run = [](const AttnParams&, RunContext&) {};
  const Validation v = s.validate(lazy);
  EXPECT_FALSE(v.passed);
  EXPECT_GT(v.errors.nonfinite, 0);
  EXPECT_NE(v.why.find("non-finite"), std::string::npos) << v.why;
}

TEST(Validate, AWrongKernelFailsNamingItsErrorAndTheSeed) {
  Prepared s;
  const Validation v = s.validate(make_faulty_cpu_variant(CpuFault::no_rescale, Tile{32, 32, 0, 0}));
  EXPECT_FALSE(v.passed);
  EXPECT_GT(v.errors.o_max_abs, s.check.tolerances.tolerance);
  EXPECT_NE(v.why.find("O max abs error"), std::string::npos) << v.why;
  EXPECT_NE(v.why.find("(seed 11)"), std::string::npos) << v.why;
}

TEST(Validate, CheckPointSamplesOnlyBeyondMaxCheckRows) {
  const AttnProblem p = problem(300);
  const HostInputs in = generate_inputs(p, Distribution::normal, 5);
  EXPECT_EQ(check_point(p, in, 300, 64, 5, 1).ref.rows.size(), 300u);
  const PointCheck sampled = check_point(p, in, 100, 64, 5, 1);
  EXPECT_LT(sampled.ref.rows.size(), 300u);
  EXPECT_GT(sampled.tolerances.tolerance, 0);
  EXPECT_GT(sampled.tolerances.lse_tolerance, 0);
}

// A point with a backward: one float64 pass gives the forward reference on the
// checked rows and the gradients on those rows and the checked columns.
TEST(Validate, CheckPointWithGradientsSamplesRowsAndColumns) {
  AttnProblem p = problem(300);
  p.seqlen_k = 260;
  HostInputs in = generate_inputs(p, Distribution::normal, 5);
  in.dout = generate_dout(p, Distribution::normal, 5);
  const PointCheck fwd_only = check_point(p, in, 100, 64, 5, 1);
  const PointCheck both = check_point(p, in, 100, 64, 5, 1, 32);
  EXPECT_FALSE(fwd_only.grads.has_value());
  ASSERT_TRUE(both.grads.has_value());
  EXPECT_EQ(both.ref.rows, fwd_only.ref.rows);  // the same sampled rows
  EXPECT_EQ(both.grads->rows, both.ref.rows);
  EXPECT_LT(both.grads->cols.size(), 260u);
  for (int64_t c : {int64_t(0), int64_t(31), int64_t(32), int64_t(259)})
    EXPECT_TRUE(std::binary_search(both.grads->cols.begin(), both.grads->cols.end(), c)) << c;
  for (size_t i = 0; i < both.ref.o.size(); ++i) EXPECT_NEAR(both.ref.o[i], fwd_only.ref.o[i], 1e-12);
  EXPECT_NEAR(both.tolerances.tolerance, fwd_only.tolerances.tolerance, 1e-12);
  // Every row and column up to max_check_rows.
  const PointCheck full = check_point(p, in, 300, 64, 5, 1, 0);
  EXPECT_EQ(full.grads->rows.size(), 300u);
  EXPECT_EQ(full.grads->cols.size(), 260u);
}

// A point's gradient tolerances are computed once and served to each of its
// backward rows: the rule's numbers (they take no O: the standard forms D from
// its own P and dP, whichever forward a kernel was given).
TEST(Validate, GradTolerancesAreComputedOncePerPoint) {
  AttnProblem p = problem(64);
  p.dtype = DType::bf16;
  HostInputs in = generate_inputs(p, Distribution::normal, 3);
  in.dout = generate_dout(p, Distribution::normal, 3);
  const SampledGrads ref = reference_backward(p, in, {}, {}, 1);
  GradTolerances cache;
  GradErrors a, b, want;
  cache.set(a, p, in, ref, 1);
  set_grad_tolerances(want, p, in, ref, 1);
  EXPECT_EQ(a.dq.tolerance, want.dq.tolerance);
  EXPECT_EQ(a.dk.tolerance, want.dk.tolerance);
  EXPECT_EQ(a.dv.tolerance, want.dv.tolerance);
  EXPECT_GT(a.dq.tolerance, 0.0);
  cache.set(b, p, in, ref, 1);
  EXPECT_EQ(b.dq.tolerance, a.dq.tolerance);
  EXPECT_EQ(b.dk.tolerance, a.dk.tolerance);
  EXPECT_EQ(b.dv.tolerance, a.dv.tolerance);
}

// The GPU reference's agreement bound follows the inputs: 4 (d + n_k) u
// (1 + tau max|q| max|k|) max(1, max|v|), so larger scores and longer rows earn
// more room, and tiny values still get the floor of one.
TEST(ReferenceAgreement, FollowsTheScoresTheKeysAndV) {
  AttnProblem p;
  p.batch = 1;
  p.heads = p.heads_kv = 1;
  p.seqlen_q = 2;
  p.seqlen_k = 3;
  p.head_dim = 4;
  HostInputs in;
  in.q.assign(8, 0.5f);   // row norms 1
  in.k.assign(12, 1.0f);  // row norms 2
  in.v.assign(12, 0.25f);
  in.v[5] = -3.0f;
  const double u = 0x1.0p-53, tau = double(p.scale());
  EXPECT_DOUBLE_EQ(reference_agreement(p, in), 4.0 * (4 + 3) * u * (1.0 + tau * 1.0 * 2.0) * 3.0);
  in.v.assign(12, 0.25f);  // max|v| below 1: the floor
  EXPECT_DOUBLE_EQ(reference_agreement(p, in), 4.0 * (4 + 3) * u * (1.0 + tau * 2.0));
  in.q[0] = 8.0f;  // a larger query row: more room
  EXPECT_GT(reference_agreement(p, in), 4.0 * (4 + 3) * u * (1.0 + tau * 2.0) * 2);
}

// The gradients' bound adds dP's dot products and the sums over query rows:
// 4 (d + n_k + g n_q) u (1 + tau max|q| max|k|)(1 + max|dO| max|v|) max(1, max|q|, max|k|, max|dO|).
TEST(ReferenceAgreement, GradientsAddDpAndTheRows) {
  AttnProblem p;
  p.batch = 1;
  p.heads = 2;
  p.heads_kv = 1;
  p.seqlen_q = 2;
  p.seqlen_k = 3;
  p.head_dim = 4;
  HostInputs in;
  in.q.assign(16, 0.5f);    // row norms 1
  in.k.assign(12, 1.0f);    // row norms 2, max magnitude 1
  in.v.assign(12, 0.25f);   // row norms 0.5
  in.dout.assign(16, 1.5f); // row norms 3, max magnitude 1.5
  const double u = 0x1.0p-53, tau = double(p.scale());
  EXPECT_DOUBLE_EQ(gradient_agreement(p, in), 4.0 * (4 + 3 + 2 * 2) * u * (1.0 + tau * 2.0) * (1.0 + 3.0 * 0.5) * 1.5);
}

TEST(PickExecutor, CpuOnRequestAndUnknownNamesAreUsageErrors) {
  EXPECT_EQ(cli::pick_executor("test", "cpu", 1, 0)->backend(), Backend::cpu);
  try {
    cli::pick_executor("test", "gpu0", 1, 0);
    ADD_FAILURE() << "an unknown back end was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--backend: unknown 'gpu0'"), std::string::npos) << e.what();
  }
  // auto always yields an executor: cuda where a device is, cpu otherwise.
  EXPECT_NE(cli::pick_executor("test", "auto", 1, 0), nullptr);
}

}  // namespace
}  // namespace fa
