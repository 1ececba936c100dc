// The regression gate: pair two result sets row by row and give each pair a
// noise-aware verdict. The rule is stated in docs/COMPARE.md.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"

namespace fa {

enum class Verdict { faster, slower, same, ambiguous, untimed };
std::string_view to_string(Verdict);

enum class CompareMetric { latency, tflops };

struct CompareOptions {
  double max_slowdown = 0.05;      // a slowdown beyond this AND beyond noise fails (docs/COMPARE.md)
  double max_error_growth = 0.25;  // O max abs error may grow by this fraction ...
  double error_floor = 1e-6;       // ... or by this much absolutely, before it fails
  CompareMetric metric = CompareMetric::latency;
  bool deterministic_only = false; // compare status, errors, modelled bytes; no timing
};

// The verdict's thresholds besides the options (docs/COMPARE.md states the rule).
constexpr int kMinSamplesForVerdict = 10;   // fewer samples on a side: ambiguous
constexpr double kMaxSpreadForVerdict = 0.25;  // a side spreading more: its timing did not settle
constexpr int kMinPairsForRunTest = 10;    // the whole-run test needs this many timed pairs
constexpr double kRunTestAlpha = 1e-3;     // sign-test p-value below which the run is slower

struct PairReport {
  std::string key;
  std::string kernel, shape;
  // Copies, so the report outlives the vectors it was made from.
  std::optional<Result> baseline;  // nullopt: new in current
  std::optional<Result> current;   // nullopt: missing from current
  Verdict verdict = Verdict::untimed;
  double ratio = 0;   // current / baseline of the metric, oriented so > 1 is slower
  double noise = 0;   // the pair's noise band (relative)
  std::string why;    // for ambiguous: what kept the pair from a verdict
  std::vector<std::string> problems;  // regressions found in this pair; empty = none
};

struct CompareReport {
  std::vector<PairReport> pairs;
  int regressions = 0, faster = 0, slower = 0, same = 0, ambiguous = 0, missing = 0, added = 0;
  // Pairs made across a kernel name change: a baseline row without an exact
  // partner and a current row without one, alone of their family, back end,
  // problem and pass on each side (docs/COMPARE.md).
  int renamed = 0;
  int other_inputs = 0;  // pairs with errors on both sides but different seeds: errors not compared
  int other_rows = 0;    // same seed, but another set of rows checked (rows_checked, sampled): errors not compared
  // Non-empty when the run as a whole is slower (a sign test over every timed
  // pair), even where no single pair could tell: a regression too.
  std::string run_problem;
  bool failed() const { return regressions > 0 || !run_problem.empty(); }
};

CompareReport compare_results(const std::vector<Result>& baseline, const std::vector<Result>& current,
                              const CompareOptions&);

std::string compare_markdown(const CompareReport&, const CompareOptions&,
                             const std::string& baseline_name, const std::string& current_name);

}  // namespace fa
