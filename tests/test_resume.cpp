// An interrupted sweep leaves valid files with every finished row, and
// --resume completes the rest without redoing what is there.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "process_util.h"
#include "report/csv.h"
#include "report/result_json.h"

namespace fa {
namespace {

size_t rows_in(const std::string& json) {
  try {
    return read_results_json(json, nullptr).size();
  } catch (const std::exception&) {
    return 0;  // not written yet
  }
}

TEST(Resume, InterruptThenResume) {
  auto dir = test::temp_dir("resume");
  std::string json = (dir / "r.json").string(), csv = (dir / "r.csv").string();
  // 8 rows of ~0.2 s each: target_noise 0 never stops early, max_seconds does.
  std::vector<std::string> args = {"sweep", "--backend", "cpu", "--kernels", "cpu.fa2", "--block",
                                   "32x32,64x64", "--seqlen", "64,96", "--causal", "both",
                                   "--head-dim", "32", "--heads", "1", "--dtype", "fp32",
                                   "--warmup", "0", "--min-samples", "1", "--target-noise", "0",
                                   "--max-samples", "1000000", "--max-seconds", "0.2", "--json", json, "--csv", csv};
  pid_t pid = test::spawn(FA_BENCH_EXE, args, dir);
  test::wait_until([&] { return rows_in(json) >= 2; });
  kill(pid, SIGINT);
  test::ProcResult first = test::wait_for(pid, dir);
  ASSERT_EQ(first.code, 130) << first.err;

  nlohmann::json meta;
  auto partial = read_results_json(json, &meta);
  EXPECT_EQ(meta["run_status"], "interrupted");
  ASSERT_GE(partial.size(), 2u);
  ASSERT_LT(partial.size(), 8u) << "the sweep finished before the interrupt; make it slower";
  auto partial_csv = read_results_csv(csv);
  ASSERT_EQ(partial_csv.size(), partial.size());

  test::ProcResult second = test::run_fa_bench({"sweep", "--resume", json, "--csv", csv}, dir);
  ASSERT_EQ(second.code, 0) << second.err;
  auto all = read_results_json(json, &meta);
  ASSERT_EQ(all.size(), 8u);
  EXPECT_EQ(read_results_csv(csv).size(), 8u);
  EXPECT_EQ(meta["run_status"], "complete");
  std::map<std::string, int> seen;
  for (const auto& r : all) {
    EXPECT_EQ(r.status, Status::ok) << r.reason;
    EXPECT_EQ(r.seed, partial[0].seed);  // the resumed run kept the seed
    ++seen[r.key()];
  }
  EXPECT_EQ(seen.size(), 8u);  // no row twice
  // The rows from before were kept, not redone: identical timing.
  for (size_t i = 0; i < partial.size(); ++i) {
    EXPECT_EQ(all[i].key(), partial[i].key());
    EXPECT_EQ(all[i].timing->median_ms, partial[i].timing->median_ms);
  }
  // stdout of the resumed run lists only the new rows (header + separator + rows).
  EXPECT_EQ(size_t(std::count(second.out.begin(), second.out.end(), '\n')), 2 + 8 - partial.size());
}

// Resuming pairs rows by kernel, problem and pass: with the fwd+bwd rows taken
// out of a finished file, --resume reruns exactly those and keeps the bwd rows
// of the same kernels as they were.
TEST(Resume, RowsArePairedByPass) {
  auto dir = test::temp_dir("resume_pass");
  const std::string json = (dir / "r.json").string();
  test::ProcResult first = test::run_fa_bench(
      {"sweep", "--backend", "cpu", "--kernels", "cpu.fa2", "--pass", "bwd,fwd+bwd", "--seqlen", "48,64",
       "--head-dim", "16", "--heads", "2", "--dtype", "fp32", "--max-seconds", "0.02", "--json", json},
      dir);
  ASSERT_EQ(first.code, 0) << first.err;
  nlohmann::json doc = nlohmann::json::parse(test::slurp(json));
  ASSERT_EQ(doc["results"].size(), 4u);
  nlohmann::json kept = nlohmann::json::array();
  for (const auto& row : doc["results"])
    if (row["pass"] == "bwd") kept.push_back(row);
  ASSERT_EQ(kept.size(), 2u);
  doc["results"] = kept;
  std::ofstream(json) << doc.dump();
  const auto before = read_results_json(json, nullptr);

  test::ProcResult second = test::run_fa_bench({"sweep", "--resume", json}, dir);
  ASSERT_EQ(second.code, 0) << second.err;
  EXPECT_NE(second.err.find("2 rows resumed"), std::string::npos) << second.err;
  const auto all = read_results_json(json, nullptr);
  ASSERT_EQ(all.size(), 4u);
  std::map<std::string, int> passes;
  for (const auto& r : all) ++passes[std::string(to_string(r.pass))];
  EXPECT_EQ(passes["bwd"], 2);
  EXPECT_EQ(passes["fwd+bwd"], 2);
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_EQ(all[i].key(), before[i].key());
    EXPECT_EQ(all[i].timing->median_ms, before[i].timing->median_ms);  // kept, not rerun
  }
  // Only the two fwd+bwd rows were new: header, separator, two lines.
  EXPECT_EQ(std::count(second.out.begin(), second.out.end(), '\n'), 2 + 2);
}

// One stop request delivered twice at once (as `timeout` does: to the process
// and to its group), or a SIGTERM (a batch scheduler's stop), still ends the
// sweep in order: exit 130, run_status "interrupted", every finished row kept.
class StopSignal : public ::testing::TestWithParam<int> {};

TEST_P(StopSignal, EchoedOrTermStillStopsInOrder) {
  const int sig = GetParam();
  auto dir = test::temp_dir(sig == SIGINT ? "stop_int" : "stop_term");
  std::string json = (dir / "r.json").string();
  std::vector<std::string> args = {"sweep", "--backend", "cpu", "--kernels", "cpu.fa2", "--seqlen", "64,96,128",
                                   "--causal", "both", "--head-dim", "32", "--heads", "1", "--dtype", "fp32",
                                   "--warmup", "0", "--min-samples", "1", "--target-noise", "0",
                                   "--max-samples", "1000000", "--max-seconds", "0.3", "--json", json};
  pid_t pid = test::spawn(FA_BENCH_EXE, args, dir);
  test::wait_until([&] { return rows_in(json) >= 1; });
  kill(pid, sig);
  kill(pid, sig);  // the echo, microseconds later
  test::ProcResult r = test::wait_for(pid, dir);
  ASSERT_EQ(r.code, 130) << r.err;
  EXPECT_NE(r.err.find("interrupted"), std::string::npos) << r.err;
  nlohmann::json meta;
  auto rows = read_results_json(json, &meta);
  EXPECT_EQ(meta["run_status"], "interrupted");
  EXPECT_GE(rows.size(), 1u);
  EXPECT_LT(rows.size(), 6u);
}

const std::vector<std::string> kTwoRows = {"sweep", "--backend", "cpu", "--kernels", "cpu.fa2", "--block", "16x16",
                                           "--seqlen", "16,32", "--head-dim", "16", "--heads", "1", "--dtype",
                                           "fp32", "--warmup", "0", "--min-samples", "1", "--max-samples", "2",
                                           "--max-seconds", "0.01", "--seed", "1"};

std::vector<std::string> with(std::vector<std::string> base, const std::vector<std::string>& extra) {
  base.insert(base.end(), extra.begin(), extra.end());
  return base;
}

// Resuming a copy writes the copy: the original run's recorded paths are never touched.
TEST(Resume, ResumeWritesTheFileItResumes) {
  auto dir = test::temp_dir("resume_copy");
  const std::string orig = (dir / "orig.json").string(), orig_csv = (dir / "orig.csv").string();
  ASSERT_EQ(test::run_fa_bench(with(kTwoRows, {"--json", orig, "--csv", orig_csv}), dir).code, 0);
  std::filesystem::create_directories(dir / "copy");
  const std::string copy = (dir / "copy" / "r.json").string();
  // The copy lost its last row, as if that run had been interrupted.
  nlohmann::json doc = nlohmann::json::parse(test::slurp(orig));
  doc["results"].erase(doc["results"].end() - 1);
  doc["metadata"]["run_status"] = "interrupted";
  std::ofstream(copy) << doc.dump(1);
  const std::string orig_text = test::slurp(orig), orig_csv_text = test::slurp(orig_csv);
  // A cooldown is a wait between rows, not how a row is made: the resume may add one.
  test::ProcResult r = test::run_fa_bench({"sweep", "--resume", copy, "--cooldown", "0.1"}, dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(test::slurp(orig), orig_text);
  EXPECT_EQ(test::slurp(orig_csv), orig_csv_text);
  nlohmann::json meta;
  EXPECT_EQ(read_results_json(copy, &meta).size(), 2u);
  EXPECT_EQ(meta["run_status"], "complete");
}

TEST(Resume, ARunThatWouldDifferIsRefused) {
  auto dir = test::temp_dir("resume_differs");
  const std::string json = (dir / "r.json").string();
  ASSERT_EQ(test::run_fa_bench(with(kTwoRows, {"--json", json}), dir).code, 0);
  const std::string before = test::slurp(json);
  for (const auto& [flags, what] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--seed", "2"}, "seed 1 -> 2"},
           {{"--seqlen", "64"}, "seqlen [16,32] -> [64]"},
           {{"--kernels", "cpu.fa1"}, "kernels"},
           {{"--threads", "1"}, "threads"}}) {
    test::ProcResult r = test::run_fa_bench(with({"sweep", "--resume", json}, flags), dir);
    EXPECT_EQ(r.code, 2) << flags[0] << ": " << r.err;
    EXPECT_NE(r.err.find(what), std::string::npos) << r.err;
    EXPECT_EQ(test::slurp(json), before);
  }
  nlohmann::json doc = nlohmann::json::parse(before);
  doc["metadata"]["git_commit"] = "0123456789ab";
  std::ofstream(json) << doc.dump(1);
  test::ProcResult other_build = test::run_fa_bench({"sweep", "--resume", json}, dir);
  EXPECT_EQ(other_build.code, 2) << other_build.err;
  EXPECT_NE(other_build.err.find("git_commit"), std::string::npos) << other_build.err;
  test::ProcResult allowed = test::run_fa_bench({"sweep", "--resume", json, "--resume-allow-changes"}, dir);
  EXPECT_EQ(allowed.code, 0) << allowed.err;
}

// fa-check rewrites its reports after every row: a SIGKILL leaves what finished.
TEST(Resume, CheckReportsSurviveSigkill) {
  auto dir = test::temp_dir("check_kill");
  const std::string json = (dir / "c.json").string();
  pid_t pid = test::spawn(FA_CHECK_EXE, {"--config", std::string(FA_SOURCE_DIR) + "/configs/check.json", "--backend",
                                         "cpu", "--threads", "1", "--seed", "1", "--json", json},
                          dir);
  test::wait_until([&] { return rows_in(json) >= 2; });
  kill(pid, SIGKILL);
  test::wait_for(pid, dir);
  nlohmann::json meta;
  EXPECT_GE(read_results_json(json, &meta).size(), 2u);
  EXPECT_EQ(meta["run_status"], "running");
}

INSTANTIATE_TEST_SUITE_P(Signals, StopSignal, ::testing::Values(SIGINT, SIGTERM),
                         [](const auto& info) { return info.param == SIGINT ? "SigInt" : "SigTerm"; });

}  // namespace
}  // namespace fa
