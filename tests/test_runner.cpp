// The runner's per-kernel outcomes, with planted variants on the CPU executor:
// ok, fail (not timed), unsupported, oom, error, and a sticky error that stops
// the sweep with the earlier rows delivered; backward rows after their forward
// partner, judged on both; and the same rows spread over two executors (--devices).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <set>
#include <thread>

#include "core/errors.h"
#include "measure/cpu_executor.h"
#include "registry/cpu_kernels.h"
#include "measure/traffic_bwd.h"
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

PlannedKernel planned(const KernelVariant& bwd, Pass pass, const KernelVariant& partner) {
  return PlannedKernel{&bwd, bwd.name, bwd.family, bwd.backend, bwd.tile, "", pass, &partner};
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


std::vector<Result> run_rows(const AttnProblem& p, std::vector<PlannedKernel> kernels, SweepConfig c = quick_config()) {
  SweepPlan plan;
  plan.points.push_back(PlannedPoint{p, std::move(kernels)});
  auto ex = make_cpu_executor(1, int64_t(1) << 30);
  std::vector<Result> rows;
  RunnerHooks hooks;
  hooks.on_row = [&](const Result& r) { rows.push_back(r); };
  run_sweep(plan, c, 5, *ex, 0, {}, hooks);
  return rows;
}

TEST(RunnerBackward, BwdAndFwdBwdRowsAreValidatedThenTimed) {
  const KernelVariant fwd = make_cpu_variant(Family::fa2, Tile{32, 32, 0, 0});
  const KernelVariant bwd = make_cpu_variant(Family::fa2, Tile{32, 32, 0, 0}, Pass::bwd);
  const AttnProblem p = small_problem();
  const std::vector<Result> rows =
      run_rows(p, {planned(fwd), planned(bwd, Pass::bwd, fwd), planned(bwd, Pass::fwd_bwd, fwd)});
  ASSERT_EQ(rows.size(), 3u);
  for (const Result& r : rows) {
    ASSERT_EQ(r.status, Status::ok) << to_string(r.pass) << ": " << r.reason;
    ASSERT_TRUE(r.timing.has_value());
    ASSERT_TRUE(r.traffic_measured.has_value());
    // The CPU kernels count what they move: the model of what the row ran.
    EXPECT_EQ(r.traffic_measured->read_bytes, r.traffic_model.read_bytes) << to_string(r.pass);
    EXPECT_EQ(r.traffic_measured->write_bytes, r.traffic_model.write_bytes) << to_string(r.pass);
    // FLOPs by the FlashAttention convention: forward x 1, 2.5, 3.5.
    EXPECT_NEAR(r.tflops * r.timing->median_ms * 1e-3 * 1e12, p.flops() * flops_factor(r.pass), p.flops() * 1e-9);
  }
  const Result &f = rows[0], &b = rows[1], &fb = rows[2];
  EXPECT_EQ(f.pass, Pass::fwd);
  EXPECT_EQ(f.fwd_kernel, "");
  EXPECT_FALSE(f.grad_errors.has_value());
  EXPECT_EQ(b.pass, Pass::bwd);
  EXPECT_EQ(fb.pass, Pass::fwd_bwd);
  for (const Result* r : {&b, &fb}) {
    EXPECT_EQ(r->kernel, "cpu.fa2.bwd.32x32");
    EXPECT_EQ(r->fwd_kernel, "cpu.fa2.32x32");
    ASSERT_TRUE(r->grad_errors.has_value());
    EXPECT_TRUE(r->grad_errors->passes());
    EXPECT_EQ(r->grad_errors->rows_checked, p.seqlen_q);
    EXPECT_EQ(r->grad_errors->cols_checked, p.seqlen_k);
    // The O/LSE columns are the partner's check: the forward row's numbers.
    EXPECT_EQ(r->errors->o_max_abs, f.errors->o_max_abs);
    EXPECT_EQ(r->errors->lse_max_abs, f.errors->lse_max_abs);
    EXPECT_EQ(r->peak_extra_bytes, bwd.workspace_bytes(p));  // the partner needs none
  }
  EXPECT_EQ(b.traffic_model.read_bytes, traffic_model_bwd(Family::fa2, p, bwd.tile)->read_bytes);
  EXPECT_EQ(fb.traffic_model.read_bytes, b.traffic_model.read_bytes + f.traffic_model.read_bytes);
  EXPECT_EQ(fb.traffic_model.write_bytes, b.traffic_model.write_bytes + f.traffic_model.write_bytes);
  // One reference and one set of tolerances for the point: the two rows' gradient
  // verdicts are the same numbers.
  EXPECT_EQ(b.grad_errors->dq.max_abs, fb.grad_errors->dq.max_abs);
  EXPECT_EQ(b.grad_errors->dk.tolerance, fb.grad_errors->dk.tolerance);
  EXPECT_EQ(b.grad_errors->dv.rel_l2, fb.grad_errors->dv.rel_l2);
}

TEST(RunnerBackward, AFailingPartnerFailsTheRowUntimed) {
  const KernelVariant bad_fwd = make_faulty_cpu_variant(CpuFault::causal_off_by_one, Tile{32, 32, 0, 0});
  const KernelVariant bwd = make_cpu_variant(Family::fa2, Tile{32, 32, 0, 0}, Pass::bwd);
  const std::vector<Result> rows = run_rows(small_problem(), {planned(bwd, Pass::fwd_bwd, bad_fwd)});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].status, Status::fail);
  EXPECT_NE(rows[0].reason.find("forward partner cpu.fa2.32x32+causal_off_by_one failed"), std::string::npos)
      << rows[0].reason;
  EXPECT_FALSE(rows[0].timing.has_value());
  EXPECT_FALSE(rows[0].grad_errors.has_value());  // the backward never ran
  ASSERT_TRUE(rows[0].errors.has_value());
  EXPECT_GT(rows[0].errors->o_max_abs, rows[0].tolerances->tolerance);
}

TEST(RunnerBackward, WrongOrUnwrittenGradientsFailUntimed) {
  const KernelVariant fwd = make_cpu_variant(Family::fa2, Tile{32, 32, 0, 0});
  const KernelVariant no_d = make_faulty_cpu_variant(CpuBwdFault::no_d_term, Tile{32, 32, 0, 0});
  KernelVariant lazy = make_cpu_variant(Family::fa2, Tile{32, 32, 0, 0}, Pass::bwd);
  lazy.name = "lazy";
  lazy.run = [](const AttnParams&, RunContext&) {};
  const std::vector<Result> rows =
      run_rows(small_problem(), {planned(no_d, Pass::bwd, fwd), planned(lazy, Pass::bwd, fwd)});
  ASSERT_EQ(rows.size(), 2u);
  for (const Result& r : rows) {
    EXPECT_EQ(r.status, Status::fail) << r.kernel;
    EXPECT_FALSE(r.timing.has_value()) << r.kernel;
    EXPECT_NE(r.reason.find("not timed"), std::string::npos) << r.reason;
    ASSERT_TRUE(r.grad_errors.has_value()) << r.kernel;
    EXPECT_FALSE(r.grad_errors->passes()) << r.kernel;
  }
  EXPECT_GT(rows[0].grad_errors->dq.max_abs, rows[0].grad_errors->dq.tolerance);
  EXPECT_NE(rows[0].reason.find("dQ max abs error"), std::string::npos) << rows[0].reason;
  // Left as poisoned: every element of the three tensors is NaN.
  const AttnProblem p = small_problem();
  EXPECT_EQ(rows[1].grad_errors->dq.nonfinite, int64_t(p.batch) * p.seqlen_q * p.heads * p.head_dim);
  EXPECT_EQ(rows[1].grad_errors->dv.nonfinite, int64_t(p.batch) * p.seqlen_k * p.heads_kv * p.head_dim);
}

TEST(RunnerBackward, ABackwardThatWritesItsInputsFails) {
  const KernelVariant fwd = make_cpu_variant(Family::fa2, Tile{32, 32, 0, 0});
  KernelVariant scribbler = make_cpu_variant(Family::fa2, Tile{32, 32, 0, 0}, Pass::bwd);
  scribbler.name = "scribbler";
  const auto clean = scribbler.run;
  scribbler.run = [clean](const AttnParams& a, RunContext& ctx) {
    clean(a, ctx);
    a.lse[0] += 1.f;  // right gradients, but an input changed under the caller
  };
  const std::vector<Result> rows = run_rows(small_problem(), {planned(scribbler, Pass::bwd, fwd)});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].status, Status::fail);
  EXPECT_NE(rows[0].reason.find("changed O or LSE"), std::string::npos) << rows[0].reason;
  EXPECT_FALSE(rows[0].timing.has_value());
}

TEST(RunnerBackward, APartnerThatRefusesThePointMakesItUnsupported) {
  KernelVariant fwd = make_cpu_variant(Family::fa2, Tile{32, 32, 0, 0});
  fwd.refuse = [](const AttnProblem&) { return std::string("head_dim 16 not built"); };
  const KernelVariant bwd = make_cpu_variant(Family::fa2, Tile{32, 32, 0, 0}, Pass::bwd);
  const std::vector<Result> rows = run_rows(small_problem(), {planned(bwd, Pass::bwd, fwd)});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].status, Status::unsupported);
  EXPECT_EQ(rows[0].reason, "forward partner cpu.fa2.32x32: head_dim 16 not built");
}

TEST(RunnerBackward, ValidateOnlyChecksGradientsWithoutTiming) {
  const KernelVariant fwd = make_cpu_variant(Family::fa2, Tile{16, 16, 0, 0});
  const KernelVariant bwd = make_cpu_variant(Family::fa2, Tile{16, 16, 0, 0}, Pass::bwd);
  SweepConfig c = quick_config();
  c.validate_only = true;
  c.max_check_rows = 24;  // seqlen_q 40 and seqlen_k 72: rows and columns sampled
  const std::vector<Result> rows = run_rows(small_problem(), {planned(bwd, Pass::bwd, fwd)}, c);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].status, Status::ok) << rows[0].reason;
  EXPECT_FALSE(rows[0].timing.has_value());
  ASSERT_TRUE(rows[0].grad_errors.has_value());
  EXPECT_TRUE(rows[0].grad_errors->sampled);
  EXPECT_TRUE(rows[0].errors->sampled);
  EXPECT_LT(rows[0].grad_errors->rows_checked, 40);
  EXPECT_LT(rows[0].grad_errors->cols_checked, 72);
  EXPECT_EQ(rows[0].grad_errors->rows_checked, rows[0].errors->rows_checked);
}

}  // namespace
}  // namespace fa

// run_sweep_on_devices, with CPU executors standing in for devices: the same
// rows as one executor gives, in plan order, each with the device that ran it.
namespace fa {
namespace {

SweepPlan plan_of(const std::vector<int>& seqlens, const std::vector<const KernelVariant*>& kernels) {
  SweepPlan plan;
  for (int s : seqlens) {
    AttnProblem p = small_problem();
    p.seqlen_q = s;
    PlannedPoint pp{p, {}};
    for (const KernelVariant* k : kernels) pp.kernels.push_back(planned(*k));
    plan.points.push_back(pp);
  }
  return plan;
}

// A kernel slow enough (a few ms) that two workers both get points.
KernelVariant slow(const std::string& name) {
  KernelVariant base = make_cpu_variant(Family::fa2, Tile{32, 32, 0, 0});
  auto run = base.run;
  return planted(name, [run](const AttnParams& a, RunContext& ctx) {
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
    run(a, ctx);
  });
}

struct TwoDevices {
  std::unique_ptr<Executor> e0 = make_cpu_executor(1, int64_t(1) << 30), e1 = make_cpu_executor(1, int64_t(1) << 30);
  std::vector<DeviceWorker> workers{{e0.get(), {0, "first", "uuid-0"}}, {e1.get(), {1, "second", ""}}};
};

TEST(RunnerOnDevices, TheSameRowsInPlanOrderEachWithItsDevice) {
  KernelVariant a = slow("a"), b = slow("b");
  const SweepPlan plan = plan_of({16, 40, 24, 33, 48, 17, 29, 8}, {&a, &b});
  auto one = make_cpu_executor(1, int64_t(1) << 30);
  std::vector<Result> single, multi;
  RunnerHooks hooks;
  hooks.on_row = [&](const Result& r) { single.push_back(r); };
  ASSERT_EQ(run_sweep(plan, quick_config(), 3, *one, 0, {}, hooks).end, SweepEnd::complete);

  TwoDevices devs;
  std::vector<std::string> progress;
  hooks.on_row = [&](const Result& r) { multi.push_back(r); };
  hooks.on_progress = [&](size_t, size_t, const std::string& what, const WallTimeSplit&) { progress.push_back(what); };
  const SweepOutcome out = run_sweep_on_devices(plan, quick_config(), 3, devs.workers, 0, {}, hooks);
  EXPECT_EQ(out.end, SweepEnd::complete);
  EXPECT_EQ(out.new_rows, plan.rows());
  ASSERT_EQ(multi.size(), single.size());
  std::set<int> used;
  for (size_t i = 0; i < multi.size(); ++i) {
    EXPECT_EQ(multi[i].key(), single[i].key()) << i;
    EXPECT_EQ(multi[i].status, Status::ok) << i;
    ASSERT_TRUE(multi[i].errors && single[i].errors);
    EXPECT_EQ(multi[i].errors->o_max_abs, single[i].errors->o_max_abs) << i;  // same inputs, same kernel
    EXPECT_FALSE(single[i].device);
    ASSERT_TRUE(multi[i].device);
    used.insert(multi[i].device->index);
    // A point's rows all ran on one device.
    if (i % 2 == 1) EXPECT_EQ(multi[i].device->index, multi[i - 1].device->index) << i;
    EXPECT_EQ(multi[i].device->name, multi[i].device->index == 0 ? "first" : "second");
  }
  EXPECT_EQ(used, (std::set<int>{0, 1}));
  ASSERT_FALSE(progress.empty());
  for (const std::string& p : progress) EXPECT_EQ(p.rfind("device ", 0), 0u) << p;
}

TEST(RunnerOnDevices, AStickyErrorOnOneDeviceKeepsEveryFinishedRow) {
  KernelVariant a = slow("a");
  KernelVariant sticky = planted("sticky", [](const AttnParams& p, RunContext&) {
    if (p.seqlen_q == 33) throw KernelError("illegal address", /*sticky=*/true);
  });
  const SweepPlan plan = plan_of({16, 40, 24, 33, 48, 17, 29, 8}, {&a, &sticky});
  TwoDevices devs;
  std::vector<Result> rows;
  RunnerHooks hooks;
  hooks.on_row = [&](const Result& r) { rows.push_back(r); };
  const SweepOutcome out = run_sweep_on_devices(plan, quick_config(), 3, devs.workers, 0, {}, hooks);
  EXPECT_EQ(out.end, SweepEnd::sticky_error);
  EXPECT_NE(out.why.find("illegal address"), std::string::npos) << out.why;
  // Points 0-2 are whole, point 3 has its error row; nothing is out of order.
  ASSERT_GE(rows.size(), 8u);
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(rows[i].problem.seqlen_q, (std::vector<int>{16, 16, 40, 40, 24, 24, 33, 33})[i]) << i;
  EXPECT_EQ(rows[7].kernel, "sticky");
  EXPECT_EQ(rows[7].status, Status::error);
  for (size_t i = 1; i < rows.size(); ++i) {
    const auto at = [&](const Result& r) {
      for (size_t k = 0; k < plan.points.size(); ++k)
        if (plan.points[k].problem.seqlen_q == r.problem.seqlen_q) return k;
      return plan.points.size();
    };
    EXPECT_LE(at(rows[i - 1]), at(rows[i])) << i;
  }
  EXPECT_LT(rows.size(), plan.rows());  // the dealing stopped
}

TEST(RunnerOnDevices, DoneRowsAreSkippedAndAStopEndsEveryWorker) {
  KernelVariant a = slow("a"), b = slow("b");
  const SweepPlan plan = plan_of({16, 40, 24, 33, 48, 17, 29, 8}, {&a, &b});
  Result done_row;
  done_row.problem = plan.points[0].problem;
  done_row.kernel = "a";
  TwoDevices devs;
  std::vector<Result> rows;
  RunnerHooks hooks;
  hooks.on_row = [&](const Result& r) { rows.push_back(r); };
  std::atomic<int> seen{0};
  hooks.stop_requested = [&] { return seen.load() >= 3; };
  hooks.on_progress = [&](size_t done, size_t, const std::string&, const WallTimeSplit&) { seen = int(done); };
  const SweepOutcome out = run_sweep_on_devices(plan, quick_config(), 3, devs.workers, 0, {done_row.key()}, hooks);
  EXPECT_EQ(out.end, SweepEnd::interrupted);
  EXPECT_EQ(out.skipped, 1u);
  EXPECT_LT(rows.size(), plan.rows() - 1);
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows[0].kernel, "b");  // point 0's "a" was done
  EXPECT_EQ(rows[0].problem.seqlen_q, 16);
  EXPECT_EQ(out.new_rows, rows.size());
}

}  // namespace
}  // namespace fa

namespace fa {
namespace {

// The cuda back end checks every row and column of a point (forward or
// backward) unless max_check_rows was set; the cpu back end samples beyond
// max_check_rows.
TEST(Runner, CheckLimitPerBackEnd) {
  SweepConfig c;
  EXPECT_EQ(check_limit(c, Backend::cpu), 2048);
  EXPECT_EQ(check_limit(c, Backend::cuda), INT64_MAX);
  c.max_check_rows = 512;
  c.origin["max_check_rows"] = "--max-check-rows";
  EXPECT_EQ(check_limit(c, Backend::cuda), 512);
  EXPECT_EQ(check_limit(c, Backend::cpu), 512);
  c.exact_check = true;
  EXPECT_EQ(check_limit(c, Backend::cpu), INT64_MAX);
  EXPECT_EQ(check_limit(c, Backend::cuda), INT64_MAX);
}

// The wall time split covers each phase a row goes through, and the progress
// hook sees it grow.
TEST(Runner, WallTimeSplitCoversEachPhase) {
  KernelVariant good = planted("good", nullptr);
  SweepPlan plan;
  plan.points.push_back(PlannedPoint{small_problem(), {planned(good)}});
  auto ex = make_cpu_executor(1, int64_t(1) << 30);
  RunnerHooks hooks;
  std::vector<WallTimeSplit> seen;
  hooks.on_progress = [&](size_t, size_t, const std::string&, const WallTimeSplit& w) { seen.push_back(w); };
  const SweepOutcome out = run_sweep(plan, quick_config(), 3, *ex, 0, {}, hooks);
  ASSERT_EQ(out.end, SweepEnd::complete);
  EXPECT_GT(out.wall.inputs, 0);
  EXPECT_GT(out.wall.reference, 0);
  EXPECT_GT(out.wall.validation, 0);
  EXPECT_GT(out.wall.timing, 0);
  ASSERT_EQ(seen.size(), 2u);  // the point's inputs and reference, then its one row
  EXPECT_EQ(seen[0].reference, 0);
  EXPECT_GT(seen[1].reference, 0);
  EXPECT_EQ(seen[1].timing, 0);
}

}  // namespace
}  // namespace fa
