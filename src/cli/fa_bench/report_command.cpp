// `fa-bench report RUN.json [BASELINE.json] --html out.html`: one self-contained
// HTML page of a run (src/report/html_report.h). The figures are scripts/plot.py's,
// run as a child process and inlined as SVG, so the page and `plot.py` draw the
// same figures from one implementation (matplotlib) instead of two. Exit 0 when the
// page is written (a regression against the baseline is highlighted in it; the gate
// is `fa-bench compare`), 1 when plot.py fails, 2 for bad input (nothing written).
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/common/exit_codes.h"
#include "cli/common/source_tree.h"
#include "cli/fa_bench/subcommand.h"
#include "compare/compare.h"
#include "core/errors.h"
#include "report/html_report.h"
#include "report/input_file.h"
#include "report/output_path.h"
#include "report/result_json.h"
#include "sweep/values.h"

extern char** environ;

namespace fa::cli {

namespace {

namespace fs = std::filesystem;

struct ReportOptions {
  std::string run, baseline, html;
  std::string python, plot_script;
  std::string x = "seqlen", series = "kernel", panels = "head_dim,causal,dtype,pass";
  bool no_figures = false;
  bool allow_device_mismatch = false;
};

// The figures in the order the page shows them (scripts/plot.py's FIGURES).
const char* const kFigureOrder[] = {"tflops", "latency", "traffic", "memory", "error", "roofline", "blocks"};

// Runs argv with stdout and stderr into `log` (or /dev/null); the exit status, or -1
// when it could not be started or did not exit normally.
int run_child(const std::vector<std::string>& argv, const std::string& log) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  const std::string out = log.empty() ? "/dev/null" : log;
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// --python, else the first of python3 on PATH and Debian's /usr/bin/python3 that
// imports matplotlib (a pyenv on PATH often lacks it); "" when none does.
std::string find_python(const ReportOptions& o) {
  std::vector<std::string> candidates;
  if (!o.python.empty()) candidates = {o.python};
  else candidates = {"python3", "/usr/bin/python3"};
  for (const auto& p : candidates)
    if (run_child({p, "-c", "import matplotlib"}, "") == 0) return p;
  return "";
}

// --plot-script, else scripts/plot.py in the working directory, else beside the
// build folder the binary is in (as fa-check finds configs/check.json).
std::string find_plot_script(const ReportOptions& o) {
  return o.plot_script.empty() ? cli::find_source_tree_file("scripts/plot.py") : o.plot_script;
}

std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// plot.py's lines that matter to a reader of the page: skipped figures and errors.
std::string plot_log_note(const std::string& log) {
  std::string note, line;
  std::istringstream in(log);
  while (std::getline(in, line))
    if (line.find("plot.py: skipped") != std::string::npos || line.find("plot.py: error") != std::string::npos)
      note += (note.empty() ? "" : " ") + line;
  return note;
}

void make_figures(const ReportOptions& o, const std::string& python, const std::string& script,
                  HtmlReportInput& in) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/fa-bench-report-XXXXXX";
  if (!mkdtemp(pattern.data())) throw std::runtime_error(fmt::format("cannot create a temporary folder {}", pattern));
  const fs::path dir = pattern;
  struct Cleanup {
    fs::path d;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(d, ec);
    }
  } cleanup{dir};
  const std::string log = (dir / "plot.log").string();
  const int rc = run_child({python, script, o.run, "--out", (dir / "fig").string(), "--format", "svg", "--x", o.x,
                            "--series", o.series, "--panels", o.panels},
                           log);
  const std::string text = read_text(log);
  if (rc == 2) throw UsageError(fmt::format("figures: {} refused the run: {}", script, plot_log_note(text)));
  if (rc != 0)
    throw std::runtime_error(fmt::format("figures: {} {} exited {}: {}", python, script, rc, text.substr(0, 2000)));
  for (const char* name : kFigureOrder) {
    for (const auto& file : {fmt::format("{}.svg", name), fmt::format("{}-by-{}.svg", name, o.x)}) {
      const fs::path p = dir / "fig" / file;
      if (fs::exists(p)) in.figures.push_back({name, read_text(p)});
    }
  }
  in.figures_note = plot_log_note(text);
}

std::string ratio_text(const PairReport& p) {
  if (p.verdict == Verdict::ambiguous || p.verdict == Verdict::untimed) return p.why;
  return fmt::format("{:.3f}x the baseline's time (noise band ±{:.1f} %)", p.ratio, 100 * p.noise);
}

void add_comparison(const std::vector<Result>& base, const std::vector<Result>& cur, HtmlReportInput& in) {
  const CompareOptions rule;
  const CompareReport rep = compare_results(base, cur, rule);
  for (const auto& p : rep.pairs) {
    HtmlVerdict v;
    v.verdict = !p.current ? "missing" : !p.baseline ? "new" : std::string(to_string(p.verdict));
    v.detail = !p.current ? "in the baseline, not in the run" : !p.baseline ? "not in the baseline" : ratio_text(p);
    for (const auto& problem : p.problems) v.detail += "; " + problem;
    v.regression = !p.problems.empty();
    in.verdicts[p.key] = v;
  }
  in.compare_summary = fmt::format(
      "{} pairs: {} faster, {} slower, {} the same, {} ambiguous; {} missing from the run, {} new; {} regressions "
      "(default thresholds: {:.0f} % slowdown beyond noise, {:.0f} % error growth){}",
      rep.pairs.size(), rep.faster, rep.slower, rep.same, rep.ambiguous, rep.missing, rep.added, rep.regressions,
      100 * rule.max_slowdown, 100 * rule.max_error_growth, rep.run_problem.empty() ? "" : ". " + rep.run_problem);
  in.compare_failed = rep.failed();
}

std::string device_name(const nlohmann::json& meta) {
  if (!meta.is_object() || !meta.contains("device") || !meta["device"].is_object()) return "";
  const auto& d = meta["device"];
  return d.contains("name") && d["name"].is_string() ? d["name"].get<std::string>() : "";
}

int run_report(const ReportOptions& o) {
  // Every input and the output are checked before anything is read, run or written.
  parse_nonempty(o.run, "report: RUN", "a results file");
  parse_nonempty(o.html, "--html", "an output path");
  std::vector<PathUse> inputs = {{"report: RUN", o.run}};
  if (!o.baseline.empty()) inputs.push_back({"report: BASELINE", o.baseline});
  for (const auto& [flag, v] : {std::pair<const char*, const std::string&>{"--x", o.x}, {"--series", o.series},
                                {"--panels", o.panels}})
    if (v.empty() || v.size() > 200 || v.find_first_not_of("abcdefghijklmnopqrstuvwxyz_,") != std::string::npos)
      throw UsageError(fmt::format("{}: '{}' is not an axis name (or a list of them); see scripts/plot.py --help",
                                   flag, v.substr(0, 60)));
  std::string python, script;
  if (!o.no_figures) {
    script = find_plot_script(o);
    if (script.empty())
      throw UsageError("scripts/plot.py not found in the working directory nor beside the build folder: give "
                       "--plot-script PATH (or --no-figures)");
    check_input_file(script, "--plot-script");
    inputs.push_back({"--plot-script", script});
  }
  check_output_paths({{"--html", o.html}}, inputs);

  nlohmann::json meta, bmeta;
  HtmlReportInput in;
  in.run_path = o.run;
  in.rows = read_results_json(o.run, &meta);  // UsageError for unreadable files and other schemas
  in.metadata = meta;
  if (!o.baseline.empty()) {
    auto base = read_results_json(o.baseline, &bmeta);
    check_unique_keys(base, o.baseline);
    check_unique_keys(in.rows, o.run);
    if (device_name(bmeta) != device_name(meta) && !o.allow_device_mismatch)
      throw UsageError(fmt::format("the files come from different devices ('{}' vs '{}'); timings are not "
                                   "comparable (--allow-device-mismatch to compare anyway)",
                                   device_name(bmeta), device_name(meta)));
    in.baseline_path = o.baseline;
    add_comparison(base, in.rows, in);
  }
  if (o.no_figures) {
    in.figures_note = "no figures: the report was written with --no-figures";
  } else {
    python = find_python(o);
    if (python.empty())
      throw UsageError(fmt::format(
          "figures need matplotlib, and {} does not import it: install python3-matplotlib (Debian/Ubuntu: "
          "apt-get install python3-matplotlib), or give --python PATH, or --no-figures",
          o.python.empty() ? "neither python3 on PATH nor /usr/bin/python3" : o.python));
    make_figures(o, python, script, in);
  }
  write_output(o.html, html_report(in));
  if (o.html != "-")
    fmt::print(stderr, "fa-bench: wrote {} ({} rows, {} figures{})\n", o.html, in.rows.size(), in.figures.size(),
               in.baseline_path.empty() ? "" : in.compare_failed ? ", a regression against the baseline" : ", no regression");
  return kExitOk;
}

}  // namespace

Subcommand setup_report(CLI::App& parent) {
  auto o = std::make_shared<ReportOptions>();
  CLI::App* sub = parent.add_subcommand(
      "report",
      "One self-contained HTML page of a run: metadata, validation summary, figures (scripts/plot.py, needs "
      "python3-matplotlib), the results table and, with a baseline, each row's compare verdict (exit 0 with "
      "regressions shown: fa-bench compare is the gate; 1 when plot.py fails). "
      "Example: fa-bench report out/run.json results/base.json --html out/report.html");
  sub->add_option("run", o->run, "Results of the run (fa-bench sweep --json)")->required();
  sub->add_option("baseline", o->baseline, "Optional baseline results to compare with (as fa-bench compare)");
  sub->add_option("--html", o->html, "The page to write (- for standard output). --html out/report.html")->required();
  sub->add_option("--x", o->x, "Figures' x axis: seqlen, head_dim, batch, block (default seqlen)");
  sub->add_option("--series", o->series, "One line per: kernel, block, dtype, pass (default kernel)");
  sub->add_option("--panels", o->panels, "Panel axes, those that vary (default head_dim,causal,dtype,pass)");
  sub->add_option("--python", o->python,
                  "python3 with matplotlib (default: python3 on PATH, else /usr/bin/python3, the first that has it)");
  sub->add_option("--plot-script", o->plot_script,
                  "scripts/plot.py (default: in the working directory, else beside the binary's build folder)");
  sub->add_flag("--no-figures", o->no_figures, "Write the page without figures (no python needed)");
  sub->add_flag("--allow-device-mismatch", o->allow_device_mismatch, "Compare files recorded on different devices");
  return Subcommand{sub, [o, sub] {
                      // Given but empty is an error, not the default.
                      for (const char* flag : {"--python", "--plot-script"})
                        if (sub->get_option(flag)->count() > 0)
                          parse_nonempty(flag == std::string("--python") ? o->python : o->plot_script, flag,
                                         flag == std::string("--python") ? "a python3 program" : "a file");
                      return run_report(*o);
                    }};
}

}  // namespace fa::cli
