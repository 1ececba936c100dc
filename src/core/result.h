// One row of output: a point x kernel. Writers see only these.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "core/distribution.h"
#include "core/fp8_settings.h"
#include "core/grad_errors.h"
#include "core/timing.h"
#include "core/tolerances.h"
#include "core/traffic.h"
#include "core/types.h"

namespace fa {

// The first word of a row's reason when it was timed below full clock.
inline constexpr const char* kThrottledReason = "throttled";

enum class Status { ok, unsupported, oom, error, fail };
std::string_view to_string(Status);
std::optional<Status> parse_status(std::string_view);

struct ErrorMetrics {
  double o_max_abs = 0, o_max_rel = 0, o_rel_l2 = 0;
  double lse_max_abs = 0, lse_max_rel = 0;
  double lse_rel_l2 = 0;     // ||lse - ref|| / ||ref|| over rows that see a key (fa-check reports it)
  int64_t nonfinite = 0;     // NaN/Inf in O or LSE where the reference is finite
  int64_t rows_checked = 0;  // query rows compared (all rows, or a sample)
  bool sampled = false;
};

// The device a row ran on, recorded when the run named its devices (--devices):
// the back end's device number, its name and, on cuda, its UUID ("GPU-..."), which
// stays the same whatever CUDA_VISIBLE_DEVICES does to the numbers.
struct DeviceIdentity {
  int index = 0;
  std::string name;
  std::string uuid;  // "" where the back end has none (cpu)
};

struct Result {
  AttnProblem problem;
  std::string kernel;  // variant name
  Family family = Family::fa2;
  Backend backend = Backend::cpu;
  Pass pass = Pass::fwd;  // what was validated and timed
  // bwd and fwd+bwd rows: the forward kernel that gave the backward its O and
  // LSE (run untimed for bwd, timed with it for fwd+bwd); "" for fwd rows.
  std::string fwd_kernel;
  // e4m3 rows (and only they): how the inputs were quantized. Part of key():
  // rows of inputs quantized otherwise never pair, resume or merge as one.
  std::optional<Fp8Settings> fp8;
  // The inputs' distribution, where a file holds rows of several (fa-check
  // runs each case on several); part of key() then, so those rows pair with
  // their own. Absent from sweep rows (one distribution per sweep, in its config).
  std::optional<Distribution> distribution;
  Tile tile;
  Status status = Status::ok;
  // Why, when status != ok; on an ok row timed below full clock, the throttle
  // sentence, which starts with kThrottledReason (measure/throttle.h writes it).
  std::string reason;

  // Sentinels below (0 when not timed, -1 unknown, "" none) are written as
  // absent, null / an empty cell, by the data files (src/report/row_values.h).
  std::optional<TimingSummary> timing;
  double tflops = 0;            // flops / median latency
  double matmul_fraction = 0;   // tflops / measured bf16 matmul ceiling (0 = no ceiling)
  Traffic traffic_model;        // modelled HBM bytes
  double model_bandwidth_gbps = 0;  // modelled bytes / median latency
  std::optional<Traffic> traffic_measured;  // DRAM bytes from counters / CPU kernels' counts
  std::string traffic_measured_source;      // "cupti", "cpu-count", "" when absent
  std::optional<double> l2_hit_rate_pct;    // L2 sector hit rate in percent, from the counters pass (cupti only)
  int64_t peak_extra_bytes = -1;
  // O and LSE against the reference; for bwd and fwd+bwd rows, fwd_kernel's.
  std::optional<ErrorMetrics> errors;
  std::optional<Tolerances> tolerances;  // what `errors` were held to (set with them)
  // e4m3 rows: the same O and LSE against the float64 reference on the
  // unquantized inputs, on the same rows: what quantization costs on top of the
  // kernel's own error (`errors`, against the dequantized inputs). Not judged.
  std::optional<ErrorMetrics> errors_vs_unquantized;
  // bwd and fwd+bwd rows: dQ, dK, dV with their tolerances (rows_checked and
  // sampled as in `errors`: the same rows).
  std::optional<GradErrors> grad_errors;
  int clock_before_mhz = -1, clock_after_mhz = -1;
  uint64_t seed = 0;
  // Set only by a run with --devices; absent from the files of a run without it.
  std::optional<DeviceIdentity> device;

  // Identity for pairing (compare) and resuming: kernel + problem + pass, and
  // the FP8 settings and the distribution where the row has them.
  std::string key() const;
  // Timed while the SM clock fell or stood low: its time is not the kernel's alone.
  bool throttled() const { return reason.rfind(kThrottledReason, 0) == 0; }
};

// Files write the rows checked and `sampled` once, in `errors`; a reader calls
// this to give grad_errors the same (the gradients are checked on those rows).
void share_checked_rows(Result&);

}  // namespace fa
