// `fa-bench compare BASELINE.json CURRENT.json`: the CI regression gate.
// Exit 0: no regression (improvements are reported, not failures); 1: a pair
// slower beyond threshold and noise, a status or error got worse, or a baseline
// row is missing; 2: unreadable or incompatible files.
#include <memory>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/common/exit_codes.h"
#include "cli/fa_bench/compare_options.h"
#include "cli/fa_bench/subcommand.h"
#include "compare/compare.h"
#include "core/errors.h"
#include "report/output_path.h"
#include "report/result_json.h"
#include "sweep/values.h"

namespace fa::cli {

namespace {

std::string device_of(const nlohmann::json& meta, const std::string& path) {
  if (!meta.contains("device")) return "";
  const auto& dev = meta["device"];
  if (!dev.is_object() || (dev.contains("name") && !dev["name"].is_string()))
    throw UsageError(fmt::format("{}: metadata.device must be an object whose name is a string, got {}", path,
                                 dev.dump().substr(0, 60)));
  return dev.contains("name") ? dev["name"].get<std::string>() : "";
}

int run_compare(CompareCliOptions o) {
  if (o.metric == "latency") o.rule.metric = CompareMetric::latency;
  else if (o.metric == "tflops") o.rule.metric = CompareMetric::tflops;
  else throw UsageError(fmt::format("--metric: unknown '{}'; expected latency or tflops", o.metric));
  parse_nonempty(o.baseline, "compare: BASELINE", "a results file");
  parse_nonempty(o.current, "compare: CURRENT", "a results file");
  if (o.md) check_output_paths({{"--md", *o.md}}, {{"BASELINE", o.baseline}, {"CURRENT", o.current}});

  nlohmann::json bmeta, cmeta;
  // read_results_json throws UsageError for unreadable files and other schema versions.
  auto base = read_results_json(o.baseline, &bmeta);
  auto cur = read_results_json(o.current, &cmeta);
  check_unique_keys(base, o.baseline);
  check_unique_keys(cur, o.current);
  std::string bdev = device_of(bmeta, o.baseline), cdev = device_of(cmeta, o.current);
  if (bdev != cdev && !o.allow_device_mismatch)
    throw UsageError(fmt::format("the files come from different devices ('{}' vs '{}'); "
                                 "timings are not comparable (--allow-device-mismatch to compare anyway)",
                                 bdev, cdev));
  CompareReport rep = compare_results(base, cur, o.rule);
  std::string md = compare_markdown(rep, o.rule, o.baseline, o.current);
  fmt::print("{}", md);
  if (o.md && *o.md != "-") write_output(*o.md, md);
  if (!rep.run_problem.empty()) print_error("fa-bench", rep.run_problem);
  return rep.failed() ? kExitFailure : kExitOk;
}

}  // namespace

Subcommand setup_compare(CLI::App& parent) {
  auto o = std::make_shared<CompareCliOptions>();
  CLI::App* sub = parent.add_subcommand(
      "compare",
      "Compare two sweep results (JSON) pair by pair with a noise-aware verdict; exit 1 on a regression. "
      "Example: fa-bench compare results/base.json out/now.json --md summary.md");
  sub->add_option("baseline", o->baseline, "Baseline results (fa-bench sweep --json)")->required();
  sub->add_option("current", o->current, "Current results (fa-bench sweep --json)")->required();
  sub->add_option("--max-slowdown", o->max_slowdown,
                  "A pair fails when slower by more than this fraction AND beyond both sides' noise "
                  "(default 0.05 = 5%)");
  sub->add_option("--max-error-growth", o->max_error_growth,
                  "A pair fails when its O or LSE max abs error grows by more than this fraction "
                  "(+1e-6 absolute) (default 0.25)");
  sub->add_option("--metric", o->metric, "latency (median ms) or tflops (default latency)");
  sub->add_flag("--deterministic", o->rule.deterministic_only,
                "Compare only deterministic fields (status, errors, modelled bytes), not timings: "
                "for CPU baselines across machines");
  sub->add_flag("--allow-device-mismatch", o->allow_device_mismatch,
                "Compare files recorded on different devices");
  sub->add_option("--md", o->md_text,
                  "Also write the Markdown report to this file (e.g. a CI job summary); - is standard output, "
                  "which shows it anyway");
  return Subcommand{sub, [o, sub] {
                      if (sub->get_option("--md")->count() > 0) o->md = o->md_text;
                      // NaN or inf would switch the gate off silently: only finite fractions pass.
                      if (sub->get_option("--max-slowdown")->count() > 0)
                        o->rule.max_slowdown = parse_real(o->max_slowdown, "--max-slowdown", 0, 100, false);
                      if (sub->get_option("--max-error-growth")->count() > 0)
                        o->rule.max_error_growth =
                            parse_real(o->max_error_growth, "--max-error-growth", 0, 1e6, false);
                      return run_compare(*o);
                    }};
}

}  // namespace fa::cli
