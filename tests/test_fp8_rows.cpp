// An e4m3 row depends on how its inputs were quantized (--fp8-scaling,
// --fp8-hadamard): the settings are part of the row's key and of its JSON and
// CSV, e4m3 rows only, so rows of inputs quantized otherwise are never paired
// (compare), taken for one another (--resume) or joined (merge), and every
// other row keeps the key and columns it always had.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "compare/compare.h"
#include "core/errors.h"
#include "process_util.h"
#include "report/csv.h"
#include "report/result_json.h"
#include "sweep/merge.h"

namespace fa {
namespace {

Result row(DType dtype, std::optional<Fp8Settings> fp8 = std::nullopt) {
  Result r;
  r.kernel = "fa3.e4m3.hd128.128x128";
  r.family = Family::fa3;
  r.backend = Backend::cuda;
  r.problem.head_dim = 128;
  r.problem.dtype = dtype;
  r.fp8 = fp8;
  r.seed = 7;
  return r;
}

const Fp8Settings kTensor{Fp8Scaling::tensor, false};
const Fp8Settings kHead{Fp8Scaling::head, false};

TEST(Fp8Rows, TheSettingsArePartOfAnE4m3RowsKey) {
  const Result tensor = row(DType::e4m3, kTensor), head = row(DType::e4m3, kHead);
  EXPECT_NE(tensor.key(), head.key());
  EXPECT_NE(tensor.key(), row(DType::e4m3, Fp8Settings{Fp8Scaling::tensor, true}).key());
  EXPECT_NE(tensor.key().find("fp8_scaling=tensor fp8_hadamard=0"), std::string::npos) << tensor.key();
}

TEST(Fp8Rows, OtherRowsKeepTheirKey) {
  // The key files of earlier runs hold: changing it would unpair every bf16 row.
  Result r = row(DType::bf16);
  r.kernel = "fa2.bf16.hd128.128x64.w4.s2";
  EXPECT_EQ(r.key(),
            "fa2.bf16.hd128.128x64.w4.s2 batch=1 heads=1 heads_kv=1 seqlen_q=1 seqlen_k=1 head_dim=128 causal=0 "
            "dtype=bf16 softmax_scale=0.08838834764831843 pass=fwd");
}

TEST(Fp8Rows, JsonCarriesTheSettingsOnE4m3RowsOnly) {
  const Result e4m3 = row(DType::e4m3, Fp8Settings{Fp8Scaling::block, true});
  const nlohmann::json j = result_to_json(e4m3);
  EXPECT_EQ(j["fp8_scaling"], "block");
  EXPECT_EQ(j["fp8_hadamard"], true);
  const Result back = result_from_json(j, "row");
  ASSERT_TRUE(back.fp8.has_value());
  EXPECT_EQ(*back.fp8, *e4m3.fp8);
  EXPECT_EQ(back.key(), e4m3.key());

  const nlohmann::json bf16 = result_to_json(row(DType::bf16));
  EXPECT_FALSE(bf16.contains("fp8_scaling"));
  EXPECT_FALSE(bf16.contains("fp8_hadamard"));
  nlohmann::json wrong = bf16;
  wrong["fp8_scaling"] = "head";
  wrong["fp8_hadamard"] = false;
  EXPECT_THROW(result_from_json(wrong, "row"), UsageError);  // settings on a bf16 row
  nlohmann::json bad = j;
  bad["fp8_scaling"] = "rows";
  EXPECT_THROW(result_from_json(bad, "row"), UsageError);
  bad = j;
  bad.erase("fp8_hadamard");
  EXPECT_THROW(result_from_json(bad, "row"), UsageError);  // one without the other
}

TEST(Fp8Rows, CsvHasTheColumnsOnlyWhereARowIsE4m3) {
  EXPECT_EQ(csv_header().find("fp8_"), std::string::npos);
  EXPECT_EQ(csv_document({row(DType::bf16)}).find("fp8_"), std::string::npos);
  const std::string doc = csv_document({row(DType::bf16), row(DType::e4m3, kHead)});
  EXPECT_NE(doc.find("softmax_scale,fp8_scaling,fp8_hadamard,"), std::string::npos) << doc;
  const auto dir = test::temp_dir("fp8_csv");
  const std::string path = (dir / "r.csv").string();
  std::ofstream(path) << doc;
  const std::vector<Result> back = read_results_csv(path);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_FALSE(back[0].fp8.has_value());
  ASSERT_TRUE(back[1].fp8.has_value());
  EXPECT_EQ(*back[1].fp8, kHead);
  EXPECT_EQ(back[1].key(), row(DType::e4m3, kHead).key());
}

// A file written before rows carried the settings: its e4m3 rows take the
// run's, recorded in metadata.config, so they pair with the rows of today.
TEST(Fp8Rows, AnOlderFileTakesTheSettingsFromItsConfig) {
  const auto dir = test::temp_dir("fp8_old_file");
  nlohmann::json r = result_to_json(row(DType::e4m3, kHead));
  r.erase("fp8_scaling");
  r.erase("fp8_hadamard");
  nlohmann::json doc = {{"schema_version", kResultsSchemaVersion},
                        {"metadata", {{"config", {{"fp8_scaling", "head"}, {"fp8_hadamard", false}}}}},
                        {"results", {r}}};
  const std::string path = (dir / "old.json").string();
  std::ofstream(path) << doc.dump();
  std::vector<Result> rows = read_results_json(path, nullptr);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].fp8, kHead);
  doc["metadata"] = nlohmann::json::object();  // fa-check's and the defaults
  std::ofstream(path) << doc.dump();
  rows = read_results_json(path, nullptr);
  EXPECT_EQ(rows[0].fp8, kTensor);
}

TEST(Fp8Rows, CompareNeverPairsRowsOfOtherSettingsAndSaysWhy) {
  Result b = row(DType::e4m3, kTensor), c = row(DType::e4m3, kHead);
  const CompareReport rep = compare_results({b}, {c}, CompareOptions{});
  EXPECT_EQ(rep.missing, 1);
  EXPECT_EQ(rep.added, 1);
  EXPECT_TRUE(rep.failed());
  ASSERT_FALSE(rep.pairs.empty());
  ASSERT_FALSE(rep.pairs[0].problems.empty());
  EXPECT_NE(rep.pairs[0].problems[0].find("fp8_scaling tensor, fp8_hadamard false -> fp8_scaling head"),
            std::string::npos)
      << rep.pairs[0].problems[0];
}

const std::vector<std::string> kE4m3Sweep = {
    "sweep", "--backend", "cpu", "--kernels", "cpu.fa2", "--block", "16x16", "--seqlen", "16,32", "--head-dim", "16",
    "--heads", "1", "--dtype", "e4m3", "--warmup", "0", "--max-seconds", "0.01", "--seed", "1"};

std::vector<std::string> with(std::vector<std::string> base, const std::vector<std::string>& extra) {
  base.insert(base.end(), extra.begin(), extra.end());
  return base;
}

// The cpu kernels have no FP8 path: their e4m3 rows are `unsupported`, which
// is enough to see which rows a resume keeps, runs and skips.
TEST(Fp8Rows, ResumeWithOtherSettingsIsRefusedOrKeepsTheRowsApart) {
  const auto dir = test::temp_dir("fp8_resume");
  const std::string json = (dir / "r.json").string();
  test::ProcResult first = test::run_fa_bench(with(kE4m3Sweep, {"--json", json}), dir);
  ASSERT_EQ(first.code, 0) << first.err;
  const std::vector<Result> before_rows = read_results_json(json, nullptr);
  ASSERT_EQ(before_rows.size(), 2u);
  for (const Result& r : before_rows) EXPECT_EQ(r.fp8, kTensor);
  const std::string before = test::slurp(json);

  test::ProcResult refused = test::run_fa_bench({"sweep", "--resume", json, "--fp8-scaling", "head"}, dir);
  EXPECT_EQ(refused.code, 2) << refused.err;
  EXPECT_NE(refused.err.find("fp8_scaling \"tensor\" -> \"head\""), std::string::npos) << refused.err;
  EXPECT_EQ(test::slurp(json), before);

  // Allowed, the rows of the other settings are new rows, not the old ones.
  test::ProcResult allowed =
      test::run_fa_bench({"sweep", "--resume", json, "--fp8-scaling", "head", "--resume-allow-changes"}, dir);
  ASSERT_EQ(allowed.code, 0) << allowed.err;
  const std::vector<Result> rows = read_results_json(json, nullptr);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].fp8, kTensor);
  EXPECT_EQ(rows[1].fp8, kTensor);
  EXPECT_EQ(rows[2].fp8, kHead);
  EXPECT_EQ(rows[3].fp8, kHead);

  // Such a file is no piece of one sweep: merge names the row and both settings.
  nlohmann::json meta;
  std::vector<Result> mixed = read_results_json(json, &meta);
  MergePiece piece{json, meta, mixed};
  try {
    merge_results({piece}, MergeOptions{});
    ADD_FAILURE() << "merged rows of two FP8 settings";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("fp8_scaling tensor, fp8_hadamard false"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fa
