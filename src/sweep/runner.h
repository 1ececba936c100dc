// The sweep loop: per point, inputs once, reference once (forward and, when a
// row runs a backward, gradients), then per row: supports? -> workspace ->
// poison -> run -> compare -> (only if it passes) time (never with
// SweepConfig::validate_only, which fa-check sets). A bwd or fwd+bwd row runs
// its forward partner first and is judged on both (check/validate.h); bwd times
// the backward alone, fwd+bwd the two as one launch sequence.
// Every outcome is a Result row handed to on_row as soon as it exists.
#pragma once
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "core/result.h"
#include "measure/executor.h"
#include "sweep/config.h"
#include "sweep/plan.h"

namespace fa {

// Where a sweep's wall time went so far, in seconds: making the inputs and
// copying them to the back end, the reference and the tolerance rule's
// standard, the validation runs (run, fetch, compare), the timing loops (and
// the counters pass). metadata.wall_time_s and the progress line show it.
struct WallTimeSplit {
  double inputs = 0, reference = 0, validation = 0, timing = 0;
  WallTimeSplit& operator+=(const WallTimeSplit& o) {
    inputs += o.inputs, reference += o.reference, validation += o.validation, timing += o.timing;
    return *this;
  }
};

struct RunnerHooks {
  std::function<void(const Result&)> on_row;
  // Before each row starts: rows done so far, rows in total, what runs now,
  // and the wall time split until now.
  std::function<void(size_t done, size_t total, const std::string& what, const WallTimeSplit&)> on_progress;
  // Checked between rows, besides core/stop.h's request (Ctrl-C, --timeout),
  // which is also honoured inside a row.
  std::function<bool()> stop_requested;
  std::function<void(const std::string&)> note;  // one-off warnings for stderr
};

// interrupted / timeout: a stop request (core/stop.h) ended the sweep; the row
// in progress, if any, was abandoned.
enum class SweepEnd { complete, interrupted, timeout, sticky_error };

struct SweepOutcome {
  SweepEnd end = SweepEnd::complete;
  std::string why;      // for sticky_error: the kernel and the error
  size_t new_rows = 0;  // rows produced by this run
  size_t skipped = 0;   // rows already in `done` (resume)
  WallTimeSplit wall;
};

// How many query rows (and a backward's key columns) a point's check compares
// before it samples: every one with exact_check; on the cuda back end every one
// unless max_check_rows was set, for a point whose reference runs on the device
// (the GPU references, the tolerance rules' standards and the comparisons all
// run there, so every row and column costs little); max_check_rows otherwise.
// host_reference: the point's reference is the host's (an e4m3 point).
int64_t check_limit(const SweepConfig&, Backend, bool host_reference = false);
// Whether a point's reference runs on the host whatever the back end: e4m3,
// whose inputs are quantized on the host (check/fp8_inputs.h).
bool host_reference(const AttnProblem&);

// `done` holds Result::key()s of rows to skip (from --resume).
// `matmul_ceiling_tflops` 0 leaves matmul_fraction at 0.
SweepOutcome run_sweep(const SweepPlan&, const SweepConfig&, uint64_t seed, Executor&,
                       double matmul_ceiling_tflops, const std::set<std::string>& done,
                       const RunnerHooks&);

// One worker of run_sweep_on_devices: an executor, and the device its rows record.
struct DeviceWorker {
  Executor* executor = nullptr;
  DeviceIdentity device;
};

// run_sweep with one worker thread per executor (--devices): points are dealt
// in plan order to whichever worker is free (sweep/dealer.h), a point's rows all
// run (and are timed) on that worker's executor, and each row carries its
// worker's `device`. on_row sees the rows in plan order, each once every row
// before it went out; on_row, on_progress (its text led by "device N: ") and note
// are called one at a time. A stop (core/stop.h, stop_requested) ends every
// worker within a row; a sticky error on one device stops the dealing, the other
// workers finish the point they hold, and the sweep ends as sticky_error. An
// exception from a worker is rethrown once every row went out. Rows that wait behind a point left
// unfinished still go out, so the files keep every finished row. With several
// workers, the default --cpu-mem-limit (half the RAM) is shared among them.
SweepOutcome run_sweep_on_devices(const SweepPlan&, const SweepConfig&, uint64_t seed,
                                  const std::vector<DeviceWorker>&, double matmul_ceiling_tflops,
                                  const std::set<std::string>& done, const RunnerHooks&);

}  // namespace fa
