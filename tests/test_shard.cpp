// --shard K/N: the flag's parser, the deal of a plan's points into shards (each
// point once, whole, by estimated FLOPs), the plan's hash, and merge_results'
// joins and refusals on pieces made in memory (the CLI's are in the hostile
// corpus, tests/data/hostile/shard.cases, and the Slurm recipe's test).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "registry/kernel.h"
#include "sweep/config.h"
#include "sweep/merge.h"
#include "sweep/plan.h"
#include "sweep/shard.h"
#include "sweep/values.h"
#include "test_util.h"

namespace fa {
namespace {

using test::usage_message;

TEST(ShardFlag, AcceptsKOfN) {
  const Shard s = parse_shard("2/4", "--shard");
  EXPECT_EQ(s.index, 2);
  EXPECT_EQ(s.count, 4);
  EXPECT_EQ(s.str(), "2/4");
  EXPECT_EQ(parse_shard("1/1", "--shard").str(), "1/1");
  EXPECT_EQ(parse_shard("65536/65536", "--shard").str(), "65536/65536");
}

TEST(ShardFlag, RefusesWhatIsNotKOfN) {
  for (const char* bad : {"", "4", "/4", "2/", "1/2/3", "a/4", "1/b", "1.0/4", "1/4.0", "0x1/4", "1e0/4", "1 /4"}) {
    const std::string msg = usage_message([&] { parse_shard(bad, "--shard"); });
    EXPECT_NE(msg.find("--shard: '" + std::string(bad) + "' is not a shard"), std::string::npos) << msg;
    EXPECT_NE(msg.find("expected K/N"), std::string::npos) << msg;
  }
  for (const char* bad : {"0/4", "5/4", "1/0", "0/0", "1/65537", "1/4294967297", "99999999999999999999/4", "-1/4"}) {
    const std::string msg = usage_message([&] { parse_shard(bad, "--shard"); });
    EXPECT_TRUE(msg.find("is out of range") != std::string::npos || msg.find("is not a shard") != std::string::npos)
        << msg;
    EXPECT_NE(msg.find("1 <= K <= N <= 65536"), std::string::npos) << msg;
  }
}

TEST(ShardFlag, IsAConfigKeyAsText) {
  ConfigSource src;
  apply_override(src, "shard", "3/8", "--shard");
  const SweepConfig c = resolve_config(src);
  ASSERT_TRUE(c.shard);
  EXPECT_EQ(c.shard->str(), "3/8");
  EXPECT_EQ(c.to_json()["shard"], "3/8");
  EXPECT_FALSE(resolve_config(ConfigSource{}).to_json().contains("shard"));  // the whole plan
  ConfigSource number = config_from_json(nlohmann::json{{"shard", 2}}, "c.json");
  EXPECT_NE(usage_message([&] { resolve_config(number); }).find("c.json: key 'shard'"), std::string::npos);
}

// A CPU sweep: forward rows of three families and a backward row per point.
SweepPlan cpu_plan(const std::string& seqlen, const std::string& causal = "both", const std::string& dtype = "fp32") {
  ConfigSource src;
  apply_override(src, "kernels", "cpu", "--kernels");
  apply_override(src, "pass", "fwd,bwd", "--pass");
  apply_override(src, "seqlen", seqlen, "--seqlen");
  apply_override(src, "causal", causal, "--causal");
  apply_override(src, "dtype", dtype, "--dtype");
  apply_override(src, "head_dim", "16", "--head-dim");
  return plan_sweep(resolve_config(src), Backend::cpu, Registry::instance());
}

std::vector<std::string> keys_of(const SweepPlan& p) {
  std::vector<std::string> keys;
  for (const PlannedPoint& pp : p.points)
    for (const PlannedKernel& k : pp.kernels) keys.push_back(row_key(pp, k));
  return keys;
}

TEST(ShardPlan, EveryRowInExactlyOneShardInPlanOrder) {
  const SweepPlan whole = cpu_plan("16:512:+16");  // 64 points of unequal work
  const std::vector<std::string> all = keys_of(whole);
  std::map<std::string, size_t> position;
  for (size_t i = 0; i < all.size(); ++i) position[all[i]] = i;
  for (int n : {1, 2, 3, 4, 7, 64, 100}) {
    std::multiset<std::string> seen;
    for (int k = 1; k <= n; ++k) {
      SweepPlan part = cpu_plan("16:512:+16");
      keep_shard(part, Shard{k, n});
      const std::vector<std::string> keys = keys_of(part);
      for (size_t i = 1; i < keys.size(); ++i) EXPECT_LT(position[keys[i - 1]], position[keys[i]]);
      seen.insert(keys.begin(), keys.end());
      for (const PlannedPoint& pp : part.points) EXPECT_EQ(pp.kernels.size(), whole.points[0].kernels.size());
    }
    EXPECT_EQ(seen, std::multiset<std::string>(all.begin(), all.end())) << n << " shards";
  }
}

TEST(ShardPlan, BalancedByFlopsNotByCount) {
  const SweepPlan plan = cpu_plan("16:512:+16");
  for (int n : {2, 3, 4, 8}) {
    const std::vector<int> shard = shard_assignment(plan, n);
    EXPECT_EQ(shard, shard_assignment(plan, n));  // the plan alone decides
    std::vector<double> load(size_t(n), 0);
    double largest = 0;
    for (size_t i = 0; i < plan.points.size(); ++i) {
      ASSERT_GE(shard[i], 1);
      ASSERT_LE(shard[i], n);
      load[size_t(shard[i] - 1)] += point_cost(plan.points[i]);
      largest = std::max(largest, point_cost(plan.points[i]));
    }
    // Longest first, each to the least loaded: no shard ends more than one point's work above another.
    const auto [lo, hi] = std::minmax_element(load.begin(), load.end());
    EXPECT_LE(*hi - *lo, largest) << n << " shards";
  }
  // Work grows as seqlen^2: the longest point makes a shard of its own.
  const SweepPlan skewed = cpu_plan("16:64:+16,1024", "false");  // 5 points, 1024 is 96% of the work
  EXPECT_EQ(shard_assignment(skewed, 2), (std::vector<int>{2, 2, 2, 2, 1}));
  // Equal work: counts within one of each other.
  const SweepPlan even = cpu_plan("64", "both", "fp32,bf16,fp16");  // 6 points of two costs, 3 each
  const std::vector<int> shard = shard_assignment(even, 3);
  std::map<int, int> per;
  for (int s : shard) ++per[s];
  for (const auto& [s, c] : per) EXPECT_EQ(c, 2) << "shard " << s;
}

TEST(ShardPlan, CostIsTheFlopConvention) {
  const SweepPlan plan = cpu_plan("64", "false");
  ASSERT_EQ(plan.points.size(), 1u);
  const PlannedPoint& pp = plan.points[0];
  double expected = 0;
  for (const PlannedKernel& k : pp.kernels) expected += pp.problem.flops() * flops_factor(k.pass);
  EXPECT_EQ(point_cost(pp), expected);
  EXPECT_EQ(point_cost(pp), pp.problem.flops() * (3 * 1.0 + 2.5));  // standard, fa1, fa2 forward; fa2 backward
}

TEST(ShardPlan, MoreShardsThanPointsLeavesSomeEmpty) {
  SweepPlan plan = cpu_plan("64,128", "false");
  ASSERT_EQ(plan.points.size(), 2u);
  size_t total = 0;
  for (int k = 1; k <= 5; ++k) {
    SweepPlan part = cpu_plan("64,128", "false");
    keep_shard(part, Shard{k, 5});
    total += part.points.size();
  }
  EXPECT_EQ(total, 2u);
}

TEST(PlanHash, SameRowsSameHash) {
  const std::string h = plan_hash(cpu_plan("64,128"));
  EXPECT_EQ(h.size(), 16u);
  EXPECT_EQ(h.find_first_not_of("0123456789abcdef"), std::string::npos) << h;
  EXPECT_EQ(h, plan_hash(cpu_plan("64,128")));
  EXPECT_NE(h, plan_hash(cpu_plan("64,256")));
  EXPECT_NE(h, plan_hash(cpu_plan("128,64")));  // another order is another plan
  EXPECT_NE(h, plan_hash(cpu_plan("64,128", "true")));
}

// --- merge_results on pieces made in memory ---------------------------------------------

// Settings of a 4-point sweep, the metadata a piece of it records, and its rows.
SweepConfig four_points() {
  ConfigSource src;
  apply_override(src, "kernels", "cpu.fa2", "--kernels");
  apply_override(src, "seqlen", "32,64", "--seqlen");
  apply_override(src, "causal", "both", "--causal");
  apply_override(src, "head_dim", "16", "--head-dim");
  apply_override(src, "seed", "7", "--seed");
  return resolve_config(src);
}

nlohmann::json piece_metadata(const std::string& shard) {
  SweepConfig c = four_points();
  c.json = "out/" + shard + ".json";
  if (!shard.empty()) c.shard = parse_shard(shard, "--shard");
  return {{"tool", "fa-bench"},
          {"version", "0.1.0"},
          {"git_commit", "abc"},
          {"backend", "cpu"},
          {"seed", 7},
          {"device", {{"name", "AMD EPYC"}, {"details", "x"}}},
          {"host_name", "node" + shard.substr(0, 1)},
          {"config", c.to_json()},
          {"run_status", "complete"},
          {"start_time", "2026-11-30T10:00:0" + shard.substr(0, 1) + ".000Z"},
          {"end_time", "2026-11-30T11:00:0" + shard.substr(0, 1) + ".000Z"},
          {"matmul_ceiling_tflops", nullptr},
          {"plan_hash", "0123456789abcdef"},
          {"plan_rows", 4},
          {"shard", shard.empty() ? nlohmann::json(nullptr) : nlohmann::json(shard)}};
}

Result row_at(int point) {  // the points in plan order: causal outer, seqlen inner
  const std::vector<AttnProblem> points = expand_points(four_points());
  Result r;
  r.problem = points.at(size_t(point));
  r.kernel = "cpu.fa2.64x64";
  r.seed = 7;
  return r;
}

MergePiece piece(const std::string& shard, std::vector<int> points) {
  MergePiece p;
  p.path = shard.empty() ? "whole.json" : "shard-" + shard.substr(0, 1) + ".json";
  p.metadata = piece_metadata(shard);
  for (int i : points) p.rows.push_back(row_at(i));
  return p;
}

TEST(Merge, ShardsJoinInPlanOrder) {
  MergeOptions o;
  o.complete = true;
  o.command_line = "fa-bench merge a b";
  const MergedResults m = merge_results({piece("2/2", {3, 0}), piece("1/2", {1, 2})}, o);
  ASSERT_EQ(m.rows.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(m.rows[size_t(i)].key(), row_at(i).key());
  EXPECT_EQ(m.run_status, "complete");
  EXPECT_EQ(m.metadata["shard"], nullptr);
  EXPECT_EQ(m.metadata["rows"], 4);
  EXPECT_EQ(m.metadata["plan_hash"], "0123456789abcdef");
  EXPECT_EQ(m.metadata["command_line"], "fa-bench merge a b");
  EXPECT_FALSE(m.metadata["config"].contains("shard"));
  EXPECT_FALSE(m.metadata["config"].contains("json"));
  EXPECT_EQ(m.metadata["config"]["seed"], 7);
  EXPECT_EQ(m.metadata["start_time"], "2026-11-30T10:00:01.000Z");
  EXPECT_EQ(m.metadata["end_time"], "2026-11-30T11:00:02.000Z");
  EXPECT_EQ(m.metadata["host_name"], "node2, node1");
  EXPECT_EQ(m.metadata["device"]["name"], "AMD EPYC");
  ASSERT_EQ(m.metadata["merged_from"].size(), 2u);
  EXPECT_EQ(m.metadata["merged_from"][0]["file"], "shard-2.json");
  EXPECT_EQ(m.metadata["merged_from"][0]["shard"], "2/2");
  EXPECT_EQ(m.metadata["merged_from"][0]["rows"], 2);
}

TEST(Merge, PartialWithoutComplete) {
  const MergedResults m = merge_results({piece("1/2", {1, 2})}, MergeOptions{});
  EXPECT_EQ(m.rows.size(), 2u);
  EXPECT_EQ(m.run_status, "partial: 2 of 4 rows");
}

TEST(Merge, CompleteRefusesAMissingRow) {
  MergeOptions o;
  o.complete = true;
  const std::string msg = usage_message([&] { merge_results({piece("1/2", {1, 2})}, o); });
  EXPECT_NE(msg.find("2 rows here, the plan has 4"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no file of shard 2/2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("2 points without a row"), std::string::npos) << msg;
  MergePiece short_one = piece("2/2", {3});
  short_one.metadata["run_status"] = "timeout";
  const std::string msg2 = usage_message([&] { merge_results({piece("1/2", {1, 2}), short_one}, o); });
  EXPECT_NE(msg2.find("'shard-2.json' ended \"timeout\""), std::string::npos) << msg2;
}

TEST(Merge, RefusesPiecesOfAnotherSweep) {
  MergePiece other = piece("2/2", {0, 3});
  other.metadata["plan_hash"] = "fedcba9876543210";
  EXPECT_NE(usage_message([&] { merge_results({piece("1/2", {1, 2}), other}, {}); }).find("plan_hash"),
            std::string::npos);
  for (const char* key : {"seed", "version", "git_commit", "backend"}) {
    MergePiece p = piece("2/2", {0, 3});
    p.metadata[key] = key == std::string("seed") ? nlohmann::json(8) : nlohmann::json("other");
    const std::string msg = usage_message([&] { merge_results({piece("1/2", {1, 2}), p}, {}); });
    EXPECT_NE(msg.find("are not pieces of one sweep"), std::string::npos) << msg;
    EXPECT_NE(msg.find(key), std::string::npos) << msg;
  }
  MergePiece slower = piece("2/2", {0, 3});
  slower.metadata["config"]["max_seconds"] = 9;
  EXPECT_NE(usage_message([&] { merge_results({piece("1/2", {1, 2}), slower}, {}); }).find("max_seconds"),
            std::string::npos);
  // Where a piece wrote its files, its time limit and its wait between rows may differ.
  MergePiece elsewhere = piece("2/2", {0, 3});
  elsewhere.metadata["config"]["csv"] = "else/where.csv";
  elsewhere.metadata["config"]["timeout"] = 60;
  elsewhere.metadata["config"]["cooldown"] = 4;
  EXPECT_EQ(merge_results({piece("1/2", {1, 2}), elsewhere}, {}).rows.size(), 4u);
}

TEST(Merge, DevicesMustAgreeUnlessAllowed) {
  MergePiece h100 = piece("2/2", {0, 3});
  h100.metadata["device"]["name"] = "NVIDIA H100";
  const std::string msg = usage_message([&] { merge_results({piece("1/2", {1, 2}), h100}, {}); });
  EXPECT_NE(msg.find("NVIDIA H100"), std::string::npos) << msg;
  EXPECT_NE(msg.find("--allow-mixed-devices"), std::string::npos) << msg;
  MergeOptions o;
  o.allow_mixed_devices = true;
  const MergedResults m = merge_results({piece("1/2", {1, 2}), h100}, o);
  EXPECT_EQ(m.metadata["device"]["name"], "mixed: AMD EPYC, NVIDIA H100");
  EXPECT_EQ(m.metadata["merged_from"][1]["device"]["name"], "NVIDIA H100");
}

TEST(Merge, RefusesARowTwice) {
  const std::string msg = usage_message([&] { merge_results({piece("1/2", {1, 2}), piece("2/2", {0, 2})}, {}); });
  EXPECT_NE(msg.find("is in 'shard-1.json' (results[1]) and in 'shard-2.json' (results[1])"), std::string::npos)
      << msg;
  MergePiece twice = piece("1/2", {1, 1});
  EXPECT_NE(usage_message([&] { merge_results({twice}, {}); }).find("appears twice"), std::string::npos);
}

TEST(Merge, RefusesOtherSplitsAndRowsOutsideThePlan) {
  EXPECT_NE(usage_message([&] { merge_results({piece("1/2", {1}), piece("3/3", {2})}, {}); }).find("split two ways"),
            std::string::npos);
  MergePiece stray = piece("1/2", {1});
  stray.rows[0].problem.seqlen_q = stray.rows[0].problem.seqlen_k = 48;
  EXPECT_NE(usage_message([&] { merge_results({stray}, {}); }).find("is not a point of the sweep"),
            std::string::npos);
  MergePiece unplanned = piece("", {0});
  unplanned.metadata.erase("plan_hash");
  EXPECT_NE(usage_message([&] { merge_results({unplanned}, {}); }).find("has no metadata.plan_hash"),
            std::string::npos);
  EXPECT_NE(usage_message([&] { merge_results({}, {}); }).find("no files"), std::string::npos);
}

TEST(Merge, AnUnshardedPieceJoinsItsShards) {
  // A whole-plan file that stopped early, and a shard holding the rest.
  MergePiece whole = piece("", {0, 1});
  whole.metadata["run_status"] = "interrupted";
  MergeOptions o;
  o.complete = true;
  EXPECT_EQ(merge_results({whole, piece("2/2", {2, 3})}, o).rows.size(), 4u);
}

}  // namespace
}  // namespace fa
