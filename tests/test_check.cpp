// fa-check through the real binary: the self-test catches every planted fault,
// a planted failure exits 1 and prints a command that replays exactly that
// failure, the clean kernels pass, the JSON report is a results file.
#include <gtest/gtest.h>

#include <csignal>
#include <fstream>
#include <sstream>

#include "process_util.h"
#include "registry/cpu_kernels.h"
#include "report/result_json.h"

namespace fa {
namespace {

test::ProcResult run_fa_check(const std::vector<std::string>& args, const std::filesystem::path& dir) {
  return test::wait_for(test::spawn(FA_CHECK_EXE, args, dir), dir);
}

// Splits a command line the way a POSIX shell does for '...' quoting and the
// '\'' idiom (all replay_command writes).
std::vector<std::string> shell_split(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  bool in_word = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '\'') {
      const size_t end = line.find('\'', i + 1);
      cur += line.substr(i + 1, end - i - 1);
      i = end;
      in_word = true;
    } else if (c == '\\' && i + 1 < line.size()) {
      cur += line[++i];
      in_word = true;
    } else if (c == ' ') {
      if (in_word) out.push_back(cur);
      cur.clear();
      in_word = false;
    } else {
      cur += c;
      in_word = true;
    }
  }
  if (in_word) out.push_back(cur);
  return out;
}

// The table line of `kernel` on `shape` (first match), "" if none.
std::string table_line(const std::string& out, const std::string& shape, const std::string& kernel) {
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("| " + shape + " |", 0) == 0 && line.find("| " + kernel + " |") != std::string::npos)
      return line;
  return "";
}

const std::string kSuite = std::string(FA_SOURCE_DIR) + "/configs/check.json";

TEST(Check, SelfTestCatchesEveryPlantedFault) {
  auto dir = test::temp_dir("check_selftest");
  test::ProcResult r = run_fa_check({"--self-test", "--config", kSuite, "--seed", "11"}, dir);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  std::vector<std::string> names;
  for (CpuFault f : planted_cpu_faults()) names.emplace_back(to_string(f));
  for (CpuBwdFault f : planted_cpu_bwd_faults()) names.emplace_back(to_string(f));
  for (const std::string& name : names) {
    const auto at = r.out.find("  " + name);
    ASSERT_NE(at, std::string::npos) << name << " missing from the report:\n" << r.out;
    const std::string line = r.out.substr(at, r.out.find('\n', at) - at);
    EXPECT_NE(line.find("caught by"), std::string::npos) << line;
  }
  for (const char* clean : {"  cpu.fa2.64x64 (clean)", "  cpu.fa2.bwd.64x64 (clean)"}) {
    const auto at = r.out.find(clean);
    ASSERT_NE(at, std::string::npos) << clean << " missing:\n" << r.out;
    EXPECT_NE(r.out.substr(at, r.out.find('\n', at) - at).find("(as it must)"), std::string::npos)
        << "the clean kernel must pass:\n" << r.out;
  }
}

// A planted failure, forward or backward, exits 1 and prints a command that
// reruns it with the identical table line.
class PlantedFailure : public ::testing::TestWithParam<const char*> {};

TEST_P(PlantedFailure, ExitsOneAndItsReplayReproducesIt) {
  auto dir = test::temp_dir("check_planted");
  const std::string kernel = GetParam();
  test::ProcResult r = run_fa_check(
      {"--config", kSuite, "--quick", "--backend", "cpu", "--kernels", kernel, "--seed", "4242"}, dir);
  ASSERT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("seed 4242"), std::string::npos) << r.err;
  // The first failure's replay line (indented, after its "- kernel on 'shape'" line).
  const auto fail_at = r.out.find("\n- " + kernel + " on '");
  ASSERT_NE(fail_at, std::string::npos) << r.out;
  const auto shape_at = fail_at + 3 + kernel.size() + 5;  // "\n- " kernel " on '"
  const std::string shape = r.out.substr(shape_at, r.out.find('\'', shape_at) - shape_at);
  const auto cmd_at = r.out.find("\n  ", fail_at + 1) + 3;
  const std::string cmd = r.out.substr(cmd_at, r.out.find('\n', cmd_at) - cmd_at);
  EXPECT_NE(cmd.find("--seed 4242"), std::string::npos) << cmd;
  const std::string first_line = table_line(r.out, shape, kernel);
  ASSERT_FALSE(first_line.empty()) << shape << "\n" << r.out;
  ASSERT_NE(first_line.find("**fail**"), std::string::npos) << first_line;

  std::vector<std::string> args = shell_split(cmd);
  ASSERT_GE(args.size(), 2u) << cmd;
  args.erase(args.begin());  // the program
  auto dir2 = test::temp_dir("check_replay");
  test::ProcResult replay = run_fa_check(args, dir2);
  EXPECT_EQ(replay.code, 1) << cmd << "\n" << replay.out << replay.err;
  // Same inputs, same reference rows, same kernel: the very same numbers.
  // (The distribution column differs only if the replay picked another one.)
  EXPECT_EQ(table_line(replay.out, shape, kernel), first_line) << cmd << "\n" << replay.out;
}

INSTANTIATE_TEST_SUITE_P(Check, PlantedFailure,
                         ::testing::Values("cpu.fa2.64x64+causal_off_by_one", "cpu.fa2.bwd.64x64+gqa_not_summed"),
                         [](const auto& info) { return info.index == 0 ? "Forward" : "Backward"; });

// A case's "pass" chooses which variants run on it: the backward ones run
// after their forward partner and report dQ, dK, dV.
TEST(Check, ACasesPassChoosesItsVariants) {
  auto dir = test::temp_dir("check_pass");
  const std::string suite = (dir / "s.json").string(), json = (dir / "c.json").string();
  std::ofstream(suite) << R"({"cases": [
    {"case": "b1 h4/2 q70 k90 d32 bf16 causal", "pass": ["bwd"]},
    {"case": "b1 h2/2 q40 k40 d32 fp32", "pass": ["fwd"]},
    {"case": "b1 h2/1 q33 k65 d16 fp16"}]})";
  test::ProcResult r = run_fa_check({"--config", suite, "--backend", "cpu", "--kernels",
                                     "cpu.fa2.64x64,cpu.fa2.bwd.64x64", "--json", json}, dir);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const std::vector<Result> rows = read_results_json(json, nullptr);
  std::vector<std::string> got;
  for (const Result& row : rows) {
    got.push_back(row.problem.describe() + " " + row.kernel);
    EXPECT_EQ(row.grad_errors.has_value(), row.pass == Pass::bwd) << row.key();
    if (row.pass == Pass::bwd) {
      EXPECT_EQ(row.fwd_kernel, "cpu.fa2.64x64");
      EXPECT_TRUE(row.grad_errors->passes());
    }
  }
  EXPECT_EQ(got, (std::vector<std::string>{"b1 h4/2 q70 k90 d32 bf16 causal cpu.fa2.bwd.64x64",
                                           "b1 h2/2 q40 k40 d32 fp32 cpu.fa2.64x64",
                                           "b1 h2/1 q33 k65 d16 fp16 cpu.fa2.64x64",
                                           "b1 h2/1 q33 k65 d16 fp16 cpu.fa2.bwd.64x64"}));
  // The table line of a backward row carries the gradients and the columns checked.
  const std::string line = table_line(r.out, "b1 h4/2 q70 k90 d32 bf16 causal", "cpu.fa2.bwd.64x64");
  EXPECT_NE(line.find(" / "), std::string::npos) << line;
  EXPECT_EQ(line.substr(line.size() - 6), "| 90 |") << line;
  std::ofstream(suite) << R"({"cases": [{"case": "b1 h2/2 q40 k40 d32 fp32", "pass": ["fwd+bwd"]}]})";
  test::ProcResult bad = run_fa_check({"--config", suite, "--backend", "cpu"}, dir);
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("\"pass\" entries are fwd or bwd"), std::string::npos) << bad.err;
}

TEST(Check, CleanKernelsPassTheQuickSuiteAndWriteResults) {
  auto dir = test::temp_dir("check_clean");
  const std::string json = (dir / "check.json").string(), csv = (dir / "check.csv").string();
  test::ProcResult r = run_fa_check({"--config", kSuite, "--quick", "--backend", "cpu", "--kernels",
                                     "cpu.standard,cpu.fa1.64x64,cpu.fa2.64x64", "--json", json, "--csv", csv},
                                    dir);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.err.find("seed: "), std::string::npos) << r.err;
  nlohmann::json meta;
  std::vector<Result> rows = read_results_json(json, &meta);
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows.size() % 3, 0u);
  for (const Result& row : rows) {
    EXPECT_EQ(row.status, Status::ok) << row.key();
    EXPECT_FALSE(row.timing.has_value()) << "fa-check never times: " << row.key();
    ASSERT_TRUE(row.errors.has_value());
    EXPECT_GT(row.tolerances->tolerance, 0);
  }
  auto doc = nlohmann::json::parse(test::slurp(json));
  EXPECT_TRUE(doc["results"][0].contains("distribution"));
  EXPECT_EQ(meta["timing_method"], "none (validation only)");
  const std::string csv_text = test::slurp(csv);
  EXPECT_NE(csv_text.substr(0, csv_text.find('\n')).find(",distribution,lse_rel_l2"), std::string::npos);
}

TEST(Check, InterruptWritesTheRowsCheckedSoFar) {
  auto dir = test::temp_dir("check_interrupt");
  const std::string json = (dir / "c.json").string();
  // The suite named explicitly: the default path is found only from a build folder inside
  // the source tree, and this test is about the interrupt, not about that lookup.
  pid_t pid = test::spawn(FA_CHECK_EXE, {"--config", kSuite, "--backend", "cpu",
                                         "--threads", "1", "--json", json}, dir);
  // Wait for the first rows of the table, then stop it.
  test::wait_until([&] { return test::slurp((dir / "stdout.txt").string()).find("| ok |") != std::string::npos; });
  kill(pid, SIGINT);
  test::ProcResult r = test::wait_for(pid, dir);
  ASSERT_EQ(r.code, 130) << r.err;
  nlohmann::json meta;
  auto rows = read_results_json(json, &meta);
  EXPECT_EQ(meta["run_status"], "interrupted");
  EXPECT_GE(rows.size(), 1u);
}

TEST(Check, BadInputIsExitTwo) {
  auto dir = test::temp_dir("check_bad");
  EXPECT_EQ(run_fa_check({"--backend", "cpu", "--case", "b1 h3/2 q8 k8 d64 bf16"}, dir).code, 2);
  EXPECT_EQ(run_fa_check({"--backend", "cpu", "--case", "b1 h2/2 q8 k8 d64 bf16 causl"}, dir).code, 2);
  test::ProcResult r = run_fa_check({"--backend", "cpu", "--kernels", "cpu.fa2.64x64+no_such_fault",
                                     "--case", "b1 h2/2 q8 k8 d64 bf16"}, dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("no_such_fault"), std::string::npos) << r.err;
  EXPECT_EQ(run_fa_check({"--config", "/nonexistent/check.json", "--backend", "cpu"}, dir).code, 2);
}

// FP8 settings of a case: the suite's "fp8_scaling" / "fp8_hadamard" keys and the
// flags of the same names; both only for e4m3, anything else exit 2 and no file.
TEST(Check, Fp8SettingsAreForE4m3CasesOnly) {
  auto dir = test::temp_dir("check_fp8");
  const std::string suite = (dir / "s.json").string(), json = (dir / "c.json").string();
  auto expect_usage = [&](const std::vector<std::string>& args, const std::string& says) {
    test::ProcResult r = run_fa_check(args, dir);
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_NE(r.err.find(says), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(json)) << "bad input wrote " << json;
  };
  std::ofstream(suite) << R"({"cases": [{"case": "b1 h2/2 q40 k40 d32 bf16", "fp8_scaling": "block"}]})";
  expect_usage({"--config", suite, "--backend", "cpu", "--json", json}, "are for e4m3 cases");
  std::ofstream(suite) << R"({"cases": [{"case": "b1 h2/2 q40 k40 d32 e4m3", "fp8_scaling": "rows"}]})";
  expect_usage({"--config", suite, "--backend", "cpu", "--json", json}, "\"fp8_scaling\" is tensor, head or block");
  std::ofstream(suite) << R"({"cases": [{"case": "b1 h2/2 q40 k40 d32 e4m3", "fp8_hadamard": "yes"}]})";
  expect_usage({"--config", suite, "--backend", "cpu", "--json", json}, "\"fp8_hadamard\" is");
  expect_usage({"--backend", "cpu", "--case", "b1 h2/2 q40 k40 d32 bf16", "--fp8-scaling", "block", "--json", json},
               "apply to an e4m3 --case");
  expect_usage({"--backend", "cpu", "--case", "b1 h2/2 q40 k40 d32 bf16", "--fp8-hadamard", "--json", json},
               "apply to an e4m3 --case");
  expect_usage({"--backend", "cpu", "--case", "b1 h2/2 q40 k40 d32 e4m3", "--fp8-scaling", "rows", "--json", json},
               "--fp8-scaling: unknown 'rows'");
  // As a filter: the suite's e4m3 cases quantized that way, none here.
  std::ofstream(suite) << R"({"cases": [{"case": "b1 h2/2 q40 k40 d32 e4m3", "fp8_scaling": "head"},
                                      {"case": "b1 h2/2 q40 k40 d32 bf16"}]})";
  expect_usage({"--config", suite, "--backend", "cpu", "--fp8-scaling", "block", "--json", json},
               "no case left after the filters");
  expect_usage({"--config", suite, "--backend", "cpu", "--fp8-hadamard", "--json", json},
               "no case left after the filters");
}

// A faulty variant is reachable only through fa-check: never in the registry.
TEST(Check, FaultyVariantsAreNotRegistered) {
  for (const KernelVariant& v : Registry::instance().all())
    EXPECT_EQ(v.name.find('+'), std::string::npos) << v.name;
}

}  // namespace
}  // namespace fa
