// Error figures are exact and labelled: the reference uses the float64 softmax
// scale and every row records the scale used; a sampled check compares exactly
// max_check_rows rows and says so in every output, the Markdown table included;
// --exact-check compares every row; a NaN never drops out of a maximum.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "check/grad_metrics.h"
#include "check/metrics.h"
#include "check/sampling.h"
#include "process_util.h"
#include "reference/reference.h"
#include "report/csv.h"
#include "report/markdown.h"
#include "report/result_json.h"

namespace fa {
namespace {

TEST(ErrorFigures, ReferenceUsesTheExactScale) {
  AttnProblem p;
  p.batch = p.heads = p.heads_kv = p.seqlen_q = p.seqlen_k = 1;
  p.head_dim = 128;  // 1/sqrt(128) is not a float: float32 rounding moves it in the 8th digit
  HostInputs in;
  in.q.assign(128, 3.0f);
  in.k.assign(128, 1.0f);
  in.v.assign(128, 0.5f);
  const ReferenceOutputs ref = reference_forward(p, in);
  // One key: LSE is the score itself, 3 * 128 / sqrt(128).
  EXPECT_DOUBLE_EQ(ref.lse[0], 384.0 / std::sqrt(128.0));
  EXPECT_EQ(p.scale_f64(), 1.0 / std::sqrt(128.0));
  EXPECT_EQ(p.scale(), 1.0f / std::sqrt(128.0f));  // the kernels' float32 scale is unchanged
}

TEST(ErrorFigures, EveryRowRecordsTheScaleUsed) {
  Result r;
  r.kernel = "cpu.fa2.64x64";
  r.problem.head_dim = 128;
  const nlohmann::json j = result_to_json(r);
  EXPECT_EQ(j["problem"]["softmax_scale"].get<double>(), 1.0 / std::sqrt(128.0));
  const Result back = result_from_json(j, "row");
  EXPECT_EQ(back.problem, r.problem);  // read back as "the default", not a float-rounded value
  EXPECT_EQ(back.key(), r.key());
  const std::string csv = csv_row(r);
  EXPECT_NE(csv.find(fmt::format(",{},", 1.0 / std::sqrt(128.0))), std::string::npos) << csv;
}

TEST(ErrorFigures, SampledChecksCompareExactlyMaxCheckRows) {
  for (bool causal : {false, true})
    for (uint64_t seed : {1u, 2u, 3u}) {
      AttnProblem p;
      p.seqlen_q = 8192;
      p.seqlen_k = 4096;
      p.causal = causal;
      const auto rows = sample_rows(p, 2048, 128, seed);
      EXPECT_EQ(rows.size(), 2048u) << "causal " << causal << " seed " << seed;
      EXPECT_TRUE(std::is_sorted(rows.begin(), rows.end()));
      EXPECT_EQ(rows.front(), 0);
      EXPECT_EQ(rows.back(), 8191);
      if (causal) {  // where visibility starts
        EXPECT_TRUE(std::binary_search(rows.begin(), rows.end(), int64_t(8192 - 4096 - 1)));
        EXPECT_TRUE(std::binary_search(rows.begin(), rows.end(), int64_t(8192 - 4096)));
      }
    }
  AttnProblem small;
  small.seqlen_q = small.seqlen_k = 100;
  EXPECT_EQ(sample_rows(small, 99, 16, 1).size(), 99u);  // almost every row
  EXPECT_EQ(sample_rows(small, 3, 16, 1).size(), 3u);
}

TEST(ErrorFigures, SampledGradientChecksCompareExactlyMaxCheckColumns) {
  for (bool causal : {false, true})
    for (uint64_t seed : {1u, 2u, 3u}) {
      AttnProblem p;
      p.seqlen_q = 2048;
      p.seqlen_k = 8192;
      p.causal = causal;
      const auto cols = sample_cols(p, 1024, 128, seed);
      EXPECT_EQ(cols.size(), 1024u) << "causal " << causal << " seed " << seed;
      EXPECT_TRUE(std::is_sorted(cols.begin(), cols.end()));
      EXPECT_EQ(cols.front(), 0);
      EXPECT_EQ(cols.back(), 8191);
      if (causal) {  // where the mask starts to cut row 0's keys
        EXPECT_TRUE(std::binary_search(cols.begin(), cols.end(), int64_t(8192 - 2048)));
        EXPECT_TRUE(std::binary_search(cols.begin(), cols.end(), int64_t(8192 - 2048 + 1)));
      }
    }
}

TEST(ErrorFigures, MarkdownMarksASampledGradientCheck) {
  Result r;
  r.kernel = "k";
  r.pass = Pass::bwd;
  r.problem.seqlen_q = r.problem.seqlen_k = 8192;
  GradErrors g;
  g.rows_checked = 2048;
  g.cols_checked = 2048;
  g.sampled = true;
  r.grad_errors = g;
  EXPECT_NE(markdown_row(r).find("sampled: 2048 of 8192 rows, 2048 of 8192 columns"), std::string::npos)
      << markdown_row(r);
  r.grad_errors->sampled = false;
  EXPECT_EQ(markdown_row(r).find("sampled"), std::string::npos);
}

TEST(ErrorFigures, MarkdownMarksASampledCheck) {
  Result r;
  r.kernel = "k";
  r.problem.seqlen_q = r.problem.seqlen_k = 8192;
  ErrorMetrics m;
  m.o_max_abs = 1e-3;
  m.rows_checked = 2048;
  m.sampled = true;
  r.errors = m;
  EXPECT_NE(markdown_row(r).find("sampled: 2048 of 8192 rows"), std::string::npos) << markdown_row(r);
  r.errors->sampled = false;
  EXPECT_EQ(markdown_row(r).find("sampled"), std::string::npos);
}

TEST(ErrorFigures, ExactCheckComparesEveryRow) {
  auto dir = test::temp_dir("exact_check");
  const std::string json = (dir / "r.json").string();
  test::ProcResult r = test::run_fa_bench(
      {"sweep", "--backend", "cpu", "--kernels", "cpu.fa2", "--block", "64x64", "--seqlen", "3000", "--head-dim",
       "16", "--heads", "1", "--dtype", "fp32", "--max-check-rows", "100", "--exact-check", "--max-seconds", "0.01",
       "--json", json},
      dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto rows = read_results_json(json, nullptr);
  ASSERT_EQ(rows.size(), 1u);
  ASSERT_TRUE(rows[0].errors.has_value());
  EXPECT_EQ(rows[0].errors->rows_checked, 3000);
  EXPECT_FALSE(rows[0].errors->sampled);
}

TEST(ErrorFigures, ExactCheckComparesEveryRowAndColumnOfABackward) {
  auto dir = test::temp_dir("exact_check_bwd");
  const std::string json = (dir / "r.json").string();
  test::ProcResult r = test::run_fa_bench(
      {"sweep", "--backend", "cpu", "--kernels", "cpu.fa2.bwd.64x64", "--pass", "bwd", "--seqlen", "300",
       "--seqlen-k", "200", "--head-dim", "16", "--heads", "1", "--dtype", "fp32", "--max-check-rows", "50",
       "--exact-check", "--max-seconds", "0.01", "--json", json},
      dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const auto rows = read_results_json(json, nullptr);
  ASSERT_EQ(rows.size(), 1u);
  ASSERT_TRUE(rows[0].grad_errors.has_value());
  EXPECT_EQ(rows[0].grad_errors->rows_checked, 300);
  EXPECT_EQ(rows[0].grad_errors->cols_checked, 200);
  EXPECT_FALSE(rows[0].grad_errors->sampled);
}

TEST(ErrorFigures, NanInTheReferenceNeverDropsOutOfAMaximum) {
  AttnProblem p;
  p.batch = p.heads = p.heads_kv = 1;
  p.seqlen_q = p.seqlen_k = 2;
  p.head_dim = 4;
  ReferenceOutputs ref;
  ref.rows = {0, 1};
  ref.o.assign(8, 0.25);
  ref.lse.assign(2, 1.0);
  HostOutputs out;
  out.o.assign(8, 0.25f);
  out.lse.assign(2, 1.0f);
  out.o[7] = 0.5f;  // a real error after the NaN
  ref.o[2] = std::nan("");
  ErrorMetrics m = compare_outputs(p, out, ref);
  EXPECT_TRUE(std::isnan(m.o_max_abs)) << m.o_max_abs;
  EXPECT_FALSE(passes(m, Tolerances{1, 1}));
  ref.o[2] = 0.25;
  ref.lse[1] = std::nan("");
  EXPECT_TRUE(std::isnan(compare_outputs(p, out, ref).lse_max_abs));
}

TEST(ErrorFigures, NanInTheReferenceGradientsNeverDropsOutOfAMaximum) {
  AttnProblem p;
  p.batch = p.heads = p.heads_kv = 1;
  p.seqlen_q = p.seqlen_k = 2;
  p.head_dim = 4;
  SampledGrads ref;
  ref.rows = ref.cols = {0, 1};
  ref.dq.assign(8, 0.25);
  ref.dk.assign(8, 0.25);
  ref.dv.assign(8, 0.25);
  HostGrads out{std::vector<float>(8, 0.25f), std::vector<float>(8, 0.25f), std::vector<float>(8, 0.25f)};
  out.dk[7] = 0.5f;  // a real error after the NaN
  ref.dk[2] = std::nan("");
  const GradErrors g = compare_grads(p, out, ref);
  EXPECT_TRUE(std::isnan(g.dk.max_abs)) << g.dk.max_abs;
  EXPECT_TRUE(std::isnan(g.dk.max_rel));
  EXPECT_EQ(g.dq.max_abs, 0);
  EXPECT_FALSE(g.passes());
}

}  // namespace
}  // namespace fa
