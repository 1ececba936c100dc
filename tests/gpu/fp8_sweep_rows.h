// The rows of a validate-only e4m3 sweep on the GPU (4 heads, heads_kv 2 and 4,
// both masks), for the FP8 tests that run kernels through the sweep.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "measure/executor.h"
#include "registry/kernel.h"
#include "sweep/config.h"
#include "sweep/plan.h"
#include "sweep/runner.h"

namespace fa::test {

inline std::vector<Result> fp8_sweep_rows(const std::string& kernels, const std::string& seqlen,
                                          const std::string& head_dim, Fp8Scaling scaling, bool hadamard,
                                          uint64_t seed, Executor& ex) {
  ConfigSource src;
  apply_override(src, "dtype", "e4m3", "--dtype");
  apply_override(src, "kernels", kernels, "--kernels");
  apply_override(src, "seqlen", seqlen, "--seqlen");
  apply_override(src, "head_dim", head_dim, "--head-dim");
  apply_override(src, "heads", "4", "--heads");
  apply_override(src, "heads_kv", "2,4", "--heads-kv");
  apply_override(src, "causal", "both", "--causal");
  apply_override(src, "fp8_scaling", std::string(to_string(scaling)), "--fp8-scaling");
  if (hadamard) apply_override(src, "fp8_hadamard", "true", "--fp8-hadamard");
  SweepConfig c = resolve_config(src);
  c.validate_only = true;
  const SweepPlan plan = plan_sweep(c, Backend::cuda, Registry::instance());
  std::vector<Result> rows;
  RunnerHooks hooks;
  hooks.on_row = [&](const Result& r) { rows.push_back(r); };
  run_sweep(plan, c, seed, ex, 0, {}, hooks);
  return rows;
}

}  // namespace fa::test
