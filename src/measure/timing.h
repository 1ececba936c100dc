// How a kernel is timed, and the summary every row carries.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace fa {

struct TimingOptions {
  int warmup = 3;              // untimed runs first (module load, autotune, caches)
  int min_samples = 10;
  int max_samples = 200;
  double max_seconds = 2.0;    // per point x kernel, after warm-up
  double target_noise = 0.01;  // stop once the relative noise is below this
  bool flush_l2 = true;        // cuda: write >= L2 size before every sample
};

struct TimingSummary {
  double median_ms = 0, min_ms = 0, p10_ms = 0, p90_ms = 0, mean_ms = 0, stddev_ms = 0;
  int samples = 0;
  double noise = 0;       // relative noise: (p90 - p10) / 2 / median
  std::string method;     // "cuda-events, L2 flushed" / "host steady_clock"
};

TimingSummary summarize(std::vector<double> samples_ms, std::string method);
// The stopping rule: enough samples and noise under target, or out of budget.
// Throws fa::Stopped (core/stop.h) when a stop was requested: the row is abandoned.
bool timing_done(const std::vector<double>& samples_ms, double elapsed_s, const TimingOptions&);

}  // namespace fa
