// compare_results, the regression gate's verdicts (rule in docs/COMPARE.md):
// slower only beyond both the pair's noise and --max-slowdown; a worse status,
// error growth, new non-finite values, a missing row or (deterministic mode)
// changed modelled bytes are regressions; faster and new rows are not.
#include <gtest/gtest.h>

#include "compare/compare.h"

namespace fa {
namespace {

// A timed ok row whose samples spread +-`spread` (relative) around `median_ms`.
Result row(const std::string& kernel, double median_ms, double spread = 0.01, int seqlen = 128) {
  Result r;
  r.kernel = kernel;
  r.problem.seqlen_q = r.problem.seqlen_k = seqlen;
  r.status = Status::ok;
  TimingSummary t;
  t.median_ms = median_ms;
  t.p10_ms = median_ms * (1 - spread);
  t.p90_ms = median_ms * (1 + spread);
  t.min_ms = t.p10_ms;
  t.samples = 20;
  r.timing = t;
  r.tflops = 1.0 / median_ms;
  ErrorMetrics e;
  e.o_max_abs = 1e-3;
  e.lse_max_abs = 1e-5;
  r.errors = e;
  r.tolerances = Tolerances{4e-3, 0};
  r.traffic_model = Traffic{1000, 500};
  return r;
}

CompareReport compare_one(const Result& b, const Result& c, CompareOptions o = {}) {
  return compare_results({b}, {c}, o);
}

TEST(Compare, TenPercentSlowerBeyondNoiseIsARegression) {
  CompareReport rep = compare_one(row("k", 1.0), row("k", 1.10));
  ASSERT_EQ(rep.pairs.size(), 1u);
  EXPECT_EQ(rep.pairs[0].verdict, Verdict::slower);
  EXPECT_NEAR(rep.pairs[0].ratio, 1.10, 1e-12);
  EXPECT_NEAR(rep.pairs[0].noise, 0.02, 1e-12);  // 1% + 1%
  EXPECT_EQ(rep.regressions, 1);
  EXPECT_TRUE(rep.failed());
}

TEST(Compare, SlowerWithinNoiseIsNotARegression) {
  // 8% slower, but each side spreads 5%: the band is 10%.
  CompareReport rep = compare_one(row("k", 1.0, 0.05), row("k", 1.08, 0.05));
  EXPECT_EQ(rep.pairs[0].verdict, Verdict::ambiguous);  // band 10% > max_slowdown 5%: cannot tell
  EXPECT_FALSE(rep.failed());
  // Within a band that is itself under the threshold: "same".
  rep = compare_one(row("k", 1.0, 0.02), row("k", 1.03, 0.02));
  EXPECT_EQ(rep.pairs[0].verdict, Verdict::same);
  EXPECT_FALSE(rep.failed());
}

TEST(Compare, BeyondNoiseButUnderTheThresholdIsSame) {
  CompareReport rep = compare_one(row("k", 1.0, 0.005), row("k", 1.04, 0.005));
  EXPECT_EQ(rep.pairs[0].verdict, Verdict::same);
  EXPECT_FALSE(rep.failed());
  CompareOptions strict;
  strict.max_slowdown = 0.02;
  rep = compare_one(row("k", 1.0, 0.005), row("k", 1.04, 0.005), strict);
  EXPECT_EQ(rep.pairs[0].verdict, Verdict::slower);
  EXPECT_TRUE(rep.failed());
}

TEST(Compare, FasterIsReportedNotFailed) {
  CompareReport rep = compare_one(row("k", 1.0), row("k", 0.8));
  EXPECT_EQ(rep.pairs[0].verdict, Verdict::faster);
  EXPECT_EQ(rep.faster, 1);
  EXPECT_FALSE(rep.failed());
}

TEST(Compare, TflopsMetricIsOrientedLikeLatency) {
  CompareOptions o;
  o.metric = CompareMetric::tflops;
  Result b = row("k", 1.0), c = row("k", 1.10);  // tflops 1.0 -> 0.909
  CompareReport rep = compare_one(b, c, o);
  EXPECT_NEAR(rep.pairs[0].ratio, 1.10, 1e-9);
  EXPECT_EQ(rep.pairs[0].verdict, Verdict::slower);
}

TEST(Compare, TflopsMetricWithoutTflopsIsUntimed) {
  CompareOptions o;
  o.metric = CompareMetric::tflops;
  Result b = row("k", 1.0), c = row("k", 1.0);
  b.tflops = 0;  // e.g. a row written without it: not "infinitely faster"
  CompareReport rep = compare_one(b, c, o);
  EXPECT_EQ(rep.pairs[0].verdict, Verdict::untimed);
  EXPECT_EQ(rep.faster, 0);
  EXPECT_FALSE(rep.failed());
}

TEST(Compare, MissingRowFailsAndNewRowDoesNot) {
  CompareReport rep = compare_results({row("a", 1), row("b", 1)}, {row("a", 1)}, {});
  EXPECT_EQ(rep.missing, 1);
  EXPECT_TRUE(rep.failed());
  rep = compare_results({row("a", 1)}, {row("a", 1), row("b", 1)}, {});
  EXPECT_EQ(rep.added, 1);
  EXPECT_FALSE(rep.failed());
}

TEST(Compare, ARowWhoseKernelChangedPairsWhenItIsAloneInItsFamily) {
  // --block auto took another tile between the runs: fa3 at this problem has one
  // row on each side, under two names. They pair, and the slowdown is judged.
  Result b = row("fa3.bf16.hd256.128x80.w12.s2", 1.0), c = row("fa3.bf16.hd256.128x128.w12.s1", 1.2);
  b.family = c.family = Family::fa3;
  b.backend = c.backend = Backend::cuda;
  Result other = row("cudnn.bf16", 1.0);
  other.family = Family::cudnn;
  other.backend = Backend::cuda;
  CompareReport rep = compare_results({b, other}, {other, c}, {});
  ASSERT_EQ(rep.pairs.size(), 2u);
  EXPECT_EQ(rep.missing, 0);
  EXPECT_EQ(rep.added, 0);
  EXPECT_EQ(rep.renamed, 1);
  EXPECT_EQ(rep.pairs[0].kernel, "fa3.bf16.hd256.128x80.w12.s2 → fa3.bf16.hd256.128x128.w12.s1");
  EXPECT_EQ(rep.pairs[0].verdict, Verdict::slower);
  EXPECT_TRUE(rep.failed());
  EXPECT_NE(compare_markdown(rep, {}, "b", "c").find("1 pairs changed kernel"), std::string::npos);
  // Another family, another problem or another pass never pairs that way.
  Result c_family = c, c_problem = c, c_pass = c;
  c_family.family = Family::fa2;
  c_problem.problem.seqlen_q = c_problem.problem.seqlen_k = 256;
  c_pass.pass = Pass::bwd;
  for (const Result& x : {c_family, c_problem, c_pass}) {
    rep = compare_results({b}, {x}, {});
    EXPECT_EQ(rep.missing, 1);
    EXPECT_EQ(rep.added, 1);
    EXPECT_EQ(rep.renamed, 0);
  }
}

TEST(Compare, TwoUnpairedRowsOfAFamilyStayMissing) {
  // Two tiles timed in the baseline, another one now: which one it replaces is
  // not known, so nothing pairs.
  Result b1 = row("fa3.t1", 1.0), b2 = row("fa3.t2", 1.0), c = row("fa3.t3", 1.0);
  b1.family = b2.family = c.family = Family::fa3;
  CompareReport rep = compare_results({b1, b2}, {c}, {});
  EXPECT_EQ(rep.missing, 2);
  EXPECT_EQ(rep.added, 1);
  EXPECT_EQ(rep.renamed, 0);
  // Likewise one baseline row against two new ones.
  rep = compare_results({b1}, {b2, c}, {});
  EXPECT_EQ(rep.missing, 1);
  EXPECT_EQ(rep.added, 2);
}

TEST(Compare, PairsByKernelAndProblem) {
  // Same kernel, other seqlen: not the same pair.
  CompareReport rep = compare_results({row("a", 1, 0.01, 128)}, {row("a", 5, 0.01, 256)}, {});
  EXPECT_EQ(rep.missing, 1);
  EXPECT_EQ(rep.added, 1);
  EXPECT_EQ(rep.slower, 0);
}

TEST(Compare, PairsByPass) {
  // A kernel's bwd and fwd+bwd rows are two pairs: a slower fwd+bwd is not
  // hidden by (or blamed on) its bwd row, and the report says which pass.
  Result b_bwd = row("cpu.fa2.bwd.64x64", 1.0), b_both = row("cpu.fa2.bwd.64x64", 2.0);
  b_bwd.pass = Pass::bwd;
  b_both.pass = Pass::fwd_bwd;
  Result c_bwd = b_bwd, c_both = row("cpu.fa2.bwd.64x64", 3.0);
  c_both.pass = Pass::fwd_bwd;
  CompareReport rep = compare_results({b_bwd, b_both}, {c_both, c_bwd}, {});
  ASSERT_EQ(rep.pairs.size(), 2u);
  EXPECT_EQ(rep.missing, 0);
  EXPECT_EQ(rep.slower, 1);
  EXPECT_EQ(rep.pairs[0].verdict, Verdict::same);
  EXPECT_EQ(rep.pairs[1].verdict, Verdict::slower);
  EXPECT_EQ(rep.pairs[1].kernel, "cpu.fa2.bwd.64x64 (fwd+bwd)");
  // A forward row keeps its plain name.
  EXPECT_EQ(compare_one(row("k", 1.0), row("k", 1.0)).pairs[0].kernel, "k");
  // The same kernel in another pass does not pair.
  rep = compare_results({b_bwd}, {c_both}, {});
  EXPECT_EQ(rep.missing, 1);
  EXPECT_EQ(rep.added, 1);
}

TEST(Compare, WorseStatusFails) {
  Result c = row("k", 1.0);
  c.status = Status::fail;
  c.timing.reset();
  CompareReport rep = compare_one(row("k", 1.0), c);
  EXPECT_TRUE(rep.failed());
  EXPECT_EQ(rep.pairs[0].verdict, Verdict::untimed);
  // Better status is fine.
  Result b = row("k", 1.0);
  b.status = Status::unsupported;
  EXPECT_FALSE(compare_one(b, row("k", 1.0)).failed());
}

TEST(Compare, ErrorGrowthBeyondAllowanceFails) {
  Result c = row("k", 1.0);
  c.errors->o_max_abs = 1.2e-3;  // +20% < 25%
  EXPECT_FALSE(compare_one(row("k", 1.0), c).failed());
  c.errors->o_max_abs = 1.3e-3;  // +30%
  EXPECT_TRUE(compare_one(row("k", 1.0), c).failed());
  c = row("k", 1.0);
  c.errors->lse_max_abs = 1e-4;  // 10x
  EXPECT_TRUE(compare_one(row("k", 1.0), c).failed());
  c = row("k", 1.0);
  c.errors->nonfinite = 3;
  EXPECT_TRUE(compare_one(row("k", 1.0), c).failed());
}

// Under another seed the inputs differ, and so does every kernel's max error:
// those pairs are judged by status only, and the report counts them.
TEST(Compare, ErrorsOfOtherInputsAreNotCompared) {
  Result c = row("k", 1.0);
  c.errors->o_max_abs = 1.6e-3;  // +60%: the same inputs would make this a regression
  c.seed = 7;
  CompareReport rep = compare_one(row("k", 1.0), c);
  EXPECT_FALSE(rep.failed());
  EXPECT_EQ(rep.other_inputs, 1);
  EXPECT_NE(compare_markdown(rep, {}, "b", "c").find("1 pairs ran on other inputs"), std::string::npos);
  c.status = Status::fail;  // past its own tolerance: still a regression
  EXPECT_TRUE(compare_one(row("k", 1.0), c).failed());
  c = row("k", 1.0);
  c.errors->o_max_abs = 1.6e-3;
  rep = compare_one(row("k", 1.0), c);  // same seed
  EXPECT_TRUE(rep.failed());
  EXPECT_EQ(rep.other_inputs, 0);
}

// A run that checked every row against one that sampled: the max errors come
// from other rows, so they are judged by status only, and the report counts them.
TEST(Compare, ErrorsOverOtherRowsAreNotCompared) {
  Result b = row("k", 1.0), c = row("k", 1.0);
  b.errors->rows_checked = 2048;
  b.errors->sampled = true;
  c.errors->rows_checked = 16384;
  c.errors->sampled = false;
  c.errors->o_max_abs = 1.6e-3;  // +60%: over the same rows this would be a regression
  CompareReport rep = compare_one(b, c);
  EXPECT_FALSE(rep.failed());
  EXPECT_EQ(rep.other_rows, 1);
  EXPECT_EQ(rep.other_inputs, 0);
  EXPECT_NE(compare_markdown(rep, {}, "b", "c").find("1 pairs checked other rows"), std::string::npos);
  c.status = Status::fail;  // past its own tolerance: still a regression
  EXPECT_TRUE(compare_one(b, c).failed());
  c = b;  // the same rows
  c.errors->o_max_abs = 1.6e-3;
  rep = compare_one(b, c);
  EXPECT_TRUE(rep.failed());
  EXPECT_EQ(rep.other_rows, 0);
}

TEST(Compare, DeterministicModeIgnoresTimingButNotModelledBytes) {
  CompareOptions o;
  o.deterministic_only = true;
  CompareReport rep = compare_one(row("k", 1.0), row("k", 10.0), o);
  EXPECT_EQ(rep.pairs[0].verdict, Verdict::untimed);
  EXPECT_FALSE(rep.failed());
  Result c = row("k", 1.0);
  c.traffic_model.read_bytes += 1;
  EXPECT_TRUE(compare_one(row("k", 1.0), c, o).failed());
  // Outside deterministic mode a model change alone is not a regression.
  EXPECT_FALSE(compare_one(row("k", 1.0), c).failed());
}

TEST(Compare, MarkdownListsRegressionsFirst) {
  CompareReport rep = compare_results({row("ok", 1.0), row("bad", 1.0)}, {row("ok", 1.0), row("bad", 1.5)}, {});
  const std::string md = compare_markdown(rep, {}, "base.json", "cur.json");
  EXPECT_NE(md.find("REGRESSION"), std::string::npos);
  EXPECT_LT(md.find("| bad |"), md.find("| ok |"));
}

TEST(Compare, TheReportOwnsItsData) {
  CompareReport rep;
  {
    std::vector<Result> base = {row("kernel_a", 1.0), row("kernel_b", 2.0)};
    std::vector<Result> cur = {row("kernel_a", 1.5), row("kernel_b", 2.0)};
    rep = compare_results(base, cur, {});
  }  // the vectors are gone; the report must not point into them
  const std::string md = compare_markdown(rep, {}, "b.json", "c.json");
  EXPECT_NE(md.find("| kernel_a |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 1 | 1.5 |"), std::string::npos) << md;
}

TEST(Compare, TooFewSamplesOrUnsettledTimingIsAmbiguous) {
  Result b = row("k", 1.0), c = row("k", 2.0);
  b.timing->samples = c.timing->samples = 3;  // a run that stopped early
  CompareReport rep = compare_one(b, c);
  EXPECT_EQ(rep.pairs[0].verdict, Verdict::ambiguous);
  EXPECT_NE(rep.pairs[0].why.find("samples"), std::string::npos);
  rep = compare_one(row("k", 1.0), row("k", 2.0, 0.4));  // spread +-40%: did not settle
  EXPECT_EQ(rep.pairs[0].verdict, Verdict::ambiguous);
  EXPECT_FALSE(rep.failed());
}

// What a loaded host does between runs (measured on identical CPU reruns): the
// current's median lands among preempted samples, 10x, with a spread far past
// what a settled timing shows; or the median moves while the fastest samples
// stay where they were.
TEST(Compare, AMedianMovedByLoadAloneIsNotSlower) {
  Result b = row("k", 0.42, 0.1), c = row("k", 4.4, 0.9);
  c.timing->min_ms = 0.56;
  CompareReport rep = compare_one(b, c);
  EXPECT_EQ(rep.pairs[0].verdict, Verdict::ambiguous);
  EXPECT_FALSE(rep.failed());
  c = row("k", 0.6, 0.1);
  c.timing->min_ms = b.timing->min_ms * 1.01;
  rep = compare_one(b, c);
  EXPECT_EQ(rep.pairs[0].verdict, Verdict::ambiguous);
  EXPECT_FALSE(rep.failed());
}

// Every row 3x slower but each with a spread too wide for a verdict: no pair
// can tell, the run as a whole can.
TEST(Compare, EveryRowThreeTimesSlowerWithWideNoiseFails) {
  std::vector<Result> base, cur;
  for (int i = 0; i < 12; ++i) {
    base.push_back(row("k", 1.0 + i, 0.5, 64 + i));
    cur.push_back(row("k", 3.0 * (1.0 + i), 0.5, 64 + i));
  }
  CompareReport rep = compare_results(base, cur, {});
  EXPECT_EQ(rep.ambiguous, 12);
  EXPECT_EQ(rep.slower, 0);
  EXPECT_TRUE(rep.failed());
  EXPECT_NE(rep.run_problem.find("median ratio 3.000 over 12 timed pairs, 12 slower and 0 faster"), std::string::npos)
      << rep.run_problem;
  // The same noise without a shift: neither a pair nor the run fails.
  std::vector<Result> again;
  for (int i = 0; i < 12; ++i) again.push_back(row("k", (1.0 + i) * (i % 2 ? 1.3 : 0.75), 0.5, 64 + i));
  EXPECT_FALSE(compare_results(base, again, {}).failed());
}

// A row timed below full clock (the runner's "throttled" reason): 10 % slower
// there is the cap, not the kernel. Ambiguous, named as such, and left out of
// the whole-run test; the same pair at full clock is a regression.
TEST(Compare, APairTimedBelowFullClockIsNotJudged) {
  const std::string cap = std::string(kThrottledReason) + ": SM clock 1980 -> 1600 MHz while timing";
  Result b = row("k", 1.0), c = row("k", 1.10);
  c.reason = cap;
  CompareReport rep = compare_one(b, c);
  EXPECT_EQ(rep.pairs[0].verdict, Verdict::ambiguous);
  EXPECT_NE(rep.pairs[0].why.find("the current run"), std::string::npos) << rep.pairs[0].why;
  EXPECT_FALSE(rep.failed());
  b.reason = cap;
  rep = compare_one(b, c);
  EXPECT_NE(rep.pairs[0].why.find("both runs"), std::string::npos) << rep.pairs[0].why;
  c.reason.clear();
  b.reason.clear();
  EXPECT_TRUE(compare_one(b, c).failed());
  // Twelve rows 3x slower with wide spreads fail the run test (above); throttled, they do not.
  std::vector<Result> base, cur;
  for (int i = 0; i < 12; ++i) {
    base.push_back(row("k", 1.0 + i, 0.5, 64 + i));
    cur.push_back(row("k", 3.0 * (1.0 + i), 0.5, 64 + i));
    cur.back().reason = cap;
  }
  rep = compare_results(base, cur, {});
  EXPECT_EQ(rep.ambiguous, 12);
  EXPECT_TRUE(rep.run_problem.empty()) << rep.run_problem;
  EXPECT_FALSE(rep.failed());
}

}  // namespace
}  // namespace fa
