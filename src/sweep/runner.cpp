#include "sweep/runner.h"

#include <algorithm>
#include <new>

#include <fmt/format.h>

#include "check/inputs.h"
#include "check/metrics.h"
#include "check/sampling.h"
#include "check/user_inputs.h"
#include "core/errors.h"
#include "core/stop.h"
#include "measure/cpu_executor.h"
#include "measure/throttle.h"
#include "sweep/point_memory.h"
#include "reference/reference.h"

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

// Everything the kernels of one point share: inputs, checked rows, reference.
struct PointData {
  HostInputs inputs;
  ReferenceOutputs ref;
  ErrorMetrics tolerances;  // tolerance and lse_tolerance for this point
  double host_bytes = 0;    // point_memory(...).total()
  int64_t host_limit = 0;   // --cpu-mem-limit, resolved
};

int64_t rows_to_check(const AttnProblem& p, const SweepConfig& c) {
  return c.exact_check ? p.seqlen_q : std::min<int64_t>(p.seqlen_q, c.max_check_rows);
}

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
  std::vector<int64_t> rows;  // empty: every row
  if (!c.exact_check && p.seqlen_q > c.max_check_rows) {
    // Sample around the largest block boundary in play, so every kernel's
    // boundary rows are among those checked.
    int block = 0;
    for (const auto& k : pp.kernels) block = std::max(block, k.tile.block_m);
    rows = sample_rows(p, c.max_check_rows, block > 0 ? block : 128, seed);
  }
  d.ref = reference_forward(p, d.inputs, rows, c.threads);
  set_tolerances(d.tolerances, p, d.inputs, d.ref);
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
  // The CPU back end's workspace is host memory on top of the point's.
  const double workspace = v.workspace_bytes ? double(v.workspace_bytes(p)) : 0;
  if (ex.backend() == Backend::cpu && d.host_bytes + workspace > double(d.host_limit)) {
    row.status = Status::oom;
    row.reason = fmt::format("the point's host memory ({:.3g} GiB) and a {:.3g} GiB workspace exceed the limit of "
                             "{} bytes (--cpu-mem-limit)",
                             d.host_bytes / double(1 << 30), workspace / double(1 << 30), d.host_limit);
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
  RunContext counted;
  auto launch = [&](RunContext& ctx) {
    v.run(params, ctx);
    counted = ctx;
  };
  row.clock_before_mhz = ex.clock().sm_mhz;
  try {
    ex.poison_outputs();
    ex.run_once(launch);
    row.peak_extra_bytes = ex.peak_extra_bytes();
    HostOutputs out = ex.fetch_outputs();
    if (!c.save_outputs.empty()) save_outputs_npy(c.save_outputs, k.name + "." + problem_slug(p), p, out);
    ErrorMetrics m = compare_outputs(p, out, d.ref);
    m.tolerance = d.tolerances.tolerance;
    m.lse_tolerance = d.tolerances.lse_tolerance;
    row.errors = m;
    if (!passes(m)) {
      row.status = Status::fail;
      row.reason = fmt::format(
          "O max abs error {:.3g} vs tolerance {:.3g}, LSE max abs error {:.3g} vs {:.3g}, {} "
          "non-finite values (seed {}); a failing kernel is not timed",
          m.o_max_abs, m.tolerance, m.lse_max_abs, m.lse_tolerance, m.nonfinite, row.seed);
      row.clock_after_mhz = ex.clock().sm_mhz;
      return;
    }
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
        if (t->l2_hit_rate >= 0) row.l2_hit_rate_pct = t->l2_hit_rate;
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

void run_points(const SweepPlan& plan, const SweepConfig& c, uint64_t seed, Executor& ex, double ceiling,
                const std::set<std::string>& done, const RunnerHooks& hooks, SweepOutcome& out) {
  const size_t total = plan.rows();
  size_t finished = 0;
  bool warned_counters = false;
  const int64_t host_limit = c.cpu_mem_limit > 0 ? c.cpu_mem_limit : default_cpu_mem_limit();
  auto emit = [&](const Result& r) {
    ++out.new_rows;
    ++finished;
    if (hooks.on_row) hooks.on_row(r);
  };
  auto stop = [&] {
    if (hooks.stop_requested && hooks.stop_requested()) return SweepEnd::interrupted;
    const StopReason r = stop_reason();
    return r == StopReason::none ? SweepEnd::complete
                                 : r == StopReason::timeout ? SweepEnd::timeout : SweepEnd::interrupted;
  };

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
    if (SweepEnd e = stop(); e != SweepEnd::complete) {
      out.end = e;
      return;
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
    const PointMemory need = point_memory(pp.problem, rows_to_check(pp.problem, c), c.threads, ex.backend(),
                                          c.user_inputs != nullptr);
    if (need.total() > double(host_limit)) {
      point_oom = fmt::format("host memory for this point, about {}, is over the limit of {} bytes "
                              "(--cpu-mem-limit); nothing was allocated",
                              need.describe(), host_limit);
    } else {
      try {
        data = prepare_point(pp, c, seed);
        data.host_bytes = need.total();
        data.host_limit = host_limit;
        ex.prepare(pp.problem, data.inputs);
      } catch (const OutOfMemory& e) {
        point_oom = e.what();
      } catch (const std::bad_alloc&) {
        point_oom = "host allocation for the inputs or the reference failed";
      }
    }
    for (const auto* k : todo) {
      if (!k->variant) continue;
      if (SweepEnd e = stop(); e != SweepEnd::complete) {
        ex.release();
        out.end = e;
        return;
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
        return;
      }
      emit(r);
    }
    ex.release();
  }
}

}  // namespace

SweepOutcome run_sweep(const SweepPlan& plan, const SweepConfig& c, uint64_t seed, Executor& ex,
                       double ceiling, const std::set<std::string>& done, const RunnerHooks& hooks) {
  SweepOutcome out;
  try {
    run_points(plan, c, seed, ex, ceiling, done, hooks, out);
  } catch (const Stopped& s) {  // inside a row: the row in progress is abandoned
    ex.release();
    out.end = s.reason == StopReason::timeout ? SweepEnd::timeout : SweepEnd::interrupted;
  }
  // A stop that arrives during the last row still ends the run as stopped.
  if (out.end == SweepEnd::complete)
    if (StopReason r = stop_reason(); r != StopReason::none)
      out.end = r == StopReason::timeout ? SweepEnd::timeout : SweepEnd::interrupted;
  return out;
}

}  // namespace fa
