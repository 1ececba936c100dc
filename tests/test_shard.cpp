// --shard K/N: the flag's parser, the deal of a plan's points into shards (each
// point once, whole, by estimated FLOPs) and the plan's hash (the CLI's refusals
// are in the hostile corpus, tests/data/hostile/shard.cases).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "registry/kernel.h"
#include "sweep/config.h"
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
    for (const PlannedKernel& k : pp.kernels) keys.push_back(row_key(pp.problem, k));
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

}  // namespace
}  // namespace fa
