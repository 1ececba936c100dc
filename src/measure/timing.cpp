#include "measure/timing.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/stop.h"

namespace fa {

namespace {
// Linear interpolation between closest ranks (numpy's default), on sorted data.
double percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  double pos = q * double(sorted.size() - 1);
  size_t lo = size_t(std::floor(pos));
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  double frac = pos - double(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}
}  // namespace

TimingSummary summarize(std::vector<double> samples_ms, std::string method) {
  TimingSummary s;
  s.method = std::move(method);
  s.samples = int(samples_ms.size());
  if (samples_ms.empty()) return s;
  std::sort(samples_ms.begin(), samples_ms.end());
  s.min_ms = samples_ms.front();
  s.median_ms = percentile(samples_ms, 0.5);
  s.p10_ms = percentile(samples_ms, 0.1);
  s.p90_ms = percentile(samples_ms, 0.9);
  s.mean_ms = std::accumulate(samples_ms.begin(), samples_ms.end(), 0.0) / double(s.samples);
  if (s.samples > 1) {
    double ss = 0;
    for (double x : samples_ms) ss += (x - s.mean_ms) * (x - s.mean_ms);
    s.stddev_ms = std::sqrt(ss / double(s.samples - 1));  // sample (n-1) stddev
  }
  // The p10..p90 half-spread is robust to the occasional preempted sample,
  // unlike stddev, so the stopping rule uses it.
  s.noise = s.median_ms > 0 ? (s.p90_ms - s.p10_ms) / 2 / s.median_ms : 0;
  return s;
}

bool timing_done(const std::vector<double>& samples_ms, double elapsed_s,
                 const TimingOptions& opt) {
  throw_if_stopped();  // Ctrl-C or --timeout: abandon the row between samples
  const int n = int(samples_ms.size());
  if (n >= opt.max_samples) return true;
  // Out of time: stop even below min_samples (a single 10 s sample must not
  // turn into 100 s), but never with zero samples.
  if (elapsed_s >= opt.max_seconds && n >= 1) return true;
  // Fewer than 3 samples have no meaningful spread (one sample's "noise" is 0),
  // so the noise test waits for 3 even when min_samples is lower.
  if (n < std::max(opt.min_samples, 3)) return false;
  return summarize(samples_ms, "").noise <= opt.target_noise;
}

}  // namespace fa
