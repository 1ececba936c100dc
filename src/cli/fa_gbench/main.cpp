// fa-gbench: the registry's kernels as Google Benchmark benchmarks over a
// config's points, so --benchmark_format=json, --benchmark_repetitions and
// Google Benchmark's compare.py work on our kernels. Our flags (--config,
// --kernels, --backend) are taken out of argv before benchmark::Initialize.
// Each benchmark validates its kernel once (SkipWithError on a failed check),
// then times with manual time: one executor sample per iteration (CUDA events
// with the L2 flush on the GPU, the host clock on the CPU).
#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cli/common/backend.h"
#include "cli/common/exit_codes.h"
#include "core/errors.h"
#include "sweep/config.h"
#include "sweep/plan.h"
#include "cli/fa_gbench/kernel_bench.h"

namespace {

constexpr const char* kProg = "fa-gbench";

struct OurFlags {
  std::string config = "configs/smoke.json", kernels, backend;
};

// Removes --config/--kernels/--backend (as "--x v" or "--x=v") from argv.
OurFlags take_our_flags(int& argc, char** argv) {
  OurFlags f;
  const std::vector<std::pair<std::string, std::string*>> ours = {
      {"--config", &f.config}, {"--kernels", &f.kernels}, {"--backend", &f.backend}};
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help")  // Google Benchmark prints its own flags after these
      std::printf(
          "fa-gbench: the registry's kernels as Google Benchmark benchmarks over a config's points\n"
          "  --config FILE        sweep config (default configs/smoke.json); its seed (default 0),\n"
          "                       distribution, block, warmup and flush_l2 apply\n"
          "  --kernels SELECTION  as fa-bench sweep --kernels\n"
          "  --backend auto|cpu|cuda\n"
          "Example: fa-gbench --config configs/smoke.json --benchmark_format=json --benchmark_repetitions=5\n\n");
    bool taken = false;
    for (const auto& [name, dst] : ours) {
      if (a == name) {
        if (i + 1 >= argc) throw fa::UsageError(name + " needs a value");
        *dst = argv[++i];
        taken = true;
      } else if (a.rfind(name + "=", 0) == 0) {
        *dst = a.substr(name.size() + 1);
        taken = true;
      }
    }
    if (!taken) argv[out++] = argv[i];
  }
  argc = out;
  argv[argc] = nullptr;
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  std::unique_ptr<fa::Executor> ex;
  fa::SweepPlan plan;
  fa::SweepConfig cfg;
  const int setup = fa::cli::run_guarded(kProg, [&] {
    const OurFlags f = take_our_flags(argc, argv);
    fa::ConfigSource src = fa::load_config_file(f.config);
    if (!f.kernels.empty()) fa::apply_override(src, "kernels", f.kernels, "--kernels");
    if (!f.backend.empty()) fa::apply_override(src, "backend", f.backend, "--backend");
    cfg = fa::resolve_config(src);
    if (cfg.pass != std::vector<fa::Pass>{fa::Pass::fwd})
      throw fa::UsageError(fmt::format("{}: key 'pass': fa-gbench times the forward pass only; `fa-bench sweep "
                                       "--pass` runs the backward",
                                       f.config));
    if (!cfg.seed) cfg.seed = 0;  // fixed inputs: repetitions and reruns time the same numbers
    ex = fa::cli::pick_executor(kProg, cfg.backend, cfg.threads, cfg.cpu_mem_limit);
    plan = fa::plan_sweep(cfg, ex->backend(), fa::Registry::instance());
    return fa::cli::kExitOk;
  });
  if (setup != fa::cli::kExitOk) return setup;

  fa::gbench::BenchState state{*ex, cfg};
  size_t registered = 0;
  for (const auto& point : plan.points)
    for (const auto& k : point.kernels) {
      if (!k.variant || !k.variant->supports(point.problem).ok) continue;
      fa::gbench::register_kernel_benchmark(state, point.problem, *k.variant);
      ++registered;
    }
  if (registered == 0) {
    fa::cli::print_error(kProg, "no kernel of the selection supports any point of the config");
    return fa::cli::kExitUsage;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return fa::cli::kExitUsage;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return fa::cli::kExitOk;
}
