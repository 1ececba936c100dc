// Error statistics of computed values against float64 reference values, added
// one element at a time: what the forward and the gradient metrics both report.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace fa {

// Relative error is |x - r| / (|r| + rel_eps).
constexpr double rel_eps = 1e-3;

// A maximum in which a NaN, once seen, stays: std::max(m, NaN) would drop it
// and report the errors around it as if nothing had gone wrong.
inline double nan_max(double a, double b) { return std::isnan(a) || std::isnan(b) ? std::nan("") : std::max(a, b); }

struct ErrorAccumulator {
  double max_abs = 0, max_rel = 0;
  int64_t nonfinite = 0;  // NaN/Inf values of x, left out of the other numbers
  double diff2 = 0, ref2 = 0;

  void add(double x, double r) {
    if (!std::isfinite(r)) {  // the reference itself broke (non-finite inputs): no figure may hide it
      max_abs = max_rel = std::nan("");
      return;
    }
    if (!std::isfinite(x)) {
      ++nonfinite;
      return;
    }
    const double err = std::abs(x - r);
    max_abs = nan_max(max_abs, err);
    max_rel = nan_max(max_rel, err / (std::abs(r) + rel_eps));
    diff2 += err * err;
    ref2 += r * r;
  }
  // ||x - r|| / ||r||; the plain ||x - r|| when every r is 0.
  double rel_l2() const { return ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2); }
};

}  // namespace fa
