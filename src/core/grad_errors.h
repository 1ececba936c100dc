// Errors of a backward pass's dQ, dK, dV against the float64 reference, with
// the tolerance each is held to (docs/MEASUREMENT.md, "The gradient tolerance rule").
#pragma once
#include <cstdint>

namespace fa {

// One gradient tensor, over the checked rows (dQ) or columns (dK, dV).
struct TensorErrors {
  double max_abs = 0;    // max |x - r|
  double max_rel = 0;    // max |x - r| / (|r| + 1e-3)
  double rel_l2 = 0;     // ||x - r|| / ||r|| (plain ||x - r|| when every r is 0)
  int64_t nonfinite = 0; // NaN/Inf elements (left out of the numbers above)
  double tolerance = 0;  // allowed max_abs; 0 until the tolerance rule has set it
  bool passes() const { return nonfinite == 0 && max_abs <= tolerance; }
};

struct GradErrors {
  TensorErrors dq, dk, dv;
  int64_t rows_checked = 0;  // query rows whose dQ was compared
  int64_t cols_checked = 0;  // key columns whose dK, dV were compared
  bool sampled = false;      // fewer than all rows or all columns
  bool passes() const { return dq.passes() && dk.passes() && dv.passes(); }
};

}  // namespace fa
