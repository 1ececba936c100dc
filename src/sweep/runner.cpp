#include "sweep/runner.h"

#include <algorithm>
#include <new>

#include <fmt/format.h>

#include "check/inputs.h"
#include "check/user_inputs.h"
#include "check/validate.h"
#include "core/errors.h"
#include "measure/throttle.h"

namespace fa {

namespace {

Result base_row(const AttnProblem& p, const PlannedKernel& k, uint64_t seed) {
  Result r;
  r.problem = p;
  r.kernel = k.name;
  r.family = k.family;
  r.backend = k.backend;
  r.tile = k.tile;
  r.seed = seed;
  if (k.variant) r.traffic_model = k.variant->traffic(p);
  return r;
}

std::string key_of(const AttnProblem& p, const PlannedKernel& k) {
  Result r;
  r.problem = p;
  r.kernel = k.name;
  return r.key();
}

// Everything the kernels of one point share: inputs, reference, tolerances.
struct PointData {
  HostInputs inputs;
  PointCheck check;
};

PointData prepare_point(const PlannedPoint& pp, const SweepConfig& c, uint64_t seed) {
  const AttnProblem& p = pp.problem;
  PointData d;
  if (c.user_inputs) {
    d.inputs = c.user_inputs->tensors;  // the user's tensors, at this point's precision
    round_to_dtype(d.inputs.q, p.dtype);
    round_to_dtype(d.inputs.k, p.dtype);
    round_to_dtype(d.inputs.v, p.dtype);
  } else {
    d.inputs = generate_inputs(p, c.distribution, seed);
  }
  // Rows are sampled around the largest block boundary in play, so every
  // kernel's boundary rows are among those checked.
  int block = 0;
  for (const auto& k : pp.kernels) block = std::max(block, k.tile.block_m);
  d.check = check_point(p, d.inputs, c.max_check_rows, block, seed, c.threads);
  return d;
}

// One kernel on a prepared point. Throws only a sticky KernelError (after
// filling `row`), which ends the sweep.
void run_kernel(const PlannedKernel& k, const PointData& d, const SweepConfig& c, Executor& ex,
                double ceiling, Result& row, const RunnerHooks& hooks, bool& warned_counters) {
  const AttnProblem& p = row.problem;
  const KernelVariant& v = *k.variant;
  if (Support s = v.supports(p); !s.ok) {
    row.status = Status::unsupported;
    row.reason = s.reason;
    return;
  }
  try {
    ex.reserve_workspace(v.workspace_bytes ? v.workspace_bytes(p) : 0);
  } catch (const OutOfMemory& e) {
    row.status = Status::oom;
    row.reason = e.what();
    return;
  }
  const AttnParams params = ex.params();
  auto launch = [&](RunContext& ctx) { v.run(params, ctx); };
  row.clock_before_mhz = ex.clock().sm_mhz;
  try {
    std::function<void(const HostOutputs&)> save;
    if (!c.save_outputs.empty())
      save = [&](const HostOutputs& out) {
        save_outputs_npy(c.save_outputs, k.name + "." + problem_slug(p), p, out);
      };
    const Validation val = validate_variant(v, p, ex, d.check, row.seed, save);
    row.peak_extra_bytes = val.peak_extra_bytes;
    row.errors = val.errors;
    row.tolerances = d.check.tolerances;
    if (!val.passed) {
      row.status = Status::fail;
      row.reason = val.why + "; a failing kernel is not timed";
      row.clock_after_mhz = ex.clock().sm_mhz;
      return;
    }
    const RunContext& counted = val.counted;
    if (counted.counted_read_bytes >= 0 && counted.counted_write_bytes >= 0) {
      row.traffic_measured = Traffic{counted.counted_read_bytes, counted.counted_write_bytes};
      row.traffic_measured_source = "cpu-count";
    }
    if (c.validate_only) {
      row.clock_after_mhz = ex.clock().sm_mhz;
      return;
    }
    row.timing = ex.time(launch, c.timing);
    if (c.counters && ex.backend() != Backend::cuda && !warned_counters) {
      warned_counters = true;
      if (hooks.note)
        hooks.note("--counters: no hardware counters on the cpu back end; traffic_measured holds the CPU "
                   "kernels' own byte counts (traffic_measured_source cpu-count)");
    }
    if (c.counters && ex.backend() == Backend::cuda) {
      std::string why;
      if (auto t = ex.measure_dram(launch, &why)) {
        row.traffic_measured = t->bytes;
        row.traffic_measured_source = "cupti";
        if (t->l2_hit_rate >= 0) row.l2_hit_rate = t->l2_hit_rate;
      } else if (!warned_counters) {
        warned_counters = true;
        if (hooks.note) hooks.note("--counters: DRAM counters cannot be read: " + why);
      }
    }
  } catch (const OutOfMemory& e) {
    row.status = Status::oom;
    row.reason = e.what();
    return;
  } catch (const KernelError& e) {
    row.status = Status::error;
    row.reason = fmt::format("{} (seed {})", e.what(), row.seed);
    row.clock_after_mhz = ex.clock().sm_mhz;
    if (e.sticky) throw;
    return;
  }
  const ClockReading after = ex.clock();
  row.clock_after_mhz = after.sm_mhz;
  row.reason = throttle_reason(row.clock_before_mhz, row.clock_after_mhz, after.max_sm_mhz);
  if (!row.reason.empty() && hooks.note) hooks.note(fmt::format("{} on {}: {}", k.name, p.describe(), row.reason));
  const double seconds = row.timing->median_ms * 1e-3;
  if (seconds > 0) {
    row.tflops = p.flops() / seconds / 1e12;
    row.model_bandwidth_gbps = double(row.traffic_model.total()) / seconds / 1e9;
  }
  if (ceiling > 0) row.matmul_fraction = row.tflops / ceiling;
}

}  // namespace

SweepOutcome run_sweep(const SweepPlan& plan, const SweepConfig& c, uint64_t seed, Executor& ex,
                       double ceiling, const std::set<std::string>& done, const RunnerHooks& hooks) {
  SweepOutcome out;
  const size_t total = plan.rows();
  size_t finished = 0;
  bool warned_counters = false;
  auto emit = [&](const Result& r) {
    ++out.new_rows;
    ++finished;
    if (hooks.on_row) hooks.on_row(r);
  };
  auto stop = [&] { return hooks.stop_requested && hooks.stop_requested(); };

  for (const PlannedPoint& pp : plan.points) {
    std::vector<const PlannedKernel*> todo;
    for (const auto& k : pp.kernels) {
      if (done.count(key_of(pp.problem, k))) {
        ++out.skipped;
        ++finished;
      } else {
        todo.push_back(&k);
      }
    }
    if (todo.empty()) continue;
    if (stop()) {
      out.end = SweepEnd::interrupted;
      return out;
    }
    if (hooks.on_progress)
      hooks.on_progress(finished, total, pp.problem.describe() + ": inputs and reference");

    // Rows whose outcome is known without running anything come first.
    bool needs_data = false;
    for (const auto* k : todo) {
      if (!k->variant) {
        Result r = base_row(pp.problem, *k, seed);
        r.status = Status::unsupported;
        r.reason = k->reason;
        emit(r);
      } else {
        needs_data = true;
      }
    }
    if (!needs_data) continue;

    std::string point_oom;
    PointData data;
    try {
      data = prepare_point(pp, c, seed);
      ex.prepare(pp.problem, data.inputs);
    } catch (const OutOfMemory& e) {
      point_oom = e.what();
    } catch (const std::bad_alloc&) {
      point_oom = "host allocation for the inputs or the reference failed";
    }
    for (const auto* k : todo) {
      if (!k->variant) continue;
      if (stop()) {
        ex.release();
        out.end = SweepEnd::interrupted;
        return out;
      }
      if (hooks.on_progress) hooks.on_progress(finished, total, k->name + " " + pp.problem.describe());
      Result r = base_row(pp.problem, *k, seed);
      if (!point_oom.empty()) {
        r.status = Status::oom;
        r.reason = point_oom;
        emit(r);
        continue;
      }
      try {
        run_kernel(*k, data, c, ex, ceiling, r, hooks, warned_counters);
      } catch (const KernelError& e) {  // sticky: the device is unusable
        emit(r);
        out.end = SweepEnd::sticky_error;
        out.why = fmt::format("{} on {}: {}", k->name, pp.problem.describe(), e.what());
        return out;
      }
      emit(r);
    }
    ex.release();
  }
  return out;
}

}  // namespace fa
