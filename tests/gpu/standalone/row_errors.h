// One sampled row of a kernel's output against the float64 reference and the
// standard in the kernel's precision: the row's reference values, and how
// fa3_check and fp8_check fold the row's errors into their verdicts.
#pragma once
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace fa::standalone {

struct RowRef {
  std::vector<double> o;     // float64 reference
  std::vector<float> o_std;  // standard implementation in the kernel's precision
  double lse;
  double lse_std;  // the standard's LSE
};

// Folds row `row`'s errors into e (its o_err, std_err, lse_err, lse_std_err):
// the kernel's LSE `kl` and O (o_at(c) for c < head_dim) against r. False, with
// e.why set, where the row sees no key (reference LSE -inf) but kl is not -inf.
template <typename Errors, typename OAt>
bool fold_row_errors(Errors& e, const RowRef& r, float kl, int row, int head_dim, OAt o_at) {
  if (std::isinf(r.lse)) {
    if (!(std::isinf(kl) && kl < 0)) {
      e.why = "row " + std::to_string(row) + " sees no key but LSE != -inf";
      return false;
    }
  } else {
    e.lse_err = std::max(e.lse_err, std::fabs(double(kl) - r.lse));
    e.lse_std_err = std::max(e.lse_std_err, std::fabs(r.lse_std - r.lse));
  }
  for (int c = 0; c < head_dim; ++c) {
    e.o_err = std::max(e.o_err, std::fabs(double(o_at(c)) - r.o[c]));
    e.std_err = std::max(e.std_err, std::fabs(double(r.o_std[c]) - r.o[c]));
  }
  return true;
}

}  // namespace fa::standalone
