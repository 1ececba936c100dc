// A backward point judged on the device (check/validate.h with the device
// inputs): every row and column by default in a sweep, sampled when
// max_check_rows is given; a backward that passes there, and the same one
// failing once it writes over the LSE its forward partner left. Skipped
// without a CUDA device, or when the build has no cuda backward.
#include <gtest/gtest.h>

#include <climits>
#include <string>
#include <vector>

#if defined(FA_BENCH_HAVE_CUDA)
#include <cuda_runtime.h>
#endif

#include "check/inputs.h"
#include "check/validate.h"
#include "gpu_reference_cases.h"
#include "measure/executor.h"
#include "registry/kernel.h"
#include "sweep/config.h"
#include "sweep/plan.h"
#include "sweep/runner.h"

namespace fa {
namespace {

using gpu_reference_cases::shape;

// A cuda backward (and its partner) that supports p, or null.
const KernelVariant* cuda_backward_for(const AttnProblem& p) {
  for (const KernelVariant& v : Registry::instance().all()) {
    if (v.backend != Backend::cuda || v.pass != Pass::bwd || !v.supports(p).ok) continue;
    const KernelVariant* partner = Registry::instance().find(v.fwd_partner);
    if (partner && partner->supports(p).ok) return &v;
  }
  return nullptr;
}

TEST(GpuBackwardCheck, ABackwardThatWritesItsInputsFailsOnTheDevice) {
  SKIP_WITHOUT_CUDA(ex);
#if defined(FA_BENCH_HAVE_CUDA)
  const AttnProblem p = shape(1, 4, 2, 256, 256, 64, true);
  const KernelVariant* v = cuda_backward_for(p);
  if (!v) GTEST_SKIP() << "no cuda backward supports " << p.describe() << " in this build";
  const KernelVariant* partner = Registry::instance().find(v->fwd_partner);
  HostInputs in = generate_inputs(p, Distribution::normal, 3);
  in.dout = generate_dout(p, Distribution::normal, 3);
  ex->prepare(p, in);
  const AttnParams a = ex->params();
  const DeviceInputs dev{a.q, a.k, a.v, a.dout};
  const PointCheck check = check_point(p, {}, INT64_MAX, 0, 3, 0, 0, &dev);
  ASSERT_TRUE(check.device_grads && check.device_ref);

  GradTolerances tol;
  const BackwardCheck bwd{partner, nullptr, &tol, 0, &dev};
  const Validation clean = validate_variant(*v, p, *ex, check, 3, {}, &bwd);
  EXPECT_TRUE(clean.passed) << v->name << ": " << clean.why;
  ASSERT_TRUE(clean.grad_errors.has_value());
  EXPECT_EQ(clean.grad_errors->rows_checked, p.seqlen_q);
  EXPECT_EQ(clean.grad_errors->cols_checked, p.seqlen_k);
  EXPECT_FALSE(clean.grad_errors->sampled);

  KernelVariant scribbler = *v;
  scribbler.name = "scribbler";
  scribbler.run = [run = v->run](const AttnParams& params, RunContext& ctx) {
    run(params, ctx);
    // Right gradients, but an input changed under the caller (after the backward finished).
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const float changed = 123.f;
    ASSERT_EQ(cudaMemcpy(params.lse + 5, &changed, sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  };
  const Validation wrote = validate_variant(scribbler, p, *ex, check, 3, {}, &bwd);
  EXPECT_FALSE(wrote.passed);
  EXPECT_NE(wrote.why.find("changed O or LSE"), std::string::npos) << wrote.why;
#endif
}

// Every row and column past max_check_rows' default by default; sampled, and
// marked so, when max_check_rows is given.
TEST(GpuBackwardCheck, ASweepChecksEveryRowAndColumnUnlessAskedToSample) {
  SKIP_WITHOUT_CUDA(ex);
  const AttnProblem p = shape(1, 2, 2, 2100, 2100, 64, true);
  const KernelVariant* v = cuda_backward_for(p);
  if (!v) GTEST_SKIP() << "no cuda backward supports " << p.describe() << " in this build";
  SweepConfig c;
  c.validate_only = true;
  SweepPlan plan;
  plan.points.push_back(PlannedPoint{p, {plan_row(*v, Pass::bwd, Registry::instance())}});
  for (const bool sample : {false, true}) {
    if (sample) {
      c.max_check_rows = 512;
      c.origin["max_check_rows"] = "--max-check-rows";
    }
    std::vector<Result> rows;
    RunnerHooks hooks;
    hooks.on_row = [&](const Result& r) { rows.push_back(r); };
    const SweepOutcome out = run_sweep(plan, c, 7, *ex, 0, {}, hooks);
    EXPECT_EQ(out.end, SweepEnd::complete) << out.why;
    ASSERT_EQ(rows.size(), 1u);
    const Result& r = rows[0];
    EXPECT_EQ(r.status, Status::ok) << r.kernel << ": " << r.reason;
    ASSERT_TRUE(r.grad_errors.has_value()) << r.reason;
    ASSERT_TRUE(r.errors.has_value());
    EXPECT_EQ(r.grad_errors->rows_checked, sample ? 512 : p.seqlen_q);
    EXPECT_EQ(r.grad_errors->cols_checked, sample ? 512 : p.seqlen_k);
    EXPECT_EQ(r.grad_errors->sampled, sample);
    EXPECT_EQ(r.errors->rows_checked, sample ? 512 : p.seqlen_q);  // the partner's O and LSE, on the same rows
    EXPECT_EQ(r.errors->sampled, sample);
    EXPECT_GT(r.grad_errors->dq.tolerance, 0.0);
  }
}

}  // namespace
}  // namespace fa
