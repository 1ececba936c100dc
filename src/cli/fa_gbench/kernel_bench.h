// One Google Benchmark per (point, kernel): validate once, then time one
// executor sample per iteration and report TFLOP/s and modelled bytes/s.
#pragma once
#include <map>
#include <optional>
#include <string>

#include "core/tensors.h"
#include "measure/executor.h"
#include "registry/kernel.h"
#include "sweep/config.h"

namespace fa::gbench {

// What every benchmark shares: the executor (holding one point's tensors at a
// time) and the check verdicts, so each (point, kernel) is validated once even
// though Google Benchmark calls a benchmark several times.
struct BenchState {
  Executor& ex;
  const SweepConfig& cfg;
  std::optional<AttnProblem> prepared;       // the point whose tensors ex holds
  std::map<std::string, std::string> check;  // kernel + point -> "" (passed) or why it failed
};

// "cpu.fa2.64x64/b1_h2/2_q128_k128_d64_bf16_causal"
std::string benchmark_name(const AttnProblem&, const KernelVariant&);
void register_kernel_benchmark(BenchState&, const AttnProblem&, const KernelVariant&);

}  // namespace fa::gbench
