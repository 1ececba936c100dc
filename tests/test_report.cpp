// Outputs: JSON and CSV read back exactly what was written, the files are
// replaced atomically, the timing summary and stopping rule.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "core/errors.h"
#include "measure/timing.h"
#include "process_util.h"
#include "report/atomic_file.h"
#include "report/csv.h"
#include "report/markdown.h"
#include "report/result_json.h"
#include "report/results_files.h"

namespace fa {
namespace {

// Every field set to a value that differs from its default.
Result full_row() {
  Result r;
  r.problem = AttnProblem{3, 8, 2, 1000, 1536, 96, true, DType::f16, 0.125f};
  r.kernel = "cpu.fa2.64x32";
  r.family = Family::fa1;
  r.backend = Backend::cuda;
  r.tile = Tile{64, 32, 4, 2};
  r.status = Status::fail;
  r.reason = "O max abs 0.3, \"quoted\"\nsecond line | pipe";
  TimingSummary t;
  t.median_ms = 1.0 / 3.0;
  t.min_ms = 0.1;
  t.p10_ms = 0.2;
  t.p90_ms = 0.4;
  t.mean_ms = 0.30000000000000004;
  t.stddev_ms = 1e-9;
  t.samples = 17;
  t.noise = 0.0125;
  t.method = "host steady_clock, no cache flush";
  r.timing = t;
  r.tflops = 123.456;
  r.matmul_fraction = 0.42;
  r.traffic_model = Traffic{1234567890123, 42};
  r.model_bandwidth_gbps = 3999.5;
  r.traffic_measured = Traffic{7, 8};
  r.traffic_measured_source = "cpu-count";
  r.l2_hit_rate_pct = 63.75;
  r.peak_extra_bytes = 65536;
  ErrorMetrics e;
  e.o_max_abs = std::numeric_limits<double>::infinity();
  e.o_max_rel = std::numeric_limits<double>::quiet_NaN();
  e.o_rel_l2 = 2.5e-3;
  e.lse_max_abs = 1e-7;
  e.lse_max_rel = 3e-8;
  e.nonfinite = 5;
  e.rows_checked = 999;
  e.sampled = true;
  r.errors = e;
  r.tolerances = Tolerances{4.8828125e-4, 1.5e-3};
  r.clock_before_mhz = 1980;
  r.clock_after_mhz = 1755;
  r.seed = 18446744073709551615ull;
  return r;
}

// A fwd+bwd row: its forward partner, the partner's O/LSE errors, and dQ, dK,
// dV errors (one tensor with non-finite values and an infinite error).
Result backward_row() {
  Result r = full_row();
  r.kernel = "cpu.fa2.bwd.64x32";
  r.family = Family::fa2;
  r.pass = Pass::fwd_bwd;
  r.fwd_kernel = "cpu.fa2.64x32";
  GradErrors g;
  g.dq = TensorErrors{1.5e-3, 0.25, 3e-4, 0, 7.8125e-3};
  g.dk = TensorErrors{std::numeric_limits<double>::infinity(), 0.5, 1.0 / 3.0, 12, 2e-2};
  g.dv = TensorErrors{2e-7, 1e-9, std::numeric_limits<double>::quiet_NaN(), 0, 1e-5};
  g.rows_checked = r.errors->rows_checked;
  g.cols_checked = 1234;
  g.sampled = r.errors->sampled;
  r.grad_errors = g;
  return r;
}

// An unsupported row: no timing, no errors, no measured traffic.
Result sparse_row() {
  Result r;
  r.problem = AttnProblem{1, 2, 2, 128, 128, 64, false, DType::bf16, 0.f};
  r.kernel = "fa2.bf16.hd64.32x32";
  r.status = Status::unsupported;
  r.reason = "block 32x32 is not compiled for fa2.bf16.hd64; compiled tiles: 128x64.w4.s2";
  r.seed = 7;
  return r;
}

bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

void expect_equal(const Result& a, const Result& b) {
  EXPECT_EQ(a.key(), b.key());
  EXPECT_EQ(a.problem, b.problem);
  EXPECT_EQ(a.kernel, b.kernel);
  EXPECT_EQ(a.family, b.family);
  EXPECT_EQ(a.backend, b.backend);
  EXPECT_EQ(a.pass, b.pass);
  EXPECT_EQ(a.fwd_kernel, b.fwd_kernel);
  EXPECT_EQ(a.tile, b.tile);
  EXPECT_EQ(a.status, b.status);
  EXPECT_EQ(a.reason, b.reason);
  ASSERT_EQ(a.timing.has_value(), b.timing.has_value());
  if (a.timing) {
    EXPECT_EQ(a.timing->median_ms, b.timing->median_ms);
    EXPECT_EQ(a.timing->min_ms, b.timing->min_ms);
    EXPECT_EQ(a.timing->p10_ms, b.timing->p10_ms);
    EXPECT_EQ(a.timing->p90_ms, b.timing->p90_ms);
    EXPECT_EQ(a.timing->mean_ms, b.timing->mean_ms);
    EXPECT_EQ(a.timing->stddev_ms, b.timing->stddev_ms);
    EXPECT_EQ(a.timing->samples, b.timing->samples);
    EXPECT_EQ(a.timing->noise, b.timing->noise);
    EXPECT_EQ(a.timing->method, b.timing->method);
  }
  EXPECT_EQ(a.tflops, b.tflops);
  EXPECT_EQ(a.matmul_fraction, b.matmul_fraction);
  EXPECT_EQ(a.traffic_model.read_bytes, b.traffic_model.read_bytes);
  EXPECT_EQ(a.traffic_model.write_bytes, b.traffic_model.write_bytes);
  EXPECT_EQ(a.model_bandwidth_gbps, b.model_bandwidth_gbps);
  ASSERT_EQ(a.traffic_measured.has_value(), b.traffic_measured.has_value());
  if (a.traffic_measured) {
    EXPECT_EQ(a.traffic_measured->read_bytes, b.traffic_measured->read_bytes);
    EXPECT_EQ(a.traffic_measured->write_bytes, b.traffic_measured->write_bytes);
  }
  EXPECT_EQ(a.traffic_measured_source, b.traffic_measured_source);
  EXPECT_EQ(a.l2_hit_rate_pct, b.l2_hit_rate_pct);
  EXPECT_EQ(a.peak_extra_bytes, b.peak_extra_bytes);
  ASSERT_EQ(a.errors.has_value(), b.errors.has_value());
  if (a.errors) {
    EXPECT_TRUE(same(a.errors->o_max_abs, b.errors->o_max_abs));
    EXPECT_TRUE(same(a.errors->o_max_rel, b.errors->o_max_rel));
    EXPECT_TRUE(same(a.errors->o_rel_l2, b.errors->o_rel_l2));
    EXPECT_TRUE(same(a.errors->lse_max_abs, b.errors->lse_max_abs));
    EXPECT_TRUE(same(a.errors->lse_max_rel, b.errors->lse_max_rel));
    EXPECT_EQ(a.errors->nonfinite, b.errors->nonfinite);
    EXPECT_EQ(a.errors->rows_checked, b.errors->rows_checked);
    EXPECT_EQ(a.errors->sampled, b.errors->sampled);
    EXPECT_EQ(a.tolerances->tolerance, b.tolerances->tolerance);
    EXPECT_EQ(a.tolerances->lse_tolerance, b.tolerances->lse_tolerance);
  }
  ASSERT_EQ(a.grad_errors.has_value(), b.grad_errors.has_value());
  if (a.grad_errors) {
    for (auto t : {&GradErrors::dq, &GradErrors::dk, &GradErrors::dv}) {
      const TensorErrors &x = (*a.grad_errors).*t, &y = (*b.grad_errors).*t;
      EXPECT_TRUE(same(x.max_abs, y.max_abs));
      EXPECT_TRUE(same(x.max_rel, y.max_rel));
      EXPECT_TRUE(same(x.rel_l2, y.rel_l2));
      EXPECT_EQ(x.nonfinite, y.nonfinite);
      EXPECT_EQ(x.tolerance, y.tolerance);
    }
    EXPECT_EQ(a.grad_errors->rows_checked, b.grad_errors->rows_checked);
    EXPECT_EQ(a.grad_errors->cols_checked, b.grad_errors->cols_checked);
    EXPECT_EQ(a.grad_errors->sampled, b.grad_errors->sampled);
  }
  EXPECT_EQ(a.clock_before_mhz, b.clock_before_mhz);
  EXPECT_EQ(a.clock_after_mhz, b.clock_after_mhz);
  EXPECT_EQ(a.seed, b.seed);
}

TEST(Report, JsonAndCsvRoundTripEveryField) {
  auto dir = test::temp_dir("report_roundtrip");
  std::string json = (dir / "r.json").string(), csv = (dir / "r.csv").string(), md = (dir / "r.md").string();
  std::vector<Result> rows = {full_row(), sparse_row(), backward_row()};
  {
    ResultsFiles files(json, csv, md, nlohmann::json{{"note", "test"}}, {rows[0]});
    files.add(rows[1]);
    files.add(rows[2]);
    files.finish("complete");
  }
  nlohmann::json meta;
  auto from_json = read_results_json(json, &meta);
  auto from_csv = read_results_csv(csv);
  ASSERT_EQ(from_json.size(), 3u);
  ASSERT_EQ(from_csv.size(), 3u);
  for (size_t i = 0; i < rows.size(); ++i) {
    SCOPED_TRACE(i);
    expect_equal(rows[i], from_json[i]);
    expect_equal(rows[i], from_csv[i]);
  }
  EXPECT_EQ(meta["note"], "test");
  EXPECT_EQ(meta["run_status"], "complete");
  EXPECT_EQ(meta["rows"], 3);
  // No temporary file is left next to the outputs.
  size_t files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 3u);
  std::string table = test::slurp(md);
  EXPECT_NE(table.find("second line \\| pipe"), std::string::npos) << table;
  // The Markdown line of the fwd+bwd row: its pass, and the gradient tensor
  // furthest past its tolerance (dK, with its non-finite values).
  EXPECT_NE(table.find("| cpu.fa2.bwd.64x32 | fwd+bwd | "), std::string::npos) << table;
  EXPECT_NE(table.find("| dK inf / 0.02 (12 non-finite) (sampled: 999 of 1000 rows, 1234 of 1536 columns) |"),
            std::string::npos)
      << table;
}

// A schema-2 JSON row always says its pass (files of schema 1, with or without
// the pass, are rewritten by scripts/upgrade_results.py); a CSV without the
// pass columns (a peer's, or an older file) reads as forward rows.
TEST(Report, RowsWithoutAPass) {
  auto dir = test::temp_dir("report_old");
  const std::string json = (dir / "old.json").string(), csv = (dir / "old.csv").string();
  nlohmann::json row = result_to_json(full_row());
  row.erase("pass");
  write_file_atomic(json, nlohmann::json{{"schema_version", kResultsSchemaVersion}, {"results", {row}}}.dump());
  try {
    read_results_json(json, nullptr);
    ADD_FAILURE() << "a row without its pass was read";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("missing field 'pass'"), std::string::npos) << e.what();
  }
  write_file_atomic(csv, "kernel,family,backend,batch,heads,heads_kv,seqlen_q,seqlen_k,head_dim,causal,dtype,"
                         "status\ncpu.fa2.64x64,fa2,cpu,1,2,2,64,64,32,false,bf16,ok\n");
  const std::vector<Result> from_csv = read_results_csv(csv);
  ASSERT_EQ(from_csv.size(), 1u);
  EXPECT_EQ(from_csv[0].pass, Pass::fwd);
  EXPECT_EQ(from_csv[0].fwd_kernel, "");
  EXPECT_NE(from_csv[0].key().find(" pass=fwd"), std::string::npos);
}

// An e4m3 row's two error figures, `errors` (against the dequantized inputs)
// and `errors_vs_unquantized` (a subset of the same figures), read back as
// written, non-finite values included; the second object holds its five keys.
TEST(Report, BothErrorFiguresRoundTripInJson) {
  Result r = full_row();
  r.problem.dtype = DType::e4m3;
  r.fp8 = Fp8Settings{Fp8Scaling::block, true};
  ErrorMetrics u;
  u.o_max_abs = 0.0625;
  u.o_max_rel = std::numeric_limits<double>::infinity();
  u.o_rel_l2 = std::numeric_limits<double>::quiet_NaN();
  u.lse_max_abs = 3e-3;
  u.nonfinite = 2;
  r.errors_vs_unquantized = u;
  const nlohmann::json j = result_to_json(r);
  std::vector<std::string> keys;
  for (const auto& [k, v] : j["errors_vs_unquantized"].items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"lse_max_abs", "nonfinite", "o_max_abs", "o_max_rel", "o_rel_l2"}));
  const Result back = result_from_json(j, "row");
  expect_equal(r, back);
  ASSERT_TRUE(back.errors_vs_unquantized.has_value());
  const ErrorMetrics& b = *back.errors_vs_unquantized;
  EXPECT_EQ(b.o_max_abs, u.o_max_abs);
  EXPECT_EQ(b.o_max_rel, u.o_max_rel);
  EXPECT_TRUE(std::isnan(b.o_rel_l2));
  EXPECT_EQ(b.lse_max_abs, u.lse_max_abs);
  EXPECT_EQ(b.nonfinite, u.nonfinite);
  nlohmann::json missing = j;
  missing["errors_vs_unquantized"].erase("o_rel_l2");
  try {
    result_from_json(missing, "row");
    ADD_FAILURE() << "a figure missing from errors_vs_unquantized was read";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("row.errors_vs_unquantized: missing field 'o_rel_l2'"), std::string::npos)
        << e.what();
  }
}

// Keys: a bwd and a fwd+bwd row of one kernel are different rows.
TEST(Report, ThePassIsPartOfTheRowKey) {
  Result b = backward_row(), f = backward_row();
  b.pass = Pass::bwd;
  EXPECT_NE(b.key(), f.key());
  EXPECT_EQ(b.key().substr(b.key().size() - 9), " pass=bwd");
  EXPECT_EQ(f.key().substr(f.key().size() - 13), " pass=fwd+bwd");
}

TEST(Report, CsvHeaderUsesTheFieldNames) {
  const auto& cols = csv_columns();
  for (const char* name : {"seqlen_q", "head_dim", "block_m", "median_ms", "p10_ms", "tflops",
                           "traffic_model_read_bytes", "traffic_measured_write_bytes", "l2_hit_rate_pct",
                           "o_max_abs", "tolerance", "peak_extra_bytes", "seed", "pass", "fwd_kernel", "cols_checked",
                           "dq_max_abs", "dk_max_rel", "dv_rel_l2", "dq_nonfinite", "dv_tolerance"})
    EXPECT_NE(std::find(cols.begin(), cols.end(), name), cols.end()) << name;
  // The pass right after the back end, as scripts/torch_peers.py writes it;
  // cols_checked beside rows_checked.
  const auto at = [&](const char* name) { return std::find(cols.begin(), cols.end(), name) - cols.begin(); };
  EXPECT_EQ(at("pass"), at("backend") + 1);
  EXPECT_EQ(at("cols_checked"), at("rows_checked") + 1);
}

TEST(Report, ReadingRejectsWhatItDidNotWrite) {
  auto dir = test::temp_dir("report_bad");
  auto write = [&](const char* name, const char* text) {
    auto p = (dir / name).string();
    write_file_atomic(p, text);
    return p;
  };
  EXPECT_THROW(read_results_json(write("v1.json", R"({"schema_version": 1, "results": []})"), nullptr), UsageError);
  EXPECT_THROW(read_results_json(write("v3.json", R"({"schema_version": 3, "results": []})"), nullptr), UsageError);
  EXPECT_THROW(read_results_json(write("trunc.json", R"({"schema_version": 2, "results": [)"), nullptr), UsageError);
  EXPECT_THROW(read_results_json(write("row.json", R"({"schema_version": 2, "results": [{"kernel": "x"}]})"), nullptr),
               UsageError);
  EXPECT_THROW(read_results_json((dir / "absent.json").string(), nullptr), UsageError);
  EXPECT_THROW(read_results_csv(write("bad.csv", "kernel,nonsense\nx,y\n")), UsageError);
}

TEST(Timing, SummaryOfKnownSamples) {
  TimingSummary s = summarize({10, 1, 9, 2, 8, 3, 7, 4, 6, 5}, "m");
  EXPECT_EQ(s.samples, 10);
  EXPECT_DOUBLE_EQ(s.min_ms, 1);
  EXPECT_DOUBLE_EQ(s.median_ms, 5.5);
  EXPECT_DOUBLE_EQ(s.p10_ms, 1.9);  // numpy.percentile(range(1, 11), 10)
  EXPECT_DOUBLE_EQ(s.p90_ms, 9.1);
  EXPECT_DOUBLE_EQ(s.mean_ms, 5.5);
  EXPECT_NEAR(s.stddev_ms, 3.0276503540974917, 1e-12);
  EXPECT_NEAR(s.noise, (9.1 - 1.9) / 2 / 5.5, 1e-12);
  EXPECT_EQ(s.method, "m");
}

TEST(Timing, StoppingRule) {
  TimingOptions o;
  o.min_samples = 5;
  o.max_samples = 8;
  o.max_seconds = 1.0;
  o.target_noise = 0.01;
  std::vector<double> steady(5, 2.0), noisy = {1, 2, 3, 4, 5};
  EXPECT_FALSE(timing_done({2.0, 2.0}, 0.1, o));  // too few samples
  EXPECT_TRUE(timing_done(steady, 0.1, o));       // enough and quiet
  EXPECT_FALSE(timing_done(noisy, 0.1, o));       // enough but noisy
  EXPECT_TRUE(timing_done(noisy, 1.5, o));        // out of time
  EXPECT_TRUE(timing_done({1, 2, 3, 4, 5, 6, 7, 8}, 0.1, o));  // out of samples
  EXPECT_FALSE(timing_done({}, 5.0, o));          // never zero samples
  o.min_samples = 1;
  EXPECT_FALSE(timing_done({2.0}, 0.1, o));       // one sample has no spread to judge
  EXPECT_TRUE(timing_done({2.0, 2.0, 2.0}, 0.1, o));
}

}  // namespace
}  // namespace fa
