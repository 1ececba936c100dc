// Benchmark (measures, asserts nothing): the host work a paper-sized point
// (batch x seqlen = 16384 tokens, hidden 2048, bf16) pays around the kernels:
// generating Q, K, V, and comparing one row's O and LSE with the float64 reference.
#include <benchmark/benchmark.h>

#include "check/inputs.h"
#include "check/metrics.h"

namespace {

fa::AttnProblem paper_point() {
  fa::AttnProblem p;
  p.batch = 4, p.seqlen_q = p.seqlen_k = 4096;
  p.heads = p.heads_kv = 16, p.head_dim = 128;
  p.dtype = fa::DType::bf16;
  return p;
}

void BM_GenerateInputsPaper(benchmark::State& state) {
  const fa::AttnProblem p = paper_point();
  for (auto _ : state) {
    fa::HostInputs in = fa::generate_inputs(p, fa::Distribution::normal, 1);
    benchmark::DoNotOptimize(in.q.data());
  }
}
BENCHMARK(BM_GenerateInputsPaper)->Unit(benchmark::kMillisecond)->UseRealTime();

// Every row checked (the GPU reference's case): 33.5M O values.
void BM_CompareOutputsPaper(benchmark::State& state) {
  const fa::AttnProblem p = paper_point();
  const fa::HostInputs in = fa::generate_inputs(p, fa::Distribution::normal, 1);
  fa::HostOutputs out;
  out.o = in.q;  // any values: the comparison's cost does not depend on them
  out.lse.assign(size_t(p.batch) * p.heads * p.seqlen_q, 1.f);
  fa::ReferenceOutputs ref;
  for (int64_t r = 0; r < p.seqlen_q; ++r) ref.rows.push_back(r);
  ref.o.assign(in.k.begin(), in.k.end());
  ref.lse.assign(out.lse.size(), 1.0);
  for (auto _ : state) benchmark::DoNotOptimize(fa::compare_outputs(p, out, ref));
}
BENCHMARK(BM_CompareOutputsPaper)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
