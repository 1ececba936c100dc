// The runner's per-kernel outcomes, with planted variants on the CPU executor:
// ok, fail (not timed), unsupported, oom, error, and a sticky error that stops
// the sweep with the earlier rows delivered.
#include <gtest/gtest.h>

#include <cmath>

#include "core/errors.h"
#include "measure/cpu_executor.h"
#include "registry/cpu_kernels.h"
#include "sweep/runner.h"

namespace fa {
namespace {

KernelVariant planted(const std::string& name, std::function<void(const AttnParams&, RunContext&)> run) {
  KernelVariant v = make_cpu_variant(Family::fa2, Tile{32, 32, 0, 0});
  v.name = name;
  v.default_tile = false;
  if (run) v.run = std::move(run);
  return v;
}

PlannedKernel planned(const KernelVariant& v) {
  return PlannedKernel{&v, v.name, v.family, v.backend, v.tile, ""};
}

SweepConfig quick_config() {
  SweepConfig c;
  c.timing.warmup = 0;
  c.timing.min_samples = 3;
  c.timing.max_samples = 5;
  c.timing.max_seconds = 0.05;
  return c;
}

AttnProblem small_problem() {
  AttnProblem p;
  p.batch = 1;
  p.heads = 2;
  p.heads_kv = 1;
  p.seqlen_q = 40;
  p.seqlen_k = 72;
  p.head_dim = 16;
  p.causal = true;
  p.dtype = DType::f32;
  return p;
}

TEST(Runner, EachOutcomeIsARow) {
  KernelVariant good = planted("good", nullptr);
  KernelVariant zeros = planted("zeros", [](const AttnParams& a, RunContext&) {
    float* o = static_cast<float*>(a.o);
    for (int64_t i = 0; i < int64_t(a.batch) * a.seqlen_q * a.heads * a.head_dim; ++i) o[i] = 0.f;
    for (int64_t i = 0; i < int64_t(a.batch) * a.heads * a.seqlen_q; ++i) a.lse[i] = 0.f;
  });
  KernelVariant refused = planted("refused", nullptr);
  refused.refuse = [](const AttnProblem&) { return std::string("seqlen_k 72 not a multiple of 64"); };
  KernelVariant hungry = planted("hungry", nullptr);
  hungry.workspace_bytes = [](const AttnProblem&) { return int64_t(1) << 40; };
  KernelVariant broken = planted("broken", [](const AttnParams&, RunContext&) { throw KernelError("launch failed"); });
  KernelVariant sticky = planted("sticky", [](const AttnParams&, RunContext&) {
    throw KernelError("illegal address", /*sticky=*/true);
  });
  KernelVariant after = planted("after", nullptr);

  SweepPlan plan;
  PlannedPoint pp{small_problem(), {}};
  for (const KernelVariant* v : {&good, &zeros, &refused, &hungry, &broken, &sticky, &after})
    pp.kernels.push_back(planned(*v));
  plan.points.push_back(pp);

  auto ex = make_cpu_executor(1, int64_t(1) << 30);
  std::vector<Result> rows;
  RunnerHooks hooks;
  hooks.on_row = [&](const Result& r) { rows.push_back(r); };
  SweepOutcome out = run_sweep(plan, quick_config(), 99, *ex, 0, {}, hooks);

  EXPECT_EQ(out.end, SweepEnd::sticky_error);
  EXPECT_NE(out.why.find("sticky"), std::string::npos) << out.why;
  ASSERT_EQ(rows.size(), 6u);  // "after" never ran
  EXPECT_EQ(rows[0].status, Status::ok) << rows[0].reason;
  EXPECT_TRUE(rows[0].timing.has_value());
  EXPECT_GT(rows[0].tflops, 0);
  EXPECT_EQ(rows[0].seed, 99u);

  EXPECT_EQ(rows[1].status, Status::fail);
  EXPECT_FALSE(rows[1].timing.has_value());  // a failing kernel is not timed
  EXPECT_NE(rows[1].reason.find("not timed"), std::string::npos) << rows[1].reason;
  EXPECT_NE(rows[1].reason.find("seed 99"), std::string::npos) << rows[1].reason;
  ASSERT_TRUE(rows[1].errors.has_value());
  EXPECT_GT(rows[1].errors->o_max_abs, rows[1].tolerances->tolerance);

  EXPECT_EQ(rows[2].status, Status::unsupported);
  EXPECT_EQ(rows[2].reason, "seqlen_k 72 not a multiple of 64");
  EXPECT_EQ(rows[3].status, Status::oom);
  EXPECT_NE(rows[3].reason.find("--cpu-mem-limit"), std::string::npos) << rows[3].reason;
  EXPECT_EQ(rows[4].status, Status::error);
  EXPECT_NE(rows[4].reason.find("launch failed"), std::string::npos);
  EXPECT_EQ(rows[5].status, Status::error);
}

TEST(Runner, UnwrittenOutputsShowAsNonFinite) {
  // A kernel that writes nothing leaves the NaN poison: it must fail.
  KernelVariant lazy = planted("lazy", [](const AttnParams&, RunContext&) {});
  SweepPlan plan;
  plan.points.push_back(PlannedPoint{small_problem(), {planned(lazy)}});
  auto ex = make_cpu_executor(1, int64_t(1) << 30);
  std::vector<Result> rows;
  RunnerHooks hooks;
  hooks.on_row = [&](const Result& r) { rows.push_back(r); };
  run_sweep(plan, quick_config(), 1, *ex, 0, {}, hooks);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].status, Status::fail);
  ASSERT_TRUE(rows[0].errors.has_value());
  EXPECT_GT(rows[0].errors->nonfinite, 0);
}

TEST(Runner, PeakExtraIsEachKernelsOwnWorkspace) {
  // standard attention needs S and P; fa2 after it on the same point needs nothing.
  KernelVariant standard = make_cpu_variant(Family::standard, Tile{});
  KernelVariant fa2 = make_cpu_variant(Family::fa2, Tile{32, 32, 0, 0});
  SweepPlan plan;
  AttnProblem p = small_problem();
  plan.points.push_back(PlannedPoint{p, {planned(standard), planned(fa2)}});
  auto ex = make_cpu_executor(1, int64_t(1) << 30);
  std::vector<Result> rows;
  RunnerHooks hooks;
  hooks.on_row = [&](const Result& r) { rows.push_back(r); };
  run_sweep(plan, quick_config(), 1, *ex, 0, {}, hooks);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].peak_extra_bytes, standard.workspace_bytes(p));
  EXPECT_GT(rows[0].peak_extra_bytes, 0);
  EXPECT_EQ(rows[1].peak_extra_bytes, fa2.workspace_bytes ? fa2.workspace_bytes(p) : 0);
}

TEST(Runner, DoneKeysAreSkippedAndStopIsHonoured) {
  KernelVariant a = planted("a", nullptr), b = planted("b", nullptr);
  SweepPlan plan;
  AttnProblem p1 = small_problem(), p2 = small_problem();
  p2.seqlen_q = 17;
  plan.points.push_back(PlannedPoint{p1, {planned(a), planned(b)}});
  plan.points.push_back(PlannedPoint{p2, {planned(a), planned(b)}});
  Result done_row;
  done_row.problem = p1;
  done_row.kernel = "a";
  auto ex = make_cpu_executor(1, int64_t(1) << 30);
  std::vector<Result> rows;
  RunnerHooks hooks;
  hooks.on_row = [&](const Result& r) { rows.push_back(r); };
  hooks.stop_requested = [&] { return rows.size() >= 2; };
  SweepOutcome out = run_sweep(plan, quick_config(), 1, *ex, 0, {done_row.key()}, hooks);
  EXPECT_EQ(out.skipped, 1u);
  EXPECT_EQ(out.end, SweepEnd::interrupted);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].kernel, "b");
  EXPECT_EQ(rows[1].kernel, "a");
  EXPECT_EQ(rows[1].problem.seqlen_q, 17);
}

}  // namespace
}  // namespace fa
