#include "check/validate.h"

#include <fmt/format.h>

#include "check/metrics.h"
#include "check/sampling.h"

namespace fa {

PointCheck check_point(const AttnProblem& p, const HostInputs& inputs, int64_t max_check_rows, int block_m,
                       uint64_t seed, int threads) {
  std::vector<int64_t> rows;  // empty: every row
  if (p.seqlen_q > max_check_rows) rows = sample_rows(p, max_check_rows, block_m > 0 ? block_m : 128, seed);
  PointCheck c;
  c.ref = reference_forward(p, inputs, rows, threads);
  c.tolerances = tolerances_for(p, inputs, c.ref);
  return c;
}

Validation validate_variant(const KernelVariant& v, const AttnProblem& p, Executor& ex, const PointCheck& check,
                            uint64_t seed, const std::function<void(const HostOutputs&)>& outputs) {
  Validation val;
  const AttnParams params = ex.params();
  ex.poison_outputs();
  ex.run_once([&](RunContext& ctx) {
    v.run(params, ctx);
    val.counted = ctx;
  });
  val.peak_extra_bytes = ex.peak_extra_bytes();
  const HostOutputs out = ex.fetch_outputs();
  if (outputs) outputs(out);
  val.errors = compare_outputs(p, out, check.ref);
  val.passed = passes(val.errors, check.tolerances);
  if (!val.passed) {
    const ErrorMetrics& m = val.errors;
    val.why = fmt::format("O max abs error {:.3g} vs tolerance {:.3g}, LSE max abs error {:.3g} vs {:.3g}, {} "
                          "non-finite values (seed {})",
                          m.o_max_abs, check.tolerances.tolerance, m.lse_max_abs, check.tolerances.lse_tolerance,
                          m.nonfinite, seed);
  }
  return val;
}

}  // namespace fa
