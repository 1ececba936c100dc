// Benchmark (measures, asserts nothing): what checking one backward point costs
// on the host -- the float64 reference gradients and the tolerance rule's
// standard backward in bf16 -- at the sweep's shape (batch * seqlen = 16384,
// 16 heads of head_dim 128) with rows and columns sampled for at most 2048.
// Each runs once; the counters give each part's wall and process CPU seconds
// (CPU seconds / cores is the wall time on an otherwise idle machine).
#include <benchmark/benchmark.h>

#include <chrono>
#include <ctime>
#include <string>

#include "check/grad_metrics.h"
#include "check/inputs.h"
#include "check/sampling.h"
#include "reference/attention_grad.h"

namespace {

struct Clocks {
  std::chrono::steady_clock::time_point wall = std::chrono::steady_clock::now();
  double cpu = cpu_seconds();
  static double cpu_seconds() {  // every thread of the process
    timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
  }
  void report(benchmark::State& state, const std::string& name) const {
    state.counters[name + "_s"] =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
    state.counters[name + "_cpu_s"] = cpu_seconds() - cpu;
  }
};

void BM_GradientCheckSampled(benchmark::State& state) {
  fa::AttnProblem p;
  p.seqlen_q = p.seqlen_k = int(state.range(0));
  p.batch = 16384 / p.seqlen_q;
  p.heads = p.heads_kv = 16;
  p.head_dim = 128;
  p.causal = state.range(1) != 0;
  p.dtype = fa::DType::bf16;
  const int threads = int(state.range(2));
  fa::HostInputs in = fa::generate_inputs(p, fa::Distribution::normal, 1);
  in.dout = fa::generate_dout(p, fa::Distribution::normal, 1);
  const std::vector<int64_t> rows = fa::sample_rows(p, 2048, 128, 2);
  const std::vector<int64_t> cols = fa::sample_cols(p, 2048, 128, 2);
  for (auto _ : state) {
    const Clocks ref_clocks;
    fa::HostOutputs fwd;  // the forward as a by-product, as the measurements in docs/MEASUREMENT.md took it
    const fa::SampledGrads ref = fa::reference_backward(p, in, rows, cols, threads, &fwd);
    ref_clocks.report(state, "reference");
    const Clocks tol_clocks;
    fa::GradErrors e;
    fa::set_grad_tolerances(e, p, in, ref, threads);
    tol_clocks.report(state, "tolerance");
    benchmark::DoNotOptimize(e.dq.tolerance);
  }
  state.counters["rows"] = double(rows.size());
  state.counters["cols"] = double(cols.size());
}

BENCHMARK(BM_GradientCheckSampled)
    ->ArgNames({"seqlen", "causal", "threads"})
    ->Args({2048, 0, 2})
    ->Args({4096, 0, 2})
    ->Args({16384, 0, 2})
    ->Args({2048, 1, 2})
    ->Args({4096, 1, 2})
    ->Args({16384, 1, 2})
    ->Args({2048, 0, 0})  // threads 0: every core (the GPU machine's host)
    ->Args({4096, 0, 0})
    ->Args({16384, 0, 0})
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();

}  // namespace
