// One missing-value convention in the data files: a value not measured or not
// applicable is null in JSON and an empty cell in CSV (never 0, -1 or a "nan"
// string), booleans are true/false, units are in the names (l2_hit_rate_pct),
// so every CSV column has one type; and the files read back exactly.
#include <gtest/gtest.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "process_util.h"
#include "report/csv.h"
#include "report/result_json.h"

namespace fa {
namespace {

// A row that was never run: an unsupported tile-less variant on the cpu back end.
Result unsupported_row() {
  Result r;
  r.kernel = "cpu.standard";
  r.family = Family::standard;
  r.status = Status::unsupported;
  r.reason = "head_dim 2048 not built";
  r.problem.head_dim = 64;
  return r;
}

Result timed_row() {
  Result r;
  r.kernel = "cpu.fa2.64x64";
  r.tile = Tile{64, 64, 0, 0};
  r.problem.head_dim = 64;
  TimingSummary t;
  t.median_ms = t.min_ms = t.p10_ms = t.p90_ms = t.mean_ms = 0.5;
  t.samples = 10;
  t.method = "host steady_clock, no cache flush";
  r.timing = t;
  r.tflops = 0.25;
  r.model_bandwidth_gbps = 3.5;
  r.peak_extra_bytes = 0;
  r.traffic_measured = Traffic{10, 20};
  r.traffic_measured_source = "cpu-count";
  ErrorMetrics e;
  e.rows_checked = 128;
  r.errors = e;
  r.tolerances = Tolerances{1e-3, 2e-3};
  r.traffic_model = Traffic{4096, 1024};
  return r;
}

// A timed backward row of a family whose backward traffic is not modelled
// (cuDNN's): 0 and 0 in C++, absent in the files.
Result backward_row() {
  Result r = timed_row();
  r.kernel = "cudnn.bwd.bf16.hd64";
  r.family = Family::cudnn;
  r.backend = Backend::cuda;
  r.pass = Pass::bwd;
  r.fwd_kernel = "cudnn.bf16.hd64";
  r.tile = Tile{};
  r.traffic_model = Traffic{};
  r.model_bandwidth_gbps = 0;
  r.traffic_measured.reset();
  r.traffic_measured_source.clear();
  GradErrors g;
  g.dq = TensorErrors{1e-3, 2e-3, 3e-3, 0, 4e-3};
  g.dk = TensorErrors{5e-4, 1e-3, 2e-3, 0, 4e-3};
  g.dv = TensorErrors{2e-4, 1e-3, 1e-3, 0, 4e-3};
  g.rows_checked = 128;
  g.cols_checked = 96;
  r.grad_errors = g;
  return r;
}

TEST(DataFiles, AbsentValuesAreNullInJson) {
  const nlohmann::json j = result_to_json(unsupported_row());
  for (const char* key : {"tflops", "matmul_fraction", "model_bandwidth_gbps", "peak_extra_bytes", "clock_before_mhz",
                          "clock_after_mhz", "traffic_measured_source", "l2_hit_rate_pct", "timing", "errors"})
    EXPECT_TRUE(j.at(key).is_null()) << key << " = " << j.at(key);
  for (const char* key : {"block_m", "block_n", "warps", "stages"}) EXPECT_TRUE(j["tile"].at(key).is_null()) << key;
  const nlohmann::json t = result_to_json(timed_row());
  EXPECT_EQ(t["tflops"], 0.25);
  EXPECT_TRUE(t["matmul_fraction"].is_null());  // no matmul ceiling on the cpu back end
  EXPECT_EQ(t["peak_extra_bytes"], 0);          // measured: none
  EXPECT_EQ(t["tile"]["block_m"], 64);
  EXPECT_TRUE(t["tile"]["warps"].is_null());
  EXPECT_TRUE(t["reason"].is_null());
  // A forward row has no partner and no gradients; a backward without a traffic model has no model.
  EXPECT_TRUE(t["fwd_kernel"].is_null());
  EXPECT_TRUE(t["grad_errors"].is_null());
  EXPECT_EQ(t["pass"], "fwd");
  const nlohmann::json b = result_to_json(backward_row());
  EXPECT_TRUE(b["traffic_model"].is_null()) << b["traffic_model"];
  EXPECT_TRUE(b["model_bandwidth_gbps"].is_null());
  EXPECT_EQ(b["fwd_kernel"], "cudnn.bf16.hd64");
  EXPECT_EQ(b["pass"], "bwd");
  EXPECT_EQ(b["grad_errors"]["cols_checked"], 96);
  EXPECT_TRUE(b["grad_errors"]["dq_nonfinite"].is_number_integer());
  for (const Result& r : {unsupported_row(), timed_row(), backward_row()}) {
    const Result back = result_from_json(result_to_json(r), "row");
    EXPECT_EQ(back.traffic_model.read_bytes, r.traffic_model.read_bytes);
    EXPECT_EQ(back.traffic_model.write_bytes, r.traffic_model.write_bytes);
    EXPECT_EQ(back.fwd_kernel, r.fwd_kernel);
    EXPECT_EQ(back.grad_errors.has_value(), r.grad_errors.has_value());
    EXPECT_EQ(back.peak_extra_bytes, r.peak_extra_bytes);
    EXPECT_EQ(back.clock_before_mhz, r.clock_before_mhz);
    EXPECT_EQ(back.tile, r.tile);
    EXPECT_EQ(back.tflops, r.tflops);
    EXPECT_EQ(back.reason, r.reason);
    EXPECT_EQ(back.key(), r.key());
  }
}

// RFC 4180 cells (no newlines inside the fields these rows have).
std::vector<std::vector<std::string>> cells(const std::string& csv) {
  std::vector<std::vector<std::string>> out;
  std::istringstream in(csv);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> row(1);
    bool quoted = false;
    for (size_t i = 0; i < line.size(); ++i) {
      const char c = line[i];
      if (c == '"') {
        if (quoted && i + 1 < line.size() && line[i + 1] == '"') row.back() += line[++i];
        else quoted = !quoted;
      } else if (c == ',' && !quoted) {
        row.emplace_back();
      } else {
        row.back() += c;
      }
    }
    out.push_back(row);
  }
  return out;
}

bool is_number(const std::string& s) {
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && p == s.data() + s.size();
}

TEST(DataFiles, EveryCsvColumnHasOneType) {
  Result failed = timed_row();
  failed.timing.reset();
  failed.status = Status::fail;
  failed.reason = "O max abs error 1 vs tolerance 0.001";
  const auto table = cells(csv_document({unsupported_row(), timed_row(), failed, backward_row()}));
  ASSERT_EQ(table.size(), 5u);
  const auto& header = table[0];
  for (size_t c = 0; c < header.size(); ++c) {
    int numbers = 0, bools = 0, text = 0;
    for (size_t r = 1; r < table.size(); ++r) {
      ASSERT_EQ(table[r].size(), header.size()) << "row " << r;
      const std::string& v = table[r][c];
      if (v.empty()) continue;
      if (v == "true" || v == "false") ++bools;
      else if (is_number(v)) ++numbers;
      else ++text;
      EXPECT_NE(v, "-1") << header[c] << ": -1 standing for absent";
      EXPECT_NE(v, "nan") << header[c];
    }
    EXPECT_LE((numbers > 0) + (bools > 0) + (text > 0), 1) << header[c] << " mixes types";
  }
  // The unsupported row: no 0 stands in for a throughput it never had.
  const auto col = [&](const char* name) {
    return size_t(std::find(header.begin(), header.end(), name) - header.begin());
  };
  for (const char* name : {"tflops", "model_bandwidth_gbps", "block_m", "peak_extra_bytes", "clock_before_mhz"})
    EXPECT_EQ(table[1][col(name)], "") << name;
  EXPECT_NE(std::find(header.begin(), header.end(), "l2_hit_rate_pct"), header.end());
  // The forward row leaves the backward's columns empty; the backward without a
  // traffic model leaves the model's columns empty, not 0.
  for (const char* name : {"fwd_kernel", "dq_max_abs", "dk_nonfinite", "dv_tolerance", "cols_checked"})
    EXPECT_EQ(table[2][col(name)], "") << name;
  EXPECT_EQ(table[2][col("pass")], "fwd");
  EXPECT_EQ(table[2][col("traffic_model_read_bytes")], "4096");
  for (const char* name : {"traffic_model_read_bytes", "traffic_model_write_bytes", "model_bandwidth_gbps"})
    EXPECT_EQ(table[4][col(name)], "") << name;
  EXPECT_EQ(table[4][col("fwd_kernel")], "cudnn.bf16.hd64");
  EXPECT_EQ(table[4][col("dk_nonfinite")], "0");
  EXPECT_EQ(table[4][col("cols_checked")], "96");
}

TEST(DataFiles, CsvReadsBackEveryPassColumn) {
  const auto dir = test::temp_dir("data_files_csv");  // per process, removed at exit
  const std::string path = (dir / "rows.csv").string();
  {
    std::ofstream f(path);
    f << csv_document({timed_row(), backward_row()});
  }
  const std::vector<Result> back = read_results_csv(path);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].pass, Pass::fwd);
  EXPECT_EQ(back[0].fwd_kernel, "");
  EXPECT_FALSE(back[0].grad_errors.has_value());
  EXPECT_EQ(back[0].traffic_model.total(), 5120);
  EXPECT_EQ(back[1].pass, Pass::bwd);
  EXPECT_EQ(back[1].fwd_kernel, "cudnn.bf16.hd64");
  EXPECT_EQ(back[1].traffic_model.total(), 0);
  ASSERT_TRUE(back[1].grad_errors.has_value());
  EXPECT_EQ(back[1].grad_errors->cols_checked, 96);
  EXPECT_EQ(back[1].grad_errors->rows_checked, 128);  // shared from the forward's rows_checked
  EXPECT_EQ(back[1].key(), backward_row().key());
}

}  // namespace
}  // namespace fa
