#include "cli/fa_gbench/kernel_bench.h"

#include <benchmark/benchmark.h>

#include <fmt/format.h>

#include "check/inputs.h"
#include "check/metrics.h"
#include "check/sampling.h"
#include "core/errors.h"

namespace fa::gbench {

namespace {

// Puts p's tensors in the executor (once per point, not per call) and returns
// "" or why the kernel's outputs fail the check (cached per kernel and point).
std::string prepare_and_check(BenchState& s, const AttnProblem& p, const KernelVariant& v) {
  const std::string key = v.name + " " + p.describe();
  const uint64_t seed = *s.cfg.seed;
  std::optional<HostInputs> inputs;
  if (!s.prepared || !(*s.prepared == p)) {
    inputs = generate_inputs(p, s.cfg.distribution, seed);
    s.ex.release();
    s.prepared.reset();
    s.ex.prepare(p, *inputs);
    s.prepared = p;
  }
  if (auto it = s.check.find(key); it != s.check.end()) return it->second;
  if (!inputs) inputs = generate_inputs(p, s.cfg.distribution, seed);
  std::vector<int64_t> rows;
  if (p.seqlen_q > s.cfg.max_check_rows)
    rows = sample_rows(p, s.cfg.max_check_rows, v.tile.block_m > 0 ? v.tile.block_m : 128, seed);
  const ReferenceOutputs ref = reference_forward(p, *inputs, rows, s.cfg.threads);
  ErrorMetrics tol;
  set_tolerances(tol, p, *inputs, ref);
  s.ex.reserve_workspace(v.workspace_bytes ? v.workspace_bytes(p) : 0);
  const AttnParams params = s.ex.params();
  s.ex.poison_outputs();
  s.ex.run_once([&](RunContext& ctx) { v.run(params, ctx); });
  ErrorMetrics m = compare_outputs(p, s.ex.fetch_outputs(), ref);
  m.tolerance = tol.tolerance;
  m.lse_tolerance = tol.lse_tolerance;
  std::string why;
  if (!passes(m))
    why = fmt::format("failed check: O max abs error {:.3g} vs tolerance {:.3g}, LSE {:.3g} vs {:.3g}, {} "
                      "non-finite (seed {})",
                      m.o_max_abs, m.tolerance, m.lse_max_abs, m.lse_tolerance, m.nonfinite, seed);
  return s.check[key] = why;
}

void run_benchmark(benchmark::State& state, BenchState& s, const AttnProblem& p, const KernelVariant& v) {
  std::string why;
  try {
    why = prepare_and_check(s, p, v);
  } catch (const std::exception& e) {  // oom, kernel error: this benchmark only
    why = e.what();
  }
  if (!why.empty()) {
    state.SkipWithError(why.c_str());
    for (auto _ : state) {}  // SkipWithError: the loop body is not run
    return;
  }
  s.ex.reserve_workspace(v.workspace_bytes ? v.workspace_bytes(p) : 0);
  const AttnParams params = s.ex.params();
  auto launch = [&](RunContext& ctx) { v.run(params, ctx); };
  // One sample per iteration, through the same path the sweep times with.
  TimingOptions one = s.cfg.timing;
  one.warmup = 0;
  one.min_samples = one.max_samples = 1;
  s.ex.time(launch, [&] { TimingOptions w = one; w.warmup = s.cfg.timing.warmup; return w; }());
  double seconds = 0;
  int64_t n = 0;
  for (auto _ : state) {
    const double t = s.ex.time(launch, one).median_ms * 1e-3;
    state.SetIterationTime(t);
    seconds += t;
    ++n;
  }
  if (seconds > 0) {
    state.counters["TFLOP/s"] = p.flops() * double(n) / seconds / 1e12;
    state.counters["model_GB/s"] = double(v.traffic(p).total()) * double(n) / seconds / 1e9;
  }
  state.counters["flops"] = p.flops();
  state.counters["model_bytes"] = double(v.traffic(p).total());
}

}  // namespace

std::string benchmark_name(const AttnProblem& p, const KernelVariant& v) {
  std::string shape = p.describe();
  for (char& c : shape)
    if (c == ' ') c = '_';
  return v.name + "/" + shape;
}

void register_kernel_benchmark(BenchState& s, const AttnProblem& p, const KernelVariant& v) {
  benchmark::RegisterBenchmark(benchmark_name(p, v).c_str(),
                               [&s, p, &v](benchmark::State& st) { run_benchmark(st, s, p, v); })
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
}

}  // namespace fa::gbench
