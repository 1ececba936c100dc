#include "sweep/runner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <cstdint>
#include <new>
#include <optional>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "check/fp8_inputs.h"
#include "check/inputs.h"
#include "check/inputs_gpu.h"
#include "check/user_inputs.h"
#include "check/validate.h"
#include "core/errors.h"
#include "core/stop.h"
#include "measure/cpu_executor.h"
#include "measure/throttle.h"
#include "sweep/dealer.h"
#include "sweep/point_memory.h"

namespace fa {

namespace {

constexpr int kBackwardHoldUs = 500;  // the PyTorch peers hold their backward passes as long

// sm_count: the executor's device's (the model's split tail, measure/traffic.h).
Result base_row(const PlannedPoint& pp, const PlannedKernel& k, uint64_t seed, int sm_count) {
  const AttnProblem& p = pp.problem;
  Result r;
  r.problem = p;
  r.fp8 = pp.fp8;
  r.kernel = k.name;
  r.family = k.family;
  r.backend = k.backend;
  r.pass = k.pass;
  r.tile = k.tile;
  r.seed = seed;
  if (k.partner) r.fwd_kernel = k.partner->name;
  if (k.variant) {
    // fwd+bwd moves what its forward and its backward move; a backward without
    // a model (cudnn) leaves the row without one (0: not modelled).
    const TrafficRun run{sm_count, pp.fp8};
    std::optional<Traffic> t = k.variant->traffic(p, run);
    if (t && k.pass == Pass::fwd_bwd) {
      const std::optional<Traffic> f = k.partner ? k.partner->traffic(p, run) : std::nullopt;
      if (f) *t += *f;
      else t = std::nullopt;
    }
    r.traffic_model = t.value_or(Traffic{});
  }
  return r;
}

// Everything the rows of one point share, every pass: inputs (dO too when a
// row runs a backward), the reference and tolerances, computed once.
struct PointData {
  HostInputs inputs;
  std::optional<DeviceInputs> device;  // the cuda back end: the tensors the kernels read
  HostInputs unquantized;  // e4m3: Q, K, V before quantization
  PointCheck check;
  GradTolerances grad_tolerances;
  double host_bytes = 0;   // point_memory(...).total()
  int64_t host_limit = 0;  // --cpu-mem-limit, resolved
};

// Seconds since `t0`, added to `into` when the scope ends (so a throw still counts).
class Stopwatch {
 public:
  explicit Stopwatch(double& into) : into_(into), t0_(std::chrono::steady_clock::now()) {}
  ~Stopwatch() { into_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count(); }
  Stopwatch(const Stopwatch&) = delete;
  Stopwatch& operator=(const Stopwatch&) = delete;

 private:
  double& into_;
  std::chrono::steady_clock::time_point t0_;
};

// A point whose kernels include a backward also needs dO and the reference gradients.
bool has_backward(const PlannedPoint& pp) {
  return std::any_of(pp.kernels.begin(), pp.kernels.end(),
                     [](const PlannedKernel& k) { return k.pass != Pass::fwd && k.variant; });
}

// The blocks the point's check samples around (the largest in play, so every
// kernel's boundary rows are among those checked); grad_block_n only when a
// row runs a backward.
struct CheckBlocks {
  int block_m = 0;
  std::optional<int> grad_block_n;
};

CheckBlocks check_blocks(const PlannedPoint& pp) {
  CheckBlocks b;
  for (const auto& k : pp.kernels) {
    b.block_m = std::max(b.block_m, k.tile.block_m);
    if (k.pass != Pass::fwd && k.variant) b.grad_block_n = std::max(b.grad_block_n.value_or(0), k.tile.block_n);
  }
  return b;
}

// The inputs on the back end, and on the host where something there reads them:
// on cuda they are made on the device (check/inputs_gpu.h), dO too for a
// backward point, and d.inputs stays empty (the references and both tolerance
// rules' standards read the device tensors); the user's tensors and an e4m3
// point's (quantized on the host, check/fp8_inputs.h, and checked against the
// host reference) are made on the host and copied.
void prepare_inputs(const PlannedPoint& pp, const SweepConfig& c, uint64_t seed, Executor& ex, PointData& d) {
  const AttnProblem& p = pp.problem;
  const bool backward = check_blocks(pp).grad_block_n.has_value();
  if (ex.backend() == Backend::cuda && !c.user_inputs && !host_reference(p) && inputs_gpu_built()) {
    const Executor::InputBuffers b = ex.allocate(p, backward);
    generate_inputs_gpu(p, c.distribution, seed, InputTargets{b.q, b.k, b.v, backward ? b.dout : nullptr});
    return;
  }
  if (c.user_inputs) {
    d.inputs = c.user_inputs->tensors;  // the user's tensors, at this point's precision
    round_to_dtype(d.inputs.q, p.dtype);
    round_to_dtype(d.inputs.k, p.dtype);
    round_to_dtype(d.inputs.v, p.dtype);
  } else {
    d.inputs = generate_inputs(p, c.distribution, seed);
  }
  if (backward) d.inputs.dout = generate_dout(p, c.distribution, seed);
  // e4m3: the float values quantized; the kernels read the codes, the reference the dequantized values.
  if (p.dtype == DType::e4m3) {
    if (!pp.fp8) throw std::logic_error("an e4m3 point planned without its FP8 settings");
    d.unquantized = quantize_inputs(p, d.inputs, *pp.fp8, seed);
  }
  ex.prepare(p, d.inputs);
}

// The reference and tolerances: on the cuda back end from the device tensors
// the kernels read, dO included for a backward (check/validate.h).
void prepare_reference(const PlannedPoint& pp, const SweepConfig& c, uint64_t seed, Executor& ex, PointData& d) {
  const CheckBlocks b = check_blocks(pp);
  const bool fp8 = pp.problem.dtype == DType::e4m3;  // the host reference on the dequantized inputs
  if (ex.backend() == Backend::cuda && !fp8) {
    const AttnParams a = ex.params();
    d.device = DeviceInputs{a.q, a.k, a.v, a.dout};
  }
  d.check = check_point(pp.problem, d.inputs, check_limit(c, ex.backend(), host_reference(pp.problem)), b.block_m,
                        seed, c.threads, b.grad_block_n, d.device ? &*d.device : nullptr,
                        fp8 ? &d.unquantized : nullptr);
}

int64_t workspace_of(const KernelVariant& v, const AttnProblem& p) {
  return v.workspace_bytes ? v.workspace_bytes(p) : 0;
}

// Both are counted, or the sum is not.
RunContext counted_sum(const RunContext& a, const RunContext& b) {
  RunContext s;
  if (a.counted_read_bytes >= 0 && b.counted_read_bytes >= 0 && a.counted_write_bytes >= 0 &&
      b.counted_write_bytes >= 0) {
    s.counted_read_bytes = a.counted_read_bytes + b.counted_read_bytes;
    s.counted_write_bytes = a.counted_write_bytes + b.counted_write_bytes;
  }
  return s;
}

// Waits `seconds`, checking core/stop.h's request every 50 ms (throws Stopped).
void cool_down(double seconds) {
  using clock = std::chrono::steady_clock;
  const clock::time_point end = clock::now() + std::chrono::duration_cast<clock::duration>(
                                                   std::chrono::duration<double>(seconds));
  for (clock::time_point now = clock::now(); now < end; now = clock::now()) {
    throw_if_stopped();
    std::this_thread::sleep_for(std::min<clock::duration>(end - now, std::chrono::milliseconds(50)));
  }
  throw_if_stopped();
}

// "" when the row can run here, else why not (the backward's partner too).
std::string refusal(const PlannedKernel& k, const AttnProblem& p) {
  if (Support s = k.variant->supports(p); !s.ok) return s.reason;
  if (k.pass == Pass::fwd || !k.partner) return "";
  if (Support s = k.partner->supports(p); !s.ok) return fmt::format("forward partner {}: {}", k.partner->name, s.reason);
  return "";
}

// One kernel on a prepared point. Throws only a sticky KernelError (after
// filling `row`), which ends the sweep.
void run_kernel(const PlannedKernel& k, PointData& d, const SweepConfig& c, Executor& ex, double ceiling,
                Result& row, const RunnerHooks& hooks, bool& warned_counters, WallTimeSplit& wall) {
  const AttnProblem& p = row.problem;
  const KernelVariant& v = *k.variant;
  std::string why = refusal(k, p);
  if (why.empty() && v.refuse_buffers) {
    try {
      if (k.pass == Pass::fwd) ex.set_o_dtype(o_dtype_of(v, p));  // the params it is asked with say what it writes
    } catch (const KernelError& e) {
      row.status = Status::error;
      row.reason = e.what();
      return;
    }
    why = v.refuse_buffers(ex.params());
  }
  if (!why.empty()) {
    row.status = Status::unsupported;
    row.reason = why;
    return;
  }
  // The CPU back end's workspace is host memory on top of the point's (a
  // backward's: the larger of its partner's and its own, which share it).
  const int64_t workspace = std::max(workspace_of(v, p), k.pass != Pass::fwd && k.partner ? workspace_of(*k.partner, p) : 0);
  if (ex.backend() == Backend::cpu && d.host_bytes + double(workspace) > double(d.host_limit)) {
    row.status = Status::oom;
    row.reason = fmt::format("the point's host memory ({:.3g} GiB) and a {:.3g} GiB workspace exceed the limit of "
                             "{} bytes (--cpu-mem-limit)",
                             d.host_bytes / double(1 << 30), double(workspace) / double(1 << 30), d.host_limit);
    return;
  }
  // --cooldown: a power-capped GPU starts the row cool; a stop request ends the wait.
  if (c.cooldown > 0 && !c.validate_only) cool_down(c.cooldown);
  row.clock_before_mhz = ex.clock().sm_mhz;
  try {
    std::function<void(const HostOutputs&)> save;
    if (!c.save_outputs.empty())
      save = [&](const HostOutputs& out) {
        save_outputs_npy(c.save_outputs, k.name + "." + problem_slug(p), p, out);
      };
    // A backward's check reserves the workspace itself: its partner's, then its own.
    if (k.pass == Pass::fwd) ex.reserve_workspace(workspace_of(v, p));
    const BackwardCheck bwd{k.partner, &d.inputs, &d.grad_tolerances, c.threads, d.device ? &*d.device : nullptr};
    Validation val;
    {
      Stopwatch w(wall.validation);
      val = validate_variant(v, p, ex, d.check, row.seed, save, k.pass == Pass::fwd ? nullptr : &bwd);
    }
    row.peak_extra_bytes = k.pass == Pass::fwd_bwd ? std::max(val.peak_extra_bytes, val.partner_peak_extra_bytes)
                                                    : val.peak_extra_bytes;
    row.errors = val.errors;
    row.errors_vs_unquantized = val.errors_vs_unquantized;
    row.tolerances = val.tolerances;
    row.grad_errors = val.grad_errors;
    if (!val.passed) {
      row.status = Status::fail;
      row.reason = val.why + "; a failing kernel is not timed";
      row.clock_after_mhz = ex.clock().sm_mhz;
      return;
    }
    const RunContext counted = k.pass == Pass::fwd_bwd ? counted_sum(val.partner_counted, val.counted) : val.counted;
    if (counted.counted_read_bytes >= 0 && counted.counted_write_bytes >= 0) {
      row.traffic_measured = Traffic{counted.counted_read_bytes, counted.counted_write_bytes};
      row.traffic_measured_source = "cpu-count";
    }
    if (c.validate_only) {
      row.clock_after_mhz = ex.clock().sm_mhz;
      return;
    }
    // bwd times the backward alone, on the O and LSE its partner left (a
    // backward does not write them: validation checked); fwd+bwd times both,
    // sharing one workspace, as one launch sequence.
    if (k.pass == Pass::fwd_bwd) ex.reserve_workspace(std::max(workspace_of(*k.partner, p), workspace_of(v, p)));
    const AttnParams params = ex.params();
    const KernelVariant* partner = k.pass == Pass::fwd_bwd ? k.partner : nullptr;
    auto launch = [&](RunContext& ctx) {
      if (partner) partner->run(params, ctx);
      v.run(params, ctx);
    };
    // A backward enqueues several launches (pre-pass, memsets, main kernel, dQ
    // conversion; the standard's dozen cuBLAS calls), fwd+bwd a forward's too:
    // their host work needs a longer hold to stay outside the events.
    TimingOptions timing = c.timing;
    if (k.pass != Pass::fwd) timing.hold_us = kBackwardHoldUs;
    Stopwatch timing_time(wall.timing);  // the timing loop and the counters pass
    row.timing = ex.time(launch, timing);
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
    row.tflops = p.flops() * flops_factor(k.pass) / seconds / 1e12;
    row.model_bandwidth_gbps = double(row.traffic_model.total()) / seconds / 1e9;
  }
  if (ceiling > 0) row.matmul_fraction = row.tflops / ceiling;
}

// What the loop over one point's rows needs besides the point: where its rows
// go, how it says what runs, and what it counts.
struct PointRun {
  const SweepConfig& c;
  uint64_t seed;
  Executor& ex;
  double ceiling;
  const std::set<std::string>& done;
  const RunnerHooks& hooks;  // note, stop_requested
  int64_t host_limit;
  std::function<void(Result)> emit;                          // a finished row
  std::function<void(const std::string&)> progress;          // what runs next
  std::function<void()> skipped;                             // a row in `done`
  WallTimeSplit* wall;                                       // where this loop's phases add their seconds
  bool warned_counters = false;
  int sm_count = ex.info().sm_count();                       // for the traffic model (base_row)
};

SweepEnd stop_now(const RunnerHooks& hooks) {
  if (hooks.stop_requested && hooks.stop_requested()) return SweepEnd::interrupted;
  const StopReason r = stop_reason();
  return r == StopReason::none ? SweepEnd::complete
                               : r == StopReason::timeout ? SweepEnd::timeout : SweepEnd::interrupted;
}

// One point's rows on run.ex. complete when every row went out; interrupted or
// timeout when a stop came between rows; sticky_error (with `why`) after the
// row that met it went out. A stop inside a row throws Stopped.
SweepEnd run_point(const PlannedPoint& pp, PointRun& run, std::string* why) {
  const SweepConfig& c = run.c;
  Executor& ex = run.ex;
  std::vector<const PlannedKernel*> todo;
  for (const auto& k : pp.kernels) {
    if (run.done.count(row_key(pp, k))) run.skipped();
    else todo.push_back(&k);
  }
  if (todo.empty()) return SweepEnd::complete;
  if (SweepEnd e = stop_now(run.hooks); e != SweepEnd::complete) return e;
  run.progress(pp.problem.describe() + ": inputs and reference");

  // Rows whose outcome is known without running anything come first.
  bool needs_data = false;
  for (const auto* k : todo) {
    if (!k->variant) {
      Result r = base_row(pp, *k, run.seed, run.sm_count);
      r.status = Status::unsupported;
      r.reason = k->reason;
      run.emit(std::move(r));
    } else {
      needs_data = true;
    }
  }
  if (!needs_data) return SweepEnd::complete;

  std::string point_oom, point_error;
  bool point_sticky = false;
  PointData data;
  const int64_t limit = check_limit(c, ex.backend(), host_reference(pp.problem));
  const PointMemory need =
      point_memory(pp.problem, limit, has_backward(pp) ? std::optional<int64_t>(limit) : std::nullopt, c.threads,
                   ex.backend(), c.user_inputs != nullptr);
  if (need.total() > double(run.host_limit)) {
    point_oom = fmt::format("host memory for this point, about {}, is over the limit of {} bytes "
                            "(--cpu-mem-limit); nothing was allocated",
                            need.describe(), run.host_limit);
  } else {
    try {
      data.host_bytes = need.total();
      data.host_limit = run.host_limit;
      {
        Stopwatch w(run.wall->inputs);
        prepare_inputs(pp, c, run.seed, ex, data);
      }
      Stopwatch w(run.wall->reference);
      prepare_reference(pp, c, run.seed, ex, data);
    } catch (const OutOfMemory& e) {
      point_oom = e.what();
    } catch (const std::bad_alloc&) {
      point_oom = "host allocation for the inputs or the reference failed";
    } catch (const KernelError& e) {  // the GPU reference's device work failed
      point_error = fmt::format("the reference failed: {} (seed {})", e.what(), run.seed);
      point_sticky = e.sticky;
    }
  }
  for (const auto* k : todo) {
    if (!k->variant) continue;
    if (SweepEnd e = stop_now(run.hooks); e != SweepEnd::complete) {
      ex.release();
      return e;
    }
    run.progress(k->name + (k->pass == Pass::fwd ? "" : fmt::format(" ({})", to_string(k->pass))) + " " +
                 pp.problem.describe());
    Result r = base_row(pp, *k, run.seed, run.sm_count);
    if (!point_oom.empty()) {
      r.status = Status::oom;
      r.reason = point_oom;
      run.emit(std::move(r));
      continue;
    }
    if (!point_error.empty()) {
      r.status = Status::error;
      r.reason = point_error;
      run.emit(std::move(r));
      if (point_sticky) {
        ex.release();
        *why = fmt::format("the reference on {}: {}", pp.problem.describe(), point_error);
        return SweepEnd::sticky_error;
      }
      continue;
    }
    try {
      run_kernel(*k, data, c, ex, run.ceiling, r, run.hooks, run.warned_counters, *run.wall);
    } catch (const KernelError& e) {  // sticky: the device is unusable
      run.emit(std::move(r));
      *why = fmt::format("{} on {}: {}", k->name, pp.problem.describe(), e.what());
      return SweepEnd::sticky_error;
    }
    run.emit(std::move(r));
  }
  ex.release();
  return SweepEnd::complete;
}

int64_t host_limit_of(const SweepConfig& c, int workers) {
  // Each worker holds a point at a time: the default (half the RAM) is shared.
  return c.cpu_mem_limit > 0 ? c.cpu_mem_limit : default_cpu_mem_limit() / std::max(1, workers);
}

void run_points(const SweepPlan& plan, const SweepConfig& c, uint64_t seed, Executor& ex, double ceiling,
                const std::set<std::string>& done, const RunnerHooks& hooks, SweepOutcome& out) {
  const size_t total = plan.rows();
  size_t finished = 0;
  PointRun run{c, seed, ex, ceiling, done, hooks, host_limit_of(c, 1), {}, {}, {}, &out.wall};
  run.emit = [&](Result r) {
    ++out.new_rows;
    ++finished;
    if (hooks.on_row) hooks.on_row(r);
  };
  run.progress = [&](const std::string& what) {
    if (hooks.on_progress) hooks.on_progress(finished, total, what, out.wall);
  };
  run.skipped = [&] {
    ++out.skipped;
    ++finished;
  };
  for (const PlannedPoint& pp : plan.points) {
    const SweepEnd e = run_point(pp, run, &out.why);
    if (e != SweepEnd::complete) {
      out.end = e;
      return;
    }
  }
}

SweepEnd stop_end(StopReason r) { return r == StopReason::timeout ? SweepEnd::timeout : SweepEnd::interrupted; }

}  // namespace

int64_t check_limit(const SweepConfig& c, Backend backend, bool host_ref) {
  if (c.exact_check) return INT64_MAX;
  if (backend == Backend::cuda && !host_ref && !c.origin.count("max_check_rows")) return INT64_MAX;
  return c.max_check_rows;
}

// The GPU reference and standard hold 16-bit inputs; e4m3's are checked on the host.
bool host_reference(const AttnProblem& p) { return p.dtype == DType::e4m3; }

SweepOutcome run_sweep(const SweepPlan& plan, const SweepConfig& c, uint64_t seed, Executor& ex,
                       double ceiling, const std::set<std::string>& done, const RunnerHooks& hooks) {
  SweepOutcome out;
  try {
    run_points(plan, c, seed, ex, ceiling, done, hooks, out);
  } catch (const Stopped& s) {  // inside a row: the row in progress is abandoned
    ex.release();
    out.end = stop_end(s.reason);
  }
  // A stop that arrives during the last row still ends the run as stopped.
  if (out.end == SweepEnd::complete)
    if (StopReason r = stop_reason(); r != StopReason::none) out.end = stop_end(r);
  return out;
}

SweepOutcome run_sweep_on_devices(const SweepPlan& plan, const SweepConfig& c, uint64_t seed,
                                  const std::vector<DeviceWorker>& workers, double ceiling,
                                  const std::set<std::string>& done, const RunnerHooks& hooks) {
  SweepOutcome out;
  const size_t total = plan.rows();
  std::mutex hooks_mu;  // on_progress and note; on_row goes out under InOrder's lock
  std::atomic<size_t> finished{0}, new_rows{0}, skipped{0};
  WallTimeSplit wall;  // summed over the workers (device-seconds), under hooks_mu
  InOrder<Result> in_order(plan.points.size(), [&](const Result& r) {
    ++new_rows;
    if (hooks.on_row) {
      std::lock_guard lock(hooks_mu);
      hooks.on_row(r);
    }
  });
  RunnerHooks serial = hooks;  // what run_kernel and the stop check see, one worker at a time
  serial.note = [&](const std::string& msg) {
    std::lock_guard lock(hooks_mu);
    if (hooks.note) hooks.note(msg);
  };
  serial.stop_requested = [&] {
    std::lock_guard lock(hooks_mu);
    return hooks.stop_requested && hooks.stop_requested();
  };
  // Per worker: its loop state, and how its last point ended.
  struct WorkerState {
    std::optional<PointRun> run;
    WallTimeSplit wall;  // its current point's, added to `wall` when the point ends
    SweepEnd end = SweepEnd::complete;
    std::string why;
  };
  std::vector<WorkerState> state(workers.size());
  const int64_t host_limit = host_limit_of(c, int(workers.size()));
  auto work = [&](int w, size_t item) {
    const DeviceWorker& dw = workers[size_t(w)];
    WorkerState& ws = state[size_t(w)];
    if (!ws.run) {
      dw.executor->bind_thread();
      ws.run.emplace(PointRun{c, seed, *dw.executor, ceiling, done, serial, host_limit, {}, {}, {}, &ws.wall});
      ws.run->skipped = [&] {
        ++skipped;
        ++finished;
      };
    }
    PointRun& run = *ws.run;
    run.emit = [&, item](Result r) {
      r.device = dw.device;
      ++finished;
      in_order.add(item, std::move(r));
    };
    run.progress = [&](const std::string& what) {
      if (!hooks.on_progress) return;
      std::lock_guard lock(hooks_mu);
      hooks.on_progress(finished.load(), total, fmt::format("device {}: {}", dw.device.index, what), wall);
    };
    try {
      ws.end = run_point(plan.points[item], run, &ws.why);
    } catch (const Stopped& s) {  // inside a row: the row in progress is abandoned
      dw.executor->release();
      ws.end = stop_end(s.reason);
    }
    {
      std::lock_guard lock(hooks_mu);
      wall += ws.wall;
      ws.wall = {};
    }
    if (ws.end != SweepEnd::complete) return false;
    in_order.finish(item);
    return true;
  };
  const DealEnd dealt = deal(plan.points.size(), int(workers.size()), work,
                             [&] { return stop_now(serial) != SweepEnd::complete; });
  // Rows that waited behind a point another worker left unfinished.
  in_order.flush();
  out.new_rows = new_rows.load();
  out.skipped = skipped.load();
  out.wall = wall;
  for (const WorkerState& ws : state)
    if (ws.end == SweepEnd::sticky_error && out.end != SweepEnd::sticky_error) {
      out.end = SweepEnd::sticky_error;
      out.why = ws.why;
    }
  if (dealt.error) std::rethrow_exception(dealt.error);
  if (out.end == SweepEnd::complete) {
    for (const WorkerState& ws : state)
      if (ws.end != SweepEnd::complete) out.end = ws.end;
    // The stop check held back the points not dealt.
    if (out.end == SweepEnd::complete && dealt.dealt < plan.points.size()) out.end = SweepEnd::interrupted;
    // A stop that arrives during the last row still ends the run as stopped.
    if (StopReason r = stop_reason(); r != StopReason::none) out.end = stop_end(r);
  }
  return out;
}

}  // namespace fa
