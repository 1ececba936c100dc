// Splitting a sweep across processes (--shard K/N): every shard plans the
// whole sweep, hashes it, and keeps the points assigned to it. A point is never
// split, since its rows share one set of inputs and one float64 reference.
// Points are dealt by estimated FLOPs (core's convention: AttnProblem::flops()
// times flops_factor of the pass), longest first, each to the shard with the
// least work so far, ties to the lower shard: the same plan gives every process
// the same assignment, and no shard exceeds another by more than one point's work.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sweep/plan.h"
#include "sweep/values.h"

namespace fa {

// The estimated FLOPs of a point's rows (an `unsupported` row runs nothing: 0).
double point_cost(const PlannedPoint&);

// For each point of the plan, in order, the shard (1..count) that runs it.
std::vector<int> shard_assignment(const SweepPlan&, int count);

// Keeps only the points of `shard` (in plan order); the variants the plan owns stay.
void keep_shard(SweepPlan&, const Shard& shard);

// 16 hex digits (64-bit FNV-1a) over every row's key (Result::key(): kernel,
// problem, pass) in plan order: two runs with one hash planned the same rows.
std::string plan_hash(const SweepPlan&);

}  // namespace fa
