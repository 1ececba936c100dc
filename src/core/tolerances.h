// What a kernel's errors are held to at one point: the tolerance rule's output
// (docs/MEASUREMENT.md, "The tolerance rule"; src/check/metrics.h computes it).
// The field names are the JSON keys and CSV columns.
#pragma once

namespace fa {

struct Tolerances {
  double tolerance = 0;      // allowed O max abs error
  double lse_tolerance = 0;  // allowed LSE max abs error; 0 = not set (passes() uses 1e-3)
};

}  // namespace fa
