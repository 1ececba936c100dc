// The host memory one point of a sweep needs at its high-water mark, estimated
// from the shape before anything is allocated, so --cpu-mem-limit bounds the
// whole process (inputs, the float64 reference, the outputs fetched back and the
// CPU back end's own buffers; for a point with a backward row also dO, dQ, dK, dV
// and the reference gradients) and a point over it is an `oom` row instead of a
// swap storm or an OOM kill.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "core/types.h"

namespace fa {

struct PointMemory {
  double inputs = 0;     // float32 Q, K, V (twice with --inputs: the file's and the point's rounded copy), dO
  double reference = 0;  // float64 O and LSE of the checked rows (a backward: dQ, dK, dV of the checked rows
                         // and columns too), K/V of one head, per-worker score blocks
  double tolerance = 0;  // the standard-in-precision passes: per-worker float32 score blocks (a backward: the
                         // standard backward's row statistics and gradients)
  double outputs = 0;    // float32 O and LSE fetched back from the kernel (a backward: its partner's, kept,
                         // and dQ, dK, dV)
  double backend = 0;    // cpu: its copies of Q, K, V, O, LSE (dO, dQ, dK, dV); cuda: the 16-bit staging copy
  double total() const { return inputs + reference + tolerance + outputs + backend; }
  std::string describe() const;  // "2.1 GiB (inputs 0.4, reference 1.2, ...)"
};

// rows_checked: query rows the reference computes; cols_checked: set when the
// point has a backward row, the key columns whose dK, dV are checked (dO and
// the gradient buffers exist then); threads: the reference's worker count (the
// forward tolerance pass uses every hardware thread).
PointMemory point_memory(const AttnProblem&, int64_t rows_checked, std::optional<int64_t> cols_checked,
                         int threads, Backend, bool user_inputs);

}  // namespace fa
