// `fa-bench sweep`: resolve the config, pick the back end, plan, then run with
// incremental outputs. Everything that can be a usage error is checked before
// the first output file is created.
#include <cstdio>
#include <random>
#include <set>

#include <CLI/Version.hpp>
#include <fmt/format.h>

#include "cli/common/backend.h"
#include "cli/common/command_line.h"
#include "cli/common/exit_codes.h"
#include "cli/common/interrupt.h"
#include "cli/common/progress.h"
#include "cli/fa_bench/sweep_options.h"
#include "core/errors.h"
#include "report/atomic_file.h"
#include "report/markdown.h"
#include "report/metadata.h"
#include "report/result_json.h"
#include "report/results_files.h"
#include "sweep/config.h"
#include "sweep/plan.h"
#include "sweep/runner.h"

namespace fa::cli {

namespace {

constexpr const char* kProg = "fa-bench";

uint64_t fresh_seed() {
  std::random_device rd;
  return (uint64_t(rd()) << 32) ^ rd();
}

void check_outputs(const SweepConfig& c) {
  for (const auto& [flag, path] : {std::pair<const char*, const std::string&>{"--json", c.json},
                                   {"--csv", c.csv},
                                   {"--md", c.md}})
    if (!path.empty())
      if (std::string why = unwritable_reason(path); !why.empty())
        throw UsageError(fmt::format("{}: cannot write '{}': {}", flag, path, why));
}

}  // namespace

int run_sweep_command(SweepOptions& o) {
  // 1. Settings: config file (or, when resuming without one, the run's own), then flags.
  std::vector<Result> resumed;
  nlohmann::json resumed_meta;
  if (!o.resume.empty()) resumed = read_results_json(o.resume, &resumed_meta);
  ConfigSource src;
  if (!o.config.empty()) {
    src = load_config_file(o.config);
  } else if (!o.resume.empty() && resumed_meta.contains("config")) {
    src = config_from_json(resumed_meta["config"], o.resume + ": metadata.config");
  }
  for (const auto& [key, text] : o.values) apply_override(src, key, text, "--" + key);
  if (o.no_l2_flush) apply_override(src, "flush_l2", "false", "--no-l2-flush");
  if (o.counters) apply_override(src, "counters", "true", "--counters");
  SweepConfig cfg = resolve_config(src);
  // A resumed sweep keeps its inputs (and so its reference) unless told otherwise.
  if (!o.resume.empty() && !o.values.count("seed") && resumed_meta.contains("seed") &&
      resumed_meta["seed"].is_number_unsigned())
    cfg.seed = resumed_meta["seed"].get<uint64_t>();
  if (!o.resume.empty() && cfg.json.empty()) cfg.json = o.resume;
  check_outputs(cfg);

  // 2. Back end and plan: unknown kernels, unsupported head dims -> exit 2 here.
  std::unique_ptr<Executor> ex = pick_executor(kProg, cfg.backend, cfg.threads, cfg.cpu_mem_limit);
  SweepPlan plan = plan_sweep(cfg, ex->backend(), Registry::instance());
  const uint64_t seed = cfg.seed ? *cfg.seed : fresh_seed();
  cfg.seed = seed;
  print_note(kProg, fmt::format("seed: {} ({} points, {} rows{})", seed, plan.points.size(), plan.rows(),
                                resumed.empty() ? "" : fmt::format(", {} rows resumed from {}", resumed.size(), o.resume)));

  // 3. Outputs exist from here on, each always a complete document.
  MetadataInputs mi;
  mi.command_line = command_line();
  mi.config = cfg.to_json();
  mi.seed = seed;
  mi.device = ex->info();
  mi.backend = std::string(to_string(ex->backend()));
  mi.timing_method = ex->backend() == Backend::cpu
                         ? "host steady_clock, no cache flush"
                         : (cfg.timing.flush_l2 ? "cuda events, L2 flushed before each sample"
                                                : "cuda events, L2 not flushed");
  mi.flush_l2 = ex->backend() == Backend::cuda && cfg.timing.flush_l2;
  mi.matmul_ceiling_tflops = ex->matmul_ceiling_tflops();
  std::set<std::string> done;
  for (const auto& r : resumed) done.insert(r.key());
  nlohmann::json meta = build_metadata(mi);
  meta["libraries"]["cli11"] = CLI11_VERSION;  // the CLI layer's own dependency
  ResultsFiles files(cfg.json, cfg.csv, cfg.md, std::move(meta), resumed);

  // 4. Run.
  ProgressLine progress;
  std::fputs(markdown_header().c_str(), stdout);
  std::fflush(stdout);
  // The exit code speaks for the whole result set: resuming a sweep with a
  // failed row must not turn it green.
  bool failed = false;
  for (const auto& r : resumed)
    if (r.status == Status::fail || r.status == Status::error) failed = true;
  RunnerHooks hooks;
  hooks.on_row = [&](const Result& r) {
    files.add(r);
    progress.clear();
    std::fputs(markdown_row(r).c_str(), stdout);
    std::fflush(stdout);
    if (r.status == Status::fail || r.status == Status::error) failed = true;
  };
  hooks.on_progress = [&](size_t done_rows, size_t total, const std::string& what) {
    progress.update(done_rows, total, what);
  };
  hooks.stop_requested = [] { return interrupted(); };
  hooks.note = [&](const std::string& msg) {
    progress.clear();
    print_note(kProg, msg);
  };
  install_sigint_handler();
  SweepOutcome out;
  try {
    out = run_sweep(plan, cfg, seed, *ex, mi.matmul_ceiling_tflops, done, hooks);
  } catch (const std::exception& e) {
    // Say in the files why they stop where they do; the error itself goes to stderr.
    progress.clear();
    files.finish(std::string("stopped: ") + e.what());
    throw;
  }
  progress.clear();

  switch (out.end) {
    case SweepEnd::interrupted:
      files.finish("interrupted");
      print_note(kProg, fmt::format("interrupted: {} rows written this run, {} total; continue with "
                                    "--resume {}",
                                    out.new_rows, files.rows().size(),
                                    cfg.json.empty() ? "<the --json file>" : cfg.json));
      return kExitInterrupted;
    case SweepEnd::sticky_error:
      files.finish("stopped: " + out.why);
      print_error(kProg, fmt::format("sticky device error, sweep stopped after {} rows: {}",
                                     files.rows().size(), out.why));
      return kExitFailure;
    case SweepEnd::complete:
      break;
  }
  files.finish("complete");
  if (failed) print_error(kProg, "at least one kernel failed validation or errored (see status)");
  return failed ? kExitFailure : kExitOk;
}

}  // namespace fa::cli
