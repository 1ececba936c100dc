// One missing-value convention in the data files: a value not measured or not
// applicable is null in JSON and an empty cell in CSV (never 0, -1 or a "nan"
// string), booleans are true/false, units are in the names (l2_hit_rate_pct),
// so every CSV column has one type; and the files read back exactly.
#include <gtest/gtest.h>

#include <charconv>
#include <sstream>

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
  e.tolerance = 1e-3;
  r.errors = e;
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
  for (const Result& r : {unsupported_row(), timed_row()}) {
    const Result back = result_from_json(result_to_json(r), "row");
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
  const auto table = cells(csv_document({unsupported_row(), timed_row(), failed}));
  ASSERT_EQ(table.size(), 4u);
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
}

}  // namespace
}  // namespace fa
