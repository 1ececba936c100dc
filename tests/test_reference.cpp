// The float64 reference against a naive triple loop written independently here.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "check/inputs.h"
#include "reference/reference.h"

namespace fa {
namespace {

// The definition, nothing clever: for each row, every key j <= last, two passes.
ReferenceOutputs naive(const AttnProblem& p, const HostInputs& in) {
  ReferenceOutputs r;
  const int64_t nq = p.seqlen_q, nk = p.seqlen_k, d = p.head_dim;
  for (int64_t i = 0; i < nq; ++i) r.rows.push_back(i);
  r.o.assign(size_t(p.batch) * nq * p.heads * d, 0.0);
  r.lse.assign(size_t(p.batch) * p.heads * nq, 0.0);
  for (int b = 0; b < p.batch; ++b)
    for (int h = 0; h < p.heads; ++h) {
      const int hk = h / (p.heads / p.heads_kv);
      for (int64_t i = 0; i < nq; ++i) {
        const int64_t last = p.causal ? i + nk - nq : nk - 1;
        std::vector<double> s;
        for (int64_t j = 0; j <= last && j < nk; ++j) {
          double acc = 0;
          for (int64_t e = 0; e < d; ++e)
            acc += double(in.q[((b * nq + i) * p.heads + h) * d + e]) *
                   double(in.k[((b * nk + j) * p.heads_kv + hk) * d + e]);
          s.push_back(acc * p.scale_f64());
        }
        double& lse = r.lse[(size_t(b) * p.heads + h) * nq + i];
        if (s.empty()) {
          lse = -std::numeric_limits<double>::infinity();
          continue;
        }
        double m = s[0];
        for (double x : s) m = std::max(m, x);
        double l = 0;
        for (double x : s) l += std::exp(x - m);
        lse = m + std::log(l);
        for (int64_t e = 0; e < d; ++e) {
          double acc = 0;
          for (size_t j = 0; j < s.size(); ++j)
            acc += std::exp(s[j] - m) / l * double(in.v[((b * nk + j) * p.heads_kv + hk) * d + e]);
          r.o[((size_t(b) * nq + i) * p.heads + h) * d + e] = acc;
        }
      }
    }
  return r;
}

AttnProblem shape(int b, int h, int hkv, int nq, int nk, int d, bool causal) {
  AttnProblem p;
  p.batch = b, p.heads = h, p.heads_kv = hkv, p.seqlen_q = nq, p.seqlen_k = nk, p.head_dim = d;
  p.causal = causal;
  p.dtype = DType::f32;
  return p;
}

void expect_same(const ReferenceOutputs& a, const ReferenceOutputs& b, const char* what) {
  ASSERT_EQ(a.rows, b.rows) << what;
  ASSERT_EQ(a.o.size(), b.o.size()) << what;
  for (size_t i = 0; i < a.o.size(); ++i) ASSERT_NEAR(a.o[i], b.o[i], 1e-12) << what << " O[" << i << "]";
  ASSERT_EQ(a.lse.size(), b.lse.size()) << what;
  for (size_t i = 0; i < a.lse.size(); ++i) {
    if (std::isinf(b.lse[i])) {
      ASSERT_TRUE(std::isinf(a.lse[i]) && a.lse[i] < 0) << what << " LSE[" << i << "]";
    } else {
      ASSERT_NEAR(a.lse[i], b.lse[i], 1e-12) << what << " LSE[" << i << "]";
    }
  }
}

TEST(Reference, MatchesNaiveOnTinyShapes) {
  const AttnProblem cases[] = {
      shape(1, 1, 1, 5, 7, 8, false),   shape(2, 2, 2, 9, 9, 16, true),
      shape(1, 2, 2, 7, 3, 8, true),    // seqlen_q > seqlen_k: rows 0..3 see no key
      shape(1, 1, 1, 3, 11, 8, true),   // seqlen_q < seqlen_k: row 0 sees 9 keys
      shape(2, 4, 2, 6, 10, 8, true),   // GQA
      shape(1, 4, 1, 5, 6, 4, false),   // MQA
      shape(1, 1, 1, 1, 1, 8, true),    // seqlen 1
      shape(1, 2, 1, 130, 70, 16, true),  // more than one row chunk, ragged
  };
  for (const auto& p : cases) {
    const HostInputs in = generate_inputs(p, Distribution::normal, 42);
    expect_same(reference_forward(p, in, {}, 2), naive(p, in), p.describe().c_str());
  }
}

TEST(Reference, RowsThatSeeNoKeyAreZeroAndMinusInf) {
  const AttnProblem p = shape(1, 1, 1, 6, 2, 4, true);  // rows 0..3 see nothing
  const ReferenceOutputs r = reference_forward(p, generate_inputs(p, Distribution::normal, 1));
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(std::isinf(r.lse[i]) && r.lse[i] < 0) << "row " << i;
    for (int e = 0; e < 4; ++e) EXPECT_EQ(r.o[i * 4 + e], 0.0);
  }
  EXPECT_TRUE(std::isfinite(r.lse[4]));
  // Row 4 sees exactly one key: O equals that V row, LSE equals the one score.
  const HostInputs in = generate_inputs(p, Distribution::normal, 1);
  for (int e = 0; e < 4; ++e) EXPECT_NEAR(r.o[4 * 4 + e], in.v[e], 1e-7);
}

TEST(Reference, ChosenRowsEqualTheSameRowsOfTheFullReference) {
  for (bool causal : {false, true}) {
    const AttnProblem p = shape(2, 4, 2, 150, 120, 16, causal);
    const HostInputs in = generate_inputs(p, Distribution::normal, 7);
    const ReferenceOutputs full = reference_forward(p, in, {}, 2);
    const std::vector<int64_t> rows = {149, 0, 29, 30, 31, 64, 100, 0};  // unsorted, duplicate
    const ReferenceOutputs part = reference_forward(p, in, rows, 2);
    ASSERT_EQ(part.rows, (std::vector<int64_t>{0, 29, 30, 31, 64, 100, 149}));
    const int64_t n = int64_t(part.rows.size()), d = p.head_dim;
    for (int b = 0; b < p.batch; ++b)
      for (int64_t ri = 0; ri < n; ++ri)
        for (int h = 0; h < p.heads; ++h) {
          const int64_t r = part.rows[ri];
          const double a = part.lse[(b * p.heads + h) * n + ri];
          const double f = full.lse[(b * p.heads + h) * p.seqlen_q + r];
          if (std::isinf(f)) EXPECT_EQ(a, f) << "row " << r;
          else EXPECT_NEAR(a, f, 1e-12) << "row " << r;
          for (int64_t e = 0; e < d; ++e)
            ASSERT_NEAR(part.o[((b * n + ri) * p.heads + h) * d + e],
                        full.o[((b * p.seqlen_q + r) * p.heads + h) * d + e], 1e-13);
        }
  }
}

TEST(Reference, RejectsRowsOutsideTheProblem) {
  const AttnProblem p = shape(1, 1, 1, 4, 4, 4, false);
  const HostInputs in = generate_inputs(p, Distribution::normal, 1);
  EXPECT_THROW(reference_forward(p, in, {4}), std::exception);
  HostInputs short_q = in;
  short_q.q.pop_back();
  EXPECT_THROW(reference_forward(p, short_q), std::exception);
}

}  // namespace
}  // namespace fa
