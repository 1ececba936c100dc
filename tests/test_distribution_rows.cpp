// fa-check runs each case on several input distributions, so its results file
// holds a kernel's row for one problem several times, one per distribution.
// The distribution is part of such a row's key and JSON, so `fa-bench compare`
// reads the file and pairs each row with the same inputs' row; sweep rows (one
// distribution per run, in its config) keep the key and JSON they always had.
#include <gtest/gtest.h>

#include <fstream>

#include "compare/compare.h"
#include "core/errors.h"
#include "process_util.h"
#include "report/result_json.h"

namespace fa {
namespace {

Result check_row(std::optional<Distribution> d, double o_err = 1e-3) {
  Result r;
  r.kernel = "fa2.bf16.hd64.128x64";
  r.family = Family::fa2;
  r.backend = Backend::cuda;
  r.problem.head_dim = 64;
  r.problem.seqlen_q = r.problem.seqlen_k = 257;
  r.distribution = d;
  r.status = Status::ok;
  ErrorMetrics e;
  e.o_max_abs = o_err;
  e.lse_max_abs = 1e-5;
  r.errors = e;
  r.tolerances = Tolerances{4e-3, 1e-3};
  r.seed = 11;
  return r;
}

TEST(DistributionRows, TheDistributionIsPartOfTheKeyOnlyWhereTheRowNamesOne) {
  const Result normal = check_row(Distribution::normal), outliers = check_row(Distribution::outliers);
  EXPECT_NE(normal.key(), outliers.key());
  EXPECT_NE(normal.key().find("distribution=normal"), std::string::npos);
  const Result sweep_row = check_row(std::nullopt);
  EXPECT_EQ(sweep_row.key().find("distribution"), std::string::npos);
}

TEST(DistributionRows, JsonCarriesItAndRefusesAnUnknownOne) {
  const nlohmann::json j = result_to_json(check_row(Distribution::adversarial));
  EXPECT_EQ(j["distribution"], "adversarial");
  EXPECT_EQ(result_from_json(j, "row").distribution, Distribution::adversarial);
  const nlohmann::json plain = result_to_json(check_row(std::nullopt));
  EXPECT_FALSE(plain.contains("distribution"));
  EXPECT_FALSE(result_from_json(plain, "row").distribution.has_value());
  nlohmann::json bad = j;
  bad["distribution"] = "gaussian";
  EXPECT_THROW(result_from_json(bad, "row"), UsageError);
}

std::string write_file(const std::filesystem::path& dir, const std::string& name, const std::vector<Result>& rows) {
  nlohmann::json doc = {{"schema_version", kResultsSchemaVersion}, {"metadata", nlohmann::json::object()}};
  doc["results"] = nlohmann::json::array();
  for (const Result& r : rows) doc["results"].push_back(result_to_json(r));
  const std::string path = (dir / name).string();
  std::ofstream(path) << doc.dump();
  return path;
}

TEST(DistributionRows, CompareReadsACheckFileAndPairsRowsPerDistribution) {
  const auto dir = test::temp_dir("distribution_rows");
  const std::string base =
      write_file(dir, "base.json", {check_row(Distribution::normal), check_row(Distribution::outliers)});
  // The outliers row's error grew 10x: only that pair may say so.
  const std::string cur =
      write_file(dir, "cur.json", {check_row(Distribution::outliers, 1e-2), check_row(Distribution::normal)});
  const CompareReport rep = compare_results(read_results_json(base, nullptr), read_results_json(cur, nullptr), {});
  ASSERT_EQ(rep.pairs.size(), 2u);
  EXPECT_EQ(rep.missing, 0);
  EXPECT_EQ(rep.added, 0);
  int flagged = 0;
  for (const PairReport& p : rep.pairs) {
    const bool outliers = p.shape.find("outliers") != std::string::npos;
    EXPECT_TRUE(outliers || p.shape.find("normal") != std::string::npos) << p.shape;
    if (!p.problems.empty()) {
      ++flagged;
      EXPECT_TRUE(outliers) << p.shape;
    }
  }
  EXPECT_EQ(flagged, 1);
  EXPECT_TRUE(rep.failed());
  // What compare checks of each file: rows of other inputs are distinct, the
  // same row twice with the same inputs is still refused.
  EXPECT_NO_THROW(check_unique_keys(read_results_json(base, nullptr), base));
  const std::string twice =
      write_file(dir, "twice.json", {check_row(Distribution::normal), check_row(Distribution::normal)});
  EXPECT_THROW(check_unique_keys(read_results_json(twice, nullptr), twice), UsageError);
}

}  // namespace
}  // namespace fa
