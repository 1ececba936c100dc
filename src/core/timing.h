// How a kernel is timed, and the summary every row carries. The stopping rule
// and the statistics that fill a summary are in src/measure/timing.h.
#pragma once
#include <string>

namespace fa {

struct TimingOptions {
  int warmup = 3;              // untimed runs first (module load, autotune, caches)
  int min_samples = 10;
  int max_samples = 200;
  double max_seconds = 2.0;    // per point x kernel, after warm-up
  double target_noise = 0.01;  // stop once the relative noise is below this
  bool flush_l2 = true;        // cuda: write >= L2 size before every sample
  // cuda: how long the stream is held before each sample's start event, so the
  // host's launch work lands under the hold, not between the events. Not a
  // config key: the runner sets it per pass (a backward enqueues more launches).
  int hold_us = 100;
};

struct TimingSummary {
  double median_ms = 0, min_ms = 0, p10_ms = 0, p90_ms = 0, mean_ms = 0, stddev_ms = 0;
  int samples = 0;
  double noise = 0;       // relative noise: (p90 - p10) / 2 / median
  std::string method;     // "cuda-events, L2 flushed" / "host steady_clock"
};

}  // namespace fa
