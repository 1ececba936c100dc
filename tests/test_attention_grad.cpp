// The float64 reference gradients against central finite differences of the
// float64 forward, sampled mode against full mode, and the column sampler.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "check/half.h"
#include "check/inputs.h"
#include "check/sampling.h"
#include "core/errors.h"
#include "cpu_shapes.h"
#include "reference/attention_grad.h"
#include "reference/reference.h"

namespace fa {
namespace {

// Inputs on the bf16 grid: x +- h is exact in float (see finite_differences).
AttnProblem shape(int b, int h, int hkv, int nq, int nk, int d, bool causal) {
  return test::shape(b, h, hkv, nq, nk, d, causal, DType::bf16);
}

HostInputs inputs(const AttnProblem& p, uint64_t seed, Distribution dist = Distribution::normal) {
  HostInputs in = generate_inputs(p, dist, seed);
  in.dout = generate_dout(p, dist, seed);
  return in;
}

double max_abs(const std::vector<double>& x) {
  double m = 0;
  for (double v : x) m = std::max(m, std::abs(v));
  return m;
}

// Central differences of L = sum(dO * O), O from reference_forward, with the
// error bound each comes with. For one input x and step h:
//   D(h) = (L(x+h) - L(x-h)) / 2h = L' + (h^2/6) L''' + O(h^4) + r(h),
// r(h) the loss's rounding error over the step, |r(h)| <= delta / h. Then
// D(2h) - D(h) = (h^2/2) L''' + r(2h) - r(h), so the truncation error of D(h)
// is at most |D(2h) - D(h)| / 3 + delta / (2h) (Richardson), and
//   |D(h) - L'| <= |D(2h) - D(h)| / 3 + 1.5 delta / h,
// doubled for the O(h^4) term and the reference's own rounding. delta bounds
// the float64 rounding of L: every O element is a softmax-weighted mean of V
// (error below kappa * eps * max|V| with kappa = 4 (seqlen_k + head_dim + 16),
// covering the GEMM sums, exp and the normalisation), times |dO|, summed.
// h = 2^-12 balances h^2 against delta / h for these tiny shapes. The inputs
// are bf16 values (8 significant bits), so x +- h and x +- 2h are exact floats.
struct FdGrads {
  std::vector<double> dq, dk, dv;                // the differences
  std::vector<double> dq_tol, dk_tol, dv_tol;    // their error bounds
};

double loss(const AttnProblem& p, const HostInputs& in) {
  const ReferenceOutputs r = reference_forward(p, in, {}, 1);  // o: [batch, seqlen_q, heads, d]
  double l = 0;
  for (size_t i = 0; i < r.o.size(); ++i) l += double(in.dout[i]) * r.o[i];
  return l;
}

void differences(const AttnProblem& p, HostInputs& in, std::vector<float> HostInputs::*tensor,
                 double delta, std::vector<double>& fd, std::vector<double>& tol) {
  constexpr double h = 0x1.0p-12;
  std::vector<float>& x = in.*tensor;
  fd.resize(x.size());
  tol.resize(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const float x0 = x[i];
    auto at = [&](double step) {
      x[i] = float(double(x0) + step);
      EXPECT_EQ(double(x[i]), double(x0) + step) << "step not exact at " << x0;
      const double l = loss(p, in);
      x[i] = x0;
      return l;
    };
    const double d1 = (at(h) - at(-h)) / (2 * h);
    const double d2 = (at(2 * h) - at(-2 * h)) / (4 * h);
    fd[i] = d1;
    tol[i] = 2.0 * (std::abs(d2 - d1) / 3.0 + 1.5 * delta / h);
  }
}

FdGrads finite_differences(const AttnProblem& p, HostInputs in) {
  double v_max = 0, dout_abs = 0;
  for (float v : in.v) v_max = std::max(v_max, double(std::abs(v)));
  for (float g : in.dout) dout_abs += std::abs(g);
  const double kappa = 4.0 * (p.seqlen_k + p.head_dim + 16);
  const double delta = kappa * std::numeric_limits<double>::epsilon() * v_max * dout_abs;
  FdGrads f;
  differences(p, in, &HostInputs::q, delta, f.dq, f.dq_tol);
  differences(p, in, &HostInputs::k, delta, f.dk, f.dk_tol);
  differences(p, in, &HostInputs::v, delta, f.dv, f.dv_tol);
  return f;
}

// max over elements of |g - fd| / tol: the reference agrees within the bound iff <= 1.
double worst(const std::vector<double>& g, const std::vector<double>& fd, const std::vector<double>& tol) {
  EXPECT_EQ(g.size(), fd.size());
  double w = 0;
  for (size_t i = 0; i < g.size() && i < fd.size(); ++i) w = std::max(w, std::abs(g[i] - fd[i]) / tol[i]);
  return w;
}

const AttnProblem kTinyShapes[] = {
    shape(1, 2, 2, 5, 6, 4, false),
    shape(1, 2, 2, 5, 6, 4, true),   // seqlen_q < seqlen_k: every row sees at least 2 keys
    shape(1, 2, 2, 7, 4, 4, true),   // seqlen_q > seqlen_k: rows 0..2 see no key
    shape(2, 4, 2, 4, 5, 4, true),   // GQA, two batches
    shape(1, 3, 1, 5, 3, 4, false),  // MQA, seqlen_q > seqlen_k
    shape(1, 2, 1, 1, 1, 4, false),  // seqlen 1
    shape(1, 2, 1, 1, 6, 4, true),   // one query row that sees every key
    shape(1, 1, 1, 6, 1, 4, true),   // only the last row sees the single key
};

TEST(AttentionGrad, MatchesFiniteDifferences) {
  for (const AttnProblem& p : kTinyShapes) {
    const HostInputs in = inputs(p, 7);
    const SampledGrads g = reference_backward(p, in, {}, {}, 2);
    const FdGrads fd = finite_differences(p, in);
    EXPECT_LE(worst(g.dq, fd.dq, fd.dq_tol), 1.0) << p.describe();
    EXPECT_LE(worst(g.dk, fd.dk, fd.dk_tol), 1.0) << p.describe();
    EXPECT_LE(worst(g.dv, fd.dv, fd.dv_tol), 1.0) << p.describe();
    // The bound is tight enough to matter: far below the gradients themselves.
    for (const auto* tol : {&fd.dq_tol, &fd.dk_tol, &fd.dv_tol})
      EXPECT_LT(max_abs(*tol), 1e-6) << p.describe();
  }
}

TEST(AttentionGrad, RowThatSeesNoKeyHasZeroDq) {
  const AttnProblem p = shape(1, 2, 1, 7, 4, 4, true);  // rows 0..2 see nothing
  const SampledGrads g = reference_backward(p, inputs(p, 3), {}, {}, 1);
  for (int64_t r = 0; r < 3; ++r)
    for (int h = 0; h < 2; ++h)
      for (int e = 0; e < 4; ++e) EXPECT_EQ(g.dq[(r * 2 + h) * 4 + e], 0.0);
  EXPECT_GT(max_abs(g.dq), 0.0);
}

// The finite differences would catch a reference that forgot the GQA sum or
// the causal mask: both wrong gradients miss them by far more than the bound.
TEST(AttentionGrad, FiniteDifferencesCatchAMissingGqaSumOrMask) {
  const AttnProblem p = shape(1, 4, 2, 6, 6, 4, true);
  const HostInputs in = inputs(p, 11);
  const FdGrads fd = finite_differences(p, in);
  ASSERT_LE(worst(reference_backward(p, in, {}, {}, 1).dk, fd.dk, fd.dk_tol), 1.0);

  // dK from the first query head of each group only: the problem with one query
  // head per KV head, fed that head's Q and dO.
  AttnProblem first = p;
  first.heads = p.heads_kv;
  HostInputs sub = in;
  sub.q.clear(), sub.dout.clear();
  const int group = p.heads / p.heads_kv, d = p.head_dim;
  for (int r = 0; r < p.seqlen_q; ++r)
    for (int hk = 0; hk < p.heads_kv; ++hk)
      for (int e = 0; e < d; ++e) {
        const size_t at = (size_t(r) * p.heads + hk * group) * d + e;
        sub.q.push_back(in.q[at]);
        sub.dout.push_back(in.dout[at]);
      }
  EXPECT_GT(worst(reference_backward(first, sub, {}, {}, 1).dk, fd.dk, fd.dk_tol), 1e3);

  AttnProblem unmasked = p;
  unmasked.causal = false;
  const SampledGrads wrong = reference_backward(unmasked, in, {}, {}, 1);
  EXPECT_GT(worst(wrong.dq, fd.dq, fd.dq_tol), 1e3);
  EXPECT_GT(worst(wrong.dk, fd.dk, fd.dk_tol), 1e3);
  EXPECT_GT(worst(wrong.dv, fd.dv, fd.dv_tol), 1e3);
}

// Sampled rows and columns give the full computation's values there (up to
// the summation order of differently shaped GEMMs).
TEST(AttentionGrad, SampledEqualsFull) {
  for (const AttnProblem& p : {shape(2, 4, 2, 300, 260, 32, true), shape(1, 2, 2, 130, 400, 16, true),
                               shape(1, 3, 1, 257, 129, 16, false)}) {
    const HostInputs in = inputs(p, 5);
    const std::vector<int64_t> rows = sample_rows(p, 60, 64, 9), cols = sample_cols(p, 60, 64, 9);
    ASSERT_LT(rows.size(), size_t(p.seqlen_q));
    ASSERT_LT(cols.size(), size_t(p.seqlen_k));
    const SampledGrads full = reference_backward(p, in, {}, {}, 2);
    const SampledGrads part = reference_backward(p, in, rows, cols, 2);
    EXPECT_EQ(part.rows, rows);
    EXPECT_EQ(part.cols, cols);
    const int64_t hd = int64_t(p.heads) * p.head_dim, hkd = int64_t(p.heads_kv) * p.head_dim;
    const double tol_q = 1e-12 * max_abs(full.dq), tol_k = 1e-12 * max_abs(full.dk),
                 tol_v = 1e-12 * max_abs(full.dv);
    for (int64_t b = 0; b < p.batch; ++b) {
      for (size_t k = 0; k < rows.size(); ++k)
        for (int64_t e = 0; e < hd; ++e)
          ASSERT_NEAR(part.dq[(b * int64_t(rows.size()) + int64_t(k)) * hd + e],
                      full.dq[(b * p.seqlen_q + rows[k]) * hd + e], tol_q)
              << p.describe() << " row " << rows[k];
      for (size_t k = 0; k < cols.size(); ++k)
        for (int64_t e = 0; e < hkd; ++e) {
          const size_t sp = size_t((b * int64_t(cols.size()) + int64_t(k)) * hkd + e);
          const size_t fl = size_t((b * p.seqlen_k + cols[k]) * hkd + e);
          ASSERT_NEAR(part.dk[sp], full.dk[fl], tol_k) << p.describe() << " col " << cols[k];
          ASSERT_NEAR(part.dv[sp], full.dv[fl], tol_v) << p.describe() << " col " << cols[k];
        }
    }
  }
}

TEST(AttentionGrad, ThreadCountDoesNotChangeTheResult) {
  const AttnProblem p = shape(1, 4, 2, 200, 150, 16, true);
  const HostInputs in = inputs(p, 2);
  const SampledGrads one = reference_backward(p, in, {}, {}, 1), three = reference_backward(p, in, {}, {}, 3);
  EXPECT_EQ(one.dq, three.dq);
  EXPECT_EQ(one.dk, three.dk);
  EXPECT_EQ(one.dv, three.dv);
}

TEST(AttentionGrad, ForwardByProductMatchesTheForwardReference) {
  const AttnProblem p = shape(2, 4, 1, 90, 70, 16, true);
  const HostInputs in = inputs(p, 4);
  HostOutputs fwd;
  reference_backward(p, in, {0, 89}, {0, 69}, 2, &fwd);
  const ReferenceOutputs ref = reference_forward(p, in, {}, 2);
  ASSERT_EQ(fwd.o.size(), ref.o.size());
  ASSERT_EQ(fwd.lse.size(), ref.lse.size());
  for (size_t i = 0; i < ref.o.size(); ++i) EXPECT_NEAR(fwd.o[i], ref.o[i], 1e-6 * (1 + std::abs(ref.o[i])));
  for (size_t i = 0; i < ref.lse.size(); ++i) {
    if (std::isinf(ref.lse[i])) EXPECT_TRUE(std::isinf(fwd.lse[i]) && fwd.lse[i] < 0);
    else EXPECT_NEAR(fwd.lse[i], ref.lse[i], 1e-6 * (1 + std::abs(ref.lse[i])));
  }
}

// In float64 on the checked rows the by-product is reference_forward's own
// result up to float64 rounding (the GEMMs group the rows differently).
TEST(AttentionGrad, ForwardOnTheCheckedRowsIsTheForwardReference) {
  const AttnProblem p = shape(2, 4, 1, 130, 70, 16, true);  // rows 0..59 see no key
  const HostInputs in = inputs(p, 6);
  const std::vector<int64_t> rows = {0, 59, 60, 61, 64, 100, 129};
  ReferenceOutputs fwd;
  reference_backward(p, in, rows, {0, 69}, 2, nullptr, &fwd);
  const ReferenceOutputs ref = reference_forward(p, in, rows, 2);
  EXPECT_EQ(fwd.rows, ref.rows);
  ASSERT_EQ(fwd.o.size(), ref.o.size());
  ASSERT_EQ(fwd.lse.size(), ref.lse.size());
  for (size_t i = 0; i < ref.o.size(); ++i) EXPECT_NEAR(fwd.o[i], ref.o[i], 1e-13 * (1 + std::abs(ref.o[i])));
  for (size_t i = 0; i < ref.lse.size(); ++i) {
    if (std::isinf(ref.lse[i])) EXPECT_TRUE(std::isinf(fwd.lse[i]) && fwd.lse[i] < 0) << i;
    else EXPECT_NEAR(fwd.lse[i], ref.lse[i], 1e-13 * (1 + std::abs(ref.lse[i])));
  }
  ReferenceOutputs every;
  reference_backward(p, in, {}, {}, 2, nullptr, &every);
  EXPECT_EQ(every.rows.size(), size_t(p.seqlen_q));
}

TEST(AttentionGrad, RejectsBadInput) {
  const AttnProblem p = shape(1, 2, 1, 8, 8, 8, false);
  HostInputs in = inputs(p, 1);
  EXPECT_THROW(reference_backward(p, in, {8}, {}), UsageError);
  EXPECT_THROW(reference_backward(p, in, {}, {-1}), UsageError);
  in.dout.pop_back();
  EXPECT_THROW(reference_backward(p, in), UsageError);
}

TEST(SampleCols, AllColumnsWhenFew) {
  const AttnProblem p = shape(1, 1, 1, 10, 100, 8, false);
  const std::vector<int64_t> cols = sample_cols(p, 100, 64, 1);
  ASSERT_EQ(cols.size(), 100u);
  EXPECT_EQ(cols.front(), 0);
  EXPECT_EQ(cols.back(), 99);
}

TEST(SampleCols, EdgesAndCausalColumns) {
  // Row 0 sees keys 0 .. 3000 - 1000 = 2000: the mask cuts from column 2001 on.
  const AttnProblem p = shape(1, 1, 1, 1000, 3000, 8, true);
  const std::vector<int64_t> cols = sample_cols(p, 200, 64, 42);
  EXPECT_TRUE(std::is_sorted(cols.begin(), cols.end()));
  EXPECT_EQ(std::adjacent_find(cols.begin(), cols.end()), cols.end());
  EXPECT_LE(cols.size(), 230u);
  EXPECT_GE(cols.size(), 100u);
  auto has = [&](int64_t c) { return std::binary_search(cols.begin(), cols.end(), c); };
  for (int64_t c : {0, 63, 2944, 2999, 2000, 2001, 1984, 2047}) EXPECT_TRUE(has(c)) << c;
  // every column brings its 64-wide block's first and last column
  for (int64_t c : cols) {
    EXPECT_TRUE(has(c / 64 * 64)) << c;
    EXPECT_TRUE(has(std::min<int64_t>(3000, c / 64 * 64 + 64) - 1)) << c;
  }
  EXPECT_EQ(sample_cols(p, 200, 64, 42), cols);
  EXPECT_NE(sample_cols(p, 200, 64, 43), cols);
  // Non-causal: no mask columns; the same seed picks other places than sample_rows.
  AttnProblem square = shape(1, 1, 1, 3000, 3000, 8, false);
  EXPECT_NE(sample_cols(square, 200, 64, 42), sample_rows(square, 200, 64, 42));
}

TEST(GenerateDout, SeededShapedLikeOAndLeavesTheForwardInputsAlone) {
  const AttnProblem p = shape(2, 4, 2, 33, 17, 16, true);
  const std::vector<float> a = generate_dout(p, Distribution::normal, 5);
  EXPECT_EQ(a.size(), size_t(2 * 33 * 4 * 16));
  EXPECT_EQ(generate_dout(p, Distribution::normal, 5), a);
  EXPECT_NE(generate_dout(p, Distribution::normal, 6), a);
  const HostInputs in = generate_inputs(p, Distribution::normal, 5);
  EXPECT_NE(std::vector<float>(in.q.begin(), in.q.end()), a);  // its own stream, not Q's
  EXPECT_TRUE(in.dout.empty());
  for (float x : a) {  // finite and rounded to the problem's dtype, like Q, K, V
    EXPECT_TRUE(std::isfinite(x));
    EXPECT_EQ(round_bf16(x), x);
  }
  for (float x : generate_dout(p, Distribution::uniform, 5)) {
    EXPECT_GE(x, -1.f);
    EXPECT_LE(x, 1.f);
  }
}

}  // namespace
}  // namespace fa
