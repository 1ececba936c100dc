// Benchmark (measures, asserts nothing): the float64 reference on 256 sampled
// query rows at seqlen 65536, head_dim 128, batch 1, heads 1 -- the check a
// long-sequence validation pays. The bar is under 5 s on 2 cores.
#include <benchmark/benchmark.h>

#include <random>

#include "check/inputs.h"
#include "check/metrics.h"
#include "reference/reference.h"

namespace {

void BM_ReferenceSampledRows(benchmark::State& state) {
  fa::AttnProblem p;
  p.batch = 1, p.heads = 1, p.heads_kv = 1;
  p.seqlen_q = p.seqlen_k = 65536;
  p.head_dim = 128;
  p.causal = state.range(0) != 0;
  p.dtype = fa::DType::bf16;
  const int threads = int(state.range(1));
  const fa::HostInputs in = fa::generate_inputs(p, fa::Distribution::normal, 1);
  // 256 rows, one drawn from each 256-row stripe so causal rows see every length.
  std::vector<int64_t> rows;
  std::mt19937_64 gen(2);
  for (int64_t s = 0; s < 256; ++s) rows.push_back(s * 256 + int64_t(gen() % 256));
  for (auto _ : state) {
    fa::ReferenceOutputs r = fa::reference_forward(p, in, rows, threads);
    benchmark::DoNotOptimize(r.o.data());
  }
  state.counters["rows"] = double(rows.size());
  state.counters["threads"] = threads;
}
// The tolerance rule's standard-in-precision pass on the same rows (it runs
// beside the reference on every checked point).
void BM_ToleranceSampledRows(benchmark::State& state) {
  fa::AttnProblem p;
  p.seqlen_q = p.seqlen_k = 65536;
  p.head_dim = 128;
  p.dtype = fa::DType::bf16;
  const fa::HostInputs in = fa::generate_inputs(p, fa::Distribution::normal, 1);
  std::vector<int64_t> rows;
  std::mt19937_64 gen(2);
  for (int64_t s = 0; s < 256; ++s) rows.push_back(s * 256 + int64_t(gen() % 256));
  const fa::ReferenceOutputs ref = fa::reference_forward(p, in, rows, 0);
  for (auto _ : state) benchmark::DoNotOptimize(fa::o_tolerance(p, in, ref));
}
BENCHMARK(BM_ToleranceSampledRows)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK(BM_ReferenceSampledRows)
    ->ArgNames({"causal", "threads"})
    ->Args({0, 2})
    ->Args({1, 2})
    ->Args({0, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
