// `fa-bench sweep`: resolve the config, pick the back end, plan, then run with
// incremental outputs. Everything that can be a usage error is checked before
// the first output file is created.
#include <cstdio>
#include <filesystem>
#include <random>
#include <set>

#include <CLI/Version.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/common/backend.h"
#include "cli/common/command_line.h"
#include "cli/common/devices.h"
#include "cli/common/exit_codes.h"
#include "cli/common/interrupt.h"
#include "cli/common/progress.h"
#include "cli/fa_bench/sweep_options.h"
#include "core/errors.h"
#include "core/stop.h"
#include "build_info.h"
#include "report/atomic_file.h"
#include "report/output_path.h"
#include "report/markdown.h"
#include "report/metadata.h"
#include "report/result_json.h"
#include "report/results_files.h"
#include "sweep/config.h"
#include "sweep/plan.h"
#include "sweep/resume.h"
#include "sweep/runner.h"
#include "sweep/shard.h"
#include "sweep/values.h"

namespace fa::cli {

namespace {

constexpr const char* kProg = "fa-bench";

uint64_t fresh_seed() {
  std::random_device rd;
  return (uint64_t(rd()) << 32) ^ rd();
}

// Output paths (and the --save-outputs folder) against each other and every
// input, before anything is created. When resuming, FILE is the --json output
// by design, so it is an input only for the other outputs.
void check_paths(const SweepOptions& o, const SweepConfig& c) {
  auto flag = [&](const char* key) {
    auto it = o.flag_of.find(key);
    return it != o.flag_of.end() ? it->second : fmt::format("config key '{}'", key);
  };
  std::vector<PathUse> outputs, inputs;
  if (!c.json.empty()) outputs.push_back({o.resume ? "--resume" : flag("json"), c.json});
  if (!c.csv.empty()) outputs.push_back({flag("csv"), c.csv});
  if (!c.md.empty()) outputs.push_back({flag("md"), c.md});
  if (o.config) inputs.push_back({"--config", *o.config});
  if (!c.inputs.empty())
    for (const char* name : {"q.npy", "k.npy", "v.npy"})
      inputs.push_back({flag("inputs"), (std::filesystem::path(c.inputs) / name).string()});
  check_output_paths(outputs, inputs);
  if (!c.save_outputs.empty()) {
    std::vector<PathUse> all = outputs;
    all.insert(all.end(), inputs.begin(), inputs.end());
    if (o.resume) all.push_back({"--resume", *o.resume});
    check_output_folder({flag("save_outputs"), c.save_outputs}, all);
  }
}

}  // namespace

int run_sweep_command(SweepOptions& o) {
  if (o.config) parse_nonempty(*o.config, "--config", "a config file name");
  if (o.resume) parse_nonempty(*o.resume, "--resume", "the results file to continue");
  // 1. Settings: config file (or, when resuming without one, the run's own), then flags.
  std::vector<Result> resumed;
  nlohmann::json resumed_meta;
  if (o.resume) {
    resumed = read_results_json(*o.resume, &resumed_meta);
    check_unique_keys(resumed, *o.resume);
  }
  ConfigSource src;
  const bool config_from_metadata = o.resume && !o.config && resumed_meta.contains("config");
  if (o.config) {
    src = load_config_file(*o.config);
  } else if (config_from_metadata) {
    src = config_from_json(resumed_meta["config"], *o.resume + ": metadata.config");
    // The recorded output paths were relative to another run's working folder:
    // a resume writes FILE, and other outputs only where the command line says.
    // The devices too: a resume runs where its command line says (device 0 by default).
    std::erase_if(src.file, [](const ConfigSource::FileValue& v) {
      return v.key == "json" || v.key == "csv" || v.key == "md" || v.key == "save_outputs" || v.key == "devices";
    });
  }
  for (const auto& [key, text] : o.values) apply_override(src, key, text, o.flag_of[key]);
  if (o.no_l2_flush) apply_override(src, "flush_l2", "false", "--no-l2-flush");
  if (o.counters) apply_override(src, "counters", "true", "--counters");
  if (o.exact_check) apply_override(src, "exact_check", "true", "--exact-check");
  if (o.fp8_hadamard) apply_override(src, "fp8_hadamard", "true", "--fp8-hadamard");
  SweepConfig cfg = resolve_config(src);
  set_stop_deadline(cfg.timeout);  // the whole run, from here
  if (o.resume) {
    // A resumed sweep keeps its inputs (and so its reference) unless told otherwise.
    if (!o.values.count("seed") && resumed_meta.contains("seed") && resumed_meta["seed"].is_number_unsigned())
      cfg.seed = resumed_meta["seed"].get<uint64_t>();
    auto canonical = [](const std::string& p) {
      return std::filesystem::weakly_canonical(std::filesystem::absolute(resolve_links(p)));
    };
    if (!cfg.json.empty() && (cfg.json == "-" || canonical(cfg.json) != canonical(*o.resume)))
      throw UsageError(fmt::format("--json '{}' with --resume '{}': a resume continues (and writes) the file it "
                                   "reads; drop --json, or copy the file first and resume the copy",
                                   cfg.json, *o.resume));
    cfg.json = *o.resume;
  }
  check_paths(o, cfg);

  // 2. Back end and plan: unknown kernels, unsupported head dims -> exit 2 here.
  std::unique_ptr<Executor> picked = pick_executor(kProg, cfg.backend, cfg.threads, cfg.cpu_mem_limit);
  // --devices: one worker per device, each checked here; slot 0 describes the run.
  std::vector<DeviceSlot> slots;
  if (cfg.devices) {
    slots = open_devices(std::move(picked), *cfg.devices, cfg.origin.at("devices"));
    cfg.devices = device_list_of(slots);
  }
  Executor* ex = slots.empty() ? picked.get() : slots.front().executor.get();
  SweepPlan plan = plan_sweep(cfg, ex->backend(), Registry::instance());
  const std::string whole_plan_hash = plan_hash(plan);
  const size_t whole_plan_rows = plan.rows();
  if (cfg.shard) {
    // Shards are merged into one result only if they ran on the same inputs.
    if (!cfg.seed)
      throw UsageError(fmt::format("{} '{}' without --seed: each shard would draw inputs of its own; expected "
                                   "--seed N, the same for every shard (e.g. --seed 1234)",
                                   cfg.origin.at("shard"), cfg.shard->str()));
    const size_t points = plan.points.size();
    keep_shard(plan, *cfg.shard);
    if (plan.points.empty())
      print_note(kProg, fmt::format("shard {} holds no point: the plan has {} points for {} shards",
                                    cfg.shard->str(), points, cfg.shard->count));
  }
  const uint64_t seed = cfg.seed ? *cfg.seed : fresh_seed();
  cfg.seed = seed;
  if (o.resume && !o.resume_allow_changes) {
    RunIdentity now{cfg.to_json(), seed, std::string(to_string(ex->backend())), FA_BENCH_VERSION,
                    FA_BENCH_GIT_COMMIT};
    std::vector<std::string> diffs = resume_differences(resumed_meta, now);
    if (!diffs.empty())
      throw UsageError(fmt::format("--resume '{}': this run would differ from the one recorded in the file: {}; "
                                   "its rows would not be comparable (--resume-allow-changes to continue "
                                   "anyway)",
                                   *o.resume, fmt::join(diffs, "; ")));
  }
  print_note(kProg, fmt::format("seed: {} ({} points, {} rows{}{})", seed, plan.points.size(), plan.rows(),
                                cfg.shard ? fmt::format(": shard {} of a plan of {} rows", cfg.shard->str(),
                                                        whole_plan_rows)
                                          : "",
                                resumed.empty() ? "" : fmt::format(", {} rows resumed from {}", resumed.size(), *o.resume)));

  // 3. Outputs exist from here on, each always a complete document.
  MetadataInputs mi;
  mi.command_line = command_line();
  mi.config = cfg.to_json();
  mi.seed = seed;
  mi.device = ex->info();
  for (const DeviceSlot& d : slots) mi.devices.push_back(d.executor->info());
  mi.backend = std::string(to_string(ex->backend()));
  mi.timing_method = ex->backend() == Backend::cpu
                         ? "host steady_clock, no cache flush"
                         : (cfg.timing.flush_l2 ? "cuda events, L2 flushed before each sample"
                                                : "cuda events, L2 not flushed");
  mi.flush_l2 = ex->backend() == Backend::cuda && cfg.timing.flush_l2;
  mi.matmul_ceiling_tflops = ex->matmul_ceiling_tflops();
  mi.copy_bandwidth_gbps = ex->copy_bandwidth_gbps();
  mi.plan_hash = whole_plan_hash;
  mi.plan_rows = whole_plan_rows;
  mi.shard = cfg.shard ? cfg.shard->str() : "";
  std::set<std::string> done;
  for (const auto& r : resumed) done.insert(r.key());
  nlohmann::json meta = build_metadata(mi);
  meta["libraries"]["cli11"] = CLI11_VERSION;  // the CLI layer's own dependency
  // --md - is the table stdout shows anyway.
  ResultsFiles files(cfg.json, cfg.csv, cfg.md == "-" ? "" : cfg.md, std::move(meta), resumed);

  // 4. Run. The Markdown table streams on stdout unless JSON or CSV goes there.
  ProgressLine progress;
  const bool table_on_stdout = cfg.json != "-" && cfg.csv != "-";
  if (table_on_stdout) {
    std::fputs(markdown_header().c_str(), stdout);
    std::fflush(stdout);
  }
  // The exit code speaks for the whole result set: resuming a sweep with a
  // failed row must not turn it green.
  bool failed = false;
  for (const auto& r : resumed)
    if (r.status == Status::fail || r.status == Status::error) failed = true;
  RunnerHooks hooks;
  hooks.on_row = [&](const Result& r) {
    files.add(r);
    progress.clear();
    if (table_on_stdout) {
      std::fputs(markdown_row(r).c_str(), stdout);
      std::fflush(stdout);
    }
    if (r.status == Status::fail || r.status == Status::error) failed = true;
  };
  // metadata.wall_time_s follows the split, written with each row and at the end.
  auto record_wall = [&](const WallTimeSplit& w) {
    files.set_metadata("wall_time_s", {{"inputs", w.inputs},
                                       {"reference", w.reference},
                                       {"validation", w.validation},
                                       {"timing", w.timing}});
  };
  hooks.on_progress = [&](size_t done_rows, size_t total, const std::string& what, const WallTimeSplit& w) {
    record_wall(w);
    progress.update(done_rows, total, what, &w);
  };
  hooks.stop_requested = [] { return interrupted(); };
  hooks.note = [&](const std::string& msg) {
    progress.clear();
    print_note(kProg, msg);
  };
  install_sigint_handler();
  SweepOutcome out;
  try {
    if (slots.empty()) {
      out = run_sweep(plan, cfg, seed, *ex, mi.matmul_ceiling_tflops, done, hooks);
    } else {
      std::vector<DeviceWorker> workers;
      for (const DeviceSlot& d : slots) workers.push_back(DeviceWorker{d.executor.get(), d.device});
      out = run_sweep_on_devices(plan, cfg, seed, workers, mi.matmul_ceiling_tflops, done, hooks);
    }
  } catch (const std::exception& e) {
    // Say in the files why they stop where they do; the error itself goes to stderr.
    progress.clear();
    files.finish(std::string("stopped: ") + e.what());
    throw;
  }
  progress.clear();
  record_wall(out.wall);

  switch (out.end) {
    case SweepEnd::interrupted:
      files.finish("interrupted");
      print_note(kProg, fmt::format("interrupted: {} rows written this run, {} total; continue with "
                                    "--resume {}",
                                    out.new_rows, files.rows().size(),
                                    cfg.json.empty() ? "<the --json file>" : cfg.json));
      return kExitInterrupted;
    case SweepEnd::timeout:
      files.finish("timeout");
      print_error(kProg, fmt::format("timeout: --timeout {} s passed; {} rows written this run, {} total; "
                                     "continue with --resume {}",
                                     cfg.timeout, out.new_rows, files.rows().size(),
                                     cfg.json.empty() ? "<the --json file>" : cfg.json));
      return kExitTimeout;
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
