#include "cli/fa_gbench/kernel_bench.h"

#include <benchmark/benchmark.h>

#include "check/fp8_inputs.h"
#include "check/inputs.h"
#include "check/validate.h"
#include "core/errors.h"

namespace fa::gbench {

namespace {

// Puts p's tensors in the executor (once per point, not per call) and returns
// "" or why the kernel's outputs fail the check (cached per kernel and point).
std::string prepare_and_check(BenchState& s, const AttnProblem& p, const KernelVariant& v) {
  const std::string key = v.name + " " + p.describe();
  const uint64_t seed = *s.cfg.seed;
  std::optional<HostInputs> inputs;
  HostInputs unquantized;  // e4m3: before quantization (check/fp8_inputs.h)
  auto make_inputs = [&] {
    inputs = generate_inputs(p, s.cfg.distribution, seed);
    if (p.dtype == DType::e4m3)
      unquantized = quantize_inputs(p, *inputs, *s.cfg.fp8_settings(p.dtype), seed);
  };
  if (!s.prepared || !(*s.prepared == p)) {
    make_inputs();
    s.ex.release();
    s.prepared.reset();
    s.ex.prepare(p, *inputs);
    s.prepared = p;
  }
  if (auto it = s.check.find(key); it != s.check.end()) return it->second;
  if (!inputs) make_inputs();
  const bool fp8 = p.dtype == DType::e4m3;
  const PointCheck check = check_point(p, *inputs, s.cfg.max_check_rows, v.tile.block_m, seed, s.cfg.threads,
                                       std::nullopt, nullptr, fp8 ? &unquantized : nullptr);
  s.ex.reserve_workspace(v.workspace_bytes ? v.workspace_bytes(p) : 0);
  const Validation val = validate_variant(v, p, s.ex, check, seed);
  return s.check[key] = val.passed ? std::string() : "failed check: " + val.why;
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
  const TrafficRun traffic_run{s.ex.info().sm_count(), s.cfg.fp8_settings(p.dtype)};
  const double bytes = double(v.traffic(p, traffic_run).value_or(Traffic{}).total());
  if (seconds > 0) {
    state.counters["TFLOP/s"] = p.flops() * double(n) / seconds / 1e12;
    state.counters["model_GB/s"] = bytes * double(n) / seconds / 1e9;
  }
  state.counters["flops"] = p.flops();
  state.counters["model_bytes"] = bytes;
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
