// `fa-bench merge FILES...`: the files of one sweep run in shards (--shard K/N)
// or resumed pieces, joined into one result with the row set of an unsharded
// run. Every check (outputs, each file, the pieces against each other) passes
// before anything is written; a refusal is exit 2 with nothing created or changed.
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>

#include <fmt/format.h>

#include "cli/common/command_line.h"
#include "cli/common/exit_codes.h"
#include "cli/fa_bench/merge_options.h"
#include "cli/fa_bench/subcommand.h"
#include "core/errors.h"
#include "report/output_path.h"
#include "report/result_json.h"
#include "report/results_files.h"
#include "sweep/merge.h"
#include "sweep/values.h"

namespace fa::cli {

namespace {

constexpr const char* kProg = "fa-bench";

int run_merge(const MergeCliOptions& o) {
  std::vector<PathUse> outputs, inputs;
  for (const std::string& f : o.files) inputs.push_back({"FILES", parse_nonempty(f, "merge: FILES", "a results file")});
  for (size_t i = 0; i < o.files.size(); ++i)
    for (size_t j = 0; j < i; ++j) {
      std::error_code ec;  // a file that does not exist is named by the reader below
      if (std::filesystem::equivalent(o.files[j], o.files[i], ec))
        throw UsageError(fmt::format("merge: '{}' and '{}' are the same file; expected each file once",
                                     o.files[j], o.files[i]));
    }
  if (o.json) outputs.push_back({"--json", parse_nonempty(*o.json, "--json", "a file name, or - for standard output")});
  if (o.csv) outputs.push_back({"--csv", parse_nonempty(*o.csv, "--csv", "a file name, or - for standard output")});
  if (o.md) outputs.push_back({"--md", parse_nonempty(*o.md, "--md", "a file name, or - for standard output")});
  check_output_paths(outputs, inputs);

  std::vector<MergePiece> pieces;
  for (const std::string& f : o.files) {
    MergePiece p;
    p.path = f;
    p.rows = read_results_json(f, &p.metadata);
    pieces.push_back(std::move(p));
  }
  MergeOptions mo;
  mo.complete = o.complete;
  mo.allow_mixed_devices = o.allow_mixed_devices;
  mo.command_line = command_line();
  MergedResults merged = merge_results(pieces, mo);

  ResultsFiles files(o.json.value_or(""), o.csv.value_or(""), o.md.value_or(""), merged.metadata, merged.rows);
  files.finish(merged.run_status);
  print_note(kProg, fmt::format("merged {} files: {} rows, {}", pieces.size(), merged.rows.size(),
                                merged.run_status));
  // As for a sweep, the exit code speaks for the whole result set.
  for (const Result& r : merged.rows)
    if (r.status == Status::fail || r.status == Status::error) {
      print_error(kProg, "at least one kernel failed validation or errored (see status)");
      return kExitFailure;
    }
  return kExitOk;
}

}  // namespace

Subcommand setup_merge(CLI::App& parent) {
  auto o = std::make_shared<MergeCliOptions>();
  CLI::App* sub = parent.add_subcommand(
      "merge",
      "Join the results files of one sweep's shards (--shard K/N) or resumed pieces into one result. "
      "Example: fa-bench merge out/shard-*-of-4.json --complete --json out/run.json --csv out/run.csv");
  sub->add_option("files", o->files, "Results files (fa-bench sweep --json) of one sweep")->required();
  sub->add_option("--json", o->json_text, "Write the merged results with metadata to this JSON file. "
                                          "Example: --json out/run.json")
      ->type_name("FILE");
  sub->add_option("--csv", o->csv_text, "Write the merged rows as CSV. Example: --csv out/run.csv")->type_name("FILE");
  sub->add_option("--md", o->md_text, "Write the merged rows as a Markdown table. Example: --md out/run.md")
      ->type_name("FILE");
  sub->add_flag("--complete", o->complete,
                "Refuse (exit 2, nothing written) unless every row of the sweep's plan is there");
  sub->add_flag("--allow-mixed-devices", o->allow_mixed_devices,
                "Merge files recorded on devices of different names");
  sub->footer(
      "Refused (exit 2, nothing written): files of different plans, settings, seeds, back ends or fa-bench "
      "builds; of different devices without --allow-mixed-devices; a row twice; with --complete, a row missing.");
  return Subcommand{sub, [o, sub] {
                      if (sub->get_option("--json")->count() > 0) o->json = o->json_text;
                      if (sub->get_option("--csv")->count() > 0) o->csv = o->csv_text;
                      if (sub->get_option("--md")->count() > 0) o->md = o->md_text;
                      return run_merge(*o);
                    }};
}

}  // namespace fa::cli
