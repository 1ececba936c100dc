// Gradient error metrics and the tolerance rule.
#include "check/grad_metrics.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "check/error_accumulator.h"
#include "check/standard_bwd.h"
#include "core/errors.h"

namespace fa {

namespace {

struct Compared {
  TensorErrors errors;
  double ref_max_abs = 0;  // max |r| over the compared elements: the floor's scale
};

// x holds [batch, x_seqlen, heads, d]; r holds [batch, idx.size(), heads, d],
// its row k being x's row idx[k] (x_full) or row k (x in r's own layout).
template <typename X>
Compared compare_tensor(const std::vector<X>& x, int64_t x_seqlen, bool x_full,
                        const std::vector<double>& r, const std::vector<int64_t>& idx, int64_t batch,
                        int64_t heads, int64_t d) {
  Compared c;
  ErrorAccumulator acc;
  const int64_t n = int64_t(idx.size());
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t k = 0; k < n; ++k) {
      const X* xs = x.data() + ((b * x_seqlen + (x_full ? idx[k] : k)) * heads) * d;
      const double* rs = r.data() + ((b * n + k) * heads) * d;
      for (int64_t e = 0; e < heads * d; ++e) {
        c.ref_max_abs = nan_max(c.ref_max_abs, std::abs(rs[e]));
        acc.add(double(xs[e]), rs[e]);
      }
    }
  c.errors = TensorErrors{acc.max_abs, acc.max_rel, acc.rel_l2(), acc.nonfinite, 0.0};
  return c;
}

}  // namespace

GradErrors compare_grads(const AttnProblem& p, const HostGrads& out, const SampledGrads& ref) {
  const size_t q_elems = size_t(p.batch) * p.seqlen_q * p.heads * p.head_dim;
  const size_t kv_elems = size_t(p.batch) * p.seqlen_k * p.heads_kv * p.head_dim;
  if (out.dq.size() != q_elems || out.dk.size() != kv_elems || out.dv.size() != kv_elems)
    throw KernelError(fmt::format("compare_grads: dQ, dK, dV have {}, {}, {} elements; {} wants {}, {}, {}",
                                  out.dq.size(), out.dk.size(), out.dv.size(), p.describe(), q_elems,
                                  kv_elems, kv_elems));
  GradErrors g;
  g.dq = compare_tensor(out.dq, p.seqlen_q, true, ref.dq, ref.rows, p.batch, p.heads, p.head_dim).errors;
  g.dk = compare_tensor(out.dk, p.seqlen_k, true, ref.dk, ref.cols, p.batch, p.heads_kv, p.head_dim).errors;
  g.dv = compare_tensor(out.dv, p.seqlen_k, true, ref.dv, ref.cols, p.batch, p.heads_kv, p.head_dim).errors;
  g.rows_checked = int64_t(ref.rows.size());
  g.cols_checked = int64_t(ref.cols.size());
  g.sampled = g.rows_checked < p.seqlen_q || g.cols_checked < p.seqlen_k;
  return g;
}

double grad_floor_factor(DType d) {
  switch (d) {
    case DType::f32: return 0x1.0p-17;
    case DType::f16: return 0x1.0p-10;
    case DType::bf16: return 0x1.0p-7;
    case DType::e4m3: return 0x1.0p-3;  // no e4m3 backward exists (the sweep refuses it); e4m3's own epsilon
  }
  return 0;
}

void set_grad_tolerances(GradErrors& g, const AttnProblem& p, const HostInputs& in, const SampledGrads& ref,
                         int threads, const StandardStats* stats) {
  const SampledGrads std_grads = standard_backward_in_precision(p, in, ref.rows, ref.cols, threads, stats);
  const int64_t nr = int64_t(ref.rows.size()), nc = int64_t(ref.cols.size());
  const Compared s[3] = {
      compare_tensor(std_grads.dq, nr, false, ref.dq, ref.rows, p.batch, p.heads, p.head_dim),
      compare_tensor(std_grads.dk, nc, false, ref.dk, ref.cols, p.batch, p.heads_kv, p.head_dim),
      compare_tensor(std_grads.dv, nc, false, ref.dv, ref.cols, p.batch, p.heads_kv, p.head_dim)};
  GradComparison standard;
  standard.errors.dq = s[0].errors;
  standard.errors.dk = s[1].errors;
  standard.errors.dv = s[2].errors;
  standard.dq_ref_max_abs = s[0].ref_max_abs;
  standard.dk_ref_max_abs = s[1].ref_max_abs;
  standard.dv_ref_max_abs = s[2].ref_max_abs;
  set_grad_tolerances(g, p.dtype, standard);
}

void set_grad_tolerances(GradErrors& g, DType dtype, const GradComparison& standard) {
  const double factor = grad_floor_factor(dtype);
  const TensorErrors* e[3] = {&standard.errors.dq, &standard.errors.dk, &standard.errors.dv};
  const double ref_max[3] = {standard.dq_ref_max_abs, standard.dk_ref_max_abs, standard.dv_ref_max_abs};
  // A tensor whose exact gradient is 0 (one key per row: P = 1, dS = 0) has no scale
  // of its own; a kernel that forms dP - D in float32 in another order than the
  // standard leaves ~1e-6 there. The absolute part scales with the largest gradient
  // of the three at float32's drift over 16384 terms (the fp32 factor).
  const double scale = std::max({ref_max[0], ref_max[1], ref_max[2]});
  const double absolute = grad_floor_factor(DType::f32) * scale;
  // A non-finite value among the standard's own gradients (counted apart from its
  // max_abs) makes that tensor's tolerance NaN, which no kernel passes: a broken
  // standard proves nothing, as in the forward rule (tolerances_for, metrics.h).
  TensorErrors* t[3] = {&g.dq, &g.dk, &g.dv};
  for (int i = 0; i < 3; ++i)
    t[i]->tolerance = e[i]->nonfinite > 0 ? NAN : 2.0 * e[i]->max_abs + factor * ref_max[i] + absolute;
}

}  // namespace fa
