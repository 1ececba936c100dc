// Gradient error metrics, the standard backward in the dtype and the gradient
// tolerance rule built on it; the branch-free dtype rounding it relies on.
#include <gtest/gtest.h>

#include <algorithm>

#include <bit>
#include <cmath>
#include <limits>

#include "check/dtype_round.h"
#include "check/grad_metrics.h"
#include "check/half.h"
#include "check/standard_bwd.h"
#include "core/errors.h"
#include "grad_util.h"

namespace fa {
namespace {

using test::backward_case;
using test::BackwardCase;
using test::shape;

TEST(DtypeRound, MatchesHalfBitForBit) {
  auto check = [](uint32_t bits) {
    const float x = std::bit_cast<float>(bits);
    ASSERT_EQ(std::bit_cast<uint32_t>(round_bf16_inline(x)), std::bit_cast<uint32_t>(round_bf16(x)))
        << std::hex << bits;
    ASSERT_EQ(std::bit_cast<uint32_t>(round_f16_inline(x)), std::bit_cast<uint32_t>(round_f16(x)))
        << std::hex << bits;
  };
  for (uint64_t bits = 0; bits <= 0xFFFFFFFFull; bits += 4093) check(uint32_t(bits));
  // Every pattern around the boundaries: fp16 subnormal/normal (2^-14), the
  // smallest subnormal's half (2^-25), the overflow edge (65504..65520),
  // float's inf and NaN, each with either sign.
  for (uint32_t centre : {0x38800000u, 0x33000000u, 0x477FE000u, 0x477FF000u, 0x7F800000u,
                          0x7F7FFFFFu, 0x00000000u, 0x3F800000u})
    for (uint32_t sign : {0u, 0x80000000u})
      for (int64_t off = -20000; off <= 20000; ++off) check(uint32_t((int64_t(centre) + off) & 0x7FFFFFFF) | sign);
  float v[3] = {1.00390625f, 1.001f, -3.1f};
  round_in_place(v, 3, DType::bf16);
  EXPECT_EQ(v[0], 1.0f);  // a tie rounds to even
  EXPECT_EQ(v[1], 1.0f);
  EXPECT_EQ(v[2], round_bf16(-3.1f));
}

// Hand-made errors on a 1x2x1x2 problem (d = 2) with sampled rows and columns.
TEST(GradMetrics, CompareByHand) {
  const AttnProblem p = shape(1, 1, 1, 3, 2, 2, false);
  SampledGrads ref;
  ref.rows = {0, 2};
  ref.cols = {1};
  ref.dq = {1.0, -2.0, 0.5, 0.0};  // rows 0 and 2
  ref.dk = {4.0, 0.0};             // column 1
  ref.dv = {-1.0, 1.0};
  HostGrads out;
  out.dq = {1.5, -2.0, 9e9f, 9e9f, 0.5, 0.1f};  // row 1 is not checked
  out.dk = {7.f, 7.f, 4.0, NAN};
  out.dv = {0.f, 0.f, -1.0, 1.0};
  const GradErrors g = compare_grads(p, out, ref);
  EXPECT_EQ(g.rows_checked, 2);
  EXPECT_EQ(g.cols_checked, 1);
  EXPECT_TRUE(g.sampled);
  EXPECT_DOUBLE_EQ(g.dq.max_abs, 0.5);
  EXPECT_NEAR(g.dq.max_rel, double(0.1f) / 1e-3, 1e-6);  // |0.1 - 0| / (0 + 1e-3)
  EXPECT_NEAR(g.dq.rel_l2, std::sqrt((0.25 + double(0.1f) * 0.1f) / (1 + 4 + 0.25)), 1e-9);
  EXPECT_EQ(g.dq.nonfinite, 0);
  EXPECT_EQ(g.dk.nonfinite, 1);
  EXPECT_DOUBLE_EQ(g.dk.max_abs, 0.0);
  EXPECT_DOUBLE_EQ(g.dv.max_abs, 0.0);
  EXPECT_DOUBLE_EQ(g.dv.rel_l2, 0.0);
  // Tolerances are 0 until the rule sets them: only an exact, finite result passes.
  EXPECT_FALSE(g.dq.passes());
  EXPECT_FALSE(g.dk.passes());  // NaN
  EXPECT_TRUE(g.dv.passes());
  EXPECT_FALSE(g.passes());
  out.dq.pop_back();
  EXPECT_THROW(compare_grads(p, out, ref), KernelError);
}

TEST(GradMetrics, ToleranceIsTwiceTheStandardPlusTheFloor) {
  const BackwardCase c = backward_case(shape(1, 4, 2, 150, 120, 32, true, DType::bf16), 3);
  GradErrors g;
  set_grad_tolerances(g, c.p, c.in, c.ref, 2);
  const SampledGrads s = standard_backward_in_precision(c.p, c.in, c.ref.rows, c.ref.cols, 2);
  auto max_abs = [](const std::vector<double>& r) {
    double m = 0;
    for (double x : r) m = std::max(m, std::abs(x));
    return m;
  };
  // The absolute part: the fp32 drift factor times the largest gradient of the three.
  const double absolute = 0x1.0p-17 * std::max({max_abs(c.ref.dq), max_abs(c.ref.dk), max_abs(c.ref.dv)});
  auto expected = [&](const std::vector<double>& x, const std::vector<double>& r) {
    double e = 0;
    for (size_t i = 0; i < r.size(); ++i) e = std::max(e, std::abs(x[i] - r[i]));
    return 2 * e + 0x1.0p-7 * max_abs(r) + absolute;
  };
  EXPECT_DOUBLE_EQ(g.dq.tolerance, expected(s.dq, c.ref.dq));
  EXPECT_DOUBLE_EQ(g.dk.tolerance, expected(s.dk, c.ref.dk));
  EXPECT_DOUBLE_EQ(g.dv.tolerance, expected(s.dv, c.ref.dv));
  EXPECT_EQ(grad_floor_factor(DType::bf16), 0x1.0p-7);
  EXPECT_EQ(grad_floor_factor(DType::f16), 0x1.0p-10);
  EXPECT_EQ(grad_floor_factor(DType::f32), 0x1.0p-17);
}

// A NaN/Inf in the standard's own gradient (counted apart from its max_abs) leaves
// that tensor without a tolerance: NaN, which no kernel passes, as in the forward
// rule; the other tensors keep theirs.
TEST(GradMetrics, BrokenStandardGivesThatTensorNoTolerance) {
  GradComparison standard;
  standard.errors.dq = TensorErrors{1e-3, 0, 0, 0, 0};
  standard.errors.dk = TensorErrors{1e-3, 0, 0, 2, 0};  // two non-finite values
  standard.errors.dv = TensorErrors{1e-3, 0, 0, 0, 0};
  standard.dq_ref_max_abs = standard.dk_ref_max_abs = standard.dv_ref_max_abs = 1.0;
  GradErrors g;
  set_grad_tolerances(g, DType::bf16, standard);
  EXPECT_DOUBLE_EQ(g.dq.tolerance, 2e-3 + 0x1.0p-7 + 0x1.0p-17);
  EXPECT_TRUE(std::isnan(g.dk.tolerance));
  EXPECT_DOUBLE_EQ(g.dv.tolerance, g.dq.tolerance);
  g.dq.max_abs = g.dk.max_abs = g.dv.max_abs = 0.0;  // an exact kernel
  EXPECT_TRUE(g.dq.passes());
  EXPECT_FALSE(g.dk.passes());
  EXPECT_FALSE(g.passes());
}

double rel_max_error(const std::vector<double>& x, const std::vector<double>& r) {
  double e = 0, m = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    e = std::max(e, std::abs(x[i] - r[i]));
    m = std::max(m, std::abs(r[i]));
  }
  return e / m;
}

// The standard's error grows as the dtype narrows; in fp32 it is float32
// rounding only.
TEST(StandardBackward, ErrorFollowsTheDtype) {
  double prev[3] = {0, 0, 0};
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    const BackwardCase c = backward_case(shape(2, 2, 1, 97, 130, 32, true, dt), 8);
    const SampledGrads s = standard_backward_in_precision(c.p, c.in, c.ref.rows, c.ref.cols, 2);
    const double e[3] = {rel_max_error(s.dq, c.ref.dq), rel_max_error(s.dk, c.ref.dk),
                         rel_max_error(s.dv, c.ref.dv)};
    for (int t = 0; t < 3; ++t) {
      if (dt == DType::f32) EXPECT_LT(e[t], 1e-5) << t;
      else EXPECT_GT(e[t], 4 * prev[t]) << to_string(dt) << " tensor " << t;
      EXPECT_LT(e[t], 0.1) << to_string(dt) << " tensor " << t;
      prev[t] = e[t];
    }
  }
}

// The softmax statistics computed once and passed in give the very numbers a
// call that computes them gives.
TEST(StandardBackward, StatisticsComputedOnceServeEveryCall) {
  const BackwardCase c = backward_case(shape(2, 4, 2, 130, 90, 16, true, DType::bf16), 5, Distribution::normal,
                                       {0, 1, 63, 64, 100, 129}, {0, 7, 89});
  const StandardStats st = standard_softmax_stats(c.p, c.in, 2);
  const SampledGrads a = standard_backward_in_precision(c.p, c.in, c.ref.rows, c.ref.cols, 2);
  const SampledGrads b = standard_backward_in_precision(c.p, c.in, c.ref.rows, c.ref.cols, 2, &st);
  EXPECT_EQ(a.dq, b.dq);
  EXPECT_EQ(a.dk, b.dk);
  EXPECT_EQ(a.dv, b.dv);
  // They are used: another problem's statistics give other gradients, wrong sizes throw.
  const BackwardCase d = backward_case(c.p, 6);
  const StandardStats wrong = standard_softmax_stats(d.p, d.in, 2);
  EXPECT_NE(standard_backward_in_precision(c.p, c.in, c.ref.rows, c.ref.cols, 2, &wrong).dv,
            standard_backward_in_precision(c.p, c.in, c.ref.rows, c.ref.cols, 2, &st).dv);
  StandardStats short_stats = st;
  short_stats.m.pop_back();
  EXPECT_THROW(standard_backward_in_precision(c.p, c.in, c.ref.rows, c.ref.cols, 2, &short_stats),
               KernelError);
}

// The standard backward, as a kernel's output, passes its own rule; a perfect
// result rounded to the dtype passes; slightly wrong gradients fail.
TEST(GradTolerance, StandardPassesAndSlightlyWrongGradientsFail) {
  for (DType dt : {DType::f32, DType::f16, DType::bf16}) {
    const BackwardCase c = backward_case(shape(1, 4, 2, 120, 150, 32, true, dt), 12);
    auto judge = [&](const HostGrads& x) {
      GradErrors g = compare_grads(c.p, x, c.ref);
      set_grad_tolerances(g, c.p, c.in, c.ref, 2);
      return g;
    };
    const SampledGrads s = standard_backward_in_precision(c.p, c.in, c.ref.rows, c.ref.cols, 2);
    const GradErrors std_errors = judge(test::as_host_grads(s));
    EXPECT_TRUE(std_errors.passes()) << to_string(dt);
    EXPECT_GT(std_errors.dq.max_abs, 0.0);

    HostGrads exact = test::as_host_grads(c.ref);
    for (auto* t : {&exact.dq, &exact.dk, &exact.dv}) round_to_dtype(*t, dt);
    EXPECT_TRUE(judge(exact).passes()) << to_string(dt);

    // D dropped from dS = P o (dP - D): the CPU FA2 backward with that fault planted.
    const GradErrors no_d = judge(test::run_bwd(c, Tile{32, 32, 0, 0}, 2, CpuBwdFault::no_d_term).grads);
    EXPECT_FALSE(no_d.dq.passes()) << to_string(dt);
    EXPECT_FALSE(no_d.dk.passes()) << to_string(dt);
    EXPECT_TRUE(no_d.dv.passes()) << to_string(dt);  // dV does not involve D

    HostGrads one_nan = exact;
    one_nan.dv[5] = NAN;
    EXPECT_FALSE(judge(one_nan).passes());
  }
}

// How small a scale error the rule sees: 1% in fp32 (even 0.01%) and fp16
// fails; in bf16 the standard's own error is near 1%, so 1% passes and 10% fails.
TEST(GradTolerance, ScaleErrorsThatFail) {
  struct Case {
    DType dtype;
    double factor;
    bool fails;
  };
  for (const Case& k : {Case{DType::f32, 1.0001, true}, Case{DType::f16, 1.01, true},
                        Case{DType::bf16, 1.01, false}, Case{DType::bf16, 1.1, true}}) {
    const BackwardCase c = backward_case(shape(1, 4, 2, 120, 150, 32, true, k.dtype), 12);
    HostGrads g = test::as_host_grads(c.ref);
    for (float& x : g.dk) x = float(x * k.factor);
    GradErrors e = compare_grads(c.p, g, c.ref);
    set_grad_tolerances(e, c.p, c.in, c.ref, 2);
    EXPECT_TRUE(e.dq.passes() && e.dv.passes()) << to_string(k.dtype);
    EXPECT_EQ(e.dk.passes(), !k.fails) << to_string(k.dtype) << " dK x " << k.factor << ": "
                                       << e.dk.max_abs << " vs tolerance " << e.dk.tolerance;
  }
}

// Sampled tolerances come from the same rows and columns the reference holds.
TEST(GradTolerance, SampledRowsAndColumns) {
  const AttnProblem p = shape(1, 2, 2, 300, 280, 16, true, DType::bf16);
  const BackwardCase c = backward_case(p, 4, Distribution::normal, {0, 1, 63, 64, 299}, {0, 5, 279});
  HostGrads exact;
  {
    const BackwardCase full = backward_case(p, 4);
    exact = test::as_host_grads(full.ref);
  }
  GradErrors g = compare_grads(p, exact, c.ref);
  set_grad_tolerances(g, p, c.in, c.ref, 2);
  EXPECT_EQ(g.rows_checked, 5);
  EXPECT_EQ(g.cols_checked, 3);
  EXPECT_TRUE(g.sampled);
  EXPECT_TRUE(g.passes());
  EXPECT_GT(g.dq.tolerance, 0.0);
  EXPECT_GT(g.dk.tolerance, 0.0);
}

}  // namespace
}  // namespace fa
