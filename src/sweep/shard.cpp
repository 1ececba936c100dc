#include "sweep/shard.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

namespace fa {

double point_cost(const PlannedPoint& pp) {
  double flops = 0;
  for (const PlannedKernel& k : pp.kernels)
    if (k.variant) flops += pp.problem.flops() * flops_factor(k.pass);
  return flops;
}

std::vector<int> shard_assignment(const SweepPlan& plan, int count) {
  const size_t n = plan.points.size();
  std::vector<double> cost(n);
  for (size_t i = 0; i < n; ++i) cost[i] = point_cost(plan.points[i]);
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t(0));
  // Longest first; equal costs keep plan order, so the deal is fixed by the plan alone.
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return cost[a] > cost[b]; });
  std::vector<double> load(size_t(count), 0.0);
  std::vector<int> shard(n, 1);
  for (size_t i : order) {
    const size_t least = size_t(std::min_element(load.begin(), load.end()) - load.begin());  // first of equals
    load[least] += cost[i];
    shard[i] = int(least) + 1;
  }
  return shard;
}

void keep_shard(SweepPlan& plan, const Shard& s) {
  const std::vector<int> shard = shard_assignment(plan, s.count);
  std::vector<PlannedPoint> kept;
  for (size_t i = 0; i < plan.points.size(); ++i)
    if (shard[i] == s.index) kept.push_back(std::move(plan.points[i]));
  plan.points = std::move(kept);
}

std::string plan_hash(const SweepPlan& plan) {
  uint64_t h = 14695981039346656037ull;  // FNV-1a, 64-bit: stable across hosts and builds
  auto mix = [&h](std::string_view s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 1099511628211ull;
    }
  };
  for (const PlannedPoint& pp : plan.points)
    for (const PlannedKernel& k : pp.kernels) {
      mix(row_key(pp, k));
      mix("\n");
    }
  return fmt::format("{:016x}", h);
}

}  // namespace fa
