// Every flag and config value is checked before anything runs or is written:
// integers in range (no wrap), finite thresholds, non-empty names, bounded and
// duplicate-free axes; the message names the flag as typed (or the file and
// key), the value, and what is accepted. A rejected run leaves every existing
// file as it was.
#include <gtest/gtest.h>

#include <climits>
#include <filesystem>
#include <fstream>

#include "core/errors.h"
#include "measure/traffic.h"
#include "process_util.h"
#include "test_util.h"
#include "sweep/config.h"

namespace fa {
namespace {

namespace fs = std::filesystem;

using test::usage_message;

std::string flag_error(const std::string& key, const std::string& flag, const std::string& text) {
  ConfigSource src;
  apply_override(src, key, text, flag);
  return usage_message([&] { expand_points(resolve_config(src)); });
}

struct BadFlag {
  const char *key, *flag, *text, *accepted;
};

TEST(InputChecks, FlagValuesAreRangeCheckedAndNamedAsTyped) {
  const BadFlag cases[] = {
      {"warmup", "--warmup", "3000000000", "expected an integer in [0, 1000000]"},
      {"min_samples", "--min-samples", "4294967297", "expected an integer in [1, 10000000]"},
      {"threads", "--threads", "4294967296", "expected an integer in [0, 1024]"},
      {"threads", "--threads", "-1", "expected an integer in [0, 1024]"},
      {"max_check_rows", "--max-check-rows", "0", "expected an integer"},
      {"max_seconds", "--max-seconds", "nan", "expected a number in (0, 86400]"},
      {"max_seconds", "--max-seconds", "1e400", "expected a number"},
      {"target_noise", "--target-noise", "inf", "expected a number in [0, 1]"},
      {"seed", "--seed", "-1", "expected 0 to"},
      {"seqlen", "--seqlen", "4294967297", "expected an integer"},
      {"head_dim", "--head-dim", "2048", "expected an integer in [1, 1024]"},
      {"block", "--block", "64x", "expected MxN, e.g. 128x64, or auto"},
      {"cpu_mem_limit", "--cpu-mem-limit", "4Q", "e.g. 8G"},
      {"timeout", "--timeout", "-1", "expected a number"},
      {"cooldown", "--cooldown", "-1", "expected a number in [0, 3600]"},
      {"cooldown", "--cooldown", "7200", "expected a number in [0, 3600]"},
  };
  for (const BadFlag& b : cases) {
    const std::string msg = flag_error(b.key, b.flag, b.text);
    EXPECT_EQ(msg.rfind(b.flag, 0), 0u) << b.flag << " " << b.text << ": " << msg;
    EXPECT_NE(msg.find(b.text), std::string::npos) << msg;
    EXPECT_NE(msg.find(b.accepted), std::string::npos) << msg;
    if (std::string(b.flag) != "--" + std::string(b.key))  // never "--max_seconds"
      EXPECT_EQ(msg.find("--" + std::string(b.key)), std::string::npos) << msg;
  }
}

TEST(InputChecks, ConfigFileValuesGetTheSameChecks) {
  auto dir = test::temp_dir("validate_file");
  for (const auto& [text, key] : std::vector<std::pair<std::string, std::string>>{
           {R"({"warmup": 3000000000})", "warmup"},
           {R"({"threads": "4294967296"})", "threads"},
           {R"({"max_seconds": "nan"})", "max_seconds"},
           {R"({"seqlen": [1.5]})", "seqlen"},
           {R"({"seed": -1})", "seed"},
           {R"({"block": ["64x"]})", "block"}}) {
    const std::string path = (dir / "c.json").string();
    std::ofstream(path) << text;
    const std::string msg = usage_message([&] { resolve_config(load_config_file(path)); });
    EXPECT_NE(msg.find(path + ":1: key '" + key + "'"), std::string::npos) << text << ": " << msg;
    EXPECT_NE(msg.find("expected"), std::string::npos) << msg;
  }
}

TEST(InputChecks, DuplicateAxisValuesAreRejected) {
  for (const auto& [key, flag, text] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"seqlen", "--seqlen", "64,64"},
           {"seqlen", "--seqlen", "64,32:128:x2"},
           {"block", "--block", "16x16,16x16"},
           {"dtype", "--dtype", "bf16,bfloat16"},
           {"causal", "--causal", "true,both"},
           {"kernels", "--kernels", "cpu.fa2,cpu.fa2"}}) {
    const std::string msg = flag_error(key, flag, text);
    EXPECT_NE(msg.find("appears twice"), std::string::npos) << text << ": " << msg;
  }
}

TEST(InputChecks, AxisListsAndPointCountsAreBounded) {
  std::string list;
  for (int i = 1; i <= 5000; ++i) list += (i > 1 ? "," : "") + std::to_string(i);
  EXPECT_NE(flag_error("seqlen", "--seqlen", list).find("at most 4096"), std::string::npos);
  ConfigSource src;
  apply_override(src, "seqlen", "16:4096:+16", "--seqlen");
  apply_override(src, "head_dim", "16:1024:+16", "--head-dim");
  apply_override(src, "batch", "1:32:+1", "--batch");
  const std::string msg = usage_message([&] { expand_points(resolve_config(src)); });
  EXPECT_NE(msg.find("524288 points"), std::string::npos) << msg;
}

// Past 2^52 multiply-adds the FLOP and modelled byte counts overflow int64
// (UBSan found it in the traffic model at seqlen 2^31 - 1): such a point is
// bad input; the largest one allowed is modelled without overflow.
TEST(InputChecks, PointsTooLargeToCountAreRejected) {
  AttnProblem p;
  p.seqlen_q = p.seqlen_k = INT_MAX;
  p.head_dim = 16;
  EXPECT_NE(p.invalid_reason().find("beyond 2^52"), std::string::npos) << p.invalid_reason();
  p.seqlen_q = p.seqlen_k = 1 << 22;
  p.head_dim = 256;  // 2^22 * 2^22 * 256 = 2^52 exactly
  ASSERT_EQ(p.invalid_reason(), "");
  for (Family f : {Family::standard, Family::fa1, Family::fa2}) {
    const Traffic t = traffic_model(f, p, Tile{16, 16, 4, 0});
    EXPECT_GT(t.read_bytes, 0) << to_string(f);
    EXPECT_GT(t.write_bytes, 0) << to_string(f);
  }
}

TEST(InputChecks, EmptyNamesAreRejected) {
  for (const auto& [key, flag] : std::vector<std::pair<std::string, std::string>>{
           {"json", "--json"}, {"csv", "--csv"}, {"md", "--md"}, {"kernels", "--kernels"},
           {"save_outputs", "--save-outputs"}, {"inputs", "--inputs"}, {"dtype", "--dtype"}})
    EXPECT_EQ(flag_error(key, flag, "").rfind(flag, 0), 0u) << flag;
}

// Outputs colliding with each other or with an input, through '.', '..' and
// links, and a rejected run: exit 2, every file as it was.
TEST(InputChecks, RejectedRunsLeaveEveryFileAsItWas) {
  auto dir = test::temp_dir("validate_keep");
  const std::string config = (dir / "c.json").string(), old = (dir / "old.json").string();
  std::ofstream(config) << R"({"seqlen": 16, "head_dim": 16, "kernels": "cpu.fa2", "max_seconds": 0.01})";
  std::ofstream(old) << "{\"earlier\": \"results\"}";
  fs::create_directories(dir / "sub");
  fs::create_symlink(old, dir / "link.json");
  const std::string config_text = test::slurp(config), old_text = test::slurp(old);
  const std::vector<std::vector<std::string>> bad = {
      {"--config", config, "--json", config},
      {"--config", config, "--csv", (dir / "sub" / ".." / "c.json").string()},
      {"--config", config, "--json", old, "--csv", old},
      {"--config", config, "--json", old, "--csv", (dir / "link.json").string()},
      {"--config", config, "--json", old, "--warmup", "3000000000"},
      {"--config", config, "--json", old, "--threads", "-1"},
      {"--config", config, "--json", old, "--md", (dir / "nofolder" / "x.md").string()},
      {"--config", config, "--json", old, "--save-outputs", config},
  };
  for (const auto& extra : bad) {
    std::vector<std::string> args = {"sweep", "--backend", "cpu"};
    args.insert(args.end(), extra.begin(), extra.end());
    test::ProcResult r = test::run_fa_bench(args, dir);
    EXPECT_EQ(r.code, 2) << extra[extra.size() - 2] << " " << extra.back() << ": " << r.err;
    EXPECT_EQ(test::slurp(config), config_text) << extra.back();
    EXPECT_EQ(test::slurp(old), old_text) << extra.back();
    EXPECT_TRUE(fs::is_symlink(dir / "link.json"));
  }
}

}  // namespace
}  // namespace fa
