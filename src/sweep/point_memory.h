// The host memory one point of a sweep needs at its high-water mark, estimated
// from the shape before anything is allocated, so --cpu-mem-limit bounds the
// whole process (inputs, the float64 reference, the outputs fetched back and the
// CPU back end's own buffers) and a point over it is an `oom` row instead of a
// swap storm or an OOM kill.
#pragma once
#include <cstdint>
#include <string>

#include "core/types.h"

namespace fa {

struct PointMemory {
  double inputs = 0;     // float32 Q, K, V (twice with --inputs: the file's and the point's rounded copy)
  double reference = 0;  // float64 O and LSE of the checked rows, K/V of one head, per-worker score blocks
  double tolerance = 0;  // the standard-in-precision pass: per-worker float32 score blocks
  double outputs = 0;    // float32 O and LSE fetched back from the kernel
  double backend = 0;    // cpu: its copies of Q, K, V, O, LSE; cuda: the 16-bit staging copy on upload
  double total() const { return inputs + reference + tolerance + outputs + backend; }
  std::string describe() const;  // "2.1 GiB (inputs 0.4, reference 1.2, ...)"
};

// rows_checked: query rows the reference computes; threads: the reference's
// worker count (the tolerance pass uses every hardware thread).
PointMemory point_memory(const AttnProblem&, int64_t rows_checked, int threads, Backend, bool user_inputs);

}  // namespace fa
