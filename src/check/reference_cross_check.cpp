#include "check/reference_cross_check.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "check/error_accumulator.h"
#include "reference/attention_grad.h"
#include "reference/reference.h"

namespace fa {

std::string ReferenceCrossCheck::describe() const {
  return fmt::format("{} rows: O max rel {:.2g}, LSE max rel {:.2g} (bound {:.2g}), {} LSE mismatches", rows, o_max_rel,
                     lse_max_rel, agreement, lse_mismatches);
}

namespace {
// The largest row norm of a [rows][d] tensor, and its largest magnitude.
double max_row_norm(const std::vector<float>& x, int d) {
  double best = 0;
  for (size_t r = 0; r + size_t(d) <= x.size(); r += size_t(d)) {
    double s = 0;
    for (int i = 0; i < d; ++i) s += double(x[r + size_t(i)]) * x[r + size_t(i)];
    best = std::max(best, s);
  }
  return std::sqrt(best);
}
double max_abs(const std::vector<float>& x) {
  double best = 0;
  for (float v : x) best = std::max(best, double(std::fabs(v)));
  return best;
}
}  // namespace

double gradient_agreement(const AttnProblem& p, const HostInputs& in) {
  constexpr double u = 0x1.0p-53;
  const int d = p.head_dim;
  const double group = double(p.heads) / double(std::max(1, p.heads_kv));
  const double score = double(p.scale()) * max_row_norm(in.q, d) * max_row_norm(in.k, d);
  const double dp = max_row_norm(in.dout, d) * max_row_norm(in.v, d);
  const double operand = std::max({1.0, max_abs(in.q), max_abs(in.k), max_abs(in.dout)});
  return 4.0 * (double(d) + double(p.seqlen_k) + group * double(p.seqlen_q)) * u * (1.0 + score) * (1.0 + dp) *
         operand;
}

double reference_agreement(const AttnProblem& p, const HostInputs& in) {
  constexpr double u = 0x1.0p-53;
  const int d = p.head_dim;
  const double score = double(p.scale()) * max_row_norm(in.q, d) * max_row_norm(in.k, d);
  return 4.0 * double(d + p.seqlen_k) * u * (1.0 + score) * std::max(1.0, max_abs(in.v));
}

ReferenceCrossCheck cross_check_reference(const AttnProblem& p, const HostInputs& in, const DeviceInputs& device,
                                          const std::vector<int64_t>& rows, const GpuReferenceOptions& gpu) {
  const ReferenceOutputs g = reference_forward_gpu(p, device, rows, gpu);
  const ReferenceOutputs e = reference_forward(p, in, rows);
  ReferenceCrossCheck c;
  c.rows = int64_t(e.rows.size());
  c.agreement = reference_agreement(p, in);
  ErrorAccumulator o, lse;
  for (size_t i = 0; i < e.o.size(); ++i) o.add(g.o[i], e.o[i]);
  for (size_t i = 0; i < e.lse.size(); ++i) {
    const bool e_blind = std::isinf(e.lse[i]) && e.lse[i] < 0, g_blind = std::isinf(g.lse[i]) && g.lse[i] < 0;
    if (e_blind != g_blind)
      ++c.lse_mismatches;
    else if (!e_blind)
      lse.add(g.lse[i], e.lse[i]);
  }
  c.o_max_rel = o.max_rel;
  c.lse_max_rel = lse.max_rel;
  c.lse_mismatches += o.nonfinite + lse.nonfinite;
  return c;
}

std::string GradCrossCheck::describe() const {
  return fmt::format("{} rows, {} columns: dQ max rel {:.2g}, dK {:.2g}, dV {:.2g} (bound {:.2g}), {} non-finite", rows,
                     cols, dq_max_rel, dk_max_rel, dv_max_rel, agreement, nonfinite);
}

GradCrossCheck cross_check_gradients(const AttnProblem& p, const HostInputs& in, const DeviceInputs& device,
                                     const std::vector<int64_t>& rows, const std::vector<int64_t>& cols,
                                     const GpuReferenceOptions& gpu) {
  const SampledGrads g = reference_backward_gpu(p, device, rows, cols, gpu);
  const SampledGrads e = reference_backward(p, in, rows, cols);
  GradCrossCheck c;
  c.rows = int64_t(e.rows.size());
  c.cols = int64_t(e.cols.size());
  c.agreement = gradient_agreement(p, in);
  ErrorAccumulator dq, dk, dv;
  for (size_t i = 0; i < e.dq.size(); ++i) dq.add(g.dq[i], e.dq[i]);
  for (size_t i = 0; i < e.dk.size(); ++i) {
    dk.add(g.dk[i], e.dk[i]);
    dv.add(g.dv[i], e.dv[i]);
  }
  c.dq_max_rel = dq.max_rel;
  c.dk_max_rel = dk.max_rel;
  c.dv_max_rel = dv.max_rel;
  c.nonfinite = dq.nonfinite + dk.nonfinite + dv.nonfinite;
  return c;
}

}  // namespace fa
