#include "compare/compare.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

namespace fa {

std::string_view to_string(Verdict v) {
  switch (v) {
    case Verdict::faster: return "faster";
    case Verdict::slower: return "slower";
    case Verdict::same: return "same";
    case Verdict::ambiguous: return "ambiguous";
    case Verdict::untimed: return "untimed";
  }
  return "?";
}

namespace {

// Relative half-width of a timing's central 80% ((p90 - p10) / 2 / median).
double spread(const TimingSummary& t) {
  if (t.median_ms <= 0) return 0;
  return std::max(0.0, (t.p90_ms - t.p10_ms) / 2 / t.median_ms);
}

// Ranks statuses so "got worse" is a comparison: ok best.
int status_rank(Status s) {
  switch (s) {
    case Status::ok: return 0;
    case Status::unsupported: return 1;
    case Status::oom: return 2;
    case Status::fail: return 3;
    case Status::error: return 4;
  }
  return 5;
}

// A slowdown is called only when the evidence holds on every count: both sides
// at full clock, timed often enough and settled (spread at most
// kMaxSpreadForVerdict), the median ratio beyond both the threshold and the
// pair's noise, the current's 10th percentile beyond the baseline's 90th
// (outside both spreads), and the fastest sample slower by the threshold too.
// On a host whose load changes between runs, medians move by factors while each
// run's own spread stays small; these together keep identical reruns from being
// called slower (docs/COMPARE.md has the measured rate). Anything between is
// ambiguous, never slower.
void judge_timing(PairReport& p, const CompareOptions& o) {
  const Result& b = *p.baseline;
  const Result& c = *p.current;
  // A row without a usable number for the chosen metric is untimed: a zero
  // baseline TFLOP/s (a file without it) must not read as "infinitely faster".
  if (o.deterministic_only || !b.timing || !c.timing || b.timing->median_ms <= 0 ||
      c.timing->median_ms <= 0 || (o.metric == CompareMetric::tflops && (b.tflops <= 0 || c.tflops <= 0))) {
    p.verdict = Verdict::untimed;
    return;
  }
  const TimingSummary& tb = *b.timing;
  const TimingSummary& tc = *c.timing;
  // Oriented so ratio > 1 means slower, for either metric.
  p.ratio = o.metric == CompareMetric::latency ? tc.median_ms / tb.median_ms : b.tflops / c.tflops;
  p.noise = spread(tb) + spread(tc);
  const double threshold = std::max(o.max_slowdown, p.noise);
  if (b.throttled() || c.throttled()) {
    // A clock cap slows a row by up to a fifth whatever the kernel does; such a
    // row says nothing about the code (the runner marks it, measure/throttle.h).
    p.verdict = Verdict::ambiguous;
    p.why = fmt::format("timed below full clock in {} (reason: throttled); rerun to judge",
                        b.throttled() && c.throttled() ? "both runs" : b.throttled() ? "the baseline" : "the current run");
  } else if (std::min(tb.samples, tc.samples) < kMinSamplesForVerdict) {
    p.verdict = Verdict::ambiguous;
    p.why = fmt::format("{} and {} samples; a verdict needs {} on each side", tb.samples, tc.samples,
                        kMinSamplesForVerdict);
  } else if (std::max(spread(tb), spread(tc)) > kMaxSpreadForVerdict) {
    p.verdict = Verdict::ambiguous;
    p.why = fmt::format("spread ±{:.0f}% / ±{:.0f}%: the timing did not settle", spread(tb) * 100,
                        spread(tc) * 100);
  } else if (p.ratio - 1 > threshold && tc.p10_ms > tb.p90_ms && tc.min_ms > tb.min_ms * (1 + o.max_slowdown)) {
    p.verdict = Verdict::slower;
  } else if (1 / p.ratio - 1 > threshold && tb.p10_ms > tc.p90_ms && tb.min_ms > tc.min_ms * (1 + o.max_slowdown)) {
    p.verdict = Verdict::faster;
  } else if (std::abs(p.ratio - 1) <= o.max_slowdown && p.noise <= o.max_slowdown) {
    p.verdict = Verdict::same;  // a real change of max_slowdown would have shown
  } else {
    p.verdict = Verdict::ambiguous;
    p.why = std::abs(p.ratio - 1) <= p.noise ? fmt::format("within the noise ±{:.1f}%", p.noise * 100)
                                             : "the median moved, but the spreads or the fastest samples overlap";
  }
  if (p.verdict == Verdict::slower)
    p.problems.push_back(fmt::format("{:.1f}% slower ({} {:.4g} -> {:.4g} ms, fastest {:.4g} -> {:.4g} ms), beyond "
                                     "noise ±{:.1f}% and both runs' spreads",
                                     (p.ratio - 1) * 100,
                                     o.metric == CompareMetric::latency ? "median" : "via TFLOP/s", tb.median_ms,
                                     tc.median_ms, tb.min_ms, tc.min_ms, p.noise * 100));
}

// P(X >= k) for X ~ Binomial(n, 1/2).
double sign_test_p(int k, int n) {
  double p = 0;
  for (int i = k; i <= n; ++i) p += std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) -
                                             n * std::log(2.0));
  return std::min(1.0, p);
}

// Noise a single pair cannot see through may still hide a slowdown of the whole
// run (every kernel 3x slower with wide spreads): a sign test over every timed
// pair at full clock, counting those slower and faster by more than max_slowdown.
std::string judge_run(const std::vector<PairReport>& pairs, const CompareOptions& o) {
  std::vector<double> ratios;
  for (const auto& p : pairs)
    if (p.ratio > 0 && !p.baseline->throttled() && !p.current->throttled()) ratios.push_back(p.ratio);
  if (int(ratios.size()) < kMinPairsForRunTest) return "";
  int up = 0, down = 0;
  for (double r : ratios) {
    up += r > 1 + o.max_slowdown;
    down += r < 1 / (1 + o.max_slowdown);
  }
  std::nth_element(ratios.begin(), ratios.begin() + ratios.size() / 2, ratios.end());
  const double median = ratios[ratios.size() / 2];
  const double pv = sign_test_p(up, up + down);
  if (median <= 1 + o.max_slowdown || pv >= kRunTestAlpha) return "";
  return fmt::format("the run as a whole is slower: median ratio {:.3f} over {} timed pairs, {} slower and {} faster "
                     "by more than {:.1f}% (sign test p = {:.2g})",
                     median, ratios.size(), up, down, o.max_slowdown * 100, pv);
}

// The kernel, and the pass where it is not the forward (a bwd and a fwd+bwd
// row share their kernel).
std::string row_label(const Result& r) {
  return r.pass == Pass::fwd ? r.kernel : fmt::format("{} ({})", r.kernel, to_string(r.pass));
}

// The shape column: the problem, and the inputs where the row names them (fa-check).
std::string shape_label(const Result& r) {
  return r.distribution ? fmt::format("{}, {}", r.problem.describe(), to_string(*r.distribution))
                        : r.problem.describe();
}

// A row's key with its FP8 settings left out: what finds the row of the other
// run that was quantized otherwise, to say so rather than only "missing".
std::string key_without_fp8(Result r) {
  r.fp8.reset();
  return r.key();
}

void judge_correctness(PairReport& p, const CompareOptions& o, int& other_inputs, int& other_rows) {
  const Result& b = *p.baseline;
  const Result& c = *p.current;
  if (status_rank(c.status) > status_rank(b.status))
    p.problems.push_back(fmt::format("status {} -> {}{}", to_string(b.status), to_string(c.status),
                                     c.reason.empty() ? "" : " (" + c.reason + ")"));
  // A max error is a property of the inputs as much as of the kernel: under
  // another seed every kernel's error moves together, by tens of percent. Such
  // a pair's errors are judged by each row's own status against its own
  // tolerance (above), not against each other.
  // Likewise a max over other rows: a run that checked every row finds errors
  // that a sampled run never looked at (1.5-2.6x larger at 16K on the H200).
  const bool same_inputs = b.seed == c.seed;
  const bool same_rows = b.errors && c.errors && b.errors->rows_checked == c.errors->rows_checked &&
                         b.errors->sampled == c.errors->sampled;
  if (!same_inputs && b.errors && c.errors) ++other_inputs;
  else if (!same_rows && b.errors && c.errors) ++other_rows;
  if (same_inputs && same_rows) {
    double allowed = b.errors->o_max_abs * (1 + o.max_error_growth) + o.error_floor;
    if (c.errors->o_max_abs > allowed || (std::isnan(c.errors->o_max_abs) && !std::isnan(b.errors->o_max_abs)))
      p.problems.push_back(fmt::format("O max abs error {:.3g} -> {:.3g} (allowed {:.3g})",
                                       b.errors->o_max_abs, c.errors->o_max_abs, allowed));
    double lse_allowed = b.errors->lse_max_abs * (1 + o.max_error_growth) + o.error_floor;
    if (c.errors->lse_max_abs > lse_allowed)
      p.problems.push_back(fmt::format("LSE max abs error {:.3g} -> {:.3g} (allowed {:.3g})",
                                       b.errors->lse_max_abs, c.errors->lse_max_abs, lse_allowed));
    if (c.errors->nonfinite > b.errors->nonfinite)
      p.problems.push_back(fmt::format("non-finite outputs {} -> {}", b.errors->nonfinite, c.errors->nonfinite));
  } else if (b.errors && !c.errors && c.status == Status::ok) {
    p.problems.push_back("errors were measured in the baseline but not now");
  }
  if (o.deterministic_only && (b.traffic_model.read_bytes != c.traffic_model.read_bytes ||
                               b.traffic_model.write_bytes != c.traffic_model.write_bytes))
    p.problems.push_back(fmt::format("modelled bytes changed {} -> {}", b.traffic_model.total(),
                                     c.traffic_model.total()));
}

// A row's key with its kernel name replaced by its family and back end: the
// same measurement under another variant of the family (--block auto's tile for
// a length changed between the runs, say).
std::string family_key(Result r) {
  r.kernel = fmt::format("{}/{}", to_string(r.family), to_string(r.backend));
  return r.key();
}

}  // namespace

CompareReport compare_results(const std::vector<Result>& baseline, const std::vector<Result>& current,
                              const CompareOptions& o) {
  std::map<std::string, const Result*> cur, cur_any_fp8;
  for (const Result& r : current) {
    cur[r.key()] = &r;
    if (r.fp8) cur_any_fp8[key_without_fp8(r)] = &r;
  }
  std::map<std::string, bool> seen;
  // Rows without an exact partner pair across a kernel name change where their
  // family, back end, problem and pass leave exactly one such row on each side.
  std::map<std::string, int> lone_baseline;
  std::map<std::string, std::vector<const Result*>> lone_current;
  for (const Result& b : baseline)
    if (!cur.count(b.key())) ++lone_baseline[family_key(b)];
  {
    std::map<std::string, bool> in_baseline;
    for (const Result& b : baseline) in_baseline[b.key()] = true;
    for (const Result& c : current)
      if (!in_baseline.count(c.key())) lone_current[family_key(c)].push_back(&c);
  }
  CompareReport rep;
  for (const Result& b : baseline) {
    PairReport p;
    p.key = b.key();
    p.kernel = row_label(b);
    p.shape = shape_label(b);
    p.baseline = b;
    auto it = cur.find(p.key);
    const Result* partner = it != cur.end() ? it->second : nullptr;
    if (!partner) {
      const std::string fk = family_key(b);
      const auto lone = lone_current.find(fk);
      if (lone_baseline[fk] == 1 && lone != lone_current.end() && lone->second.size() == 1) {
        partner = lone->second.front();
        p.kernel = fmt::format("{} → {}", row_label(b), row_label(*partner));
        ++rep.renamed;
      }
    }
    if (!partner) {
      // Inputs quantized another way are another measurement: never paired.
      const auto other = b.fp8 ? cur_any_fp8.find(key_without_fp8(b)) : cur_any_fp8.end();
      p.problems.push_back(other == cur_any_fp8.end()
                               ? std::string("missing from the current results")
                               : fmt::format("missing from the current results, which hold the row made with other "
                                             "FP8 settings ({} -> {}): rows of inputs quantized otherwise are not "
                                             "compared",
                                             describe(b.fp8), describe(other->second->fp8)));
      ++rep.missing;
    } else {
      p.current = *partner;
      seen[partner->key()] = true;
      judge_correctness(p, o, rep.other_inputs, rep.other_rows);
      judge_timing(p, o);
    }
    switch (p.verdict) {
      case Verdict::faster: ++rep.faster; break;
      case Verdict::slower: ++rep.slower; break;
      case Verdict::same: ++rep.same; break;
      case Verdict::ambiguous: ++rep.ambiguous; break;
      case Verdict::untimed: break;
    }
    if (!p.problems.empty()) ++rep.regressions;
    rep.pairs.push_back(std::move(p));
  }
  for (const Result& c : current) {
    if (seen.count(c.key())) continue;
    PairReport p;
    p.key = c.key();
    p.kernel = row_label(c);
    p.shape = shape_label(c);
    p.current = c;
    ++rep.added;
    rep.pairs.push_back(std::move(p));
  }
  if (!o.deterministic_only) rep.run_problem = judge_run(rep.pairs, o);
  return rep;
}

std::string compare_markdown(const CompareReport& r, const CompareOptions& o, const std::string& bname,
                             const std::string& cname) {
  std::string s = fmt::format("## fa-bench compare: {}\n\n`{}` (baseline) vs `{}` (current)\n\n",
                              r.failed() ? "REGRESSION" : "ok", bname, cname);
  s += fmt::format("{} pairs: {} regressions, {} slower, {} faster, {} same, {} ambiguous, {} missing, {} new. ",
                   r.pairs.size(), r.regressions, r.slower, r.faster, r.same, r.ambiguous, r.missing, r.added);
  if (r.renamed > 0)
    s += fmt::format("{} pairs changed kernel (`baseline → current`: the one row of their family at that problem on "
                     "each side, e.g. another tile chosen by --block auto). ",
                     r.renamed);
  if (!r.run_problem.empty()) s += fmt::format("**Regression: {}.** ", r.run_problem);
  if (r.other_inputs > 0)
    s += fmt::format("{} pairs ran on other inputs (another seed): their errors are judged by each row's status "
                     "against its own tolerance, not against each other. ",
                     r.other_inputs);
  if (r.other_rows > 0)
    s += fmt::format("{} pairs checked other rows (sampled in one run, more or every row in the other): their errors "
                     "are judged by each row's status against its own tolerance, not against each other. ",
                     r.other_rows);
  s += o.deterministic_only
           ? "Deterministic fields only (status, errors, modelled bytes); timings not compared.\n\n"
           : fmt::format("Metric {}, slowdown threshold {:.1f}% beyond the pair's noise and both runs' spreads "
                         "(docs/COMPARE.md); error growth allowed {:.0f}%.\n\n",
                         o.metric == CompareMetric::latency ? "latency" : "tflops", o.max_slowdown * 100,
                         o.max_error_growth * 100);
  s += "| kernel | shape | verdict | ratio | noise | baseline ms | current ms | problems, or why ambiguous |\n";
  s += "|---|---|---|---|---|---|---|---|\n";
  // Regressions first, then the rest in file order.
  std::vector<const PairReport*> order;
  for (const auto& p : r.pairs) if (!p.problems.empty()) order.push_back(&p);
  for (const auto& p : r.pairs) if (p.problems.empty()) order.push_back(&p);
  auto ms = [](const std::optional<Result>& x) {
    return x && x->timing ? fmt::format("{:.4g}", x->timing->median_ms) : std::string("-");
  };
  for (const PairReport* p : order) {
    std::string verdict = !p->current ? "missing" : !p->baseline ? "new" : std::string(to_string(p->verdict));
    std::string probs;
    for (const auto& x : p->problems) probs += (probs.empty() ? "" : "; ") + x;
    if (probs.empty() && !p->why.empty()) probs = p->why;
    s += fmt::format("| {} | {} | {}{} | {} | {} | {} | {} | {} |\n", p->kernel, p->shape,
                     p->problems.empty() ? "" : "**", verdict + (p->problems.empty() ? "" : "**"),
                     p->ratio > 0 ? fmt::format("{:.3f}", p->ratio) : "-",
                     p->noise > 0 ? fmt::format("±{:.1f}%", p->noise * 100) : "-", ms(p->baseline),
                     ms(p->current), probs.empty() ? "" : probs);
  }
  return s;
}

}  // namespace fa
