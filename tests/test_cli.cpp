// The real fa-bench binary: bad input is exit code 2 with a clear message and
// no output file; --help explains the flags; list; the smoke sweep end to end.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "process_util.h"
#include "report/csv.h"
#include "report/result_json.h"

namespace fa {
namespace {

namespace fs = std::filesystem;
using test::ProcResult;
using test::run_fa_bench;

struct BadInput {
  const char* name;
  std::vector<std::string> args;  // besides sweep --backend cpu --json/--csv
  const char* message;            // a piece stderr must contain
  const char* config = nullptr;   // written to c.json and passed with --config
};

class BadInputTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(BadInputTest, ExitsTwoAndWritesNothing) {
  const BadInput& b = GetParam();
  auto dir = test::temp_dir(std::string("cli_") + b.name);
  std::vector<std::string> args = {"sweep", "--backend", "cpu", "--json", (dir / "out.json").string(),
                                   "--csv", (dir / "out.csv").string(), "--md", (dir / "out.md").string()};
  if (b.config) {
    std::ofstream(dir / "c.json") << b.config;
    args.push_back("--config");
    args.push_back((dir / "c.json").string());
  }
  args.insert(args.end(), b.args.begin(), b.args.end());
  ProcResult r = run_fa_bench(args, dir);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find(b.message), std::string::npos) << "stderr: " << r.err;
  EXPECT_NE(r.err.find("error"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "out.json"));
  EXPECT_FALSE(fs::exists(dir / "out.csv"));
  EXPECT_FALSE(fs::exists(dir / "out.md"));
}

INSTANTIATE_TEST_SUITE_P(
    Cli, BadInputTest,
    ::testing::Values(
        BadInput{"unknown_kernel", {"--kernels", "cpu.fa9"}, "cpu.fa9"},
        BadInput{"seqlen_zero", {"--seqlen", "0"}, "--seqlen"},
        BadInput{"seqlen_range", {"--seqlen", "512:128:x2"}, "start 512 > stop 128"},
        BadInput{"head_dim_too_big", {"--head-dim", "2048"}, "--head-dim"},
        BadInput{"heads_kv", {"--heads", "6", "--heads-kv", "4"}, "divisible by heads_kv"},
        BadInput{"hidden", {"--hidden", "1000", "--head-dim", "64"}, "--hidden: 1000 is not divisible"},
        BadInput{"dtype", {"--dtype", "fp8"}, "unknown dtype 'fp8'"},
        BadInput{"bad_flag_value", {"--warmup", "many"}, "--warmup"},
        BadInput{"unknown_flag", {"--seqlens", "128"}, "seqlens"},
        BadInput{"missing_config", {"--config", "/nonexistent/x.json"}, "/nonexistent/x.json"},
        BadInput{"malformed_config", {}, "c.json:3", "{\n \"seqlen\": 128,\n \"causal\": tru\n}\n"},
        BadInput{"unknown_key", {}, "unknown key 'head_dims'", "{\"head_dims\": 64}"},
        BadInput{"wrong_type", {}, "key 'batch'", "{\"batch\": [1.5]}"},
        BadInput{"resume_missing", {"--resume", "/nonexistent/r.json"}, "/nonexistent/r.json"},
        BadInput{"pass_unknown", {"--pass", "fwd,backward"},
                 "--pass: unknown pass 'backward'; expected fwd, bwd or fwd+bwd"},
        BadInput{"pass_twice", {"--pass", "bwd,bwd"}, "--pass: bwd appears twice in 'bwd,bwd'; expected each pass once"},
        BadInput{"pass_empty", {"--pass", ""}, "--pass"},
        BadInput{"pass_config", {}, "key 'pass': unknown pass 'both'", "{\"pass\": \"both\"}"},
        BadInput{"pass_not_implemented", {"--pass", "bwd", "--kernels", "cpu.fa1,cpu.standard"},
                 "pass bwd: no selected kernel implements the backward pass"},
        BadInput{"pass_fwd_of_a_backward", {"--kernels", "cpu.fa2.bwd.64x64"},
                 "pass fwd: no selected kernel implements the forward pass"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(Cli, UnwritableOutputIsAUsageError) {
  auto dir = test::temp_dir("cli_unwritable");
  ProcResult r = run_fa_bench({"sweep", "--backend", "cpu", "--json", "/nonexistent/dir/out.json"}, dir);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("does not exist"), std::string::npos) << r.err;
}

TEST(Cli, HelpExplainsEveryFlagWithAnExample) {
  auto dir = test::temp_dir("cli_help");
  ProcResult r = run_fa_bench({"sweep", "--help"}, dir);
  EXPECT_EQ(r.code, 0);
  for (const char* s : {"--seqlen", "512:16384:x2", "--total-tokens", "--hidden", "--block", "--resume",
                        "--max-check-rows", "--no-l2-flush", "--cpu-mem-limit", "--pass", "fwd+bwd", "Example"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s;
  ProcResult none = run_fa_bench({}, dir);
  EXPECT_EQ(none.code, 2);  // a subcommand is required
}

TEST(Cli, ListShowsCpuVariants) {
  auto dir = test::temp_dir("cli_list");
  ProcResult r = run_fa_bench({"list", "--backend", "cpu"}, dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("| cpu.fa2.64x64 | fa2 | cpu | fwd | 64x64 |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| cpu.fa2.bwd.64x64 | fa2 | cpu | bwd | 64x64 | any | any | yes | cpu.fa2.64x64 |"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("| yes |"), std::string::npos);
}

TEST(Cli, SmokeSweepEndToEnd) {
  auto dir = test::temp_dir("cli_smoke");
  std::string json = (dir / "s.json").string(), csv = (dir / "s.csv").string();
  ProcResult r = run_fa_bench({"sweep", "--config", std::string(FA_SOURCE_DIR) + "/configs/smoke.json",
                               "--json", json, "--csv", csv, "--seed", "1234"},
                              dir);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(r.err.find("seed: 1234"), std::string::npos) << r.err;
  nlohmann::json meta;
  auto rows = read_results_json(json, &meta);
  // 2 seqlen x 2 causal x 2 dtype points; cpu.standard + {fa1, fa2} x {64x64, 32x32}.
  ASSERT_EQ(rows.size(), 8u * 5);
  EXPECT_EQ(read_results_csv(csv).size(), rows.size());
  for (const auto& row : rows) {
    EXPECT_EQ(row.status, Status::ok) << row.kernel << " " << row.problem.describe() << ": " << row.reason;
    ASSERT_TRUE(row.timing.has_value());
    EXPECT_GT(row.timing->median_ms, 0);
    EXPECT_GT(row.tflops, 0);
    ASSERT_TRUE(row.errors.has_value());
    EXPECT_LE(row.errors->o_max_abs, row.tolerances->tolerance);
    EXPECT_EQ(row.seed, 1234u);
    EXPECT_EQ(row.traffic_measured_source, "cpu-count");
  }
  EXPECT_EQ(meta["run_status"], "complete");
  EXPECT_EQ(meta["seed"], 1234u);
  EXPECT_EQ(meta["backend"], "cpu");
  EXPECT_EQ(meta["timing_method"], "host steady_clock, no cache flush");
  EXPECT_TRUE(meta["git_commit"].is_string());
  EXPECT_EQ(meta["config"]["block"], (nlohmann::json{"64x64", "32x32"}));
  // stdout is the Markdown table: header, separator, one line per row.
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2 + 40);
}

// The backward end to end on small shapes: cpu.fa2.bwd validated against the
// float64 gradients and timed, bwd and fwd+bwd rows beside each other, the
// counted bytes equal to the model, every output carrying the pass.
TEST(Cli, BackwardSweepEndToEnd) {
  auto dir = test::temp_dir("cli_bwd");
  const std::string json = (dir / "b.json").string(), csv = (dir / "b.csv").string();
  ProcResult r = run_fa_bench({"sweep", "--backend", "cpu", "--kernels", "cpu.fa2", "--pass", "bwd,fwd+bwd",
                               "--seqlen", "96,130", "--seqlen-k", "80", "--head-dim", "32", "--heads", "4",
                               "--heads-kv", "2", "--causal", "both", "--dtype", "bf16,fp32", "--block", "64x64,32x16",
                               "--max-seconds", "0.02", "--seed", "99", "--threads", "2", "--json", json, "--csv", csv},
                              dir);
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  nlohmann::json meta;
  const auto rows = read_results_json(json, &meta);
  // 2 seqlen x 2 causal x 2 dtype points; 2 passes x 2 blocks.
  ASSERT_EQ(rows.size(), 8u * 4);
  const auto from_csv = read_results_csv(csv);
  ASSERT_EQ(from_csv.size(), rows.size());
  std::map<std::string, int> keys;
  for (size_t i = 0; i < rows.size(); ++i) {
    const Result& row = rows[i];
    SCOPED_TRACE(row.key());
    ++keys[row.key()];
    EXPECT_EQ(row.status, Status::ok) << row.reason;
    EXPECT_TRUE(row.pass == Pass::bwd || row.pass == Pass::fwd_bwd);
    EXPECT_EQ(row.kernel.rfind("cpu.fa2.bwd.", 0), 0u) << row.kernel;
    EXPECT_EQ(row.fwd_kernel, "cpu.fa2." + row.kernel.substr(std::string("cpu.fa2.bwd.").size()));
    ASSERT_TRUE(row.timing.has_value());
    EXPECT_GT(row.tflops, 0);
    ASSERT_TRUE(row.grad_errors.has_value());
    EXPECT_TRUE(row.grad_errors->passes());
    EXPECT_EQ(row.grad_errors->cols_checked, 80);
    EXPECT_EQ(row.traffic_measured_source, "cpu-count");
    EXPECT_EQ(row.traffic_measured->read_bytes, row.traffic_model.read_bytes);
    EXPECT_EQ(row.traffic_measured->write_bytes, row.traffic_model.write_bytes);
    EXPECT_GT(row.peak_extra_bytes, 0);  // D and the dQ accumulator
    EXPECT_EQ(from_csv[i].key(), row.key());
    EXPECT_EQ(from_csv[i].fwd_kernel, row.fwd_kernel);
    ASSERT_TRUE(from_csv[i].grad_errors.has_value());
    EXPECT_EQ(from_csv[i].grad_errors->dk.tolerance, row.grad_errors->dk.tolerance);
  }
  EXPECT_EQ(keys.size(), rows.size());  // bwd and fwd+bwd rows of one kernel are distinct rows
  EXPECT_EQ(meta["config"]["pass"], (nlohmann::json{"bwd", "fwd+bwd"}));
  // stdout: the table with the pass column and one line per row.
  EXPECT_NE(r.out.find("| cpu.fa2.bwd.32x16 | fwd+bwd | b1 h4/2 q96 k80 d32 bf16 | ok |"), std::string::npos) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2 + 32);
}

TEST(Cli, CountersWithoutAGpuSayWhy) {
  auto dir = test::temp_dir("cli_counters");
  ProcResult r = run_fa_bench({"sweep", "--backend", "cpu", "--seqlen", "64", "--head-dim", "32", "--kernels",
                               "cpu.fa2", "--counters", "--json", (dir / "r.json").string()},
                              dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("--counters: no hardware counters on the cpu back end"), std::string::npos) << r.err;
  auto rows = read_results_json((dir / "r.json").string(), nullptr);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].traffic_measured_source, "cpu-count");  // never labelled as hardware counters
}

}  // namespace
}  // namespace fa

// --devices on the cpu back end (its one device, 0): the rows of a run without
// the flag, each with its device in JSON and CSV; a file without the flag has
// neither; a resume without the flag continues the run.
namespace fa {
namespace {

TEST(Cli, DevicesRecordsEachRowsDeviceAndResumesWithout) {
  auto dir = test::temp_dir("cli_devices");
  const std::vector<std::string> sweep = {"sweep", "--backend", "cpu", "--kernels", "cpu.fa2", "--block", "16x16",
                                          "--seqlen", "16,32,48", "--head-dim", "16", "--heads", "1", "--dtype",
                                          "fp32", "--warmup", "0", "--min-samples", "1", "--max-samples", "2",
                                          "--max-seconds", "0.01", "--seed", "7"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = sweep;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  const std::string plain = (dir / "plain.json").string(), plain_csv = (dir / "plain.csv").string();
  ProcResult p = run_fa_bench(with({"--json", plain, "--csv", plain_csv}), dir);
  ASSERT_EQ(p.code, 0) << p.err;
  const nlohmann::json plain_doc = nlohmann::json::parse(test::slurp(plain));
  for (const auto& row : plain_doc["results"]) EXPECT_FALSE(row.contains("device")) << row.dump();
  EXPECT_FALSE(plain_doc["metadata"].contains("devices"));
  EXPECT_FALSE(plain_doc["metadata"]["config"].contains("devices"));
  EXPECT_EQ(test::slurp(plain_csv).find("device_"), std::string::npos);

  const std::string json = (dir / "d.json").string(), csv = (dir / "d.csv").string();
  ProcResult r = run_fa_bench(with({"--devices", "all", "--json", json, "--csv", csv}), dir);
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json meta;
  const auto rows = read_results_json(json, &meta);
  const auto base = read_results_json(plain, nullptr);
  ASSERT_EQ(rows.size(), base.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].key(), base[i].key());  // plan order
    ASSERT_TRUE(rows[i].device);
    EXPECT_EQ(rows[i].device->index, 0);
    EXPECT_FALSE(rows[i].device->name.empty());
  }
  EXPECT_EQ(meta["config"]["devices"], nlohmann::json::array({0}));  // "all" resolved
  ASSERT_TRUE(meta["devices"].is_array());
  EXPECT_EQ(meta["devices"].size(), 1u);
  const std::string csv_text = test::slurp(csv);
  EXPECT_NE(csv_text.find(",device_index,device_name,device_uuid\n"), std::string::npos);
  const auto from_csv = read_results_csv(csv);
  ASSERT_EQ(from_csv.size(), rows.size());
  EXPECT_EQ(from_csv[0].device->name, rows[0].device->name);

  // Resume a run cut short, without --devices: the missing rows run on the
  // default device and carry none.
  nlohmann::json doc = nlohmann::json::parse(test::slurp(json));
  doc["results"].erase(doc["results"].end() - 1);
  const std::string cut = (dir / "cut.json").string();
  {
    std::ofstream f(cut);
    f << doc.dump(2);
  }
  ProcResult res = run_fa_bench({"sweep", "--resume", cut}, dir);
  ASSERT_EQ(res.code, 0) << res.err;
  const auto resumed = read_results_json(cut, nullptr);
  ASSERT_EQ(resumed.size(), rows.size());
  EXPECT_TRUE(resumed.front().device);
  EXPECT_FALSE(resumed.back().device);
}

TEST(Cli, FaCheckDevicesRecordsEachRowsDevice) {
  auto dir = test::temp_dir("cli_check_devices");
  const std::string json = (dir / "c.json").string(), csv = (dir / "c.csv").string();
  ProcResult r = test::wait_for(test::spawn(FA_CHECK_EXE,
                                            {"--backend", "cpu", "--kernels", "cpu.fa2.64x64", "--quick", "--seed",
                                             "3", "--devices", "0", "--json", json, "--csv", csv},
                                            dir),
                                dir);
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json doc = nlohmann::json::parse(test::slurp(json));
  ASSERT_FALSE(doc["results"].empty());
  for (const auto& row : doc["results"]) EXPECT_EQ(row["device"]["index"], 0) << row.dump();
  EXPECT_EQ(doc["metadata"]["config"]["devices"], nlohmann::json::array({0}));
  EXPECT_NE(test::slurp(csv).find("device_index"), std::string::npos);
}

}  // namespace
}  // namespace fa
