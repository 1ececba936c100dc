// fa-check: validate kernels over a suite of shapes and input distributions
// against the float64 reference (no timing), or prove with --self-test that
// the check catches deliberately broken kernels. main parses and dispatches;
// the loop is the sweep runner's (validate-only).
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <random>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "build_info.h"
#include "cli/common/backend.h"
#include "cli/common/command_line.h"
#include "cli/common/devices.h"
#include "cli/common/exit_codes.h"
#include "cli/common/interrupt.h"
#include "cli/fa_check/check_report.h"
#include "cli/fa_check/check_run.h"
#include "cli/fa_check/reference_check.h"
#include "cli/fa_check/self_test.h"
#include "cli/fa_check/suite.h"
#include "core/errors.h"
#include "core/stop.h"
#include "report/metadata.h"
#include "report/output_path.h"
#include "sweep/dealer.h"
#include "sweep/values.h"

namespace fa::check {

namespace {

constexpr const char* kProg = "fa-check";
constexpr int64_t kDefaultMaxCheckRows = 2048;

struct Options {
  std::string config, kernels, backend = "auto", case_text, distribution, fp8_scaling, json, csv;
  bool quick = false, self_test = false, exact_check = false, fp8_hadamard = false;
  std::optional<uint64_t> seed;
  int64_t max_check_rows = kDefaultMaxCheckRows;
  bool max_check_rows_set = false;  // given: the cuda back end samples beyond it too
  int threads = 0;
  double timeout = 0;  // seconds; 0 = none
  std::optional<DeviceList> devices;  // --devices; nullopt: device 0, rows without a device
};

// The flags' text as typed; parse_flags turns each into its typed field once,
// with the sweep's parsers (the same ranges, the same messages).
struct FlagTexts {
  std::string seed, max_check_rows, threads, timeout, devices;
};

void parse_flags(const CLI::App& app, const FlagTexts& t, Options& o) {
  auto given = [&](const char* flag) { return app.get_option(flag)->count() > 0; };
  if (given("--seed")) o.seed = parse_unsigned(t.seed, "--seed");
  if (given("--max-check-rows")) {
    o.max_check_rows = parse_integer(t.max_check_rows, "--max-check-rows", 1, INT_MAX);
    o.max_check_rows_set = true;
  }
  if (given("--threads")) o.threads = int(parse_integer(t.threads, "--threads", 0, 1024));
  if (given("--timeout")) o.timeout = parse_real(t.timeout, "--timeout", 0, 30 * 86400.0, true);
  if (given("--devices")) o.devices = parse_devices(t.devices, "--devices");
  for (auto [flag, value] : {std::pair<const char*, const std::string*>{"--config", &o.config},
                             {"--kernels", &o.kernels}, {"--case", &o.case_text},
                             {"--distribution", &o.distribution}, {"--fp8-scaling", &o.fp8_scaling},
                             {"--json", &o.json}, {"--csv", &o.csv},
                             {"--backend", &o.backend}})
    if (given(flag)) parse_nonempty(*value, flag, "a value");
}

// The cases to run: --case alone, or the suite file filtered by --quick, the
// back end in use, --distribution and the FP8 flags.
std::vector<CheckCase> select_cases(const Options& o, Backend backend) {
  std::optional<Distribution> dist;
  if (!o.distribution.empty()) {
    dist = parse_distribution(o.distribution);
    if (!dist) throw UsageError(fmt::format("--distribution: unknown '{}' ({})", o.distribution,
                                            distribution_names()));
  }
  std::optional<Fp8Scaling> scaling;
  if (!o.fp8_scaling.empty()) {
    scaling = parse_fp8_scaling(o.fp8_scaling);
    if (!scaling) throw UsageError(fmt::format("--fp8-scaling: unknown '{}' (tensor, head or block)", o.fp8_scaling));
  }
  if (!o.case_text.empty()) {
    CheckCase c;
    c.problem = parse_case(o.case_text, "--case");
    c.distributions = {dist.value_or(Distribution::normal)};
    if ((scaling || o.fp8_hadamard) && c.problem.dtype != DType::e4m3)
      throw UsageError("--fp8-scaling and --fp8-hadamard apply to an e4m3 --case");
    c.fp8 = Fp8Settings{scaling.value_or(Fp8Settings{}.fp8_scaling), o.fp8_hadamard};
    return {c};
  }
  const std::string path = o.config.empty() ? default_suite_path() : o.config;
  std::vector<CheckCase> picked;
  for (CheckCase& c : load_suite(path)) {
    if (o.quick && !c.quick) continue;
    if (c.backend && *c.backend != backend) continue;
    if (dist) {
      if (std::find(c.distributions.begin(), c.distributions.end(), *dist) == c.distributions.end()) continue;
      c.distributions = {*dist};
    }
    if ((scaling || o.fp8_hadamard) &&
        (c.problem.dtype != DType::e4m3 || (scaling && c.fp8.fp8_scaling != *scaling) ||
         (o.fp8_hadamard && !c.fp8.fp8_hadamard)))
      continue;
    picked.push_back(std::move(c));
  }
  if (picked.empty()) throw UsageError(fmt::format("{}: no case left after the filters", path));
  return picked;
}

// The cases x distributions dealt to the devices' workers in order (sweep/dealer.h),
// each whole on one device; rows reach on_row in the order one device would
// give them, each with its device. The first error of a worker (a sticky device
// error, a stop) is rethrown once every finished row went out.
size_t run_on_devices(const std::vector<CheckCase>& cases, const std::vector<const KernelVariant*>& kernels,
                      const CheckSettings& s, const std::vector<cli::DeviceSlot>& slots,
                      const std::function<void(const CheckRow&)>& on_row) {
  std::vector<std::pair<const CheckCase*, Distribution>> items;
  for (const CheckCase& c : cases)
    for (Distribution d : c.distributions) items.emplace_back(&c, d);
  InOrder<CheckRow> in_order(items.size(), on_row);
  std::atomic<size_t> unsupported{0};
  std::vector<char> bound(slots.size(), 0);
  const DealEnd end = deal(
      items.size(), int(slots.size()),
      [&](int w, size_t i) {
        const cli::DeviceSlot& slot = slots[size_t(w)];
        if (!bound[size_t(w)]) {  // a worker keeps its thread
          slot.executor->bind_thread();
          bound[size_t(w)] = 1;
        }
        const auto& [c, d] = items[i];
        unsupported += run_case(c->problem, c->passes, d, c->fp8, kernels, s, *slot.executor, [&](const CheckRow& row) {
          CheckRow r = row;
          r.result.device = slot.device;
          in_order.add(i, std::move(r));
        });
        in_order.finish(i);
        return true;
      },
      [] { return stop_reason() != StopReason::none; });
  in_order.flush();
  if (end.error) std::rethrow_exception(end.error);
  return unsupported.load();
}

int run(const Options& o, const std::string& program) {
  {
    std::vector<PathUse> outputs;
    if (!o.json.empty()) outputs.push_back({"--json", o.json});
    if (!o.csv.empty()) outputs.push_back({"--csv", o.csv});
    check_output_paths(outputs, {{"--config", o.config.empty() ? default_suite_path() : o.config}});
  }
  if (o.self_test && !o.kernels.empty())
    throw UsageError("--self-test chooses its own kernels (cpu.fa2.64x64, cpu.fa2.bwd.64x64 and their faulty "
                     "copies; with --backend cuda fa3's planted backward); drop --kernels");
  // The self-test runs on the CPU unless --backend cuda asks for the GPU's planted
  // kernels. A planted kernel this build lacks is refused before any device is looked for.
  const std::string backend = o.self_test && o.backend == "auto" ? "cpu" : o.backend;
  if (o.self_test && backend == "cuda") self_test_selection(Backend::cuda);
  if (!o.self_test) check_faulty_entries(o.kernels, Registry::instance());

  std::unique_ptr<Executor> picked = cli::pick_executor(kProg, backend, o.threads, 0);
  // --devices: one worker per device, each checked here; slot 0 describes the run.
  std::vector<cli::DeviceSlot> slots;
  if (o.devices) slots = cli::open_devices(std::move(picked), *o.devices, "--devices");
  Executor* ex = slots.empty() ? picked.get() : slots.front().executor.get();
  const std::vector<CheckCase> cases = select_cases(o, ex->backend());
  const KernelSet set = resolve_kernels(o.self_test ? self_test_selection(ex->backend()) : o.kernels,
                                        ex->backend(), Registry::instance());
  CheckSettings s;
  s.seed = o.seed ? *o.seed : (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
  s.max_check_rows = o.max_check_rows;
  s.max_check_rows_set = o.max_check_rows_set;
  s.exact_check = o.exact_check;
  s.threads = o.threads;
  size_t runs = 0;
  for (const auto& c : cases) runs += c.distributions.size();
  set_stop_deadline(o.timeout);
  cli::print_note(kProg, fmt::format("seed: {} ({} cases x distributions, {} kernels, backend {})", s.seed,
                                     runs, set.kernels.size(), to_string(ex->backend())));

  const auto t0 = std::chrono::steady_clock::now();
  std::vector<CheckRow> rows;
  size_t unsupported = 0;
  MetadataInputs mi;
  mi.command_line = cli::command_line();
  mi.config = {{"tool", "fa-check"},
               {"suite", o.case_text.empty() ? (o.config.empty() ? default_suite_path() : o.config) : ""},
               {"case", o.case_text},
               {"quick", o.quick},
               {"self_test", o.self_test},
               {"kernels", o.kernels},
               {"distribution", o.distribution},
               {"fp8_scaling", o.fp8_scaling},
               {"fp8_hadamard", o.fp8_hadamard},
               {"max_check_rows", o.max_check_rows},
               {"exact_check", o.exact_check},
               {"seed", s.seed}};
  if (!slots.empty()) mi.config["devices"] = cli::device_list_of(slots).indices;
  mi.seed = s.seed;
  mi.device = ex->info();
  for (const cli::DeviceSlot& d : slots) mi.devices.push_back(d.executor->info());
  mi.backend = std::string(to_string(ex->backend()));
  mi.timing_method = "none (validation only)";
  nlohmann::json meta = build_metadata(mi);
  // The reports are rewritten (atomically) after every row, like the sweep's,
  // so a crash or SIGKILL leaves every finished row; standard output ('-') gets
  // them once, at the end.
  auto write_reports = [&](const std::string& run_status, bool final) {
    meta["run_status"] = run_status;
    meta["end_time"] = utc_now_iso8601();
    meta["rows"] = rows.size();
    if (!o.json.empty() && (final || o.json != "-")) write_check_json(o.json, meta, rows);
    if (!o.csv.empty() && (final || o.csv != "-")) write_check_csv(o.csv, rows);
  };
  const bool table_on_stdout = o.json != "-" && o.csv != "-";
  write_reports("running", false);
  // Ctrl-C / SIGTERM, --timeout or a sticky device error still leave the
  // reports with every finished row (run_status says which).
  cli::install_sigint_handler();
  std::string run_status = "complete", sticky;
  // The cuda back end's every-row check trusts the GPU reference: first it is
  // held against Eigen (and, in the self-test, shown to catch a planted fault).
  size_t reference_failed = 0;
  bool reference_fault_caught = true;
  // A sticky device error or a stop ends the run as such, in either phase below.
  auto until_stopped = [&](const auto& phase) {
    try {
      phase();
    } catch (const KernelError& e) {
      if (!e.sticky) throw;
      sticky = e.what();
      run_status = "stopped: " + sticky;
    } catch (const Stopped& e) {
      run_status = e.reason == StopReason::timeout ? "timeout" : "interrupted";
    }
  };
  until_stopped([&] {
    if (ex->backend() == Backend::cuda) {
      const ReferenceCheckOutcome r = check_gpu_reference(cases, s.seed, *ex, GpuReferenceFault::none, "GPU reference");
      reference_failed = r.failed + r.grad_failed;
      if (o.self_test) {
        // The fault must show in the forward and, where any case has a backward, in the gradients.
        const ReferenceCheckOutcome f =
            check_gpu_reference(cases, s.seed, *ex, GpuReferenceFault::mask_offset, "GPU reference+mask_offset");
        reference_fault_caught = f.failed > 0 && (f.grad_runs == 0 || f.grad_failed > 0);
      }
      std::fflush(stdout);
    }
  });
  auto on_row = [&](const CheckRow& row) {
    rows.push_back(row);
    write_reports("running", false);
    if (!table_on_stdout) return;
    std::fputs(table_row(row).c_str(), stdout);
    std::fflush(stdout);
  };
  if (table_on_stdout && run_status == "complete") std::fputs(table_header().c_str(), stdout);
  if (run_status == "complete") until_stopped([&] {
    if (slots.empty()) {
      for (const CheckCase& c : cases)
        for (Distribution d : c.distributions) {
          throw_if_stopped();
          unsupported += run_case(c.problem, c.passes, d, c.fp8, set.kernels, s, *ex, on_row);
        }
    } else {
      unsupported += run_on_devices(cases, set.kernels, s, slots, on_row);
    }
    throw_if_stopped();  // a stop during the last case
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  write_reports(run_status, true);

  size_t failed = 0, refused = 0;
  for (const auto& row : rows) {
    if (row.result.status == Status::fail || row.result.status == Status::error) ++failed;
    if (row.result.status == Status::unsupported) ++refused;  // e.g. FP8 settings a kernel does not take
  }
  fmt::print(table_on_stdout ? stdout : stderr,
             "\n{} rows in {:.1f} s: {} passed, {} failed or errored{}; {} kernel x case pairs skipped "
             "(shape not supported by the kernel)\n",
             rows.size(), seconds, rows.size() - failed - refused, failed,
             refused ? fmt::format(", {} unsupported (inputs the kernel refused)", refused) : "", unsupported);
  if (!sticky.empty()) {
    cli::print_error(kProg, sticky);
    return cli::kExitFailure;
  }
  if (run_status == "interrupted") {
    cli::print_note(kProg, fmt::format("interrupted: {} rows checked before the stop", rows.size()));
    return cli::kExitInterrupted;
  }
  if (run_status == "timeout") {
    cli::print_error(kProg, fmt::format("timeout: --timeout {} s passed; {} rows checked before it", o.timeout,
                                        rows.size()));
    return cli::kExitTimeout;
  }
  if (reference_failed > 0)
    cli::print_error(kProg, fmt::format("the GPU reference disagrees with Eigen on {} runs (O and LSE, or the gradients; seed {}): the rows' "
                                        "every-row figures cannot be trusted",
                                        reference_failed, s.seed));
  if (o.self_test) {
    const bool kernels_ok = report_self_test(rows, ex->backend());
    if (ex->backend() == Backend::cuda)
      fmt::print("GPU reference planted fault mask_offset: {}\n",
                 reference_fault_caught ? "caught by the cross-check against Eigen" : "NOT CAUGHT");
    return kernels_ok && reference_fault_caught && reference_failed == 0 ? cli::kExitOk : cli::kExitFailure;
  }
  if (failed == 0 && reference_failed == 0) return cli::kExitOk;
  if (failed == 0) return cli::kExitFailure;
  fmt::print("\nFailures (seed {}), each replayed by the command under it:\n", s.seed);
  for (const auto& row : rows) {
    const Result& r = row.result;
    if (r.status != Status::fail && r.status != Status::error) continue;
    fmt::print("- {} on '{}' ({}): {}\n  {}\n", r.kernel, r.problem.describe(), to_string(row.distribution()),
               r.reason, replay_command(program, row, s, kDefaultMaxCheckRows));
  }
  std::fflush(stdout);
  cli::print_error(kProg, fmt::format("{} of {} rows failed validation or errored (seed {})", failed,
                                      rows.size(), s.seed));
  return cli::kExitFailure;
}

}  // namespace

}  // namespace fa::check

int main(int argc, char** argv) {
  using namespace fa::check;
  fa::cli::set_command_line(argc, argv);
  CLI::App app{"fa-check: validate attention kernels against a float64 reference over a suite of shapes "
               "and input distributions (no timing)",
               "fa-check"};
  app.set_version_flag("--version", std::string(FA_BENCH_VERSION) + " (" + FA_BENCH_GIT_COMMIT + ")");
  Options o;
  app.add_option("--config", o.config,
                 "Check suite (default configs/check.json). Example: --config configs/check.json")
      ->type_name("FILE");
  app.add_option("--kernels", o.kernels,
                 "Kernel names, families, back ends or globs, as in the sweep (default: every kernel of the "
                 "back end in use). Example: --kernels cpu.fa2.64x64,cpu.standard")
      ->type_name("SELECTION");
  app.add_flag("--quick", o.quick, "Only the suite's quick cases (seconds on a CPU)");
  app.add_option("--backend", o.backend,
                 "auto (cuda when a device is present, else cpu; says which on stderr), cpu or cuda")
      ->type_name("auto|cpu|cuda");
  app.add_option("--case", o.case_text,
                 "Run one shape instead of the suite, written as the table prints it. "
                 "Example: --case 'b1 h4/2 q257 k300 d64 bf16 causal'")
      ->type_name("SHAPE");
  app.add_option("--distribution", o.distribution,
                 "Inputs for --case (default normal), or only the suite's cases with this distribution: "
                 "normal, uniform, adversarial, outliers")
      ->type_name("NAME");
  app.add_option("--fp8-scaling", o.fp8_scaling,
                 "How an e4m3 --case's inputs are quantized (default tensor), or only the suite's e4m3 cases "
                 "quantized this way: one descale per tensor, per (batch, head) or per block of 128 rows")
      ->type_name("tensor|head|block");
  app.add_flag("--fp8-hadamard", o.fp8_hadamard,
               "An e4m3 --case's Q and K rotated by the randomized Hadamard transform before quantization, or "
               "only the suite's e4m3 cases that are");
  FlagTexts texts;
  app.add_option("--seed", texts.seed, "Input seed (default: fresh, printed). Example: --seed 123")->type_name("UINT64");
  app.add_option("--max-check-rows", texts.max_check_rows,
                 "Compare every query row up to this seqlen_q (and, for a backward, every key column up to "
                 "this seqlen_k); beyond it, exactly this many (a seeded sample with block edges) (default 2048)")
      ->type_name("N");
  app.add_flag("--exact-check", o.exact_check,
               "Compare every query row (and, for a backward, every key column), whatever --max-check-rows says");
  app.add_option("--threads", texts.threads, "CPU back end: threads for the reference and CPU kernels (0 = all)")
      ->type_name("N");
  app.add_option("--timeout", texts.timeout,
                 "Wall-clock limit of the whole check, in seconds: when it passes, the row in progress is "
                 "abandoned, the files keep every finished row (run_status 'timeout'), exit code 124")
      ->type_name("SECONDS");
  app.add_option("--devices", texts.devices,
                 "Check on these devices, one worker each: cases are dealt in order to whichever device is "
                 "free, rows written in the order one device gives them, each with its device. all: every "
                 "device this process sees. cuda only (the cpu back end is one device, 0). Default: device 0, "
                 "rows without a device. Example: --devices 0,1")
      ->type_name("LIST|all");
  app.add_option("--json", o.json, "Write every row with metadata to this JSON file")->type_name("FILE");
  app.add_option("--csv", o.csv, "Write every row to this CSV file")->type_name("FILE");
  app.add_flag("--self-test", o.self_test,
               "Run cpu.fa2.64x64, cpu.fa2.bwd.64x64 and copies of them with planted bugs over the suite (with "
               "--backend cuda: fa3's bf16 head_dim 128 backward and its planted copies, in builds with fa3 at "
               "head_dim 128); exit 0 only when the clean kernels pass every case and every planted bug fails at "
               "least one");
  app.footer("Exit codes: 0 every row passed (or --self-test caught every fault), 1 a failure, 2 bad input "
             "(nothing run or written), 124 --timeout passed, 130 interrupted.\n"
             "A failing row prints the command that replays it. Rule and floors: docs/CHECK.md.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    fa::cli::print_parse_error("fa-check", e.what());
    return fa::cli::kExitUsage;
  }
  const std::string program = argv[0];
  return fa::cli::run_guarded("fa-check", [&] {
    parse_flags(app, texts, o);
    return run(o, program);
  });
}
