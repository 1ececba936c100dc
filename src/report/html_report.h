// `fa-bench report`: one self-contained HTML page of a run: its metadata, a
// validation summary, the comparison with a baseline (verdicts highlighted), the
// figures (inline SVG, made by scripts/plot.py) and the results table (the
// Markdown table's cells). Nothing in the page is fetched: no script, no style
// sheet, no image outside the file.
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"

namespace fa {

struct HtmlFigure {
  std::string name;  // "tflops", "roofline": the figure's id in the page (fig-<name>)
  std::string svg;   // an SVG document; its XML prolog is dropped when inlined
};

// One row's comparison with the baseline, as the compare layer judged it.
struct HtmlVerdict {
  std::string verdict;  // faster, slower, same, ambiguous, untimed, missing, new
  std::string detail;   // ratio and noise, or why no verdict, and any regression
  bool regression = false;
};

struct HtmlReportInput {
  std::string run_path;
  nlohmann::json metadata;  // the run's metadata object (docs/OUTPUTS.md)
  std::vector<Result> rows;
  std::string baseline_path;  // empty: no comparison
  std::string compare_summary;  // the comparison's counts and run-level finding
  bool compare_failed = false;
  std::map<std::string, HtmlVerdict> verdicts;  // by Result::key(); baseline rows missing in the run too
  std::vector<HtmlFigure> figures;
  std::string figures_note;  // why figures are missing or what was skipped; empty when none
};

std::string html_escape(const std::string&);
std::string html_report(const HtmlReportInput&);

}  // namespace fa
