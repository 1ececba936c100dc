#include "cli/fa_check/reference_check.h"

#include <algorithm>
#include <fmt/format.h>
#include <optional>

#include "check/error_accumulator.h"
#include "check/inputs.h"
#include "check/reference_cross_check.h"
#include "check/sampling.h"
#include "core/stop.h"

namespace fa::check {

namespace {
constexpr int64_t kRows = 64;        // sampled rows per run: block edges, blind rows, random rows
constexpr int kSampleBlock = 128;
constexpr int64_t kRowsPerBlock = 16;  // a small workspace: several row blocks per head
}  // namespace

ReferenceCheckOutcome check_gpu_reference(const std::vector<CheckCase>& cases, uint64_t seed, Executor& ex,
                                          GpuReferenceFault fault, const char* label) {
  ReferenceCheckOutcome out;
  double o_worst = 0, lse_worst = 0, grad_worst = 0;
  for (const CheckCase& c : cases) {
    const AttnProblem& p = c.problem;
    if (p.dtype != DType::bf16 && p.dtype != DType::f16) continue;  // the device holds 16-bit tensors
    const bool backward = std::any_of(c.passes.begin(), c.passes.end(), [](Pass s) { return s != Pass::fwd; });
    for (Distribution d : c.distributions) {
      throw_if_stopped();
      HostInputs in = generate_inputs(p, d, seed);
      if (backward) in.dout = generate_dout(p, d, seed);
      ex.prepare(p, in);
      const AttnParams a = ex.params();
      const DeviceInputs device{a.q, a.k, a.v, a.dout};
      GpuReferenceOptions opt;
      opt.fault = fault;
      opt.workspace_bytes = kRowsPerBlock * int64_t(sizeof(double)) * std::max(1, p.seqlen_k);
      const std::vector<int64_t> rows = sample_rows(p, kRows, kSampleBlock, seed);
      const ReferenceCrossCheck r = cross_check_reference(p, in, device, rows, opt);
      std::optional<GradCrossCheck> g;
      if (backward) g = cross_check_gradients(p, in, device, rows, sample_cols(p, kRows, kSampleBlock, seed), opt);
      ex.release();
      ++out.runs;
      o_worst = nan_max(o_worst, r.o_max_rel);
      lse_worst = nan_max(lse_worst, r.lse_max_rel);
      if (!r.passes()) {
        ++out.failed;
        if (fault == GpuReferenceFault::none)
          fmt::print("  {} disagrees with Eigen on '{}' ({}): {}\n", label, p.describe(), to_string(d), r.describe());
      }
      if (!g) continue;
      ++out.grad_runs;
      grad_worst = nan_max(grad_worst, std::max({g->dq_max_rel, g->dk_max_rel, g->dv_max_rel}));
      if (!g->passes()) {
        ++out.grad_failed;
        if (fault == GpuReferenceFault::none)
          fmt::print("  {} gradients disagree with Eigen on '{}' ({}): {}\n", label, p.describe(), to_string(d),
                     g->describe());
      }
    }
  }
  fmt::print("{} vs Eigen (float64) on sampled rows: {} of {} cases x distributions outside their rounding bound "
             "(worst O {:.2g}, LSE {:.2g} relative)\n",
             label, out.failed, out.runs, o_worst, lse_worst);
  fmt::print("{} gradients vs Eigen (float64) on sampled rows and columns: {} of {} backward cases x distributions "
             "outside their rounding bound (worst of dQ, dK, dV {:.2g} relative)\n",
             label, out.grad_failed, out.grad_runs, grad_worst);
  return out;
}

}  // namespace fa::check
